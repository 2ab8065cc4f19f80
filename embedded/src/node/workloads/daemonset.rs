//! The DaemonSet planner: one pod per eligible node, pinned to it for the scheduler to bind,
//! replaced by revision under the `RollingUpdate` or `OnDelete` strategy, as the upstream
//! DaemonSet controller does.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, DaemonSetStatus};
use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::plan::{int_or_percent, nonzero};
use crate::node::events::EventNote;
use crate::node::pods::{
    controller_reference, is_available, is_deleting, is_ready, is_terminal, node_name, phase,
    pod_from_template, ready_since, template_hash,
};
use crate::node::scheduler::{node_mismatch_ignoring_readiness, selects_node, tolerates};

/// The label carrying the revision (template hash) a daemon pod was created from.
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// The label carrying the DaemonSet generation a daemon pod was created at.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// What a DaemonSet reconcile should do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DaemonSetPlan {
    /// Pods to create (with `generateName`), each pinned to its node by node affinity.
    pub create: Vec<Pod>,
    /// Names of pods to delete.
    pub delete: Vec<String>,
    /// The DaemonSet's status as observed before this plan.
    pub status: DaemonSetStatus,
    /// When to reconcile again: a ready pod becomes available after `minReadySeconds`.
    pub requeue_after: Option<Duration>,
    /// Events to record on the DaemonSet (`FailedDaemonPod` for failed pods).
    pub events: Vec<EventNote>,
}

