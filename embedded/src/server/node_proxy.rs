//! The `proxy` subresource of nodes: the read-only part of a kubelet's HTTP API, as `kubectl
//! get --raw /api/v1/nodes/<node>/proxy/<path>` and monitoring tools reach it. No kubelet
//! listens here, so the API server answers for every node the local node runs, from what it
//! stores and what the machine measures (the figures `kubectl top` shows):
//!
//! - `healthz`: `ok`;
//! - `pods`: the pods bound to the node, as a `PodList`;
//! - `stats/summary`: the node's and its running pods' CPU and memory, in the kubelet's Summary
//!   API (`stats/v1alpha1`);
//! - `metrics/resource`: the same figures as Prometheus metrics, named as the kubelet names them;
//! - `containerLogs/{namespace}/{pod}/{container}`: a container's log, as `kubectl logs` shows it.
//!
//! A path a kubelet does not serve read-only is `404 page not found`, as a kubelet answers. A
//! node that is not `Ready` has no kubelet answering: `503`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::extract::{Extension, Path, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ApiState;
use super::errors::{ApiError, ApiResult};
use super::metrics::{OPENMETRICS, encode};
use super::metrics_api::{container_usage, stored};
use super::objects::meta_str;
use super::paths::object_key;
use super::pod_log::{container_log, declared_containers};
use super::proxy::Target;
use super::rbac::{self, Attributes, ResourceAttributes};
use super::read::{json_response, stored_core};
use super::users::User;
use crate::catalog::builtin_resource;
use crate::node::config::host_node;
use crate::node::runtime::usage::Usage;

/// The node named in `/api/v1/nodes/{name}/proxy[/{path}]` (`[scheme:]name[:port]`).
#[derive(Deserialize)]
pub(crate) struct NodeProxyPath {
    name: String,
}

/// `/api/v1/nodes/{name}/proxy[/{path}]`, any method.
pub(crate) async fn node(
    State(state): State<ApiState>,
    Path(path): Path<NodeProxyPath>,
    Extension(user): Extension<User>,
    request: Request,
) -> ApiResult<Response> {
    let asked = Attributes::Resource(ResourceAttributes {
        verb: rbac::object_verb(request.method()).into_owned(),
        group: String::new(),
        resource: "nodes".into(),
        subresource: "proxy".into(),
        name: path.name.clone(),
        namespace: String::new(),
    });
    rbac::check(&state.store, &user, &asked)?;
    let target = Target::parse(&path.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {:?}", path.name)))?;
    let node: Node = stored_core(&state, "nodes", "", &target.name)?;
    if !is_ready(&node) {
        let why = format!("node {:?} is not ready: no kubelet answers for it", target.name);
        return Err(ApiError::unavailable(why));
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed"));
    }
    // "", "api", "v1", "nodes", name, "proxy", then the kubelet's path.
    let rest = request.uri().path().splitn(7, '/').nth(6).unwrap_or_default();
    let name = target.name.as_str();
    match rest {
        "healthz" => Ok(plain(StatusCode::OK, "ok")),
        "pods" => {
            let pods = bound_to(&state, name);
            let items: Vec<&Value> = pods.iter().map(Arc::as_ref).collect();
            let list =
                json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items});
            Ok(json_response(StatusCode::OK, &list, &[]))
        }
        "stats/summary" => {
            let summary = measure(&state, &node).await;
            Ok(json_response(StatusCode::OK, &summary, &[]))
        }
        "metrics/resource" => {
            let text = resource_metrics(&measure(&state, &node).await);
            Ok(([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response())
        }
        _ => match rest.strip_prefix("containerLogs/") {
            Some(container) => Ok(container_logs(&state, name, container, request.uri().query())),
            None => Ok(plain(StatusCode::NOT_FOUND, "404 page not found")),
        },
    }
}

/// `containerLogs/{namespace}/{pod}/{container}` of node `node`: the container's log with the
/// pod log options as query parameters (`follow`, `tailLines`, ...), what `kubectl logs` shows;
/// errors in plain text, as a kubelet answers them.
fn container_logs(state: &ApiState, node: &str, path: &str, query: Option<&str>) -> Response {
    let mut parts = path.splitn(3, '/');
    let (Some(namespace), Some(pod_name), Some(container)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return plain(StatusCode::NOT_FOUND, "404 page not found");
    };
    if [namespace, pod_name, container].iter().any(|part| part.is_empty()) {
        return plain(StatusCode::NOT_FOUND, "404 page not found");
    }
    let pods = builtin_resource("", "pods").expect("pods are built in");
    let key = object_key(pods, namespace, pod_name);
    let pod = stored_core::<Pod>(state, "pods", namespace, pod_name)
        .ok()
        .filter(|pod| pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node));
    let Some(pod) = pod else {
        return plain(StatusCode::NOT_FOUND, &format!("pod {pod_name:?} does not exist"));
    };
    if !declared_containers(&pod).contains(&container) {
        let why = format!("container {container:?} not found in pod {pod_name:?}");
        return plain(StatusCode::NOT_FOUND, &why);
    }
    let params: HashMap<String, String> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect();
    container_log(state, key, &pod, container.to_owned(), &params)
        .unwrap_or_else(|error| plain(error.code, &error.message))
}

