//! `NoExecute` taints, acted on as kube-controller-manager's taint eviction controller does: a
//! pod bound to a node with a `NoExecute` taint it does not tolerate is deleted at once, and one
//! that tolerates every such taint, some only for `tolerationSeconds`, is deleted when the
//! shortest of those has passed since the taint was added (its `timeAdded`, else when this
//! controller first saw it).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EventSource, Node, Pod, Taint};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::reflector::Store;
use kube::{Api, Client, Resource, ResourceExt};

use super::events::{EventLog, EventNote};
use super::pods::{is_deleting, is_terminal, node_name};
use super::scheduler::toleration_matches;

/// A `NoExecute` taint of a node, by node name, key and value.
pub(super) type TaintId = (String, String, String);

/// What a pass decided: the pods to delete now, and when the next one is due.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Namespace, name and uid of each pod to evict.
    pub(crate) evict: Vec<(String, String, String)>,
    /// The earliest time a tolerated taint's time runs out.
    pub(crate) next: Option<Timestamp>,
}

/// Decides which pods go, from the nodes and pods as they are at `now`; `since` says when each
/// taint without `timeAdded` was first seen.
pub(crate) fn plan(
    nodes: &[Arc<Node>],
    pods: &[Arc<Pod>],
    since: &HashMap<TaintId, Timestamp>,
    now: Timestamp,
) -> Plan {
    let taints: HashMap<&str, Vec<&Taint>> = nodes
        .iter()
        .filter_map(|node| {
            let taints = node.spec.as_ref()?.taints.as_ref()?;
            let no_execute: Vec<&Taint> =
                taints.iter().filter(|t| t.effect == "NoExecute").collect();
            Some((node.metadata.name.as_deref()?, no_execute)).filter(|(_, t)| !t.is_empty())
        })
        .collect();
    let mut plan = Plan::default();
    for pod in pods.iter().filter(|p| !is_terminal(p) && !is_deleting(p)) {
        let Some(node) = node_name(pod) else { continue };
        let Some(node_taints) = taints.get(node) else { continue };
        let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.as_deref()).unwrap_or(&[]);
        let mut due: Option<Timestamp> = None;
        let mut now_due = false;
        for taint in node_taints {
            let matching: Vec<_> =
                tolerations.iter().filter(|t| toleration_matches(t, taint)).collect();
            if matching.is_empty() {
                now_due = true;
                break;
            }
            // Tolerated for the shortest time a matching toleration gives; forever when none
            // gives one (upstream's `getMinTolerationTime`).
            let Some(seconds) = matching.iter().filter_map(|t| t.toleration_seconds).min() else {
                continue;
            };
            let id = (node.to_owned(), taint.key.clone(), taint.value.clone().unwrap_or_default());
            let added = taint.time_added.as_ref().map(|t| t.0).or_else(|| since.get(&id).copied());
            let deadline = added.unwrap_or(now) + SignedDuration::from_secs(seconds.max(0));
            due = Some(due.map_or(deadline, |d| d.min(deadline)));
        }
        match due {
            _ if now_due => {}
            Some(deadline) if deadline <= now => {}
            Some(deadline) => {
                plan.next = Some(plan.next.map_or(deadline, |n| n.min(deadline)));
                continue;
            }
            None => continue,
        }
        let meta = &pod.metadata;
        plan.evict.push((
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
            meta.uid.clone().unwrap_or_default(),
        ));
    }
    plan
}

/// The `NoExecute` taints of `nodes` that give no `timeAdded`, as identified in `since`.
fn untimed_taints(nodes: &[Arc<Node>]) -> Vec<TaintId> {
    nodes
        .iter()
        .flat_map(|node| {
            let name = node.name_any();
            let taints = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
            taints
                .into_iter()
                .filter(|t| t.effect == "NoExecute" && t.time_added.is_none())
                .map(move |t| (name.clone(), t.key, t.value.unwrap_or_default()))
        })
        .collect()
}

