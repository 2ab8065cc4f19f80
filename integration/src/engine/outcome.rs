//! What processing an event did: the answer of `POST /api/v1/workflow`.

use serde::Serialize;

/// The result of processing one event (or replaying one dead letter).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The event's `id`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The event's `type`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// One entry per route of the workflow, in order (for a replay: the replayed route).
    pub routes: Vec<RouteOutcome>,
    /// Whether any action went to the dead letter queue (for a replay: the entry stays there).
    pub dead_lettered: bool,
}

impl Outcome {
    /// Whether any route matched.
    pub fn matched(&self) -> bool {
        self.routes.iter().any(|r| r.matched)
    }
}

/// What one route did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouteOutcome {
    /// Route name.
    pub route: String,
    /// Whether the filter took the event.
    pub matched: bool,
    /// Why the filter did not take it, or why its transforms failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Transforms applied to the route's copy of the event.
    pub transforms_applied: usize,
    /// One entry per action, in order (empty when not matched).
    pub actions: Vec<ActionOutcome>,
}

/// What one action did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionOutcome {
    /// Action id.
    pub id: String,
    /// Action kind.
    pub kind: ActionKind,
    /// `scheme://host:port` of a webhook or FHIR action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// How it ended.
    pub status: ActionStatus,
    /// HTTP requests made (1 for a `log` action, 0 when refused before any request).
    pub attempts: u32,
    /// HTTP status of the last answer, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Why it did not succeed (never event data).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time, retries and backoff included.
    pub duration_ms: u64,
    /// The dead letter made for it, when it did not succeed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_id: Option<String>,
}

/// Kinds of actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A log line.
    Log,
    /// An HTTP POST of the event.
    Webhook,
    /// An HTTP POST of a FHIR resource.
    Fhir,
}

impl ActionKind {
    /// The kind's name (also the `action_type` metric label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Log => "log",
            Self::Webhook => "webhook",
            Self::Fhir => "fhir",
        }
    }
}

/// How an action ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Done.
    Succeeded,
    /// Failed after its attempts (or could not be built); dead-lettered.
    Failed,
    /// Refused without a call because the destination's circuit is open; dead-lettered.
    CircuitOpen,
    /// Refused by the workflow's rate limiter; dead-lettered.
    RateLimited,
}

impl ActionStatus {
    /// Whether the action succeeded.
    pub fn is_success(self) -> bool {
        self == Self::Succeeded
    }
}
