//! Placement: filters, scores and the summary of a pod that fits nowhere.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeCondition, NodeSelector, NodeSpec, NodeStatus, PodAffinity,
    PodAffinityTerm, PodAntiAffinity, PodStatus, PreferredSchedulingTerm, ResourceRequirements,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as LabelSelectorObject, ObjectMeta,
};

use super::*;

fn place<P: Borrow<Pod>>(pod: &Pod, nodes: &[Node], pods: &[P]) -> Result<String, Unschedulable> {
    Cluster::new(nodes, pods, &NamespaceLabels::new()).place(pod)
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
        containers: vec![container(&[("cpu", "200m")], &[]), container(&[("cpu", "300m")], &[])],
        init_containers: Some(vec![container(&[("cpu", "1"), ("memory", "1Gi")], &[])]),
        overhead: Some(quantities(&[("cpu", "10m")])),
        ..PodSpec::default()
    };
    let r = requests(&spec);
    assert_eq!(r["cpu"], 1010, "max(200m+300m, 1) + 10m overhead");
    assert_eq!(r["memory"], 1_073_741_824_000);

    let sidecar =
        Container { restart_policy: Some("Always".into()), ..container(&[("cpu", "500m")], &[]) };
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
    let namespaces = NamespaceLabels::new();
    let mut cluster = Cluster::new::<Pod>(&nodes, &[], &namespaces);
    let pods = ["p1", "p2", "p3"].map(|name| requesting(name, &[("cpu", "1")]));
    let mut placed = Vec::new();
    for pod in &pods {
        let node = cluster.place(pod).unwrap();
        cluster.bind(pod, &node);
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

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

/// A node with the hostname label and, if given, a zone.
fn host(name: &str, zone: Option<&str>) -> Node {
    let mut labels = vec![(HOSTNAME, name)];
    labels.extend(zone.map(|zone| (ZONE, zone)));
    labelled(node(name, &[]), &labels)
}

/// A pod in `namespace` with `labels`.
fn member(name: &str, namespace: &str, labels: &[(&str, &str)], spec: PodSpec) -> Pod {
    let mut pod = pod(name, spec);
    pod.metadata.namespace = Some(namespace.into());
    pod.metadata.labels =
        Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
    pod
}

/// A term about the pods labelled `app=<app>`, over `key`'s domains.
fn about(app: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(LabelSelectorObject {
            match_labels: Some([("app".to_owned(), app.to_owned())].into()),
            match_expressions: None,
        }),
        topology_key: key.into(),
        ..PodAffinityTerm::default()
    }
}

fn required(near: Vec<PodAffinityTerm>, away: Vec<PodAffinityTerm>) -> PodSpec {
    PodSpec {
        affinity: Some(Affinity {
            pod_affinity: (!near.is_empty()).then(|| PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(near),
                ..PodAffinity::default()
            }),
            pod_anti_affinity: (!away.is_empty()).then(|| PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(away),
                ..PodAntiAffinity::default()
            }),
            ..Affinity::default()
        }),
        ..PodSpec::default()
    }
}

/// Places each pod in turn, binding it where it went, and returns where each went.
fn place_each(nodes: &[Node], bound: &[Pod], pods: &[Pod]) -> Vec<Result<String, String>> {
    let namespaces = NamespaceLabels::new();
    let mut cluster = Cluster::new(nodes, bound, &namespaces);
    pods.iter()
        .map(|pod| {
            let placed = cluster.place(pod).map_err(|e| e.message)?;
            cluster.bind(pod, &placed);
            Ok(placed)
        })
        .collect()
}

#[test]
fn required_anti_affinity_puts_replicas_on_different_nodes() {
    let nodes = [host("a", None), host("b", None), host("c", None)];
    let replica = |name| {
        member(name, "default", &[("app", "web")], required(vec![], vec![about("web", HOSTNAME)]))
    };
    let placed = place_each(&nodes, &[], &["w1", "w2", "w3", "w4"].map(replica));
    assert_eq!(placed[..3], [Ok("a".into()), Ok("b".into()), Ok("c".into())]);
    assert_eq!(
        placed[3],
        Err("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.".into())
    );
}

