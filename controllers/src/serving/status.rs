//! A ModelDeployment's status from what its reconciler read: the cache, the serving
//! Deployment, its pods and the last benchmark (pure).

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{Status, Update};
use keelson_api_crds::serving::{
    Endpoints, GpuAllocation, ModelDeployment, ModelDeploymentPhase, ModelDeploymentStatus,
};

use super::workload;

/// Where the referenced ModelCache stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// No cache is referenced.
    None,
    /// The cache is Ready.
    Ready,
    /// The cache is missing or not Ready; the message says which.
    Waiting(String),
}

/// What the reconciler observed.
#[derive(Clone, Debug, Default)]
pub struct Observed<'a> {
    /// The serving Deployment, once it exists.
    pub deployment: Option<&'a Deployment>,
    /// The serving pods.
    pub pods: &'a [Pod],
    /// Tokens per second of the last benchmark, and when it was read.
    pub benchmark: Option<(f64, Timestamp)>,
}

/// The status to write: phase, replicas, selector, endpoints, GPU placement, throughput and
/// the conditions `CacheReady`, `Ready`, `Progressing` and `Benchmarked`.
pub fn status(
    md: &ModelDeployment,
    cache: &CacheState,
    observed: &Observed<'_>,
    now: Timestamp,
) -> ModelDeploymentStatus {
    let mut status = md.status.clone().unwrap_or_default();
    let generation = md.metadata.generation;
    let mut set = |type_, ok: bool, reason, message: &str| {
        let update = Update { type_, status: Status::from(ok), reason, message };
        status.observed.set(update, generation, now);
    };
    match cache {
        CacheState::None => set("CacheReady", true, "NoCache", "the model is read from its source"),
        CacheState::Ready => set("CacheReady", true, "CacheReady", "the model cache is ready"),
        CacheState::Waiting(why) => set("CacheReady", false, "CacheNotReady", why),
    }
    let dep_status = observed.deployment.and_then(|d| d.status.as_ref());
    let replicas = dep_status.and_then(|s| s.replicas).unwrap_or(0);
    let ready = dep_status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let wanted = md.spec.replicas;
    let (phase, ok, reason, message) = if let CacheState::Waiting(why) = cache {
        (
            ModelDeploymentPhase::Pending,
            false,
            "CacheNotReady",
            format!("waiting for the cache: {why}"),
        )
    } else if wanted == 0 {
        (ModelDeploymentPhase::Idle, false, "ScaledToZero", "spec.replicas is 0".to_owned())
    } else if ready > 0 {
        (
            ModelDeploymentPhase::Running,
            true,
            "DeploymentReady",
            format!("{ready}/{wanted} replicas ready"),
        )
    } else {
        (
            ModelDeploymentPhase::Pending,
            false,
            "PodsNotReady",
            format!("waiting for pods to become ready (0/{wanted} ready)"),
        )
    };
    set("Ready", ok, reason, &message);
    let rolled_out = observed.deployment.is_some_and(|d| {
        let s = d.status.clone().unwrap_or_default();
        s.observed_generation >= d.metadata.generation
            && s.updated_replicas.unwrap_or(0) == wanted
            && s.ready_replicas.unwrap_or(0) == wanted
            && s.replicas.unwrap_or(0) == wanted
    });
    let progressing = !rolled_out && !matches!(cache, CacheState::Waiting(_));
    let (reason, message) = if progressing {
        ("Rollout", "the serving Deployment is rolling out")
    } else if rolled_out {
        ("Complete", "the serving Deployment has the desired replicas")
    } else {
        ("Waiting", "waiting for the cache")
    };
    set("Progressing", progressing, reason, message);
    if let Some((tps, at)) = observed.benchmark {
        set("Benchmarked", true, "BenchmarkComplete", &format!("{tps:.1} tokens/s"));
        status.tokens_per_second = Some(tps);
        status.last_benchmark_time = Some(Time(at));
    } else if status.tokens_per_second.is_none() {
        set("Benchmarked", false, "NotBenchmarked", "the benchmark runs once the model is Ready");
    }
    status.phase = Some(phase);
    status.observed.observed_generation = generation;
    status.replicas = replicas;
    status.ready_replicas = ready;
    status.selector = Some(workload::label_selector(md));
    status.endpoints = Some(Endpoints { internal: Some(internal_endpoint(md)), external: None });
    status.allocated_gpu = allocation(md, observed.pods);
    status
}

/// The in-cluster URL of the model's Service.
pub fn internal_endpoint(md: &ModelDeployment) -> String {
    let name = md.metadata.name.as_deref().unwrap_or_default();
    let namespace = md.metadata.namespace.as_deref().unwrap_or("default");
    format!("http://{name}.{namespace}.svc:{}", workload::port(md.spec.backend))
}

