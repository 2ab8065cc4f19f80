//! Pod placement, as kube-scheduler's default plugins do it. Filters: node selector and
//! required node affinity, taints and tolerations, cordoned and not-ready nodes, resource
//! requests against what the node has left, topology spread constraints (`spread.rs`) and
//! inter-pod affinity and anti-affinity (`affinity.rs`). Scores (`score.rs`), weighted as
//! upstream weighs them: least allocated, preferred node affinity, `PreferNoSchedule` taints,
//! preferred inter-pod affinity and `ScheduleAnyway` spreading. A pod that fits nowhere may
//! preempt pods of lower priority (`preemption.rs`).

mod affinity;
mod preemption;
mod score;
mod spread;

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;

pub use preemption::{Preemption, priority};

use super::pods::{is_terminal, node_name};
use super::quantity::{add, milli_values};
use crate::selectors::{LabelSelector, Operator, Requirement};

/// The taint the node lifecycle controller puts on a cordoned node.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// The taint the node lifecycle controller puts on a node that is not `Ready`.
pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// The message when the cluster has no node at all.
pub const NO_NODES_MESSAGE: &str = "no nodes available to schedule pods";

/// The CPU a container without a CPU request counts as when spreading pods (milli-cores).
const DEFAULT_MILLI_CPU: i128 = 100;
/// The memory a container without a memory request counts as when spreading pods
/// (200Mi, in milli-bytes).
const DEFAULT_MILLI_MEMORY: i128 = 200 * 1024 * 1024 * 1000;

/// Why a node cannot take a pod, whatever its free resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The node is cordoned (`spec.unschedulable`) and the pod does not tolerate
    /// `node.kubernetes.io/unschedulable:NoSchedule`.
    Unschedulable,
    /// A `NoSchedule` or `NoExecute` taint the pod does not tolerate (the first one).
    UntoleratedTaint {
        /// The taint's key.
        key: String,
        /// The taint's value (empty when it has none).
        value: String,
        /// The taint's effect.
        effect: String,
    },
    /// The node is not `Ready`, and the pod does not tolerate the
    /// `node.kubernetes.io/not-ready:NoSchedule` taint such a node carries.
    NotReady,
    /// The pod's `nodeSelector` or required node affinity does not select the node.
    NodeAffinity,
}

impl fmt::Display for Mismatch {
    /// The reason as kube-scheduler words it in a `FailedScheduling` event.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Unschedulable => f.write_str("node(s) were unschedulable"),
            Mismatch::UntoleratedTaint { key, value, .. } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Mismatch::NotReady => {
                write!(f, "node(s) had untolerated taint {{{NOT_READY_TAINT}: }}")
            }
            Mismatch::NodeAffinity => {
                f.write_str("node(s) didn't match Pod's node affinity/selector")
            }
        }
    }
}

/// A pod that fits no node, with kube-scheduler's summary, e.g.
/// `0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's
/// node affinity/selector.`
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unschedulable {
    /// The message of the `FailedScheduling` event and the `PodScheduled` condition.
    pub message: String,
}

/// The pod's effective request per resource, in milli-units: the larger of the sum over its
/// containers and the largest init container (sidecars, init containers with
/// `restartPolicy: Always`, count with the containers and with the init containers after
/// them), plus the pod overhead. A resource with a limit but no request is requested at its
/// limit. Resources requested at zero are left out.
pub fn requests(spec: &PodSpec) -> BTreeMap<String, i128> {
    pod_requests(spec, false)
}

fn pod_requests(spec: &PodSpec, with_defaults: bool) -> BTreeMap<String, i128> {
    let mut total = BTreeMap::new();
    for container in &spec.containers {
        add(&mut total, &container_requests(container, with_defaults));
    }
    let mut sidecars = BTreeMap::new();
    let mut init_peak = BTreeMap::new();
    for container in spec.init_containers.iter().flatten() {
        let own = container_requests(container, with_defaults);
        let running_with = if container.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut both = own;
            add(&mut both, &sidecars);
            both
        };
        take_max(&mut init_peak, &running_with);
    }
    take_max(&mut total, &init_peak);
    if let Some(overhead) = &spec.overhead {
        add(&mut total, &milli_values(overhead));
    }
    total.retain(|_, value| *value > 0);
    total
}