#[test]
fn a_placed_pods_anti_affinity_keeps_the_pods_it_names_away() {
    let nodes = [host("a", None), host("b", None)];
    let loner = member("loner", "default", &[], required(vec![], vec![about("noisy", HOSTNAME)]));
    let noisy = || member("n", "default", &[("app", "noisy")], PodSpec::default());
    assert_eq!(place(&noisy(), &nodes, &[bound(loner.clone(), "a")]), Ok("b".into()));
    assert_eq!(
        place(&noisy(), &nodes[..1], &[bound(loner, "a")]).unwrap_err().message,
        "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    );
    // Only in its own namespace, unless the term names others.
    let elsewhere = member("n", "other", &[("app", "noisy")], PodSpec::default());
    let loner = member("loner", "default", &[], required(vec![], vec![about("noisy", HOSTNAME)]));
    assert_eq!(place(&elsewhere, &nodes[..1], &[bound(loner, "a")]), Ok("a".into()));
}

#[test]
fn required_affinity_follows_the_pods_it_names_by_domain() {
    let nodes = [host("a", Some("x")), host("b", Some("y")), host("c", Some("y")), host("d", None)];
    let cache = bound(member("cache", "default", &[("app", "cache")], PodSpec::default()), "b");
    let web =
        member("web", "default", &[("app", "web")], required(vec![about("cache", ZONE)], vec![]));
    let cache = [cache];
    let placed = place(&web, &nodes, &cache);
    assert!(matches!(placed.as_deref(), Ok("b" | "c")), "b's zone: {placed:?}");
    let message = place::<Pod>(&web, &nodes, &[]).unwrap_err().message;
    assert_eq!(message, "0/4 nodes are available: 4 node(s) didn't match pod affinity rules.");
    // The first pod of a group that names itself goes anywhere with the key.
    let first =
        member("p", "default", &[("app", "cache")], required(vec![about("cache", ZONE)], vec![]));
    assert_eq!(
        place_each(&nodes[2..], &[], &[first.clone(), first]),
        [Ok("c".into()), Ok("c".into())],
        "then the group follows it; d has no zone"
    );
}

#[test]
fn terms_reach_the_namespaces_they_name_or_select() {
    let nodes = [host("a", None), host("b", None)];
    let theirs = bound(member("db", "blue", &[("app", "db")], PodSpec::default()), "a");
    let mut term = about("db", HOSTNAME);
    let spec = |term: &PodAffinityTerm| required(vec![term.clone()], vec![]);
    let app = |term: &PodAffinityTerm| member("app", "default", &[], spec(term));
    let pods = [theirs];
    let namespaces: NamespaceLabels = [
        ("blue".to_owned(), [("team".to_owned(), "blue".to_owned())].into()),
        ("default".to_owned(), BTreeMap::new()),
    ]
    .into();
    let place_in = |pod: &Pod| Cluster::new(&nodes, &pods, &namespaces).place(pod);
    assert!(place_in(&app(&term)).is_err(), "the pod's own namespace holds no db");
    term.namespaces = Some(vec!["blue".into()]);
    assert_eq!(place_in(&app(&term)), Ok("a".into()));
    term.namespaces = None;
    term.namespace_selector = Some(LabelSelectorObject {
        match_labels: Some([("team".to_owned(), "blue".to_owned())].into()),
        match_expressions: None,
    });
    assert_eq!(place_in(&app(&term)), Ok("a".into()));
    term.namespace_selector = Some(LabelSelectorObject::default());
    assert_eq!(place_in(&app(&term)), Ok("a".into()), "an empty selector takes every namespace");
}

#[test]
fn match_label_keys_narrow_a_term_to_pods_sharing_the_pods_value() {
    let nodes = [host("a", None)];
    let mut term = about("web", HOSTNAME);
    term.match_label_keys = Some(vec!["pod-template-hash".into()]);
    let replica = |hash: &str| {
        let labels = [("app", "web"), ("pod-template-hash", hash)];
        member("w", "default", &labels, required(vec![], vec![term.clone()]))
    };
    let old = [bound(replica("old"), "a")];
    assert_eq!(place(&replica("new"), &nodes, &old), Ok("a".into()), "another revision");
    assert!(place(&replica("old"), &nodes, &old).is_err(), "the same revision");
}

fn spread_over(key: &str, max_skew: i32, hard: bool) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        label_selector: Some(LabelSelectorObject {
            match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
            match_expressions: None,
        }),
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: if hard { "DoNotSchedule" } else { "ScheduleAnyway" }.into(),
        ..TopologySpreadConstraint::default()
    }
}

