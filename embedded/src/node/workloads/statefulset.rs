//! The StatefulSet planner: pods with stable names `<set>-<ordinal>` and a claim per volume
//! claim template each, created and removed in ordinal order (`OrderedReady`) or all at once
//! (`Parallel`), replaced highest ordinal first under `RollingUpdate`, as the upstream
//! StatefulSet controller does.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetStatus};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::daemonset::REVISION_HASH_LABEL;
use super::plan::nonzero;
use super::replicaset::BURST_REPLICAS;
use crate::node::events::EventNote;
use crate::node::pods::{
    controller_reference, is_available, is_deleting, is_ready, is_terminal, owner_reference, phase,
    pod_from_template, ready_since, template_hash,
};

/// The label carrying a stateful pod's own name.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label carrying a stateful pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// What one reconcile of a StatefulSet should do.
///
/// The reconciler applies it in field order: the claims, then the pods to create, then the
/// deletions (a pod is never both created and deleted in one plan).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatefulSetPlan {
    /// Claims from `volumeClaimTemplates` that the pods being created (or pending pods) need
    /// and that do not exist yet, named `<template>-<set>-<ordinal>`. An `AlreadyExists`
    /// refusal means another reconcile made the claim: not an error.
    pub create_claims: Vec<PersistentVolumeClaim>,
    /// Pods to create, each with its fixed name `<set>-<ordinal>` (no `generateName`) and
    /// the StatefulSet as controller, in ascending ordinal order.
    pub create: Vec<Pod>,
    /// Claims to give new owner references before the pods are deleted: under the
    /// `whenScaled: Delete` retention policy, the claims of a pod removed by a scale-down get
    /// that pod as owner, so that they go with it. Each entry is the claim's name and its whole
    /// new list of owner references.
    pub claim_owners: Vec<(String, Vec<OwnerReference>)>,
    /// Names of pods to delete: failed or succeeded pods (recreated by a later reconcile),
    /// surplus pods on scale-down (highest ordinal first), and outdated pods under
    /// `RollingUpdate`.
    pub delete: Vec<String>,
    /// The status to write, computed from the pods as they are now.
    pub status: StatefulSetStatus,
    /// When to reconcile again without a change: when a ready pod will turn available
    /// because its `minReadySeconds` have elapsed.
    pub requeue_after: Option<Duration>,
    /// Upstream's `SuccessfulCreate`/`SuccessfulDelete` events, one per action above and in
    /// the same order: one per claim in `create_claims`, then one per pod in `create`, then
    /// one per name in `delete`. The reconciler records each only once its API call has
    /// succeeded (a claim that already existed gets none).
    pub events: Vec<EventNote>,
}

/// Plans one reconcile of `set` given the pods it controls (in any state) and the claims of
/// its namespace (whoever owns them: they are matched by name), at `now`.
///
/// Pods whose names are not `<set>-<ordinal>` are ignored. Under `OrderedReady` (the
/// default) the plan creates or deletes at most one pod, walking up the ordinals: a missing
/// pod is created once every lower one is running and available and no pod is terminating; a
/// failed pod is deleted; then, with every pod in range healthy, the highest surplus pod is
/// deleted. Under `Parallel` all missing pods (up to [`BURST_REPLICAS`]) are created and all
/// failed or surplus pods deleted at once. Then, under `RollingUpdate`, the highest pod at or
/// above the partition (counted from the first ordinal, as upstream does) whose revision is
/// outdated is deleted, once every pod above it is healthy; it is recreated at the update
/// revision by a later reconcile.
///
/// A pod is created from the set's template at the update revision, except one below the
/// partition of a rolling update, which is created, as upstream creates it, from the template of
/// the current revision (`status.currentRevision`), given as `current_template` from its
/// `ControllerRevision`; without it, the set's template is used. Claims get the set as
/// (non-controller) owner under the `whenDeleted: Delete` retention policy, and under
/// `whenScaled: Delete` the claims of a pod a scale-down removes get that pod as owner, as
/// upstream gives them. A StatefulSet being deleted only gets its status.
pub fn plan_statefulset(
    set: &StatefulSet,
    pods: &[Pod],
    claims: &[PersistentVolumeClaim],
    current_template: Option<&PodTemplateSpec>,
    now: Timestamp,
) -> StatefulSetPlan {
    let stateful = Stateful::new(set, current_template, now);
    let members: BTreeMap<i64, &Pod> =
        pods.iter().filter_map(|pod| Some((stateful.ordinal_of(pod)?, pod))).collect();
    let mut plan = Builder {
        known_claims: claims.iter().filter_map(|c| c.metadata.name.clone()).collect(),
        existing_claims: claims,
        ..Builder::default()
    };
    if set.metadata.deletion_timestamp.is_none() {
        manage(&stateful, &members, &mut plan);
    }
    let (claims, claim_events): (Vec<_>, Vec<_>) = plan.create_claims.into_iter().unzip();
    let (create, create_events): (Vec<_>, Vec<_>) = plan.create.into_iter().unzip();
    let (delete, delete_events): (Vec<_>, Vec<_>) = plan.delete.into_iter().unzip();
    StatefulSetPlan {
        create_claims: claims,
        create,
        claim_owners: plan.claim_owners,
        delete,
        status: status(&stateful, &members),
        requeue_after: requeue_after(&stateful, &members),
        events: claim_events.into_iter().chain(create_events).chain(delete_events).collect(),
    }
}

