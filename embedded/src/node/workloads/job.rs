//! The Job planner: from a `batch/v1` Job and the pods it controls, which pods to create and
//! delete, the Job's new status and events, and when to look again — upstream's job controller
//! rules, as a pure function.
//!
//! Counts come from the listed pods: pods are not garbage-collected while their Job exists, and
//! the listing is strongly consistent, so no tracking finalizers, uncounted-pod bookkeeping or
//! expectations are needed. A pod counts as failed when its phase is `Failed` and it is not
//! being deleted; a pod deleted (by hand or by this planner) while it runs is therefore replaced,
//! not counted as a failure, and it stops counting at all once it has gone.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::plan::nonzero;
use crate::node::events::EventNote;
use crate::node::pods;

/// Annotation and label carrying the completion index of an Indexed Job's pod.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The environment variable giving an Indexed Job's containers their completion index.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The longest wait between a failure and the next pod, whatever the number of failures.
pub const MAX_RETRY_BACKOFF: Duration = Duration::from_secs(360);
/// `spec.managedBy` of the Jobs this controller manages (also when unset).
pub const CONTROLLER_NAME: &str = "kubernetes.io/job-controller";

/// `spec.backoffLimit` when unset.
const DEFAULT_BACKOFF_LIMIT: i32 = 6;
/// The longest `generateName` prefix: 63-character names minus the 5 random characters.
const MAX_GENERATE_NAME: usize = 58;

/// What one reconcile of a Job should do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobPlan {
    /// Pods to create (with `generateName`).
    pub create: Vec<Pod>,
    /// Names of pods to delete gracefully.
    pub delete: Vec<String>,
    /// The Job's status once the plan is applied, written through `/status`.
    pub status: JobStatus,
    /// Reconcile again after this long even if nothing changes (retry back-off, active
    /// deadline, TTL after finished).
    pub requeue_after: Option<Duration>,
    /// Events to record on the Job.
    pub events: Vec<EventNote>,
    /// `ttlSecondsAfterFinished` has elapsed: delete the Job (its pods go with it).
    pub delete_job: bool,
}

/// Plans one reconcile of `job`, given every pod it controls in any state, the time, and
/// `backoff`, the delay before the first retry after a failure (doubled for each further
/// failure since the last success, up to [`MAX_RETRY_BACKOFF`]).
///
/// Jobs whose `spec.managedBy` names another controller are left alone, and finished Jobs
/// (`Complete` or `Failed`) only wait for `ttlSecondsAfterFinished`.
pub fn plan_job(job: &Job, pods: &[Pod], now: Timestamp, backoff: Duration) -> JobPlan {
    let status = job.status.clone().unwrap_or_default();
    let fallback = JobSpec::default();
    let spec = job.spec.as_ref().unwrap_or(&fallback);
    if spec.managed_by.as_deref().is_some_and(|name| name != CONTROLLER_NAME) {
        return JobPlan { status, ..JobPlan::default() };
    }
    if finished_condition(&status).is_some() {
        return plan_finished(job, spec, status, now);
    }
    let Some(settings) = Settings::of(spec) else {
        let event = EventNote::warning(
            "UnknownCompletionMode",
            "Skipped Job sync because completion mode is unknown",
        );
        return JobPlan { status, events: vec![event], ..JobPlan::default() };
    };
    let census = Census::of(pods, settings.completions);
    Reconcile { job, spec, pods, settings, census, now, status }.plan(backoff)
}

/// How many successes complete the Job, and whether pods get completion indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Completions {
    /// `completions` unset with `parallelism` set: done once any pod succeeded and none runs.
    WorkQueue,
    /// `NonIndexed`: done after this many succeeded pods.
    Count(i32),
    /// `Indexed`: done once each index below this has a succeeded pod.
    Indexed(i32),
}

impl Completions {
    /// The number of completions, for all but work queues.
    fn target(self) -> Option<i32> {
        match self {
            Completions::WorkQueue => None,
            Completions::Count(n) | Completions::Indexed(n) => Some(n),
        }
    }

    /// The number of indexes, for Indexed Jobs.
    fn indexes(self) -> Option<i32> {
        match self {
            Completions::Indexed(n) => Some(n),
            _ => None,
        }
    }
}

/// The Job's spec with upstream's defaults applied.
#[derive(Clone, Copy, Debug)]
struct Settings {
    parallelism: i32,
    completions: Completions,
    backoff_limit: i32,
    suspended: bool,
    /// `restartPolicy: OnFailure`: container restarts count toward the back-off limit.
    restarts_count: bool,
    /// `podReplacementPolicy: Failed`: no replacement while the pod it replaces terminates.
    only_replace_failed: bool,
    active_deadline: Option<SignedDuration>,
}

impl Settings {
    /// Upstream's defaults: with neither `completions` nor `parallelism` set, both are 1; a
    /// missing `completions` beside a set `parallelism` means a work queue. `None` for an
    /// unknown completion mode. An `Indexed` Job without `completions` (which validation
    /// rejects) runs as a work queue.
    fn of(spec: &JobSpec) -> Option<Settings> {
        let completions = match (spec.completions, spec.parallelism) {
            (Some(n), _) => Some(n.max(0)),
            (None, None) => Some(1),
            (None, Some(_)) => None,
        };
        let completions = match (spec.completion_mode.as_deref(), completions) {
            (None | Some("NonIndexed"), Some(n)) => Completions::Count(n),
            (Some("Indexed"), Some(n)) => Completions::Indexed(n),
            (None | Some("NonIndexed" | "Indexed"), None) => Completions::WorkQueue,
            (Some(_), _) => return None,
        };
        let restart_policy = spec.template.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
        Some(Settings {
            parallelism: spec.parallelism.unwrap_or(1).max(0),
            completions,
            backoff_limit: spec.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT).max(0),
            suspended: spec.suspend == Some(true),
            restarts_count: restart_policy == Some("OnFailure"),
            only_replace_failed: spec.pod_replacement_policy.as_deref() == Some("Failed"),
            active_deadline: spec.active_deadline_seconds.map(SignedDuration::from_secs),
        })
    }
}

