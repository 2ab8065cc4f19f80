//! Run: one execution of a flow or of an inline plan, with per-node state and gate decisions.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

use super::{GateDecision, Plan};

/// One execution. Created queued; `start: true` sets it going. Gate decisions are appended to
/// `decisions`; nothing else in the spec changes after creation.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "workflows.keelson.dev",
    version = "v1alpha1",
    kind = "Run",
    doc = "One execution of a Flow or of an inline plan, with per-node state and gate decisions.",
    namespaced,
    status = "RunStatus",
    shortname = "wr",
    category = "keelson",
    printcolumn(name = "Flow", type_ = "string", json_path = ".spec.flowRef"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Nodes", type_ = "string", json_path = ".status.progress"),
    printcolumn(name = "Started", type_ = "date", json_path = ".status.startedAt"),
    printcolumn(name = "Duration", type_ = "string", json_path = ".status.duration"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("(has(self.flowRef) ? 1 : 0) + (has(self.plan) ? 1 : 0) + (has(self.cloneOf) ? 1 : 0) == 1").message("set exactly one of flowRef, plan and cloneOf"))]
#[x_kube(validation = Rule::new("has(self.cloneOf) == has(oldSelf.cloneOf) && (!has(self.cloneOf) || self.cloneOf == oldSelf.cloneOf)").message("cloneOf cannot change").field_path(".cloneOf"))]
#[x_kube(validation = Rule::new("has(self.timeoutSeconds) == has(oldSelf.timeoutSeconds) && (!has(self.timeoutSeconds) || self.timeoutSeconds == oldSelf.timeoutSeconds)").message("timeoutSeconds cannot change").field_path(".timeoutSeconds"))]
#[x_kube(validation = Rule::new("!has(oldSelf.cancel) || !oldSelf.cancel || (has(self.cancel) && self.cancel)").message("a cancelled run cannot be resumed").field_path(".cancel"))]
#[x_kube(validation = Rule::new("has(self.flowRef) == has(oldSelf.flowRef) && (!has(self.flowRef) || self.flowRef == oldSelf.flowRef)").message("flowRef cannot change").field_path(".flowRef"))]
#[x_kube(validation = Rule::new("has(self.plan) == has(oldSelf.plan) && (!has(self.plan) || self.plan == oldSelf.plan)").message("plan cannot change").field_path(".plan"))]
#[x_kube(validation = Rule::new("self.parameters == oldSelf.parameters").message("parameters cannot change").field_path(".parameters"))]
#[x_kube(validation = Rule::new("!oldSelf.start || self.start").message("a started run cannot be un-started").field_path(".start"))]
#[x_kube(validation = Rule::new("oldSelf.decisions.all(d, self.decisions.exists(n, n.node == d.node && n.decision == d.decision))").message("gate decisions cannot be changed or withdrawn").field_path(".decisions"))]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    /// The Flow to run, in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub flow_ref: Option<String>,
    /// An inline plan, instead of a flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Run again what this earlier Run (in the same namespace) ran: its plan and parameters.
    /// The new run records it as its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub clone_of: Option<String>,
    /// Parameter values, by name.
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// Set to start the run; a run is created queued.
    #[serde(default)]
    pub start: bool,
    /// Set to stop the run: running steps are stopped, the rest skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
    /// Seconds the whole run may take, instead of the plan's `timeoutSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 604800))]
    pub timeout_seconds: Option<i64>,
    /// Seconds the run is kept once finished, then deleted with its Jobs; the flow's
    /// `ttlSecondsAfterFinished`, else the controller's setting, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 31536000))]
    pub ttl_seconds_after_finished: Option<i64>,
    /// Decisions on gates, appended by approvers.
    #[serde(default)]
    #[schemars(length(max = 200))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["node".into()]))]
    pub decisions: Vec<GateDecisionRecord>,
}

/// A decision on one gate of a run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateDecisionRecord {
    /// The gate's node id.
    pub node: String,
    /// Approve or reject.
    pub decision: GateDecision,
    /// Who decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub by: Option<String>,
    /// When; the time the controller first saw the decision when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub comment: Option<String>,
}

/// Observed state of a run.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    /// queued, running, succeeded, failed or cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RunPhase>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// What the run executes: the flow's plan, the cloned run's or the inline one, copied when
    /// the controller first saw the run, so later edits of the flow do not change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The parameter values the run uses: its own, then the flow's defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Nodes finished of all, e.g. `2/3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Time from start to finish (or to the last update while running), e.g. `1m12s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// State of each node, in plan order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["id".into()]))]
    pub nodes: Vec<NodeState>,
    /// Outputs of the run, `<node>.<key>` to value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// When the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the run reached a final phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// Why the run failed or was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Phase of a run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunPhase {
    /// Created, not started.
    Queued,
    /// Started, not finished.
    Running,
    /// Every node succeeded or was skipped.
    Succeeded,
    /// A node failed, a gate was rejected, or the run timed out.
    Failed,
    /// Stopped by a user.
    Cancelled,
}

/// State of one node of a run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeState {
    /// The node's id.
    pub id: String,
    /// Where the node is.
    pub phase: NodePhase,
    /// Attempts made so far.
    #[serde(default)]
    pub attempts: i32,
    /// When the node started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the node finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// The Job of the current or last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// When the next attempt may start, after a failed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<Time>,
    /// Exit code of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The decision a gate took, with who took it, when and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<GateDecisionRecord>,
    /// CamelCase reason of the last change, e.g. `GateRejected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Detail of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Outputs the node reported.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
}

impl NodeState {
    /// A node in `phase` with nothing else known yet.
    pub fn new(id: impl Into<String>, phase: NodePhase) -> Self {
        Self {
            id: id.into(),
            phase,
            attempts: 0,
            started_at: None,
            finished_at: None,
            job_name: None,
            retry_at: None,
            exit_code: None,
            decision: None,
            reason: None,
            message: None,
            outputs: BTreeMap::new(),
        }
    }
}

/// Phase of one node.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodePhase {
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