/// Whether `pod` is named as a member of `set`, `<set>-<digits>`: only such pods are adopted
/// (upstream's `isMemberOf`).
pub fn is_member(set: &StatefulSet, pod: &Pod) -> bool {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    name.rsplit_once('-').is_some_and(|(parent, ordinal)| {
        Some(parent) == set.metadata.name.as_deref()
            && !ordinal.is_empty()
            && ordinal.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The facts of the StatefulSet the plan works from.
struct Stateful<'a> {
    set: &'a StatefulSet,
    spec: &'a StatefulSetSpec,
    name: &'a str,
    namespace: &'a str,
    /// The update revision, `<set>-<template hash>`.
    revision: String,
    /// The current revision and its template, when it is not the update revision.
    current: Option<(String, &'a PodTemplateSpec)>,
    /// The first ordinal, and one past the last.
    start: i64,
    end: i64,
    /// The lowest ordinal a rolling update replaces.
    update_from: i64,
    parallel: bool,
    rolling_update: bool,
    min_ready_seconds: i32,
    now: Timestamp,
}

impl<'a> Stateful<'a> {
    fn new(
        set: &'a StatefulSet,
        current_template: Option<&'a PodTemplateSpec>,
        now: Timestamp,
    ) -> Self {
        static EMPTY: std::sync::OnceLock<StatefulSetSpec> = std::sync::OnceLock::new();
        let spec = set.spec.as_ref().unwrap_or_else(|| EMPTY.get_or_init(StatefulSetSpec::default));
        let name = set.metadata.name.as_deref().unwrap_or_default();
        let start = i64::from(spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0).max(0));
        let replicas = i64::from(spec.replicas.unwrap_or(1).max(0));
        let strategy = spec.update_strategy.as_ref();
        let partition = strategy
            .and_then(|s| s.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0)
            .max(0);
        let revision = format!("{name}-{}", template_hash(&spec.template));
        let current_revision = set.status.as_ref().and_then(|s| s.current_revision.clone());
        let current = current_revision.filter(|current| *current != revision).zip(current_template);
        Stateful {
            set,
            spec,
            name,
            namespace: set.metadata.namespace.as_deref().unwrap_or_default(),
            revision,
            current,
            start,
            end: start + replicas,
            update_from: start + i64::from(partition),
            parallel: spec.pod_management_policy.as_deref() == Some("Parallel"),
            rolling_update: strategy.and_then(|s| s.type_.as_deref()) != Some("OnDelete"),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            now,
        }
    }

    fn pod_name(&self, ordinal: i64) -> String {
        format!("{}-{ordinal}", self.name)
    }

    /// The ordinal of a pod named `<set>-<ordinal>` (in canonical form), else `None`.
    fn ordinal_of(&self, pod: &Pod) -> Option<i64> {
        let suffix = pod.metadata.name.as_deref()?.strip_prefix(self.name)?.strip_prefix('-')?;
        let ordinal: i64 = suffix.parse().ok().filter(|n| *n >= 0)?;
        (ordinal.to_string() == suffix).then_some(ordinal)
    }

    fn in_range(&self, ordinal: i64) -> bool {
        (self.start..self.end).contains(&ordinal)
    }

    /// Running and ready since at least `minReadySeconds`.
    fn available(&self, pod: &Pod) -> bool {
        phase(pod) == "Running" && is_available(pod, self.min_ready_seconds, self.now)
    }

    /// Available and not being deleted: what lets a reconcile go on past a pod.
    fn healthy(&self, pod: &Pod) -> bool {
        self.available(pod) && !is_deleting(pod)
    }

    fn is_updated(&self, pod: &Pod) -> bool {
        revision(pod) == Some(self.revision.as_str())
    }

    /// The valid volume claim templates, with their names.
    fn claim_templates(&self) -> impl Iterator<Item = (&'a str, &'a PersistentVolumeClaim)> {
        self.spec
            .volume_claim_templates
            .iter()
            .flatten()
            .filter_map(|t| Some((t.metadata.name.as_deref().filter(|n| !n.is_empty())?, t)))
    }

    /// Whether the claims of pods removed by a scale-down go with them.
    fn delete_claims_when_scaled(&self) -> bool {
        let retention = self.spec.persistent_volume_claim_retention_policy.as_ref();
        retention.and_then(|r| r.when_scaled.as_deref()) == Some("Delete")
    }

    fn claim_name(&self, template: &str, ordinal: i64) -> String {
        format!("{template}-{}-{ordinal}", self.name)
    }

    /// The claim `name` from `template`: the template's spec, labels and annotations, plus
    /// the selector's labels.
    fn claim(&self, template: &PersistentVolumeClaim, name: String) -> PersistentVolumeClaim {
        let mut labels = template.metadata.labels.clone().unwrap_or_default();
        labels.extend(self.spec.selector.match_labels.clone().unwrap_or_default());
        let retention = self.spec.persistent_volume_claim_retention_policy.as_ref();
        let owned = retention.and_then(|r| r.when_deleted.as_deref()) == Some("Delete");
        let owner = owner_reference("apps/v1", "StatefulSet", &self.set.metadata);
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(self.namespace.to_owned()),
                labels: (!labels.is_empty()).then_some(labels),
                annotations: template.metadata.annotations.clone(),
                owner_references: owned.then(|| vec![owner]),
                ..ObjectMeta::default()
            },
            spec: template.spec.clone(),
            status: None,
        }
    }

    /// The pod at `ordinal`: the template of its revision (see [`plan_statefulset`]) with the
    /// pod's identity (name, labels, hostname, subdomain), the revision, and its claims as
    /// volumes.
    fn new_pod(&self, ordinal: i64) -> Pod {
        let name = self.pod_name(ordinal);
        let (revision, template) = match &self.current {
            Some((revision, template)) if self.rolling_update && ordinal < self.update_from => {
                (revision, *template)
            }
            _ => (&self.revision, &self.spec.template),
        };
        let labels = BTreeMap::from([
            (POD_NAME_LABEL.to_owned(), name.clone()),
            (POD_INDEX_LABEL.to_owned(), ordinal.to_string()),
            (REVISION_HASH_LABEL.to_owned(), revision.clone()),
        ]);
        let mut pod = pod_from_template(
            template,
            self.namespace,
            "",
            controller_reference("apps/v1", "StatefulSet", &self.set.metadata),
            &labels,
        );
        pod.metadata.generate_name = None;
        pod.metadata.name = Some(name.clone());
        let spec = pod.spec.get_or_insert_default();
        spec.hostname = Some(name);
        spec.subdomain = self.spec.service_name.clone().filter(|s| !s.is_empty());
        let claimed: BTreeSet<&str> = self.claim_templates().map(|(name, _)| name).collect();
        if !claimed.is_empty() {
            let mut volumes: Vec<Volume> = self
                .claim_templates()
                .map(|(template, _)| Volume {
                    name: template.to_owned(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: self.claim_name(template, ordinal),
                        read_only: None,
                    }),
                    ..Volume::default()
                })
                .collect();
            let own = spec.volumes.take().unwrap_or_default();
            volumes.extend(own.into_iter().filter(|v| !claimed.contains(v.name.as_str())));
            spec.volumes = Some(volumes);
        }
        pod
    }
}