/// The Job's pods, sorted by what they count for.
struct Census<'a> {
    /// Neither finished nor being deleted.
    active: Vec<&'a Pod>,
    /// Being deleted, not finished yet.
    terminating: Vec<&'a Pod>,
    /// Succeeded (for Indexed Jobs, those with a valid index).
    succeeded: Vec<&'a Pod>,
    /// Indexes with a succeeded pod (Indexed Jobs only).
    succeeded_indexes: BTreeSet<i32>,
    /// Failed and not being deleted (for Indexed Jobs, those with a valid index).
    failed: Vec<&'a Pod>,
    completions: Completions,
}

impl<'a> Census<'a> {
    fn of(pods: &'a [Pod], completions: Completions) -> Census<'a> {
        let mut census = Census {
            active: Vec::new(),
            terminating: Vec::new(),
            succeeded: Vec::new(),
            succeeded_indexes: BTreeSet::new(),
            failed: Vec::new(),
            completions,
        };
        for pod in pods {
            let counted = completions.indexes().is_none_or(|n| valid_index(pod, n).is_some());
            match pods::phase(pod) {
                _ if pods::is_active(pod) => census.active.push(pod),
                "Succeeded" if counted => {
                    census.succeeded.push(pod);
                    census.succeeded_indexes.extend(completion_index(pod));
                }
                "Failed" if counted && !pods::is_deleting(pod) => census.failed.push(pod),
                "Succeeded" | "Failed" => {}
                _ => census.terminating.push(pod),
            }
        }
        census
    }

    /// `status.succeeded`: succeeded pods, or succeeded indexes for Indexed Jobs.
    fn succeeded(&self) -> i32 {
        match self.completions {
            Completions::Indexed(_) => count(self.succeeded_indexes.len()),
            _ => count(self.succeeded.len()),
        }
    }
}

/// Why a Job is finishing: the interim condition (`SuccessCriteriaMet` or `FailureTarget`) is
/// set at once, the terminal one (`Complete` or `Failed`) once none of its pods runs.
struct Outcome {
    success: bool,
    reason: String,
    message: String,
    /// The interim condition is not on the Job yet.
    fresh: bool,
}

impl Outcome {
    fn failure(reason: &str, message: &str) -> Outcome {
        Outcome { success: false, reason: reason.into(), message: message.into(), fresh: true }
    }

    fn interim_type(&self) -> &'static str {
        if self.success { "SuccessCriteriaMet" } else { "FailureTarget" }
    }

    fn final_type(&self) -> &'static str {
        if self.success { "Complete" } else { "Failed" }
    }

    /// The outcome an earlier reconcile decided on, from the Job's interim conditions.
    fn decided(conditions: &[JobCondition]) -> Option<Outcome> {
        let (success, condition) = true_condition(conditions, "SuccessCriteriaMet")
            .map(|c| (true, c))
            .or_else(|| true_condition(conditions, "FailureTarget").map(|c| (false, c)))?;
        Some(Outcome {
            success,
            reason: condition.reason.clone().unwrap_or_default(),
            message: condition.message.clone().unwrap_or_default(),
            fresh: false,
        })
    }
}

/// Pod changes for a running Job, and how long the retry back-off still holds creations.
#[derive(Default)]
struct Changes<'a> {
    delete: Vec<&'a Pod>,
    create: Vec<Pod>,
    wait: Option<Duration>,
}

/// One reconcile of an unfinished Job.
struct Reconcile<'a> {
    job: &'a Job,
    spec: &'a JobSpec,
    pods: &'a [Pod],
    settings: Settings,
    census: Census<'a>,
    now: Timestamp,
    status: JobStatus,
}

impl<'a> Reconcile<'a> {
    fn plan(mut self, backoff: Duration) -> JobPlan {
        let now = self.now;
        let mut conditions = self.status.conditions.take().unwrap_or_default();
        let mut events = Vec::new();
        // A resumed Job's active deadline counts from the resumption.
        let resuming =
            !self.settings.suspended && true_condition(&conditions, "Suspended").is_some();
        if resuming || (self.status.start_time.is_none() && !self.settings.suspended) {
            self.status.start_time = Some(Time(now));
        }
        let mut requeue = None;
        let mut outcome = Outcome::decided(&conditions).or_else(|| self.failure());
        if outcome.is_none() {
            requeue = self.deadline_left();
        }
        let job_deleting = self.job.metadata.deletion_timestamp.is_some();
        let changes = match &outcome {
            Some(_) => Changes { delete: self.census.active.clone(), ..Changes::default() },
            None if job_deleting => Changes::default(),
            None => self.manage(backoff),
        };
        requeue = earliest(requeue, changes.wait);
        let active = self.census.active.len() - changes.delete.len() + changes.create.len();
        if outcome.is_none() && self.complete(active) {
            outcome = Some(Outcome {
                success: true,
                reason: "CompletionsReached".into(),
                message: "Reached expected number of succeeded pods".into(),
                fresh: true,
            });
        }
        if resuming {
            set_condition(&mut conditions, "Suspended", "False", "JobResumed", "Job resumed", now);
            events.push(EventNote::normal("Resumed", "Job resumed"));
        } else if self.settings.suspended
            && outcome.is_none()
            && !job_deleting
            && set_condition(
                &mut conditions,
                "Suspended",
                "True",
                "JobSuspended",
                "Job suspended",
                now,
            )
        {
            events.push(EventNote::normal("Suspended", "Job suspended"));
        }
        if let Some(outcome) = &outcome {
            let settled =
                active == 0 && self.census.terminating.is_empty() && changes.delete.is_empty();
            requeue = self.finish(outcome, settled, &mut conditions, &mut events);
        }
        self.status.conditions = (!conditions.is_empty()).then_some(conditions);
        self.fill_counts(active, &changes.delete);
        JobPlan {
            delete: changes.delete.iter().map(|p| name(p)).collect(),
            create: changes.create,
            status: self.status,
            requeue_after: requeue,
            events,
            delete_job: false,
        }
    }