/// The tolerations every daemon pod gets besides its template's, as upstream adds them: it
/// keeps running on not-ready and unreachable nodes, and is placed on nodes under pressure
/// and cordoned ones (and, with host networking, nodes whose network is unavailable).
pub fn daemon_tolerations(spec: &PodSpec) -> Vec<Toleration> {
    let exists = |key: &str, effect: &str| Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some(effect.to_owned()),
        value: None,
        toleration_seconds: None,
    };
    let mut automatic = vec![
        exists("node.kubernetes.io/not-ready", "NoExecute"),
        exists("node.kubernetes.io/unreachable", "NoExecute"),
        exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
        exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
        exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
        exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        automatic.push(exists("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    for toleration in automatic {
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
    tolerations
}

/// The node a daemon pod belongs to: its `spec.nodeName`, or else the single name its
/// required node affinity pins it to (`matchFields` `metadata.name In [node]`).
pub fn target_node(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(name);
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms.iter().flat_map(|t| t.match_fields.iter().flatten()).find_map(|field| {
        match (field.key.as_str(), field.operator.as_str(), field.values.as_deref()) {
            ("metadata.name", "In", Some([name])) => Some(name.as_str()),
            _ => None,
        }
    })
}

/// Plans a reconcile of `ds` over the cluster's `nodes`, given the pods it controls (in any
/// state).
///
/// A node is eligible when the template, with the automatic tolerations, matches its labels
/// and tolerates its `NoSchedule`/`NoExecute` taints (readiness aside). Each eligible node
/// without a pod gets one. Pods are deleted when their node is gone, no longer selected, or
/// has gained a `NoExecute` taint they do not tolerate (a new `NoSchedule` taint leaves them
/// running, counted as misscheduled); when they failed or succeeded (recreated on a later
/// reconcile); and beyond the oldest on a node. Under `RollingUpdate`, pods of an old
/// revision are replaced while at most `maxUnavailable` eligible nodes lack an available pod,
/// or, with `maxSurge`, new pods start next to old ones, which go once the new are available.
/// No node has a pod deleted and one created in the same plan.
pub fn plan_daemonset(
    ds: &DaemonSet,
    nodes: &[Node],
    pods: &[Pod],
    now: Timestamp,
) -> DaemonSetPlan {
    let daemon = Daemon::new(ds, now);
    let (states, unplaceable) = node_states(&daemon, nodes, pods);
    let mut plan = Builder::default();
    for pod in unplaceable.into_iter().filter(|p| !is_deleting(p)) {
        plan.delete(pod);
    }
    let desired = states.iter().filter(|s| s.should_run).count();
    let limits = RollingLimits::of(daemon.spec, desired);
    let surge = daemon.rolling_update && limits.max_surge > 0;
    for state in &states {
        manage(&daemon, state, surge, &mut plan);
    }
    if daemon.rolling_update {
        let considered: Vec<&NodeState> = states
            .iter()
            .filter(|s| {
                s.node.is_some() && (s.should_run || (s.should_continue && !s.pods.is_empty()))
            })
            .collect();
        if surge {
            surge_update(&daemon, &considered, desired, limits.max_surge, &mut plan);
        } else {
            replace_update(&daemon, &considered, limits.max_unavailable, &mut plan);
        }
    }
    DaemonSetPlan {
        create: plan.create.into_values().collect(),
        delete: plan.delete.into_iter().collect(),
        status: status(&daemon, &states),
        requeue_after: requeue_after(&daemon, &states),
        events: plan.events,
    }
}

/// The facts of the DaemonSet the plan works from.
struct Daemon<'a> {
    ds: &'a DaemonSet,
    spec: &'a DaemonSetSpec,
    /// The template's pod spec with the automatic tolerations.
    pod_spec: PodSpec,
    hash: String,
    min_ready_seconds: i32,
    rolling_update: bool,
    now: Timestamp,
}

impl<'a> Daemon<'a> {
    fn new(ds: &'a DaemonSet, now: Timestamp) -> Self {
        static EMPTY: std::sync::OnceLock<DaemonSetSpec> = std::sync::OnceLock::new();
        let spec = ds.spec.as_ref().unwrap_or_else(|| EMPTY.get_or_init(DaemonSetSpec::default));
        let mut pod_spec = spec.template.spec.clone().unwrap_or_default();
        pod_spec.tolerations = Some(daemon_tolerations(&pod_spec));
        let strategy = spec.update_strategy.as_ref().and_then(|s| s.type_.as_deref());
        Daemon {
            ds,
            spec,
            pod_spec,
            hash: template_hash(&spec.template),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            rolling_update: strategy != Some("OnDelete"),
            now,
        }
    }

    fn available(&self, pod: &Pod) -> bool {
        is_available(pod, self.min_ready_seconds, self.now)
    }

    fn is_updated(&self, pod: &Pod) -> bool {
        pod.metadata.labels.as_ref().and_then(|l| l.get(REVISION_HASH_LABEL)) == Some(&self.hash)
    }

    /// Whether the daemon should run on `node`, and whether a pod already there may stay.
    fn eligibility(&self, node: &Node) -> (bool, bool) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let pinned_elsewhere =
            self.pod_spec.node_name.as_deref().is_some_and(|n| !n.is_empty() && n != name);
        if pinned_elsewhere || !selects_node(&self.pod_spec, node) {
            return (false, false);
        }
        if node_mismatch_ignoring_readiness(&self.pod_spec, node).is_none() {
            return (true, true);
        }
        let tolerations = self.pod_spec.tolerations.as_deref().unwrap_or_default();
        let taints: &[Taint] =
            node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
        let evicted = taints.iter().any(|t| t.effect == "NoExecute" && !tolerates(tolerations, t));
        (false, !evicted)
    }

    /// A new pod for `node`, from the template, pinned to the node.
    fn new_pod(&self, node: &str) -> Pod {
        let meta = &self.ds.metadata;
        let name = meta.name.as_deref().unwrap_or_default();
        let mut labels = BTreeMap::from([(REVISION_HASH_LABEL.to_owned(), self.hash.clone())]);
        if let Some(generation) = meta.generation {
            labels.insert(TEMPLATE_GENERATION_LABEL.to_owned(), generation.to_string());
        }
        let mut pod = pod_from_template(
            &self.spec.template,
            meta.namespace.as_deref().unwrap_or("default"),
            &format!("{name}-"),
            controller_reference("apps/v1", "DaemonSet", meta),
            &labels,
        );
        let mut spec = self.pod_spec.clone();
        let node_affinity =
            spec.affinity.get_or_insert_default().node_affinity.get_or_insert_default();
        node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![NodeSelectorRequirement {
                    key: "metadata.name".to_owned(),
                    operator: "In".to_owned(),
                    values: Some(vec![node.to_owned()]),
                }]),
            }],
        });
        pod.spec = Some(spec);
        pod
    }
}