/// The revision a pod was created at.
fn revision(pod: &Pod) -> Option<&str> {
    pod.metadata.labels.as_ref()?.get(REVISION_HASH_LABEL).map(String::as_str)
}

/// The plan under construction, each action with its event.
#[derive(Default)]
struct Builder<'a> {
    known_claims: BTreeSet<String>,
    existing_claims: &'a [PersistentVolumeClaim],
    claim_owners: Vec<(String, Vec<OwnerReference>)>,
    create_claims: Vec<(PersistentVolumeClaim, EventNote)>,
    create: Vec<(Pod, EventNote)>,
    delete: Vec<(String, EventNote)>,
}

impl Builder<'_> {
    /// Creates the claims of the pod at `ordinal` that neither exist nor are planned.
    fn claims(&mut self, stateful: &Stateful, ordinal: i64) {
        let pod = stateful.pod_name(ordinal);
        for (template_name, template) in stateful.claim_templates() {
            let name = stateful.claim_name(template_name, ordinal);
            if !self.known_claims.insert(name.clone()) {
                continue;
            }
            let note =
                format!("create Claim {name} Pod {pod} in StatefulSet {} success", stateful.name);
            let claim = stateful.claim(template, name);
            self.create_claims.push((claim, EventNote::normal("SuccessfulCreate", note)));
        }
    }

    /// Creates the pod at `ordinal`, after its missing claims.
    fn create(&mut self, stateful: &Stateful, ordinal: i64) {
        self.claims(stateful, ordinal);
        let pod = stateful.new_pod(ordinal);
        let note = format!(
            "create Pod {} in StatefulSet {} successful",
            stateful.pod_name(ordinal),
            stateful.name
        );
        self.create.push((pod, EventNote::normal("SuccessfulCreate", note)));
    }

    /// Under `whenScaled: Delete`, makes `pod` (removed by a scale-down) the owner of its
    /// claims that do not have it yet.
    fn hand_claims_to(&mut self, stateful: &Stateful, ordinal: i64, pod: &Pod) {
        if !stateful.delete_claims_when_scaled() {
            return;
        }
        let owner = owner_reference("v1", "Pod", &pod.metadata);
        for (template, _) in stateful.claim_templates() {
            let name = stateful.claim_name(template, ordinal);
            let Some(claim) =
                self.existing_claims.iter().find(|c| c.metadata.name.as_deref() == Some(&name))
            else {
                continue;
            };
            let mut owners = claim.metadata.owner_references.clone().unwrap_or_default();
            if owners.iter().any(|o| o.uid == owner.uid) {
                continue;
            }
            owners.push(owner.clone());
            self.claim_owners.push((name, owners));
        }
    }

    fn delete(&mut self, stateful: &Stateful, pod: &Pod) {
        let Some(name) = pod.metadata.name.clone() else { return };
        let note = format!("delete Pod {name} in StatefulSet {} successful", stateful.name);
        self.delete.push((name, EventNote::normal("SuccessfulDelete", note)));
    }

    /// Whether the pod is being deleted, or is by this plan.
    fn terminating(&self, pod: &Pod) -> bool {
        is_deleting(pod)
            || self.delete.iter().any(|(name, _)| pod.metadata.name.as_ref() == Some(name))
    }
}

