//! The orchestrator REST API under `/api/v1` (docs/orchestrator-api.md): a thin translation
//! to and from the workflow resources. Reads come from watch-fed caches; writes go to the
//! Kubernetes API, and each waits until its cache has seen it, so a client reads its writes.

pub mod cache;
pub mod convert;
pub mod events;
pub mod model;
pub mod page;

mod agents;
mod flows;
mod health;
mod runs;
mod schedules;
mod webhooks;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use keelson_api_crds::workflows as crd;
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{self, Authenticator};
use crate::error::ApiError;
use cache::Cache;
use events::EventHub;
use events::history::Limits;
use page::SortKey;

/// Settings of the REST API (where it listens is the caller's: it passes a listener).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The namespace whose workflow resources it serves.
    pub namespace: String,
    /// Requests per second per token (bursts of twice that); none when `None`.
    pub rate_limit: Option<NonZeroU32>,
    /// Bounds of each run's event history.
    pub history: Limits,
}

impl Settings {
    /// Reads `KEELSON_API_NAMESPACE` (default),
    /// `KEELSON_API_RATE_LIMIT` (100 per second per token; 0 turns it off) and
    /// `KEELSON_API_EVENT_HISTORY` (1000 events per run), naming every bad value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut read = |key: &str, default: &str, check: &dyn Fn(&str) -> bool, what: &str| {
            let value = lookup(key).unwrap_or_else(|| default.to_owned());
            if !check(&value) {
                problems.push(format!("{key}={value:?} is not {what}"));
            }
            value
        };
        let namespace = read(
            "KEELSON_API_NAMESPACE",
            "default",
            &|v| convert::check_id(v).is_ok(),
            "a namespace name",
        );
        let rate = read(
            "KEELSON_API_RATE_LIMIT",
            "100",
            &|v| v.parse::<u32>().is_ok(),
            "a number of requests per second",
        );
        let history = read(
            "KEELSON_API_EVENT_HISTORY",
            "1000",
            &|v| v.parse::<usize>().is_ok_and(|n| (10..=100_000).contains(&n)),
            "a number of events from 10 to 100000",
        );
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Self {
            namespace,
            rate_limit: rate.parse().ok().and_then(NonZeroU32::new),
            history: Limits { max_events: history.parse().unwrap_or(1000), ..Limits::default() },
        })
    }
}

/// The REST API's state: a client, the caches and the event hub.
#[derive(Clone)]
pub struct Orchestrator(Arc<Inner>);

/// See [`Orchestrator`].
pub struct Inner {
    client: kube::Client,
    namespace: String,
    runs: Cache<crd::Run>,
    flows: Cache<crd::Flow>,
    agents: Cache<crd::Agent>,
    schedules: Cache<crd::Schedule>,
    webhooks: Cache<crd::Webhook>,
    jobs: Cache<Job>,
    events: EventHub,
    auth: Authenticator,
    tasks: Vec<tokio::task::AbortHandle>,
}

impl std::ops::Deref for Orchestrator {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A namespaced kind the API reads and writes.
pub trait Kind:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Where an object sorts in lists.
fn sort_key(meta: &ObjectMeta) -> SortKey {
    SortKey {
        created: meta.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second()),
        id: meta.name.clone().unwrap_or_default(),
    }
}

impl Orchestrator {
    /// Loads the saved event histories and starts the caches.
    pub async fn start(client: kube::Client, settings: &Settings) -> kube::Result<Self> {
        let namespace = settings.namespace.clone();
        let events = EventHub::load(&client, &namespace, settings.history).await?;
        let all = watcher::Config::default;
        let hub = events.clone();
        let runs =
            Cache::start_observed("runs", client.clone(), &namespace, all(), move |change| {
                match change {
                    cache::Change::Applied(run) => hub.observe(run),
                    cache::Change::Deleted(run) => hub.forget(&run.name_any()),
                }
            });
        let tasks = vec![
            tokio::spawn(events.clone().save_forever(client.clone(), namespace.clone()))
                .abort_handle(),
            tokio::spawn(events.clone().follow_logs(client.clone(), namespace.clone()))
                .abort_handle(),
        ];
        Ok(Self(Arc::new(Inner {
            runs,
            flows: Cache::start("flows", client.clone(), &namespace, all()),
            agents: Cache::start("agents", client.clone(), &namespace, all()),
            schedules: Cache::start("schedules", client.clone(), &namespace, all()),
            webhooks: Cache::start("webhooks", client.clone(), &namespace, all()),
            jobs: Cache::start("jobs", client.clone(), &namespace, all()),
            auth: Authenticator::start(client.clone(), &namespace, settings.rate_limit),
            events,
            client,
            namespace,
            tasks,
        })))
    }

    /// The routes, authenticated except health and webhook triggers; the caller adds
    /// fallbacks and body limits (see [`crate::server`]).
    pub fn router(&self) -> Router {
        let (router, _) = api_router().split_for_parts();
        let public = Router::new()
            .route("/health", axum::routing::get(health::health))
            .route("/healthz", axum::routing::get(health::healthz))
            .route("/ready", axum::routing::get(health::ready))
            .route(
                "/api/v1/webhooks/trigger/{flowId}",
                axum::routing::post(webhooks::trigger).layer(DefaultBodyLimit::disable()),
            );
        router
            .route("/api/v1/openapi.json", axum::routing::get(serve_openapi))
            .route_layer(axum::middleware::from_fn_with_state(
                self.auth.clone(),
                auth::require_token,
            ))
            .merge(public)
            .with_state(self.clone())
    }

    /// The bearer-token authenticator, shared with the other facades.
    pub fn authenticator(&self) -> &Authenticator {
        &self.auth
    }