/// A plain text answer, as the kubelet gives for health and errors.
fn plain(status: StatusCode, text: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{text}\n"))
        .into_response()
}

/// Whether the node's `Ready` condition is `True`.
fn is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref());
    conditions.unwrap_or_default().iter().any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The stored pods bound to node `name`.
fn bound_to(state: &ApiState, name: &str) -> Vec<Arc<Value>> {
    let pods = stored(state, "pods", None);
    pods.into_iter()
        .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(name))
        .collect()
}

/// The kubelet's Summary API (`stats/v1alpha1`), as far as CPU and memory go.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    node: NodeStats,
    pods: Vec<PodStats>,
}

/// The node's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeStats {
    node_name: String,
    #[serde(flatten)]
    figures: Figures,
}

/// A pod's figures, its containers' together, and each container's.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PodStats {
    pod_ref: PodReference,
    containers: Vec<ContainerStats>,
    #[serde(flatten)]
    figures: Figures,
}

#[derive(Debug, Serialize)]
struct PodReference {
    name: String,
    namespace: String,
    uid: String,
}

#[derive(Debug, Serialize)]
struct ContainerStats {
    name: String,
    #[serde(flatten)]
    figures: Figures,
}

/// When a node, pod or container started, and what it uses.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    #[serde(skip_serializing_if = "Option::is_none")]
    start_time: Option<Time>,
    cpu: CpuStats,
    memory: MemoryStats,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CpuStats {
    time: Time,
    usage_nano_cores: u64,
    usage_core_nano_seconds: u64,
}

/// Memory in use: what the machine measures is resident memory, which stands for the working
/// set and the usage alike.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct MemoryStats {
    time: Time,
    usage_bytes: u64,
    working_set_bytes: u64,
    rss_bytes: u64,
}

/// The summary of `node` over a window of the machine's usage ending now.
async fn measure(state: &ApiState, node: &Node) -> Summary {
    let window = state.usage.window().await;
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let machine = (name == host_node().name).then(|| window.machine());
    let pods = bound_to(state, name);
    summary(node, &pods, Time(window.timestamp()), machine, |pod| container_usage(pod, &window))
}

/// The summary of `node` with `pods` (those bound to it) at `time`: the node, and each running
/// pod whose every container was measured (`containers_of` it), as metrics-server leaves out
/// the others. The node uses what the `machine` does when it is this machine's node, else what
/// those pods use.
fn summary(
    node: &Node,
    pods: &[Arc<Value>],
    time: Time,
    machine: Option<Usage>,
    containers_of: impl Fn(&Value) -> Option<Vec<(String, Usage)>>,
) -> Summary {
    let figures = |start_time: Option<Time>, usage: &Usage| Figures {
        start_time,
        cpu: CpuStats {
            time: time.clone(),
            usage_nano_cores: usage.nanocores,
            usage_core_nano_seconds: usage.cpu_nanoseconds,
        },
        memory: MemoryStats {
            time: time.clone(),
            usage_bytes: usage.memory,
            working_set_bytes: usage.memory,
            rss_bytes: usage.memory,
        },
    };
    let mut pods_total = Usage::default();
    let pods = pods.iter().filter_map(|pod| {
        let containers = containers_of(pod)?;
        let total = containers.iter().fold(Usage::default(), |total, (_, usage)| total + *usage);
        pods_total = pods_total + total;
        let containers = containers
            .iter()
            .map(|(name, usage)| ContainerStats {
                name: name.clone(),
                figures: figures(container_started(pod, name), usage),
            })
            .collect();
        let text = |field| meta_str(pod, field).unwrap_or_default().to_owned();
        Some(PodStats {
            pod_ref: PodReference {
                name: text("name"),
                namespace: text("namespace"),
                uid: text("uid"),
            },
            containers,
            figures: figures(time_at(pod, "/status/startTime"), &total),
        })
    });
    let pods = pods.collect();
    Summary {
        node: NodeStats {
            node_name: node.metadata.name.clone().unwrap_or_default(),
            figures: figures(
                node.metadata.creation_timestamp.clone(),
                &machine.unwrap_or(pods_total),
            ),
        },
        pods,
    }
}

