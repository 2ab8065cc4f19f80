//! What `keelson up` and `keelson operator` both run, the controllers and the REST API, from
//! settings read and checked before anything starts.

use std::net::SocketAddr;

use anyhow::Context;
use keelson_controllers::{serving, workflows};
use keelson_facades::orchestrator::{self, Orchestrator};

/// Every setting the controllers and the REST API read from the environment.
pub struct Settings {
    /// The serving controllers'.
    pub serving: serving::settings::Settings,
    /// The workflow controllers'.
    pub workflows: workflows::settings::Settings,
    /// The REST API's.
    pub api: orchestrator::Settings,
}

impl Settings {
    /// Reads them from the environment; fails with one line per bad value, of every group.
    pub fn from_env() -> anyhow::Result<Self> {
        let env = |key: &str| std::env::var(key).ok();
        match (
            workflows::settings::Settings::from_lookup(env),
            orchestrator::Settings::from_lookup(env),
        ) {
            (Ok(workflows), Ok(api)) => {
                Ok(Self { serving: serving::settings::Settings::from_env(), workflows, api })
            }
            (workflows, api) => {
                let problems: Vec<String> =
                    workflows.err().into_iter().chain(api.err()).flatten().collect();
                anyhow::bail!(problems.join("\n"))
            }
        }
    }
}

/// Listens on the REST API's address (before anything starts, so a taken port fails early).
pub async fn listen(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening for the REST API on {addr}"))
}

/// Starts the controllers and the REST API on `listener`; they run until their tasks are
/// aborted.
pub async fn spawn(
    client: kube::Client,
    settings: Settings,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let api = Orchestrator::start(client.clone(), &settings.api)
        .await
        .context("loading the saved run event histories")?;
    let mut tasks = serving::spawn(client.clone(), settings.serving);
    tasks.extend(workflows::spawn(client, settings.workflows));
    tasks.push(tokio::spawn(async move {
        if let Err(error) = api.serve(listener).await {
            tracing::error!(%error, "the REST API stopped");
        }
    }));
    Ok(tasks)
}