    /// The caches whose first list has not arrived.
    pub fn unsynced_caches(&self) -> Vec<&'static str> {
        let ready = [
            (self.runs.name(), self.runs.is_ready()),
            (self.flows.name(), self.flows.is_ready()),
            (self.agents.name(), self.agents.is_ready()),
            (self.schedules.name(), self.schedules.is_ready()),
            (self.webhooks.name(), self.webhooks.is_ready()),
            (self.jobs.name(), self.jobs.is_ready()),
            (self.auth.cache().name(), self.auth.cache().is_ready()),
        ];
        ready.into_iter().filter(|(_, ready)| !ready).map(|(name, _)| name).collect()
    }

    fn api<K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>>(
        &self,
    ) -> Api<K> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn run(&self, id: &str) -> Result<Arc<crd::Run>, ApiError> {
        self.runs.get(id).ok_or_else(|| ApiError::not_found("run", id))
    }

    fn flow(&self, id: &str) -> Result<Arc<crd::Flow>, ApiError> {
        self.flows.get(id).ok_or_else(|| ApiError::not_found("flow", id))
    }

    /// A run as the API shows it, with its flow's nodes until the controller copied them.
    fn show_run(&self, run: &crd::Run) -> model::Run {
        let flow = run.spec.flow_ref.as_deref().and_then(|flow| self.flows.get(flow));
        convert::run(run, flow.as_ref().map(|flow| &flow.spec.plan))
    }

    /// Creates and starts a run of `flow`, named after it.
    async fn start_flow(
        &self,
        flow: &str,
        parameters: BTreeMap<String, String>,
        timeout_seconds: Option<i64>,
        created_by: &str,
    ) -> Result<crd::Run, ApiError> {
        let prefix: String = flow.chars().take(40).collect();
        let id = convert::id_or_new(None, prefix.trim_end_matches('-'))?;
        let spec = crd::RunSpec {
            flow_ref: Some(flow.to_owned()),
            parameters,
            start: true,
            timeout_seconds,
            ..crd::RunSpec::default()
        };
        let run =
            crd::Run { metadata: convert::new_meta(&id, None, created_by), spec, status: None };
        self.create(&self.runs, "run", run).await
    }

    /// Creates `object` and waits until its cache has it.
    async fn create<K>(&self, cache: &Cache<K>, kind: &str, object: K) -> Result<K, ApiError>
    where
        K: Kind,
    {
        let id = object.name_any();
        let created = self
            .api::<K>()
            .create(&PostParams::default(), &object)
            .await
            .map_err(|error| ApiError::from_kube(kind, &id, error))?;
        cache.wait_for(&created).await;
        Ok(created)
    }

    /// Reads `id` from the API, lets `change` refuse or change it, and replaces it; retried
    /// when someone else wrote it meanwhile (the controllers write status all the time).
    async fn update<K>(
        &self,
        cache: &Cache<K>,
        kind: &str,
        id: &str,
        change: impl Fn(&mut K) -> Result<(), ApiError>,
    ) -> Result<K, ApiError>
    where
        K: Kind,
    {
        if !convert::could_exist(id) {
            return Err(ApiError::not_found(kind, id));
        }
        let api = self.api::<K>();
        let mut attempts = 0;
        loop {
            let mut object =
                api.get(id).await.map_err(|error| ApiError::from_kube(kind, id, error))?;
            change(&mut object)?;
            match api.replace(id, &PostParams::default(), &object).await {
                Ok(written) => {
                    cache.wait_for(&written).await;
                    return Ok(written);
                }
                Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20 * attempts)).await;
                }
                Err(error) => return Err(ApiError::from_kube(kind, id, error)),
            }
        }
    }

    /// Deletes `id` with what it owns (in the background) and waits until its cache lost it.
    async fn delete<K>(&self, cache: &Cache<K>, kind: &str, id: &str) -> Result<(), ApiError>
    where
        K: Kind,
    {
        if !convert::could_exist(id) {
            return Err(ApiError::not_found(kind, id));
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        self.api::<K>()
            .delete(id, &params)
            .await
            .map_err(|error| ApiError::from_kube(kind, id, error))?;
        cache.wait_gone(id).await;
        Ok(())
    }
}

/// The documented routes; their handlers' annotations make the OpenAPI document.
fn api_router() -> OpenApiRouter<Orchestrator> {
    OpenApiRouter::new()
        .routes(routes!(runs::list_runs, runs::create_run))
        .routes(routes!(runs::get_run, runs::delete_run))
        .routes(routes!(runs::start_run))
        .routes(routes!(runs::events))
        .routes(routes!(runs::clone_run))
        .routes(routes!(runs::approve))
        .routes(routes!(runs::reject))
        .routes(routes!(flows::list_flows, flows::create_flow))
        .routes(routes!(flows::get_flow, flows::update_flow, flows::delete_flow))
        .routes(routes!(flows::run_flow))
        .routes(routes!(agents::list_agents, agents::create_agent))
        .routes(routes!(agents::get_agent, agents::update_agent, agents::delete_agent))
        .routes(routes!(webhooks::create_webhook))
        .routes(routes!(schedules::list_schedules, schedules::create_schedule))
        .routes(routes!(schedules::get_schedule, schedules::delete_schedule))
        .routes(routes!(health::job_status))
}

/// The documented routes, including the public ones, for the OpenAPI document.
pub(crate) fn documented_routes() -> OpenApiRouter<Orchestrator> {
    api_router()
        .routes(routes!(health::health))
        .routes(routes!(health::healthz))
        .routes(routes!(health::ready))
        .routes(routes!(webhooks::trigger))
}

async fn serve_openapi() -> Response {
    axum::Json(crate::server::openapi()).into_response()
}
