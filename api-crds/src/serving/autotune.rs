//! ModelAutotune: one coordinate-descent search over a vLLM deployment's settings.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// One autotune search; the spec is fixed once created.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "serving.keelson.dev",
    version = "v1alpha1",
    kind = "ModelAutotune",
    doc = "One coordinate-descent search over a vLLM ModelDeployment's settings for higher throughput.",
    namespaced,
    status = "ModelAutotuneStatus",
    shortname = "mat",
    category = "keelson",
    printcolumn(name = "Deployment", type_ = "string", json_path = ".spec.deploymentRef"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Done", type_ = "integer", json_path = ".status.progress.completed"),
    printcolumn(name = "Total", type_ = "integer", json_path = ".status.progress.total"),
    printcolumn(name = "Best TPS", type_ = "number", json_path = ".status.bestTokensPerSecond"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("an autotune's spec cannot change; create a new ModelAutotune"))]
#[serde(rename_all = "camelCase")]
pub struct ModelAutotuneSpec {
    /// The vLLM ModelDeployment to tune, in the same namespace.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub deployment_ref: String,
    /// Values to try, per parameter; parameters left out use the built-in values.
    #[serde(default)]
    pub search_space: SearchSpace,
    /// Refuse candidates that raise aggregate throughput while a workload class regresses.
    #[serde(default)]
    pub quality_guard: QualityGuard,
    /// How each candidate is benchmarked.
    #[serde(default)]
    pub benchmark: AutotuneBenchmark,
    /// Seconds to wait for a candidate's rollout before it counts as failed.
    #[serde(default = "default_rollout_timeout")]
    #[schemars(range(min = 30, max = 3600))]
    pub rollout_timeout_seconds: i32,
}

fn default_rollout_timeout() -> i32 {
    300
}

/// The vLLM settings searched, in search order; each list holds the values tried.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SearchSpace {
    /// `maxNumSeqs` values.
    #[serde(default = "default_max_num_seqs")]
    #[schemars(length(max = 16), inner(range(min = 1, max = 4096)))]
    pub max_num_seqs: Vec<i32>,
    /// `gpuMemoryUtilization` values; above 0.98 is refused as a safety cap.
    #[serde(default = "default_gpu_memory_utilization")]
    #[schemars(length(max = 16), inner(regex(pattern = r"^0(\.[0-9]+)?$")))]
    #[x_kube(validation = Rule::new("self.all(v, double(v) <= 0.98)").message("gpuMemoryUtilization above 0.98 is refused (safety cap)"))]
    pub gpu_memory_utilization: Vec<String>,
    /// `maxModelLen` values.
    #[serde(default = "default_max_model_len")]
    #[schemars(length(max = 16), inner(range(min = 128, max = 1048576)))]
    pub max_model_len: Vec<i32>,
    /// `enforceEager` values.
    #[serde(default = "default_both")]
    #[schemars(length(max = 2))]
    pub enforce_eager: Vec<bool>,
    /// `enablePrefixCaching` values.
    #[serde(default = "default_both")]
    #[schemars(length(max = 2))]
    pub enable_prefix_caching: Vec<bool>,
    /// `maxNumBatchedTokens` values.
    #[serde(default = "default_max_num_batched_tokens")]
    #[schemars(length(max = 16), inner(range(min = 1, max = 1048576)))]
    pub max_num_batched_tokens: Vec<i32>,
    /// Whether n-gram speculative decoding is tried (off and on); dropped when the quality
    /// guard is off, since throughput alone cannot judge it.
    #[serde(default = "default_true")]
    pub speculative_decoding: bool,
}

impl Default for SearchSpace {
    fn default() -> Self {
        Self {
            max_num_seqs: default_max_num_seqs(),
            gpu_memory_utilization: default_gpu_memory_utilization(),
            max_model_len: default_max_model_len(),
            enforce_eager: default_both(),
            enable_prefix_caching: default_both(),
            max_num_batched_tokens: default_max_num_batched_tokens(),
            speculative_decoding: true,
        }
    }
}

fn default_max_num_seqs() -> Vec<i32> {
    vec![1, 2, 4, 8, 16, 32]
}
fn default_gpu_memory_utilization() -> Vec<String> {
    ["0.80", "0.85", "0.90", "0.95"].map(String::from).to_vec()
}
fn default_max_model_len() -> Vec<i32> {
    vec![2048, 4096, 8192, 16384]
}
fn default_both() -> Vec<bool> {
    vec![true, false]
}
fn default_max_num_batched_tokens() -> Vec<i32> {
    vec![512, 1024, 2048, 4096]
}
fn default_true() -> bool {
    true
}

