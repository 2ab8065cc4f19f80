//! The legacy in-process workflow engine.
//!
//! A [`Workflow`] (see [`definition`] for the YAML shape) has routes; each route has a filter,
//! transforms and actions. [`Engine::process`] runs an event through every route in order: a
//! route whose filter takes the event gets its own copy, transformed, and its actions run in
//! order. `webhook` and `fhir` actions are retried with capped exponential backoff, guarded by a
//! circuit breaker per destination and a token bucket per workflow; an action that does not
//! succeed goes to the dead letter queue with the original event, from where it can be listed,
//! replayed ([`Engine::replay_dead_letter`]) or discarded.
//!
//! One [`Engine`] serves every workflow of the process, so circuits, rate limiters, the dead
//! letter queue and the metrics (table below) are shared. Create one per
//! process: its metrics are registered once in the registry it is given.
//!
//! # Metrics
//!
//! | Metric | Type | Labels |
//! |---|---|---|
//! | `workflow_events_processed_total` | counter | `outcome` = `ok` \| `dead_lettered` \| `no_route` |
//! | `workflow_events_in_progress` | gauge | — |
//! | `workflow_action_duration_seconds` | histogram (5 ms … 10 s), one observation per action that ran, retries and backoff included | `action_type` = `log` \| `webhook` \| `fhir` |
//! | `workflow_action_errors_total` | counter, actions that did not succeed (failed, circuit open, rate limited) | `action_type`, `destination` (`scheme://host:port`; `local` for `log`) |
//! | `workflow_dlq_size` | gauge | — |
//! | `workflow_circuit_breaker_state` | gauge: 0 closed, 1 half-open, 2 open | `destination` |
//! | `workflow_rate_limiter_rejected_total` | counter | — |
//!
//! Replays are not counted in `workflow_events_processed_total` (no new event) but their
//! actions are counted like any other.

mod action;
mod circuit;
pub mod definition;
pub mod dlq;
mod execute;
pub mod fhir;
pub mod filter;
mod metrics;
mod outcome;
pub mod path;
mod rate_limit;
mod retry;
mod settings;
pub mod transform;

use std::time::Instant;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;

pub use circuit::{CircuitState, CircuitStatus};
pub use definition::{DefinitionError, Workflow};
pub use dlq::{DeadLetter, DeadLetterError};
pub use outcome::{ActionKind, ActionOutcome, ActionStatus, Outcome, RouteOutcome};
pub use settings::EngineSettings;

use circuit::Circuits;
use dlq::{DeadLetterQueue, ReplayFailure};
use metrics::{EngineMetrics, OutcomeLabels};
use rate_limit::RateLimiter;

/// The engine could not be created.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Settings are invalid (one problem per line).
    #[error("invalid workflow engine settings: {}", .0.join("; "))]
    InvalidSettings(Vec<String>),
    /// The HTTP client could not be built.
    #[error("cannot build the workflow engine's HTTP client: {0}")]
    HttpClient(String),
}

impl EngineError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidSettings(_) => "invalid_settings",
            Self::HttpClient(_) => "http_client",
        }
    }
}

/// The process-wide workflow engine. Cheap to clone (clones share everything).
#[derive(Clone)]
pub struct Engine {
    shared: std::sync::Arc<Shared>,
}

/// State shared by every workflow.
pub(crate) struct Shared {
    pub settings: EngineSettings,
    pub client: reqwest::Client,
    pub metrics: EngineMetrics,
    pub circuits: Circuits,
    pub limiter: RateLimiter,
    pub dlq: DeadLetterQueue,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("settings", &self.shared.settings).finish_non_exhaustive()
    }
}

/// Keeps `workflow_events_in_progress` right even when a caller drops the future.
struct InProgress(Gauge);

impl InProgress {
    fn start(gauge: &Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Ends a replay as abandoned when the caller drops the future before it finishes.
struct ReplayGuard<'a> {
    dlq: &'a DeadLetterQueue,
    id: &'a str,
    finished: bool,
}

impl Drop for ReplayGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.dlq.abandon_replay(self.id);
        }
    }
}