/// The node and GPUs of the first running serving pod, when the model asks for GPUs.
fn allocation(md: &ModelDeployment, pods: &[Pod]) -> Option<GpuAllocation> {
    let limits = md.spec.resources.as_ref()?.limits.as_ref()?;
    let (resource, quantity) = limits.iter().find(|(key, _)| key.ends_with("/gpu"))?;
    let node = pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .find_map(|p| p.spec.as_ref()?.node_name.clone())?;
    Some(GpuAllocation {
        node,
        resource: Some(resource.clone()),
        count: quantity.0.parse().unwrap_or(1),
        vendor: resource.split_once('.').map(|(vendor, _)| vendor.to_owned()),
        memory_mb: None,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentStatus;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
    use keelson_api_crds::conditions::find;

    use super::*;

    fn md(replicas: i32) -> ModelDeployment {
        let mut md: ModelDeployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ml", "generation": 3},
            "spec": {"backend": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct",
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        }))
        .unwrap();
        md.spec.replicas = replicas;
        md
    }

    fn deployment(ready: i32, replicas: i32) -> Deployment {
        Deployment {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                generation: Some(1),
                ..Default::default()
            },
            status: Some(DeploymentStatus {
                observed_generation: Some(1),
                replicas: Some(replicas),
                ready_replicas: Some(ready),
                updated_replicas: Some(replicas),
                ..DeploymentStatus::default()
            }),
            ..Deployment::default()
        }
    }

    fn reason(status: &ModelDeploymentStatus, type_: &str) -> (String, String) {
        let c = find(&status.observed.conditions, type_).unwrap();
        (c.status.clone(), c.reason.clone())
    }

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn zero_replicas_is_idle_and_not_ready_with_reason_scaled_to_zero() {
        let d = deployment(0, 0);
        let observed = Observed { deployment: Some(&d), ..Observed::default() };
        let status = status(&md(0), &CacheState::None, &observed, now());
        assert_eq!(status.phase, Some(ModelDeploymentPhase::Idle));
        assert_eq!(reason(&status, "Ready"), ("False".into(), "ScaledToZero".into()));
        assert_eq!(status.observed.observed_generation, Some(3));
    }

    #[test]
    fn a_ready_pod_makes_it_running_with_endpoint_and_gpu_placement() {
        let d = deployment(1, 1);
        let pod = Pod {
            spec: Some(PodSpec { node_name: Some("gpu-0".into()), ..PodSpec::default() }),
            status: Some(PodStatus { phase: Some("Running".into()), ..PodStatus::default() }),
            ..Pod::default()
        };
        let pods = [pod];
        let observed = Observed { deployment: Some(&d), pods: &pods, benchmark: None };
        let status = status(&md(1), &CacheState::Ready, &observed, now());
        assert_eq!(status.phase, Some(ModelDeploymentPhase::Running));
        assert_eq!(reason(&status, "Ready").0, "True");
        assert_eq!(reason(&status, "Progressing"), ("False".into(), "Complete".into()));
        assert_eq!(status.endpoints.unwrap().internal.unwrap(), "http://qwen.ml.svc:8000");
        let gpu = status.allocated_gpu.unwrap();
        assert_eq!((gpu.node.as_str(), gpu.count), ("gpu-0", 1));
    }

    #[test]
    fn a_cache_that_is_not_ready_keeps_it_pending() {
        let observed = Observed::default();
        let waiting = CacheState::Waiting("ModelCache \"w\" is Provisioning".into());
        let status = status(&md(1), &waiting, &observed, now());
        assert_eq!(status.phase, Some(ModelDeploymentPhase::Pending));
        assert_eq!(reason(&status, "CacheReady"), ("False".into(), "CacheNotReady".into()));
        assert_eq!(reason(&status, "Ready").1, "CacheNotReady");
    }

    #[test]
    fn the_benchmark_figure_is_kept_once_read() {
        let d = deployment(1, 1);
        let read = Observed { deployment: Some(&d), pods: &[], benchmark: Some((42.5, now())) };
        let mut model = md(1);
        model.status = Some(status(&model, &CacheState::None, &read, now()));
        let later = Observed { deployment: Some(&d), ..Observed::default() };
        let again = status(&model, &CacheState::None, &later, now());
        assert_eq!(again.tokens_per_second, Some(42.5));
        assert_eq!(reason(&again, "Benchmarked").0, "True");
        assert_eq!(again, model.status.unwrap(), "nothing changes without news");
    }
}
