//! What `keelson up` and `keelson operator` both run, the controllers, the HTTP API and the
//! metrics endpoint, from settings read and checked before anything starts.

use std::net::SocketAddr;

use anyhow::Context;
use keelson_controllers::{serving, workflows};
use keelson_facades::clinical::{self, Clinical, Workflows};
use keelson_facades::metrics::HttpMetrics;
use keelson_facades::orchestrator::{self, Orchestrator};
use keelson_facades::serving::Serving;
use keelson_integration::engine::{Engine, EngineSettings};
use prometheus_client::registry::Registry;

/// Every setting the controllers and the REST API read from the environment.
pub struct Settings {
    /// The serving controllers'.
    pub serving: serving::settings::Settings,
    /// The workflow controllers'.
    pub workflows: workflows::settings::Settings,
    /// The REST API's.
    pub api: orchestrator::Settings,
    /// The clinical endpoints'.
    pub clinical: clinical::Settings,
    /// The weaver model preflight's.
    pub weaver: serving::weaver::Settings,
}

impl Settings {
    /// Reads them from the environment; fails with one line per bad value, of every group.
    pub fn from_env() -> anyhow::Result<Self> {
        let env = |key: &str| std::env::var(key).ok();
        match (
            workflows::settings::Settings::from_lookup(env),
            orchestrator::Settings::from_lookup(env),
            clinical::Settings::from_lookup(env),
            serving::weaver::Settings::from_env(),
        ) {
            (Ok(workflows), Ok(api), Ok(clinical), Ok(weaver)) => Ok(Self {
                serving: serving::settings::Settings::from_env(),
                workflows,
                api,
                clinical,
                weaver,
            }),
            (workflows, api, clinical, weaver) => {
                let problems: Vec<String> =
                    [workflows.err(), api.err(), clinical.err(), weaver.err()]
                        .into_iter()
                        .flatten()
                        .flatten()
                        .collect();
                anyhow::bail!(problems.join("\n"))
            }
        }
    }
}

/// Where the HTTP API and the metrics endpoint listen, bound before anything starts so a taken
/// port fails early.
pub struct Listeners {
    /// The HTTP API (`/api/v1`, health).
    pub api: tokio::net::TcpListener,
    /// `/metrics`.
    pub metrics: tokio::net::TcpListener,
}

impl Listeners {
    /// Binds both addresses.
    pub async fn bind(api: SocketAddr, metrics: SocketAddr) -> anyhow::Result<Self> {
        let bind = |addr: SocketAddr, what: &'static str| async move {
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listening for {what} on {addr}"))
        };
        Ok(Self { api: bind(api, "the HTTP API").await?, metrics: bind(metrics, "metrics").await? })
    }
}

/// Starts the controllers, the HTTP API and the metrics endpoint; they run until their tasks
/// are aborted.
pub async fn spawn(
    client: kube::Client,
    mut settings: Settings,
    listeners: Listeners,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut registry = Registry::default();
    let http_metrics = HttpMetrics::register(&mut registry);
    let engine = Engine::new(EngineSettings::default(), &mut registry)
        .context("starting the workflow engine")?;
    let orchestrator = Orchestrator::start(client.clone(), &settings.api)
        .await
        .context("loading the saved run event histories")?;
    let workflows_source =
        Workflows::new(client.clone(), &settings.api.namespace, settings.clinical);
    let clinical = Clinical::new(engine, workflows_source);
    let serving_api = Serving::start(client.clone(), &settings.api.namespace);
    let catalog = serving_api.clone();
    settings.weaver.local_catalog =
        Some(serving::weaver::catalog::LocalCatalog::new(move || catalog.model_ids()));
    let router =
        keelson_facades::server::router(&orchestrator, &clinical, &serving_api, &http_metrics);
    let metrics = keelson_facades::metrics::router(std::sync::Arc::new(registry));
    let mut tasks = serving::spawn(client.clone(), settings.serving);
    tasks.extend(serving::weaver::spawn(client.clone(), settings.weaver));
    tasks.extend(workflows::spawn(client, settings.workflows));
    tasks.push(serve("the HTTP API", listeners.api, router));
    tasks.push(serve("the metrics endpoint", listeners.metrics, metrics));
    Ok(tasks)
}

fn serve(
    what: &'static str,
    listener: tokio::net::TcpListener,
    router: axum::Router,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "{what} stopped");
        }
    })
}
