//! The Deployment controller's planner: find or create the ReplicaSet of the current template,
//! roll pods over to it (RollingUpdate or Recreate), resize on scaling, prune old ReplicaSets
//! and report the rollout in the status, following kube-controller-manager.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentSpec, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::plan::{int_or_percent, nonzero};
use crate::node::events::EventNote;
use crate::node::pods::{controller_reference, template_hash};

/// Annotation with the rollout revision of a Deployment and of each of its ReplicaSets.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// Annotation with the earlier revisions of a ReplicaSet that was rolled back to.
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
/// Annotation with the Deployment's replicas when the ReplicaSet was last sized.
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
/// Annotation with the Deployment's replicas + maxSurge when the ReplicaSet was last sized.
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// Label (and selector term) telling apart the pods of a Deployment's ReplicaSets.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// Deployment annotations that are not copied onto its new ReplicaSet.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    "deprecated.deployment.rollback.to",
];
/// Longest `revision-history` annotation kept (oldest entries are dropped).
const MAX_REVISION_HISTORY_CHARS: usize = 2000;
const DEFAULT_PROGRESS_DEADLINE_SECONDS: i32 = 600;
const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
const DEFAULT_MAX_SURGE: &str = "25%";
const DEFAULT_MAX_UNAVAILABLE: &str = "25%";

const AVAILABLE: &str = "Available";
const PROGRESSING: &str = "Progressing";
const REPLICA_FAILURE: &str = "ReplicaFailure";
const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
const RS_UPDATED: &str = "ReplicaSetUpdated";
const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
const TIMED_OUT: &str = "ProgressDeadlineExceeded";
const PAUSED: &str = "DeploymentPaused";
const RESUMED: &str = "DeploymentResumed";

/// A change to an existing ReplicaSet: its new size and the annotations to set on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaSetChange {
    /// The ReplicaSet's name.
    pub name: String,
    /// Its `spec.replicas` after the change.
    pub replicas: i32,
    /// Annotations to add or overwrite (never removals).
    pub annotations: BTreeMap<String, String>,
}

/// What one reconcile of a Deployment should do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeploymentPlan {
    /// The ReplicaSet of the current template, when none exists yet.
    pub create: Option<ReplicaSet>,
    /// Existing ReplicaSets whose replicas or annotations change.
    pub changes: Vec<ReplicaSetChange>,
    /// Names of old ReplicaSets beyond `revisionHistoryLimit` to delete (only idle ones).
    pub delete: Vec<String>,
    /// The Deployment's new `deployment.kubernetes.io/revision` annotation, when it changes.
    pub revision: Option<String>,
    /// The status to write.
    pub status: DeploymentStatus,
    /// When to reconcile again without a change: to check the progress deadline.
    pub requeue_after: Option<Duration>,
    /// Events to record on the Deployment (`ScalingReplicaSet`, `SelectingAll`).
    pub events: Vec<EventNote>,
}

/// Plans one reconcile of `d` given the ReplicaSets it controls, at `now`.
///
/// ReplicaSet sizes come from their `spec.replicas`, pod counts from their `status`, which the
/// ReplicaSet controller maintains.
pub fn plan_deployment(d: &Deployment, sets: &[ReplicaSet], now: Timestamp) -> DeploymentPlan {
    let mut planner = Planner::new(d, sets, now);
    if selects_everything(&planner.spec) {
        return planner.selecting_all();
    }
    if d.metadata.deletion_timestamp.is_some() {
        planner.find_new_replicaset();
        let status = planner.calculate_status();
        return planner.into_plan(status, Vec::new());
    }
    planner.check_paused_conditions();
    planner.find_new_replicaset();
    let paused = planner.spec.paused == Some(true);
    let (status, delete) = if paused || planner.is_scaling_event() {
        planner.scale();
        let delete = if paused { planner.cleanup() } else { Vec::new() };
        (planner.calculate_status(), delete)
    } else {
        let delete = if planner.is_recreate() {
            planner.rollout_recreate()
        } else {
            planner.rollout_rolling()
        };
        (planner.rollout_status(), delete)
    };
    planner.into_plan(status, delete)
}

/// The working state of one reconcile: the ReplicaSets as the plan leaves them.
struct Planner<'a> {
    d: &'a Deployment,
    spec: DeploymentSpec,
    /// `spec.replicas` of the Deployment (default 1).
    replicas: i32,
    now: Timestamp,
    /// The ReplicaSets as listed.
    original: &'a [ReplicaSet],
    /// The ReplicaSets as planned: `original` in order, then the one to create, if any.
    sets: Vec<ReplicaSet>,
    /// Index in `sets` of the ReplicaSet of the current template.
    new: Option<usize>,
    created: bool,
    /// The Deployment's conditions as updated by the steps before the status is computed.
    conditions: Vec<DeploymentCondition>,
    /// Indexes of resized ReplicaSets, in order, for the events.
    resized: Vec<usize>,
}

impl<'a> Planner<'a> {
    fn new(d: &'a Deployment, sets: &'a [ReplicaSet], now: Timestamp) -> Self {
        let spec = d.spec.clone().unwrap_or_default();
        Self {
            d,
            replicas: spec.replicas.unwrap_or(1).max(0),
            spec,
            now,
            original: sets,
            sets: sets.to_vec(),
            new: None,
            created: false,
            conditions: d.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default(),
            resized: Vec::new(),
        }
    }

    fn name(&self) -> &str {
        self.d.metadata.name.as_deref().unwrap_or_default()
    }

    fn status(&self) -> DeploymentStatus {
        self.d.status.clone().unwrap_or_default()
    }

    // --- strategy parameters ---

