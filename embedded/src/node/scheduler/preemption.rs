//! Preemption, as kube-scheduler's `DefaultPreemption` plugin chooses it: a pod that fits no
//! node may evict pods of lower priority from one where that frees what it requests. On each
//! node it fails only for want of resources, every lower-priority pod is a candidate victim;
//! if the pod fits without all of them, the most important are spared again one by one while it
//! still fits. The node whose victims matter least wins: the lowest highest victim priority,
//! then the lowest sum of priorities, then the fewest victims, then the first name.
//!
//! Not done here: PodDisruptionBudgets are not weighed, and a node refused by topology spread
//! or inter-pod affinity is not considered (upstream may resolve those by preemption too).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};

use super::{Cluster, NodeLoad, node_mismatch, requests, shortages};
use crate::node::pods::is_deleting;

/// The node a pod can take by evicting `victims` from it.
#[derive(Debug, PartialEq)]
pub struct Preemption<'a> {
    /// The node.
    pub node: String,
    /// The pods to evict, most important first.
    pub victims: Vec<&'a Pod>,
}

/// A pod's priority (from its PriorityClass at admission), 0 without one.
pub fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

impl<'a> Cluster<'a> {
    /// Where `pod`, which fits no node, can go by evicting pods of lower priority; `None` when
    /// its `preemptionPolicy` is `Never`, when it already evicted pods that are still going
    /// from the node it was nominated for, or when no node would fit it even without them.
    pub fn preemption(&self, pod: &Pod) -> Option<Preemption<'a>> {
        let default_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        if spec.preemption_policy.as_deref() == Some("Never") || self.awaits_victims(pod) {
            return None;
        }
        let request = requests(spec);
        let mut best: Option<(Importance, Preemption<'a>)> = None;
        for load in self.nodes.iter().filter(|load| node_mismatch(spec, load.node).is_none()) {
            let Some(victims) = self.victims_on(load, &request, priority(pod)) else { continue };
            let importance = Importance::of(&victims, load.name);
            if best.as_ref().is_none_or(|(least, _)| importance < *least) {
                best = Some((importance, Preemption { node: load.name.to_owned(), victims }));
            }
        }
        best.map(|(_, preemption)| preemption)
    }

    /// Whether pods of lower priority are still going from the node `pod` was nominated for:
    /// its earlier preemption is under way, and evicting more would be premature.
    fn awaits_victims(&self, pod: &Pod) -> bool {
        let nominated = pod.status.as_ref().and_then(|s| s.nominated_node_name.as_deref());
        let Some(nominated) = nominated else { return false };
        self.placed.iter().any(|placed| {
            placed.node.metadata.name.as_deref() == Some(nominated)
                && is_deleting(placed.pod)
                && priority(placed.pod) < priority(pod)
        })
    }

    /// The fewest, least important pods of priority below `below` on `load`'s node whose
    /// eviction makes room for `request`; `None` when even evicting all of them would not.
    fn victims_on(
        &self,
        load: &NodeLoad<'a>,
        request: &BTreeMap<String, i128>,
        below: i32,
    ) -> Option<Vec<&'a Pod>> {
        let mut candidates: Vec<&'a Pod> = self
            .placed
            .iter()
            .filter(|placed| placed.node.metadata.name.as_deref() == Some(load.name))
            .map(|placed| placed.pod)
            .filter(|pod| priority(pod) < below && !is_deleting(pod))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let mut without = load.without(&candidates);
        if !shortages(request, &without).is_empty() {
            return None;
        }
        // Spare the most important first (then the longest running), as long as the pod fits.
        candidates.sort_by(|a, b| {
            (priority(b), &a.metadata.creation_timestamp)
                .cmp(&(priority(a), &b.metadata.creation_timestamp))
        });
        let mut victims = Vec::new();
        for candidate in candidates {
            let spared = without.with(candidate);
            if shortages(request, &spared).is_empty() {
                without = spared;
            } else {
                victims.push(candidate);
            }
        }
        Some(victims)
    }
}

impl NodeLoad<'_> {
    /// The load without `pods` (which are bound to this node).
    fn without(&self, pods: &[&Pod]) -> Self {
        let mut load = self.clone();
        load.pods -= pods.len() as i128;
        for pod in pods {
            for (resource, amount) in requests(pod.spec.as_ref().unwrap_or(&PodSpec::default())) {
                *load.requested.entry(resource).or_default() -= amount;
            }
        }
        load
    }

    /// The load with `pod` too.
    fn with(&self, pod: &Pod) -> Self {
        let mut load = self.clone();
        load.add(pod.spec.as_ref().unwrap_or(&PodSpec::default()));
        load
    }
}

/// How much a set of victims matters, compared in kube-scheduler's order (less is better).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Importance<'a> {
    highest: i32,
    sum: i64,
    count: usize,
    node: &'a str,
}

impl<'a> Importance<'a> {
    fn of(victims: &[&Pod], node: &'a str) -> Self {
        Importance {
            highest: victims.iter().map(|v| priority(v)).max().unwrap_or(i32::MIN),
            sum: victims.iter().map(|v| i64::from(priority(v))).sum(),
            count: victims.len(),
            node,
        }
    }
}
