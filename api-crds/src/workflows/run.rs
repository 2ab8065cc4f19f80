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
    printcolumn(name = "Started", type_ = "date", json_path = ".status.startedAt"),
    printcolumn(name = "Finished", type_ = "date", json_path = ".status.finishedAt"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("has(self.flowRef) != has(self.plan)").message("set exactly one of flowRef and plan"))]
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
    /// Parameter values, by name.
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// Set to start the run; a run is created queued.
    #[serde(default)]
    pub start: bool,
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
    /// Exit code of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
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
