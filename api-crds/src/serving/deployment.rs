//! ModelDeployment: one model served by one backend, with its cache, GPU and gateway settings.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// Desired state of a model server.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "serving.keelson.dev",
    version = "v1alpha1",
    kind = "ModelDeployment",
    doc = "A model served by one backend (vLLM, MLC LLM, TEI or diffusers), with its cache, GPU and gateway settings.",
    namespaced,
    status = "ModelDeploymentStatus",
    shortname = "md",
    category = "keelson",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Backend", type_ = "string", json_path = ".spec.backend"),
    printcolumn(name = "Model", type_ = "string", json_path = ".spec.model"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "TPS", type_ = "number", json_path = ".status.tokensPerSecond"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("!has(self.vllm) || self.backend == 'vllm'").message("vllm settings need backend vllm").field_path(".vllm"))]
#[x_kube(validation = Rule::new("!has(self.mlcllm) || self.backend == 'mlc-llm'").message("mlcllm settings need backend mlc-llm").field_path(".mlcllm"))]
#[x_kube(validation = Rule::new("!has(self.minReplicas) || self.minReplicas <= self.replicas || self.replicas == 0").message("minReplicas must not exceed replicas").field_path(".minReplicas"))]
#[serde(rename_all = "camelCase")]
pub struct ModelDeploymentSpec {
    /// Serving backend.
    pub backend: Backend,
    /// Model path inside the cache mount, or the model id to fetch.
    #[schemars(length(min = 1))]
    pub model: String,
    /// Name of a ModelCache in the same namespace that holds the weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub model_cache_ref: Option<String>,
    /// Number of serving replicas; `0` stops serving (scale to zero).
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0, max = 64))]
    pub replicas: i32,
    /// Replicas kept even when idle; idle scale-down only happens at `0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 64))]
    pub min_replicas: Option<i32>,
    /// Seconds without requests before an idle deployment scales to `minReplicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 30, max = 86400))]
    pub idle_timeout_seconds: Option<i32>,
    /// Settings for the `mlc-llm` backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlcllm: Option<MlcLlmConfig>,
    /// Settings for the `vllm` backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm: Option<VllmConfig>,
    /// Compute resources of the serving container; limits include the GPU resource key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Node labels the serving pods must match, commonly the hostname label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Publication of the model to the OpenAI-style gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub litellm: Option<LiteLlmConfig>,
    /// How the throughput benchmark runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<BenchmarkConfig>,
    /// Name of a GPUGroup that time-shares a GPU between its member models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub gpu_group_ref: Option<String>,
    /// Free-form labels published on the Service for routing and discovery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    pub service_labels: Vec<String>,
}

fn default_replicas() -> i32 {
    1
}

/// A serving backend.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum Backend {
    /// vLLM's OpenAI-compatible server.
    #[default]
    #[serde(rename = "vllm")]
    Vllm,
    /// MLC LLM's server.
    #[serde(rename = "mlc-llm")]
    MlcLlm,
    /// Hugging Face text-embeddings-inference.
    #[serde(rename = "tei")]
    Tei,
    /// A diffusers image-generation server.
    #[serde(rename = "diffusers")]
    Diffusers,
}

impl Backend {
    /// The name used in manifests and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Vllm => "vllm",
            Backend::MlcLlm => "mlc-llm",
            Backend::Tei => "tei",
            Backend::Diffusers => "diffusers",
        }
    }
}

/// Settings of the `mlc-llm` backend.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MlcLlmConfig {
    /// `server` for throughput, `local` for a lower memory footprint, `interactive` for one user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<MlcMode>,
    /// Path of the compiled model library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_lib_path: Option<String>,
    /// Just-in-time compilation policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_policy: Option<JitPolicy>,
    /// GPU memory the engine may plan for, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub gpu_memory_bytes: Option<i64>,
    /// Engine overrides passed with `--overrides`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<MlcOverrides>,
}

/// MLC LLM serving mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MlcMode {
    /// Many concurrent sequences.
    Server,
    /// Lower memory footprint.
    Local,
    /// One interactive user.
    Interactive,
}

