//! Pod facts shared by the scheduler, the workload controllers and the kubelet: phases,
//! readiness, ownership, and pods built from templates; and the cluster-wide caches the
//! scheduler and the taint eviction controller read.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use futures::StreamExt;
use futures::stream::BoxStream;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

/// A cache of every `K` in the cluster, and the stream of its changes that keeps it filled
/// (one item per change, to be polled for the cache to move).
pub fn cache_all<K>(client: &Client) -> (Store<K>, BoxStream<'static, ()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
    K: 'static,
{
    let (store, writer) = reflector::store::<K>();
    let changes = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .map(|_| ())
        .boxed();
    (store, changes)
}

/// The annotation by which users say which pods of a controller should go first.
pub const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Whether the pod has finished for good (`Succeeded` or `Failed`).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// The pod's phase, `Pending` when it has none yet.
pub fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

/// The node the pod is bound to, if it is.
pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}

/// Whether the pod is being deleted.
pub fn is_deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Whether the pod counts toward its controller's replicas: neither finished nor being deleted.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && !is_deleting(pod)
}

/// The time the pod's `Ready` condition last became true, when it is true.
pub fn ready_since(pod: &Pod) -> Option<Timestamp> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?;
    Some(condition.last_transition_time.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0))
}

/// Whether the pod's `Ready` condition is true.
pub fn is_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

/// Whether the pod has been ready for at least `min_ready_seconds` at `now`.
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    ready_since(pod).is_some_and(|since| {
        min_ready_seconds <= 0
            || since + jiff::SignedDuration::from_secs(i64::from(min_ready_seconds)) <= now
    })
}

/// The uid of the object's controller (the owner reference with `controller: true`).
pub fn controller_uid(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// Whether the object is controlled by the owner with `uid`.
pub fn is_controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    controller_uid(meta) == Some(uid)
}

/// A controller owner reference, blocking the owner's foreground deletion, as the built-in
/// controllers set it.
pub fn controller_reference(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        controller: Some(true),
        block_owner_deletion: Some(true),
        ..owner_reference(api_version, kind, owner)
    }
}

/// A plain owner reference to `owner`: not its controller, blocking nothing.
pub fn owner_reference(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    }
}

/// A new pod from a template: the template's labels (plus `extra_labels`) and annotations, a
/// generated name with `generate_name` as prefix, and `owner` as its controller.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    generate_name: &str,
    owner: OwnerReference,
    extra_labels: &BTreeMap<String, String>,
) -> Pod {
    let source = template.metadata.clone().unwrap_or_default();
    let mut labels = source.labels.unwrap_or_default();
    labels.extend(extra_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(labels),
            annotations: source.annotations,
            finalizers: source.finalizers,
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Whether a container's `resources` are set but empty, which Go's types cannot tell from unset.
fn has_empty_resources(container: &Container) -> bool {
    container.resources.as_ref().is_some_and(|r| *r == Default::default())
}

/// Unsets the empty `resources` of a template's containers and init containers.
pub fn drop_empty_resources(template: &mut PodTemplateSpec) {
    if let Some(spec) = template.spec.as_mut() {
        let init = spec.init_containers.iter_mut().flatten();
        for container in spec.containers.iter_mut().chain(init) {
            if has_empty_resources(container) {
                container.resources = None;
            }
        }
    }
}

/// A short stable hash of a pod template, as `pod-template-hash` and
/// `controller-revision-hash` labels carry: the same template always gives the same value,
/// across restarts and Rust versions.
pub fn template_hash(template: &PodTemplateSpec) -> String {
    // Empty `resources` are no resources, as in Go's types: a template rolled back from a
    // revision (which Go's encoding gives them) is the template it was.
    let containers = template
        .spec
        .iter()
        .flat_map(|s| s.containers.iter().chain(s.init_containers.iter().flatten()));
    let bytes = if containers.clone().any(has_empty_resources) {
        let mut template = template.clone();
        drop_empty_resources(&mut template);
        serde_json::to_vec(&template)
    } else {
        serde_json::to_vec(template)
    };
    // FNV-1a over the canonical JSON (struct fields in declaration order, maps sorted): a few
    // lines, and std's hashers are not stable across releases.
    let bytes = bytes.unwrap_or_default();
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    // The alphabet Kubernetes uses for generated names: no vowels, no confusable characters.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out = String::new();
    let mut rest = hash;
    for _ in 0..10 {
        out.push(char::from(ALPHABET[(rest % 27) as usize]));
        rest /= 27;
        if rest == 0 {
            break;
        }
    }
    out
}

/// Sorts pods into the order upstream controllers delete surplus pods in, first to go first:
/// unassigned before assigned, Pending before Unknown before Running, not ready before ready,
/// lower `pod-deletion-cost` first, pods doubled up on a node first, more recently ready first,
/// more restarts first, newer first.
pub fn sort_for_deletion<'a>(pods: &mut [&'a Pod]) {
    let mut on_node: BTreeMap<&str, usize> = BTreeMap::new();
    for pod in pods.iter() {
        *on_node.entry(node_name(pod).unwrap_or_default()).or_default() += 1;
    }
    let mut ranked: Vec<(&'a Pod, usize)> =
        pods.iter().map(|pod| (*pod, on_node[node_name(pod).unwrap_or_default()])).collect();
    ranked.sort_by(|a, b| deletion_order(*a, *b));
    for (slot, (pod, _)) in pods.iter_mut().zip(ranked) {
        *slot = pod;
    }
}

/// Upstream's scale-down ranking; `Less` means "delete first". Each pod comes with the number
/// of the ranked pods on its node (doubled-up pods go first).
fn deletion_order((a, a_rank): (&Pod, usize), (b, b_rank): (&Pod, usize)) -> Ordering {
    let (a_node, b_node) = (node_name(a).unwrap_or_default(), node_name(b).unwrap_or_default());
    let unassigned_first = if a_node != b_node && (a_node.is_empty() || b_node.is_empty()) {
        b_node.is_empty().cmp(&a_node.is_empty())
    } else {
        Ordering::Equal
    };
    unassigned_first
        .then_with(|| phase_ordinal(a).cmp(&phase_ordinal(b)))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| b_rank.cmp(&a_rank))
        .then_with(|| {
            if is_ready(a) && is_ready(b) {
                later_or_unset_first(ready_time(a), ready_time(b))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| restarts(b).cmp(&restarts(a)))
        .then_with(|| later_or_unset_first(creation_time(a), creation_time(b)))
}

/// Pending before Unknown before Running.
fn phase_ordinal(pod: &Pod) -> u8 {
    match phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST_ANNOTATION))
        .and_then(|cost| cost.parse().ok())
        .unwrap_or(0)
}

