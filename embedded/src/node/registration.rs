//! Node registration and heartbeats: the configured nodes are applied at start, and every node
//! (also one created later with kubectl) is kept `Ready` with heartbeats and a Lease in
//! `kube-node-lease`, as kubelets do.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{EventSource, Namespace, Node, NodeStatus, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::config::{self, NodeConfig};
use super::events::{EventLog, EventNote};

/// The namespace of node Leases.
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How often Leases are renewed (as kubelets do).
const LEASE_RENEWAL: Duration = Duration::from_secs(10);
/// How old a node's heartbeat may get before its conditions are posted again.
const HEARTBEAT_AGE: jiff::SignedDuration = jiff::SignedDuration::from_secs(40);
/// Field manager of the node's own writes.
const MANAGER: &str = "keelson-node";

/// Applies each configured node: labels, annotations and taints, then its status.
pub async fn register(client: &Client, nodes: &[NodeConfig]) -> Result<(), kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let lease_namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        ..Namespace::default()
    };
    match namespaces.create(&PostParams::default(), &lease_namespace).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    let api: Api<Node> = Api::all(client.clone());
    for config in nodes {
        let node = config.to_node(Timestamp::now());
        let applied = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": config.name, "labels": node.metadata.labels, "annotations": node.metadata.annotations },
            "spec": node.spec,
        });
        api.patch(&config.name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(applied))
            .await?;
        let status = json!({ "status": node.status });
        api.patch_status(&config.name, &PatchParams::default(), &Patch::Merge(status)).await?;
    }
    Ok(())
}