/// MLC LLM just-in-time compilation policy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum JitPolicy {
    /// Compile when no library is found.
    On,
    /// Never compile.
    Off,
    /// Always recompile.
    Redo,
    /// Use cached libraries only.
    Readonly,
}

/// MLC LLM engine overrides.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MlcOverrides {
    /// Maximum concurrent sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 256))]
    pub max_num_sequence: Option<i32>,
    /// Maximum total sequence length across the batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 256, max = 131072))]
    pub max_total_seq_length: Option<i32>,
    /// Fraction of GPU memory to use, as a decimal in a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_fraction")]
    pub gpu_memory_utilization: Option<String>,
    /// Prefill chunk size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 64, max = 8192))]
    pub prefill_chunk_size: Option<i32>,
    /// Context window size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 256, max = 131072))]
    pub context_window_size: Option<i32>,
}

/// Settings of the `vllm` backend; each maps to the vLLM server flag of the same name.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("!has(self.cpuOffloadGb) || self.cpuOffloadGb == 0 || !has(self.tensorParallelSize) || self.tensorParallelSize == 1").message("cpuOffloadGb cannot be combined with tensorParallelSize above 1").field_path(".cpuOffloadGb"))]
#[serde(rename_all = "camelCase")]
pub struct VllmConfig {
    /// GPUs to shard the model over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 8))]
    pub tensor_parallel_size: Option<i32>,
    /// Weight and activation dtype, e.g. `auto`, `half`, `bfloat16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^(auto|half|float16|bfloat16|float|float32)$"))]
    pub dtype: Option<String>,
    /// Quantization method, e.g. `awq`, `gptq`, `fp8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub quantization: Option<String>,
    /// Maximum model context length in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 128, max = 1048576))]
    pub max_model_len: Option<i32>,
    /// Fraction of GPU memory to use, as a decimal in a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_fraction")]
    pub gpu_memory_utilization: Option<String>,
    /// Disable CUDA graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_eager: Option<bool>,
    /// Maximum sequences per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4096))]
    pub max_num_seqs: Option<i32>,
    /// Maximum batched tokens per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1048576))]
    pub max_num_batched_tokens: Option<i32>,
    /// CPU swap space per GPU, in GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1024))]
    pub swap_space: Option<i32>,
    /// Trust remote code from the model repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_remote_code: Option<bool>,
    /// Reuse KV cache across requests sharing a prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_prefix_caching: Option<bool>,
    /// Split long prefills into chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_chunked_prefill: Option<bool>,
    /// KV cache dtype.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_dtype: Option<KvCacheDtype>,
    /// KV cache block size: 8, 16 or 32.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self in [8, 16, 32]").message("blockSize must be 8, 16 or 32"))]
    pub block_size: Option<i32>,
    /// GiB of weights offloaded to CPU memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1024))]
    pub cpu_offload_gb: Option<i32>,
    /// RoPE scaling; type and factor go together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling: Option<RopeScaling>,
    /// n-gram speculative decoding; absent means off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative_config: Option<SpeculativeConfig>,
}

/// vLLM KV cache dtype.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KvCacheDtype {
    /// Same as the model.
    Auto,
    /// 8-bit float (format chosen by the platform).
    Fp8,
    /// fp8 E5M2.
    #[serde(rename = "fp8_e5m2")]
    Fp8E5m2,
    /// fp8 E4M3.
    #[serde(rename = "fp8_e4m3")]
    Fp8E4m3,
}

/// RoPE scaling settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RopeScaling {
    /// Scaling type, e.g. `linear`, `dynamic`, `yarn`.
    #[serde(rename = "type")]
    #[schemars(regex(pattern = r"^(linear|dynamic|yarn|longrope|llama3)$"))]
    pub type_: String,
    /// Scaling factor as a decimal in a string, e.g. `"2.0"`.
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?$"))]
    pub factor: String,
}

