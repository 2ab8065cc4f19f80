//! The ReplicaSet controller's planner: keep `spec.replicas` active pods, pick which pods go
//! first on scale-down as upstream does, and compute the status.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;

use super::plan::nonzero;
use crate::node::events::EventNote;
use crate::node::pods;

/// The most pods one reconcile creates or deletes (upstream's `burstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// What one reconcile of a ReplicaSet should do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaSetPlan {
    /// Pods to create (each with a generated name `<rs>-…` and the ReplicaSet as controller).
    pub create: Vec<Pod>,
    /// Names of pods to delete, the best candidates for scale-down first.
    pub delete: Vec<String>,
    /// The status to write, computed from the pods as they are now.
    pub status: ReplicaSetStatus,
    /// When to reconcile again without a change: when a ready pod will turn available
    /// because its `minReadySeconds` have elapsed.
    pub requeue_after: Option<Duration>,
    /// Events beyond the per-pod `SuccessfulCreate`/`SuccessfulDelete` the controller
    /// records itself (none so far).
    pub events: Vec<EventNote>,
}

/// Plans one reconcile of `rs` given the pods it controls (in any state) at `now`.
///
/// Terminal and terminating pods do not count, so a pod being deleted is replaced once and
/// never deleted twice. A ReplicaSet that is itself being deleted only gets its status.
pub fn plan_replicaset(rs: &ReplicaSet, pods: &[Pod], now: Timestamp) -> ReplicaSetPlan {
    let active: Vec<&Pod> = pods.iter().filter(|pod| pods::is_active(pod)).collect();
    let desired = usize::try_from(desired_replicas(rs)).unwrap_or(0);
    let mut plan = ReplicaSetPlan {
        status: status(rs, &active, pods, now),
        requeue_after: next_availability(rs, &active, now),
        ..ReplicaSetPlan::default()
    };
    if rs.metadata.deletion_timestamp.is_some() {
        return plan;
    }
    if active.len() < desired {
        plan.create = new_pods(rs, (desired - active.len()).min(BURST_REPLICAS));
    } else if active.len() > desired {
        plan.delete = pods_to_delete(&active, (active.len() - desired).min(BURST_REPLICAS));
    }
    plan
}

/// `spec.replicas`, 1 when unset.
fn desired_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0)
}

fn min_ready_seconds(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.min_ready_seconds).unwrap_or(0)
}

/// `count` pods from the template (none when the ReplicaSet has no template).
fn new_pods(rs: &ReplicaSet, count: usize) -> Vec<Pod> {
    let Some(template) = rs.spec.as_ref().and_then(|s| s.template.as_ref()) else {
        return Vec::new();
    };
    let name = rs.metadata.name.as_deref().unwrap_or_default();
    let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
    let owner = pods::controller_reference("apps/v1", "ReplicaSet", &rs.metadata);
    let generate_name = format!("{name}-");
    (0..count)
        .map(|_| {
            pods::pod_from_template(
                template,
                namespace,
                &generate_name,
                owner.clone(),
                &BTreeMap::new(),
            )
        })
        .collect()
}

/// The names of the `count` active pods upstream would delete first.
fn pods_to_delete(active: &[&Pod], count: usize) -> Vec<String> {
    let mut ranked = active.to_vec();
    pods::sort_for_deletion(&mut ranked);
    ranked.into_iter().take(count).filter_map(|pod| pod.metadata.name.clone()).collect()
}

/// Upstream's status: counts over active pods, conditions carried over (the reconciler, which
/// sees API errors, owns `ReplicaFailure`), and `terminatingReplicas` for pods being deleted.
fn status(rs: &ReplicaSet, active: &[&Pod], all: &[Pod], now: Timestamp) -> ReplicaSetStatus {
    let template_labels = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let min_ready = min_ready_seconds(rs);
    let count = |keep: &dyn Fn(&Pod) -> bool| {
        i32::try_from(active.iter().filter(|pod| keep(pod)).count()).unwrap_or(i32::MAX)
    };
    let terminating = all.iter().filter(|pod| pods::is_deleting(pod) && !pods::is_terminal(pod));
    ReplicaSetStatus {
        replicas: count(&|_| true),
        fully_labeled_replicas: nonzero(count(&|pod| has_labels(pod, &template_labels))),
        ready_replicas: nonzero(count(&pods::is_ready)),
        available_replicas: nonzero(count(&|pod| pods::is_available(pod, min_ready, now))),
        terminating_replicas: nonzero(i32::try_from(terminating.count()).unwrap_or(i32::MAX)),
        observed_generation: rs.metadata.generation,
        conditions: rs.status.as_ref().and_then(|s| s.conditions.clone()),
    }
}