    fn is_recreate(&self) -> bool {
        self.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()) == Some("Recreate")
    }

    /// maxSurge and maxUnavailable resolved against the replicas (surge rounds up,
    /// unavailability down, and they are never both 0).
    fn fenceposts(&self) -> (i32, i32) {
        let rolling = self.spec.strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
        let surge_param = rolling.and_then(|r| r.max_surge.as_ref());
        let unavailable_param = rolling.and_then(|r| r.max_unavailable.as_ref());
        let surge = scaled_value(surge_param, DEFAULT_MAX_SURGE, self.replicas, true);
        let unavailable =
            scaled_value(unavailable_param, DEFAULT_MAX_UNAVAILABLE, self.replicas, false);
        if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
    }

    fn max_surge(&self) -> i32 {
        if self.is_recreate() { 0 } else { self.fenceposts().0 }
    }

    fn max_unavailable(&self) -> i32 {
        if self.is_recreate() || self.replicas == 0 {
            return 0;
        }
        self.fenceposts().1.min(self.replicas)
    }

    fn has_progress_deadline(&self) -> bool {
        self.progress_deadline_seconds() != i32::MAX
    }

    fn progress_deadline_seconds(&self) -> i32 {
        self.spec.progress_deadline_seconds.unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS)
    }

    // --- the ReplicaSet of the current template ---

    /// Finds the oldest ReplicaSet whose template is the Deployment's, brings its revision
    /// (and copied annotations) up to date, and notes it in `Progressing` when nothing else
    /// has been recorded there.
    fn find_new_replicaset(&mut self) {
        let wanted = template_key(&self.spec.template);
        let mut order: Vec<usize> = (0..self.sets.len()).collect();
        order.sort_by(|a, b| by_creation(&self.sets[*a], &self.sets[*b]));
        self.new = order.into_iter().find(|i| {
            let template = self.sets[*i].spec.as_ref().and_then(|s| s.template.as_ref());
            template.is_some_and(|t| template_key(t) == wanted)
        });
        let Some(new) = self.new else { return };
        let revision = self.next_revision();
        self.stamp_revision(new, revision);
        if self.has_progress_deadline() && find_condition(&self.conditions, PROGRESSING).is_none() {
            let message = format!("Found new replica set {:?}", name(&self.sets[new]));
            self.set_condition(PROGRESSING, "True", FOUND_NEW_RS, message);
        }
    }

    /// One more than the highest revision of the other ReplicaSets.
    fn next_revision(&self) -> i64 {
        let old = self.old_indexes().into_iter().map(|i| revision(&self.sets[i]));
        old.max().unwrap_or(0).saturating_add(1)
    }

    /// Creates the ReplicaSet of the current template, sized for the strategy.
    fn create_new_replicaset(&mut self) -> usize {
        let hash = template_hash(&self.spec.template);
        let rs_name = format!("{}-{hash}", self.name());
        let mut template = self.spec.template.clone();
        let labels = template.metadata.get_or_insert_default().labels.get_or_insert_default();
        labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
        let labels = labels.clone();
        let mut selector = self.spec.selector.clone();
        selector.match_labels.get_or_insert_default().insert(POD_TEMPLATE_HASH_LABEL.into(), hash);
        let rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(rs_name),
                namespace: self.d.metadata.namespace.clone(),
                owner_references: Some(vec![controller_reference(
                    "apps/v1",
                    "Deployment",
                    &self.d.metadata,
                )]),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: self.spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let revision = self.next_revision();
        self.sets.push(rs);
        let new = self.sets.len() - 1;
        self.new = Some(new);
        self.created = true;
        let replicas = self.new_replicaset_target(new);
        set_spec_replicas(&mut self.sets[new], replicas);
        self.stamp_revision(new, revision);
        self.stamp_replicas_annotations(new);
        self.resized.push(new);
        if self.has_progress_deadline() {
            let message = format!("Created new replica set {:?}", name(&self.sets[new]));
            self.set_condition(PROGRESSING, "True", NEW_RS_CREATED, message);
        }
        new
    }

    /// Copies the Deployment's annotations onto the ReplicaSet and raises its revision to
    /// `revision`, remembering the one it replaces (a rollback) in the revision history.
    fn stamp_revision(&mut self, index: usize, revision: i64) {
        let from_deployment: Vec<(String, String)> = self
            .d
            .metadata
            .annotations
            .iter()
            .flatten()
            .filter(|(key, _)| !NOT_COPIED.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let annotations = self.sets[index].metadata.annotations.get_or_insert_default();
        annotations.extend(from_deployment);
        let previous = annotations.get(REVISION_ANNOTATION).cloned();
        let Ok(current) = previous.as_deref().map_or(Ok(0), str::parse::<i64>) else {
            return;
        };
        if current >= revision {
            return;
        }
        annotations.insert(REVISION_ANNOTATION.to_owned(), revision.to_string());
        if let Some(previous) = previous {
            let history = annotations.get(REVISION_HISTORY_ANNOTATION).map(String::as_str);
            if let Some(history) = appended_history(history, &previous) {
                annotations.insert(REVISION_HISTORY_ANNOTATION.to_owned(), history);
            }
        }
    }

    /// Records the Deployment's replicas and replicas + maxSurge on the ReplicaSet.
    fn stamp_replicas_annotations(&mut self, index: usize) {
        let max = self.replicas.saturating_add(self.max_surge());
        let annotations = self.sets[index].metadata.annotations.get_or_insert_default();
        annotations.insert(DESIRED_REPLICAS_ANNOTATION.to_owned(), self.replicas.to_string());
        annotations.insert(MAX_REPLICAS_ANNOTATION.to_owned(), max.to_string());
    }

    /// How big the new ReplicaSet may be now: the full size for Recreate, otherwise as much
    /// as keeps all ReplicaSets within replicas + maxSurge.
    fn new_replicaset_target(&self, new: usize) -> i32 {
        let current = spec_replicas(&self.sets[new]);
        if self.is_recreate() {
            return self.replicas;
        }
        let max_total = self.replicas.saturating_add(self.max_surge());
        let total = self.total(spec_replicas);
        if total >= max_total {
            return current;
        }
        current + (max_total - total).min(self.replicas - current)
    }

    // --- indexes ---

    fn old_indexes(&self) -> Vec<usize> {
        (0..self.sets.len()).filter(|i| Some(*i) != self.new).collect()
    }

    /// Old ReplicaSets with replicas, oldest first.
    fn active_old(&self) -> Vec<usize> {
        let mut old: Vec<usize> =
            self.old_indexes().into_iter().filter(|i| spec_replicas(&self.sets[*i]) > 0).collect();
        old.sort_by(|a, b| by_creation(&self.sets[*a], &self.sets[*b]));
        old
    }

    fn total(&self, count: fn(&ReplicaSet) -> i32) -> i32 {
        self.sets.iter().map(count).fold(0, i32::saturating_add)
    }

    // --- resizing ---

    /// Resizes a ReplicaSet when its size differs; whether it did.
    fn scale_to(&mut self, index: usize, replicas: i32) -> bool {
        spec_replicas(&self.sets[index]) != replicas && self.resize(index, replicas)
    }

    /// Sets a ReplicaSet's size and its replicas annotations; whether the size changed.
    fn resize(&mut self, index: usize, replicas: i32) -> bool {
        self.stamp_replicas_annotations(index);
        if spec_replicas(&self.sets[index]) == replicas {
            return false;
        }
        set_spec_replicas(&mut self.sets[index], replicas);
        if !self.resized.contains(&index) {
            self.resized.push(index);
        }
        true
    }

    // --- RollingUpdate ---

    /// Upstream's rolling update: scale the new ReplicaSet up within the surge, else old ones
    /// down within the unavailability budget, else prune history once the rollout is done.
    fn rollout_rolling(&mut self) -> Vec<String> {
        if self.new.is_none() {
            self.create_new_replicaset();
        }
        if self.reconcile_new_replicaset() || self.reconcile_old_replicasets() {
            return Vec::new();
        }
        if self.was_complete() { self.cleanup() } else { Vec::new() }
    }

    fn reconcile_new_replicaset(&mut self) -> bool {
        let Some(new) = self.new else { return false };
        let current = spec_replicas(&self.sets[new]);
        if current == self.replicas {
            return false;
        }
        let target =
            if current > self.replicas { self.replicas } else { self.new_replicaset_target(new) };
        self.scale_to(new, target)
    }

    fn reconcile_old_replicasets(&mut self) -> bool {
        let Some(new) = self.new else { return false };
        let old = self.active_old();
        if old.is_empty() {
            return false;
        }
        let min_available = self.replicas - self.max_unavailable();
        let new_set = &self.sets[new];
        let new_unavailable = spec_replicas(new_set) - sized_available(new_set);
        let max_scaled_down = self.total(spec_replicas) - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        let cleaned = self.scale_down_unhealthy(&old, max_scaled_down);
        let scaled = self.scale_down_old_for_rolling(&old);
        cleaned + scaled > 0
    }

    /// Removes up to `budget` old replicas that are not available anyway, oldest sets first.
    fn scale_down_unhealthy(&mut self, old: &[usize], budget: i32) -> i32 {
        let mut done = 0;
        for &index in old {
            if done >= budget {
                break;
            }
            let replicas = spec_replicas(&self.sets[index]);
            let unhealthy = replicas - sized_available(&self.sets[index]);
            if replicas == 0 || unhealthy <= 0 {
                continue;
            }
            let count = unhealthy.min(budget - done);
            self.scale_to(index, replicas - count);
            done += count;
        }
        done
    }

    /// Scales old ReplicaSets down, oldest first, while at least replicas − maxUnavailable
    /// pods stay available.
    fn scale_down_old_for_rolling(&mut self, old: &[usize]) -> i32 {
        let min_available = self.replicas - self.max_unavailable();
        let available = self.total(sized_available);
        if available <= min_available {
            return 0;
        }
        let budget = available - min_available;
        let mut done = 0;
        for &index in old {
            if done >= budget {
                break;
            }
            let replicas = spec_replicas(&self.sets[index]);
            if replicas == 0 {
                continue;
            }
            let count = replicas.min(budget - done);
            self.scale_to(index, replicas - count);
            done += count;
        }
        done
    }

    // --- Recreate ---

    /// Scales every old ReplicaSet to 0, waits until none has pods, then brings up the new one.
    fn rollout_recreate(&mut self) -> Vec<String> {
        let mut scaled = false;
        for index in self.active_old() {
            scaled |= self.scale_to(index, 0);
        }
        if scaled || self.old_pods_running() {
            return Vec::new();
        }
        let new = match self.new {
            Some(new) => new,
            None => self.create_new_replicaset(),
        };
        self.scale_to(new, self.replicas);
        if self.was_complete() { self.cleanup() } else { Vec::new() }
    }

    /// Whether an old ReplicaSet still reports pods, running or terminating.
    fn old_pods_running(&self) -> bool {
        self.old_indexes().into_iter().any(|i| {
            let set = &self.sets[i];
            status_replicas(set) > 0 || terminating_replicas(set) > 0
        })
    }

    // --- scaling ---

    /// Whether an active ReplicaSet was sized for a different number of replicas.
    fn is_scaling_event(&self) -> bool {
        self.sets.iter().filter(|set| spec_replicas(set) > 0).any(|set| {
            annotation(set, DESIRED_REPLICAS_ANNOTATION)
                .and_then(|desired| desired.parse::<i32>().ok())
                .is_some_and(|desired| desired != self.replicas)
        })
    }

    /// Upstream's scaling: the only active (or the latest) ReplicaSet takes the new size; old
    /// ones are emptied once the new one is saturated; otherwise, in a rolling update, sizes
    /// change in proportion to each ReplicaSet's share.
    fn scale(&mut self) {
        if let Some(index) = self.active_or_latest() {
            self.resize(index, self.replicas);
            return;
        }
        if self.new_is_saturated() {
            for index in self.active_old() {
                self.scale_to(index, 0);
            }
            return;
        }
        if !self.is_recreate() {
            self.scale_proportionally();
        }
    }

    /// The only ReplicaSet with replicas; with none, the new or else the newest one.
    fn active_or_latest(&self) -> Option<usize> {
        let active: Vec<usize> =
            (0..self.sets.len()).filter(|i| spec_replicas(&self.sets[*i]) > 0).collect();
        match active.as_slice() {
            [] => self.new.or_else(|| {
                (0..self.sets.len()).max_by(|a, b| by_creation(&self.sets[*a], &self.sets[*b]))
            }),
            [only] => Some(*only),
            _ => None,
        }
    }

    fn new_is_saturated(&self) -> bool {
        let Some(new) = self.new else { return false };
        let set = &self.sets[new];
        let desired = annotation(set, DESIRED_REPLICAS_ANNOTATION).and_then(|d| d.parse().ok());
        desired == Some(self.replicas)
            && spec_replicas(set) == self.replicas
            && available_replicas(set) == self.replicas
    }

    /// Spreads the difference between replicas + maxSurge and the current total over the
    /// active ReplicaSets in proportion to their size, the rest going to the largest.
    fn scale_proportionally(&mut self) {
        let mut active: Vec<usize> =
            (0..self.sets.len()).filter(|i| spec_replicas(&self.sets[*i]) > 0).collect();
        let current = self.total(spec_replicas);
        let allowed =
            if self.replicas > 0 { self.replicas.saturating_add(self.max_surge()) } else { 0 };
        let to_add = allowed - current;
        let sets = &self.sets;
        let larger_first =
            |a: &usize, b: &usize| spec_replicas(&sets[*b]).cmp(&spec_replicas(&sets[*a]));
        match to_add.cmp(&0) {
            Ordering::Greater => active
                .sort_by(|a, b| larger_first(a, b).then_with(|| by_creation(&sets[*b], &sets[*a]))),
            Ordering::Less => active
                .sort_by(|a, b| larger_first(a, b).then_with(|| by_creation(&sets[*a], &sets[*b]))),
            Ordering::Equal => {}
        }
        let mut added = 0;
        let mut sizes = Vec::with_capacity(active.len());
        for &index in &active {
            let share = self.proportional_share(index, to_add, added);
            sizes.push(spec_replicas(&self.sets[index]) + share);
            added += share;
        }
        if let Some(largest) = sizes.first_mut()
            && to_add != 0
        {
            *largest = (*largest + to_add - added).max(0);
        }
        for (index, size) in active.into_iter().zip(sizes) {
            self.resize(index, size);
        }
    }

    /// How many of `to_add` (minus the `added` so far) a ReplicaSet takes or gives back.
    fn proportional_share(&self, index: usize, to_add: i32, added: i32) -> i32 {
        let replicas = spec_replicas(&self.sets[index]);
        if replicas == 0 || to_add == 0 || to_add == added {
            return 0;
        }
        let fraction = self.fraction(index);
        let allowed = to_add - added;
        if to_add > 0 { fraction.min(allowed) } else { fraction.max(allowed) }
    }

    /// The change in size that keeps the ReplicaSet's share of replicas + maxSurge, relative
    /// to the size it was given for (`max-replicas`, else the Deployment's replicas).
    fn fraction(&self, index: usize) -> i32 {
        let replicas = spec_replicas(&self.sets[index]);
        if self.replicas == 0 {
            return -replicas;
        }
        let max_now = self.replicas.saturating_add(self.max_surge());
        let before = annotation(&self.sets[index], MAX_REPLICAS_ANNOTATION)
            .and_then(|m| m.parse::<i32>().ok())
            .filter(|m| *m != 0)
            .unwrap_or_else(|| self.status().replicas.unwrap_or(0));
        if before == 0 {
            return 0;
        }
        let resized = f64::from(replicas) * f64::from(max_now) / f64::from(before);
        // In range: `replicas` and `max_now` are i32 and `before` is at least 1.
        resized.round() as i32 - replicas
    }

    // --- history ---

    /// Old ReplicaSets beyond `revisionHistoryLimit`, lowest revisions first, that have no
    /// replicas, no pods and an up-to-date status.
    fn cleanup(&self) -> Vec<String> {
        let limit = self.spec.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
        if limit == i32::MAX {
            return Vec::new();
        }
        let mut old: Vec<usize> = self
            .old_indexes()
            .into_iter()
            .filter(|i| self.sets[*i].metadata.deletion_timestamp.is_none())
            .collect();
        let excess = old.len().saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
        old.sort_by(|a, b| {
            let (a, b) = (&self.sets[*a], &self.sets[*b]);
            revision(a).cmp(&revision(b)).then_with(|| by_creation(a, b))
        });
        old.into_iter()
            .take(excess)
            .filter(|i| self.is_idle(*i))
            .map(|i| name(&self.sets[i]).to_owned())
            .collect()
    }

    fn is_idle(&self, index: usize) -> bool {
        let set = &self.sets[index];
        let listed = self.original.get(index).is_none_or(|o| spec_replicas(o) == 0);
        let observed = set.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
        listed
            && spec_replicas(set) == 0
            && status_replicas(set) == 0
            && set.metadata.generation.unwrap_or(0) <= observed
    }

    /// Whether the status as listed shows the last rollout complete.
    fn was_complete(&self) -> bool {
        self.is_complete(&self.status())
    }

    fn is_complete(&self, status: &DeploymentStatus) -> bool {
        let wanted = Some(self.replicas);
        status.updated_replicas.or(Some(0)) == wanted
            && status.replicas.or(Some(0)) == wanted
            && status.available_replicas.or(Some(0)) == wanted
            && status.observed_generation.unwrap_or(0) >= self.d.metadata.generation.unwrap_or(0)
    }

    // --- status ---

    /// Adds `Progressing` = Unknown when the Deployment is paused or resumed (not over a
    /// timeout), so a pause never counts against the progress deadline.
    fn check_paused_conditions(&mut self) {
        if !self.has_progress_deadline() {
            return;
        }
        let reason = find_condition(&self.conditions, PROGRESSING).and_then(|c| c.reason.clone());
        if reason.as_deref() == Some(TIMED_OUT) {
            return;
        }
        let marked_paused = reason.as_deref() == Some(PAUSED);
        if self.spec.paused == Some(true) && !marked_paused {
            self.set_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused".into());
        } else if self.spec.paused != Some(true) && marked_paused {
            self.set_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed".into());
        }
    }

    fn set_condition(&mut self, type_: &str, status: &str, reason: &str, message: String) {
        let condition = new_condition(type_, status, reason, message, self.now);
        set_condition(&mut self.conditions, condition);
    }

    /// The counts from the ReplicaSets and the `Available` condition.
    fn calculate_status(&self) -> DeploymentStatus {
        let available = self.total(available_replicas);
        let mut conditions = self.conditions.clone();
        let condition = if available >= self.replicas - self.max_unavailable() {
            let message = "Deployment has minimum availability.";
            new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE, message.into(), self.now)
        } else {
            let message = "Deployment does not have minimum availability.";
            new_condition(
                AVAILABLE,
                "False",
                MINIMUM_REPLICAS_UNAVAILABLE,
                message.into(),
                self.now,
            )
        };
        set_condition(&mut conditions, condition);
        DeploymentStatus {
            observed_generation: self.d.metadata.generation,
            replicas: nonzero(self.total(status_replicas)),
            updated_replicas: nonzero(self.new.map_or(0, |i| status_replicas(&self.sets[i]))),
            ready_replicas: nonzero(self.total(ready_replicas)),
            available_replicas: nonzero(available),
            unavailable_replicas: nonzero((self.total(spec_replicas) - available).max(0)),
            terminating_replicas: None,
            collision_count: self.d.status.as_ref().and_then(|s| s.collision_count),
            conditions: Some(conditions),
        }
    }

    /// The status of a rollout: the counts, `Progressing` (complete, progressing or past its
    /// deadline) and `ReplicaFailure` copied from the ReplicaSets.
    fn rollout_status(&self) -> DeploymentStatus {
        let mut status = self.calculate_status();
        let has_deadline = self.has_progress_deadline();
        let current = find_condition(&self.conditions, PROGRESSING);
        let already_complete = status.replicas == status.updated_replicas
            && current.is_some_and(|c| c.reason.as_deref() == Some(NEW_RS_AVAILABLE));
        let complete = self.is_complete(&status);
        let progressed = self.made_progress(&status);
        let timed_out = self.timed_out(current);
        let subject = match self.new {
            Some(new) => format!("ReplicaSet {:?}", name(&self.sets[new])),
            None => format!("Deployment {:?}", self.name()),
        };
        let conditions = status.conditions.get_or_insert_default();
        if !has_deadline {
            conditions.retain(|c| c.type_ != PROGRESSING);
        } else if !already_complete {
            let now = self.now;
            if complete {
                let message = format!("{subject} has successfully progressed.");
                let condition = new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE, message, now);
                set_condition(conditions, condition);
            } else if progressed {
                // Progress refreshes lastUpdateTime even with the same reason.
                let message = format!("{subject} is progressing.");
                let mut condition = new_condition(PROGRESSING, "True", RS_UPDATED, message, now);
                if let Some(current) = current.filter(|c| c.status == "True") {
                    condition.last_transition_time = current.last_transition_time.clone();
                }
                conditions.retain(|c| c.type_ != PROGRESSING);
                conditions.push(condition);
            } else if timed_out {
                let message = format!("{subject} has timed out progressing.");
                set_condition(
                    conditions,
                    new_condition(PROGRESSING, "False", TIMED_OUT, message, now),
                );
            }
        }
        match self.replica_failure() {
            Some(failure) => set_condition(conditions, failure),
            None => conditions.retain(|c| c.type_ != REPLICA_FAILURE),
        }
        status
    }

    /// Whether more pods are updated, ready or available, or fewer old ones remain, than the
    /// listed status says.
    fn made_progress(&self, new: &DeploymentStatus) -> bool {
        let old = self.status();
        let count = |value: Option<i32>| value.unwrap_or(0);
        let old_remaining = count(old.replicas) - count(old.updated_replicas);
        let new_remaining = count(new.replicas) - count(new.updated_replicas);
        count(new.updated_replicas) > count(old.updated_replicas)
            || new_remaining < old_remaining
            || count(new.ready_replicas) > count(old.ready_replicas)
            || count(new.available_replicas) > count(old.available_replicas)
    }

    /// Whether `Progressing` was last updated more than `progressDeadlineSeconds` ago.
    fn timed_out(&self, progressing: Option<&DeploymentCondition>) -> bool {
        let Some(condition) = progressing.filter(|_| self.has_progress_deadline()) else {
            return false;
        };
        match condition.reason.as_deref() {
            Some(NEW_RS_AVAILABLE) => false,
            Some(TIMED_OUT) => true,
            _ => self.deadline(condition).is_none_or(|deadline| deadline < self.now),
        }
    }

    /// When the progress deadline of `Progressing` runs out.
    fn deadline(&self, progressing: &DeploymentCondition) -> Option<Timestamp> {
        let seconds = SignedDuration::from_secs(i64::from(self.progress_deadline_seconds()));
        progressing.last_update_time.as_ref().map(|t| t.0.saturating_add(seconds).unwrap_or(t.0))
    }

    /// The new ReplicaSet's `ReplicaFailure`, else any other's, as a Deployment condition.
    fn replica_failure(&self) -> Option<DeploymentCondition> {
        let failure = |set: &ReplicaSet| {
            let conditions = set.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions.into_iter().flatten().find(|c| c.type_ == REPLICA_FAILURE).cloned()
        };
        let from_new = self.new.and_then(|i| failure(&self.sets[i]));
        let found = from_new.or_else(|| self.sets.iter().find_map(failure))?;
        Some(DeploymentCondition {
            type_: REPLICA_FAILURE.to_owned(),
            status: found.status,
            reason: found.reason,
            message: found.message,
            last_update_time: found.last_transition_time.clone(),
            last_transition_time: found.last_transition_time,
        })
    }

    /// When to check the progress deadline again: a second after it runs out, while a rollout
    /// is neither complete, timed out nor paused.
    fn requeue_after(&self, status: &DeploymentStatus) -> Option<Duration> {
        if self.spec.paused == Some(true) || !self.has_progress_deadline() {
            return None;
        }
        let conditions = status.conditions.as_deref().unwrap_or_default();
        let progressing = find_condition(conditions, PROGRESSING)?;
        let settled = matches!(progressing.reason.as_deref(), Some(TIMED_OUT | NEW_RS_AVAILABLE));
        if settled || self.is_complete(status) {
            return None;
        }
        let remaining = Duration::try_from(self.now.duration_until(self.deadline(progressing)?));
        Some(remaining.unwrap_or_default() + Duration::from_secs(1))
    }

    // --- the plan ---

    /// A Deployment selecting every pod is not managed (upstream refuses it too).
    fn selecting_all(&self) -> DeploymentPlan {
        let mut status = self.status();
        status.observed_generation = status.observed_generation.max(self.d.metadata.generation);
        let note = "This deployment is selecting all pods. A non-empty selector is required.";
        DeploymentPlan {
            status,
            events: vec![EventNote::warning("SelectingAll", note)],
            ..DeploymentPlan::default()
        }
    }

    fn into_plan(self, status: DeploymentStatus, delete: Vec<String>) -> DeploymentPlan {
        let requeue_after = self.requeue_after(&status);
        let created = self.created.then(|| self.sets.len() - 1);
        let events = self
            .resized
            .iter()
            .filter_map(|&index| {
                let set = &self.sets[index];
                let (name, to) = (name(set), spec_replicas(set));
                if Some(index) == created {
                    let note = format!("Scaled up replica set {name} from 0 to {to}");
                    return (to > 0).then(|| EventNote::normal("ScalingReplicaSet", note));
                }
                let from = spec_replicas(self.original.get(index)?);
                let direction = match to.cmp(&from) {
                    Ordering::Greater => "up",
                    Ordering::Less => "down",
                    Ordering::Equal => return None,
                };
                let note = format!("Scaled {direction} replica set {name} to {to} from {from}");
                Some(EventNote::normal("ScalingReplicaSet", note))
            })
            .collect();
        let changes = self
            .original
            .iter()
            .zip(&self.sets)
            .filter_map(|(before, after)| {
                let annotations = changed_annotations(before, after);
                let replicas = spec_replicas(after);
                (replicas != spec_replicas(before) || !annotations.is_empty()).then(|| {
                    ReplicaSetChange { name: name(after).to_owned(), replicas, annotations }
                })
            })
            .collect();
        let current_revision =
            self.d.metadata.annotations.as_ref().and_then(|a| a.get(REVISION_ANNOTATION));
        let revision = self
            .new
            .and_then(|i| annotation(&self.sets[i], REVISION_ANNOTATION))
            .filter(|r| current_revision.map(String::as_str) != Some(*r))
            .map(str::to_owned);
        DeploymentPlan {
            create: created.map(|i| self.sets[i].clone()),
            changes,
            delete,
            revision,
            status,
            requeue_after,
            events,
        }
    }
}

