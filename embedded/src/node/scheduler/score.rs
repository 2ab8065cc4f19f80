//! Scoring the nodes that can take a pod, as kube-scheduler's score plugins do with their
//! default weights: each plugin's scores normalized to 0–100 over those nodes, then summed by
//! weight.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PodSpec};

use super::affinity::PodAffinity;
use super::spread::Spread;
use super::{NodeLoad, node_labels, pod_requests, term_matches, tolerates};

/// The highest score a plugin gives a node.
const MAX: i128 = 100;
/// The weight of preferred node affinity.
const NODE_AFFINITY: i128 = 2;
/// The weight of `PreferNoSchedule` taints.
const TAINT_TOLERATION: i128 = 3;
/// The weight of preferred inter-pod affinity.
const INTER_POD_AFFINITY: i128 = 2;
/// The weight of `ScheduleAnyway` topology spreading.
const TOPOLOGY_SPREAD: i128 = 2;

/// The score of each of `fitting`, in order.
pub(super) fn scores(
    spec: &PodSpec,
    fitting: &[&NodeLoad<'_>],
    spread: Option<&Spread<'_>>,
    affinity: Option<&PodAffinity<'_>>,
) -> Vec<i128> {
    let request = pod_requests(spec, true);
    let labels = || fitting.iter().map(|load| node_labels(load.node));
    let preferred = scaled(fitting.iter().map(|l| preferred_node_affinity(spec, l.node)), false);
    let tainted = scaled(fitting.iter().map(|l| intolerable_preferences(spec, l.node)), true);
    let near = match affinity {
        Some(affinity) => spanned(labels().map(|node| affinity.preference(node))),
        None => vec![0; fitting.len()],
    };
    let spread = match spread {
        Some(spread) => uncrowded(labels().map(|node| spread.crowding(node))),
        None => vec![0; fitting.len()],
    };
    fitting
        .iter()
        .enumerate()
        .map(|(i, load)| {
            let others = NODE_AFFINITY * preferred[i]
                + TAINT_TOLERATION * tainted[i]
                + INTER_POD_AFFINITY * near[i]
                + TOPOLOGY_SPREAD * spread[i];
            // The least-allocated score (weight 1) is the sum of cpu's and memory's rather
            // than their mean, so twice upstream's; the others are doubled to match.
            least_allocated(&request, load) + 2 * others
        })
        .collect()
}

/// kube-scheduler's least-allocated score for cpu and memory: for each, the percentage of
/// allocatable left once the pod is placed, summed.
fn least_allocated(request: &BTreeMap<String, i128>, load: &NodeLoad<'_>) -> i128 {
    ["cpu", "memory"]
        .iter()
        .map(|resource| {
            let total = load.allocatable.get(*resource).copied().unwrap_or_default();
            let taken = request.get(*resource).copied().unwrap_or_default()
                + load.spread.get(*resource).copied().unwrap_or_default();
            if total <= 0 || taken > total { 0 } else { (total - taken) * MAX / total }
        })
        .sum()
}

/// The weights of the pod's preferred node affinity terms that match the node.
fn preferred_node_affinity(spec: &PodSpec, node: &Node) -> i128 {
    let preferred = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_deref())
        .unwrap_or_default();
    let name = node.metadata.name.as_deref().unwrap_or_default();
    preferred
        .iter()
        .filter(|p| term_matches(&p.preference, node_labels(node), name))
        .map(|p| i128::from(p.weight))
        .sum()
}

/// How many of the node's `PreferNoSchedule` taints the pod does not tolerate.
fn intolerable_preferences(spec: &PodSpec, node: &Node) -> i128 {
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    let untolerated = taints
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule" && !tolerates(tolerations, t))
        .count();
    i128::try_from(untolerated).unwrap_or(i128::MAX)
}

/// Scores scaled so that the highest is 100 (or, `reversed`, the lowest 100), as upstream's
/// default normalization does.
fn scaled(raw: impl Iterator<Item = i128>, reversed: bool) -> Vec<i128> {
    let raw: Vec<i128> = raw.collect();
    let max = raw.iter().copied().max().unwrap_or(0);
    raw.iter()
        .map(|&score| {
            let score = if max == 0 { 0 } else { score * MAX / max };
            if reversed { MAX - score } else { score }
        })
        .collect()
}

/// Scores spread over 0–100 from the lowest to the highest, as upstream normalizes inter-pod
/// affinity (all 0 when they are equal).
fn spanned(raw: impl Iterator<Item = i64>) -> Vec<i128> {
    let raw: Vec<i128> = raw.map(i128::from).collect();
    let (min, max) = (raw.iter().min().copied(), raw.iter().max().copied());
    let (min, max) = (min.unwrap_or(0), max.unwrap_or(0));
    raw.iter().map(|&s| if max > min { (s - min) * MAX / (max - min) } else { 0 }).collect()
}

/// Spreading scores as upstream normalizes them: the least crowded node 100 and the others
/// down from there relative to the most crowded; a node lacking a constraint's key 0.
fn uncrowded(raw: impl Iterator<Item = Option<f64>>) -> Vec<i128> {
    let raw: Vec<Option<i128>> = raw.map(|s| s.map(|s| s.round() as i128)).collect();
    let min = raw.iter().flatten().copied().min().unwrap_or(0);
    let max = raw.iter().flatten().copied().max().unwrap_or(0);
    raw.iter()
        .map(|score| match score {
            None => 0,
            Some(_) if max == 0 => MAX,
            Some(s) => MAX * (max + min - s) / max,
        })
        .collect()
}
