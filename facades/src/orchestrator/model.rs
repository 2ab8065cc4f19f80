//! The JSON shapes of the REST API (snake_case), as the OpenAPI document describes them.
//! Unknown request fields are ignored, so clients written for similar orchestrators work.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Created, not started.
    Queued,
    /// Started, not finished.
    Running,
    /// Every node succeeded.
    Succeeded,
    /// A node failed, a gate was rejected, or the run timed out.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// A node's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Waiting for its predecessors.
    Pending,
    /// Executing.
    Running,
    /// A gate waiting for a decision.
    WaitingApproval,
    /// Done.
    Succeeded,
    /// Failed, or a rejected gate.
    Failed,
    /// Not run, because the run ended first.
    Skipped,
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Runs an agent as a Job.
    Agent,
    /// Waits for a person to approve or reject.
    Gate,
}

/// A decision on a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Continue the run.
    Approve,
    /// Fail the gate, and so the run.
    Reject,
}

/// A run: one execution of a flow or of an inline plan.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Run {
    /// Identifier.
    pub id: String,
    /// Display name; the id unless one was given.
    pub name: String,
    /// The flow it runs, if it runs one.
    pub flow_id: Option<String>,
    /// State.
    pub status: RunState,
    /// Parameter values.
    pub params: BTreeMap<String, String>,
    /// Every node, in plan order.
    pub nodes: Vec<RunNode>,
    /// Outputs, `<node>.<key>` to value.
    pub outputs: BTreeMap<String, String>,
    /// The run this one is a clone of.
    pub parent_run_id: Option<String>,
    /// Why the run failed or was cancelled.
    pub message: Option<String>,
    /// The token (or webhook, or schedule) that created it.
    pub created_by: Option<String>,
    /// When it was created (RFC 3339).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it started.
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
    /// When it finished.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    /// Where its server-sent events stream.
    pub events_url: String,
}

/// A node of a run.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunNode {
    /// Identifier, unique in the run.
    pub id: String,
    /// Agent step or gate.
    pub kind: NodeKind,
    /// State.
    pub status: NodeStatus,
    /// Attempts made so far.
    pub attempts: i32,
    /// When it started.
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
    /// When it finished.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    /// Outputs the node reported.
    pub outputs: BTreeMap<String, String>,
    /// Detail of the last change.
    pub message: Option<String>,
    /// The Job of the current or last attempt (see `GET /jobs/{id}/status`).
    pub job_id: Option<String>,
    /// Exit code of the last attempt.
    pub exit_code: Option<i32>,
    /// A gate's decision.
    pub decision: Option<GateDecision>,
}

/// A decision taken on a gate.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GateDecision {
    /// The run.
    pub run_id: String,
    /// The gate.
    pub node_id: String,
    /// Approve or reject.
    pub decision: Decision,
    /// Who decided: the token's name.
    pub by: Option<String>,
    /// When.
    #[schema(format = DateTime)]
    pub at: Option<String>,
    /// Why.
    pub comment: Option<String>,
}

/// A parameter value: text, or a number or boolean taken as its text.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ParamValue {
    /// Text.
    Text(String),
    /// A whole number.
    Integer(i64),
    /// A number.
    Number(f64),
    /// A boolean.
    Bool(bool),
}

impl ParamValue {
    /// The value as the text a step sees.
    pub fn into_text(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::Integer(n) => n.to_string(),
            Self::Number(n) => n.to_string(),
            Self::Bool(b) => b.to_string(),
        }
    }
}

/// A duration: whole seconds, or text such as `30m` or `1h 30m`.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum Timeout {
    /// Seconds, 1 to 604800.
    Seconds(i64),
    /// Text, e.g. `90s`, `30m`, `PT1H`.
    Text(String),
}

/// Creates a run of a flow or of an inline plan.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CreateRun {
    /// Identifier (a DNS label); generated when absent.
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63)]
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// The flow to run; exactly one of `flow_id` and `plan`.
    pub flow_id: Option<String>,
    /// An inline plan; exactly one of `flow_id` and `plan`.
    pub plan: Option<Plan>,
    /// Parameter values.
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    /// How long the whole run may take, instead of the plan's timeout.
    pub timeout: Option<Timeout>,
    /// Start it at once.
    #[serde(default)]
    pub auto_start: bool,
}