/// One node (or a vanished node pods still point at) and the daemon's pods there, oldest
/// first.
struct NodeState<'a> {
    name: String,
    node: Option<&'a Node>,
    should_run: bool,
    should_continue: bool,
    pods: Vec<&'a Pod>,
}

/// Every node with its pods, sorted by name, and the pods that point at no node.
fn node_states<'a>(
    daemon: &Daemon,
    nodes: &'a [Node],
    pods: &'a [Pod],
) -> (Vec<NodeState<'a>>, Vec<&'a Pod>) {
    let mut states: BTreeMap<String, NodeState<'a>> = nodes
        .iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let (should_run, should_continue) = daemon.eligibility(node);
            (
                name.clone(),
                NodeState { name, node: Some(node), should_run, should_continue, pods: Vec::new() },
            )
        })
        .collect();
    let mut unplaceable = Vec::new();
    for pod in pods {
        let Some(target) = target_node(pod) else {
            unplaceable.push(pod);
            continue;
        };
        states
            .entry(target.to_owned())
            .or_insert_with(|| NodeState {
                name: target.to_owned(),
                node: None,
                should_run: false,
                should_continue: false,
                pods: Vec::new(),
            })
            .pods
            .push(pod);
    }
    let mut states: Vec<NodeState> = states.into_values().collect();
    for state in &mut states {
        state.pods.sort_by_key(|p| age_order(p));
    }
    (states, unplaceable)
}

/// Scheduled pods first, then by creation time, then name: the order upstream keeps the
/// oldest pod by.
fn age_order(pod: &Pod) -> (bool, Option<Timestamp>, String) {
    let unscheduled = node_name(pod).is_none();
    (
        unscheduled,
        pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// The plan under construction: creations by node, deletions by name.
#[derive(Default)]
struct Builder {
    create: BTreeMap<String, Pod>,
    delete: BTreeSet<String>,
    deleting_on: BTreeSet<String>,
    events: Vec<EventNote>,
}

impl Builder {
    fn delete(&mut self, pod: &Pod) {
        if let Some(name) = &pod.metadata.name {
            self.delete.insert(name.clone());
        }
        if let Some(node) = target_node(pod) {
            self.deleting_on.insert(node.to_owned());
        }
    }

    /// Creates a pod on `node` unless this plan deletes one there or already creates one.
    fn create(&mut self, daemon: &Daemon, node: &str) {
        if !self.deleting_on.contains(node) && !self.create.contains_key(node) {
            self.create.insert(node.to_owned(), daemon.new_pod(node));
        }
    }
}

/// The per-node part: create where missing, remove where not wanted, failed, or extra.
fn manage(daemon: &Daemon, state: &NodeState, surge: bool, plan: &mut Builder) {
    if state.should_run && state.pods.is_empty() {
        plan.create(daemon, &state.name);
        return;
    }
    if !state.should_continue {
        for pod in state.pods.iter().filter(|p| !is_deleting(p)) {
            plan.delete(pod);
        }
        return;
    }
    let mut running = Vec::new();
    for pod in state.pods.iter().filter(|p| !is_deleting(p)) {
        match phase(pod) {
            "Failed" => {
                plan.delete(pod);
                plan.events.push(EventNote::warning(
                    "FailedDaemonPod",
                    format!(
                        "Found failed daemon pod {}/{} on node {}, will try to kill it",
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.name.as_deref().unwrap_or_default(),
                        state.name
                    ),
                ));
            }
            "Succeeded" => plan.delete(pod),
            _ => running.push(*pod),
        }
    }
    if surge {
        keep_one_of_each_revision(daemon, &running, plan);
    } else {
        for extra in running.iter().skip(1) {
            plan.delete(extra);
        }
    }
}

/// While surging a node may run the oldest old pod next to the oldest new one, until the new
/// one is available or the old one is not ready; any other pod goes.
fn keep_one_of_each_revision(daemon: &Daemon, running: &[&Pod], plan: &mut Builder) {
    let (mut newest, mut oldest) = (None, None);
    for pod in running {
        let slot = if daemon.is_updated(pod) { &mut newest } else { &mut oldest };
        if slot.is_none() {
            *slot = Some(*pod);
        } else {
            plan.delete(pod);
        }
    }
    if let (Some(new), Some(old)) = (newest, oldest)
        && (!is_ready(old) || daemon.available(new))
    {
        plan.delete(old);
    }
}

/// The pods of a node by revision: `None` when it has more than one of either.
fn revisions<'a>(daemon: &Daemon, pods: &[&'a Pod]) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for pod in pods.iter().filter(|p| !is_deleting(p)) {
        let slot = if daemon.is_updated(pod) { &mut new } else { &mut old };
        if slot.replace(*pod).is_some() {
            return None;
        }
    }
    Some((new, old))
}