// --- helpers on objects ---

fn selects_everything(spec: &DeploymentSpec) -> bool {
    let selector = &spec.selector;
    selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// A template as compared to find the new ReplicaSet: without `pod-template-hash`, and with
/// empty or null fields dropped (so unset and empty compare equal, as upstream).
fn template_key(template: &PodTemplateSpec) -> Value {
    let mut template = template.clone();
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    let mut value = serde_json::to_value(&template).unwrap_or(Value::Null);
    prune_empty(&mut value);
    value
}

/// Removes null, empty-object and empty-array members of objects, recursively.
fn prune_empty(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.values_mut().for_each(prune_empty);
            members.retain(|_, member| match member {
                Value::Null => false,
                Value::Object(inner) => !inner.is_empty(),
                Value::Array(items) => !items.is_empty(),
                _ => true,
            });
        }
        Value::Array(items) => items.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

/// `maxSurge`/`maxUnavailable` against `total`: an integer as is, a percentage rounded up or
/// down; `default` when unset or malformed (the API server rejects those).
fn scaled_value(value: Option<&IntOrString>, default: &str, total: i32, round_up: bool) -> i32 {
    value
        .and_then(|v| int_or_percent(v, total, round_up))
        .or_else(|| int_or_percent(&IntOrString::String(default.to_owned()), total, round_up))
        .unwrap_or(0)
}

/// `history` with `revision` appended, dropping the oldest entries beyond the length limit;
/// `None` when even `revision` alone does not fit.
fn appended_history(history: Option<&str>, revision: &str) -> Option<String> {
    let Some(history) = history.filter(|h| !h.is_empty()) else {
        return Some(revision.to_owned());
    };
    let entries: Vec<&str> = history.split(',').collect();
    let mut length = history.len() + revision.len() + 1;
    let mut start = 0;
    while length > MAX_REVISION_HISTORY_CHARS && start < entries.len() {
        length -= entries[start].len() + 1;
        start += 1;
    }
    (length <= MAX_REVISION_HISTORY_CHARS).then(|| {
        let mut kept = entries[start..].to_vec();
        kept.push(revision);
        kept.join(",")
    })
}

fn name(set: &ReplicaSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

fn annotation<'s>(set: &'s ReplicaSet, key: &str) -> Option<&'s str> {
    set.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// The ReplicaSet's revision, 0 when missing or malformed.
fn revision(set: &ReplicaSet) -> i64 {
    annotation(set, REVISION_ANNOTATION).and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// Older first, then by name.
fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let created = |set: &ReplicaSet| set.metadata.creation_timestamp.as_ref().map(|t| t.0);
    created(a).cmp(&created(b)).then_with(|| name(a).cmp(name(b)))
}

/// `spec.replicas`, 1 when unset.
fn spec_replicas(set: &ReplicaSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn set_spec_replicas(set: &mut ReplicaSet, replicas: i32) {
    set.spec.get_or_insert_default().replicas = Some(replicas);
}

fn status_replicas(set: &ReplicaSet) -> i32 {
    set.status.as_ref().map_or(0, |s| s.replicas)
}

fn ready_replicas(set: &ReplicaSet) -> i32 {
    set.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0)
}

fn available_replicas(set: &ReplicaSet) -> i32 {
    set.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

/// Available pods that the ReplicaSet keeps: a status that has not caught up with a
/// scale-down still counts pods about to be deleted, which must not pay for deleting others.
fn sized_available(set: &ReplicaSet) -> i32 {
    available_replicas(set).min(spec_replicas(set))
}

fn terminating_replicas(set: &ReplicaSet) -> i32 {
    set.status.as_ref().and_then(|s| s.terminating_replicas).unwrap_or(0)
}

/// The annotations `after` adds or changes relative to `before`.
fn changed_annotations(before: &ReplicaSet, after: &ReplicaSet) -> BTreeMap<String, String> {
    let old = before.metadata.annotations.as_ref();
    after
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(key, value)| old.and_then(|o| o.get(*key)) != Some(*value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn find_condition<'c>(
    conditions: &'c [DeploymentCondition],
    type_: &str,
) -> Option<&'c DeploymentCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Upstream's `SetDeploymentCondition`: nothing changes when status and reason are the same;
/// otherwise the condition is replaced (moved last), keeping its transition time when only
/// the reason changed.
fn set_condition(conditions: &mut Vec<DeploymentCondition>, mut condition: DeploymentCondition) {
    if let Some(current) = find_condition(conditions, &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    conditions.retain(|c| c.type_ != condition.type_);
    conditions.push(condition);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{
        DeploymentStrategy, ReplicaSetStatus, RollingUpdateDeployment,
    };
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn labels() -> BTreeMap<String, String> {
        [("app".to_owned(), "web".to_owned())].into()
    }

    fn template(image: &str) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta { labels: Some(labels()), ..ObjectMeta::default() }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "web".into(),
                    image: Some(image.into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }
    }

    fn deployment(replicas: i32, image: &str) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("d-uid".into()),
                generation: Some(1),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                selector: LabelSelector {
                    match_labels: Some(labels()),
                    ..LabelSelector::default()
                },
                template: template(image),
                ..DeploymentSpec::default()
            }),
            status: None,
        }
    }

    fn rolling(surge: IntOrString, unavailable: IntOrString) -> Option<DeploymentStrategy> {
        Some(DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(surge),
                max_unavailable: Some(unavailable),
            }),
        })
    }

    fn percent(value: &str) -> IntOrString {
        IntOrString::String(value.into())
    }

    fn image_of(set: &ReplicaSet) -> &str {
        let template = set.spec.as_ref().and_then(|s| s.template.as_ref()).unwrap();
        template.spec.as_ref().unwrap().containers[0].image.as_deref().unwrap()
    }

    fn notes(plan: &DeploymentPlan) -> Vec<&str> {
        plan.events.iter().map(|e| e.note.as_str()).collect()
    }

    /// A Deployment and its ReplicaSets, advanced as the API server, the ReplicaSet controller
    /// and the kubelet would between reconciles.
    struct Cluster {
        d: Deployment,
        sets: Vec<ReplicaSet>,
        now: Timestamp,
    }

    impl Cluster {
        fn new(d: Deployment) -> Self {
            Self { d, sets: Vec::new(), now: t(0) }
        }

        /// Edits the Deployment's spec (bumping its generation, as the API server does).
        fn edit(&mut self, change: impl FnOnce(&mut DeploymentSpec)) {
            change(self.d.spec.as_mut().unwrap());
            let generation = self.d.metadata.generation.unwrap();
            self.d.metadata.generation = Some(generation + 1);
        }

        fn plan(&self) -> DeploymentPlan {
            plan_deployment(&self.d, &self.sets, self.now)
        }

        /// Plans and applies the plan as the reconciler does.
        fn reconcile(&mut self) -> DeploymentPlan {
            let plan = self.plan();
            if let Some(created) = &plan.create {
                let mut created = created.clone();
                assert!(self.sets.iter().all(|s| name(s) != name(&created)), "name clash");
                created.metadata.uid = Some(format!("uid-{}", name(&created)));
                created.metadata.creation_timestamp = Some(Time(self.now));
                created.metadata.generation = Some(1);
                self.sets.push(created);
            }
            for change in &plan.changes {
                let set = self.sets.iter_mut().find(|s| name(s) == change.name).unwrap();
                set.metadata.annotations.get_or_insert_default().extend(change.annotations.clone());
                if spec_replicas(set) != change.replicas {
                    set_spec_replicas(set, change.replicas);
                    set.metadata.generation = Some(set.metadata.generation.unwrap_or(1) + 1);
                }
            }
            self.sets.retain(|s| !plan.delete.iter().any(|d| d == name(s)));
            if let Some(revision) = &plan.revision {
                let annotations = self.d.metadata.annotations.get_or_insert_default();
                annotations.insert(REVISION_ANNOTATION.into(), revision.clone());
            }
            self.d.status = Some(plan.status.clone());
            plan
        }

        /// The ReplicaSet controller: missing pods are created (not ready yet), extra ones
        /// deleted, unready ones first.
        fn sync_sets(&mut self) {
            for set in &mut self.sets {
                let replicas = spec_replicas(set);
                let generation = set.metadata.generation;
                let status = set.status.get_or_insert_default();
                status.replicas = replicas;
                status.ready_replicas = Some(status.ready_replicas.unwrap_or(0).min(replicas));
                status.available_replicas =
                    Some(status.available_replicas.unwrap_or(0).min(replicas));
                status.observed_generation = generation;
            }
        }

        /// A second passes and every pod becomes ready and available.
        fn pods_ready(&mut self) {
            self.now += SignedDuration::from_secs(1);
            for set in &mut self.sets {
                let status = set.status.get_or_insert_default();
                status.ready_replicas = Some(status.replicas);
                status.available_replicas = Some(status.replicas);
            }
        }

        fn set(&self, image: &str) -> &ReplicaSet {
            self.sets.iter().find(|s| image_of(s) == image).unwrap()
        }

        fn status(&self) -> DeploymentStatus {
            self.d.status.clone().unwrap()
        }

        fn condition(&self, type_: &str) -> DeploymentCondition {
            let conditions = self.status().conditions.unwrap();
            find_condition(&conditions, type_).cloned().unwrap()
        }

        fn reason(&self, type_: &str) -> String {
            self.condition(type_).reason.unwrap()
        }

        /// What `kubectl rollout status` waits for.
        fn rolled_out(&self) -> bool {
            let status = self.status();
            let replicas = self.d.spec.as_ref().unwrap().replicas;
            status.observed_generation >= self.d.metadata.generation
                && status.updated_replicas.or(Some(0)) == replicas
                && status.replicas.or(Some(0)) == replicas
                && status.available_replicas.or(Some(0)) == replicas
                && self.reason(PROGRESSING) == NEW_RS_AVAILABLE
        }

        /// Pods and availability stay within the rolling-update bounds.
        fn check_bounds(&self, most: i32, fewest_available: i32) {
            let pods: i32 = self.sets.iter().map(status_replicas).sum();
            let sized: i32 = self.sets.iter().map(spec_replicas).sum();
            let available: i32 = self.sets.iter().map(available_replicas).sum();
            assert!(sized <= most && pods <= most, "{sized} sized, {pods} pods > {most}");
            assert!(available >= fewest_available, "{available} < {fewest_available} available");
        }

        /// Reconciles until rolled out, sometimes twice before the ReplicaSet controller
        /// catches up, with pods turning ready every few reconciles; `bounds` (most pods,
        /// fewest available) are checked after every step.
        fn roll_out(&mut self, bounds: Option<(i32, i32)>) -> usize {
            let check = |cluster: &Self| {
                if let Some((most, fewest)) = bounds {
                    cluster.check_bounds(most, fewest);
                }
            };
            for step in 0..200 {
                self.reconcile();
                self.sync_sets();
                check(self);
                if self.rolled_out() {
                    return step;
                }
                self.reconcile();
                check(self);
                self.reconcile();
                check(self);
                self.sync_sets();
                check(self);
                self.pods_ready();
                check(self);
            }
            panic!("never rolled out: {:#?}", self.status());
        }
    }

    #[test]
    fn scaling_from_zero_to_three_to_one_resizes_the_one_replicaset() {
        let mut cluster = Cluster::new(deployment(0, "nginx:1"));
        let plan = cluster.reconcile();
        let created = plan.create.expect("a ReplicaSet for the template");
        let hash = template_hash(&template("nginx:1"));
        assert_eq!(name(&created), format!("web-{hash}"));
        assert_eq!(spec_replicas(&created), 0);
        assert!(plan.events.is_empty());
        assert_eq!(plan.revision.as_deref(), Some("1"));
        cluster.sync_sets();
        cluster.roll_out(None);

        cluster.edit(|spec| spec.replicas = Some(3));
        let plan = cluster.reconcile();
        assert_eq!(notes(&plan), [format!("Scaled up replica set web-{hash} to 3 from 0")]);
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].replicas, 3);
        cluster.roll_out(None);
        assert_eq!(cluster.status().available_replicas, Some(3));

        cluster.edit(|spec| spec.replicas = Some(1));
        let plan = cluster.reconcile();
        assert_eq!(notes(&plan), [format!("Scaled down replica set web-{hash} to 1 from 3")]);
        let change = &plan.changes[0];
        assert_eq!(change.replicas, 1);
        assert_eq!(change.annotations[DESIRED_REPLICAS_ANNOTATION], "1");
        assert_eq!(change.annotations[MAX_REPLICAS_ANNOTATION], "2");
        cluster.roll_out(None);
        assert_eq!(cluster.sets.len(), 1);
        assert_eq!(cluster.status().replicas, Some(1));
    }

    #[test]
    fn the_new_replicaset_carries_hash_selector_owner_and_annotations() {
        let mut d = deployment(4, "nginx:1");
        d.metadata.annotations = Some(
            [
                ("kubernetes.io/change-cause".to_owned(), "first".to_owned()),
                ("kubectl.kubernetes.io/last-applied-configuration".to_owned(), "{}".to_owned()),
            ]
            .into(),
        );
        d.spec.as_mut().unwrap().min_ready_seconds = Some(7);
        let created = plan_deployment(&d, &[], t(0)).create.unwrap();
        let hash = template_hash(&template("nginx:1"));
        let spec = created.spec.as_ref().unwrap();
        let template_labels = spec.template.as_ref().unwrap().metadata.as_ref().unwrap();
        assert_eq!(template_labels.labels.as_ref().unwrap()[POD_TEMPLATE_HASH_LABEL], hash);
        assert_eq!(created.metadata.labels.as_ref().unwrap()[POD_TEMPLATE_HASH_LABEL], hash);
        assert_eq!(spec.selector.match_labels.as_ref().unwrap()[POD_TEMPLATE_HASH_LABEL], hash);
        assert_eq!(spec.min_ready_seconds, Some(7));
        assert_eq!(created.metadata.namespace.as_deref(), Some("ns"));
        assert!(crate::node::pods::is_controlled_by(&created.metadata, "d-uid"));
        let annotations = created.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[REVISION_ANNOTATION], "1");
        assert_eq!(annotations[DESIRED_REPLICAS_ANNOTATION], "4");
        assert_eq!(annotations[MAX_REPLICAS_ANNOTATION], "5");
        assert_eq!(annotations["kubernetes.io/change-cause"], "first");
        assert!(!annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    }

    #[test]
    fn a_rolling_update_stays_within_max_surge_and_max_unavailable() {
        let cases = [
            (10, percent("25%"), percent("25%"), 13, 8),
            (3, IntOrString::Int(1), IntOrString::Int(0), 4, 3),
            (5, IntOrString::Int(0), IntOrString::Int(2), 5, 3),
            (4, percent("50%"), percent("0%"), 6, 4),
            (3, IntOrString::Int(0), IntOrString::Int(0), 3, 2),
            (1, percent("25%"), percent("25%"), 2, 1),
        ];
        for (replicas, surge, unavailable, most, fewest) in cases {
            let mut cluster = Cluster::new(deployment(replicas, "nginx:1"));
            cluster.edit(|spec| spec.strategy = rolling(surge.clone(), unavailable.clone()));
            cluster.roll_out(None);
            cluster.edit(|spec| spec.template = template("nginx:2"));
            let steps = cluster.roll_out(Some((most, fewest)));
            assert!(steps > 0, "{replicas} replicas rolled over at once");
            assert_eq!(spec_replicas(cluster.set("nginx:2")), replicas);
            assert_eq!(spec_replicas(cluster.set("nginx:1")), 0);
            assert_eq!(cluster.status().updated_replicas, Some(replicas));
            assert_eq!(cluster.d.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION], "2");
        }
    }

    #[test]
    fn percentages_round_surge_up_and_unavailability_down() {
        let mut cluster = Cluster::new(deployment(10, "nginx:1"));
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        let plan = cluster.reconcile();
        let created = plan.create.as_ref().unwrap();
        // maxSurge 25% of 10 = 2.5, rounded up.
        assert_eq!(spec_replicas(created), 3);
        // maxUnavailable 25% of 10 = 2.5, rounded down: 8 must stay available.
        let old = name(cluster.set("nginx:1")).to_owned();
        assert_eq!(
            notes(&plan),
            [
                format!("Scaled up replica set {} from 0 to 3", name(created)),
                format!("Scaled down replica set {old} to 8 from 10")
            ]
        );
    }

    #[test]
    fn zero_surge_and_zero_unavailable_still_make_progress() {
        let mut cluster = Cluster::new(deployment(3, "nginx:1"));
        cluster.edit(|spec| spec.strategy = rolling(IntOrString::Int(0), IntOrString::Int(0)));
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        let plan = cluster.reconcile();
        assert_eq!(spec_replicas(plan.create.as_ref().unwrap()), 0);
        assert_eq!(plan.changes[0].replicas, 2);
    }

    #[test]
    fn unavailable_old_pods_are_removed_first() {
        let mut cluster = Cluster::new(deployment(4, "nginx:1"));
        cluster.edit(|spec| spec.strategy = rolling(IntOrString::Int(0), IntOrString::Int(1)));
        cluster.roll_out(None);
        // Two old pods crash: removing them costs no availability.
        let status = cluster.sets[0].status.as_mut().unwrap();
        status.available_replicas = Some(2);
        status.ready_replicas = Some(2);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        // Only 2 of the 3 pods that must stay available are: a healthy old pod could not go,
        // but an unavailable one can.
        let plan = cluster.reconcile();
        let old = name(cluster.set("nginx:1")).to_owned();
        assert_eq!(notes(&plan), [format!("Scaled down replica set {old} to 3 from 4")]);
    }

    #[test]
    fn recreate_scales_old_pods_away_before_starting_new_ones() {
        let mut cluster = Cluster::new(deployment(3, "nginx:1"));
        cluster.edit(|spec| {
            spec.strategy =
                Some(DeploymentStrategy { type_: Some("Recreate".into()), ..Default::default() })
        });
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        let plan = cluster.reconcile();
        assert!(plan.create.is_none());
        let old = name(cluster.set("nginx:1")).to_owned();
        assert_eq!(notes(&plan), [format!("Scaled down replica set {old} to 0 from 3")]);

        // The old pods are still there (the ReplicaSet controller has not caught up yet),
        // then terminating: nothing new starts.
        assert_eq!(cluster.reconcile().create, None);
        let status = cluster.sets[0].status.as_mut().unwrap();
        *status = ReplicaSetStatus { replicas: 0, terminating_replicas: Some(3), ..status.clone() };
        let plan = cluster.reconcile();
        assert!(plan.create.is_none() && plan.changes.is_empty());

        cluster.sets[0].status.as_mut().unwrap().terminating_replicas = Some(0);
        let plan = cluster.reconcile();
        let created = plan.create.as_ref().expect("the new ReplicaSet once old pods are gone");
        assert_eq!(spec_replicas(created), 3);
        assert_eq!(notes(&plan), [format!("Scaled up replica set {} from 0 to 3", name(created))]);
        cluster.roll_out(Some((3, 0)));
    }

    #[test]
    fn rolling_back_reuses_the_old_replicaset_with_a_new_revision() {
        let mut cluster = Cluster::new(deployment(3, "nginx:1"));
        cluster.roll_out(None);
        let first = name(cluster.set("nginx:1")).to_owned();
        cluster.edit(|spec| spec.template = template("nginx:2"));
        cluster.roll_out(None);
        assert_eq!(cluster.d.metadata.annotations.as_ref().unwrap()[REVISION_ANNOTATION], "2");

        cluster.edit(|spec| spec.template = template("nginx:1"));
        let plan = cluster.reconcile();
        assert!(plan.create.is_none(), "the old ReplicaSet is reused");
        assert_eq!(plan.revision.as_deref(), Some("3"));
        let change = plan.changes.iter().find(|c| c.name == first).unwrap();
        assert_eq!(change.annotations[REVISION_ANNOTATION], "3");
        assert_eq!(change.annotations[REVISION_HISTORY_ANNOTATION], "1");
        assert_eq!(change.replicas, 1);
        assert_eq!(notes(&plan), [format!("Scaled up replica set {first} to 1 from 0")]);
        cluster.sync_sets();
        cluster.reconcile();
        assert_eq!(cluster.reason(PROGRESSING), RS_UPDATED);

        cluster.roll_out(Some((4, 3)));
        assert_eq!(cluster.sets.len(), 2);
        assert_eq!(spec_replicas(cluster.set("nginx:1")), 3);
        assert_eq!(spec_replicas(cluster.set("nginx:2")), 0);
    }

    #[test]
    fn the_template_matches_ignoring_the_hash_label_and_empty_fields() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        cluster.roll_out(None);
        let set = &mut cluster.sets[0];
        let template = set.spec.as_mut().unwrap().template.as_mut().unwrap();
        template.metadata.as_mut().unwrap().annotations = Some(BTreeMap::new());
        let plan = cluster.reconcile();
        assert!(plan.create.is_none() && plan.changes.is_empty());
    }

    #[test]
    fn scaling_mid_rollout_is_proportional() {
        let mut cluster = Cluster::new(deployment(10, "nginx:1"));
        cluster.edit(|spec| spec.strategy = rolling(IntOrString::Int(3), IntOrString::Int(2)));
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        for _ in 0..2 {
            cluster.reconcile();
            cluster.sync_sets();
        }
        assert_eq!(spec_replicas(cluster.set("nginx:1")), 8);
        assert_eq!(spec_replicas(cluster.set("nginx:2")), 5);

        cluster.edit(|spec| spec.replicas = Some(20));
        let plan = cluster.reconcile();
        let (old, new) =
            (name(cluster.set("nginx:1")).to_owned(), name(cluster.set("nginx:2")).to_owned());
        assert_eq!(
            notes(&plan),
            [
                format!("Scaled up replica set {old} to 14 from 8"),
                format!("Scaled up replica set {new} to 9 from 5")
            ]
        );

        cluster.edit(|spec| spec.replicas = Some(5));
        let plan = cluster.reconcile();
        assert_eq!(
            notes(&plan),
            [
                format!("Scaled down replica set {old} to 5 from 14"),
                format!("Scaled down replica set {new} to 3 from 9")
            ]
        );
        cluster.roll_out(Some((8, 3)));
        assert_eq!(spec_replicas(cluster.set("nginx:2")), 5);
    }

    #[test]
    fn conditions_follow_a_rollout() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        let plan = cluster.reconcile();
        let rs = name(plan.create.as_ref().unwrap()).to_owned();
        let progressing = cluster.condition(PROGRESSING);
        assert_eq!(progressing.status, "True");
        assert_eq!(progressing.reason.as_deref(), Some(NEW_RS_CREATED));
        assert_eq!(progressing.message, Some(format!("Created new replica set \"{rs}\"")));
        let available = cluster.condition(AVAILABLE);
        assert_eq!(
            (available.status.as_str(), available.reason.unwrap()),
            ("False", MINIMUM_REPLICAS_UNAVAILABLE.into())
        );
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(601)));

        cluster.sync_sets();
        cluster.now += SignedDuration::from_secs(5);
        cluster.reconcile();
        let updated = cluster.condition(PROGRESSING);
        assert_eq!(updated.reason.as_deref(), Some(RS_UPDATED));
        assert_eq!(updated.message, Some(format!("ReplicaSet \"{rs}\" is progressing.")));
        assert_eq!(updated.last_update_time, Some(Time(t(5))));
        assert_eq!(updated.last_transition_time, progressing.last_transition_time);

        cluster.pods_ready();
        cluster.reconcile();
        let done = cluster.condition(PROGRESSING);
        assert_eq!(done.reason.as_deref(), Some(NEW_RS_AVAILABLE));
        assert_eq!(done.message, Some(format!("ReplicaSet \"{rs}\" has successfully progressed.")));
        assert_eq!(done.last_transition_time, progressing.last_transition_time);
        let available = cluster.condition(AVAILABLE);
        assert_eq!(
            (available.status.as_str(), available.reason.unwrap()),
            ("True", MINIMUM_REPLICAS_AVAILABLE.into())
        );
        let types: Vec<String> =
            cluster.status().conditions.unwrap().into_iter().map(|c| c.type_).collect();
        assert_eq!(types, [AVAILABLE, PROGRESSING]);
        assert!(cluster.rolled_out());
    }

    #[test]
    fn a_settled_deployment_plans_nothing() {
        let mut cluster = Cluster::new(deployment(3, "nginx:1"));
        cluster.roll_out(None);
        cluster.now += SignedDuration::from_secs(3600);
        let plan = cluster.plan();
        assert_eq!(plan.status, cluster.status(), "an unchanged status is not rewritten");
        assert!(plan.create.is_none() && plan.changes.is_empty() && plan.delete.is_empty());
        assert!(plan.revision.is_none() && plan.events.is_empty());
        assert_eq!(plan.requeue_after, None);
    }

    #[test]
    fn a_stuck_rollout_exceeds_its_progress_deadline() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        cluster.edit(|spec| spec.progress_deadline_seconds = Some(60));
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2:broken"));
        cluster.reconcile();
        cluster.sync_sets();
        cluster.now += SignedDuration::from_secs(1);
        cluster.reconcile();
        assert_eq!(cluster.reason(PROGRESSING), RS_UPDATED);

        // The new pod never becomes ready: no progress.
        cluster.now += SignedDuration::from_secs(10);
        let plan = cluster.reconcile();
        assert_eq!(cluster.reason(PROGRESSING), RS_UPDATED);
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(51)));

        cluster.now += SignedDuration::from_secs(51);
        let plan = cluster.reconcile();
        let condition = cluster.condition(PROGRESSING);
        let rs = name(cluster.set("nginx:2:broken")).to_owned();
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason.as_deref(), Some(TIMED_OUT));
        assert_eq!(
            condition.message,
            Some(format!("ReplicaSet \"{rs}\" has timed out progressing."))
        );
        assert_eq!(plan.requeue_after, None);
        // The old pods keep serving.
        assert_eq!(cluster.reason(AVAILABLE), MINIMUM_REPLICAS_AVAILABLE);
    }

    #[test]
    fn a_paused_deployment_does_not_roll_out_but_still_scales() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        cluster.roll_out(None);
        cluster.edit(|spec| {
            spec.paused = Some(true);
            spec.template = template("nginx:2");
        });
        let plan = cluster.reconcile();
        assert!(plan.create.is_none() && plan.changes.is_empty());
        let condition = cluster.condition(PROGRESSING);
        assert_eq!(
            (condition.status.as_str(), condition.reason.unwrap()),
            ("Unknown", PAUSED.into())
        );
        assert_eq!(plan.requeue_after, None);
        assert_eq!(cluster.status().observed_generation, Some(2));

        cluster.edit(|spec| spec.replicas = Some(4));
        let plan = cluster.reconcile();
        assert!(plan.create.is_none());
        assert_eq!(plan.changes[0].replicas, 4);
        assert_eq!(cluster.reason(PROGRESSING), PAUSED);

        cluster.sync_sets();
        cluster.pods_ready();
        cluster.edit(|spec| spec.paused = Some(false));
        let plan = cluster.reconcile();
        assert!(plan.create.is_some(), "resuming starts the rollout");
        cluster.roll_out(Some((5, 3)));
    }

    #[test]
    fn resuming_a_stalled_rollout_restarts_the_deadline() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        cluster.roll_out(None);
        cluster.edit(|spec| spec.template = template("nginx:2"));
        cluster.reconcile();
        cluster.sync_sets();
        cluster.reconcile();
        cluster.edit(|spec| spec.paused = Some(true));
        cluster.reconcile();
        cluster.now += SignedDuration::from_secs(3600);
        cluster.edit(|spec| spec.paused = Some(false));
        let plan = cluster.reconcile();
        let condition = cluster.condition(PROGRESSING);
        assert_eq!(
            (condition.status.as_str(), condition.reason.unwrap()),
            ("Unknown", RESUMED.into())
        );
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(601)));
    }

    #[test]
    fn history_beyond_the_limit_is_pruned_only_when_idle() {
        let mut cluster = Cluster::new(deployment(2, "v1"));
        cluster.roll_out(None);
        for image in ["v2", "v3", "v4"] {
            cluster.edit(|spec| spec.template = template(image));
            cluster.roll_out(None);
        }
        assert_eq!(cluster.sets.len(), 4);
        // v1 still has a pod; a paused Deployment prunes its history at once.
        let v1 = cluster.sets.iter_mut().find(|s| image_of(s) == "v1").unwrap();
        v1.status.as_mut().unwrap().replicas = 1;
        cluster.edit(|spec| {
            spec.revision_history_limit = Some(1);
            spec.paused = Some(true);
        });
        let first = cluster.reconcile();
        let second = cluster.reconcile();
        let deleted: Vec<String> = first.delete.into_iter().chain(second.delete).collect();
        let images: Vec<&str> = cluster.sets.iter().map(image_of).collect();
        assert_eq!(deleted.len(), 1);
        assert_eq!(images, ["v1", "v3", "v4"]);

        // An unpaused Deployment prunes once its rollout is complete.
        cluster.edit(|spec| spec.paused = Some(false));
        cluster.sets[0].status.as_mut().unwrap().replicas = 0;
        cluster.reconcile();
        let plan = cluster.reconcile();
        assert_eq!(plan.delete.len(), 1);
        let images: Vec<&str> = cluster.sets.iter().map(image_of).collect();
        assert_eq!(images, ["v3", "v4"]);
    }

    #[test]
    fn default_history_keeps_ten_old_replicasets() {
        let mut cluster = Cluster::new(deployment(1, "v0"));
        cluster.roll_out(None);
        for version in 1..=12 {
            cluster.edit(|spec| spec.template = template(&format!("v{version}")));
            cluster.roll_out(None);
            cluster.reconcile();
        }
        assert_eq!(cluster.sets.len(), 11);
        assert!(cluster.sets.iter().all(|s| !["v0", "v1"].contains(&image_of(s))));
    }

    #[test]
    fn replica_failures_surface_on_the_deployment() {
        let mut cluster = Cluster::new(deployment(2, "nginx:1"));
        cluster.reconcile();
        let failure = k8s_openapi::api::apps::v1::ReplicaSetCondition {
            type_: REPLICA_FAILURE.into(),
            status: "True".into(),
            reason: Some("FailedCreate".into()),
            message: Some("pods \"web\" is forbidden: exceeded quota".into()),
            last_transition_time: Some(Time(t(0))),
        };
        cluster.sets[0].status =
            Some(ReplicaSetStatus { conditions: Some(vec![failure]), ..Default::default() });
        cluster.reconcile();
        assert_eq!(cluster.reason(REPLICA_FAILURE), "FailedCreate");
        cluster.sets[0].status.as_mut().unwrap().conditions = None;
        cluster.reconcile();
        let conditions = cluster.status().conditions.unwrap();
        assert!(find_condition(&conditions, REPLICA_FAILURE).is_none());
    }

    #[test]
    fn a_deployment_selecting_everything_is_refused() {
        let mut d = deployment(2, "nginx:1");
        d.spec.as_mut().unwrap().selector = LabelSelector::default();
        let plan = plan_deployment(&d, &[], t(0));
        assert!(plan.create.is_none());
        assert_eq!(plan.events[0].reason, "SelectingAll");
        assert!(plan.events[0].warning);
        assert_eq!(plan.status.observed_generation, Some(1));
    }
}
