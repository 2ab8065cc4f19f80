//! The throughput benchmark of a ModelDeployment: the Job running `keelson bench` against
//! the model's Service, and the reading of the results ConfigMap it writes.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use keelson_api_crds::serving::ModelDeployment;

use crate::serving::settings::{Settings, labels, owner_reference};
use crate::serving::workload::{DEPLOYMENT_LABEL, KIND, port, served_model_name};

/// Suffix of the results ConfigMap's name, after the ModelDeployment's name.
pub const RESULTS_SUFFIX: &str = "-benchmark-results";
/// Suffix of the benchmark Job's name, after the ModelDeployment's name.
pub const JOB_SUFFIX: &str = "-benchmark";
/// `app.kubernetes.io/name` of the benchmark Job and its pod.
pub const COMPONENT: &str = "model-benchmark";
/// Key of the results ConfigMap holding the measured tokens per second.
pub const TOKENS_PER_SECOND_KEY: &str = "tokensPerSecond";
/// Prefix of the results keys holding a workload class's decode speed, written when the
/// benchmark probes quality (`decodeTokensPerSecond.lookup`, `decodeTokensPerSecond.novel`).
pub const QUALITY_KEY_PREFIX: &str = "decodeTokensPerSecond.";

const CONTAINER_NAME: &str = "bench";
/// A benchmark taking longer than 30 minutes has failed.
const ACTIVE_DEADLINE_SECONDS: i64 = 1800;
const DEFAULT_WARMUP_ITERATIONS: i32 = 2;
const DEFAULT_ITERATIONS: i32 = 5;
const DEFAULT_BATCH_SIZE: i32 = 128;
const DEFAULT_MIN_DURATION: &str = "30s";

/// Name of the benchmark Job: `<name>-benchmark`.
pub fn job_name(md: &ModelDeployment) -> String {
    format!("{}{JOB_SUFFIX}", name_of(md))
}

/// Name of the ConfigMap the benchmark writes: `<name>-benchmark-results`.
pub fn results_name(md: &ModelDeployment) -> String {
    format!("{}{RESULTS_SUFFIX}", name_of(md))
}

/// In-cluster URL of the model's Service: `http://<name>.<namespace>.svc:<port>`.
pub fn endpoint(md: &ModelDeployment) -> String {
    let namespace = md.metadata.namespace.as_deref().unwrap_or("default");
    format!("http://{}.{namespace}.svc:{}", name_of(md), port(md.spec.backend))
}

/// How a benchmark run measures: the `bench` flags beside the endpoint and model.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRun {
    /// Requests sent before measuring.
    pub warmups: i32,
    /// Measured requests, at least.
    pub iterations: i32,
    /// `max_tokens` per request.
    pub batch_size: i32,
    /// Measure at least this long, e.g. `30s`.
    pub min_duration: String,
    /// Quality probes per workload class (0: none).
    pub quality_repeats: i32,
}

impl BenchRun {
    /// The run `md`'s `spec.benchmark` asks for (defaults 2 warmups, 5 iterations, batch
    /// size 128, at least 30s), without quality probes.
    pub fn of(md: &ModelDeployment) -> BenchRun {
        let config = md.spec.benchmark.as_ref();
        BenchRun {
            warmups: config.map_or(DEFAULT_WARMUP_ITERATIONS, |c| c.warmup_iterations),
            iterations: config.map_or(DEFAULT_ITERATIONS, |c| c.iterations),
            batch_size: config.map_or(DEFAULT_BATCH_SIZE, |c| c.batch_size),
            min_duration: config
                .map_or(DEFAULT_MIN_DURATION, |c| c.min_duration.as_str())
                .to_owned(),
            quality_repeats: 0,
        }
    }
}

