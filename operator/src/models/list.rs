//! `keelson list`: the ModelDeployments of a namespace (or of all, with `-A`) with their status,
//! replicas, throughput and GPU.

use anyhow::Context;
use keelson_api_crds::serving::ModelDeployment;
use keelson_controllers::serving::gpu_group::DEMAND_ANNOTATION;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::Error;
use super::output::{self, Cell, Output, OutputArgs, Table};
use crate::kube_args::KubeArgs;

/// Settings of `keelson list`.
#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// The output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `keelson list`.
pub async fn run(args: ListArgs) -> Result<(), Error> {
    let client = args.kube.client().await?;
    let api: Api<ModelDeployment> = if args.kube.all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, &args.kube.namespace)
    };
    let mut models =
        api.list(&ListParams::default()).await.context("listing ModelDeployments")?.items;
    models.sort_by_key(|md| (md.namespace(), md.name_any()));
    let text = match args.output.output {
        Output::Table if models.is_empty() => empty(&args.kube),
        Output::Table => table(&models, args.kube.all_namespaces, jiff::Timestamp::now())
            .render(output::colour()),
        format => output::serialise(&output::list(&models)?, format)?,
    };
    output::print(&text)?;
    Ok(())
}

/// What an empty listing says.
pub fn empty(kube: &KubeArgs) -> String {
    if kube.all_namespaces {
        "No ModelDeployments found\n".to_owned()
    } else {
        format!("No ModelDeployments found in namespace {}\n", kube.namespace)
    }
}

/// The listing: NAME, BACKEND, STATUS, REPLICAS, THROUGHPUT, GPU, AGE, and NAMESPACE first
/// with `all_namespaces`.
pub fn table(models: &[ModelDeployment], all_namespaces: bool, now: jiff::Timestamp) -> Table {
    let mut columns = vec!["NAME", "BACKEND", "STATUS", "REPLICAS", "THROUGHPUT", "GPU", "AGE"];
    if all_namespaces {
        columns.insert(0, "NAMESPACE");
    }
    let mut table = Table::new(&columns);
    for md in models {
        let status = md.status.clone().unwrap_or_default();
        let mut row = vec![
            Cell::plain(md.name_any()),
            Cell::plain(md.spec.backend.as_str()),
            Cell::status(status_word(md)),
            Cell::plain(replicas(md)),
            Cell::plain(output::throughput(status.tokens_per_second)),
            Cell::plain(gpu(md)),
            Cell::plain(
                md.metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or_else(|| "<unknown>".to_owned(), |t| output::age(t.0, now)),
            ),
        ];
        if all_namespaces {
            row.insert(0, Cell::plain(md.namespace().unwrap_or_default()));
        }
        table.rows.push(row);
    }
    table
}

/// The STATUS column: `Scaled(0)` when `spec.replicas` is 0, else the phase (`Pending` before
/// the controller wrote one).
pub fn status_word(md: &ModelDeployment) -> String {
    if md.spec.replicas == 0 {
        return "Scaled(0)".to_owned();
    }
    md.status
        .as_ref()
        .and_then(|s| s.phase)
        .map_or_else(|| "Pending".to_owned(), |phase| format!("{phase:?}"))
}