fn spread_pod(name: &str, constraints: Vec<TopologySpreadConstraint>) -> Pod {
    let spec = PodSpec { topology_spread_constraints: Some(constraints), ..PodSpec::default() };
    member(name, "default", &[("app", "web")], spec)
}

#[test]
fn do_not_schedule_keeps_zones_within_max_skew() {
    // Zone x has two nodes and so more room; spreading still alternates the zones.
    let nodes = [host("a", Some("x")), host("b", Some("x")), host("c", Some("y"))];
    let pods = ["w1", "w2", "w3", "w4"].map(|n| spread_pod(n, vec![spread_over(ZONE, 1, true)]));
    let placed = place_each(&nodes, &[], &pods);
    let zones: Vec<&str> =
        placed.iter().map(|n| if n.as_deref() == Ok("c") { "y" } else { "x" }).collect();
    assert_eq!(zones.iter().filter(|z| **z == "y").count(), 2, "{placed:?}");

    let crowded = [bound(spread_pod("w1", vec![]), "a"), bound(spread_pod("w2", vec![]), "b")];
    let next = spread_pod("w3", vec![spread_over(ZONE, 1, true)]);
    assert_eq!(place(&next, &nodes, &crowded), Ok("c".into()));
    assert_eq!(
        place(&next, &nodes[..2], &crowded).map(drop),
        Ok(()),
        "one zone alone is never skewed"
    );
    // A tainted node's zone still counts (nodeTaintsPolicy defaults to Ignore), and a node
    // without a zone cannot take the pod.
    let nodes = [
        host("a", Some("x")),
        tainted(host("c", Some("y")), "gpu", None, "NoSchedule"),
        node("bare", &[]),
    ];
    assert_eq!(
        place(&next, &nodes, &crowded[..1]).unwrap_err().message,
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) didn't match pod topology spread constraints (missing required label), 1 node(s) had untolerated taint {gpu: }."
    );
    let mut honouring = spread_over(ZONE, 1, true);
    honouring.node_taints_policy = Some("Honor".into());
    let next = spread_pod("w3", vec![honouring]);
    assert_eq!(place(&next, &nodes, &crowded[..1]), Ok("a".into()), "with Honor it does not");
}

#[test]
fn min_domains_counts_missing_domains_as_empty() {
    let nodes = [host("a", Some("x"))];
    let mut constraint = spread_over(ZONE, 1, true);
    constraint.min_domains = Some(2);
    let pods = ["w1", "w2"].map(|n| spread_pod(n, vec![constraint.clone()]));
    let placed = place_each(&nodes, &[], &pods);
    assert_eq!(placed[0], Ok("a".into()));
    assert!(placed[1].is_err(), "a second pod would skew the missing zone by 2: {placed:?}");
}

#[test]
fn preferences_outweigh_free_room() {
    // b has far more room, which alone would win.
    let big =
        labelled(node("b", &[("cpu", "64"), ("memory", "256Gi")]), &[(HOSTNAME, "b"), (ZONE, "y")]);
    let nodes = [host("a", Some("x")), big];
    let one = PodSpec { containers: vec![Container::default()], ..PodSpec::default() };
    let free = member("p", "default", &[("app", "web")], one.clone());
    assert_eq!(place::<Pod>(&free, &nodes, &[]), Ok("b".into()));

    let crowd = [bound(free.clone(), "b"), bound(free.clone(), "b")];
    let mut soft = spread_pod("w", vec![spread_over(ZONE, 1, false)]);
    soft.spec.as_mut().unwrap().containers = one.containers.clone();
    assert_eq!(place(&soft, &nodes, &crowd), Ok("a".into()), "ScheduleAnyway");

    let mut shy = free.clone();
    shy.spec = Some(PodSpec {
        affinity: Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    WeightedPodAffinityTerm {
                        pod_affinity_term: about("web", HOSTNAME),
                        weight: 100,
                    },
                ]),
                ..PodAntiAffinity::default()
            }),
            ..Affinity::default()
        }),
        ..one.clone()
    });
    assert_eq!(place(&shy, &nodes, &crowd[..1]), Ok("a".into()), "preferred anti-affinity");

    let mut choosy = free.clone();
    choosy.spec = Some(PodSpec {
        affinity: Some(Affinity {
            node_affinity: Some(NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    PreferredSchedulingTerm {
                        preference: term(vec![expression(ZONE, "In", &["x"])]),
                        weight: 1,
                    },
                ]),
                ..NodeAffinity::default()
            }),
            ..Affinity::default()
        }),
        ..one.clone()
    });
    assert_eq!(place::<Pod>(&choosy, &nodes, &[]), Ok("a".into()), "preferred node affinity");

    let avoided = [nodes[0].clone(), tainted(nodes[1].clone(), "spot", None, "PreferNoSchedule")];
    assert_eq!(place::<Pod>(&free, &avoided, &[]), Ok("a".into()), "PreferNoSchedule");
    let mut tolerant = free.clone();
    tolerant.spec = Some(PodSpec {
        tolerations: Some(vec![toleration("spot", "Exists", "", "PreferNoSchedule")]),
        ..one.clone()
    });
    assert_eq!(place::<Pod>(&tolerant, &avoided, &[]), Ok("b".into()));
}

