//! ReplicationControllers, the core/v1 forerunner of ReplicaSets, are planned as the ReplicaSet
//! they are equivalent to (as kube-controller-manager does too): an equality selector becomes
//! `matchLabels`, the plan's pods are owned by the ReplicationController, and its status comes
//! back in the ReplicationController's shape.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{
    ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::core::v1::{
    ReplicationController, ReplicationControllerCondition, ReplicationControllerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::replicaset::{ReplicaSetPlan, plan_replicaset};
use crate::node::pods;

/// What one reconcile of a ReplicationController should do: the ReplicaSet plan, with pods
/// owned by the ReplicationController and the status in its shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicationPlan {
    /// The plan of the equivalent ReplicaSet (its `status` is that ReplicaSet's).
    pub plan: ReplicaSetPlan,
    /// The ReplicationController's status to write.
    pub status: ReplicationControllerStatus,
}

/// Plans one reconcile of `rc` given the pods it controls at `now`.
pub fn plan_replication_controller(
    rc: &ReplicationController,
    pods: &[Pod],
    now: Timestamp,
) -> ReplicationPlan {
    let mut plan = plan_replicaset(&as_replicaset(rc), pods, now);
    let owner = pods::controller_reference("v1", "ReplicationController", &rc.metadata);
    for pod in &mut plan.create {
        pod.metadata.owner_references = Some(vec![owner.clone()]);
    }
    let status = status_of(&plan.status);
    ReplicationPlan { plan, status }
}

/// The ReplicaSet a ReplicationController is equivalent to.
pub fn as_replicaset(rc: &ReplicationController) -> ReplicaSet {
    let spec = rc.spec.clone().unwrap_or_default();
    ReplicaSet {
        metadata: rc.metadata.clone(),
        spec: Some(ReplicaSetSpec {
            replicas: spec.replicas,
            min_ready_seconds: spec.min_ready_seconds,
            selector: LabelSelector { match_labels: spec.selector, match_expressions: None },
            template: spec.template,
        }),
        status: rc.status.as_ref().map(|s| ReplicaSetStatus {
            replicas: s.replicas,
            fully_labeled_replicas: s.fully_labeled_replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            terminating_replicas: None,
            observed_generation: s.observed_generation,
            conditions: s.conditions.as_ref().map(|conditions| {
                conditions
                    .iter()
                    .map(|c| ReplicaSetCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                        last_transition_time: c.last_transition_time.clone(),
                    })
                    .collect()
            }),
        }),
    }
}

/// A ReplicaSet's status in a ReplicationController's shape (which has no terminating count).
fn status_of(status: &ReplicaSetStatus) -> ReplicationControllerStatus {
    ReplicationControllerStatus {
        replicas: status.replicas,
        fully_labeled_replicas: status.fully_labeled_replicas,
        ready_replicas: status.ready_replicas,
        available_replicas: status.available_replicas,
        observed_generation: status.observed_generation,
        conditions: status.conditions.as_ref().map(|conditions| {
            conditions
                .iter()
                .map(|c| ReplicationControllerCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                    last_transition_time: c.last_transition_time.clone(),
                })
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec, ReplicationControllerSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn rc(replicas: i32) -> ReplicationController {
        let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
        ReplicationController {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("rc-uid".into()),
                generation: Some(2),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicationControllerSpec {
                replicas: Some(replicas),
                selector: Some(labels.clone()),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels), ..Default::default() }),
                    spec: Some(PodSpec::default()),
                }),
                ..ReplicationControllerSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn pods_are_made_for_the_replication_controller_and_owned_by_it() {
        let planned = plan_replication_controller(&rc(2), &[], Timestamp::UNIX_EPOCH);
        assert_eq!(planned.plan.create.len(), 2);
        let owner = &planned.plan.create[0].metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.api_version.as_str(), owner.kind.as_str(), owner.uid.as_str()),
            ("v1", "ReplicationController", "rc-uid")
        );
        assert_eq!(planned.plan.create[0].metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(planned.status.replicas, 0);
        assert_eq!(planned.status.observed_generation, Some(2));
    }

    #[test]
    fn the_equality_selector_becomes_match_labels() {
        let rs = as_replicaset(&rc(1));
        assert_eq!(
            rs.spec.unwrap().selector.match_labels.unwrap().get("app").map(String::as_str),
            Some("web")
        );
    }
}