fn has_labels(pod: &Pod, wanted: &BTreeMap<String, String>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    wanted.iter().all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

/// How long until the first ready, not yet available pod becomes available.
fn next_availability(rs: &ReplicaSet, active: &[&Pod], now: Timestamp) -> Option<Duration> {
    let min_ready = min_ready_seconds(rs);
    if min_ready <= 0 {
        return None;
    }
    active
        .iter()
        .filter(|pod| !pods::is_available(pod, min_ready, now))
        .filter_map(|pod| pods::ready_since(pod))
        .map(|since| since.saturating_add(SignedDuration::from_secs(i64::from(min_ready))))
        .filter_map(|at| at.ok())
        .min()
        .and_then(|at| Duration::try_from(now.duration_until(at)).ok())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{
        ContainerStatus, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn labels() -> BTreeMap<String, String> {
        [("app".to_owned(), "web".to_owned())].into()
    }

    fn replicaset(replicas: i32, min_ready_seconds: i32) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("web-abc".into()),
                namespace: Some("ns".into()),
                uid: Some("rs-uid".into()),
                generation: Some(4),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: Some(min_ready_seconds),
                selector: LabelSelector { match_labels: Some(labels()), ..Default::default() },
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels()), ..Default::default() }),
                    spec: Some(PodSpec::default()),
                }),
            }),
            status: None,
        }
    }

    /// A pod in `phase`, on `node` when given, created at `created`, ready since `ready`.
    fn pod(name: &str, phase: &str, node: Option<&str>, created: i64, ready: Option<i64>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels()),
                creation_timestamp: Some(Time(t(created))),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec { node_name: node.map(Into::into), ..PodSpec::default() }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: ready.map(|since| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(t(since))),
                        ..PodCondition::default()
                    }]
                }),
                ..PodStatus::default()
            }),
        }
    }

    fn running(name: &str, created: i64, ready: i64) -> Pod {
        pod(name, "Running", Some("node"), created, Some(ready))
    }

    fn with_restarts(mut pod: Pod, restarts: i32) -> Pod {
        let status = pod.status.get_or_insert_with(Default::default);
        status.container_statuses =
            Some(vec![ContainerStatus { restart_count: restarts, ..ContainerStatus::default() }]);
        pod
    }

    fn deleting(mut pod: Pod) -> Pod {
        pod.metadata.deletion_timestamp = Some(Time(t(50)));
        pod
    }

    #[test]
    fn scaling_up_creates_the_missing_pods_from_the_template() {
        let rs = replicaset(3, 0);
        let plan = plan_replicaset(&rs, &[running("a", 0, 1)], t(100));
        assert_eq!(plan.create.len(), 2);
        assert!(plan.delete.is_empty());
        for pod in &plan.create {
            assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-abc-"));
            assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
            assert_eq!(pod.metadata.labels.as_ref(), Some(&labels()));
            assert!(pods::is_controlled_by(&pod.metadata, "rs-uid"));
        }
        assert_eq!(plan.status.replicas, 1);
    }

    #[test]
    fn unset_replicas_means_one() {
        let mut rs = replicaset(0, 0);
        rs.spec.as_mut().unwrap().replicas = None;
        assert_eq!(plan_replicaset(&rs, &[], t(0)).create.len(), 1);
    }

    #[test]
    fn creations_per_reconcile_are_capped_at_the_burst() {
        let plan = plan_replicaset(&replicaset(800, 0), &[], t(0));
        assert_eq!(plan.create.len(), BURST_REPLICAS);
    }

    #[test]
    fn terminating_pods_are_not_counted_and_replaced_only_once() {
        let rs = replicaset(2, 0);
        let pods = [running("a", 0, 1), deleting(running("b", 0, 1))];
        let plan = plan_replicaset(&rs, &pods, t(100));
        assert_eq!(plan.create.len(), 1);
        assert!(plan.delete.is_empty());
        assert_eq!(plan.status.replicas, 1);
        assert_eq!(plan.status.terminating_replicas, Some(1));

        // Next reconcile: the replacement is listed, the terminating pod still is too.
        let pods =
            [running("a", 0, 1), deleting(running("b", 0, 1)), pod("c", "Pending", None, 99, None)];
        let plan = plan_replicaset(&rs, &pods, t(100));
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.status.replicas, 2);
    }

    #[test]
    fn finished_pods_are_replaced_but_left_alone() {
        let rs = replicaset(1, 0);
        let plan = plan_replicaset(&rs, &[pod("done", "Failed", Some("node"), 0, None)], t(9));
        assert_eq!(plan.create.len(), 1);
        assert!(plan.delete.is_empty());
        assert_eq!(plan.status.replicas, 0);
    }

    #[test]
    fn scale_down_deletes_the_least_useful_pods_first() {
        let pods = [
            running("old-ready", 0, 10),
            running("recently-ready", 0, 80),
            pod("running-unready", "Running", Some("node"), 0, None),
            pod("pending-assigned", "Pending", Some("node"), 0, None),
            pod("unknown", "Unknown", Some("node"), 0, None),
            pod("unassigned", "Pending", None, 0, None),
        ];
        let plan = plan_replicaset(&replicaset(0, 0), &pods, t(100));
        assert_eq!(
            plan.delete,
            [
                "unassigned",
                "pending-assigned",
                "unknown",
                "running-unready",
                "recently-ready",
                "old-ready"
            ]
        );
    }

    #[test]
    fn scale_down_prefers_restarting_then_newer_pods() {
        let pods = [
            running("older", 0, 10),
            running("newer", 5, 10),
            with_restarts(running("restarting", 0, 10), 3),
        ];
        let plan = plan_replicaset(&replicaset(1, 0), &pods, t(100));
        assert_eq!(plan.delete, ["restarting", "newer"]);
    }

    #[test]
    fn scale_down_honours_the_pod_deletion_cost() {
        let mut cheap = running("cheap", 0, 10);
        cheap.metadata.annotations =
            Some([(pods::DELETION_COST_ANNOTATION.to_owned(), "-5".to_owned())].into());
        let pods = [running("recent", 0, 90), cheap];
        let plan = plan_replicaset(&replicaset(1, 0), &pods, t(100));
        assert_eq!(plan.delete, ["cheap"]);
    }

    #[test]
    fn status_counts_labels_readiness_and_availability() {
        let mut stray = running("stray", 0, 10);
        stray.metadata.labels = Some([("other".to_owned(), "x".to_owned())].into());
        let pods = [
            running("long-ready", 0, 10),
            running("just-ready", 0, 95),
            pod("starting", "Pending", Some("node"), 0, None),
            stray,
            pod("failed", "Failed", Some("node"), 0, None),
        ];
        let plan = plan_replicaset(&replicaset(4, 30), &pods, t(100));
        let status = &plan.status;
        assert_eq!(status.replicas, 4);
        assert_eq!(status.fully_labeled_replicas, Some(3));
        assert_eq!(status.ready_replicas, Some(3));
        assert_eq!(status.available_replicas, Some(2));
        assert_eq!(status.observed_generation, Some(4));
        // `just-ready` turns available 30s after t(95).
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(25)));
    }

    #[test]
    fn no_requeue_without_min_ready_seconds() {
        let plan = plan_replicaset(&replicaset(1, 0), &[running("a", 0, 99)], t(100));
        assert_eq!(plan.requeue_after, None);
        assert_eq!(plan.status.available_replicas, Some(1));
    }

    #[test]
    fn a_replicaset_being_deleted_only_reports_status() {
        let mut rs = replicaset(3, 0);
        rs.metadata.deletion_timestamp = Some(Time(t(0)));
        let plan = plan_replicaset(&rs, &[running("a", 0, 1)], t(100));
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.status.replicas, 1);
    }
}