fn prioritized(mut pod: Pod, priority: i32) -> Pod {
    pod.spec.get_or_insert_default().priority = Some(priority);
    pod
}

/// The node and victims' names of `pod`'s preemption.
fn preempt(pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Option<(String, Vec<String>)> {
    let namespaces = NamespaceLabels::new();
    let cluster = Cluster::new(nodes, pods, &namespaces);
    assert!(cluster.place(pod).is_err(), "preemption is for pods that fit nowhere");
    let preemption = cluster.preemption(pod)?;
    let victims = preemption.victims.iter().map(|v| v.metadata.name.clone().unwrap()).collect();
    Some((preemption.node, victims))
}

#[test]
fn a_pod_preempts_pods_of_lower_priority_only() {
    let nodes = [node("gpu-1", &[("nvidia.com/gpu", "1")])];
    let gpu = |name: &str, priority: i32| {
        prioritized(requesting(name, &[("nvidia.com/gpu", "1")]), priority)
    };
    let low = [bound(gpu("low", 100), "gpu-1")];
    assert_eq!(
        preempt(&gpu("high", 1000), &nodes, &low),
        Some(("gpu-1".into(), vec!["low".into()]))
    );
    assert_eq!(preempt(&gpu("same", 100), &nodes, &low), None, "equal priority preempts nothing");
    let mut polite = gpu("polite", 1000);
    polite.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    assert_eq!(preempt(&polite, &nodes, &low), None);
    let cordoned = [tainted(nodes[0].clone(), UNSCHEDULABLE_TAINT, None, "NoSchedule")];
    assert_eq!(preempt(&gpu("high", 1000), &cordoned, &low), None, "only resources are freed");
}

#[test]
fn preemption_evicts_the_fewest_least_important_pods() {
    let nodes = [node("a", &[("cpu", "2")]), node("b", &[("cpu", "2")])];
    let cpu = |name: &str, priority: i32, node: &str| {
        bound(prioritized(requesting(name, &[("cpu", "1")]), priority), node)
    };
    let pods = [
        cpu("a-200", 200, "a"),
        cpu("a-300", 300, "a"),
        cpu("b-100", 100, "b"),
        cpu("b-400", 400, "b"),
    ];
    let high = prioritized(requesting("high", &[("cpu", "1")]), 1000);
    // On b the highest victim would be 100, on a 200: b wins, and b-400 is spared.
    assert_eq!(preempt(&high, &nodes, &pods), Some(("b".into(), vec!["b-100".into()])));
    let big = prioritized(requesting("big", &[("cpu", "2")]), 1000);
    assert_eq!(
        preempt(&big, &nodes, &pods),
        Some(("a".into(), vec!["a-300".into(), "a-200".into()]))
    );
}

#[test]
fn a_pod_waits_for_the_victims_of_its_earlier_preemption() {
    let nodes = [node("gpu-1", &[("nvidia.com/gpu", "1")])];
    let mut going = bound(prioritized(requesting("low", &[("nvidia.com/gpu", "1")]), 100), "gpu-1");
    going.metadata.deletion_timestamp = Some(metav1::Time(jiff::Timestamp::now()));
    let mut high = prioritized(requesting("high", &[("nvidia.com/gpu", "1")]), 1000);
    high.status =
        Some(PodStatus { nominated_node_name: Some("gpu-1".into()), ..PodStatus::default() });
    assert_eq!(preempt(&high, &nodes, &[going]), None);
}