/// n-gram speculative decoding (prompt lookup).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("self.promptLookupMin <= self.promptLookupMax").message("promptLookupMin must not exceed promptLookupMax"))]
#[serde(rename_all = "camelCase")]
pub struct SpeculativeConfig {
    /// Speculation method; only `ngram` is supported.
    pub method: SpeculativeMethod,
    /// Tokens proposed per step.
    #[serde(default = "default_speculative_tokens")]
    #[schemars(range(min = 1, max = 16))]
    pub num_speculative_tokens: i32,
    /// Longest n-gram looked up in the prompt.
    #[serde(default = "default_lookup_max")]
    #[schemars(range(min = 1, max = 32))]
    pub prompt_lookup_max: i32,
    /// Shortest n-gram looked up in the prompt.
    #[serde(default = "default_lookup_min")]
    #[schemars(range(min = 1, max = 32))]
    pub prompt_lookup_min: i32,
}

impl SpeculativeConfig {
    /// The n-gram configuration autotune tries: 7 tokens, lookup between 1 and 6.
    pub fn ngram() -> Self {
        Self {
            method: SpeculativeMethod::Ngram,
            num_speculative_tokens: default_speculative_tokens(),
            prompt_lookup_max: default_lookup_max(),
            prompt_lookup_min: default_lookup_min(),
        }
    }
}

fn default_speculative_tokens() -> i32 {
    7
}
fn default_lookup_max() -> i32 {
    6
}
fn default_lookup_min() -> i32 {
    1
}

/// Speculative decoding method.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpeculativeMethod {
    /// Prompt-lookup n-gram speculation.
    Ngram,
}

/// Publication of the model through the OpenAI-style gateway.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiteLlmConfig {
    /// Publish the model to the gateway.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Name served through the gateway; defaults to the resource name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub served_model_name: Option<String>,
    /// Extra names for the same model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub aliases: Vec<String>,
}

fn default_true() -> bool {
    true
}

/// How the throughput benchmark runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkConfig {
    /// Requests sent before measuring.
    #[serde(default = "default_warmup")]
    #[schemars(range(min = 0, max = 100))]
    pub warmup_iterations: i32,
    /// Measured requests, at least.
    #[serde(default = "default_iterations")]
    #[schemars(range(min = 1, max = 1000))]
    pub iterations: i32,
    /// Tokens requested per completion.
    #[serde(default = "default_batch_size")]
    #[schemars(range(min = 1, max = 65536))]
    pub batch_size: i32,
    /// Measure for at least this long, e.g. `30s`.
    #[serde(default = "default_min_duration")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub min_duration: String,
}

fn default_warmup() -> i32 {
    2
}
fn default_iterations() -> i32 {
    5
}
fn default_batch_size() -> i32 {
    128
}
fn default_min_duration() -> String {
    "30s".to_owned()
}

/// Observed state of a model server.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelDeploymentStatus {
    /// Pending, Running, Idle (scaled to zero) or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ModelDeploymentPhase>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Serving pods that exist (the scale subresource's status).
    #[serde(default)]
    pub replicas: i32,
    /// Serving pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Label selector of the serving pods, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Where the model is reachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Endpoints>,
    /// Throughput measured by the last benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
    /// When the last benchmark finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_benchmark_time: Option<Time>,
    /// The GPU the model runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_gpu: Option<GpuAllocation>,
}

/// Lifecycle phase of a ModelDeployment.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum ModelDeploymentPhase {
    /// Children are being created or pods are not ready yet.
    Pending,
    /// At least one replica serves.
    Running,
    /// Scaled to zero.
    Idle,
    /// The spec cannot be served; see the `Ready` condition.
    Failed,
}

/// Addresses of a served model.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// In-cluster URL of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal: Option<String>,
    /// URL reachable from outside the cluster, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<String>,
}

/// The GPU a model was placed on.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuAllocation {
    /// Node name.
    pub node: String,
    /// Resource key, e.g. `nvidia.com/gpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// GPUs requested per replica.
    #[serde(default)]
    pub count: i32,
    /// Vendor, e.g. `nvidia` or `amd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// GPU memory per device in MiB, when the node reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<i64>,
}
