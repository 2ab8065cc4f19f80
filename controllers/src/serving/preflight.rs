//! The GPU node preflight (the spec's cleanup rule 1): before a model runs on a GPU node, look
//! for what could stand in its way there — Memory caches targeting the node, cache syncer
//! DaemonSets running on it, and pods on it that are stuck pending or crash-looping (pure).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use keelson_api_crds::serving::{ModelCache, ModelDeployment, StorageStrategy};

use super::cache::SYNCER_COMPONENT;
use super::workload;

/// The node label that pins a pod to one node.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The GPU node the model targets: the one its `nodeSelector` pins, else the node its pods
/// were scheduled to; `None` without GPUs or before the node is known.
pub fn target_node(md: &ModelDeployment, pods: &[Pod]) -> Option<String> {
    if !workload::gpu_requested(md) {
        return None;
    }
    md.spec.node_selector.get(HOSTNAME_LABEL).cloned().or_else(|| {
        pods.iter().find_map(|p| p.spec.as_ref()?.node_name.clone().filter(|n| !n.is_empty()))
    })
}

/// What stands in the way on `node`, one line each; empty when the node is clear. `node_labels`
/// are the node's labels (a cache's selector targets the node when it matches them); the
/// model's own pods are not counted.
pub fn findings(
    md: &ModelDeployment,
    node: &str,
    node_labels: &BTreeMap<String, String>,
    caches: &[ModelCache],
    pods: &[Pod],
) -> Vec<String> {
    let mut found = Vec::new();
    for cache in caches.iter().filter(|c| c.spec.storage_strategy == StorageStrategy::Memory) {
        if cache_targets(cache, node_labels) {
            found.push(format!("Memory cache {} targets the node", name_of(&cache.metadata)));
        }
    }
    let own = md.metadata.name.as_deref().unwrap_or_default();
    for pod in pods.iter().filter(|p| on_node(p, node)) {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if labels.get(workload::DEPLOYMENT_LABEL).map(String::as_str) == Some(own) {
            continue;
        }
        let name = name_of(&pod.metadata);
        if is_syncer(pod) {
            found.push(format!("cache syncer pod {name} runs on the node"));
        } else if crash_looping(pod) {
            found.push(format!("pod {name} is crash-looping on the node"));
        } else if phase(pod) == "Pending" {
            found.push(format!("pod {name} is pending on the node"));
        }
    }
    found
}

/// Whether `cache` targets a node with `node_labels`: its node selector matches them (an empty
/// selector targets every node). Only the `Memory` and `NodeLocal` strategies place copies on
/// nodes.
pub fn cache_targets(cache: &ModelCache, node_labels: &BTreeMap<String, String>) -> bool {
    cache.spec.node_selector.iter().all(|(k, v)| node_labels.get(k) == Some(v))
}

/// Whether `pod` is a cache syncer's pod (of a `Memory` or `NodeLocal` ModelCache).
pub fn is_syncer(pod: &Pod) -> bool {
    pod.metadata.labels.as_ref().and_then(|l| l.get("app.kubernetes.io/name")).map(String::as_str)
        == Some(SYNCER_COMPONENT)
}

fn on_node(pod: &Pod, node: &str) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
        && pod.metadata.deletion_timestamp.is_none()
        && !matches!(phase(pod), "Succeeded" | "Failed")
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

/// Whether a container of `pod` waits in `CrashLoopBackOff`.
pub fn crash_looping(pod: &Pod) -> bool {
    pod.status.iter().flat_map(|s| s.container_statuses.iter().flatten()).any(|c| {
        c.state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.as_deref())
            == Some("CrashLoopBackOff")
    })
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn md(selector: serde_json::Value) -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ml"},
            "spec": {"backend": "vllm", "model": "m", "nodeSelector": selector,
                     "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        }))
        .unwrap()
    }

    fn pod(name: &str, labels: serde_json::Value, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {"nodeName": "gpu-0", "containers": []},
            "status": status,
        }))
        .unwrap()
    }

    fn memory_cache(selector: serde_json::Value) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": "llama", "namespace": "ml"},
            "spec": {"source": "org/llama", "storageStrategy": "Memory", "nodeSelector": selector},
        }))
        .unwrap()
    }

    #[test]
    fn the_target_is_the_pinned_node_and_only_for_gpu_models() {
        assert_eq!(
            target_node(&md(json!({HOSTNAME_LABEL: "gpu-0"})), &[]).as_deref(),
            Some("gpu-0")
        );
        let mut cpu = md(json!({HOSTNAME_LABEL: "gpu-0"}));
        cpu.spec.resources = None;
        assert_eq!(target_node(&cpu, &[]), None);
    }

    #[test]
    fn caches_syncers_and_stuck_pods_on_the_node_are_found_but_not_the_models_own() {
        let labels: BTreeMap<String, String> =
            [(HOSTNAME_LABEL.to_owned(), "gpu-0".to_owned())].into();
        let caches = [
            memory_cache(json!({HOSTNAME_LABEL: "gpu-0"})),
            memory_cache(json!({HOSTNAME_LABEL: "gpu-9"})),
        ];
        let crash = json!({"phase": "Running", "containerStatuses": [{"name": "c", "image": "i", "imageID": "",
            "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]});
        let pods = [
            pod(
                "llama-ram-syncer-x",
                json!({"app.kubernetes.io/name": SYNCER_COMPONENT}),
                json!({"phase": "Running"}),
            ),
            pod("stuck", json!({}), json!({"phase": "Pending"})),
            pod("looping", json!({}), crash),
            pod("fine", json!({}), json!({"phase": "Running"})),
            pod(
                "qwen-abc",
                json!({workload::DEPLOYMENT_LABEL: "qwen"}),
                json!({"phase": "Pending"}),
            ),
        ];
        let found = findings(&md(json!({})), "gpu-0", &labels, &caches, &pods);
        assert_eq!(
            found,
            [
                "Memory cache ml/llama targets the node",
                "cache syncer pod ml/llama-ram-syncer-x runs on the node",
                "pod ml/stuck is pending on the node",
                "pod ml/looping is crash-looping on the node",
            ]
        );
        assert!(findings(&md(json!({})), "gpu-0", &labels, &[], &pods[3..]).is_empty());
    }
}