/// Arguments of the benchmark command: `bench` with the endpoint, model, backend, the results
/// ConfigMap `results` and the flags of `run`.
pub fn bench_args(md: &ModelDeployment, results: &str, run: &BenchRun) -> Vec<String> {
    let mut args = [
        "bench",
        "--endpoint",
        &endpoint(md),
        "--model",
        served_model_name(md),
        "--backend",
        md.spec.backend.as_str(),
        "--configmap",
        results,
        "--warmup-iterations",
        &run.warmups.to_string(),
        "--iterations",
        &run.iterations.to_string(),
        "--batch-size",
        &run.batch_size.to_string(),
        "--min-duration",
        &run.min_duration,
    ]
    .map(str::to_owned)
    .to_vec();
    if run.quality_repeats > 0 {
        args.extend(["--quality-repeats".to_owned(), run.quality_repeats.to_string()]);
    }
    args
}

/// The benchmark Job of `md`: one attempt plus one retry, at most 30 minutes, owned by `md`.
pub fn benchmark_job(md: &ModelDeployment, settings: &Settings) -> Job {
    let args = bench_args(md, &results_name(md), &BenchRun::of(md));
    let owner = owner_reference(KIND, &md.metadata);
    bench_job(md, job_name(md), owner, args, settings)
}

