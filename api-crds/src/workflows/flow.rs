//! Flow: a reusable DAG of agent steps and approval gates, with parameters.

use k8s_openapi::api::core::v1::EnvVar;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// A workflow definition. Cycles and dangling edges are refused at admission.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "workflows.keelson.dev",
    version = "v1alpha1",
    kind = "Flow",
    doc = "A reusable DAG of agent steps and approval gates, with parameters.",
    namespaced,
    status = "FlowStatus",
    shortname = "fl",
    category = "keelson",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Description",
        type_ = "string",
        json_path = ".spec.description",
        priority = 1
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct FlowSpec {
    /// What the flow does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// Parameters a run supplies; steps read them as `KEELSON_PARAM_<NAME>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub parameters: Vec<FlowParameter>,
    /// The steps and gates, their dependencies and the run timeout.
    #[serde(flatten)]
    pub plan: Plan,
    /// Seconds a finished run of this flow is kept before it is deleted with its Jobs, unless
    /// the run says otherwise; the controller's setting when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 31536000))]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// What a run executes: nodes, the edges between them and a timeout. A Flow holds one; a Run
/// holds one inline instead of referencing a Flow.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The steps and gates.
    #[schemars(length(min = 1, max = 200))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["id".into()]))]
    pub nodes: Vec<FlowNode>,
    /// Dependencies: `to` starts after `from` succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub edges: Vec<FlowEdge>,
    /// Seconds a whole run may take before it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 604800))]
    pub timeout_seconds: Option<i64>,
}

/// A parameter of a flow.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("!(has(self.required) && self.required && has(self.default))").message("a required parameter cannot have a default"))]
#[serde(rename_all = "camelCase")]
pub struct FlowParameter {
    /// Name, a C identifier.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"), length(max = 63))]
    pub name: String,
    /// What the parameter means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// A run must supply it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Value when a run does not supply one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A node of a flow: exactly one of `agent` or `gate`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.agent) != has(self.gate)").message("a node is either an agent step or a gate: set exactly one of agent and gate"))]
#[serde(rename_all = "camelCase")]
pub struct FlowNode {
    /// Identifier, unique in the flow; a DNS label, since it names the node's Job.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(min = 1, max = 40))]
    pub id: String,
    /// Run an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentStep>,
    /// Wait for a person to approve or reject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateStep>,
}

/// A step that runs an Agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStep {
    /// Name of the Agent in the same namespace.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub agent_ref: String,
    /// Arguments appended to the agent's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment added to the agent's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Nodes whose outputs this step reads (in `KEELSON_INPUTS`); each is also a dependency,
    /// like an edge from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 200))]
    pub inputs: Vec<String>,
    /// Seconds one attempt may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: Option<i64>,
    /// Further attempts after a failure; none when absent.
    #[serde(default, skip_serializing_if = "crate::schema::is_zero")]
    #[schemars(range(min = 0, max = 10))]
    pub retries: i32,
    /// Seconds before the first retry, doubled for each further one up to ten minutes;
    /// 10 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 600))]
    pub retry_backoff_seconds: Option<i64>,
}

/// An approval gate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStep {
    /// What the approver is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
    /// Seconds to wait for a decision; none waits forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2592000))]
    pub timeout_seconds: Option<i64>,
    /// Decision taken when the timeout passes; `reject` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_decision: Option<GateDecision>,
}

/// A decision on a gate.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GateDecision {
    /// Continue the run.
    Approve,
    /// Fail the gate, and so the run.
    #[default]
    Reject,
}

/// A dependency between two nodes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowEdge {
    /// The node that must succeed first.
    pub from: String,
    /// The node that waits for it.
    pub to: String,
}

/// Observed state of a flow.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlowStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
}
