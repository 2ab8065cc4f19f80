//! The resource metrics API (`metrics.k8s.io/v1beta1`) that `kubectl top` reads, served as
//! metrics-server serves it, but measured by the server itself when asked:
//!
//! - a running pod's containers: for process pods, their process groups' CPU and memory
//!   ([`crate::node::runtime::usage`]); simulated containers run nothing and use nothing. A pod
//!   whose process was not seen for the whole window is left out, as metrics-server leaves out
//!   pods it has no complete metrics for.
//! - a node: the machine's own usage for the node named after this machine; for any other
//!   (simulated) node, the sum of its pods'.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::metrics::{API_VERSION, ContainerMetrics, NodeMetrics, PodMetrics};
use crate::catalog::{ResourceInfo, builtin_resource};
use crate::node::config::host_node;
use crate::node::runtime::usage::{Usage, Window};

use super::errors::{ApiError, ApiResult};
use super::objects::meta_str;
use super::paths::Target;
use super::pod_log::PROCESS_SCHEME;
use super::read::{json_response, selected};
use super::{ApiState, ResourceRequest};

/// The group the metrics resources are in.
const GROUP: &str = "metrics.k8s.io";

/// Whether `info` is a metrics resource.
pub(crate) fn is_metrics(info: &ResourceInfo) -> bool {
    info.group == GROUP
}

/// `GET` of pod or node metrics: one, or a list (label and field selectors apply to the pods or
/// nodes measured).
pub(crate) async fn serve(state: &ApiState, request: &ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    if request.method != Method::GET || request.query.watch {
        let verb = if request.query.watch { "watch" } else { request.method.as_str() };
        return Err(ApiError::method_not_allowed(verb, &info.resource));
    }
    let namespace = request.target.namespace.as_deref();
    let objects: Vec<Arc<Value>> = stored(state, &info.resource, namespace)
        .into_iter()
        .filter(|o| request.target.name.as_deref().is_none_or(|n| meta_str(o, "name") == Some(n)))
        .filter(|o| selected(&request.query, o))
        .collect();
    let window = state.usage.window().await;
    let items: Vec<Value> = if info.resource == "pods" {
        objects.iter().filter_map(|pod| pod_metrics(pod, &window)).collect()
    } else {
        let pods = stored(state, "pods", None);
        objects.iter().map(|node| node_metrics(node, &pods, &window)).collect()
    };
    let Some(name) = &request.target.name else {
        let list = json!({
            "kind": info.list_kind, "apiVersion": info.api_version(), "metadata": {}, "items": items,
        });
        return Ok(json_response(StatusCode::OK, &list, &[]));
    };
    match items.into_iter().next() {
        Some(item) => Ok(json_response(StatusCode::OK, &item, &[])),
        // In metrics-server's words: `podmetrics.metrics.k8s.io "default/web" not found`.
        None => Err(match namespace {
            Some(ns) => ApiError::not_found(GROUP, "podmetrics", &format!("{ns}/{name}")),
            None => ApiError::not_found(GROUP, "nodemetrics", name),
        }),
    }
}

/// The stored core objects of `resource` (`pods`, `nodes`), in `namespace` or all.
pub(super) fn stored(state: &ApiState, resource: &str, namespace: Option<&str>) -> Vec<Arc<Value>> {
    let info = builtin_resource("", resource).expect("pods and nodes are built in");
    let target = Target {
        info: Arc::new(info.clone()),
        namespace: namespace.map(str::to_owned),
        name: None,
        subresource: None,
    };
    state.store.list(&target.prefix()).entries().map(|e| e.object.clone()).collect()
}

/// A pod's metrics, if it runs and every container's usage is known.
fn pod_metrics(pod: &Value, window: &Window) -> Option<Value> {
    let containers = container_usage(pod, window)?
        .into_iter()
        .map(|(name, usage)| ContainerMetrics { name, usage: quantities(usage) })
        .collect();
    let metrics = PodMetrics {
        api_version: API_VERSION.to_owned(),
        kind: "PodMetrics".to_owned(),
        metadata: summary_metadata(pod),
        timestamp: Time(window.timestamp()),
        window: go_duration(window),
        containers,
    };
    serde_json::to_value(metrics).ok()
}