/// A container's requests, its limits standing in for missing requests; `with_defaults`
/// adds the scheduler's spreading defaults for a missing cpu or memory request.
fn container_requests(container: &Container, with_defaults: bool) -> BTreeMap<String, i128> {
    let resources = container.resources.as_ref();
    let mut requests =
        resources.and_then(|r| r.limits.as_ref()).map(milli_values).unwrap_or_default();
    requests
        .extend(resources.and_then(|r| r.requests.as_ref()).map(milli_values).unwrap_or_default());
    if with_defaults {
        requests.entry("cpu".to_owned()).or_insert(DEFAULT_MILLI_CPU);
        requests.entry("memory".to_owned()).or_insert(DEFAULT_MILLI_MEMORY);
    }
    requests
}

fn take_max(total: &mut BTreeMap<String, i128>, other: &BTreeMap<String, i128>) {
    for (resource, value) in other {
        let entry = total.entry(resource.clone()).or_default();
        *entry = (*entry).max(*value);
    }
}

/// Why `node` cannot take a pod with `spec`, checked in kube-scheduler's filter order:
/// cordoned, untolerated `NoSchedule`/`NoExecute` taints, not ready, node selector and
/// required node affinity.
pub fn node_mismatch(spec: &PodSpec, node: &Node) -> Option<Mismatch> {
    mismatch(spec, node, true)
}

/// [`node_mismatch`] for a node as if it were ready: what the DaemonSet controller checks.
pub fn node_mismatch_ignoring_readiness(spec: &PodSpec, node: &Node) -> Option<Mismatch> {
    mismatch(spec, node, false)
}

fn mismatch(spec: &PodSpec, node: &Node, check_readiness: bool) -> Option<Mismatch> {
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    let node_spec = node.spec.as_ref();
    if node_spec.and_then(|s| s.unschedulable) == Some(true)
        && !tolerates(tolerations, &taint(UNSCHEDULABLE_TAINT, "NoSchedule"))
    {
        return Some(Mismatch::Unschedulable);
    }
    let taints = node_spec.and_then(|s| s.taints.as_deref()).unwrap_or_default();
    if let Some(t) = taints.iter().find(|t| {
        matches!(t.effect.as_str(), "NoSchedule" | "NoExecute") && !tolerates(tolerations, t)
    }) {
        return Some(Mismatch::UntoleratedTaint {
            key: t.key.clone(),
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect.clone(),
        });
    }
    if check_readiness
        && !is_node_ready(node)
        && !taints.iter().any(|t| t.key == NOT_READY_TAINT)
        && !tolerates(tolerations, &taint(NOT_READY_TAINT, "NoSchedule"))
    {
        return Some(Mismatch::NotReady);
    }
    if !selects_node(spec, node) {
        return Some(Mismatch::NodeAffinity);
    }
    None
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint { key: key.to_owned(), effect: effect.to_owned(), value: None, time_added: None }
}

/// Whether the node's `Ready` condition is true.
pub fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether any of `tolerations` tolerates `taint`: same effect (or none given), same key (or
/// none given, which with `Exists` tolerates every taint), and `Exists`, or `Equal` (the
/// default) with the same value.
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_matches(t, taint))
}