/// Rolling update without surge: delete old pods (the per-node part then recreates them)
/// while no more than `max_unavailable` nodes are without an available pod. Old pods that are
/// not available are replaced regardless.
fn replace_update(
    daemon: &Daemon,
    states: &[&NodeState],
    max_unavailable: usize,
    plan: &mut Builder,
) {
    let mut unavailable = 0;
    let mut candidates = Vec::new();
    for state in states {
        match revisions(daemon, &state.pods) {
            Some((None, Some(old))) if !daemon.available(old) => plan.delete(old),
            Some((None, Some(old))) => candidates.push(old),
            Some((Some(new), None)) if daemon.available(new) => {}
            _ => unavailable += 1,
        }
    }
    for old in candidates.into_iter().take(max_unavailable.saturating_sub(unavailable)) {
        plan.delete(old);
    }
}

/// Rolling update with surge: start a new pod next to an old one on up to `max_surge` nodes
/// at a time (at once where the old one is not available); the old one goes once the new one
/// is available. Old pods on nodes the daemon no longer selects go once enough pods are
/// available elsewhere.
fn surge_update(
    daemon: &Daemon,
    states: &[&NodeState],
    desired: usize,
    max_surge: usize,
    plan: &mut Builder,
) {
    let mut surging = 0;
    let mut available: usize = 0;
    let mut candidates = Vec::new();
    let mut not_wanted = Vec::new();
    for state in states {
        let Some((new, old)) = revisions(daemon, &state.pods) else {
            surging += 1;
            continue;
        };
        if old.or(new).is_some_and(|p| daemon.available(p)) {
            available += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) if !daemon.available(old) => {
                if state.should_run {
                    plan.create(daemon, &state.name);
                } else {
                    plan.delete(old);
                }
            }
            (None, Some(old)) if !state.should_run => not_wanted.push(old),
            (None, Some(_)) => candidates.push(state.name.as_str()),
            (Some(new), Some(old)) => {
                if daemon.available(new) {
                    plan.delete(old);
                } else {
                    surging += 1;
                }
            }
        }
    }
    for old in not_wanted.into_iter().take(available.saturating_sub(desired)) {
        plan.delete(old);
    }
    for node in candidates.into_iter().take(max_surge.saturating_sub(surging)) {
        plan.create(daemon, node);
    }
}

/// `maxSurge` and `maxUnavailable` scaled to the desired number of pods (percentages round
/// up); by default no surge and one unavailable, and never both zero.
struct RollingLimits {
    max_surge: usize,
    max_unavailable: usize,
}

impl RollingLimits {
    fn of(spec: &DaemonSetSpec, desired: usize) -> Self {
        let rolling = spec.update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
        let scaled = |value: Option<&IntOrString>| {
            let total = i32::try_from(desired).unwrap_or(i32::MAX);
            value.and_then(|v| int_or_percent(v, total, true)).map(|n| n as usize)
        };
        let max_surge = scaled(rolling.and_then(|r| r.max_surge.as_ref())).unwrap_or(0);
        let max_unavailable = scaled(rolling.and_then(|r| r.max_unavailable.as_ref()))
            .unwrap_or(if max_surge > 0 { 0 } else { 1 });
        let max_unavailable =
            if max_surge == 0 && max_unavailable == 0 { 1 } else { max_unavailable };
        RollingLimits { max_surge, max_unavailable }
    }
}