/// Upstream's three passes: the pods in range (create, replace failed ones), the surplus pods
/// highest first, then the rolling update. `OrderedReady` stops at the first pod that blocks
/// or the first action.
fn manage(stateful: &Stateful, members: &BTreeMap<i64, &Pod>, plan: &mut Builder<'_>) {
    let ordered = !stateful.parallel;
    let any_terminating = members.values().any(|pod| is_deleting(pod));
    for ordinal in stateful.start..stateful.end {
        match members.get(&ordinal) {
            None if ordered && any_terminating => return,
            None if plan.create.len() >= BURST_REPLICAS => break,
            None => {
                plan.create(stateful, ordinal);
                if ordered {
                    return;
                }
            }
            Some(pod) if is_terminal(pod) => {
                if !is_deleting(pod) {
                    plan.delete(stateful, pod);
                }
                if ordered {
                    return;
                }
            }
            Some(pod) => {
                if phase(pod) == "Pending" {
                    plan.claims(stateful, ordinal);
                }
                if ordered && !stateful.healthy(pod) {
                    return;
                }
            }
        }
    }
    let surplus = members.iter().rev().filter(|(ordinal, _)| !stateful.in_range(**ordinal));
    for (ordinal, pod) in surplus {
        if !is_deleting(pod) {
            plan.hand_claims_to(stateful, *ordinal, pod);
            plan.delete(stateful, pod);
        }
        if ordered {
            return;
        }
    }
    if !stateful.rolling_update {
        return;
    }
    for ordinal in (stateful.update_from..stateful.end).rev() {
        let Some(pod) = members.get(&ordinal) else { return };
        if !stateful.is_updated(pod) && !plan.terminating(pod) {
            plan.delete(stateful, pod);
            return;
        }
        if plan.terminating(pod) || !stateful.healthy(pod) {
            return;
        }
    }
}

/// Upstream's status, from the pods as they are before the plan: every pod counts in
/// `replicas`, running ready ones in `readyReplicas`/`availableReplicas`, pods not being
/// deleted by revision. `currentRevision` moves to the update revision once every pod is at
/// it and ready.
fn status(stateful: &Stateful, members: &BTreeMap<i64, &Pod>) -> StatefulSetStatus {
    let previous = stateful.set.status.clone().unwrap_or_default();
    let count = |keep: &dyn Fn(&Pod) -> bool| {
        i32::try_from(members.values().filter(|pod| keep(pod)).count()).unwrap_or(i32::MAX)
    };
    let replicas = count(&|_| true);
    let ready = count(&|pod| phase(pod) == "Running" && is_ready(pod));
    let updated = count(&|pod| !is_deleting(pod) && stateful.is_updated(pod));
    let mut current_revision = previous
        .current_revision
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| stateful.revision.clone());
    if updated == replicas && ready == replicas {
        current_revision.clone_from(&stateful.revision);
    }
    let current = count(&|pod| !is_deleting(pod) && revision(pod) == Some(&current_revision));
    StatefulSetStatus {
        observed_generation: stateful.set.metadata.generation,
        replicas,
        ready_replicas: nonzero(ready),
        available_replicas: Some(count(&|pod| stateful.available(pod))),
        current_replicas: nonzero(current),
        updated_replicas: nonzero(updated),
        current_revision: Some(current_revision),
        update_revision: Some(stateful.revision.clone()),
        collision_count: Some(previous.collision_count.unwrap_or(0)),
        conditions: previous.conditions,
    }
}

