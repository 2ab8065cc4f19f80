//! `keelson cache status`: the ModelCaches with their strategy, path, ready state and source,
//! then the models kept in RAM (the `Memory` caches).

use anyhow::Context;
use keelson_api_crds::serving::{ModelCache, StorageStrategy};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::Error;
use super::output::{self, Cell, Output, OutputArgs, Table};
use crate::kube_args::KubeArgs;

/// The `keelson cache` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct CacheArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CacheCommand,
}

/// The `keelson cache` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum CacheCommand {
    /// List ModelCaches (strategy, path, ready state, source) and the RAM-cached models.
    Status(CacheStatusArgs),
}

/// Settings of `keelson cache status`.
#[derive(Debug, Clone, clap::Args)]
pub struct CacheStatusArgs {
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// The output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `keelson cache status`.
pub async fn run(args: CacheArgs) -> Result<(), Error> {
    let CacheCommand::Status(args) = args.command;
    let client = args.kube.client().await?;
    let api: Api<ModelCache> = if args.kube.all_namespaces {
        Api::all(client)
    } else {
        Api::namespaced(client, &args.kube.namespace)
    };
    let mut caches = api.list(&ListParams::default()).await.context("listing ModelCaches")?.items;
    caches.sort_by_key(|c| (c.namespace(), c.name_any()));
    let text = match args.output.output {
        Output::Table => render(&caches, &args.kube, output::colour()),
        format => output::serialise(&output::list(&caches)?, format)?,
    };
    output::print(&text)?;
    Ok(())
}

/// The table (or what says there is none) and the RAM-cached models.
pub fn render(caches: &[ModelCache], kube: &KubeArgs, colour: bool) -> String {
    let mut out = if caches.is_empty() {
        if kube.all_namespaces {
            "No ModelCaches found\n".to_owned()
        } else {
            format!("No ModelCaches found in namespace {}\n", kube.namespace)
        }
    } else {
        table(caches, kube.all_namespaces).render(colour)
    };
    out.push_str("\nRAM-cached models:\n");
    let memory: Vec<&ModelCache> =
        caches.iter().filter(|c| c.spec.storage_strategy == StorageStrategy::Memory).collect();
    if memory.is_empty() {
        out.push_str("  none\n");
    }
    for cache in memory {
        let status = cache.status.clone().unwrap_or_default();
        let name = if kube.all_namespaces {
            format!("{}/{}", cache.namespace().unwrap_or_default(), cache.name_any())
        } else {
            cache.name_any()
        };
        out.push_str(&format!(
            "  {name}: {} on {}/{} nodes{}\n",
            cache.spec.model_path.as_deref().unwrap_or(&cache.name_any()),
            status.ready_nodes,
            status.total_nodes,
            selector(cache).map(|s| format!(" ({s})")).unwrap_or_default()
        ));
    }
    out
}

/// The node selector as `k=v,k=v`, `None` when empty.
pub fn selector(cache: &ModelCache) -> Option<String> {
    let pairs: Vec<String> =
        cache.spec.node_selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    (!pairs.is_empty()).then(|| pairs.join(","))
}

/// The READY column: the phase, with `ready/total` nodes for the per-node strategies.
pub fn ready(cache: &ModelCache) -> String {
    let status = cache.status.clone().unwrap_or_default();
    let phase = status.phase.map_or_else(|| "Pending".to_owned(), |p| format!("{p:?}"));
    match cache.spec.storage_strategy {
        StorageStrategy::SharedPVC => phase,
        _ => format!("{phase} ({}/{})", status.ready_nodes, status.total_nodes),
    }
}

/// NAME, STRATEGY, PATH, READY, SOURCE, and NAMESPACE first with `all_namespaces`.
pub fn table(caches: &[ModelCache], all_namespaces: bool) -> Table {
    let mut columns = vec!["NAME", "STRATEGY", "PATH", "READY", "SOURCE"];
    if all_namespaces {
        columns.insert(0, "NAMESPACE");
    }
    let mut table = Table::new(&columns);
    for cache in caches {
        let status = cache.status.clone().unwrap_or_default();
        let ready = ready(cache);
        let phase = ready.split(' ').next().unwrap_or_default().to_owned();
        let source = cache
            .spec
            .source
            .clone()
            .or_else(|| cache.spec.existing_claim_name.as_ref().map(|c| format!("pvc:{c}")))
            .unwrap_or_else(|| "-".to_owned());
        let mut row = vec![
            Cell::plain(cache.name_any()),
            Cell::plain(format!("{:?}", cache.spec.storage_strategy)),
            Cell::plain(status.path.unwrap_or_else(|| "-".to_owned())),
            Cell { style: output::Style::of(&phase), text: ready },
            Cell::plain(source),
        ];
        if all_namespaces {
            row.insert(0, Cell::plain(cache.namespace().unwrap_or_default()));
        }
        table.rows.push(row);
    }
    table
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cache(name: &str, spec: serde_json::Value, status: serde_json::Value) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": status,
        }))
        .unwrap()
    }

    fn kube(all: bool) -> KubeArgs {
        KubeArgs { namespace: "ml".into(), all_namespaces: all, kubeconfig: None }
    }

    #[test]
    fn caches_and_the_ram_cached_models() {
        let caches = [
            cache(
                "llama",
                json!({"source": "mlc://mlc-ai/Llama", "storageStrategy": "Memory",
                       "modelPath": "Llama-MLC", "nodeSelector": {"kubernetes.io/hostname": "gpu-0"}}),
                json!({"phase": "Ready", "readyNodes": 1, "totalNodes": 1,
                       "path": "/dev/shm/keelson/llama"}),
            ),
            cache("qwen", json!({"source": "org/qwen"}), json!({"phase": "Provisioning"})),
        ];
        let text = render(&caches, &kube(false), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["NAME", "STRATEGY", "PATH", "READY", "SOURCE"]
        );
        assert!(lines[1].starts_with("llama   Memory      /dev/shm/keelson/llama   Ready (1/1)"));
        assert!(lines[2].contains("SharedPVC") && lines[2].contains("Provisioning   org/qwen"));
        assert!(
            text.ends_with(
                "\nRAM-cached models:\n  llama: Llama-MLC on 1/1 nodes (kubernetes.io/hostname=gpu-0)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn no_caches() {
        assert_eq!(
            render(&[], &kube(false), false),
            "No ModelCaches found in namespace ml\n\nRAM-cached models:\n  none\n"
        );
        let one = [cache("a", json!({"source": "org/a"}), json!({}))];
        let text = render(&one, &kube(true), false);
        assert!(text.starts_with("NAMESPACE   NAME"), "{text}");
        assert!(text.ends_with("RAM-cached models:\n  none\n"), "{text}");
    }
}