/// The status upstream reports, from the pods as they are before the plan: per eligible node
/// its oldest pod counts as scheduled, ready, available and updated; pods on other existing
/// nodes count as misscheduled.
fn status(daemon: &Daemon, states: &[NodeState]) -> DaemonSetStatus {
    let mut status = daemon.ds.status.clone().unwrap_or_default();
    let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
    let (mut ready, mut available, mut updated) = (0, 0, 0);
    for state in states.iter().filter(|s| s.node.is_some()) {
        let oldest = state.pods.iter().find(|p| !(is_deleting(p) && is_terminal(p)));
        match (state.should_run, oldest) {
            (true, Some(pod)) => {
                desired += 1;
                current += 1;
                if is_ready(pod) {
                    ready += 1;
                    if daemon.available(pod) {
                        available += 1;
                    }
                }
                if daemon.is_updated(pod) {
                    updated += 1;
                }
            }
            (true, None) => desired += 1,
            (false, Some(_)) => misscheduled += 1,
            (false, None) => {}
        }
    }
    status.desired_number_scheduled = desired;
    status.current_number_scheduled = current;
    status.number_misscheduled = misscheduled;
    status.number_ready = ready;
    status.number_available = nonzero(available);
    status.number_unavailable = nonzero(desired - available);
    status.updated_number_scheduled = nonzero(updated);
    status.observed_generation = daemon.ds.metadata.generation;
    status
}

