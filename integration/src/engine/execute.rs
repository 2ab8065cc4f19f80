//! Running one action: build, circuit, rate limit, attempts with backoff, metrics.

use std::time::Instant;

use serde_json::Value;

use super::Shared;
use super::action::{self, AttemptError, Request, destination, idempotency_key};
use super::circuit::Health;
use super::definition::{Action, ActionConfig, Route, Workflow};
use super::metrics::{ActionErrorLabels, ActionTypeLabels};
use super::outcome::{ActionKind, ActionOutcome, ActionStatus};

/// The `destination` label of actions that stay in the process.
const LOCAL: &str = "local";

/// The kind and destination of an action (from its definition alone).
pub(crate) fn describe(action: &Action) -> (ActionKind, Option<String>) {
    match &action.config {
        ActionConfig::Log(_) => (ActionKind::Log, None),
        ActionConfig::Webhook(w) => (ActionKind::Webhook, Some(destination(&w.url))),
        ActionConfig::Fhir(f) => (ActionKind::Fhir, Some(destination(&f.base_url))),
    }
}

/// An outcome that never reached the destination.
pub(crate) fn refused(action: &Action, status: ActionStatus, error: String) -> ActionOutcome {
    let (kind, destination) = describe(action);
    ActionOutcome {
        id: action.id.clone(),
        kind,
        destination,
        status,
        attempts: 0,
        http_status: None,
        error: Some(error),
        duration_ms: 0,
        dead_letter_id: None,
    }
}

/// Counts a finished action in the metrics.
pub(crate) fn observe(shared: &Shared, outcome: &ActionOutcome, started: Instant) {
    let action_type = outcome.kind.as_str();
    if outcome.attempts > 0 {
        shared
            .metrics
            .action_duration
            .get_or_create(&ActionTypeLabels { action_type })
            .observe(started.elapsed().as_secs_f64());
    }
    if !outcome.status.is_success() {
        let destination = outcome.destination.clone().unwrap_or_else(|| LOCAL.to_owned());
        shared
            .metrics
            .action_errors
            .get_or_create(&ActionErrorLabels { action_type, destination })
            .inc();
    }
}

/// Runs `action` of `route` on the route's copy of the event (no dead-lettering here).
pub(crate) async fn run(
    shared: &Shared,
    workflow: &Workflow,
    route: &Route,
    action: &Action,
    event: &Value,
) -> ActionOutcome {
    let started = Instant::now();
    let event_id = event.get("id").and_then(Value::as_str);
    let key = || idempotency_key(event_id, &route.name, &action.id);
    let default_timeout = shared.settings.default_timeout;
    let request = match &action.config {
        ActionConfig::Log(log) => {
            action::log::emit(
                log,
                &action::log::LogContext {
                    workflow: &workflow.name,
                    route: &route.name,
                    action: &action.id,
                    event_id,
                    event_type: event.get("type").and_then(Value::as_str),
                },
            );
            let outcome = ActionOutcome {
                id: action.id.clone(),
                kind: ActionKind::Log,
                destination: None,
                status: ActionStatus::Succeeded,
                attempts: 1,
                http_status: None,
                error: None,
                duration_ms: elapsed_ms(started),
                dead_letter_id: None,
            };
            observe(shared, &outcome, started);
            return outcome;
        }
        ActionConfig::Webhook(webhook) => {
            Ok(action::webhook::request(webhook, event, default_timeout, key()))
        }
        ActionConfig::Fhir(fhir) => action::fhir::request(fhir, event, default_timeout, key())
            .map_err(|error| format!("cannot build the FHIR resource: {error}")),
    };
    let outcome = match request {
        Ok(request) => deliver(shared, workflow, action, &request, started).await,
        Err(error) => refused(action, ActionStatus::Failed, error),
    };
    observe(shared, &outcome, started);
    outcome
}

/// Circuit, rate limit and attempts for one outbound request.
async fn deliver(
    shared: &Shared,
    workflow: &Workflow,
    action: &Action,
    request: &Request,
    started: Instant,
) -> ActionOutcome {
    let (kind, _) = describe(action);
    let target = destination(&request.url);
    let Some(first) = shared.circuits.acquire(&target, Instant::now()) else {
        return refused(action, ActionStatus::CircuitOpen, format!("circuit open for {target}"));
    };
    if let Some(policy) = &workflow.rate_limit
        && !shared.limiter.try_acquire(&workflow.name, policy, Instant::now())
    {
        drop(first);
        return refused(
            action,
            ActionStatus::RateLimited,
            format!("rate limit of workflow `{}` exceeded", workflow.name),
        );
    }
    let retry = &workflow.retry;
    let breaker = &workflow.circuit_breaker;
    let mut permit = Some(first);
    let mut attempts = 0;
    let mut last_error: Option<AttemptError> = None;
    let (status, http_status, error) = loop {
        let Some(current) =
            permit.take().or_else(|| shared.circuits.acquire(&target, Instant::now()))
        else {
            let cause = last_error.as_ref().map(|e| e.describe(&target)).unwrap_or_default();
            break (
                ActionStatus::Failed,
                last_error.as_ref().and_then(AttemptError::http_status),
                Some(format!("{cause}; circuit opened after {attempts} attempts")),
            );
        };
        attempts += 1;
        match action::send(&shared.client, request).await {
            Ok(code) => {
                current.record(Health::Healthy, breaker, Instant::now());
                break (ActionStatus::Succeeded, Some(code), None);
            }
            Err(error) => {
                current.record(error.health(), breaker, Instant::now());
                if !error.retryable() || attempts >= retry.max_attempts.max(1) {
                    let suffix = if attempts > 1 {
                        format!(" (after {attempts} attempts)")
                    } else {
                        String::new()
                    };
                    break (
                        ActionStatus::Failed,
                        error.http_status(),
                        Some(format!("{}{suffix}", error.describe(&target))),
                    );
                }
                let wait = super::retry::backoff(retry, attempts, error.retry_after());
                tracing::debug!(
                    workflow = %workflow.name,
                    action = %action.id,
                    destination = %target,
                    attempt = attempts,
                    wait_ms = wait.as_millis() as u64,
                    "action attempt failed; retrying"
                );
                last_error = Some(error);
                tokio::time::sleep(wait).await;
            }
        }
    };
    ActionOutcome {
        id: action.id.clone(),
        kind,
        destination: Some(target),
        status,
        attempts,
        http_status,
        error,
        duration_ms: elapsed_ms(started),
        dead_letter_id: None,
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