/// Keeps every node's conditions and Lease fresh until the task is aborted, and records the
/// node events a kubelet and the node controller record (see [`node_events`]).
pub async fn heartbeats(client: Client, events: EventLog) {
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let mut changes = watcher(nodes.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut tick = tokio::time::interval(LEASE_RENEWAL);
    // Whether each node seen was unschedulable, for the events of a change.
    let mut seen: HashMap<String, bool> = HashMap::new();
    loop {
        tokio::select! {
            Some(Ok(node)) = changes.next() => {
                let ready_posted = post_status(&nodes, &node).await;
                let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
                let before = seen.insert(node.name_any(), unschedulable);
                for (component, note) in node_events(&node.name_any(), before, unschedulable, ready_posted) {
                    let source = EventSource { component: Some(component.into()), host: Some(node.name_any()) };
                    events.record(&source, &node_reference(&node.name_any()), &note);
                }
            }
            _ = tick.tick() => {
                let Ok(list) = nodes.list(&Default::default()).await else { continue };
                for node in &list.items {
                    post_status(&nodes, node).await;
                    renew_lease(&leases, &node.name_any()).await;
                }
            }
        }
    }
}

/// The events of a node `name` now (un)schedulable, seen before as `before` (`None`: first
/// seen since start), whose heartbeat just made it ready (`ready_posted`): as a kubelet
/// starting records `Starting` and the node controller `RegisteredNode`; a kubelet records
/// `NodeReady` when it posts the node ready, and `NodeNotSchedulable` or `NodeSchedulable`
/// when the node is cordoned or uncordoned.
fn node_events(
    name: &str,
    before: Option<bool>,
    unschedulable: bool,
    ready_posted: bool,
) -> Vec<(&'static str, EventNote)> {
    let mut events = Vec::new();
    let status = |state: &str| format!("Node {name} status is now: {state}");
    if before.is_none() {
        events.push(("kubelet", EventNote::normal("Starting", "Starting kubelet.")));
        let registered = format!("Node {name} event: Registered Node {name} in Controller");
        events.push(("node-controller", EventNote::normal("RegisteredNode", registered)));
    }
    if ready_posted {
        events.push(("kubelet", EventNote::normal("NodeReady", status("NodeReady"))));
    }
    if before.is_some_and(|was| was != unschedulable) {
        let state = if unschedulable { "NodeNotSchedulable" } else { "NodeSchedulable" };
        events.push(("kubelet", EventNote::normal(state, status(state))));
    }
    events
}

/// The reference a kubelet's node events carry: the node, its name as uid.
fn node_reference(name: &str) -> ObjectReference {
    ObjectReference {
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid: Some(name.into()),
        ..ObjectReference::default()
    }
}

/// Posts the node's conditions (and capacity it lacks) when they are missing, not ready or
/// stale; whether that made a node that was not ready ready.
async fn post_status(api: &Api<Node>, node: &Node) -> bool {
    let Some(status) = heartbeat(node, Timestamp::now()) else { return false };
    let was_ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let patch = json!({ "status": status });
    match api.patch_status(&node.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await {
        Ok(_) => !was_ready,
        Err(error) => {
            tracing::debug!(node = %node.name_any(), %error, "posting a node's status failed");
            false
        }
    }
}

/// The status to post for `node` at `now`, or `None` while its heartbeat is fresh: healthy
/// conditions, and the host's capacity for any of cpu, memory and pods the node does not state.
fn heartbeat(node: &Node, now: Timestamp) -> Option<NodeStatus> {
    let status = node.status.clone().unwrap_or_default();
    let conditions = status.conditions.clone().unwrap_or_default();
    let fresh = conditions.iter().any(|c| {
        c.type_ == "Ready"
            && c.status == "True"
            && c.last_heartbeat_time
                .as_ref()
                .is_some_and(|t| now.duration_since(t.0) < HEARTBEAT_AGE)
    });
    let host = config::host_node().capacity;
    let mut capacity: BTreeMap<_, _> = status.capacity.clone().unwrap_or_default();
    let missing: Vec<String> =
        host.keys().filter(|k| !capacity.contains_key(*k)).cloned().collect();
    if fresh && missing.is_empty() && status.allocatable.is_some() {
        return None;
    }
    for key in missing {
        capacity.insert(key.clone(), host[&key].clone());
    }
    let mut allocatable = status.allocatable.clone().unwrap_or_default();
    for (key, value) in &capacity {
        allocatable.entry(key.clone()).or_insert_with(|| value.clone());
    }
    Some(NodeStatus {
        conditions: Some(config::ready_conditions(now, &conditions)),
        capacity: Some(capacity),
        allocatable: Some(allocatable),
        ..status
    })
}

async fn renew_lease(api: &Api<Lease>, node: &str) {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": { "name": node },
        "spec": {
            "holderIdentity": node,
            "leaseDurationSeconds": 40,
            "renewTime": MicroTime(Timestamp::now()),
        },
    });
    if let Err(error) =
        api.patch(node, &PatchParams::apply(MANAGER).force(), &Patch::Apply(lease)).await
    {
        tracing::debug!(%node, %error, "renewing a node lease failed");
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn reasons(events: &[(&str, EventNote)]) -> Vec<String> {
        events.iter().map(|(component, e)| format!("{component}/{}", e.reason)).collect()
    }

    #[test]
    fn a_node_s_events_tell_its_start_readiness_and_cordoning() {
        let first = node_events("n1", None, false, true);
        assert_eq!(
            reasons(&first),
            ["kubelet/Starting", "node-controller/RegisteredNode", "kubelet/NodeReady"]
        );
        assert_eq!(first[2].1.note, "Node n1 status is now: NodeReady");
        let cordoned = node_events("n1", Some(false), true, false);
        assert_eq!(reasons(&cordoned), ["kubelet/NodeNotSchedulable"]);
        assert_eq!(cordoned[0].1.note, "Node n1 status is now: NodeNotSchedulable");
        assert_eq!(
            reasons(&node_events("n1", Some(true), false, false)),
            ["kubelet/NodeSchedulable"]
        );
        assert!(node_events("n1", Some(true), true, false).is_empty(), "no change, no event");
    }

    #[test]
    fn a_node_created_by_hand_gets_conditions_and_the_capacity_it_lacks() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let node = Node {
            status: Some(NodeStatus {
                capacity: Some([("nvidia.com/gpu".to_owned(), Quantity("1".into()))].into()),
                ..NodeStatus::default()
            }),
            ..Node::default()
        };
        let status = heartbeat(&node, now).unwrap();
        let capacity = status.capacity.unwrap();
        assert_eq!(capacity["nvidia.com/gpu"], Quantity("1".into()), "given capacity stays");
        assert!(capacity.contains_key("cpu") && capacity.contains_key("pods"));
        assert!(status.allocatable.unwrap().contains_key("nvidia.com/gpu"));
        let ready = status.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "True");
    }

    #[test]
    fn a_fresh_heartbeat_posts_nothing_and_a_stale_one_is_renewed() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let node = Node { status: heartbeat(&Node::default(), now), ..Node::default() };
        assert!(heartbeat(&node, now + jiff::SignedDuration::from_secs(10)).is_none());
        assert!(heartbeat(&node, now + jiff::SignedDuration::from_secs(60)).is_some());
    }
}
