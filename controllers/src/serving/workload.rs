//! The serving workload of a ModelDeployment: its Deployment (one backend container, the
//! cache volume) and its Service (with the gateway annotations).

use std::collections::BTreeMap;
use std::fmt::Display;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, HostPathVolumeSource,
    PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe, ResourceRequirements,
    SecretKeySelector, Service, ServicePort, ServiceSpec, TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use keelson_api_crds::serving::{
    Backend, JitPolicy, KvCacheDtype, MlcMode, ModelCache, ModelDeployment, RopeScaling,
    SpeculativeConfig, SpeculativeMethod, StorageStrategy,
};
use serde::Serialize;

use crate::serving::cache as model_cache;
use crate::serving::settings::{Settings, labels, owner_reference};

/// Kind of the parent, in owner references.
pub const KIND: &str = "ModelDeployment";
/// `app.kubernetes.io/name` of the serving Deployment, its pods and its Service.
pub const COMPONENT: &str = "model-server";
/// Label naming the ModelDeployment on the serving pods and the Service.
pub const DEPLOYMENT_LABEL: &str = "serving.keelson.dev/model-deployment";
/// Pod annotation holding `spec.model`.
pub const MODEL_ANNOTATION: &str = "serving.keelson.dev/model";
/// Pod annotation holding the backend name.
pub const BACKEND_ANNOTATION: &str = "serving.keelson.dev/backend";
/// Name of the backend container.
pub const CONTAINER_NAME: &str = "llm-backend";
/// Name of the serving port on the container and the Service's target port.
pub const PORT_NAME: &str = "http";
/// Name of the cache volume.
pub const CACHE_VOLUME: &str = "model-cache";
/// Where the cache is mounted in the backend container.
pub const MODELS_DIR: &str = "/models";
/// Command of the `mlc-llm` backend container.
pub const MLC_LLM_COMMAND: [&str; 3] = ["python", "-m", "mlc_llm"];

/// Optional secret and key with a Hugging Face token for gated models.
const HF_TOKEN_SECRET: &str = "hf-token";
const HF_TOKEN_KEY: &str = "HF_TOKEN";
/// GPU memory MLC LLM plans for when `gpuMemoryBytes` is not set (about 21.5 GiB).
const DEFAULT_MLC_GPU_SIZE_BYTES: i64 = 23_068_672_000;
const DEFAULT_PREFILL_CHUNK_SIZE: i32 = 512;
const DEFAULT_MAX_TOTAL_SEQ_LENGTH: i32 = 16384;
/// Seconds before the first liveness check: loading a large model takes minutes.
const LIVENESS_INITIAL_DELAY: i32 = 600;

