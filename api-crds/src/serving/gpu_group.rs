//! GPUGroup: several models sharing one GPU, one active at a time by priority and demand.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// Desired state of a GPU shared by several models.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "serving.keelson.dev",
    version = "v1alpha1",
    kind = "GPUGroup",
    doc = "Several ModelDeployments sharing one GPU, one active at a time by priority and demand.",
    plural = "gpugroups",
    namespaced,
    status = "GpuGroupStatus",
    shortname = "gg",
    category = "keelson",
    printcolumn(name = "Strategy", type_ = "string", json_path = ".spec.strategy"),
    printcolumn(name = "Node", type_ = "string", json_path = ".spec.node"),
    printcolumn(name = "Active", type_ = "string", json_path = ".status.activeModel"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Swaps", type_ = "integer", json_path = ".status.swapCount"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct GpuGroupSpec {
    /// How members share the GPU.
    #[serde(default)]
    pub strategy: GpuSharingStrategy,
    /// Node that holds the GPU.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub node: String,
    /// Extra node labels the members must match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Member ModelDeployments, by name, with their priority.
    #[schemars(length(min = 1, max = 32))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub models: Vec<GpuGroupMember>,
    /// What happens to the active model when a higher-priority one needs the GPU.
    #[serde(default)]
    pub preemption_policy: PreemptionPolicy,
    /// Seconds a preempted model may take to drain.
    #[serde(default = "default_drain")]
    #[schemars(range(min = 5, max = 300))]
    pub drain_timeout_seconds: i32,
    /// Guards against swapping models back and forth.
    #[serde(default)]
    pub anti_thrashing: AntiThrashing,
}

fn default_drain() -> i32 {
    60
}

/// How members of a group share the GPU.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum GpuSharingStrategy {
    /// One model holds the whole GPU; the others are scaled to zero.
    #[default]
    Exclusive,
    /// Models take turns on the GPU.
    TimeSliced,
    /// Models run together within the GPU's memory.
    MemoryShared,
}

/// What happens to the active model when it is preempted.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum PreemptionPolicy {
    /// Stop it at once.
    Immediate,
    /// Let in-flight requests finish, up to `drainTimeoutSeconds`.
    #[default]
    Graceful,
}

/// One model of a GPU group.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuGroupMember {
    /// Name of a ModelDeployment in the group's namespace.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub name: String,
    /// Higher wins the GPU; 100 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub priority: Option<i32>,
    /// Estimated GPU memory in MiB, for MemoryShared placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub vram_estimate_mb: Option<i64>,
}

impl GpuGroupMember {
    /// The member's priority, 100 when unset.
    pub fn priority(&self) -> i32 {
        self.priority.unwrap_or(100)
    }
}

/// Anti-thrashing settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AntiThrashing {
    /// Turn the guards on.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// A model that became active keeps the GPU at least this long.
    #[serde(default = "default_min_run")]
    #[schemars(range(min = 0, max = 3600))]
    pub minimum_run_duration_seconds: i32,
    /// A preempted model waits this long before it may preempt back.
    #[serde(default = "default_cooldown")]
    #[schemars(range(min = 0, max = 3600))]
    pub cooldown_after_preemption_seconds: i32,
}

impl Default for AntiThrashing {
    fn default() -> Self {
        Self {
            enabled: true,
            minimum_run_duration_seconds: default_min_run(),
            cooldown_after_preemption_seconds: default_cooldown(),
        }
    }
}

fn default_true() -> bool {
    true
}
fn default_min_run() -> i32 {
    30
}
fn default_cooldown() -> i32 {
    60
}

/// Observed state of a GPU group.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuGroupStatus {
    /// Pending, Idle, Active, Draining, Swapping or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<GpuGroupPhase>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Member that holds the GPU now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_model: Option<String>,
    /// When the active model last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_swap_time: Option<Time>,
    /// Why the active model last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_swap_reason: Option<String>,
    /// How often the active model changed.
    #[serde(default)]
    pub swap_count: i64,
}

/// Lifecycle phase of a GPUGroup.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum GpuGroupPhase {
    /// Members not resolved yet.
    Pending,
    /// No member is active.
    Idle,
    /// One member holds the GPU.
    Active,
    /// The active member is draining before a swap.
    Draining,
    /// Another member is starting.
    Swapping,
    /// The group cannot work; see the `Ready` condition.
    Failed,
}