    /// The failure the Job has just reached, if any: too many failed pods (or, with
    /// `restartPolicy: OnFailure`, container restarts), or its active deadline passed.
    fn failure(&self) -> Option<Outcome> {
        let limit = self.settings.backoff_limit;
        if count(self.census.failed.len()) > limit
            || (self.settings.restarts_count && restarts_exceed(self.pods, limit))
        {
            return Some(Outcome::failure(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ));
        }
        let past_deadline = self.active_for().zip(self.settings.active_deadline);
        if past_deadline.is_some_and(|(active_for, deadline)| active_for >= deadline) {
            return Some(Outcome::failure(
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ));
        }
        None
    }

    /// How long the Job has been active (not while suspended).
    fn active_for(&self) -> Option<SignedDuration> {
        let start = self.status.start_time.as_ref()?;
        (!self.settings.suspended).then(|| self.now.duration_since(start.0))
    }

    /// How long until the active deadline passes.
    fn deadline_left(&self) -> Option<Duration> {
        remaining(self.settings.active_deadline?, self.active_for()?)
    }

    /// Deletions and creations that bring a running Job's pods to what it wants.
    fn manage(&self, backoff: Duration) -> Changes<'a> {
        let census = &self.census;
        if self.settings.suspended {
            return Changes { delete: census.active.clone(), ..Changes::default() };
        }
        let want = self.want_active();
        let delete = self.pods_to_remove(want);
        let mut active = count(census.active.len() - delete.len());
        if self.settings.only_replace_failed {
            active += count(census.terminating.len() + delete.len());
        }
        let missing = usize::try_from(want - active).unwrap_or(0);
        if missing == 0 {
            return Changes { delete, ..Changes::default() };
        }
        if let Some(wait) = retry_wait(census, self.now, backoff) {
            return Changes { delete, wait: Some(wait), ..Changes::default() };
        }
        let template = &self.spec.template;
        let create = match census.completions {
            Completions::Indexed(n) => self
                .pending_indexes(n, &delete, missing)
                .into_iter()
                .map(|index| new_pod(self.job, template, Some(index)))
                .collect(),
            _ => (0..missing).map(|_| new_pod(self.job, template, None)).collect(),
        };
        Changes { delete, create, wait: None }
    }

    /// How many pods should run: `parallelism`, but no more than the completions still
    /// missing; a work queue with a success starts nothing new.
    fn want_active(&self) -> i32 {
        let census = &self.census;
        match census.completions.target() {
            None if census.succeeded() > 0 => count(census.active.len()),
            None => self.settings.parallelism,
            Some(n) => (n - census.succeeded()).clamp(0, self.settings.parallelism),
        }
    }

    /// Active pods to delete: for Indexed Jobs those without a valid index, of an index that
    /// already succeeded, or duplicating another's index; then, if more than `want` remain,
    /// those least far along (unscheduled, pending, not ready, newest) first.
    fn pods_to_remove(&self, want: i32) -> Vec<&'a Pod> {
        let mut remove = Vec::new();
        let mut keep = Vec::new();
        match self.census.completions.indexes() {
            Some(n) => {
                let mut by_index: BTreeMap<i32, Vec<&'a Pod>> = BTreeMap::new();
                for pod in &self.census.active {
                    match valid_index(pod, n) {
                        Some(i) if !self.census.succeeded_indexes.contains(&i) => {
                            by_index.entry(i).or_default().push(pod);
                        }
                        _ => remove.push(*pod),
                    }
                }
                for mut group in by_index.into_values() {
                    pods::sort_for_deletion(&mut group);
                    keep.extend(group.pop());
                    remove.extend(group);
                }
            }
            None => keep.clone_from(&self.census.active),
        }
        let excess = usize::try_from(count(keep.len()) - want).unwrap_or(0);
        pods::sort_for_deletion(&mut keep);
        remove.extend(keep.into_iter().take(excess));
        remove
    }

    /// The `missing` lowest indexes below `n` that have no succeeded pod and no pod working
    /// on them.
    fn pending_indexes(&self, n: i32, deleting: &[&Pod], missing: usize) -> Vec<i32> {
        let census = &self.census;
        let mut busy = census.succeeded_indexes.clone();
        let working =
            census.active.iter().filter(|p| !deleting.iter().any(|d| std::ptr::eq(*d, **p)));
        busy.extend(working.filter_map(|p| completion_index(p)));
        if self.settings.only_replace_failed {
            let going = census.terminating.iter().chain(deleting);
            busy.extend(going.filter_map(|p| completion_index(p)));
        }
        (0..n).filter(|i| !busy.contains(i)).take(missing).collect()
    }

    /// Whether the Job has succeeded, with `active` pods left once the plan is applied.
    fn complete(&self, active: usize) -> bool {
        let succeeded = self.census.succeeded();
        active == 0
            && match self.census.completions.target() {
                None => succeeded > 0,
                Some(n) => succeeded >= n,
            }
    }

    /// Records a finishing outcome: the interim condition when new, the terminal condition
    /// and its event once `settled` (no pod runs or terminates). Returns the requeue for the
    /// TTL when the Job has just finished.
    fn finish(
        &mut self,
        outcome: &Outcome,
        settled: bool,
        conditions: &mut Vec<JobCondition>,
        events: &mut Vec<EventNote>,
    ) -> Option<Duration> {
        let now = self.now;
        let (reason, message) = (outcome.reason.as_str(), outcome.message.as_str());
        if outcome.fresh {
            set_condition(conditions, outcome.interim_type(), "True", reason, message, now);
        }
        if !settled {
            return None;
        }
        set_condition(conditions, outcome.final_type(), "True", reason, message, now);
        if outcome.success {
            self.status.completion_time = Some(Time(now));
            let target = self.census.completions.target();
            if target.is_some_and(|n| self.census.succeeded() > n) {
                events.push(EventNote::warning(
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                ));
            }
            events.push(EventNote::normal("Completed", "Job completed"));
        } else {
            events.push(EventNote::warning(reason, message));
        }
        let ttl = self.spec.ttl_seconds_after_finished?;
        Some(Duration::from_secs(u64::try_from(ttl).unwrap_or(0)))
    }

    /// The counters, as they will be once the plan's deletions and creations are applied.
    fn fill_counts(&mut self, active: usize, deleting: &[&Pod]) {
        let census = &self.census;
        let ready = census.active.iter().filter(|p| pods::is_ready(p)).count()
            - deleting.iter().filter(|p| pods::is_ready(p)).count();
        let status = &mut self.status;
        status.active = nonzero(count(active));
        status.ready = Some(count(ready));
        status.succeeded = nonzero(census.succeeded());
        status.failed = nonzero(count(census.failed.len()));
        status.terminating = Some(count(census.terminating.len() + deleting.len()));
        status.completed_indexes = census
            .completions
            .indexes()
            .map(|_| format_indexes(&census.succeeded_indexes))
            .filter(|s| !s.is_empty());
        status.uncounted_terminated_pods = Some(UncountedTerminatedPods::default());
    }
}

