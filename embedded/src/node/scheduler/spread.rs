//! Topology spread constraints, as kube-scheduler's `PodTopologySpread` plugin applies them.
//! A constraint counts the pods its selector matches in the pod's namespace per domain (the
//! nodes sharing a value of its topology key). `DoNotSchedule` refuses a node where the pod
//! would leave its domain more than `maxSkew` above the emptiest one; `ScheduleAnyway` prefers
//! the nodes whose domains hold fewer such pods.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, TopologySpreadConstraint};

use super::{
    NodeLoad, Placed, labels_of, node_labels, selector_with_keys, selects_node, tolerates,
};
use crate::selectors::LabelSelector;

/// Why spreading rules a node out, as kube-scheduler words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The node lacks a `DoNotSchedule` constraint's topology key.
    MissingLabel,
    /// The pod would put its domain more than `maxSkew` above the emptiest one.
    Skew,
}

impl Refusal {
    /// The reason in a `FailedScheduling` summary.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::MissingLabel => {
                "node(s) didn't match pod topology spread constraints (missing required label)"
            }
            Refusal::Skew => "node(s) didn't match pod topology spread constraints",
        }
    }
}

/// One constraint with its counts.
struct Counted<'a> {
    key: &'a str,
    max_skew: i64,
    /// Whether the pod counts itself: the selector matches it.
    counts_itself: i64,
    /// Matching pods per value of the key, every eligible domain present.
    counts: HashMap<&'a str, i64>,
    /// The fewest matching pods in an eligible domain; 0 while there are fewer domains than
    /// `minDomains`.
    fewest: i64,
}

impl Counted<'_> {
    fn in_domain(&self, node: &BTreeMap<String, String>) -> Option<i64> {
        node.get(self.key).map(|value| self.counts.get(value.as_str()).copied().unwrap_or(0))
    }
}

/// What spreading says about placing one pod: its constraints, counted once from the placed
/// pods, then asked of each node.
pub struct Spread<'a> {
    hard: Vec<Counted<'a>>,
    soft: Vec<Counted<'a>>,
}

impl<'a> Spread<'a> {
    /// Counts the constraints of `pod` over `nodes` and the pods placed on them; `None` when
    /// the pod has none.
    pub fn new(
        pod: &'a Pod,
        spec: &'a PodSpec,
        nodes: &[NodeLoad<'a>],
        placed: &[Placed<'a>],
    ) -> Option<Self> {
        let constraints = spec.topology_spread_constraints.as_deref().unwrap_or_default();
        if constraints.is_empty() {
            return None;
        }
        let nodes: Vec<&Node> = nodes.iter().map(|load| load.node).collect();
        let (hard, soft): (Vec<_>, Vec<_>) =
            constraints.iter().partition(|c| c.when_unsatisfiable == "DoNotSchedule");
        Some(Spread {
            hard: count_all(pod, spec, &hard, &nodes, placed),
            soft: count_all(pod, spec, &soft, &nodes, placed),
        })
    }

    /// Why the node, with these labels, cannot take the pod, if it cannot.
    pub fn refusal(&self, node: &BTreeMap<String, String>) -> Option<Refusal> {
        self.hard.iter().find_map(|c| match c.in_domain(node) {
            None => Some(Refusal::MissingLabel),
            Some(count) if count + c.counts_itself - c.fewest > c.max_skew => Some(Refusal::Skew),
            Some(_) => None,
        })
    }

    /// The node's raw score for the `ScheduleAnyway` constraints, lower being better: the
    /// matching pods in its domains, each constraint weighted by the log of its number of
    /// domains as upstream does; `None` when there is none or the node lacks one's key.
    pub fn crowding(&self, node: &BTreeMap<String, String>) -> Option<f64> {
        if self.soft.is_empty() {
            return None;
        }
        self.soft
            .iter()
            .map(|c| {
                let weight = (c.counts.len() as f64 + 2.0).ln();
                c.in_domain(node).map(|count| count as f64 * weight + (c.max_skew - 1) as f64)
            })
            .sum()
    }
}

/// Counts `constraints` of `pod`. The domains are those of the nodes the pod could go to as
/// each constraint's policies say (its node selector and affinity unless `nodeAffinityPolicy`
/// is `Ignore`; its tolerations when `nodeTaintsPolicy` is `Honor`) that carry every one of
/// the constraints' keys; terminating pods are not counted.
fn count_all<'a>(
    pod: &'a Pod,
    spec: &'a PodSpec,
    constraints: &[&'a TopologySpreadConstraint],
    nodes: &[&'a Node],
    placed: &[Placed<'a>],
) -> Vec<Counted<'a>> {
    let has_keys =
        |node: &Node| constraints.iter().all(|c| node_labels(node).contains_key(&c.topology_key));
    constraints
        .iter()
        .map(|c| {
            let eligible: Vec<&Node> = nodes
                .iter()
                .copied()
                .filter(|node| has_keys(node) && is_honoured(spec, node, c))
                .collect();
            count(pod, c, &eligible, placed)
        })
        .collect()
}

/// Counts one constraint of `pod` over the domains of the `eligible` nodes.
fn count<'a>(
    pod: &'a Pod,
    constraint: &'a TopologySpreadConstraint,
    eligible: &[&'a Node],
    placed: &[Placed<'a>],
) -> Counted<'a> {
    let key = constraint.topology_key.as_str();
    let labels = labels_of(pod);
    let selector: Option<LabelSelector> = selector_with_keys(
        constraint.label_selector.as_ref(),
        labels,
        constraint.match_label_keys.as_deref().unwrap_or_default(),
        &[],
    );
    let mut counts: HashMap<&str, i64> = eligible
        .iter()
        .filter_map(|node| node_labels(node).get(key))
        .map(|v| (v.as_str(), 0))
        .collect();
    let names: HashSet<&str> = eligible.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    let counted = |other: &Placed| {
        other.pod.metadata.namespace == pod.metadata.namespace
            && other.pod.metadata.deletion_timestamp.is_none()
            && other.node.metadata.name.as_deref().is_some_and(|n| names.contains(n))
            && selector.as_ref().is_some_and(|s| s.matches(labels_of(other.pod)))
    };
    for other in placed.iter().filter(|other| counted(other)) {
        if let Some(value) = node_labels(other.node).get(key) {
            *counts.entry(value.as_str()).or_default() += 1;
        }
    }
    let min_domains = constraint.min_domains.and_then(|min| usize::try_from(min).ok());
    let fewest = if min_domains.is_some_and(|min| counts.len() < min) {
        0
    } else {
        counts.values().copied().min().unwrap_or(0)
    };
    Counted {
        key,
        max_skew: i64::from(constraint.max_skew),
        counts_itself: i64::from(selector.is_some_and(|s| s.matches(labels))),
        counts,
        fewest,
    }
}

/// Whether the constraint's policies let the pod go to `node`: its node selector and affinity
/// select it unless `nodeAffinityPolicy` is `Ignore` (the default is `Honor`), and it
/// tolerates the node's taints if `nodeTaintsPolicy` is `Honor` (the default is `Ignore`).
fn is_honoured(spec: &PodSpec, node: &Node, constraint: &TopologySpreadConstraint) -> bool {
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    (constraint.node_affinity_policy.as_deref() == Some("Ignore") || selects_node(spec, node))
        && (constraint.node_taints_policy.as_deref() != Some("Honor")
            || taints.iter().all(|t| t.effect == "PreferNoSchedule" || tolerates(tolerations, t)))
}