/// A Job running the benchmark command with `args` against `md`, named `name` and owned by
/// `owner`: one attempt plus one retry, at most 30 minutes.
pub fn bench_job(
    md: &ModelDeployment,
    name: String,
    owner: OwnerReference,
    args: Vec<String>,
    settings: &Settings,
) -> Job {
    let mut job_labels = labels(COMPONENT, name_of(md));
    job_labels.insert(DEPLOYMENT_LABEL.to_owned(), name_of(md).to_owned());
    let container = Container {
        name: CONTAINER_NAME.to_owned(),
        image: Some(settings.bench_image.clone()),
        // A command, not the image's entrypoint: the embedded local node runs Job pods as
        // local processes and needs one.
        command: Some(vec![settings.bench_command.clone()]),
        args: Some(args),
        env: Some(vec![pod_namespace()]),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_owned(), Quantity("100m".to_owned())),
                ("memory".to_owned(), Quantity("128Mi".to_owned())),
            ])),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    };
    Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: md.metadata.namespace.clone(),
            labels: Some(job_labels.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(1),
            active_deadline_seconds: Some(ACTIVE_DEADLINE_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(job_labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    restart_policy: Some("Never".to_owned()),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// The throughput in a results ConfigMap: `tokensPerSecond` when it is a positive finite
/// number, else `None`.
pub fn tokens_per_second(cm: &ConfigMap) -> Option<f64> {
    let raw = cm.data.as_ref()?.get(TOKENS_PER_SECOND_KEY)?;
    raw.trim().parse::<f64>().ok().filter(|tps| tps.is_finite() && *tps > 0.0)
}

/// The decode speed per workload class in a results ConfigMap (empty when quality was not
/// probed); values that are not positive finite numbers are left out.
pub fn quality(cm: &ConfigMap) -> BTreeMap<String, f64> {
    let Some(data) = cm.data.as_ref() else { return BTreeMap::new() };
    data.iter()
        .filter_map(|(key, raw)| {
            let class = key.strip_prefix(QUALITY_KEY_PREFIX)?;
            let value = raw.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0)?;
            Some((class.to_owned(), value))
        })
        .collect()
}

/// The resource name of `md`.
fn name_of(md: &ModelDeployment) -> &str {
    md.metadata.name.as_deref().unwrap_or_default()
}

/// `POD_NAMESPACE` from the downward API.
fn pod_namespace() -> EnvVar {
    EnvVar {
        name: "POD_NAMESPACE".to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.namespace".to_owned(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(yaml: &str) -> ModelDeployment {
        serde_saphyr::from_str(yaml).expect("fixture parses")
    }

    const QWEN: &str = "
metadata: {name: qwen, namespace: models, uid: u-9}
spec:
  backend: vllm
  model: Qwen/Qwen3-8B
";

    fn results(value: Option<&str>) -> ConfigMap {
        ConfigMap {
            data: value.map(|v| BTreeMap::from([(TOKENS_PER_SECOND_KEY.to_owned(), v.to_owned())])),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn names() {
        let md = md(QWEN);
        assert_eq!(job_name(&md), "qwen-benchmark");
        assert_eq!(results_name(&md), "qwen-benchmark-results");
        assert!(results_name(&md).ends_with(RESULTS_SUFFIX));
    }

    #[test]
    fn args_with_defaults() {
        assert_eq!(
            bench_args(&md(QWEN), "qwen-benchmark-results", &BenchRun::of(&md(QWEN))).join(" "),
            "bench --endpoint http://qwen.models.svc:8000 --model qwen --backend vllm \
             --configmap qwen-benchmark-results --warmup-iterations 2 --iterations 5 \
             --batch-size 128 --min-duration 30s"
        );
    }

    #[test]
    fn args_from_the_spec() {
        let md = md(&format!(
            "{QWEN}  litellm: {{servedModelName: qwen3-8b}}
  benchmark: {{warmupIterations: 0, iterations: 20, batchSize: 256, minDuration: 2m}}
"
        ));
        assert_eq!(
            bench_args(&md, &results_name(&md), &BenchRun::of(&md)).join(" "),
            "bench --endpoint http://qwen.models.svc:8000 --model qwen3-8b --backend vllm \
             --configmap qwen-benchmark-results --warmup-iterations 0 --iterations 20 \
             --batch-size 256 --min-duration 2m"
        );
        let tei = self::md("metadata: {name: e, namespace: ns}\nspec: {backend: tei, model: m}\n");
        assert_eq!(endpoint(&tei), "http://e.ns.svc:80");
    }

    #[test]
    fn job_shape() {
        let settings = Settings::default();
        let job = benchmark_job(&md(QWEN), &settings);
        assert_eq!(job.metadata.name.as_deref(), Some("qwen-benchmark"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("models"));
        let owner = &job.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("ModelDeployment", "qwen"));
        assert_eq!(owner.controller, Some(true));
        let l = job.metadata.labels.as_ref().expect("labels");
        assert_eq!(l["app.kubernetes.io/managed-by"], "keelson");
        assert_eq!(l["app.kubernetes.io/name"], "model-benchmark");
        assert_eq!(l["app.kubernetes.io/instance"], "qwen");
        let spec = job.spec.as_ref().expect("spec");
        assert_eq!((spec.backoff_limit, spec.active_deadline_seconds), (Some(1), Some(1800)));
        let pod = spec.template.spec.as_ref().expect("pod");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let c = &pod.containers[0];
        assert_eq!(c.image.as_ref(), Some(&settings.bench_image));
        assert_eq!(c.command, Some(vec!["keelson".to_owned()]));
        let qwen = md(QWEN);
        assert_eq!(c.args, Some(bench_args(&qwen, &results_name(&qwen), &BenchRun::of(&qwen))));
        let ns = c.env.as_ref().expect("env").iter().find(|e| e.name == "POD_NAMESPACE");
        let field = ns.and_then(|e| e.value_from.as_ref()).and_then(|v| v.field_ref.as_ref());
        assert_eq!(field.map(|f| f.field_path.as_str()), Some("metadata.namespace"));
        let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref()).expect("requests");
        assert_eq!(requests["cpu"], Quantity("100m".into()));
        assert_eq!(requests["memory"], Quantity("128Mi".into()));
        assert_eq!(
            serde_json::to_string(&job).ok(),
            serde_json::to_string(&benchmark_job(&md(QWEN), &settings)).ok()
        );
    }

    #[test]
    fn parses_tokens_per_second() {
        assert_eq!(tokens_per_second(&results(Some("42.5"))), Some(42.5));
        assert_eq!(tokens_per_second(&results(Some(" 12 "))), Some(12.0));
    }

    #[test]
    fn rejects_missing_or_bad_throughput() {
        assert_eq!(tokens_per_second(&results(None)), None);
        assert_eq!(tokens_per_second(&ConfigMap::default()), None);
        for bad in ["", "fast", "-3.5", "0", "NaN", "inf", "12.3/s"] {
            assert_eq!(tokens_per_second(&results(Some(bad))), None, "{bad:?}");
        }
    }
}