/// The serving Deployment of `md`. `cache` is the ModelCache named by `spec.modelCacheRef`,
/// as read by the reconciler: its model directory is mounted at [`MODELS_DIR`] and the
/// backend loads the model from there. Without it no volume is mounted and the backend
/// fetches `spec.model` itself.
pub fn deployment(
    md: &ModelDeployment,
    cache: Option<&ModelCache>,
    settings: &Settings,
) -> Deployment {
    let gpu = gpu_requested(md);
    let mut object_labels = labels(COMPONENT, name(md));
    object_labels.extend(selector_labels(md));
    let annotations = BTreeMap::from([
        (MODEL_ANNOTATION.to_owned(), md.spec.model.clone()),
        (BACKEND_ANNOTATION.to_owned(), md.spec.backend.as_str().to_owned()),
    ]);
    let mount = cache.map(|c| cache_mount(c, md.spec.backend));
    let container = Container {
        name: CONTAINER_NAME.to_owned(),
        image: Some(settings.image(md.spec.backend, gpu).to_owned()),
        command: (md.spec.backend == Backend::MlcLlm)
            .then(|| MLC_LLM_COMMAND.map(str::to_owned).to_vec()),
        args: backend_args(md, cache.is_some()),
        env: Some(env(md, cache.is_some())),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.to_owned()),
            container_port: port(md.spec.backend),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(readiness_probe(md.spec.backend)),
        liveness_probe: Some(liveness_probe()),
        resources: container_resources(md),
        volume_mounts: mount.as_ref().map(|(_, m)| vec![m.clone()]),
        ..Container::default()
    };
    // No schedulerName and no runtimeClassName: the default scheduler places GPU pods by
    // their resource requests, and the embedded local node knows neither a custom scheduler
    // nor a runtime class, so either would leave the pods unscheduled or failing there.
    let pod = PodSpec {
        containers: vec![container],
        node_selector: (!md.spec.node_selector.is_empty()).then(|| md.spec.node_selector.clone()),
        volumes: mount.map(|(v, _)| vec![v]),
        ..PodSpec::default()
    };
    Deployment {
        metadata: child_meta(md, object_labels.clone(), None),
        spec: Some(DeploymentSpec {
            replicas: Some(md.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(selector_labels(md)),
                ..LabelSelector::default()
            },
            strategy: gpu.then(one_at_a_time),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(object_labels),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// The Service of `md`: the backend port, targeting the pods' `http` port, with the gateway
/// annotations unless publication is disabled.
pub fn service(md: &ModelDeployment, settings: &Settings) -> Service {
    let mut object_labels = labels(COMPONENT, name(md));
    object_labels.extend(selector_labels(md));
    let annotations = gateway_annotations(md, &settings.gateway_annotation_prefix);
    Service {
        metadata: child_meta(md, object_labels, (!annotations.is_empty()).then_some(annotations)),
        spec: Some(ServiceSpec {
            selector: Some(selector_labels(md)),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_owned()),
                port: port(md.spec.backend),
                target_port: Some(IntOrString::String(PORT_NAME.to_owned())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The labels selecting the serving pods (also shown by the scale subresource's selector).
pub fn selector_labels(md: &ModelDeployment) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), name(md).to_owned()),
        (DEPLOYMENT_LABEL.to_owned(), name(md).to_owned()),
    ])
}

/// [`selector_labels`] as a label selector string, for `status.selector`.
pub fn label_selector(md: &ModelDeployment) -> String {
    selector_labels(md).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The port a backend listens on: 80 for `tei`, 8000 for the others.
pub fn port(backend: Backend) -> i32 {
    match backend {
        Backend::Tei => 80,
        Backend::Vllm | Backend::MlcLlm | Backend::Diffusers => 8000,
    }
}

/// The name the model is published under: `spec.litellm.servedModelName`, else the
/// resource name.
pub fn served_model_name(md: &ModelDeployment) -> &str {
    md.spec.litellm.as_ref().and_then(|l| l.served_model_name.as_deref()).unwrap_or(name(md))
}

/// The annotations the gateway discovers the model by, under `prefix`: `served-model`,
/// `aliases` and `service-labels` (the last two only when non-empty). Publication is on
/// unless `spec.litellm.enabled` is false, also when `spec.litellm` is absent; when it is
/// off the map is empty.
pub fn gateway_annotations(md: &ModelDeployment, prefix: &str) -> BTreeMap<String, String> {
    let litellm = md.spec.litellm.as_ref();
    if !litellm.is_none_or(|l| l.enabled) {
        return BTreeMap::new();
    }
    let mut annotations =
        BTreeMap::from([(format!("{prefix}/served-model"), served_model_name(md).to_owned())]);
    let aliases = litellm.map(|l| l.aliases.as_slice()).unwrap_or_default();
    for (key, values) in
        [("aliases", aliases), ("service-labels", md.spec.service_labels.as_slice())]
    {
        if !values.is_empty() {
            annotations.insert(format!("{prefix}/{key}"), values.join(","));
        }
    }
    annotations
}

/// Whether `spec.resources` asks for a GPU: a non-zero `*/gpu` resource (such as
/// `nvidia.com/gpu` or `amd.com/gpu`) in its limits or requests.
pub fn gpu_requested(md: &ModelDeployment) -> bool {
    let Some(resources) = &md.spec.resources else { return false };
    [&resources.limits, &resources.requests]
        .into_iter()
        .flatten()
        .flatten()
        .any(|(key, q)| is_gpu_key(key) && q.0.trim().parse::<f64>().map_or(true, |n| n > 0.0))
}

/// The vLLM server arguments: the model (when `cached`, [`MODELS_DIR`] served under the name
/// `spec.model`) and host, then the `spec.vllm` flags in a fixed order, the speculative
/// configuration last.
pub fn vllm_args(md: &ModelDeployment, cached: bool) -> Vec<String> {
    let mut args = strings(&["--model", &backend_model(md, cached)]);
    value(&mut args, "--served-model-name", cached.then_some(&md.spec.model));
    args.extend(strings(&["--host", "0.0.0.0"]));
    let Some(v) = &md.spec.vllm else { return args };
    let quantization = v.quantization.as_deref().filter(|q| !q.eq_ignore_ascii_case("none"));
    value(&mut args, "--tensor-parallel-size", v.tensor_parallel_size.filter(|n| *n > 1));
    value(&mut args, "--dtype", v.dtype.as_ref());
    value(&mut args, "--quantization", quantization);
    value(&mut args, "--max-model-len", v.max_model_len);
    value(&mut args, "--gpu-memory-utilization", v.gpu_memory_utilization.as_ref());
    switch(&mut args, "enforce-eager", v.enforce_eager.filter(|on| *on));
    value(&mut args, "--max-num-seqs", v.max_num_seqs);
    value(&mut args, "--max-num-batched-tokens", v.max_num_batched_tokens);
    value(&mut args, "--swap-space", v.swap_space);
    switch(&mut args, "trust-remote-code", v.trust_remote_code.filter(|on| *on));
    // Prefix caching and chunked prefill are on by default in recent vLLM, so `false`
    // turns them off explicitly.
    switch(&mut args, "enable-prefix-caching", v.enable_prefix_caching);
    value(&mut args, "--kv-cache-dtype", v.kv_cache_dtype.map(kv_cache_dtype));
    value(&mut args, "--cpu-offload-gb", v.cpu_offload_gb);
    switch(&mut args, "enable-chunked-prefill", v.enable_chunked_prefill);
    value(&mut args, "--block-size", v.block_size);
    value(&mut args, "--rope-scaling", v.rope_scaling.as_ref().map(rope_scaling_json));
    value(&mut args, "--speculative-config", v.speculative_config.as_ref().map(speculative_json));
    args
}

/// The `--speculative-config` value: compact JSON with keys `method`,
/// `num_speculative_tokens`, `prompt_lookup_max`, `prompt_lookup_min`, in that order.
pub fn speculative_json(config: &SpeculativeConfig) -> String {
    /// The JSON shape, in vLLM's key order.
    #[derive(Serialize)]
    struct Json<'a> {
        method: &'a SpeculativeMethod,
        num_speculative_tokens: i32,
        prompt_lookup_max: i32,
        prompt_lookup_min: i32,
    }
    to_json(&Json {
        method: &config.method,
        num_speculative_tokens: config.num_speculative_tokens,
        prompt_lookup_max: config.prompt_lookup_max,
        prompt_lookup_min: config.prompt_lookup_min,
    })
}

/// The MLC LLM arguments after [`MLC_LLM_COMMAND`]: `serve`, the model ([`MODELS_DIR`] when
/// `cached`), host, mode (default `local`), the model library when set, and the engine
/// overrides.
pub fn mlc_llm_args(md: &ModelDeployment, cached: bool) -> Vec<String> {
    let config = md.spec.mlcllm.as_ref();
    let mode = match config.and_then(|c| c.mode).unwrap_or(MlcMode::Local) {
        MlcMode::Server => "server",
        MlcMode::Local => "local",
        MlcMode::Interactive => "interactive",
    };
    let mut args =
        strings(&["serve", &backend_model(md, cached), "--host", "0.0.0.0", "--mode", mode]);
    value(&mut args, "--model-lib", config.and_then(|c| c.model_lib_path.as_ref()));
    value(&mut args, "--overrides", Some(mlc_overrides(md)));
    args
}

/// The MLC LLM `--overrides` value: `context_window_size`, `max_num_sequence`,
/// `gpu_memory_utilization` when set, then `prefill_chunk_size` (default 512) and
/// `max_total_seq_length` (default 16384), joined with `;`.
pub fn mlc_overrides(md: &ModelDeployment) -> String {
    let o = md.spec.mlcllm.as_ref().and_then(|c| c.overrides.clone()).unwrap_or_default();
    let optional = [
        ("context_window_size", o.context_window_size.map(|n| n.to_string())),
        ("max_num_sequence", o.max_num_sequence.map(|n| n.to_string())),
        ("gpu_memory_utilization", o.gpu_memory_utilization),
    ];
    let always = [
        ("prefill_chunk_size", o.prefill_chunk_size.unwrap_or(DEFAULT_PREFILL_CHUNK_SIZE)),
        ("max_total_seq_length", o.max_total_seq_length.unwrap_or(DEFAULT_MAX_TOTAL_SEQ_LENGTH)),
    ];
    optional
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .chain(always.into_iter().map(|(k, v)| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(";")
}

/// The resource name of `md`.
fn name(md: &ModelDeployment) -> &str {
    md.metadata.name.as_deref().unwrap_or_default()
}

/// Metadata of a child named like `md`, in its namespace, owned by it.
fn child_meta(
    md: &ModelDeployment,
    labels: BTreeMap<String, String>,
    annotations: Option<BTreeMap<String, String>>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name(md).to_owned()),
        namespace: md.metadata.namespace.clone(),
        labels: Some(labels),
        annotations,
        owner_references: Some(vec![owner_reference(KIND, &md.metadata)]),
        ..ObjectMeta::default()
    }
}

/// Container arguments of the backend; `tei` and `diffusers` take none.
fn backend_args(md: &ModelDeployment, cached: bool) -> Option<Vec<String>> {
    match md.spec.backend {
        Backend::Vllm => Some(vllm_args(md, cached)),
        Backend::MlcLlm => Some(mlc_llm_args(md, cached)),
        Backend::Tei | Backend::Diffusers => None,
    }
}

/// The model as the backend loads it: the cache mount when `cached` (it holds the model's
/// files), else `spec.model`.
fn backend_model(md: &ModelDeployment, cached: bool) -> String {
    if cached { MODELS_DIR.to_owned() } else { md.spec.model.clone() }
}

/// Environment of the backend container; every backend gets the optional Hugging Face token.
fn env(md: &ModelDeployment, cached: bool) -> Vec<EnvVar> {
    let model = &md.spec.model;
    let mut vars = match md.spec.backend {
        Backend::Vllm if cached => {
            vec![plain("HF_HOME", MODELS_DIR), plain("TRANSFORMERS_CACHE", MODELS_DIR)]
        }
        Backend::Vllm => Vec::new(),
        Backend::MlcLlm => mlc_env(md),
        Backend::Tei => vec![plain("MODEL_ID", &backend_model(md, cached))],
        Backend::Diffusers => {
            let mut vars =
                vec![plain("MODEL_ID", model), plain("MODEL", model), plain("PORT", "8000")];
            if cached {
                vars.push(plain("LOCAL_MODEL_PATH", MODELS_DIR));
            }
            vars
        }
    };
    vars.push(hf_token());
    vars
}

/// `MLC_GPU_SIZE_BYTES` (from `gpuMemoryBytes`, else the default) and `MLC_JIT_POLICY` when set.
fn mlc_env(md: &ModelDeployment) -> Vec<EnvVar> {
    let config = md.spec.mlcllm.as_ref();
    let bytes = config.and_then(|c| c.gpu_memory_bytes).unwrap_or(DEFAULT_MLC_GPU_SIZE_BYTES);
    let mut vars = vec![plain("MLC_GPU_SIZE_BYTES", &bytes.to_string())];
    if let Some(policy) = config.and_then(|c| c.jit_policy) {
        let policy = match policy {
            JitPolicy::On => "ON",
            JitPolicy::Off => "OFF",
            JitPolicy::Redo => "REDO",
            JitPolicy::Readonly => "READONLY",
        };
        vars.push(plain("MLC_JIT_POLICY", policy));
    }
    vars
}

/// An environment variable with a literal value.
fn plain(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.to_owned()), value_from: None }
}

/// `HF_TOKEN` from the optional secret `hf-token`.
fn hf_token() -> EnvVar {
    EnvVar {
        name: HF_TOKEN_KEY.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: HF_TOKEN_SECRET.to_owned(),
                key: HF_TOKEN_KEY.to_owned(),
                optional: Some(true),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// Readiness: HTTP GET of the backend's model list (`vllm`, `mlc-llm`) or health endpoint
/// (`tei`, `diffusers`); patient enough for a model load (5 minutes, 15 for image models).
fn readiness_probe(backend: Backend) -> Probe {
    let (path, delay, period, failures) = match backend {
        Backend::Vllm | Backend::MlcLlm => ("/v1/models", 5, 5, 60),
        Backend::Tei => ("/health", 5, 5, 60),
        Backend::Diffusers => ("/health", 10, 10, 90),
    };
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String(PORT_NAME.to_owned()),
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(delay),
        period_seconds: Some(period),
        timeout_seconds: Some(5),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

/// Liveness: a TCP connect to the serving port, first after 10 minutes (model loading),
/// then every 30 s, restarting after 5 failures. TCP rather than HTTP so a server busy
/// generating (slow to answer) is not restarted; it catches a dead or hung listener.
fn liveness_probe() -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String(PORT_NAME.to_owned()),
            ..TCPSocketAction::default()
        }),
        initial_delay_seconds: Some(LIVENESS_INITIAL_DELAY),
        period_seconds: Some(30),
        timeout_seconds: Some(5),
        failure_threshold: Some(5),
        ..Probe::default()
    }
}

