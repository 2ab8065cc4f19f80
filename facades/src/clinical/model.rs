//! Bodies of the clinical endpoints, as the OpenAPI document shows them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /api/v1/parse` as JSON; the raw message may be sent instead.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParseRequest {
    /// The HL7v2 message (ER7, segments ended by CR, LF or CRLF).
    pub message: String,
    /// Refuse non-standard line endings and delimiters, repeated MSH, unknown segments and
    /// extra components instead of warning about them.
    #[serde(default)]
    pub strict: bool,
}

/// What a message holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct ParseResponse {
    /// MSH-9.1, e.g. `ADT`.
    pub message_type: Option<String>,
    /// MSH-9.2, e.g. `A01`.
    pub trigger: Option<String>,
    /// MSH-10, the message control id.
    pub control_id: Option<String>,
    /// MSH-12, the HL7 version.
    pub version: Option<String>,
    /// Whether the message type maps to canonical events; when not, `events` is empty and a
    /// `NO_EVENT_MAPPING` warning says so.
    pub mapped: bool,
    /// Canonical events (docs/clinical-api.md lists the event types and fields).
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<serde_json::Value>,
    /// Non-fatal findings.
    pub warnings: Vec<Diagnostic>,
    /// Which message field became which event field.
    pub lineage: Vec<Lineage>,
}

/// A finding about a message; never quotes its content.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Diagnostic {
    /// `byte`, `syntactic` or `semantic`.
    pub phase: String,
    /// Stable code, e.g. `MISSING_PV1`.
    pub code: String,
    /// What it means.
    pub message: String,
    /// Where, e.g. `PID.3[0]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `info`, `warning` or `error`.
    pub severity: String,
}

/// One lineage link.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Lineage {
    /// The message field, e.g. `OBX[1]-5`.
    pub source: String,
    /// The event field, e.g. `event.results[1].result`.
    pub target: String,
    /// A short preview of the value; `[redacted]` for patient identity fields.
    pub value_preview: String,
}

/// `POST /api/v1/workflow`: one canonical event, or a raw message whose events are processed.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowRequest {
    /// A canonical event (an object with a string `type`), e.g. one `POST /api/v1/parse` returned.
    #[schema(value_type = Option<Object>)]
    pub event: Option<serde_json::Value>,
    /// A raw HL7v2 message, instead of `event`.
    pub message: Option<String>,
    /// The integration whose workflow runs; the server's default workflow when absent.
    pub integration_id: Option<String>,
}

/// What the workflow did with each event.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowResponse {
    /// The workflow's name.
    pub workflow: String,
    /// The integration whose workflow ran, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration_id: Option<String>,
    /// One outcome per event: `{event_id, event_type, routes: [{route, matched, skip_reason,
    /// transforms_applied, actions: [{id, kind, destination, status, attempts, error,
    /// duration_ms}]}], dead_lettered}`.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<serde_json::Value>,
    /// Findings about the message, when a raw message was sent.
    pub warnings: Vec<Diagnostic>,
}