/// Whether `toleration` tolerates `taint` (see [`tolerates`]).
pub fn toleration_matches(toleration: &Toleration, taint: &Taint) -> bool {
    fn given(field: &Option<String>) -> Option<&str> {
        field.as_deref().filter(|v| !v.is_empty())
    }
    if given(&toleration.effect).is_some_and(|effect| effect != taint.effect) {
        return false;
    }
    if given(&toleration.key).is_some_and(|key| key != taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or_default() {
        "Exists" => true,
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// Whether the pod's `nodeSelector` and required node affinity select the node.
pub fn selects_node(spec: &PodSpec, node: &Node) -> bool {
    let labels = node_labels(node);
    let selector_matches =
        spec.node_selector.iter().flatten().all(|(key, value)| labels.get(key) == Some(value));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref());
    let name = node.metadata.name.as_deref().unwrap_or_default();
    selector_matches
        && required
            .is_none_or(|r| r.node_selector_terms.iter().any(|t| term_matches(t, labels, name)))
}

/// A term's expressions and fields all hold; a term with neither matches no node.
fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    (!expressions.is_empty() || !fields.is_empty())
        && expressions.iter().all(|e| expression_matches(e, labels))
        && fields.iter().all(|f| field_matches(f, name))
}

/// A `matchExpressions` entry against the node's labels; an invalid one matches nothing.
fn expression_matches(
    expression: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> bool {
    let operator = match expression.operator.as_str() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::GreaterThan,
        "Lt" => Operator::LessThan,
        _ => return false,
    };
    let values = expression.values.clone().unwrap_or_default();
    Requirement::new(&expression.key, operator, values).is_ok_and(|r| r.matches(labels))
}

/// A `matchFields` entry: only `metadata.name` with `In` or `NotIn` exists.
fn field_matches(field: &NodeSelectorRequirement, name: &str) -> bool {
    let listed = field.values.iter().flatten().any(|v| v == name);
    match (field.key.as_str(), field.operator.as_str()) {
        ("metadata.name", "In") => listed,
        ("metadata.name", "NotIn") => !listed,
        _ => false,
    }
}

/// Each namespace's labels, for pod-affinity terms' `namespaceSelector`.
pub type NamespaceLabels = HashMap<String, BTreeMap<String, String>>;

/// The nodes with what the pods bound to each already take, for placing pods one after the
/// other: built once from every pod (O(pods)), then each placement costs O(nodes) (plus
/// O(pods) for a pod with affinity or spreading rules, or while placed pods have affinity
/// rules) and counts on the next through [`Cluster::bind`], as kube-scheduler's node cache
/// does.
pub struct Cluster<'a> {
    nodes: Vec<NodeLoad<'a>>,
    /// The unfinished pods bound to the nodes.
    placed: Vec<Placed<'a>>,
    /// The index in `placed` and the terms of the pods with pod-affinity or anti-affinity
    /// terms.
    with_terms: Vec<(usize, affinity::Terms<'a>)>,
    namespaces: &'a NamespaceLabels,
}

/// An unfinished pod and the node it is bound to.
struct Placed<'a> {
    pod: &'a Pod,
    node: &'a Node,
}

impl<'a> Placed<'a> {
    /// The domain of the pod's node for topology `key`, if the node has that label.
    fn domain(&self, key: &'a str) -> Option<(&'a str, &'a str)> {
        node_labels(self.node).get(key).map(|value| (key, value.as_str()))
    }
}

/// One node and the requests of the unfinished pods bound to it.
#[derive(Clone)]
struct NodeLoad<'a> {
    node: &'a Node,
    name: &'a str,
    allocatable: BTreeMap<String, i128>,
    pods: i128,
    /// The pods' requests.
    requested: BTreeMap<String, i128>,
    /// The pods' requests with kube-scheduler's defaults for containers without any, for
    /// spreading.
    spread: BTreeMap<String, i128>,
}

impl NodeLoad<'_> {
    fn add(&mut self, spec: &PodSpec) {
        self.pods += 1;
        add(&mut self.requested, &requests(spec));
        add(&mut self.spread, &pod_requests(spec, true));
    }
}

impl<'a> Cluster<'a> {
    /// `nodes` with the pods among `pods` bound to them and not finished, in namespaces
    /// labelled as `namespaces` says.
    pub fn new<P: Borrow<Pod>>(
        nodes: &'a [Node],
        pods: &'a [P],
        namespaces: &'a NamespaceLabels,
    ) -> Self {
        let loads: Vec<NodeLoad<'a>> = nodes
            .iter()
            .map(|node| NodeLoad {
                node,
                name: node.metadata.name.as_deref().unwrap_or_default(),
                allocatable: allocatable(node),
                pods: 0,
                requested: BTreeMap::new(),
                spread: BTreeMap::new(),
            })
            .collect();
        let mut cluster =
            Cluster { nodes: loads, placed: Vec::new(), with_terms: Vec::new(), namespaces };
        for pod in pods.iter().map(Borrow::borrow).filter(|p| !is_terminal(p)) {
            if let Some(node) = node_name(pod) {
                cluster.bind(pod, node);
            }
        }
        cluster
    }

