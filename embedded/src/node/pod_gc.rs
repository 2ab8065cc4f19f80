//! Pods bound to a node that does not exist, collected as kube-controller-manager's pod garbage
//! collector collects them: once the node has been missing for a quarantine (upstream's 40 s,
//! so that a node being re-registered keeps its pods), the pod is marked `Failed` with a
//! `DisruptionTarget` condition (`DeletionByPodGC`) and deleted at once. The workload that owns
//! it then replaces it on a node that exists.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::reflector::Store;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::pod_status;
use super::pods::{is_terminal, node_name};

/// What a pass decided: the pods to collect now, and when the next one is due.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Namespace, name and uid of each pod to collect.
    pub(crate) collect: Vec<(String, String, String)>,
    /// When the earliest pod still in quarantine leaves it.
    pub(crate) next: Option<Timestamp>,
}

/// Decides which pods go at `now`: those bound to a node not among `nodes` since `quarantine`
/// ago or longer. `orphaned` keeps, per pod uid, when its node was first seen missing; it is
/// brought up to date.
pub(crate) fn plan(
    nodes: &HashSet<&str>,
    pods: &[Arc<Pod>],
    orphaned: &mut HashMap<String, Timestamp>,
    now: Timestamp,
    quarantine: Duration,
) -> Plan {
    let quarantine = SignedDuration::try_from(quarantine).unwrap_or(SignedDuration::MAX);
    let mut plan = Plan::default();
    let mut seen = HashSet::new();
    for pod in pods {
        let Some(node) = node_name(pod) else { continue };
        let Some(uid) = pod.metadata.uid.as_deref() else { continue };
        if nodes.contains(node) {
            continue;
        }
        seen.insert(uid);
        let due = *orphaned.entry(uid.to_owned()).or_insert(now) + quarantine;
        if due <= now {
            let meta = &pod.metadata;
            let namespace = meta.namespace.clone().unwrap_or_default();
            plan.collect.push((namespace, pod.name_any(), uid.to_owned()));
        } else {
            plan.next = Some(plan.next.map_or(due, |next| next.min(due)));
        }
    }
    orphaned.retain(|uid, _| seen.contains(uid.as_str()));
    plan
}

/// One pass: collects the pods whose quarantine is over and says when to look again.
pub(super) async fn pass(
    client: &Client,
    pods: &Store<Pod>,
    nodes: &Store<Node>,
    orphaned: &mut HashMap<String, Timestamp>,
    quarantine: Duration,
) -> Option<Timestamp> {
    let node_list = nodes.state();
    let names: HashSet<&str> =
        node_list.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    let plan = plan(&names, &pods.state(), orphaned, Timestamp::now(), quarantine);
    for (namespace, name, uid) in plan.collect {
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        if let Err(error) = collect(&api, &name, &uid).await {
            tracing::debug!(%error, pod = %name, "collecting a pod of a missing node failed");
        }
    }
    plan.next
}

/// Marks the pod failed by the collector, as upstream does before it deletes, then deletes it
/// without a grace period (no kubelet is there to stop it).
async fn collect(api: &Api<Pod>, name: &str, uid: &str) -> Result<(), kube::Error> {
    let change = |pod: &Pod| {
        let message = "PodGC: node no longer exists".to_owned();
        let conditions = pod_status::with_disruption_target(pod, "DeletionByPodGC", message);
        let mut status = json!({ "conditions": conditions });
        if !is_terminal(pod) {
            status["phase"] = json!("Failed");
        }
        Some(status)
    };
    pod_status::update(api, name, Some(uid), change).await?;
    let preconditions = Preconditions { uid: Some(uid.to_owned()), resource_version: None };
    let params = DeleteParams {
        preconditions: Some(preconditions),
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        // Gone or replaced meanwhile: nothing to collect.
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::node::taint_eviction::tests::t;

    fn pod(name: &str, node: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(PodSpec { node_name: node.map(str::to_owned), ..Default::default() }),
            ..Default::default()
        })
    }

    fn collected(plan: &Plan) -> Vec<&str> {
        plan.collect.iter().map(|(_, name, _)| name.as_str()).collect()
    }

    #[test]
    fn a_pod_of_a_missing_node_is_collected_after_the_quarantine() {
        let nodes = HashSet::from(["here"]);
        let pods = [pod("kept", Some("here")), pod("orphan", Some("gone")), pod("pending", None)];
        let mut orphaned = HashMap::new();
        let quarantine = Duration::from_secs(40);
        let first = plan(&nodes, &pods, &mut orphaned, t(0), quarantine);
        assert_eq!((collected(&first), first.next), (vec![], Some(t(40))));
        let waiting = plan(&nodes, &pods, &mut orphaned, t(39), quarantine);
        assert_eq!(collected(&waiting), Vec::<&str>::new());
        assert_eq!(collected(&plan(&nodes, &pods, &mut orphaned, t(40), quarantine)), ["orphan"]);
    }

    #[test]
    fn a_node_that_comes_back_ends_the_quarantine() {
        let pods = [pod("orphan", Some("flaky"))];
        let mut orphaned = HashMap::new();
        let quarantine = Duration::from_secs(40);
        plan(&HashSet::new(), &pods, &mut orphaned, t(0), quarantine);
        let back = plan(&HashSet::from(["flaky"]), &pods, &mut orphaned, t(30), quarantine);
        assert_eq!((back, orphaned.len()), (Plan::default(), 0));
        // Missing again: the quarantine starts over.
        let again = plan(&HashSet::new(), &pods, &mut orphaned, t(50), quarantine);
        assert_eq!((collected(&again), again.next), (vec![], Some(t(90))));
    }
}