/// A finished Job: nothing changes until `ttlSecondsAfterFinished` has passed since it
/// finished, then it is deleted.
fn plan_finished(job: &Job, spec: &JobSpec, status: JobStatus, now: Timestamp) -> JobPlan {
    let finished_at = finished_condition(&status)
        .and_then(|c| c.last_transition_time.as_ref())
        .or(status.completion_time.as_ref())
        .map(|t| t.0);
    let mut plan = JobPlan { status, ..JobPlan::default() };
    let (Some(ttl), Some(finished_at)) = (spec.ttl_seconds_after_finished, finished_at) else {
        return plan;
    };
    if job.metadata.deletion_timestamp.is_some() {
        return plan;
    }
    let ttl = SignedDuration::from_secs(i64::from(ttl));
    match remaining(ttl, now.duration_since(finished_at)) {
        Some(left) => plan.requeue_after = Some(left),
        None => plan.delete_job = true,
    }
    plan
}

/// The Job's `Complete` or `Failed` condition, when true.
fn finished_condition(status: &JobStatus) -> Option<&JobCondition> {
    let conditions = status.conditions.as_deref().unwrap_or_default();
    true_condition(conditions, "Complete").or_else(|| true_condition(conditions, "Failed"))
}

/// The condition of type `type_`, when its status is `True`.
fn true_condition<'a>(conditions: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    conditions.iter().find(|c| c.type_ == type_ && c.status == "True")
}

/// Sets a condition, stamped `now`, unless one of that type already says the same; adds no
/// `False` condition where there was none. Returns whether the conditions changed.
fn set_condition(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let condition = JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(old)
            if old.status == status
                && old.reason.as_deref() == Some(reason)
                && old.message.as_deref() == Some(message) =>
        {
            false
        }
        Some(old) => {
            *old = condition;
            true
        }
        None if status == "False" => false,
        None => {
            conditions.push(condition);
            true
        }
    }
}

/// Whether the container restarts of the Job's pending and running pods reach the back-off
/// limit (any restart when the limit is 0).
fn restarts_exceed(pods: &[Pod], limit: i32) -> bool {
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(pods::phase(p), "Pending" | "Running"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten())
        })
        .map(|c| i64::from(c.restart_count))
        .sum();
    restarts >= i64::from(limit.max(1))
}

/// How long the retry back-off still holds new pods: `backoff` doubled for each failure after
/// the last success but the first, at most [`MAX_RETRY_BACKOFF`], from the last failure.
fn retry_wait(census: &Census<'_>, now: Timestamp, backoff: Duration) -> Option<Duration> {
    let last_success = census.succeeded.iter().filter_map(|p| finished_at(p)).max();
    let failures: Vec<Timestamp> = census
        .failed
        .iter()
        .filter_map(|p| finished_at(p))
        .filter(|t| last_success.is_none_or(|s| *t > s))
        .collect();
    let last_failure = *failures.iter().max()?;
    let mut delay = backoff.min(MAX_RETRY_BACKOFF);
    for _ in 1..failures.len() {
        delay = delay.saturating_mul(2).min(MAX_RETRY_BACKOFF);
    }
    let delay = SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
    remaining(delay, now.duration_since(last_failure))
}

/// When a finished pod finished: its containers' latest `finishedAt`, else its conditions'
/// latest transition, else its creation.
fn finished_at(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_ref()).into_iter().flatten();
    let from_containers = containers
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    let conditions = status.and_then(|s| s.conditions.as_ref()).into_iter().flatten();
    let from_conditions =
        || conditions.filter_map(|c| c.last_transition_time.as_ref()).map(|t| t.0).max();
    from_containers
        .or_else(from_conditions)
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// A pod's completion index, from its annotation (or label).
fn completion_index(pod: &Pod) -> Option<i32> {
    let meta = &pod.metadata;
    let value = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX))
        .or_else(|| meta.labels.as_ref()?.get(COMPLETION_INDEX))?;
    value.parse().ok().filter(|i| *i >= 0)
}

/// A pod's completion index, when below `completions`.
fn valid_index(pod: &Pod, completions: i32) -> Option<i32> {
    completion_index(pod).filter(|i| *i < completions)
}