/// Clones a run.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CloneRun {
    /// Start the clone at once.
    #[serde(default)]
    pub auto_start: bool,
}

/// Starts a run of a flow.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RunFlow {
    /// Parameter values.
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    /// How long the whole run may take.
    pub timeout: Option<Timeout>,
}

/// A gate decision's optional body.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DecisionRequest {
    /// Why.
    pub comment: Option<String>,
}

/// What a run executes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct Plan {
    /// Steps and gates.
    #[schema(min_items = 1, max_items = 200)]
    pub nodes: Vec<PlanNode>,
    /// Dependencies.
    #[serde(default)]
    pub edges: Vec<Edge>,
    /// Seconds a whole run may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 604800)]
    pub timeout_seconds: Option<i64>,
}

/// A step or gate of a plan.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct PlanNode {
    /// Identifier, unique in the plan; a DNS label.
    #[schema(min_length = 1, max_length = 40)]
    pub id: String,
    /// Agent step or gate; a node with `agent_id` is a step, one without a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<NodeKind>,
    /// The agent a step runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Arguments added to the agent's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment added to the agent's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Nodes whose outputs this step reads; each is also a dependency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// Seconds an attempt (or a gate's wait) may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 2592000)]
    pub timeout_seconds: Option<i64>,
    /// Further attempts after a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10)]
    pub retries: Option<i32>,
    /// Seconds before the first retry, doubled for each further one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 600)]
    pub retry_backoff_seconds: Option<i64>,
    /// What a gate asks its approver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A gate's decision when its timeout passes; reject when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_decision: Option<Decision>,
}

/// A dependency: `to` starts after `from` succeeded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct Edge {
    /// The node that must succeed first.
    pub from: String,
    /// The node that waits for it.
    pub to: String,
}

/// A parameter of a flow.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct FlowParam {
    /// Name, a C identifier.
    #[schema(max_length = 63)]
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A run must supply it.
    #[serde(default)]
    pub required: bool,
    /// Value when a run does not supply one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A flow: a reusable plan with parameters.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Flow {
    /// Identifier.
    pub id: String,
    /// Display name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Parameters runs supply.
    pub params: Vec<FlowParam>,
    /// Steps and gates.
    pub nodes: Vec<PlanNode>,
    /// Dependencies.
    pub edges: Vec<Edge>,
    /// Seconds a whole run may take.
    pub timeout_seconds: Option<i64>,
    /// Seconds a finished run is kept.
    pub ttl_seconds_after_finished: Option<i64>,
    /// Increases with every change of the definition.
    pub version: i64,
    /// Whether runs can start: every agent exists.
    pub ready: bool,
    /// Why it is not ready.
    pub problems: Vec<String>,
    /// Who created it.
    pub created_by: Option<String>,
    /// When it was created.
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Creates or replaces a flow.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct FlowInput {
    /// Identifier (a DNS label); generated when absent. Ignored by `PUT`.
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63)]
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// Parameters.
    #[serde(default)]
    pub params: Vec<FlowParam>,
    /// Steps and gates.
    #[schema(min_items = 1, max_items = 200)]
    pub nodes: Vec<PlanNode>,
    /// Dependencies.
    #[serde(default)]
    pub edges: Vec<Edge>,
    /// Seconds a whole run may take.
    #[schema(minimum = 1, maximum = 604800)]
    pub timeout_seconds: Option<i64>,
    /// Seconds a finished run is kept.
    #[schema(minimum = 0, maximum = 31536000)]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// An agent: an image and command that steps run.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Agent {
    /// Identifier.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Container image.
    pub image: String,
    /// Entrypoint.
    pub command: Vec<String>,
    /// Arguments.
    pub args: Vec<String>,
    /// Environment.
    pub env: BTreeMap<String, String>,
    /// What it can do.
    pub capabilities: Vec<String>,
    /// Semantic version.
    pub version: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// Who registered it.
    pub created_by: Option<String>,
    /// When it was registered.
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Registers or replaces an agent.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct AgentInput {
    /// Identifier (a DNS label); generated when absent. Ignored by `PUT`.
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63)]
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Container image.
    #[schema(min_length = 1, max_length = 1024)]
    pub image: String,
    /// Entrypoint; the image's when empty.
    #[serde(default)]
    pub command: Vec<String>,
    /// Arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What it can do.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Semantic version.
    pub version: Option<String>,
    /// What it does.
    pub description: Option<String>,
}