/// When the pod became ready, `None` when that time is not recorded.
fn ready_time(pod: &Pod) -> Option<Timestamp> {
    ready_since(pod).filter(|t| *t != Timestamp::UNIX_EPOCH)
}

fn creation_time(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// Unset times first, then the later time first.
fn later_or_unset_first(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// The highest restart count of the pod's containers, then of its init containers.
fn restarts(pod: &Pod) -> (i32, i32) {
    let status = pod.status.as_ref();
    let max = |statuses: Option<&Vec<k8s_openapi::api::core::v1::ContainerStatus>>| {
        statuses.into_iter().flatten().map(|s| s.restart_count).max().unwrap_or(0)
    };
    (
        max(status.and_then(|s| s.container_statuses.as_ref())),
        max(status.and_then(|s| s.init_container_statuses.as_ref())),
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn ready_pod(since: Timestamp) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(since)),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn availability_waits_for_min_ready_seconds() {
        let since: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let pod = ready_pod(since);
        assert!(is_ready(&pod) && is_active(&pod));
        assert!(is_available(&pod, 0, since));
        assert!(!is_available(&pod, 5, since + jiff::SignedDuration::from_secs(4)));
        assert!(is_available(&pod, 5, since + jiff::SignedDuration::from_secs(5)));
        assert!(!is_ready(&Pod::default()));
    }

    #[test]
    fn template_hash_is_stable_and_tells_templates_apart() {
        let template = |image: &str| PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some(image.into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        };
        let a = template_hash(&template("nginx:1"));
        assert_eq!(a, template_hash(&template("nginx:1")));
        assert_ne!(a, template_hash(&template("nginx:2")));
        let mut empty_resources = template("nginx:1");
        empty_resources.spec.as_mut().unwrap().containers[0].resources = Some(Default::default());
        assert_eq!(a, template_hash(&empty_resources), "empty resources are none");
        assert!(a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
    }

    #[test]
    fn pods_from_templates_carry_labels_and_their_controller() {
        let owner_meta = ObjectMeta {
            name: Some("web".into()),
            uid: Some("u1".into()),
            ..ObjectMeta::default()
        };
        let owner = controller_reference("apps/v1", "ReplicaSet", &owner_meta);
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_owned(), "web".to_owned())].into()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec::default()),
        };
        let extra = [("pod-template-hash".to_owned(), "abc".to_owned())].into();
        let pod = pod_from_template(&template, "ns", "web-", owner, &extra);
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.labels.as_ref().unwrap().len(), 2);
        assert!(is_controlled_by(&pod.metadata, "u1"));
        assert!(!is_controlled_by(&pod.metadata, "u2"));
    }
}