/// `spec.resources`, with each GPU limit also requested when only its limit is given.
fn container_resources(md: &ModelDeployment) -> Option<ResourceRequirements> {
    let mut resources = md.spec.resources.clone()?;
    let gpu_limits: Vec<_> = resources
        .limits
        .iter()
        .flatten()
        .filter(|(key, _)| is_gpu_key(key))
        .map(|(k, q)| (k.clone(), q.clone()))
        .collect();
    if !gpu_limits.is_empty() {
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        for (key, quantity) in gpu_limits {
            requests.entry(key).or_insert(quantity);
        }
    }
    Some(resources)
}

/// Whether a resource name is a GPU (`nvidia.com/gpu`, `amd.com/gpu`, …).
fn is_gpu_key(key: &str) -> bool {
    key.ends_with("/gpu")
}

/// Replace pods one at a time, never surging: a GPU cannot hold two replicas.
fn one_at_a_time() -> DeploymentStrategy {
    DeploymentStrategy {
        type_: Some("RollingUpdate".to_owned()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(IntOrString::Int(0)),
            max_unavailable: Some(IntOrString::Int(1)),
        }),
    }
}

/// The cache volume and its mount at [`MODELS_DIR`]: the directory holding the model's files
/// (where the cache controller puts them). Read-only except for `vllm`, which may write its
/// Hugging Face cache there.
fn cache_mount(cache: &ModelCache, backend: Backend) -> (Volume, VolumeMount) {
    let mut volume = Volume { name: CACHE_VOLUME.to_owned(), ..Volume::default() };
    let mut sub_path = None;
    match cache.spec.storage_strategy {
        StorageStrategy::SharedPVC => {
            volume.persistent_volume_claim = Some(PersistentVolumeClaimVolumeSource {
                claim_name: model_cache::claim_name(cache).unwrap_or_default(),
                read_only: None,
            });
            sub_path = claim_model_dir(cache);
        }
        // tmpfs, filled by the syncer on this node.
        StorageStrategy::Memory => volume.host_path = host_path(cache, "DirectoryOrCreate"),
        // The syncer creates the directory; until then the pod waits for it rather than
        // starting on an empty one.
        StorageStrategy::NodeLocal => volume.host_path = host_path(cache, "Directory"),
    }
    let mount = VolumeMount {
        name: CACHE_VOLUME.to_owned(),
        mount_path: MODELS_DIR.to_owned(),
        sub_path,
        read_only: (backend != Backend::Vllm).then_some(true),
        ..VolumeMount::default()
    };
    (volume, mount)
}

