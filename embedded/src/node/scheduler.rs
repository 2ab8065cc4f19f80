//! Pod placement, as kube-scheduler's default filters and least-allocated scoring do it:
//! node selector and required node affinity, taints and tolerations, cordoned and not-ready
//! nodes, and resource requests against what the node has left.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};

use super::pods::{is_terminal, node_name};
use super::quantity::{add, milli_values};
use crate::selectors::{Operator, Requirement};

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

fn toleration_matches(toleration: &Toleration, taint: &Taint) -> bool {
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
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
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

/// The nodes with what the pods bound to each already take, for placing pods one after the
/// other: built once from every pod (O(pods)), then each placement costs O(nodes) and counts
/// on the next through [`Cluster::bind`], as kube-scheduler's node cache does.
pub struct Cluster<'a> {
    nodes: Vec<NodeLoad<'a>>,
}

/// One node and the requests of the unfinished pods bound to it.
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
    /// `nodes` with the pods among `pods` bound to them and not finished.
    pub fn new<P: Borrow<Pod>>(nodes: &'a [Node], pods: &[P]) -> Self {
        let mut loads: Vec<NodeLoad<'a>> = nodes
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
        let by_name: HashMap<&str, usize> =
            loads.iter().enumerate().map(|(i, load)| (load.name, i)).collect();
        for pod in pods.iter().map(Borrow::borrow).filter(|p| !is_terminal(p)) {
            let index = node_name(pod).and_then(|node| by_name.get(node));
            if let (Some(&index), Some(spec)) = (index, &pod.spec) {
                loads[index].add(spec);
            }
        }
        Cluster { nodes: loads }
    }

    /// The node for `pod`. A node fits when nothing in [`node_mismatch`] rules it out and
    /// every requested resource fits in what is left (extended resources are never
    /// over-committed; a resource the node lacks is insufficient). Among fitting nodes the
    /// least allocated wins (most free cpu and memory, in percent of allocatable, counting
    /// containers without requests as kube-scheduler does), ties going to the first name.
    pub fn place(&self, pod: &Pod) -> Result<String, Unschedulable> {
        if self.nodes.is_empty() {
            return Err(Unschedulable { message: NO_NODES_MESSAGE.to_owned() });
        }
        let default_spec = PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&default_spec);
        let request = requests(spec);
        let spread_request = pod_requests(spec, true);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut best: Option<(i128, &str)> = None;
        for load in &self.nodes {
            if let Some(mismatch) = node_mismatch(spec, load.node) {
                *reasons.entry(mismatch.to_string()).or_default() += 1;
                continue;
            }
            let shortages = shortages(&request, load);
            if !shortages.is_empty() {
                for shortage in shortages {
                    *reasons.entry(shortage).or_default() += 1;
                }
                continue;
            }
            let score = free_score(&spread_request, load);
            if best.is_none_or(|(best_score, best_name)| {
                (score, std::cmp::Reverse(load.name)) > (best_score, std::cmp::Reverse(best_name))
            }) {
                best = Some((score, load.name));
            }
        }
        match best {
            Some((_, name)) => Ok(name.to_owned()),
            None => Err(Unschedulable { message: summary(self.nodes.len(), &reasons) }),
        }
    }

    /// Counts `pod` on `node` from now on (it was placed there).
    pub fn bind(&mut self, pod: &Pod, node: &str) {
        let default_spec = PodSpec::default();
        if let Some(load) = self.nodes.iter_mut().find(|load| load.name == node) {
            load.add(pod.spec.as_ref().unwrap_or(&default_spec));
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

/// kube-scheduler's least-allocated score for cpu and memory: for each, the percentage of
/// allocatable left once the pod is placed, summed.
fn free_score(request: &BTreeMap<String, i128>, load: &NodeLoad<'_>) -> i128 {
    ["cpu", "memory"]
        .iter()
        .map(|resource| {
            let total = load.allocatable.get(*resource).copied().unwrap_or_default();
            let taken = request.get(*resource).copied().unwrap_or_default()
                + load.spread.get(*resource).copied().unwrap_or_default();
            if total <= 0 || taken > total { 0 } else { (total - taken) * 100 / total }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Affinity, NodeAffinity, NodeCondition, NodeSelector, NodeSpec, NodeStatus, PodStatus,
        ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn place<P: Borrow<Pod>>(
        pod: &Pod,
        nodes: &[Node],
        pods: &[P],
    ) -> Result<String, Unschedulable> {
        Cluster::new(nodes, pods).place(pod)
    }

    fn quantities(list: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        list.iter().map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned()))).collect()
    }

    fn node(name: &str, allocatable: &[(&str, &str)]) -> Node {
        let mut all = quantities(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
        all.extend(quantities(allocatable));
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                allocatable: Some(all),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
        }
    }

    fn labelled(mut node: Node, labels: &[(&str, &str)]) -> Node {
        node.metadata.labels =
            Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
        node
    }

    fn tainted(mut node: Node, key: &str, value: Option<&str>, effect: &str) -> Node {
        let taint = Taint {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
            time_added: None,
        };
        node.spec.get_or_insert_default().taints.get_or_insert_default().push(taint);
        node
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: (!requests.is_empty()).then(|| quantities(requests)),
                limits: (!limits.is_empty()).then(|| quantities(limits)),
                claims: None,
            }),
            ..Container::default()
        }
    }

    fn pod(name: &str, spec: PodSpec) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    fn requesting(name: &str, requests: &[(&str, &str)]) -> Pod {
        pod(name, PodSpec { containers: vec![container(requests, &[])], ..PodSpec::default() })
    }

    fn bound(mut pod: Pod, node: &str) -> Pod {
        pod.spec.get_or_insert_default().node_name = Some(node.into());
        pod
    }

    fn with_affinity(terms: Vec<NodeSelectorTerm>) -> PodSpec {
        PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms,
                    }),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            }),
            ..PodSpec::default()
        }
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn term(expressions: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm { match_expressions: Some(expressions), match_fields: None }
    }

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let given = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Toleration {
            key: given(key),
            operator: given(operator),
            value: given(value),
            effect: given(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn node_selector_must_match_every_label() {
        let spec = PodSpec {
            node_selector: Some([("disk".to_owned(), "ssd".to_owned())].into()),
            ..PodSpec::default()
        };
        let ssd = labelled(node("a", &[]), &[("disk", "ssd"), ("zone", "x")]);
        let hdd = labelled(node("b", &[]), &[("disk", "hdd")]);
        assert_eq!(node_mismatch(&spec, &ssd), None);
        assert_eq!(node_mismatch(&spec, &hdd), Some(Mismatch::NodeAffinity));
        assert_eq!(node_mismatch(&spec, &node("c", &[])), Some(Mismatch::NodeAffinity));
    }

    #[test]
    fn each_affinity_operator() {
        let n = labelled(node("n1", &[]), &[("zone", "a"), ("cores", "8")]);
        let matches = |e: NodeSelectorRequirement| {
            node_mismatch(&with_affinity(vec![term(vec![e])]), &n).is_none()
        };
        assert!(matches(expression("zone", "In", &["a", "b"])));
        assert!(!matches(expression("zone", "In", &["b"])));
        assert!(matches(expression("zone", "NotIn", &["b"])));
        assert!(!matches(expression("zone", "NotIn", &["a"])));
        assert!(matches(expression("missing", "NotIn", &["a"])));
        assert!(matches(expression("zone", "Exists", &[])));
        assert!(!matches(expression("missing", "Exists", &[])));
        assert!(matches(expression("missing", "DoesNotExist", &[])));
        assert!(!matches(expression("zone", "DoesNotExist", &[])));
        assert!(matches(expression("cores", "Gt", &["4"])));
        assert!(!matches(expression("cores", "Gt", &["8"])));
        assert!(matches(expression("cores", "Lt", &["16"])));
        assert!(!matches(expression("zone", "Lt", &["16"])), "a non-integer label never compares");
        assert!(!matches(expression("zone", "Matches", &["a"])), "unknown operators match nothing");
    }

    #[test]
    fn affinity_terms_are_ored_and_their_parts_anded() {
        let n = labelled(node("n1", &[]), &[("zone", "a"), ("gpu", "yes")]);
        let name_in = |names: &[&str]| NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expression("metadata.name", "In", names)]),
        };
        let either =
            with_affinity(vec![term(vec![expression("zone", "In", &["b"])]), name_in(&["n1"])]);
        assert_eq!(node_mismatch(&either, &n), None);
        let both = with_affinity(vec![NodeSelectorTerm {
            match_expressions: Some(vec![
                expression("zone", "In", &["a"]),
                expression("gpu", "Exists", &[]),
            ]),
            match_fields: Some(vec![expression("metadata.name", "In", &["n2"])]),
        }]);
        assert_eq!(node_mismatch(&both, &n), Some(Mismatch::NodeAffinity));
        let empty_term = with_affinity(vec![NodeSelectorTerm::default()]);
        assert_eq!(node_mismatch(&empty_term, &n), Some(Mismatch::NodeAffinity));
        let not_named = with_affinity(vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![expression("metadata.name", "NotIn", &["n1"])]),
        }]);
        assert_eq!(node_mismatch(&not_named, &n), Some(Mismatch::NodeAffinity));
    }

    #[test]
    fn tolerations_equal_exists_and_empty_key() {
        let gpu = Taint {
            key: "gpu".into(),
            value: Some("true".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        };
        assert!(tolerates(&[toleration("gpu", "Equal", "true", "NoSchedule")], &gpu));
        assert!(
            tolerates(&[toleration("gpu", "", "true", "")], &gpu),
            "Equal is the default; no effect means all"
        );
        assert!(!tolerates(&[toleration("gpu", "Equal", "false", "NoSchedule")], &gpu));
        assert!(!tolerates(&[toleration("gpu", "Equal", "true", "NoExecute")], &gpu));
        assert!(tolerates(&[toleration("gpu", "Exists", "", "")], &gpu));
        assert!(!tolerates(&[toleration("tpu", "Exists", "", "")], &gpu));
        assert!(
            tolerates(&[toleration("", "Exists", "", "")], &gpu),
            "empty key with Exists tolerates all"
        );
        assert!(!tolerates(&[toleration("", "Exists", "", "NoExecute")], &gpu));
        assert!(!tolerates(&[], &gpu));
    }

    #[test]
    fn taints_keep_pods_away_unless_tolerated() {
        let n = tainted(node("gpu-1", &[]), "gpu", Some("true"), "NoSchedule");
        let plain = PodSpec::default();
        assert_eq!(
            node_mismatch(&plain, &n).map(|m| m.to_string()).as_deref(),
            Some("node(s) had untolerated taint {gpu: true}")
        );
        let tolerant = PodSpec {
            tolerations: Some(vec![toleration("gpu", "Exists", "", "NoSchedule")]),
            ..PodSpec::default()
        };
        assert_eq!(node_mismatch(&tolerant, &n), None);
        let soft = tainted(node("soft", &[]), "gpu", None, "PreferNoSchedule");
        assert_eq!(node_mismatch(&plain, &soft), None, "PreferNoSchedule only affects scoring");
    }

    #[test]
    fn cordoned_and_not_ready_nodes() {
        let mut cordoned = node("a", &[]);
        cordoned.spec.get_or_insert_default().unschedulable = Some(true);
        assert_eq!(node_mismatch(&PodSpec::default(), &cordoned), Some(Mismatch::Unschedulable));
        let tolerant = PodSpec {
            tolerations: Some(vec![toleration(UNSCHEDULABLE_TAINT, "Exists", "", "NoSchedule")]),
            ..PodSpec::default()
        };
        assert_eq!(node_mismatch(&tolerant, &cordoned), None);

        let mut down = node("b", &[]);
        down.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        let mismatch = node_mismatch(&PodSpec::default(), &down);
        assert_eq!(mismatch, Some(Mismatch::NotReady));
        assert_eq!(
            mismatch.unwrap().to_string(),
            "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
        );
        assert_eq!(node_mismatch_ignoring_readiness(&PodSpec::default(), &down), None);
        let tolerant = PodSpec {
            tolerations: Some(vec![toleration(NOT_READY_TAINT, "Exists", "", "")]),
            ..PodSpec::default()
        };
        assert_eq!(node_mismatch(&tolerant, &down), None);
    }

    #[test]
    fn init_containers_count_at_their_peak() {
        let spec = PodSpec {
            containers: vec![
                container(&[("cpu", "200m")], &[]),
                container(&[("cpu", "300m")], &[]),
            ],
            init_containers: Some(vec![container(&[("cpu", "1"), ("memory", "1Gi")], &[])]),
            overhead: Some(quantities(&[("cpu", "10m")])),
            ..PodSpec::default()
        };
        let r = requests(&spec);
        assert_eq!(r["cpu"], 1010, "max(200m+300m, 1) + 10m overhead");
        assert_eq!(r["memory"], 1_073_741_824_000);

        let sidecar = Container {
            restart_policy: Some("Always".into()),
            ..container(&[("cpu", "500m")], &[])
        };
        let spec = PodSpec {
            containers: vec![container(&[("cpu", "1")], &[])],
            init_containers: Some(vec![sidecar, container(&[("cpu", "800m")], &[])]),
            ..PodSpec::default()
        };
        assert_eq!(
            requests(&spec)["cpu"],
            1500,
            "a sidecar runs with the containers and later init containers"
        );
    }

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let spec = PodSpec {
            containers: vec![container(
                &[("cpu", "100m")],
                &[("cpu", "2"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")],
            )],
            ..PodSpec::default()
        };
        let r = requests(&spec);
        assert_eq!(r["cpu"], 100, "an explicit request wins over the limit");
        assert_eq!(r["memory"], 1_073_741_824_000);
        assert_eq!(r["nvidia.com/gpu"], 1000);
    }

    #[test]
    fn gpus_are_never_over_committed() {
        let nodes = [node("gpu-1", &[("nvidia.com/gpu", "1")])];
        let gpu = |name: &str| {
            pod(
                name,
                PodSpec {
                    containers: vec![container(&[], &[("nvidia.com/gpu", "1")])],
                    ..PodSpec::default()
                },
            )
        };
        assert_eq!(place::<Pod>(&gpu("first"), &nodes, &[]), Ok("gpu-1".into()));
        let cluster = [bound(gpu("first"), "gpu-1")];
        let err = place(&gpu("second"), &nodes, &cluster).unwrap_err();
        assert_eq!(err.message, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
        let mut done = bound(gpu("first"), "gpu-1");
        done.status = Some(PodStatus { phase: Some("Succeeded".into()), ..PodStatus::default() });
        assert_eq!(
            place(&gpu("second"), &nodes, &[done]),
            Ok("gpu-1".into()),
            "finished pods free their GPU"
        );
        let no_gpu = [node("cpu-only", &[])];
        assert!(
            place::<Pod>(&gpu("x"), &no_gpu, &[])
                .unwrap_err()
                .message
                .contains("1 Insufficient nvidia.com/gpu")
        );
    }

    #[test]
    fn resources_and_pod_count_are_bounded() {
        let nodes = [node("small", &[("cpu", "1"), ("pods", "2")])];
        let half = |name: &str| requesting(name, &[("cpu", "500m")]);
        let cluster = [bound(half("a"), "small")];
        assert_eq!(place(&half("b"), &nodes, &cluster), Ok("small".into()));
        let cluster = [bound(half("a"), "small"), bound(half("b"), "small")];
        let message = place(&half("c"), &nodes, &cluster).unwrap_err().message;
        assert_eq!(message, "0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.");
    }

    #[test]
    fn each_placement_counts_on_the_next() {
        let nodes = [node("a", &[]), node("b", &[("pods", "1")])];
        let mut cluster = Cluster::new::<Pod>(&nodes, &[]);
        let p = |name: &str| requesting(name, &[("cpu", "1")]);
        let mut placed = Vec::new();
        for name in ["p1", "p2", "p3"] {
            let node = cluster.place(&p(name)).unwrap();
            cluster.bind(&p(name), &node);
            placed.push(node);
        }
        assert_eq!(placed, ["a", "b", "a"], "spread, then b is full at one pod");
        let message = cluster.place(&requesting("big", &[("cpu", "3")])).unwrap_err().message;
        assert_eq!(message, "0/2 nodes are available: 1 Insufficient cpu, 1 Too many pods.");
    }

    #[test]
    fn the_summary_counts_and_sorts_reasons() {
        let gpu_pod = pod(
            "p",
            PodSpec {
                containers: vec![container(&[("nvidia.com/gpu", "1")], &[])],
                node_selector: Some([("accelerator".to_owned(), "a100".to_owned())].into()),
                ..PodSpec::default()
            },
        );
        let nodes = [
            labelled(node("a", &[("nvidia.com/gpu", "1")]), &[("accelerator", "a100")]),
            node("b", &[]),
            node("c", &[]),
        ];
        let busy = [bound(pod("other", gpu_pod.spec.clone().unwrap()), "a")];
        let message = place(&gpu_pod, &nodes, &busy).unwrap_err().message;
        assert_eq!(
            message,
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."
        );
        assert_eq!(place::<Pod>(&gpu_pod, &[], &[]).unwrap_err().message, NO_NODES_MESSAGE);
    }

    #[test]
    fn the_least_allocated_node_wins_and_ties_go_by_name() {
        let nodes = [node("b", &[]), node("a", &[])];
        let p = requesting("p", &[("cpu", "1")]);
        assert_eq!(place::<Pod>(&p, &nodes, &[]), Ok("a".into()));
        let cluster = [bound(requesting("q", &[("cpu", "2")]), "a")];
        assert_eq!(place(&p, &nodes, &cluster), Ok("b".into()));
        let best_effort = |name: &str| {
            pod(name, PodSpec { containers: vec![Container::default()], ..PodSpec::default() })
        };
        let cluster = [bound(best_effort("q"), "a")];
        assert_eq!(
            place(&best_effort("r"), &nodes, &cluster),
            Ok("b".into()),
            "pods without requests still spread"
        );
        let bigger = [node("a", &[]), node("big", &[("cpu", "64"), ("memory", "256Gi")])];
        assert_eq!(place::<Pod>(&p, &bigger, &[]), Ok("big".into()));
    }
}