/// One pass: notes new untimed taints, evicts the pods that are due, and says when to look
/// again.
pub(super) async fn pass(
    client: &Client,
    events: &EventLog,
    pods: &Store<Pod>,
    nodes: &Store<Node>,
    since: &mut HashMap<TaintId, Timestamp>,
) -> Option<Timestamp> {
    let now = Timestamp::now();
    let node_list = nodes.state();
    let untimed = untimed_taints(&node_list);
    since.retain(|id, _| untimed.contains(id));
    for id in untimed {
        since.entry(id).or_insert(now);
    }
    let pod_list = pods.state();
    let plan = plan(&node_list, &pod_list, since, now);
    let source = EventSource { component: Some("taint-eviction-controller".into()), host: None };
    for (namespace, name, uid) in plan.evict {
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let preconditions = Preconditions { uid: Some(uid.clone()), resource_version: None };
        let params = DeleteParams { preconditions: Some(preconditions), ..Default::default() };
        match api.delete(&name, &params).await {
            Ok(_) => {
                if let Some(pod) = pod_list.iter().find(|p| p.metadata.uid.as_deref() == Some(&uid))
                {
                    let note = format!("Marking for deletion Pod {namespace}/{name}");
                    let event = EventNote::normal("TaintManagerEviction", note);
                    events.record(&source, &pod.object_ref(&()), &event);
                }
            }
            // Gone or replaced meanwhile: nothing to evict.
            Err(error) => tracing::debug!(%error, pod = %name, "evicting a pod failed"),
        }
    }
    plan.next
}

#[cfg(test)]
pub(super) mod tests {
    use k8s_openapi::api::core::v1::{NodeSpec, PodSpec, Toleration};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    fn node(taints: Vec<Taint>) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta { name: Some("n".into()), ..Default::default() },
            spec: Some(NodeSpec { taints: Some(taints), ..Default::default() }),
            ..Default::default()
        })
    }

    fn taint(key: &str, added: Option<Timestamp>) -> Taint {
        Taint {
            key: key.into(),
            effect: "NoExecute".into(),
            time_added: added.map(Time),
            ..Default::default()
        }
    }

    fn pod(name: &str, tolerations: Vec<Toleration>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("n".into()),
                tolerations: Some(tolerations),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn tolerating(key: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: seconds,
            ..Default::default()
        }
    }

    /// A time `seconds` after a fixed start.
    pub(in crate::node) fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn evicted(plan: &Plan) -> Vec<&str> {
        plan.evict.iter().map(|(_, name, _)| name.as_str()).collect()
    }

    #[test]
    fn an_untolerated_taint_evicts_at_once_and_a_tolerated_one_never() {
        let nodes = [node(vec![taint("maintenance", None)])];
        let pods = [
            pod("plain", vec![]),
            pod("tolerant", vec![tolerating("maintenance", None)]),
            pod("elsewhere", vec![]),
        ];
        let mut elsewhere = (*pods[2]).clone();
        elsewhere.spec.as_mut().unwrap().node_name = Some("other".into());
        let pods = [pods[0].clone(), pods[1].clone(), Arc::new(elsewhere)];
        let plan = plan(&nodes, &pods, &HashMap::new(), t(0));
        assert_eq!(evicted(&plan), ["plain"]);
        assert_eq!(plan.next, None);
    }

    #[test]
    fn a_toleration_for_a_time_evicts_once_it_has_passed_since_the_taint_was_added() {
        let pods = [pod("timed", vec![tolerating("maintenance", Some(60))])];
        let timed = [node(vec![taint("maintenance", Some(t(0)))])];
        let waiting = plan(&timed, &pods, &HashMap::new(), t(30));
        assert_eq!((evicted(&waiting), waiting.next), (vec![], Some(t(60))));
        assert_eq!(evicted(&plan(&timed, &pods, &HashMap::new(), t(60))), ["timed"]);

        // Without timeAdded, the time counts from when the taint was first seen.
        let untimed = [node(vec![taint("maintenance", None)])];
        let since = HashMap::from([(("n".into(), "maintenance".into(), String::new()), t(100))]);
        assert_eq!(plan(&untimed, &pods, &since, t(130)).next, Some(t(160)));
        assert_eq!(evicted(&plan(&untimed, &pods, &since, t(161))), ["timed"]);
    }
}