/// The quality guard of an autotune.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QualityGuard {
    /// Turn the guard on.
    #[serde(default)]
    pub enabled: bool,
    /// Percent regression per workload class tolerated before a veto.
    #[serde(default = "default_tolerance")]
    #[schemars(range(min = 0, max = 100))]
    pub tolerance_percent: i32,
    /// Repeats per workload class; the median is used.
    #[serde(default = "default_repeats")]
    #[schemars(range(min = 1, max = 10))]
    pub repeats: i32,
}

impl Default for QualityGuard {
    fn default() -> Self {
        Self { enabled: false, tolerance_percent: default_tolerance(), repeats: default_repeats() }
    }
}

fn default_tolerance() -> i32 {
    10
}
fn default_repeats() -> i32 {
    2
}

/// How each autotune candidate is benchmarked.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutotuneBenchmark {
    /// Seconds measured per candidate, at least.
    #[serde(default = "default_duration")]
    #[schemars(range(min = 1, max = 3600))]
    pub duration_seconds: i32,
    /// Measured requests per candidate, at least.
    #[serde(default = "default_iterations")]
    #[schemars(range(min = 1, max = 1000))]
    pub iterations: i32,
    /// Requests sent before measuring.
    #[serde(default = "default_warmup")]
    #[schemars(range(min = 0, max = 100))]
    pub warmup: i32,
}

impl Default for AutotuneBenchmark {
    fn default() -> Self {
        Self {
            duration_seconds: default_duration(),
            iterations: default_iterations(),
            warmup: default_warmup(),
        }
    }
}

fn default_duration() -> i32 {
    30
}
fn default_iterations() -> i32 {
    5
}
fn default_warmup() -> i32 {
    2
}

/// Observed state of an autotune search.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelAutotuneStatus {
    /// Pending, Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<AutotunePhase>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Experiments done out of all planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<AutotuneProgress>,
    /// Throughput of the starting configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_tokens_per_second: Option<f64>,
    /// Throughput of the best configuration so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_tokens_per_second: Option<f64>,
    /// The best configuration so far, parameter to value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub best_config: BTreeMap<String, String>,
    /// The deployment's settings before the search, parameter to value (an unset parameter is
    /// absent); restored when the autotune is deleted before it ends.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_config: BTreeMap<String, String>,
    /// Decode tokens per second of each workload class with the baseline settings (quality
    /// guard only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_quality: BTreeMap<String, f64>,
    /// The experiment under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<AutotuneExperiment>,
    /// Every experiment, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<AutotuneStep>,
    /// When the search started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the search ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
}

/// Lifecycle phase of a ModelAutotune.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum AutotunePhase {
    /// Not started.
    Pending,
    /// Searching.
    Running,
    /// Finished; the best configuration is applied.
    Succeeded,
    /// Stopped; the baseline configuration is restored.
    Failed,
}

/// Experiments done out of all planned.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutotuneProgress {
    /// Experiments finished.
    pub completed: i32,
    /// Experiments planned.
    pub total: i32,
}

/// The experiment under way: its candidate and how far it got.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutotuneExperiment {
    /// 0 for the baseline, then 1, 2, …
    pub step: i32,
    /// The parameter changed (none for the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// Its candidate value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Rolling out the candidate, or benchmarking it.
    pub stage: AutotuneStage,
    /// When the stage began.
    pub since: Time,
}

/// How far an experiment got.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum AutotuneStage {
    /// The candidate is applied; waiting for the deployment to roll it out.
    RollingOut,
    /// The benchmark Job of the step is running.
    Benchmarking,
    /// The best settings are applied again; waiting for the rollout to finish the search.
    Finishing,
}

/// One experiment of an autotune search.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutotuneStep {
    /// 0 for the baseline, then 1, 2, …
    pub step: i32,
    /// What became of the candidate.
    pub action: AutotuneAction,
    /// Measured throughput, when a benchmark ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
    /// Change against the best throughput before this step, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub improvement_percent: Option<f64>,
    /// The change tried, as `key=value`, or `(no change)`.
    pub config_delta: String,
    /// Why the guard vetoed the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_note: Option<String>,
    /// What failed, for `rollout_failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the experiment ended.
    pub time: Time,
}

/// The outcome of one autotune experiment.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AutotuneAction {
    /// The starting configuration.
    Baseline,
    /// Faster, kept.
    Accepted,
    /// Not faster, rolled back.
    Rejected,
    /// Faster, but a workload class regressed beyond tolerance; rolled back.
    QualityVetoed,
    /// The candidate did not roll out or could not be measured; rolled back.
    RolloutFailed,
    /// Not tried (e.g. above the safety cap).
    Skipped,
}