/// The soonest a ready pod on an eligible node becomes available.
fn requeue_after(daemon: &Daemon, states: &[NodeState]) -> Option<Duration> {
    let wait = SignedDuration::from_secs(i64::from(daemon.min_ready_seconds));
    states
        .iter()
        .filter(|s| s.should_run)
        .flat_map(|s| s.pods.iter())
        .filter(|p| !is_deleting(p) && !daemon.available(p))
        .filter_map(|p| ready_since(p))
        .filter_map(|since| Duration::try_from(daemon.now.duration_until(since + wait)).ok())
        .min()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
    use k8s_openapi::api::core::v1::{
        Container, NodeCondition, NodeSpec, NodeStatus, PodCondition, PodStatus, PodTemplateSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

    use super::*;

    fn t0() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn daemonset(image: &str) -> DaemonSet {
        let labels: BTreeMap<String, String> = [("app".to_owned(), "agent".to_owned())].into();
        DaemonSet {
            metadata: ObjectMeta {
                name: Some("agent".into()),
                namespace: Some("kube-system".into()),
                uid: Some("ds-uid".into()),
                generation: Some(1),
                ..ObjectMeta::default()
            },
            spec: Some(DaemonSetSpec {
                selector: LabelSelector {
                    match_labels: Some(labels.clone()),
                    ..LabelSelector::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "agent".into(),
                            image: Some(image.into()),
                            ..Container::default()
                        }],
                        ..PodSpec::default()
                    }),
                },
                ..DaemonSetSpec::default()
            }),
            status: None,
        }
    }

    fn with_node_selector(mut ds: DaemonSet, key: &str, value: &str) -> DaemonSet {
        let spec = ds.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
        spec.node_selector = Some([(key.to_owned(), value.to_owned())].into());
        ds
    }

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
        }
    }

    fn tainted(mut node: Node, key: &str, effect: &str) -> Node {
        let taint = Taint { key: key.into(), value: None, effect: effect.into(), time_added: None };
        node.spec.get_or_insert_default().taints = Some(vec![taint]);
        node
    }

    /// A created pod, as the API server and scheduler would have it: named, bound, and
    /// running (ready since `ready_at` when given).
    fn running(mut pod: Pod, name: &str, ready_at: Option<Timestamp>) -> Pod {
        let node = target_node(&pod).unwrap().to_owned();
        pod.metadata.name = Some(name.into());
        pod.metadata.creation_timestamp = Some(Time(t0()));
        pod.spec.as_mut().unwrap().node_name = Some(node);
        pod.status = Some(PodStatus {
            phase: Some("Running".into()),
            conditions: ready_at.map(|at| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at)),
                    ..PodCondition::default()
                }]
            }),
            ..PodStatus::default()
        });
        pod
    }

    /// Runs the plan's creations as ready pods, named `<node>-<suffix>`.
    fn settle(plan: &DaemonSetPlan, suffix: &str) -> Vec<Pod> {
        plan.create
            .iter()
            .map(|p| {
                let node = target_node(p).unwrap().to_owned();
                running(p.clone(), &format!("{node}-{suffix}"), Some(t0()))
            })
            .collect()
    }

    fn nodes_of(pods: &[Pod]) -> Vec<String> {
        pods.iter().map(|p| target_node(p).unwrap().to_owned()).collect()
    }

    #[test]
    fn the_node_selector_picks_only_matching_nodes() {
        let ds = with_node_selector(daemonset("agent:1"), "role", "edge");
        let nodes = [
            node("a", &[("role", "edge")]),
            node("b", &[("role", "core")]),
            node("c", &[("role", "edge")]),
        ];
        let plan = plan_daemonset(&ds, &nodes, &[], t0());
        assert_eq!(nodes_of(&plan.create), ["a", "c"]);
        assert_eq!(plan.status.desired_number_scheduled, 2);
        let pod = &plan.create[0];
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("agent-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("kube-system"));
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[REVISION_HASH_LABEL], template_hash(&ds.spec.as_ref().unwrap().template));
        assert_eq!(labels[TEMPLATE_GENERATION_LABEL], "1");
        assert_eq!(labels["app"], "agent");
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("DaemonSet", "ds-uid", Some(true))
        );
        let tolerations = pod.spec.as_ref().unwrap().tolerations.as_ref().unwrap();
        assert!(
            tolerations
                .iter()
                .any(|t| t.key.as_deref() == Some("node.kubernetes.io/unschedulable"))
        );
        assert!(
            tolerations.iter().any(|t| t.key.as_deref() == Some("node.kubernetes.io/not-ready")
                && t.effect.as_deref() == Some("NoExecute"))
        );
        assert_eq!(pod.spec.as_ref().unwrap().node_name, None, "the scheduler binds it");
    }

    #[test]
    fn a_new_matching_node_gets_a_pod_and_a_relabelled_one_loses_it() {
        let ds = with_node_selector(daemonset("agent:1"), "role", "edge");
        let mut nodes = vec![node("a", &[("role", "edge")])];
        let pods = settle(&plan_daemonset(&ds, &nodes, &[], t0()), "1");
        nodes.push(node("b", &[("role", "edge")]));
        let plan = plan_daemonset(&ds, &nodes, &pods, t0());
        assert_eq!(nodes_of(&plan.create), ["b"]);
        assert!(plan.delete.is_empty());

        nodes[0] = node("a", &[("role", "core")]);
        let plan = plan_daemonset(&ds, &nodes, &pods, t0());
        assert_eq!(plan.delete, ["a-1"]);
        assert_eq!(plan.status.number_misscheduled, 1);
        let plan = plan_daemonset(&ds, &nodes[1..], &pods, t0());
        assert_eq!(plan.delete, ["a-1"], "pods on nodes that are gone are deleted");
    }

    #[test]
    fn tainted_nodes_are_skipped_unless_tolerated() {
        let nodes = [node("a", &[]), tainted(node("gpu", &[]), "gpu", "NoSchedule")];
        let ds = daemonset("agent:1");
        assert_eq!(nodes_of(&plan_daemonset(&ds, &nodes, &[], t0()).create), ["a"]);

        let mut tolerant = ds.clone();
        tolerant.spec.as_mut().unwrap().template.spec.as_mut().unwrap().tolerations =
            Some(vec![Toleration {
                key: Some("gpu".into()),
                operator: Some("Exists".into()),
                ..Toleration::default()
            }]);
        assert_eq!(nodes_of(&plan_daemonset(&tolerant, &nodes, &[], t0()).create), ["a", "gpu"]);

        let cordoned = Node {
            spec: Some(NodeSpec { unschedulable: Some(true), ..NodeSpec::default() }),
            ..node("c", &[])
        };
        assert_eq!(
            nodes_of(&plan_daemonset(&ds, &[cordoned], &[], t0()).create),
            ["c"],
            "daemons tolerate cordons"
        );
    }

    #[test]
    fn a_new_no_schedule_taint_keeps_the_pod_but_no_execute_evicts_it() {
        let ds = daemonset("agent:1");
        let pods = settle(&plan_daemonset(&ds, &[node("a", &[])], &[], t0()), "1");
        let soft =
            plan_daemonset(&ds, &[tainted(node("a", &[]), "maint", "NoSchedule")], &pods, t0());
        assert!(soft.delete.is_empty() && soft.create.is_empty());
        assert_eq!((soft.status.desired_number_scheduled, soft.status.number_misscheduled), (0, 1));
        let hard =
            plan_daemonset(&ds, &[tainted(node("a", &[]), "maint", "NoExecute")], &pods, t0());
        assert_eq!(hard.delete, ["a-1"]);
    }

    #[test]
    fn failed_extra_and_stray_pods_are_deleted_without_recreating_in_the_same_plan() {
        let ds = daemonset("agent:1");
        let nodes = [node("a", &[]), node("b", &[])];
        let first = plan_daemonset(&ds, &nodes, &[], t0());
        let mut pods = settle(&first, "1");
        pods[0].status.as_mut().unwrap().phase = Some("Failed".into());
        let mut younger = running(first.create[1].clone(), "b-2", Some(t0()));
        younger.metadata.creation_timestamp = Some(Time(t0() + SignedDuration::from_secs(5)));
        pods.push(younger);
        let plan = plan_daemonset(&ds, &nodes, &pods, t0());
        assert_eq!(plan.delete, ["a-1", "b-2"], "the failed pod and the younger extra one");
        assert!(plan.create.is_empty(), "a's pod comes back on the next reconcile");
        assert_eq!(plan.events.len(), 1);
        assert_eq!(plan.events[0].reason, "FailedDaemonPod");
        let after = plan_daemonset(&ds, &nodes, &pods[1..2], t0());
        assert_eq!(nodes_of(&after.create), ["a"]);
    }

    #[test]
    fn a_template_change_replaces_pods_one_at_a_time() {
        let nodes = [node("a", &[]), node("b", &[]), node("c", &[])];
        let v1 = daemonset("agent:1");
        let mut pods = settle(&plan_daemonset(&v1, &nodes, &[], t0()), "v1");
        let mut v2 = daemonset("agent:2");
        v2.metadata.generation = Some(2);
        for round in 0..3 {
            let plan = plan_daemonset(&v2, &nodes, &pods, t0());
            assert_eq!(plan.delete.len(), 1, "round {round}: {:?}", plan.delete);
            assert!(plan.create.is_empty());
            pods.retain(|p| !plan.delete.contains(p.metadata.name.as_ref().unwrap()));
            // While the old pod is gone the node is unavailable: nothing else goes.
            let refill = plan_daemonset(&v2, &nodes, &pods, t0());
            assert!(refill.delete.is_empty(), "round {round}");
            assert_eq!(refill.create.len(), 1);
            assert_eq!(refill.status.number_unavailable, Some(1));
            pods.extend(settle(&refill, &format!("v2-{round}")));
        }
        let done = plan_daemonset(&v2, &nodes, &pods, t0());
        assert!(done.delete.is_empty() && done.create.is_empty());
        assert_eq!(done.status.updated_number_scheduled, Some(3));
    }

    #[test]
    fn on_delete_leaves_old_pods_alone() {
        let nodes = [node("a", &[])];
        let pods = settle(&plan_daemonset(&daemonset("agent:1"), &nodes, &[], t0()), "v1");
        let mut v2 = daemonset("agent:2");
        v2.spec.as_mut().unwrap().update_strategy =
            Some(DaemonSetUpdateStrategy { type_: Some("OnDelete".into()), rolling_update: None });
        let plan = plan_daemonset(&v2, &nodes, &pods, t0());
        assert!(plan.delete.is_empty() && plan.create.is_empty());
        assert_eq!(plan.status.updated_number_scheduled, None);
    }

    #[test]
    fn max_unavailable_in_percent_rounds_up() {
        let nodes: Vec<Node> = (0..4).map(|i| node(&format!("n{i}"), &[])).collect();
        let pods = settle(&plan_daemonset(&daemonset("agent:1"), &nodes, &[], t0()), "v1");
        let mut v2 = daemonset("agent:2");
        v2.spec.as_mut().unwrap().update_strategy = Some(DaemonSetUpdateStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDaemonSet {
                max_unavailable: Some(IntOrString::String("30%".into())),
                max_surge: None,
            }),
        });
        assert_eq!(
            plan_daemonset(&v2, &nodes, &pods, t0()).delete.len(),
            2,
            "30% of 4 is 1.2, so 2"
        );
    }

    #[test]
    fn surge_starts_new_pods_next_to_old_ones() {
        let nodes = [node("a", &[]), node("b", &[])];
        let mut pods = settle(&plan_daemonset(&daemonset("agent:1"), &nodes, &[], t0()), "v1");
        let mut v2 = daemonset("agent:2");
        v2.spec.as_mut().unwrap().update_strategy = Some(DaemonSetUpdateStrategy {
            type_: None,
            rolling_update: Some(RollingUpdateDaemonSet {
                max_surge: Some(IntOrString::Int(1)),
                max_unavailable: Some(IntOrString::Int(0)),
            }),
        });
        let plan = plan_daemonset(&v2, &nodes, &pods, t0());
        assert_eq!(nodes_of(&plan.create), ["a"]);
        assert!(plan.delete.is_empty());
        let mut new = running(plan.create[0].clone(), "a-v2", None);
        pods.push(new.clone());
        let waiting = plan_daemonset(&v2, &nodes, &pods, t0());
        assert!(
            waiting.delete.is_empty() && waiting.create.is_empty(),
            "the new pod is not ready yet"
        );
        pods.pop();
        new = running(plan.create[0].clone(), "a-v2", Some(t0()));
        pods.push(new);
        let swap = plan_daemonset(&v2, &nodes, &pods, t0());
        assert_eq!(swap.delete, ["a-v1"]);
        assert_eq!(nodes_of(&swap.create), ["b"], "a's new pod is available: b may surge now");
    }

    #[test]
    fn status_counts_and_min_ready_seconds() {
        let nodes =
            [node("a", &[]), node("b", &[]), node("c", &[]), node("x", &[("role", "other")])];
        let mut ds = daemonset("agent:1");
        ds.spec.as_mut().unwrap().min_ready_seconds = Some(10);
        ds.metadata.generation = Some(7);
        let first = plan_daemonset(&ds, &nodes, &[], t0());
        assert_eq!(first.create.len(), 4);
        let now = t0() + SignedDuration::from_secs(4);
        let pods = vec![
            running(first.create[0].clone(), "a-1", Some(t0() - SignedDuration::from_secs(60))),
            running(first.create[1].clone(), "b-1", Some(t0())),
            running(first.create[2].clone(), "c-1", None),
        ];
        let plan = plan_daemonset(&ds, &nodes, &pods, now);
        let s = &plan.status;
        assert_eq!(s.desired_number_scheduled, 4);
        assert_eq!(s.current_number_scheduled, 3);
        assert_eq!(s.number_ready, 2);
        assert_eq!(s.number_available, Some(1));
        assert_eq!(s.number_unavailable, Some(3));
        assert_eq!(s.updated_number_scheduled, Some(3));
        assert_eq!(s.number_misscheduled, 0);
        assert_eq!(s.observed_generation, Some(7));
        assert_eq!(
            plan.requeue_after,
            Some(Duration::from_secs(6)),
            "b becomes available at t0+10s"
        );
        assert_eq!(nodes_of(&plan.create), ["x"]);
    }
}