/// The usage of each container of a running pod; none if the pod does not run or a process
/// was not seen for the whole window.
pub(super) fn container_usage(pod: &Value, window: &Window) -> Option<Vec<(String, Usage)>> {
    let pod = Pod::deserialize(pod).ok()?;
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    let statuses = status.container_statuses.as_deref().unwrap_or_default();
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    containers
        .iter()
        .map(|container| {
            let status = statuses.iter().find(|s| s.name == container.name)?;
            status.state.as_ref()?.running.as_ref()?;
            let id = status.container_id.as_deref().unwrap_or_default();
            let usage = match id.strip_prefix(PROCESS_SCHEME) {
                Some(pid) => window.group(pid.parse().ok()?)?,
                None => Usage::default(),
            };
            Some((container.name.clone(), usage))
        })
        .collect()
}

/// A node's metrics: the machine's for this machine's node, else its pods' total.
fn node_metrics(node: &Value, pods: &[Arc<Value>], window: &Window) -> Value {
    let usage = node_usage(meta_str(node, "name").unwrap_or_default(), pods, window);
    let metrics = NodeMetrics {
        api_version: API_VERSION.to_owned(),
        kind: "NodeMetrics".to_owned(),
        metadata: summary_metadata(node),
        timestamp: Time(window.timestamp()),
        window: go_duration(window),
        usage: quantities(usage),
    };
    serde_json::to_value(metrics).unwrap_or_default()
}

/// What node `name` uses: the machine's usage for this machine's node, else the total of its
/// `pods`' (of all `pods`, those bound to it).
fn node_usage(name: &str, pods: &[Arc<Value>], window: &Window) -> Usage {
    if name == host_node().name {
        return window.machine();
    }
    let on_node =
        pods.iter().filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(name));
    let containers = on_node.filter_map(|p| container_usage(p, window)).flatten();
    containers.fold(Usage::default(), |total, (_, usage)| total + usage)
}

/// The measured object's name, namespace, labels and creation time, as metrics-server copies
/// them.
fn summary_metadata(object: &Value) -> ObjectMeta {
    let meta = object.get("metadata").and_then(|m| ObjectMeta::deserialize(m).ok());
    let meta = meta.unwrap_or_default();
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        labels: meta.labels,
        creation_timestamp: meta.creation_timestamp,
        ..ObjectMeta::default()
    }
}

/// CPU in nanocores and memory in KiB, the units metrics-server reports.
fn quantities(usage: Usage) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_owned(), Quantity(format!("{}n", usage.nanocores))),
        ("memory".to_owned(), Quantity(format!("{}Ki", usage.memory / 1024))),
    ])
}

/// The window's length as Go prints a duration in seconds (`1.002s`).
fn go_duration(window: &Window) -> String {
    let length = window.length();
    format!("{}.{:03}s", length.as_secs(), length.subsec_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_in_metrics_servers_units() {
        let usage = Usage { nanocores: 12_345_678, memory: 10 * 1024 * 1024, cpu_nanoseconds: 1 };
        assert_eq!(
            serde_json::to_value(quantities(usage)).unwrap(),
            json!({ "cpu": "12345678n", "memory": "10240Ki" })
        );
    }

    #[test]
    fn summary_metadata_keeps_what_identifies_the_object() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"},
            "uid": "u", "resourceVersion": "5", "creationTimestamp": "2026-11-25T00:00:00Z"}});
        assert_eq!(
            serde_json::to_value(summary_metadata(&pod)).unwrap(),
            json!({"name": "p", "namespace": "ns", "labels": {"a": "b"},
                "creationTimestamp": "2026-11-25T00:00:00Z"})
        );
    }
}