/// The model's directory on a SharedPVC cache's claim: `modelPath`, else (when the cache
/// downloads its `source`) the cache name the download Job writes to, else the claim's root.
fn claim_model_dir(cache: &ModelCache) -> Option<String> {
    (cache.spec.model_path.is_some() || cache.spec.source.is_some())
        .then(|| model_cache::model_path(cache).to_owned())
}

/// The node directory of a Memory or NodeLocal cache, as a host path volume of `type_`.
fn host_path(cache: &ModelCache, type_: &str) -> Option<HostPathVolumeSource> {
    model_cache::host_path(cache)
        .map(|path| HostPathVolumeSource { path, type_: Some(type_.to_owned()) })
}

/// vLLM's name of a KV cache dtype.
fn kv_cache_dtype(dtype: KvCacheDtype) -> &'static str {
    match dtype {
        KvCacheDtype::Auto => "auto",
        KvCacheDtype::Fp8 => "fp8",
        KvCacheDtype::Fp8E5m2 => "fp8_e5m2",
        KvCacheDtype::Fp8E4m3 => "fp8_e4m3",
    }
}

/// The `--rope-scaling` value: `{"rope_type":…,"factor":…}`, the factor as a JSON number.
fn rope_scaling_json(rope: &RopeScaling) -> String {
    /// The JSON shape vLLM reads.
    #[derive(Serialize)]
    struct Json<'a> {
        rope_type: &'a str,
        factor: serde_json::Value,
    }
    let factor =
        rope.factor.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or_else(
            || serde_json::Value::String(rope.factor.clone()),
            serde_json::Value::Number,
        );
    to_json(&Json { rope_type: &rope.type_, factor })
}