    /// The node for `pod`. A node fits when nothing in [`node_mismatch`] rules it out, every
    /// requested resource fits in what is left (extended resources are never over-committed;
    /// a resource the node lacks is insufficient), and neither its topology spread constraints
    /// nor inter-pod affinity rules refuse it; each node counts in the summary under the first
    /// of these that refuses it, as kube-scheduler runs its filters in this order. The fitting
    /// node with the best score wins, ties going to the first name.
    pub fn place(&self, pod: &Pod) -> Result<String, Unschedulable> {
        if self.nodes.is_empty() {
            return Err(Unschedulable { message: NO_NODES_MESSAGE.to_owned() });
        }
        let default_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        let request = requests(spec);
        let spread = spread::Spread::new(pod, spec, &self.nodes, &self.placed);
        let affinity =
            affinity::PodAffinity::new(pod, &self.placed, &self.with_terms, self.namespaces);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut fitting = Vec::new();
        for load in &self.nodes {
            let labels = node_labels(load.node);
            let refusals = match node_mismatch(spec, load.node) {
                Some(mismatch) => vec![mismatch.to_string()],
                None => shortages(&request, load),
            };
            let refusals = if !refusals.is_empty() {
                refusals
            } else if let Some(refusal) = spread.as_ref().and_then(|s| s.refusal(labels)) {
                vec![refusal.reason().to_owned()]
            } else if let Some(refusal) = affinity.as_ref().and_then(|a| a.refusal(labels)) {
                vec![refusal.reason().to_owned()]
            } else {
                fitting.push(load);
                continue;
            };
            for refusal in refusals {
                *reasons.entry(refusal).or_default() += 1;
            }
        }
        if fitting.is_empty() {
            return Err(Unschedulable { message: summary(self.nodes.len(), &reasons) });
        }
        let scores = score::scores(spec, &fitting, spread.as_ref(), affinity.as_ref());
        let best = fitting
            .iter()
            .zip(scores)
            .max_by_key(|(load, score)| (*score, std::cmp::Reverse(load.name)))
            .map(|(load, _)| load.name);
        Ok(best.unwrap_or_default().to_owned())
    }

    /// Counts `pod` on `node` from now on (it was placed there).
    pub fn bind(&mut self, pod: &'a Pod, node: &str) {
        let default_spec = PodSpec::default();
        if let Some(load) = self.nodes.iter_mut().find(|load| load.name == node) {
            load.add(pod.spec.as_ref().unwrap_or(&default_spec));
            if let Some(terms) = affinity::Terms::of(pod, self.namespaces) {
                self.with_terms.push((self.placed.len(), terms));
            }
            self.placed.push(Placed { pod, node: load.node });
        }
    }
}

/// `0/N nodes are available: <count> <reason>, ...` with the entries sorted as text, as
/// kube-scheduler sorts them.
fn summary(node_count: usize, reasons: &BTreeMap<String, usize>) -> String {
    let mut entries: Vec<String> =
        reasons.iter().map(|(reason, count)| format!("{count} {reason}")).collect();
    entries.sort();
    format!("0/{node_count} nodes are available: {}.", entries.join(", "))
}

fn allocatable(node: &Node) -> BTreeMap<String, i128> {
    node.status.as_ref().and_then(|s| s.allocatable.as_ref()).map(milli_values).unwrap_or_default()
}

/// The reasons the node's free resources cannot hold `request`: `Too many pods`, or
/// `Insufficient <resource>` for each resource short.
fn shortages(request: &BTreeMap<String, i128>, load: &NodeLoad<'_>) -> Vec<String> {
    let mut reasons = Vec::new();
    let max_pods = load.allocatable.get("pods").copied().unwrap_or_default() / 1000;
    if load.pods + 1 > max_pods {
        reasons.push("Too many pods".to_owned());
    }
    for (resource, wanted) in request {
        let free = load.allocatable.get(resource).copied().unwrap_or_default()
            - load.requested.get(resource).copied().unwrap_or_default();
        if *wanted > free {
            reasons.push(format!("Insufficient {resource}"));
        }
    }
    reasons
}

/// The labels of `pod`.
fn labels_of(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// The labels of `node`.
fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// A term's selector with `match_keys` (and `mismatch_keys`) added as requirements that a
/// pod's label has (or has not) the value it has in `labels`, as kube-apiserver merges a pod
/// affinity term's `matchLabelKeys` into its selector. `None` for a missing or invalid
/// selector, which matches no pod.
fn selector_with_keys(
    selector: Option<&metav1::LabelSelector>,
    labels: &BTreeMap<String, String>,
    match_keys: &[String],
    mismatch_keys: &[String],
) -> Option<LabelSelector> {
    let selector = LabelSelector::from_metav1(selector?).ok()?;
    let keyed = |keys: &[String], operator| {
        keys.iter()
            .filter_map(|key| Some((key, labels.get(key)?)))
            .filter_map(move |(key, value)| {
                Requirement::new(key, operator, vec![value.clone()]).ok()
            })
            .collect::<Vec<_>>()
    };
    let mut requirements = selector.requirements().to_vec();
    requirements.extend(keyed(match_keys, Operator::In));
    requirements.extend(keyed(mismatch_keys, Operator::NotIn));
    Some(LabelSelector::from_requirements(requirements))
}

#[cfg(test)]
mod tests;