/// A new pod for `job` from its template, with the Job's labels where the template lacks them
/// and, for Indexed Jobs, its completion index (annotation, label, environment, hostname).
fn new_pod(job: &Job, template: &PodTemplateSpec, index: Option<i32>) -> Pod {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let namespace = job.metadata.namespace.as_deref().unwrap_or("default");
    let template_labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let mut labels: BTreeMap<String, String> = [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ]
    .into_iter()
    .filter(|(key, _)| !template_labels.is_some_and(|l| l.contains_key(*key)))
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect();
    let index_text = index.map(|i| i.to_string());
    if let Some(text) = &index_text {
        labels.insert(COMPLETION_INDEX.into(), text.clone());
    }
    let owner = pods::controller_reference("batch/v1", "Job", &job.metadata);
    let prefix = generate_name(name, index);
    let mut pod = pods::pod_from_template(template, namespace, &prefix, owner, &labels);
    if let (Some(i), Some(text)) = (index, index_text) {
        pod.metadata
            .annotations
            .get_or_insert_default()
            .insert(COMPLETION_INDEX.into(), text.clone());
        let spec = pod.spec.get_or_insert_default();
        spec.hostname = Some(format!("{name}-{i}"));
        let init = spec.init_containers.iter_mut().flatten();
        for container in spec.containers.iter_mut().chain(init) {
            add_index_env(container, &text);
        }
    }
    pod
}

/// Gives a container `JOB_COMPLETION_INDEX`, unless it sets it itself.
fn add_index_env(container: &mut Container, index: &str) {
    let env = container.env.get_or_insert_default();
    if !env.iter().any(|e| e.name == COMPLETION_INDEX_ENV) {
        env.push(EnvVar {
            name: COMPLETION_INDEX_ENV.into(),
            value: Some(index.into()),
            value_from: None,
        });
    }
}

/// `<job>-` or `<job>-<index>-`, the Job's name shortened so that the generated name fits in
/// 63 characters with the index intact.
fn generate_name(job_name: &str, index: Option<i32>) -> String {
    let suffix = index.map_or_else(|| "-".to_owned(), |i| format!("-{i}-"));
    let room = MAX_GENERATE_NAME.saturating_sub(suffix.len());
    let base = job_name.get(..room).unwrap_or(job_name);
    format!("{base}{suffix}")
}

/// Indexes as `status.completedIndexes` writes them: ascending, runs as `first-last`,
/// comma-separated (`0-2,5`).
fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut runs: Vec<(i32, i32)> = Vec::new();
    for &i in indexes {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => runs.push((i, i)),
        }
    }
    let text: Vec<String> = runs
        .into_iter()
        .map(
            |(first, last)| {
                if first == last { first.to_string() } else { format!("{first}-{last}") }
            },
        )
        .collect();
    text.join(",")
}