/// When container `name` of `pod` started running.
fn container_started(pod: &Value, name: &str) -> Option<Time> {
    let statuses = pod.pointer("/status/containerStatuses")?.as_array()?;
    let status = statuses.iter().find(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
    time_at(status, "/state/running/startedAt")
}

fn time_at(object: &Value, pointer: &str) -> Option<Time> {
    Time::deserialize(object.pointer(pointer)?).ok()
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContainerLabels {
    container: String,
    namespace: String,
    pod: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PodLabels {
    namespace: String,
    pod: String,
}

type Seconds = Counter<f64, AtomicU64>;
type Figure = Gauge<f64, AtomicU64>;

/// The kubelet's resource metrics (`/metrics/resource`) from `summary`, as Prometheus text.
fn resource_metrics(summary: &Summary) -> String {
    let seconds = |nanos: u64| nanos as f64 / 1e9;
    let mut registry = Registry::default();
    let node_cpu = Seconds::default();
    node_cpu.inc_by(seconds(summary.node.figures.cpu.usage_core_nano_seconds));
    registry.register(
        "node_cpu_usage_seconds",
        "CPU time the node has used, in core-seconds",
        node_cpu,
    );
    let node_memory = Figure::default();
    node_memory.set(summary.node.figures.memory.working_set_bytes as f64);
    registry.register(
        "node_memory_working_set_bytes",
        "Memory the node has in use now, in bytes",
        node_memory,
    );

    let pod_cpu = Family::<PodLabels, Seconds>::default();
    let pod_memory = Family::<PodLabels, Figure>::default();
    let container_cpu = Family::<ContainerLabels, Seconds>::default();
    let container_memory = Family::<ContainerLabels, Figure>::default();
    let container_start = Family::<ContainerLabels, Figure>::default();
    for pod in &summary.pods {
        let labels =
            PodLabels { namespace: pod.pod_ref.namespace.clone(), pod: pod.pod_ref.name.clone() };
        pod_cpu.get_or_create(&labels).inc_by(seconds(pod.figures.cpu.usage_core_nano_seconds));
        pod_memory.get_or_create(&labels).set(pod.figures.memory.working_set_bytes as f64);
        for container in &pod.containers {
            let labels = ContainerLabels {
                container: container.name.clone(),
                namespace: pod.pod_ref.namespace.clone(),
                pod: pod.pod_ref.name.clone(),
            };
            container_cpu
                .get_or_create(&labels)
                .inc_by(seconds(container.figures.cpu.usage_core_nano_seconds));
            container_memory
                .get_or_create(&labels)
                .set(container.figures.memory.working_set_bytes as f64);
            if let Some(started) = &container.figures.start_time {
                let at = started.0.as_millisecond() as f64 / 1e3;
                container_start.get_or_create(&labels).set(at);
            }
        }
    }
    registry.register(
        "container_cpu_usage_seconds",
        "CPU time the container has used, in core-seconds",
        container_cpu,
    );
    registry.register(
        "container_memory_working_set_bytes",
        "Memory the container has in use now, in bytes",
        container_memory,
    );
    registry.register(
        "container_start_time_seconds",
        "When the container started running, in seconds since 1970",
        container_start,
    );
    registry.register(
        "pod_cpu_usage_seconds",
        "CPU time the pod's containers have used, in core-seconds",
        pod_cpu,
    );
    registry.register(
        "pod_memory_working_set_bytes",
        "Memory the pod's containers have in use now, in bytes",
        pod_memory,
    );
    registry.register(
        "resource_scrape_error",
        "Whether measuring the containers failed (never: the figures come from /proc)",
        Figure::default(),
    );
    encode(&registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n1", "creationTimestamp": "2026-11-28T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .unwrap()
    }

    fn pod(name: &str, phase: &str) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
            "status": {"phase": phase, "startTime": "2026-11-28T01:00:00Z", "containerStatuses": [
                {"name": "main", "state": {"running": {"startedAt": "2026-11-28T01:00:02Z"}}},
            ]},
        }))
    }

    fn measured() -> Summary {
        let time: Time = serde_json::from_value(json!("2026-11-28T02:00:00Z")).unwrap();
        let used =
            Usage { nanocores: 500_000_000, memory: 1 << 30, cpu_nanoseconds: 90_000_000_000 };
        let pods = [pod("web", "Running"), pod("done", "Succeeded")];
        let main = Usage { nanocores: 2_000_000, memory: 4 << 20, cpu_nanoseconds: 1_500_000_000 };
        // As the metrics API, a pod not running has no measured containers.
        let containers_of = |pod: &Value| {
            (pod.pointer("/status/phase") == Some(&json!("Running")))
                .then(|| vec![("main".to_owned(), main)])
        };
        summary(&node("True"), &pods, time, Some(used), containers_of)
    }

    #[test]
    fn only_a_ready_node_has_a_kubelet_answering() {
        assert!(is_ready(&node("True")));
        assert!(!is_ready(&node("Unknown")));
        assert!(!is_ready(&Node::default()));
    }

    #[test]
    fn the_summary_shows_the_node_and_its_measured_pods_in_the_kubelets_shape() {
        let at = "2026-11-28T02:00:00Z";
        let memory = |bytes: u64| json!({"time": at, "usageBytes": bytes, "workingSetBytes": bytes, "rssBytes": bytes});
        let cpu = |cores: u64, total: u64| json!({"time": at, "usageNanoCores": cores, "usageCoreNanoSeconds": total});
        assert_eq!(
            serde_json::to_value(measured()).unwrap(),
            json!({
                "node": {
                    "nodeName": "n1",
                    "startTime": "2026-11-28T00:00:00Z",
                    "cpu": cpu(500_000_000, 90_000_000_000),
                    "memory": memory(1 << 30),
                },
                "pods": [{
                    "podRef": {"name": "web", "namespace": "ns", "uid": "uid-web"},
                    "startTime": "2026-11-28T01:00:00Z",
                    "containers": [{
                        "name": "main",
                        "startTime": "2026-11-28T01:00:02Z",
                        "cpu": cpu(2_000_000, 1_500_000_000),
                        "memory": memory(4 << 20),
                    }],
                    "cpu": cpu(2_000_000, 1_500_000_000),
                    "memory": memory(4 << 20),
                }],
            })
        );
    }

    #[test]
    fn another_node_than_the_machines_uses_what_its_measured_pods_use() {
        let time: Time = serde_json::from_value(json!("2026-11-28T02:00:00Z")).unwrap();
        let main = Usage { nanocores: 2_000_000, memory: 4 << 20, cpu_nanoseconds: 1_500_000_000 };
        let pods = [pod("a", "Running"), pod("b", "Running")];
        let summary =
            summary(&node("True"), &pods, time, None, |_| Some(vec![("main".to_owned(), main)]));
        let node = serde_json::to_value(&summary.node).unwrap();
        assert_eq!(node["cpu"]["usageNanoCores"], 4_000_000);
        assert_eq!(node["memory"]["workingSetBytes"], 8 << 20);
    }

    #[test]
    fn resource_metrics_name_the_figures_as_the_kubelet_does() {
        let text = resource_metrics(&measured());
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        for expected in [
            "node_cpu_usage_seconds_total 90.0",
            "node_memory_working_set_bytes 1073741824.0",
            r#"container_cpu_usage_seconds_total{container="main",namespace="ns",pod="web"} 1.5"#,
            r#"container_memory_working_set_bytes{container="main",namespace="ns",pod="web"} 4194304.0"#,
            r#"container_start_time_seconds{container="main",namespace="ns",pod="web"} 1795827602.0"#,
            r#"pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 1.5"#,
            r#"pod_memory_working_set_bytes{namespace="ns",pod="web"} 4194304.0"#,
            "resource_scrape_error 0.0",
        ] {
            assert!(lines.contains(&expected), "{expected} missing from:\n{text}");
        }
        assert!(!text.contains("pod=\"done\""), "a pod not running is not measured");
    }
}