/// Requests queued for a model scaled to zero (the gateway's demand annotation), which wake it.
pub fn queued_requests(md: &ModelDeployment) -> u32 {
    md.annotations().get(DEMAND_ANNOTATION).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// The REPLICAS column: `ready/desired` when settled; `ready (current→desired)` while the
/// number of pods changes, e.g. `0 (0→1)` for a model waking from zero; a model scaled to zero
/// with queued requests shows the wake it waits for, `0 (0→1)`.
pub fn replicas(md: &ModelDeployment) -> String {
    let status = md.status.clone().unwrap_or_default();
    let desired = md.spec.replicas;
    if desired == 0 && queued_requests(md) > 0 {
        let wake = md.spec.min_replicas.unwrap_or(1).max(1);
        return format!("{} ({}→{wake})", status.ready_replicas, status.replicas);
    }
    if status.replicas != desired {
        return format!("{} ({}→{desired})", status.ready_replicas, status.replicas);
    }
    format!("{}/{desired}", status.ready_replicas)
}

/// The GPU column: `<count>× on <node>` as allocated, `<count>× <resource>` when requested but
/// not placed yet, `-` without GPUs.
pub fn gpu(md: &ModelDeployment) -> String {
    if let Some(gpu) = md.status.as_ref().and_then(|s| s.allocated_gpu.as_ref()) {
        return format!("{}× on {}", gpu.count, gpu.node);
    }
    let limits = md.spec.resources.as_ref().and_then(|r| r.limits.as_ref());
    limits
        .into_iter()
        .flatten()
        .find(|(key, _)| key.ends_with("/gpu"))
        .map_or_else(|| "-".to_owned(), |(key, quantity)| format!("{}× {key}", quantity.0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(crate) fn md(
        name: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> ModelDeployment {
        let mut spec_ = json!({"backend": "vllm", "model": "org/m"});
        spec_.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ml",
                         "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": spec_, "status": status,
        }))
        .unwrap()
    }

    fn now() -> jiff::Timestamp {
        "2025-01-01T00:05:00Z".parse().unwrap()
    }

    #[test]
    fn the_listing_shows_status_replicas_throughput_and_gpu() {
        let running = md(
            "qwen",
            json!({"replicas": 1, "resources": {"limits": {"nvidia.com/gpu": "1"}}}),
            json!({"phase": "Running", "replicas": 1, "readyReplicas": 1, "tokensPerSecond": 12.34,
                   "allocatedGpu": {"node": "gpu-0", "count": 1}}),
        );
        let idle = md(
            "llama",
            json!({"backend": "mlc-llm", "replicas": 0}),
            json!({"phase": "Idle", "replicas": 0}),
        );
        let text = table(&[running, idle], false, now()).render(false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["NAME", "BACKEND", "STATUS", "REPLICAS", "THROUGHPUT", "GPU", "AGE"]
        );
        assert_eq!(
            lines[1].split("   ").map(str::trim).filter(|c| !c.is_empty()).collect::<Vec<_>>(),
            ["qwen", "vllm", "Running", "1/1", "12.3/s", "1× on gpu-0", "5m"]
        );
        assert_eq!(
            lines[2].split("   ").map(str::trim).filter(|c| !c.is_empty()).collect::<Vec<_>>(),
            ["llama", "mlc-llm", "Scaled(0)", "0/0", "-", "-", "5m"]
        );
    }

    #[test]
    fn all_namespaces_adds_the_namespace_column() {
        let text = table(&[md("qwen", json!({}), json!({}))], true, now()).render(false);
        assert!(text.starts_with("NAMESPACE   NAME"), "{text}");
        assert!(text.lines().nth(1).unwrap().starts_with("ml          qwen"), "{text}");
    }

    #[test]
    fn replicas_show_a_change_and_a_pending_wake() {
        let waking = md("a", json!({"replicas": 1}), json!({"replicas": 0, "readyReplicas": 0}));
        assert_eq!(replicas(&waking), "0 (0→1)");
        let mut queued = md("b", json!({"replicas": 0}), json!({"replicas": 0}));
        assert_eq!(replicas(&queued), "0/0");
        queued.metadata.annotations = Some([(DEMAND_ANNOTATION.to_owned(), "3".to_owned())].into());
        assert_eq!(replicas(&queued), "0 (0→1)");
        assert_eq!(status_word(&queued), "Scaled(0)");
        let settled = md("c", json!({"replicas": 2}), json!({"replicas": 2, "readyReplicas": 1}));
        assert_eq!(replicas(&settled), "1/2");
        assert_eq!(status_word(&md("d", json!({}), json!({}))), "Pending");
    }

    #[test]
    fn gpu_requested_but_not_placed() {
        let requested = md("a", json!({"resources": {"limits": {"amd.com/gpu": "2"}}}), json!({}));
        assert_eq!(gpu(&requested), "2× amd.com/gpu");
        assert_eq!(gpu(&md("b", json!({}), json!({}))), "-");
    }

    #[test]
    fn empty_listings_name_the_namespace() {
        let kube = KubeArgs { namespace: "ml".into(), all_namespaces: false, kubeconfig: None };
        assert_eq!(empty(&kube), "No ModelDeployments found in namespace ml\n");
        assert_eq!(
            empty(&KubeArgs { all_namespaces: true, ..kube }),
            "No ModelDeployments found\n"
        );
    }
}