/// What is left of `limit` once `elapsed` has passed, when anything is.
fn remaining(limit: SignedDuration, elapsed: SignedDuration) -> Option<Duration> {
    let left = limit.checked_sub(elapsed)?;
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// The sooner of two optional delays.
fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A pod count as the API's `int32`.
fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A pod's name.
fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStatus, PodCondition, PodSpec, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    const BACKOFF: Duration = Duration::from_secs(10);

    fn t0() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn secs(n: i64) -> SignedDuration {
        SignedDuration::from_secs(n)
    }

    fn job(spec: JobSpec) -> Job {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_owned(), "pi".to_owned())].into()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container { name: "main".into(), ..Container::default() }],
                restart_policy: Some("Never".into()),
                ..PodSpec::default()
            }),
        };
        Job {
            metadata: ObjectMeta {
                name: Some("pi".into()),
                namespace: Some("ns".into()),
                uid: Some("job-uid".into()),
                ..ObjectMeta::default()
            },
            spec: Some(JobSpec { template, ..spec }),
            status: None,
        }
    }

    /// Applies plans as the controller would and lets the test move pods and the clock.
    struct Sim {
        job: Job,
        pods: Vec<Pod>,
        now: Timestamp,
        created: usize,
    }

    impl Sim {
        fn new(spec: JobSpec) -> Sim {
            Sim { job: job(spec), pods: Vec::new(), now: t0(), created: 0 }
        }

        fn spec(&mut self) -> &mut JobSpec {
            self.job.spec.as_mut().unwrap()
        }

        fn step(&mut self) -> JobPlan {
            let plan = plan_job(&self.job, &self.pods, self.now, BACKOFF);
            self.job.status = Some(plan.status.clone());
            let now = self.now;
            for name in &plan.delete {
                let pod = self.pod_mut(name);
                assert!(pods::is_active(pod), "only active pods are deleted");
                pod.metadata.deletion_timestamp = Some(Time(now));
            }
            for pod in &plan.create {
                let mut pod = pod.clone();
                self.created += 1;
                let prefix = pod.metadata.generate_name.clone().unwrap();
                pod.metadata.name = Some(format!("{prefix}{}", self.created));
                pod.metadata.creation_timestamp = Some(Time(self.now));
                pod.status =
                    Some(PodStatus { phase: Some("Pending".into()), ..PodStatus::default() });
                self.pods.push(pod);
            }
            plan
        }

        fn pod_mut(&mut self, name: &str) -> &mut Pod {
            self.pods.iter_mut().find(|p| p.metadata.name.as_deref() == Some(name)).unwrap()
        }

        fn active(&self) -> Vec<String> {
            self.pods.iter().filter(|p| pods::is_active(p)).map(name).collect()
        }

        fn run(&mut self, name: &str) {
            let status = self.pod_mut(name).status.get_or_insert_default();
            status.phase = Some("Running".into());
        }

        fn set_ready(&mut self, name: &str) {
            let now = self.now;
            let status = self.pod_mut(name).status.get_or_insert_default();
            status.phase = Some("Running".into());
            status.conditions = Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time(now)),
                ..PodCondition::default()
            }]);
        }

        /// The pod's container exits with `code` now.
        fn exit(&mut self, name: &str, code: i32) {
            let now = self.now;
            let status = self.pod_mut(name).status.get_or_insert_default();
            status.phase = Some(if code == 0 { "Succeeded" } else { "Failed" }.into());
            status.container_statuses = Some(vec![ContainerStatus {
                name: "main".into(),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: code,
                        finished_at: Some(Time(now)),
                        ..ContainerStateTerminated::default()
                    }),
                    ..ContainerState::default()
                }),
                ..ContainerStatus::default()
            }]);
        }

        /// Terminating pods finish going away.
        fn reap(&mut self) {
            self.pods.retain(|p| !pods::is_deleting(p));
        }

        fn advance(&mut self, seconds: i64) {
            self.now += secs(seconds);
        }

        fn status(&self) -> &JobStatus {
            self.job.status.as_ref().unwrap()
        }

        fn condition(&self, type_: &str) -> Option<&JobCondition> {
            let conditions = self.status().conditions.as_deref().unwrap_or_default();
            conditions.iter().find(|c| c.type_ == type_)
        }

        fn has(&self, type_: &str) -> bool {
            self.condition(type_).is_some_and(|c| c.status == "True")
        }
    }

    fn reasons(plan: &JobPlan) -> Vec<&str> {
        plan.events.iter().map(|e| e.reason.as_str()).collect()
    }

    #[test]
    fn a_default_job_runs_one_labelled_pod() {
        let mut sim = Sim::new(JobSpec::default());
        let plan = sim.step();
        assert_eq!(plan.create.len(), 1);
        let pod = &plan.create[0];
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
        assert!(pods::is_controlled_by(&pod.metadata, "job-uid"));
        let labels = pod.metadata.labels.as_ref().unwrap();
        for (key, value) in [
            ("app", "pi"),
            ("batch.kubernetes.io/controller-uid", "job-uid"),
            ("batch.kubernetes.io/job-name", "pi"),
            ("controller-uid", "job-uid"),
            ("job-name", "pi"),
        ] {
            assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
        }
        let status = sim.status();
        assert_eq!((status.active, status.ready, status.terminating), (Some(1), Some(0), Some(0)));
        assert_eq!(status.start_time, Some(Time(t0())));
        // Listed on the next reconcile, the pod is not created twice.
        sim.advance(5);
        assert!(sim.step().create.is_empty());
        assert_eq!(sim.status().start_time, Some(Time(t0())));
        let name = sim.active()[0].clone();
        sim.set_ready(&name);
        sim.step();
        assert_eq!(sim.status().ready, Some(1));
        sim.exit(&name, 0);
        let plan = sim.step();
        assert!(plan.create.is_empty() && sim.has("SuccessCriteriaMet") && sim.has("Complete"));
        assert_eq!(sim.status().completion_time, Some(Time(sim.now)));
        assert_eq!((sim.status().succeeded, sim.status().active), (Some(1), None));
        assert_eq!(reasons(&plan), ["Completed"]);
        let complete = sim.condition("Complete").unwrap();
        assert_eq!(complete.reason.as_deref(), Some("CompletionsReached"));
        assert_eq!(complete.last_probe_time, Some(Time(sim.now)));
    }

    #[test]
    fn template_labels_are_not_overridden() {
        let mut sim = Sim::new(JobSpec::default());
        let template = &mut sim.spec().template;
        let labels = template.metadata.as_mut().unwrap().labels.as_mut().unwrap();
        labels.insert("job-name".into(), "custom".into());
        let plan = sim.step();
        let labels = plan.create[0].metadata.labels.as_ref().unwrap();
        assert_eq!(labels.get("job-name").map(String::as_str), Some("custom"));
        assert_eq!(labels.get("batch.kubernetes.io/job-name").map(String::as_str), Some("pi"));
    }

    #[test]
    fn parallel_completions_never_run_more_than_needed() {
        let mut sim =
            Sim::new(JobSpec { parallelism: Some(3), completions: Some(5), ..JobSpec::default() });
        let plan = sim.step();
        assert_eq!(plan.create.len(), 3);
        for _ in 0..10 {
            let succeeded = sim.status().succeeded.unwrap_or(0);
            let active = sim.active().len() as i32;
            assert!(active <= 3 && active <= 5 - succeeded, "{active} active, {succeeded} done");
            if let Some(name) = sim.active().first().cloned() {
                sim.advance(1);
                sim.exit(&name, 0);
            }
            sim.step();
        }
        assert_eq!(sim.created, 5);
        assert_eq!(sim.status().succeeded, Some(5));
        assert!(sim.has("Complete"));
    }

    #[test]
    fn a_work_queue_completes_once_a_pod_succeeded_and_none_runs() {
        let mut sim = Sim::new(JobSpec { parallelism: Some(2), ..JobSpec::default() });
        assert_eq!(sim.step().create.len(), 2);
        let names = sim.active();
        sim.exit(&names[0], 0);
        let plan = sim.step();
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert!(!sim.has("SuccessCriteriaMet"));
        sim.exit(&names[1], 0);
        sim.step();
        assert!(sim.has("Complete"));
        assert_eq!(sim.status().succeeded, Some(2));
    }

    #[test]
    fn failures_retry_with_back_off_until_the_limit() {
        let mut sim = Sim::new(JobSpec { backoff_limit: Some(2), ..JobSpec::default() });
        sim.step();
        // First failure: wait 10s; second: 20s; the third exceeds the limit of 2.
        for (attempt, wait) in [(1, 10_i64), (2, 20)] {
            assert_eq!(sim.created, attempt);
            sim.advance(1);
            let name = sim.active()[0].clone();
            sim.exit(&name, 1);
            let plan = sim.step();
            assert!(plan.create.is_empty(), "attempt {attempt} waits for the back-off");
            assert_eq!(plan.requeue_after, Some(Duration::from_secs(wait as u64)));
            assert_eq!(sim.status().failed, Some(attempt as i32));
            sim.advance(wait - 1);
            let plan = sim.step();
            assert!(plan.create.is_empty());
            assert_eq!(plan.requeue_after, Some(Duration::from_secs(1)));
            sim.advance(1);
            assert_eq!(sim.step().create.len(), 1);
        }
        assert_eq!(sim.created, 3);
        sim.advance(1);
        let name = sim.active()[0].clone();
        sim.exit(&name, 1);
        let plan = sim.step();
        assert!(plan.create.is_empty());
        assert!(sim.has("FailureTarget") && sim.has("Failed"));
        let failed = sim.condition("Failed").unwrap();
        assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
        assert_eq!(failed.message.as_deref(), Some("Job has reached the specified backoff limit"));
        assert_eq!(
            plan.events,
            [EventNote::warning(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )]
        );
        assert_eq!(sim.status().failed, Some(3));
        // Finished: nothing more happens.
        sim.advance(600);
        assert_eq!(sim.step(), JobPlan { status: sim.status().clone(), ..JobPlan::default() });
    }

    #[test]
    fn a_success_resets_the_back_off() {
        let mut sim =
            Sim::new(JobSpec { parallelism: Some(2), completions: Some(4), ..JobSpec::default() });
        sim.step();
        let names = sim.active();
        sim.advance(1);
        sim.exit(&names[0], 1);
        sim.advance(1);
        sim.exit(&names[1], 0);
        // The failure came before the success: no back-off.
        assert_eq!(sim.step().create.len(), 2);
    }

    #[test]
    fn the_deadline_kills_active_pods_and_fails_once_they_are_gone() {
        let mut sim = Sim::new(JobSpec {
            parallelism: Some(2),
            completions: Some(4),
            active_deadline_seconds: Some(30),
            ..JobSpec::default()
        });
        let plan = sim.step();
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(30)));
        sim.advance(10);
        assert_eq!(sim.step().requeue_after, Some(Duration::from_secs(20)));
        sim.advance(20);
        let plan = sim.step();
        assert_eq!(plan.delete.len(), 2);
        assert!(plan.create.is_empty());
        assert!(sim.has("FailureTarget") && !sim.has("Failed"));
        assert_eq!(
            sim.condition("FailureTarget").unwrap().reason.as_deref(),
            Some("DeadlineExceeded")
        );
        assert_eq!((sim.status().active, sim.status().terminating), (None, Some(2)));
        assert!(plan.events.is_empty());
        // Still terminating: no new deletions, no pods, not failed yet.
        sim.advance(1);
        let plan = sim.step();
        assert!(plan.delete.is_empty() && plan.create.is_empty() && !sim.has("Failed"));
        sim.reap();
        let plan = sim.step();
        assert!(sim.has("Failed"));
        let failed = sim.condition("Failed").unwrap();
        assert_eq!(
            failed.message.as_deref(),
            Some("Job was active longer than specified deadline")
        );
        assert_eq!(reasons(&plan), ["DeadlineExceeded"]);
        assert!(plan.events[0].warning);
        assert_eq!(sim.status().terminating, Some(0));
        assert_eq!(sim.status().completion_time, None);
    }

    #[test]
    fn indexed_jobs_complete_each_index_once() {
        let mut sim = Sim::new(JobSpec {
            parallelism: Some(2),
            completions: Some(3),
            completion_mode: Some("Indexed".into()),
            ..JobSpec::default()
        });
        let plan = sim.step();
        assert_eq!(plan.create.len(), 2);
        for (i, pod) in plan.create.iter().enumerate() {
            let index = i.to_string();
            assert_eq!(pod.metadata.generate_name, Some(format!("pi-{i}-")));
            assert_eq!(
                pod.metadata.annotations.as_ref().unwrap().get(COMPLETION_INDEX),
                Some(&index)
            );
            assert_eq!(pod.metadata.labels.as_ref().unwrap().get(COMPLETION_INDEX), Some(&index));
            let spec = pod.spec.as_ref().unwrap();
            assert_eq!(spec.hostname, Some(format!("pi-{i}")));
            let env = spec.containers[0].env.as_ref().unwrap();
            assert!(
                env.iter()
                    .any(|e| e.name == COMPLETION_INDEX_ENV && e.value == Some(index.clone()))
            );
        }
        let names = sim.active();
        sim.advance(1);
        sim.exit(&names[0], 0);
        let plan = sim.step();
        assert_eq!(plan.create.len(), 1);
        assert_eq!(completion_index(&plan.create[0]), Some(2));
        assert_eq!(sim.status().completed_indexes.as_deref(), Some("0"));
        // Index 1 fails and is retried after the back-off with the same index.
        sim.advance(1);
        sim.exit(&names[1], 1);
        assert!(sim.step().create.is_empty());
        sim.advance(10);
        let plan = sim.step();
        assert_eq!(plan.create.iter().map(completion_index).collect::<Vec<_>>(), [Some(1)]);
        for name in sim.active() {
            sim.exit(&name, 0);
        }
        sim.step();
        assert_eq!(sim.status().completed_indexes.as_deref(), Some("0-2"));
        assert_eq!((sim.status().succeeded, sim.status().failed), (Some(3), Some(1)));
        assert!(sim.has("Complete"));
    }

    #[test]
    fn indexed_jobs_drop_duplicate_and_out_of_range_indexes() {
        let mut sim = Sim::new(JobSpec {
            parallelism: Some(2),
            completions: Some(2),
            completion_mode: Some("Indexed".into()),
            ..JobSpec::default()
        });
        sim.step();
        let first = sim.active()[0].clone();
        let mut twin = sim.pod_mut(&first).clone();
        twin.metadata.name = Some("twin".into());
        let mut stray = twin.clone();
        stray.metadata.name = Some("stray".into());
        stray
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(COMPLETION_INDEX.into(), "7".into());
        sim.pods.extend([twin, stray]);
        sim.run(&first);
        let mut plan = sim.step();
        plan.delete.sort();
        assert_eq!(plan.delete, ["stray", "twin"], "the running pod of index 0 is kept");
        assert!(plan.create.is_empty());
    }

    #[test]
    fn suspending_deletes_pods_and_resuming_restarts_the_clock() {
        let mut sim = Sim::new(JobSpec {
            parallelism: Some(2),
            completions: Some(2),
            active_deadline_seconds: Some(60),
            ..JobSpec::default()
        });
        sim.step();
        sim.advance(50);
        sim.spec().suspend = Some(true);
        let plan = sim.step();
        assert_eq!(plan.delete.len(), 2);
        assert_eq!(reasons(&plan), ["Suspended"]);
        let suspended = sim.condition("Suspended").unwrap();
        assert_eq!(
            (suspended.status.as_str(), suspended.reason.as_deref()),
            ("True", Some("JobSuspended"))
        );
        assert_eq!(plan.requeue_after, None, "no deadline while suspended");
        sim.reap();
        sim.advance(600);
        let plan = sim.step();
        assert!(plan.events.is_empty() && plan.create.is_empty() && !sim.has("FailureTarget"));
        sim.spec().suspend = Some(false);
        let plan = sim.step();
        assert_eq!(plan.create.len(), 2);
        assert_eq!(reasons(&plan), ["Resumed"]);
        let resumed = sim.condition("Suspended").unwrap();
        assert_eq!(
            (resumed.status.as_str(), resumed.reason.as_deref()),
            ("False", Some("JobResumed"))
        );
        assert_eq!(sim.status().start_time, Some(Time(sim.now)));
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));
        assert!(sim.step().events.is_empty());
    }

    #[test]
    fn a_job_created_suspended_does_not_start() {
        let mut sim = Sim::new(JobSpec { suspend: Some(true), ..JobSpec::default() });
        let plan = sim.step();
        assert!(plan.create.is_empty());
        assert_eq!(sim.status().start_time, None);
        assert!(sim.has("Suspended"));
    }

    #[test]
    fn on_failure_restarts_count_toward_the_limit() {
        let mut sim = Sim::new(JobSpec { backoff_limit: Some(2), ..JobSpec::default() });
        let pod_spec = sim.spec().template.spec.as_mut().unwrap();
        pod_spec.restart_policy = Some("OnFailure".into());
        sim.step();
        let name = sim.active()[0].clone();
        let restart = |sim: &mut Sim, count: i32| {
            let status = sim.pod_mut(&name).status.get_or_insert_default();
            status.phase = Some("Running".into());
            status.container_statuses = Some(vec![ContainerStatus {
                name: "main".into(),
                restart_count: count,
                ..ContainerStatus::default()
            }]);
        };
        restart(&mut sim, 1);
        let plan = sim.step();
        assert!(plan.delete.is_empty() && !sim.has("FailureTarget"));
        restart(&mut sim, 2);
        let plan = sim.step();
        assert_eq!(plan.delete, [name]);
        assert_eq!(
            sim.condition("FailureTarget").unwrap().reason.as_deref(),
            Some("BackoffLimitExceeded")
        );
        sim.reap();
        sim.step();
        assert!(sim.has("Failed"));
    }

    #[test]
    fn a_pod_deleted_while_running_is_replaced_not_failed() {
        let mut sim = Sim::new(JobSpec { backoff_limit: Some(0), ..JobSpec::default() });
        sim.step();
        let name = sim.active()[0].clone();
        sim.run(&name);
        sim.pod_mut(&name).metadata.deletion_timestamp = Some(Time(sim.now));
        let plan = sim.step();
        assert_eq!(plan.create.len(), 1);
        assert_eq!((sim.status().failed, sim.status().terminating), (None, Some(1)));
        // Killed by the deletion, it reaches Failed before going away: still not a failure.
        sim.exit(&name, 137);
        sim.step();
        assert!(!sim.has("FailureTarget"));
    }

    #[test]
    fn replacement_policy_failed_waits_for_terminating_pods() {
        let mut sim = Sim::new(JobSpec {
            pod_replacement_policy: Some("Failed".into()),
            ..JobSpec::default()
        });
        sim.step();
        let name = sim.active()[0].clone();
        sim.pod_mut(&name).metadata.deletion_timestamp = Some(Time(sim.now));
        assert!(sim.step().create.is_empty());
        sim.reap();
        assert_eq!(sim.step().create.len(), 1);
    }

    #[test]
    fn lowering_parallelism_deletes_the_least_advanced_pods() {
        let mut sim =
            Sim::new(JobSpec { parallelism: Some(3), completions: Some(3), ..JobSpec::default() });
        sim.step();
        let names = sim.active();
        sim.set_ready(&names[0]);
        sim.run(&names[1]);
        sim.spec().parallelism = Some(1);
        let mut plan = sim.step();
        plan.delete.sort();
        assert_eq!(plan.delete, [names[1].clone(), names[2].clone()]);
        assert_eq!((sim.status().active, sim.status().ready), (Some(1), Some(1)));
    }

    #[test]
    fn finished_jobs_are_deleted_after_their_ttl() {
        let mut sim =
            Sim::new(JobSpec { ttl_seconds_after_finished: Some(60), ..JobSpec::default() });
        sim.step();
        let name = sim.active()[0].clone();
        sim.advance(5);
        sim.exit(&name, 0);
        let plan = sim.step();
        assert!(sim.has("Complete"));
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));
        let finished = sim.status().clone();
        sim.advance(45);
        // Finished: counts stay, even if its pods change.
        sim.pods.clear();
        let plan = sim.step();
        assert_eq!(plan.status, finished);
        assert!(!plan.delete_job && plan.create.is_empty());
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(15)));
        sim.advance(15);
        assert!(sim.step().delete_job);
    }

    #[test]
    fn jobs_of_other_controllers_are_left_alone() {
        let mut sim = Sim::new(JobSpec {
            managed_by: Some("kueue.x-k8s.io/multikueue".into()),
            ..JobSpec::default()
        });
        assert_eq!(sim.step(), JobPlan { status: JobStatus::default(), ..JobPlan::default() });
    }

    #[test]
    fn long_job_names_keep_the_index_in_pod_names() {
        let long = "j".repeat(63);
        assert_eq!(generate_name(&long, None).len(), 58);
        let indexed = generate_name(&long, Some(12));
        assert_eq!(indexed.len(), 58);
        assert!(indexed.ends_with("-12-"));
        assert_eq!(generate_name("pi", Some(3)), "pi-3-");
    }

    #[test]
    fn completed_indexes_are_written_as_ranges() {
        assert_eq!(format_indexes(&[0, 1, 2, 4, 6, 7].into()), "0-2,4,6-7");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }
}