/// Compact JSON of a value whose serialization cannot fail (plain structs of strings and
/// numbers).
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Owned copies of string slices.
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Appends `flag value` when the value is set.
fn value(args: &mut Vec<String>, flag: &str, value: Option<impl Display>) {
    if let Some(value) = value {
        args.extend([flag.to_owned(), value.to_string()]);
    }
}

/// Appends `--name` for `true` and `--no-name` for `false`; nothing when unset.
fn switch(args: &mut Vec<String>, name: &str, on: Option<bool>) {
    if let Some(on) = on {
        args.push(if on { format!("--{name}") } else { format!("--no-{name}") });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn md(yaml: &str) -> ModelDeployment {
        serde_saphyr::from_str(yaml).expect("fixture parses")
    }

    fn cache(yaml: &str) -> ModelCache {
        serde_saphyr::from_str(yaml).expect("fixture parses")
    }

    fn pod(d: &Deployment) -> &PodSpec {
        d.spec.as_ref().and_then(|s| s.template.spec.as_ref()).expect("pod spec")
    }

    fn container(d: &Deployment) -> &Container {
        &pod(d).containers[0]
    }

    fn env_value<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
        c.env.iter().flatten().find(|e| e.name == name).and_then(|e| e.value.as_deref())
    }

    fn joined(v: &Option<Vec<String>>) -> Option<String> {
        v.as_ref().map(|v| v.join(" "))
    }

    fn readiness_path(c: &Container) -> Option<&str> {
        c.readiness_probe.as_ref()?.http_get.as_ref()?.path.as_deref()
    }

    const MLC_LOCAL: &str = "
apiVersion: serving.keelson.dev/v1alpha1
kind: ModelDeployment
metadata: {name: qwen3-14b, namespace: models, uid: u-1}
spec:
  backend: mlc-llm
  model: Qwen3-14B-q4f16_1-MLC
";

    const VLLM_FULL: &str = "
apiVersion: serving.keelson.dev/v1alpha1
kind: ModelDeployment
metadata: {name: llama, namespace: models, uid: u-2}
spec:
  backend: vllm
  model: meta-llama/Llama-3.1-8B-Instruct
  vllm:
    tensorParallelSize: 2
    dtype: bfloat16
    quantization: awq
    maxModelLen: 8192
    gpuMemoryUtilization: '0.90'
    enforceEager: true
    maxNumSeqs: 16
    maxNumBatchedTokens: 2048
    swapSpace: 4
    trustRemoteCode: true
    enablePrefixCaching: true
    kvCacheDtype: fp8_e4m3
    cpuOffloadGb: 0
    enableChunkedPrefill: false
    blockSize: 16
    ropeScaling: {type: yarn, factor: '4.0'}
    speculativeConfig: {method: ngram}
";

    const WEIGHTS: &str = "metadata: {name: weights}\nspec: {source: org/m}\n";

    #[test]
    fn mlc_local_mode_matches_the_reference() {
        let d = deployment(&md(MLC_LOCAL), None, &Settings::default());
        let c = container(&d);
        assert_eq!(joined(&c.command).as_deref(), Some("python -m mlc_llm"));
        assert_eq!(
            joined(&c.args).as_deref(),
            Some(
                "serve Qwen3-14B-q4f16_1-MLC --host 0.0.0.0 --mode local --overrides prefill_chunk_size=512;max_total_seq_length=16384"
            )
        );
        assert_eq!(c.image.as_deref(), Some("ghcr.io/mlc-ai/mlc-llm:cuda"));
        assert_eq!(c.ports.as_ref().expect("ports")[0].container_port, 8000);
        assert_eq!(readiness_path(c), Some("/v1/models"));
        assert_eq!(env_value(c, "MLC_GPU_SIZE_BYTES"), Some("23068672000"));
        assert_eq!(env_value(c, "MLC_JIT_POLICY"), None);
    }

    #[test]
    fn mlc_server_mode_matches_the_reference() {
        let md = md(&format!(
            "{MLC_LOCAL}  mlcllm:
    mode: server
    modelLibPath: /opt/lib/qwen.so
    jitPolicy: 'OFF'
    gpuMemoryBytes: 12000000000
    overrides: {{maxNumSequence: 2, gpuMemoryUtilization: '0.85', prefillChunkSize: 2048, maxTotalSeqLength: 131072}}
"
        ));
        assert_eq!(
            mlc_overrides(&md),
            "max_num_sequence=2;gpu_memory_utilization=0.85;prefill_chunk_size=2048;max_total_seq_length=131072"
        );
        assert_eq!(
            mlc_llm_args(&md, true).join(" "),
            format!(
                "serve /models --host 0.0.0.0 --mode server --model-lib /opt/lib/qwen.so --overrides {}",
                mlc_overrides(&md)
            )
        );
        let d = deployment(&md, None, &Settings::default());
        assert_eq!(env_value(container(&d), "MLC_GPU_SIZE_BYTES"), Some("12000000000"));
        assert_eq!(env_value(container(&d), "MLC_JIT_POLICY"), Some("OFF"));
    }

    #[test]
    fn mlc_context_window_comes_first() {
        let md = md(&format!("{MLC_LOCAL}  mlcllm: {{overrides: {{contextWindowSize: 4096}}}}\n"));
        assert_eq!(
            mlc_overrides(&md),
            "context_window_size=4096;prefill_chunk_size=512;max_total_seq_length=16384"
        );
    }

    #[test]
    fn vllm_flags_in_reference_order() {
        let expected = [
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--host",
            "0.0.0.0",
            "--tensor-parallel-size",
            "2",
            "--dtype",
            "bfloat16",
            "--quantization",
            "awq",
            "--max-model-len",
            "8192",
            "--gpu-memory-utilization",
            "0.90",
            "--enforce-eager",
            "--max-num-seqs",
            "16",
            "--max-num-batched-tokens",
            "2048",
            "--swap-space",
            "4",
            "--trust-remote-code",
            "--enable-prefix-caching",
            "--kv-cache-dtype",
            "fp8_e4m3",
            "--cpu-offload-gb",
            "0",
            "--no-enable-chunked-prefill",
            "--block-size",
            "16",
            "--rope-scaling",
            r#"{"rope_type":"yarn","factor":4.0}"#,
            "--speculative-config",
            r#"{"method":"ngram","num_speculative_tokens":7,"prompt_lookup_max":6,"prompt_lookup_min":1}"#,
        ];
        assert_eq!(vllm_args(&md(VLLM_FULL), false), expected);
    }

    #[test]
    fn vllm_minimal_and_skipped_flags() {
        let base = "
metadata: {name: m}
spec:
  backend: vllm
  model: org/m
";
        let minimal = ["--model", "org/m", "--host", "0.0.0.0"];
        assert_eq!(vllm_args(&md(base), false), minimal);
        let off = md(&format!(
            "{base}  vllm: {{tensorParallelSize: 1, quantization: None, enforceEager: false, trustRemoteCode: false}}\n"
        ));
        assert_eq!(vllm_args(&off, false), minimal);
        let prefix_off = md(&format!("{base}  vllm: {{enablePrefixCaching: false}}\n"));
        assert_eq!(vllm_args(&prefix_off, false)[4..], ["--no-enable-prefix-caching"]);
    }

    #[test]
    fn speculative_config_json() {
        assert_eq!(
            speculative_json(&SpeculativeConfig::ngram()),
            r#"{"method":"ngram","num_speculative_tokens":7,"prompt_lookup_max":6,"prompt_lookup_min":1}"#
        );
    }

    #[test]
    fn vllm_container() {
        let md = md(VLLM_FULL);
        let d = deployment(&md, None, &Settings::default());
        let c = container(&d);
        assert_eq!(c.name, "llm-backend");
        assert_eq!(c.image.as_deref(), Some("vllm/vllm-openai:latest"));
        assert_eq!(c.command, None);
        assert_eq!(c.args, Some(vllm_args(&md, false)));
        let port = &c.ports.as_ref().expect("ports")[0];
        assert_eq!((port.name.as_deref(), port.container_port), (Some("http"), 8000));
        assert_eq!(readiness_path(c), Some("/v1/models"));
        let live = c.liveness_probe.as_ref().expect("liveness");
        assert_eq!(
            live.tcp_socket.as_ref().map(|t| &t.port),
            Some(&IntOrString::String("http".into()))
        );
        assert_eq!(live.initial_delay_seconds, Some(600));
        assert_eq!(env_value(c, "HF_HOME"), None);
        let token = c.env.iter().flatten().find(|e| e.name == "HF_TOKEN").expect("token");
        let secret = token.value_from.as_ref().and_then(|v| v.secret_key_ref.as_ref());
        assert_eq!(
            secret.map(|s| (s.name.as_str(), s.key.as_str())),
            Some(("hf-token", "HF_TOKEN"))
        );
        assert_eq!(secret.and_then(|s| s.optional), Some(true));
        assert_eq!(c.volume_mounts, None);
        assert_eq!(pod(&d).volumes, None);
    }

    #[test]
    fn vllm_with_a_cache_serves_the_mounted_model() {
        let md = md(&format!("{VLLM_FULL}  modelCacheRef: weights\n"));
        let d = deployment(&md, Some(&cache(WEIGHTS)), &Settings::default());
        let c = container(&d);
        assert_eq!(
            c.args.as_ref().map(|a| &a[..6]),
            Some(
                &[
                    "--model",
                    "/models",
                    "--served-model-name",
                    "meta-llama/Llama-3.1-8B-Instruct",
                    "--host",
                    "0.0.0.0"
                ]
                .map(String::from)[..]
            )
        );
        assert_eq!(env_value(c, "HF_HOME"), Some("/models"));
        assert_eq!(env_value(c, "TRANSFORMERS_CACHE"), Some("/models"));
        assert_eq!(c.volume_mounts.as_ref().expect("mounts")[0].read_only, None, "vllm may write");
    }

    #[test]
    fn tei_uses_the_cpu_image_unless_a_gpu_is_requested() {
        let base = "
metadata: {name: embed, namespace: models}
spec:
  backend: tei
  model: BAAI/bge-small-en-v1.5
";
        let d = deployment(&md(base), None, &Settings::default());
        let c = container(&d);
        assert_eq!(
            c.image.as_deref(),
            Some("ghcr.io/huggingface/text-embeddings-inference:cpu-1.8")
        );
        assert_eq!((c.command.as_ref(), c.args.as_ref()), (None, None));
        assert_eq!(c.ports.as_ref().expect("ports")[0].container_port, 80);
        assert_eq!(readiness_path(c), Some("/health"));
        assert_eq!(env_value(c, "MODEL_ID"), Some("BAAI/bge-small-en-v1.5"));
        let s = service(&md(base), &Settings::default());
        assert_eq!(s.spec.as_ref().and_then(|s| s.ports.as_ref()).expect("ports")[0].port, 80);

        let gpu = md(&format!("{base}  resources: {{limits: {{nvidia.com/gpu: '1'}}}}\n"));
        let d = deployment(&gpu, None, &Settings::default());
        assert_eq!(
            container(&d).image.as_deref(),
            Some("ghcr.io/huggingface/text-embeddings-inference:1.8")
        );
        let cached = md(&format!("{base}  modelCacheRef: weights\n"));
        let d = deployment(&cached, Some(&cache(WEIGHTS)), &Settings::default());
        assert_eq!(env_value(container(&d), "MODEL_ID"), Some("/models"));
    }

    #[test]
    fn diffusers_container() {
        let base = "
metadata: {name: sdxl, namespace: models}
spec:
  backend: diffusers
  model: stabilityai/sdxl-turbo
";
        let d = deployment(&md(base), None, &Settings::default());
        let c = container(&d);
        assert_eq!(c.image.as_deref(), Some("huggingface/diffusers-pytorch-cuda:latest"));
        assert_eq!((c.command.as_ref(), c.args.as_ref()), (None, None));
        assert_eq!(c.ports.as_ref().expect("ports")[0].container_port, 8000);
        assert_eq!(readiness_path(c), Some("/health"));
        let probe = c.readiness_probe.as_ref().expect("readiness");
        assert_eq!((probe.period_seconds, probe.failure_threshold), (Some(10), Some(90)));
        assert_eq!(env_value(c, "MODEL_ID"), Some("stabilityai/sdxl-turbo"));
        assert_eq!(env_value(c, "MODEL"), Some("stabilityai/sdxl-turbo"));
        assert_eq!(env_value(c, "PORT"), Some("8000"));
        assert_eq!(env_value(c, "LOCAL_MODEL_PATH"), None);

        let cached = md(&format!("{base}  modelCacheRef: weights\n"));
        let d = deployment(&cached, Some(&cache(WEIGHTS)), &Settings::default());
        let c = container(&d);
        assert_eq!(env_value(c, "LOCAL_MODEL_PATH"), Some("/models"));
        assert_eq!(c.volume_mounts.as_ref().expect("mounts")[0].read_only, Some(true));
    }

    #[test]
    fn cache_volume_per_strategy() {
        let md = md(&format!("{MLC_LOCAL}  modelCacheRef: weights\n"));
        let mount_of = |yaml: &str| {
            let d = deployment(&md, Some(&cache(yaml)), &Settings::default());
            let volumes = pod(&d).volumes.clone().expect("volumes");
            let mounts = container(&d).volume_mounts.clone().expect("mounts");
            assert_eq!((volumes.len(), mounts.len()), (1, 1));
            (volumes[0].clone(), mounts[0].clone())
        };
        let claim = |v: &Volume| v.persistent_volume_claim.as_ref().map(|p| p.claim_name.clone());

        // A downloaded SharedPVC cache: its own claim, the directory the download fills.
        let (v, m) = mount_of(WEIGHTS);
        assert_eq!(v.name, "model-cache");
        assert_eq!(claim(&v).as_deref(), Some("weights"));
        assert_eq!((m.name.as_str(), m.mount_path.as_str()), ("model-cache", "/models"));
        assert_eq!(m.sub_path.as_deref(), Some("weights"));
        assert_eq!(m.read_only, Some(true));

        let (v, m) = mount_of(
            "metadata: {name: weights}\nspec: {existingClaimName: shared, modelPath: llama/8b}\n",
        );
        assert_eq!(claim(&v).as_deref(), Some("shared"));
        assert_eq!(m.sub_path.as_deref(), Some("llama/8b"));

        let (_, m) = mount_of("metadata: {name: weights}\nspec: {existingClaimName: shared}\n");
        assert_eq!(m.sub_path, None, "a prefilled claim holds the model at its root");

        let (v, m) =
            mount_of("metadata: {name: weights}\nspec: {source: org/m, storageStrategy: Memory}\n");
        let hp = v.host_path.expect("host path");
        assert_eq!(
            (hp.path.as_str(), hp.type_.as_deref()),
            ("/dev/shm/keelson/weights", Some("DirectoryOrCreate"))
        );
        assert_eq!((m.sub_path, m.read_only), (None, Some(true)));

        let (v, _) = mount_of(
            "metadata: {name: weights}\nspec: {source: org/m, storageStrategy: NodeLocal}\n",
        );
        let hp = v.host_path.expect("host path");
        assert_eq!(
            (hp.path.as_str(), hp.type_.as_deref()),
            ("/var/lib/keelson/models/weights", Some("Directory"))
        );
    }

    #[test]
    fn labels_selector_and_pod_annotations() {
        let md = md(VLLM_FULL);
        let d = deployment(&md, None, &Settings::default());
        let spec = d.spec.as_ref().expect("spec");
        let selector = BTreeMap::from([
            ("app".to_owned(), "llama".to_owned()),
            ("serving.keelson.dev/model-deployment".to_owned(), "llama".to_owned()),
        ]);
        assert_eq!(spec.selector.match_labels.as_ref(), Some(&selector));
        assert_eq!(selector_labels(&md), selector);
        assert_eq!(label_selector(&md), "app=llama,serving.keelson.dev/model-deployment=llama");
        let template = spec.template.metadata.as_ref().expect("template metadata");
        let pod_labels = template.labels.as_ref().expect("labels");
        assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)));
        assert_eq!(pod_labels["app.kubernetes.io/managed-by"], "keelson");
        assert_eq!(pod_labels["app.kubernetes.io/name"], "model-server");
        assert_eq!(pod_labels["app.kubernetes.io/instance"], "llama");
        let annotations = template.annotations.as_ref().expect("annotations");
        assert_eq!(annotations["serving.keelson.dev/model"], "meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(annotations["serving.keelson.dev/backend"], "vllm");
        assert_eq!(d.metadata.labels.as_ref(), Some(pod_labels));
        let owner = &d.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("ModelDeployment", "u-2"));
        assert_eq!(
            (d.metadata.name.as_deref(), d.metadata.namespace.as_deref()),
            (Some("llama"), Some("models"))
        );

        let s = service(&md, &Settings::default());
        assert_eq!(s.metadata.name.as_deref(), Some("llama"));
        assert_eq!(s.metadata.labels.as_ref(), Some(pod_labels));
        assert_eq!(s.metadata.owner_references, d.metadata.owner_references);
        let spec = s.spec.as_ref().expect("spec");
        assert_eq!(spec.selector.as_ref(), Some(&selector));
        let port = &spec.ports.as_ref().expect("ports")[0];
        assert_eq!((port.name.as_deref(), port.port), (Some("http"), 8000));
        assert_eq!(port.target_port, Some(IntOrString::String("http".into())));
    }

    #[test]
    fn replicas_strategy_resources_and_placement() {
        let base = "
metadata: {name: m}
spec:
  backend: vllm
  model: org/m
  replicas: 0
  nodeSelector: {kubernetes.io/hostname: gpu-1}
";
        let d = deployment(&md(base), None, &Settings::default());
        let spec = d.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(0));
        assert_eq!(spec.strategy, None);
        assert_eq!(container(&d).resources, None);
        let p = pod(&d);
        assert_eq!(
            p.node_selector.as_ref().map(|n| n["kubernetes.io/hostname"].as_str()),
            Some("gpu-1")
        );
        assert_eq!((p.scheduler_name.as_ref(), p.runtime_class_name.as_ref()), (None, None));

        let gpu = md(&format!(
            "{base}  resources: {{limits: {{nvidia.com/gpu: '1', memory: 16Gi}}, requests: {{cpu: '2'}}}}\n"
        ));
        let d = deployment(&gpu, None, &Settings::default());
        let strategy = d.spec.as_ref().and_then(|s| s.strategy.clone()).expect("strategy");
        assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
        let rolling = strategy.rolling_update.expect("rolling update");
        assert_eq!(rolling.max_surge, Some(IntOrString::Int(0)));
        assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(1)));
        let resources = container(&d).resources.clone().expect("resources");
        let requests = resources.requests.expect("requests");
        assert_eq!(requests.get("nvidia.com/gpu"), Some(&Quantity("1".into())));
        assert_eq!(requests.get("cpu"), Some(&Quantity("2".into())));
        assert_eq!(requests.get("memory"), None, "only GPU limits become requests");
        assert_eq!(resources.limits.expect("limits").len(), 2);

        let zero = md(&format!("{base}  resources: {{limits: {{amd.com/gpu: '0'}}}}\n"));
        assert!(!gpu_requested(&zero));
        assert!(!gpu_requested(&md(base)));
    }

    #[test]
    fn gateway_annotations_on_by_default() {
        let base = "
metadata: {name: qwen}
spec:
  backend: vllm
  model: Qwen/Qwen3-8B
";
        let a = gateway_annotations(&md(base), "litellm.keelson.dev");
        let served = ("litellm.keelson.dev/served-model".to_owned(), "qwen".to_owned());
        assert_eq!(a, BTreeMap::from([served]));
        assert_eq!(service(&md(base), &Settings::default()).metadata.annotations, Some(a));

        let full = md(&format!(
            "{base}  serviceLabels: [chat, tools]\n  litellm: {{servedModelName: qwen3-8b, aliases: [fast-text, q8]}}\n"
        ));
        let a = gateway_annotations(&full, "gw.example.com");
        assert_eq!(a.len(), 3);
        assert_eq!(a["gw.example.com/served-model"], "qwen3-8b");
        assert_eq!(a["gw.example.com/aliases"], "fast-text,q8");
        assert_eq!(a["gw.example.com/service-labels"], "chat,tools");
        assert_eq!(served_model_name(&full), "qwen3-8b");
    }

    #[test]
    fn gateway_annotations_absent_when_disabled() {
        let md = md("
metadata: {name: qwen}
spec:
  backend: vllm
  model: Qwen/Qwen3-8B
  serviceLabels: [chat]
  litellm: {enabled: false, aliases: [a]}
");
        assert!(gateway_annotations(&md, "litellm.keelson.dev").is_empty());
        assert_eq!(service(&md, &Settings::default()).metadata.annotations, None);
    }

    #[test]
    fn builders_are_deterministic() {
        let md = md(&format!(
            "{VLLM_FULL}  modelCacheRef: weights\n  litellm: {{aliases: [a, b]}}\n  serviceLabels: [x]\n"
        ));
        let weights =
            cache("metadata: {name: weights}\nspec: {source: org/m, storageStrategy: Memory}\n");
        let settings = Settings::default();
        let render = || {
            let d = serde_json::to_string(&deployment(&md, Some(&weights), &settings));
            let s = serde_json::to_string(&service(&md, &settings));
            (d.expect("json"), s.expect("json"))
        };
        assert_eq!(render(), render());
    }
}