impl Engine {
    /// Creates the engine and registers its metrics in `registry`.
    pub fn new(settings: EngineSettings, registry: &mut Registry) -> Result<Self, EngineError> {
        let problems = settings.problems();
        if !problems.is_empty() {
            return Err(EngineError::InvalidSettings(problems));
        }
        let client = reqwest::Client::builder()
            .user_agent(settings.user_agent.clone())
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| EngineError::HttpClient(error.to_string()))?;
        let metrics = EngineMetrics::register(registry);
        let shared = Shared {
            circuits: Circuits::new(metrics.circuit_state.clone()),
            limiter: RateLimiter::new(metrics.rate_limiter_rejected.clone()),
            dlq: DeadLetterQueue::new(settings.dlq_capacity, metrics.dlq_size.clone()),
            settings,
            client,
            metrics,
        };
        Ok(Self { shared: std::sync::Arc::new(shared) })
    }

    /// The settings the engine was created with.
    pub fn settings(&self) -> &EngineSettings {
        &self.shared.settings
    }

    /// Runs `event` (a canonical event JSON object) through `workflow`.
    pub async fn process(&self, workflow: &Workflow, event: Value) -> Outcome {
        let shared = &*self.shared;
        let _in_progress = InProgress::start(&shared.metrics.events_in_progress);
        let (event_id, event_type) = identity(&event);
        let mut routes = Vec::with_capacity(workflow.routes.len());
        let mut dead_lettered = false;
        for route in &workflow.routes {
            if let Err(reason) = filter::evaluate(&route.filter, &event) {
                routes.push(RouteOutcome {
                    route: route.name.clone(),
                    matched: false,
                    skip_reason: Some(reason),
                    transforms_applied: 0,
                    actions: Vec::new(),
                });
                continue;
            }
            let mut copy = event.clone();
            let (transforms_applied, transform_error) =
                match transform::apply(&route.transforms, &mut copy) {
                    Ok(applied) => (applied, None),
                    Err(error) => (error.index, Some(format!("transform failed: {error}"))),
                };
            let mut actions = Vec::with_capacity(route.actions.len());
            for action in &route.actions {
                let mut outcome = match &transform_error {
                    None => execute::run(shared, workflow, route, action, &copy).await,
                    Some(error) => {
                        let outcome = execute::refused(action, ActionStatus::Failed, error.clone());
                        execute::observe(shared, &outcome, Instant::now());
                        outcome
                    }
                };
                if !outcome.status.is_success() {
                    dead_lettered = true;
                    let letter = dead_letter(workflow, route, &outcome, &event);
                    let id = shared.dlq.push(letter);
                    tracing::warn!(
                        workflow = %workflow.name,
                        route = %route.name,
                        action = %action.id,
                        event_id = event_id.as_deref().unwrap_or(""),
                        status = ?outcome.status,
                        dead_letter = %id,
                        "workflow action dead-lettered"
                    );
                    outcome.dead_letter_id = Some(id);
                }
                actions.push(outcome);
            }
            routes.push(RouteOutcome {
                route: route.name.clone(),
                matched: true,
                skip_reason: transform_error,
                transforms_applied,
                actions,
            });
        }
        let outcome = Outcome { event_id, event_type, routes, dead_lettered };
        let label = if dead_lettered {
            "dead_lettered"
        } else if outcome.matched() {
            "ok"
        } else {
            "no_route"
        };
        shared.metrics.events_processed.get_or_create(&OutcomeLabels { outcome: label }).inc();
        outcome
    }

    /// Every dead letter, oldest first.
    pub fn dead_letters(&self) -> Vec<DeadLetter> {
        self.shared.dlq.list()
    }

    /// The dead letter with `id`.
    pub fn dead_letter(&self, id: &str) -> Option<DeadLetter> {
        self.shared.dlq.get(id)
    }

    /// Removes the dead letter with `id` without running it.
    pub fn discard_dead_letter(&self, id: &str) -> Result<DeadLetter, DeadLetterError> {
        let entry = self.shared.dlq.discard(id)?;
        tracing::info!(dead_letter = %id, workflow = %entry.workflow, "dead letter discarded");
        Ok(entry)
    }

    /// Runs the dead letter's action again on its original event, with the route's transforms
    /// and the action's settings as `workflow` defines them now (the filter is not re-checked:
    /// a replay is an operator's decision). Success removes the entry; failure keeps it with the
    /// new error, attempts and time, and counts the replay. Circuit breaker and rate limiter
    /// apply as for any action.
    pub async fn replay_dead_letter(
        &self,
        workflow: &Workflow,
        id: &str,
    ) -> Result<Outcome, DeadLetterError> {
        let shared = &*self.shared;
        let entry = shared.dlq.begin_replay(id)?;
        let mut guard = ReplayGuard { dlq: &shared.dlq, id, finished: false };
        if entry.workflow != workflow.name {
            return Err(DeadLetterError::WorkflowMismatch {
                id: id.to_owned(),
                expected: entry.workflow,
                given: workflow.name.clone(),
            });
        }
        let Some((route, action)) =
            workflow.route(&entry.route).and_then(|r| r.action(&entry.action).map(|a| (r, a)))
        else {
            return Err(DeadLetterError::UnknownAction {
                workflow: workflow.name.clone(),
                route: entry.route,
                action: entry.action,
            });
        };
        let mut copy = entry.event.clone();
        let (transforms_applied, transform_error, mut outcome) =
            match transform::apply(&route.transforms, &mut copy) {
                Ok(applied) => {
                    (applied, None, execute::run(shared, workflow, route, action, &copy).await)
                }
                Err(error) => {
                    let message = format!("transform failed: {error}");
                    let outcome = execute::refused(action, ActionStatus::Failed, message.clone());
                    execute::observe(shared, &outcome, Instant::now());
                    (error.index, Some(message), outcome)
                }
            };
        let succeeded = outcome.status.is_success();
        if succeeded {
            shared.dlq.end_replay(id, None);
        } else {
            let mut updated = dead_letter(workflow, route, &outcome, &entry.event);
            updated.id = id.to_owned();
            updated.replay_count = entry.replay_count;
            shared.dlq.end_replay(id, Some(ReplayFailure { entry: updated }));
            outcome.dead_letter_id = Some(id.to_owned());
        }
        guard.finished = true;
        tracing::info!(
            dead_letter = %id,
            workflow = %workflow.name,
            route = %route.name,
            action = %action.id,
            succeeded,
            "dead letter replayed"
        );
        let (event_id, event_type) = identity(&entry.event);
        Ok(Outcome {
            event_id,
            event_type,
            routes: vec![RouteOutcome {
                route: route.name.clone(),
                matched: true,
                skip_reason: transform_error,
                transforms_applied,
                actions: vec![outcome],
            }],
            dead_lettered: !succeeded,
        })
    }

    /// Every destination's circuit, sorted by destination.
    pub fn circuits(&self) -> Vec<CircuitStatus> {
        self.shared.circuits.statuses(Instant::now())
    }
}

/// The event's `id` and `type`.
fn identity(event: &Value) -> (Option<String>, Option<String>) {
    let text = |key| event.get(key).and_then(Value::as_str).map(str::to_owned);
    (text("id"), text("type"))
}

/// A dead letter (id assigned by the queue) for an action that did not succeed.
fn dead_letter(
    workflow: &Workflow,
    route: &definition::Route,
    outcome: &ActionOutcome,
    original: &Value,
) -> DeadLetter {
    DeadLetter {
        id: String::new(),
        event: original.clone(),
        workflow: workflow.name.clone(),
        route: route.name.clone(),
        action: outcome.id.clone(),
        action_type: outcome.kind,
        destination: outcome.destination.clone(),
        status: outcome.status,
        error: outcome.error.clone().unwrap_or_default(),
        attempts: outcome.attempts,
        failed_at: jiff::Timestamp::now(),
        replay_count: 0,
    }
}