/// How long until the first running, ready, not yet available pod becomes available.
fn requeue_after(stateful: &Stateful, members: &BTreeMap<i64, &Pod>) -> Option<Duration> {
    let wait = SignedDuration::from_secs(i64::from(stateful.min_ready_seconds));
    members
        .values()
        .filter(|pod| phase(pod) == "Running" && !is_deleting(pod) && !stateful.available(pod))
        .filter_map(|pod| ready_since(pod)?.checked_add(wait).ok())
        .filter_map(|at| Duration::try_from(stateful.now.duration_until(at)).ok())
        .min()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{
        RollingUpdateStatefulSetStrategy, StatefulSetOrdinals,
        StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetUpdateStrategy,
    };
    use k8s_openapi::api::core::v1::{
        Container, EmptyDirVolumeSource, PersistentVolumeClaimSpec, PodCondition, PodSpec,
        PodStatus, PodTemplateSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn labels() -> BTreeMap<String, String> {
        [("app".to_owned(), "web".to_owned())].into()
    }

    /// A StatefulSet `web` of `replicas` pods running `image`, with a `data` claim template
    /// and a `data` template volume the claim replaces, governed by the service `web-svc`.
    fn statefulset(replicas: i32, image: &str) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("sts-uid".into()),
                generation: Some(1),
                ..ObjectMeta::default()
            },
            spec: Some(StatefulSetSpec {
                replicas: Some(replicas),
                service_name: Some("web-svc".into()),
                selector: LabelSelector { match_labels: Some(labels()), ..Default::default() },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels()), ..Default::default() }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "web".into(),
                            image: Some(image.into()),
                            ..Container::default()
                        }],
                        volumes: Some(vec![empty_dir("data"), empty_dir("cache")]),
                        ..PodSpec::default()
                    }),
                },
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("data".into()),
                        labels: Some([("tier".to_owned(), "db".to_owned())].into()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(PersistentVolumeClaimSpec {
                        access_modes: Some(vec!["ReadWriteOnce".into()]),
                        ..PersistentVolumeClaimSpec::default()
                    }),
                    status: None,
                }]),
                ..StatefulSetSpec::default()
            }),
            status: None,
        }
    }

    fn empty_dir(name: &str) -> Volume {
        Volume {
            name: name.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        }
    }

    fn parallel(mut set: StatefulSet) -> StatefulSet {
        set.spec.as_mut().unwrap().pod_management_policy = Some("Parallel".into());
        set
    }

    fn with_strategy(mut set: StatefulSet, kind: &str, partition: Option<i32>) -> StatefulSet {
        set.spec.as_mut().unwrap().update_strategy = Some(StatefulSetUpdateStrategy {
            type_: Some(kind.into()),
            rolling_update: partition.map(|p| RollingUpdateStatefulSetStrategy {
                partition: Some(p),
                max_unavailable: None,
            }),
        });
        set
    }

    /// The template changed to `image`, as the API server bumps the generation.
    fn updated(mut set: StatefulSet, image: &str) -> StatefulSet {
        let spec = set.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
        spec.containers[0].image = Some(image.into());
        set.metadata.generation = set.metadata.generation.map(|g| g + 1);
        set
    }

    /// A created pod, as the kubelet would have it: in `phase`, ready since `ready` if given.
    fn in_phase(mut pod: Pod, phase: &str, ready: Option<i64>) -> Pod {
        pod.metadata.creation_timestamp = Some(Time(t(0)));
        pod.status = Some(PodStatus {
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
        });
        pod
    }

    fn ready(pod: Pod) -> Pod {
        in_phase(pod, "Running", Some(0))
    }

    fn deleting(mut pod: Pod) -> Pod {
        pod.metadata.deletion_timestamp = Some(Time(t(50)));
        pod
    }

    fn names(pods: &[Pod]) -> Vec<&str> {
        pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect()
    }

    fn claim_names(plan: &StatefulSetPlan) -> Vec<&str> {
        plan.create_claims.iter().map(|c| c.metadata.name.as_deref().unwrap()).collect()
    }

    fn is_empty(plan: &StatefulSetPlan) -> bool {
        plan.create.is_empty() && plan.delete.is_empty() && plan.create_claims.is_empty()
    }

    /// The cluster the plans act on: the set (with the status last written), pods, claims.
    struct Cluster {
        set: StatefulSet,
        pods: Vec<Pod>,
        claims: Vec<PersistentVolumeClaim>,
        /// Every template the set has had, by revision, as its ControllerRevisions keep them.
        revisions: BTreeMap<String, PodTemplateSpec>,
    }

    impl Cluster {
        fn new(set: StatefulSet) -> Self {
            Cluster { set, pods: Vec::new(), claims: Vec::new(), revisions: BTreeMap::new() }
        }

        fn plan(&mut self) -> StatefulSetPlan {
            let template = &self.set.spec.as_ref().unwrap().template;
            self.revisions.insert(format!("web-{}", template_hash(template)), template.clone());
            let current = self.set.status.as_ref().and_then(|s| s.current_revision.as_ref());
            let current_template = current.and_then(|r| self.revisions.get(r));
            plan_statefulset(&self.set, &self.pods, &self.claims, current_template, t(100))
        }

        /// Applies one plan: deleted pods are gone at once, created ones run ready.
        fn apply(&mut self, plan: &StatefulSetPlan) {
            self.claims.extend(plan.create_claims.iter().cloned());
            self.pods.retain(|p| !plan.delete.contains(p.metadata.name.as_ref().unwrap()));
            self.pods.extend(plan.create.iter().cloned().map(ready));
            self.set.status = Some(plan.status.clone());
        }

        /// Plans and applies until nothing is left to do; the plans, in order.
        fn settle(&mut self) -> Vec<StatefulSetPlan> {
            let mut plans = Vec::new();
            loop {
                let plan = self.plan();
                self.apply(&plan);
                if is_empty(&plan) {
                    return plans;
                }
                plans.push(plan);
                assert!(plans.len() < 50, "no convergence");
            }
        }
    }

    /// `kubectl rollout status statefulset`'s verdict on the status.
    fn rollout_complete(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
        let spec = set.spec.as_ref().unwrap();
        let replicas = spec.replicas.unwrap_or(1);
        let partition = spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0);
        status.observed_generation >= set.metadata.generation
            && status.ready_replicas.unwrap_or(0) >= replicas
            && status.updated_replicas.unwrap_or(0) >= replicas - partition
            && (partition > 0 || status.current_revision == status.update_revision)
    }

    #[test]
    fn members_are_named_after_the_set_with_a_numeric_suffix() {
        let set = statefulset(1, "nginx");
        let named = |name: &str| Pod {
            metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
            ..Pod::default()
        };
        assert!(is_member(&set, &named("web-0")) && is_member(&set, &named("web-12")));
        for other in ["web", "web-", "web-a", "webb-0", "web-x-0", "db-0"] {
            assert!(!is_member(&set, &named(other)), "{other}");
        }
    }

    #[test]
    fn ordered_creation_goes_one_pod_at_a_time_after_readiness() {
        let set = statefulset(3, "web:1");
        let plan = plan_statefulset(&set, &[], &[], None, t(0));
        assert_eq!(names(&plan.create), ["web-0"]);
        assert_eq!(claim_names(&plan), ["data-web-0"]);
        assert!(plan.delete.is_empty());
        let events: Vec<(&str, &str)> =
            plan.events.iter().map(|e| (e.reason.as_str(), e.note.as_str())).collect();
        assert_eq!(
            events,
            [
                (
                    "SuccessfulCreate",
                    "create Claim data-web-0 Pod web-0 in StatefulSet web success"
                ),
                ("SuccessfulCreate", "create Pod web-0 in StatefulSet web successful"),
            ]
        );

        let pod = &plan.create[0];
        assert_eq!(pod.metadata.generate_name, None);
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
        let pod_labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(pod_labels["app"], "web");
        assert_eq!(pod_labels[POD_NAME_LABEL], "web-0");
        assert_eq!(pod_labels[POD_INDEX_LABEL], "0");
        let revision = format!("web-{}", template_hash(&set.spec.as_ref().unwrap().template));
        assert_eq!(pod_labels[REVISION_HASH_LABEL], revision);
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-0"));
        assert_eq!(spec.subdomain.as_deref(), Some("web-svc"));
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str(), owner.controller),
            ("StatefulSet", "web", "sts-uid", Some(true))
        );

        // web-0 exists but is not running and ready yet: nothing more.
        let web0 = plan.create[0].clone();
        let claims = plan.create_claims.clone();
        let pending = [in_phase(web0.clone(), "Pending", None)];
        assert!(is_empty(&plan_statefulset(&set, &pending, &claims, None, t(0))));
        let unready = [in_phase(web0.clone(), "Running", None)];
        assert!(is_empty(&plan_statefulset(&set, &unready, &claims, None, t(0))));

        // With minReadySeconds it must also have been ready that long.
        let mut slow = set.clone();
        slow.spec.as_mut().unwrap().min_ready_seconds = Some(10);
        let just_ready = [in_phase(web0.clone(), "Running", Some(96))];
        let plan = plan_statefulset(&slow, &just_ready, &claims, None, t(100));
        assert!(is_empty(&plan));
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(6)));
        assert_eq!(plan.status.ready_replicas, Some(1));
        assert_eq!(plan.status.available_replicas, Some(0));

        let plan = plan_statefulset(&set, &[ready(web0)], &claims, None, t(100));
        assert_eq!(names(&plan.create), ["web-1"]);
        assert_eq!(claim_names(&plan), ["data-web-1"]);
        assert_eq!(plan.requeue_after, None);
    }

    #[test]
    fn parallel_creates_every_missing_pod_at_once_from_the_first_ordinal() {
        let mut set = parallel(statefulset(3, "web:1"));
        set.spec.as_mut().unwrap().ordinals = Some(StatefulSetOrdinals { start: Some(2) });
        let plan = plan_statefulset(&set, &[], &[], None, t(0));
        assert_eq!(names(&plan.create), ["web-2", "web-3", "web-4"]);
        assert_eq!(claim_names(&plan), ["data-web-2", "data-web-3", "data-web-4"]);
        assert_eq!(plan.events.len(), 6);

        // A pending pod does not hold the others back.
        let pods = [in_phase(plan.create[0].clone(), "Pending", None)];
        let again = plan_statefulset(&set, &pods, &plan.create_claims, None, t(0));
        assert_eq!(names(&again.create), ["web-3", "web-4"]);
        assert!(again.create_claims.is_empty());
    }

    #[test]
    fn claims_are_made_once_with_their_names_labels_and_pod_volumes() {
        let mut cluster = Cluster::new(statefulset(2, "web:1"));
        let plans = cluster.settle();
        let made: Vec<&str> = plans.iter().flat_map(claim_names).collect();
        assert_eq!(made, ["data-web-0", "data-web-1"]);
        let claim = &cluster.claims[1];
        assert_eq!(claim.metadata.namespace.as_deref(), Some("ns"));
        let claim_labels = claim.metadata.labels.as_ref().unwrap();
        assert_eq!((claim_labels["app"].as_str(), claim_labels["tier"].as_str()), ("web", "db"));
        assert_eq!(claim.metadata.owner_references, None, "retained by default");
        assert_eq!(
            claim.spec.as_ref().unwrap().access_modes.as_deref(),
            Some(&["ReadWriteOnce".to_owned()][..])
        );

        let volumes = cluster.pods[1].spec.as_ref().unwrap().volumes.as_ref().unwrap();
        let summary: Vec<(&str, Option<&str>)> = volumes
            .iter()
            .map(|v| {
                (v.name.as_str(), v.persistent_volume_claim.as_ref().map(|c| c.claim_name.as_str()))
            })
            .collect();
        assert_eq!(summary, [("data", Some("data-web-1")), ("cache", None)]);

        // A pod recreated (once deleted) reuses its claim; a pending pod whose claim went
        // missing gets it back.
        let plan =
            plan_statefulset(&cluster.set, &cluster.pods[..1], &cluster.claims, None, t(100));
        assert_eq!(names(&plan.create), ["web-1"]);
        assert!(plan.create_claims.is_empty());
        let pods = [cluster.pods[0].clone(), in_phase(plan.create[0].clone(), "Pending", None)];
        let plan = plan_statefulset(&cluster.set, &pods, &cluster.claims[..1], None, t(100));
        assert_eq!(claim_names(&plan), ["data-web-1"]);
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert_eq!(
            plan.events[0].note,
            "create Claim data-web-1 Pod web-1 in StatefulSet web success"
        );
    }

    #[test]
    fn claims_are_owned_by_the_set_when_deleted_with_it() {
        let mut set = statefulset(1, "web:1");
        set.spec.as_mut().unwrap().persistent_volume_claim_retention_policy =
            Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_deleted: Some("Delete".into()),
                when_scaled: Some("Retain".into()),
            });
        let plan = plan_statefulset(&set, &[], &[], None, t(0));
        let owners = plan.create_claims[0].metadata.owner_references.as_ref().unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!((owners[0].kind.as_str(), owners[0].uid.as_str()), ("StatefulSet", "sts-uid"));
        assert_eq!(owners[0].controller, None);
    }

    #[test]
    fn under_when_scaled_delete_a_scale_down_hands_the_claims_to_their_pods() {
        let mut set = statefulset(3, "web:1");
        set.spec.as_mut().unwrap().persistent_volume_claim_retention_policy =
            Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_deleted: Some("Delete".into()),
                when_scaled: Some("Delete".into()),
            });
        let mut cluster = Cluster::new(set);
        cluster.settle();
        for pod in &mut cluster.pods {
            pod.metadata.uid = pod.metadata.name.as_ref().map(|n| format!("{n}-uid"));
        }
        cluster.set.spec.as_mut().unwrap().replicas = Some(2);
        let plan = cluster.plan();
        assert_eq!(plan.delete, ["web-2"]);
        let [(claim, owners)] = plan.claim_owners.as_slice() else {
            panic!("one claim changes owners: {:?}", plan.claim_owners)
        };
        assert_eq!(claim, "data-web-2");
        let owners: Vec<(&str, &str)> =
            owners.iter().map(|o| (o.kind.as_str(), o.uid.as_str())).collect();
        assert_eq!(owners, [("StatefulSet", "sts-uid"), ("Pod", "web-2-uid")], "the set's stays");

        // Under the default `Retain`, claims outlive their pods.
        let mut retained = Cluster::new(statefulset(2, "web:1"));
        retained.settle();
        retained.set.spec.as_mut().unwrap().replicas = Some(1);
        let plan = retained.plan();
        assert_eq!((plan.delete.len(), plan.claim_owners.len()), (1, 0));
    }

    #[test]
    fn scale_down_removes_the_highest_ordinal_first_one_at_a_time() {
        let mut cluster = Cluster::new(statefulset(4, "web:1"));
        cluster.settle();
        cluster.set.spec.as_mut().unwrap().replicas = Some(1);
        let plan = cluster.plan();
        assert_eq!(plan.delete, ["web-3"]);
        assert!(plan.create.is_empty());
        assert_eq!(plan.events[0].note, "delete Pod web-3 in StatefulSet web successful");
        assert_eq!(plan.events[0].reason, "SuccessfulDelete");

        // While web-3 terminates, nothing else goes.
        cluster.pods[3] = deleting(cluster.pods[3].clone());
        assert!(is_empty(&cluster.plan()));

        // Nor while a remaining pod is not ready.
        cluster.pods.pop();
        cluster.pods[0] = in_phase(cluster.pods[0].clone(), "Running", None);
        assert!(is_empty(&cluster.plan()));
        cluster.pods[0] = ready(cluster.pods[0].clone());
        let deleted: Vec<String> = cluster.settle().into_iter().flat_map(|p| p.delete).collect();
        assert_eq!(deleted, ["web-2", "web-1"]);
        assert_eq!(names(&cluster.pods), ["web-0"]);
        assert_eq!(cluster.claims.len(), 4, "claims are retained");
    }

    #[test]
    fn parallel_scale_down_removes_every_surplus_pod_at_once() {
        let mut cluster = Cluster::new(parallel(statefulset(3, "web:1")));
        cluster.settle();
        cluster.set.spec.as_mut().unwrap().replicas = Some(1);
        cluster.pods[1] = in_phase(cluster.pods[1].clone(), "Pending", None);
        assert_eq!(cluster.plan().delete, ["web-2", "web-1"]);
    }

    #[test]
    fn failed_pods_are_deleted_and_recreated_with_the_same_name() {
        let mut cluster = Cluster::new(statefulset(3, "web:1"));
        cluster.settle();
        cluster.pods[1] = in_phase(cluster.pods[1].clone(), "Failed", None);
        let plan = cluster.plan();
        assert_eq!(plan.delete, ["web-1"]);
        assert!(plan.create.is_empty());
        cluster.pods[1] = deleting(cluster.pods[1].clone());
        assert!(is_empty(&cluster.plan()), "the failed pod's deletion is waited for");
        cluster.pods.remove(1);
        let plan = cluster.plan();
        assert_eq!(names(&plan.create), ["web-1"]);
        assert!(plan.create_claims.is_empty());

        let mut cluster = Cluster::new(parallel(statefulset(3, "web:1")));
        cluster.settle();
        cluster.pods[0] = in_phase(cluster.pods[0].clone(), "Succeeded", None);
        cluster.pods[2] = in_phase(cluster.pods[2].clone(), "Failed", None);
        assert_eq!(cluster.plan().delete, ["web-0", "web-2"]);
    }

    #[test]
    fn terminating_pods_block_ordered_creation() {
        let mut cluster = Cluster::new(statefulset(3, "web:1"));
        cluster.settle();
        // web-1 was deleted by hand and web-2 is being deleted: nothing is created.
        cluster.pods[2] = deleting(cluster.pods[2].clone());
        cluster.pods.remove(1);
        assert!(is_empty(&cluster.plan()));
        // Scaled down to 2 while the surplus web-2 still terminates: still nothing.
        cluster.set.spec.as_mut().unwrap().replicas = Some(2);
        assert!(is_empty(&cluster.plan()));
        cluster.pods.pop();
        assert_eq!(names(&cluster.plan().create), ["web-1"]);

        // Parallel only waits for the pod that is being replaced.
        let mut cluster = Cluster::new(parallel(statefulset(3, "web:1")));
        cluster.settle();
        cluster.pods[0] = deleting(cluster.pods[0].clone());
        cluster.pods.remove(1);
        assert_eq!(names(&cluster.plan().create), ["web-1"]);
    }

    #[test]
    fn a_rolling_update_replaces_pods_from_the_highest_ordinal_and_finishes() {
        let mut cluster = Cluster::new(statefulset(3, "web:1"));
        cluster.settle();
        let old = cluster.set.status.clone().unwrap();
        assert!(rollout_complete(&cluster.set, &old));
        cluster.set = updated(cluster.set.clone(), "web:2");

        let first = cluster.plan();
        assert_eq!(first.delete, ["web-2"]);
        assert!(first.create.is_empty());
        assert_eq!(first.status.current_revision, old.current_revision);
        assert_ne!(first.status.update_revision, old.update_revision);
        assert_eq!((first.status.current_replicas, first.status.updated_replicas), (Some(3), None));
        assert!(!rollout_complete(&cluster.set, &first.status));

        let plans = cluster.settle();
        let steps: Vec<(Vec<&str>, &[String])> =
            plans.iter().map(|p| (names(&p.create), p.delete.as_slice())).collect();
        let none: &[String] = &[];
        assert_eq!(
            steps,
            [
                (vec![], &["web-2".to_owned()][..]),
                (vec!["web-2"], none),
                (vec![], &["web-1".to_owned()][..]),
                (vec!["web-1"], none),
                (vec![], &["web-0".to_owned()][..]),
                (vec!["web-0"], none),
            ]
        );
        for plan in &plans[..plans.len() - 1] {
            assert_eq!(plan.status.current_revision, old.current_revision, "mid-rollout");
        }

        let done = cluster.plan();
        assert!(is_empty(&done));
        let status = &done.status;
        assert!(rollout_complete(&cluster.set, status));
        assert_eq!(status.observed_generation, Some(2));
        assert_eq!(status.replicas, 3);
        assert_eq!(status.ready_replicas, Some(3));
        assert_eq!(status.available_replicas, Some(3));
        assert_eq!(status.updated_replicas, Some(3));
        assert_eq!(status.current_replicas, Some(3));
        assert_eq!(status.current_revision, status.update_revision);
        assert_eq!(status.collision_count, Some(0));
    }

    #[test]
    fn a_rolling_update_waits_for_the_replaced_pod_to_be_ready() {
        let mut cluster = Cluster::new(statefulset(2, "web:1"));
        cluster.settle();
        cluster.set = updated(cluster.set.clone(), "web:2");
        cluster.pods.pop();
        let plan = cluster.plan();
        assert_eq!(names(&plan.create), ["web-1"]);
        cluster.pods.push(in_phase(plan.create[0].clone(), "Running", None));
        assert!(is_empty(&cluster.plan()), "web-1 at the new revision is not ready yet");
    }

    #[test]
    fn a_partition_keeps_the_lower_ordinals_at_the_old_revision() {
        let mut cluster =
            Cluster::new(with_strategy(statefulset(3, "web:1"), "RollingUpdate", Some(2)));
        cluster.settle();
        let old_revision = cluster.set.status.clone().unwrap().current_revision;
        cluster.set = updated(cluster.set.clone(), "web:2");
        let deleted: Vec<String> = cluster.settle().into_iter().flat_map(|p| p.delete).collect();
        assert_eq!(deleted, ["web-2"]);
        let status = cluster.plan().status;
        assert_eq!(status.updated_replicas, Some(1));
        assert_eq!(status.current_replicas, Some(2));
        assert_eq!(status.current_revision, old_revision);
        assert!(rollout_complete(&cluster.set, &status), "updated >= replicas - partition");

        // A pod below the partition comes back at the current revision, with its template.
        cluster.pods.retain(|p| p.metadata.name.as_deref() != Some("web-0"));
        let plan = cluster.plan();
        assert_eq!(names(&plan.create), ["web-0"]);
        let image = |pod: &Pod| pod.spec.as_ref().unwrap().containers[0].image.clone().unwrap();
        assert_eq!(image(&plan.create[0]), "web:1");
        assert_eq!(
            plan.create[0].metadata.labels.as_ref().unwrap().get(REVISION_HASH_LABEL),
            old_revision.as_ref()
        );
        cluster.apply(&plan);

        cluster.set = with_strategy(cluster.set.clone(), "RollingUpdate", Some(1));
        let deleted: Vec<String> = cluster.settle().into_iter().flat_map(|p| p.delete).collect();
        assert_eq!(deleted, ["web-1"]);
        let web1 = cluster.pods.iter().find(|p| p.metadata.name.as_deref() == Some("web-1"));
        assert_eq!(image(web1.unwrap()), "web:2", "above the new partition: the update revision");
    }

    #[test]
    fn on_delete_leaves_outdated_pods_alone() {
        let mut cluster = Cluster::new(with_strategy(statefulset(2, "web:1"), "OnDelete", None));
        cluster.settle();
        cluster.set = updated(cluster.set.clone(), "web:2");
        let plan = cluster.plan();
        assert!(is_empty(&plan));
        assert_eq!(plan.status.updated_replicas, None);
        // A pod deleted by hand comes back at the new revision.
        cluster.pods.pop();
        let plan = cluster.plan();
        assert_eq!(names(&plan.create), ["web-1"]);
        assert_eq!(
            plan.create[0].metadata.labels.as_ref().unwrap()[REVISION_HASH_LABEL],
            plan.status.update_revision.clone().unwrap()
        );
    }

    #[test]
    fn stray_pods_are_ignored_and_a_set_being_deleted_only_gets_status() {
        let mut cluster = Cluster::new(statefulset(2, "web:1"));
        cluster.settle();
        let mut stray = cluster.pods[0].clone();
        stray.metadata.name = Some("web-01".into());
        cluster.pods.push(stray);
        assert!(is_empty(&cluster.plan()));
        assert_eq!(cluster.plan().status.replicas, 2);

        cluster.set.metadata.deletion_timestamp = Some(Time(t(0)));
        cluster.set.spec.as_mut().unwrap().replicas = Some(5);
        let plan = cluster.plan();
        assert!(is_empty(&plan) && plan.events.is_empty());
        assert_eq!(plan.status.ready_replicas, Some(2));
    }
}