/// What a schedule does when a run is due while the last one still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Concurrency {
    /// Start it anyway.
    Allow,
    /// Skip it.
    Forbid,
    /// Cancel the running one and start the new one.
    Replace,
}

/// A cron schedule of a flow.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Schedule {
    /// Identifier.
    pub id: String,
    /// The flow it runs.
    pub flow_id: String,
    /// Five-field cron expression or a macro such as `@hourly`.
    pub cron: String,
    /// IANA time zone the expression is read in.
    pub time_zone: String,
    /// Parameter values of each run.
    pub params: BTreeMap<String, String>,
    /// Whether new runs are held back.
    pub suspended: bool,
    /// What happens when a run is due while the last one runs.
    pub concurrency: Concurrency,
    /// When the next run is due.
    #[schema(format = DateTime)]
    pub next_run_at: Option<String>,
    /// When a run was last started.
    #[schema(format = DateTime)]
    pub last_run_at: Option<String>,
    /// The run last started.
    pub last_run_id: Option<String>,
    /// Runs it started that have not finished.
    pub active_run_ids: Vec<String>,
    /// Who created it.
    pub created_by: Option<String>,
    /// When it was created.
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Creates a schedule.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ScheduleInput {
    /// Identifier (a DNS label); generated when absent.
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63)]
    pub id: Option<String>,
    /// The flow to run.
    pub flow_id: String,
    /// Five-field cron expression or a macro such as `@hourly`.
    #[schema(min_length = 1, max_length = 128)]
    pub cron: String,
    /// IANA time zone; UTC when absent.
    pub time_zone: Option<String>,
    /// Parameter values of each run.
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    /// Create it suspended.
    #[serde(default)]
    pub suspended: bool,
    /// Forbid when absent.
    pub concurrency: Option<Concurrency>,
}

/// Creates a webhook for a flow.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct WebhookInput {
    /// The flow it starts.
    pub flow_id: String,
}

/// A webhook just created: the only time its token is shown.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookCreated {
    /// Identifier.
    pub id: String,
    /// The flow it starts.
    pub flow_id: String,
    /// The token: send it as `X-Webhook-Token` or a Bearer token. Only its hash is kept.
    pub token: String,
    /// Where to POST, relative to the API's base URL.
    pub trigger_url: String,
}

/// A Kubernetes Job's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// No pod runs yet.
    Pending,
    /// A pod runs.
    Running,
    /// Completed.
    Succeeded,
    /// Failed for good.
    Failed,
}

/// The status of a cluster Job.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobStatus {
    /// The Job's name.
    pub job_id: String,
    /// Where it is.
    pub status: JobState,
    /// Pods running.
    pub active: i32,
    /// Pods succeeded.
    pub succeeded: i32,
    /// Pods failed.
    pub failed: i32,
    /// When it started.
    #[schema(format = DateTime)]
    pub start_time: Option<String>,
    /// When it completed.
    #[schema(format = DateTime)]
    pub completion_time: Option<String>,
}

/// The health answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `ready` on `/ready`.
    pub status: String,
}

/// The `data` of every server-sent event of a run's stream.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunEvent {
    /// Per-run sequence number, also the SSE `id`; on `hello` the last one so far, on
    /// `lagged` the one the stream goes on after.
    pub seq: u64,
    /// The run.
    pub run_id: String,
    /// `hello`, `status`, `node_status`, `gate_decision`, `output`, `log`, `lagged` or `end`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The node the event is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// When it happened (RFC 3339, milliseconds).
    #[schema(format = DateTime)]
    pub time: String,
    /// The event's payload (see docs/orchestrator-api.md).
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// One frame of a run's server-sent event stream, as the client's event source parses it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventFrame {
    /// The event type: `hello`, `status`, `node_status`, `gate_decision`, `output`, `log`,
    /// `lagged` or `end`.
    pub event: String,
    /// The seq; absent on `hello` and `lagged`, which are not part of the history.
    pub id: Option<String>,
    /// A [`RunEvent`] as JSON.
    pub data: String,
}
