//! The CronJob planner: from a `batch/v1` CronJob and the Jobs it controls, which Job to start
//! for the latest scheduled time, which Jobs to delete, the CronJob's new status and events, and
//! when to look again — kube-controller-manager's cronjob controller rules, as a pure function.
//!
//! - The schedule is five cron fields or a macro such as `@daily` ([`CronSchedule`]), read in
//!   `spec.timeZone`, or in this machine's local zone when that is unset (upstream: the zone of
//!   kube-controller-manager). `TZ=` and `CRON_TZ=` prefixes are refused, as upstream refuses
//!   them in new objects. A schedule or zone that does not parse gives a warning event and no Job.
//! - `@every <duration>` (upstream's cron library accepts it too) fires every `duration`, in
//!   whole seconds and at least one, counted from `status.lastScheduleTime` (the CronJob's
//!   creation when it never ran).
//! - The due time is the latest time the schedule fires after `status.lastScheduleTime` (the
//!   CronJob's creation when it never ran) and at or before now; earlier missed times are not
//!   run. It is found by halving the interval, so a CronJob that was down for years costs a few
//!   dozen steps.
//! - A due time more than `startingDeadlineSeconds` before now is missed: a `MissSchedule`
//!   warning, no Job, and `lastScheduleTime` stays, so the warning repeats on each reconcile
//!   until the next time is due (upstream does the same).
//! - A Job's name is `<cronjob>-<scheduled time in minutes since the epoch>`, so a due time whose
//!   Job already exists is never started twice: it only moves `lastScheduleTime`.
//! - Concurrency, against the Jobs not finished yet: `Allow` starts anyway; `Forbid` skips with
//!   a `JobAlreadyActive` event and leaves `lastScheduleTime`, so once the running Job finishes
//!   the latest due time still starts (upstream's behaviour; `startingDeadlineSeconds` bounds
//!   how late); `Replace` deletes them and starts.
//! - Finished Jobs beyond `successfulJobsHistoryLimit` (3 when unset) and
//!   `failedJobsHistoryLimit` (1) are deleted, oldest start first, also while suspended.
//! - A suspended CronJob starts nothing; one being deleted only gets its status.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use keelson_webhooks::schedule::CronSchedule;

use crate::node::events::EventNote;
use crate::node::pods;

/// Annotation on each Job a CronJob starts: the time it was scheduled for, in RFC 3339.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// `spec.successfulJobsHistoryLimit` when unset.
const DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: i32 = 3;
/// `spec.failedJobsHistoryLimit` when unset.
const DEFAULT_FAILED_JOBS_HISTORY_LIMIT: i32 = 1;
/// How long after the next scheduled time the reconcile wakes up, so that the time has passed.
const WAKE_UP_MARGIN: Duration = Duration::from_millis(100);

/// What one reconcile of a CronJob should do.
///
/// The reconciler deletes the Jobs in `delete` (background propagation, a missing Job is
/// fine), creates `create`, writes `status`, and then records `events`, which already name
/// those deletions and that creation (`SuccessfulDelete`, `SuccessfulCreate`); when a call
/// fails it records none of them and retries, and the next plan asks again for what is left.
/// A `create` refused because a Job of that name exists (one the CronJob does not control, so
/// not among the listed Jobs) counts as done: write the status without `SuccessfulCreate`,
/// or every retry plans the same Job again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CronJobPlan {
    /// The Job for the due time, when it should start now; it has its final name.
    pub create: Option<Job>,
    /// Names of Jobs to delete: finished Jobs beyond the history limits, and under
    /// `concurrencyPolicy: Replace` the running Jobs the new one replaces.
    pub delete: Vec<String>,
    /// The CronJob's status once the plan is applied, written through `/status`.
    ///
    /// `active` lists the unfinished Jobs given to the planner, minus those deleted here, and is
    /// always present (empty when none runs) so that a merge patch clears it. It leaves out
    /// `create`, whose uid is not known yet: creating it triggers the next reconcile through the
    /// Job watch, which lists it. References carry no `resourceVersion`, so the status does not
    /// change with every update of a Job.
    pub status: CronJobStatus,
    /// Reconcile again after this long: just after the next scheduled time. `None` when the
    /// CronJob is suspended, being deleted or invalid, or its schedule never fires again.
    pub requeue_after: Option<Duration>,
    /// Events to record on the CronJob, as `cronjob-controller`.
    pub events: Vec<EventNote>,
}

/// Plans one reconcile of `cron_job`, given every Job it controls (in any state) and the time.
pub fn plan_cronjob(cron_job: &CronJob, jobs: &[Job], now: Timestamp) -> CronJobPlan {
    let fallback = CronJobSpec::default();
    let spec = cron_job.spec.as_ref().unwrap_or(&fallback);
    let old = cron_job.status.clone().unwrap_or_default();
    let mut plan = CronJobPlan { status: observed_status(&old, jobs), ..CronJobPlan::default() };
    if cron_job.metadata.deletion_timestamp.is_some() {
        return plan;
    }
    plan.events = completed_events(&old, jobs);
    for expired in expired_history(spec, jobs) {
        delete(&mut plan, expired);
    }
    let since = old
        .last_schedule_time
        .as_ref()
        .or(cron_job.metadata.creation_timestamp.as_ref())
        .map_or(now, |t| t.0);
    let schedule = match parse_schedule(spec, since) {
        Ok(schedule) => schedule,
        Err(event) => {
            plan.events.push(event);
            return plan;
        }
    };
    if spec.suspend == Some(true) {
        return plan;
    }
    plan.requeue_after = until_next(&schedule, now);
    let Some(due) = latest_due(&schedule, since, now) else {
        return plan;
    };
    if too_late(spec, due, now) {
        plan.events.push(EventNote::warning(
            "MissSchedule",
            format!("Missed scheduled time to start a job: {}", rfc1123(due)),
        ));
        return plan;
    }
    let name = job_name(cron_job, due);
    if jobs.iter().any(|job| job.metadata.name.as_deref() == Some(name.as_str())) {
        plan.status.last_schedule_time = Some(Time(due));
        return plan;
    }
    let running: Vec<&Job> = jobs.iter().filter(|job| finished_condition(job).is_none()).collect();
    match spec.concurrency_policy.as_deref() {
        Some("Forbid") if !running.is_empty() => {
            plan.events.push(EventNote::normal(
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is \
                 Forbid",
            ));
            return plan;
        }
        Some("Replace") => {
            for job in running.into_iter().filter(|job| job.metadata.deletion_timestamp.is_none()) {
                delete(&mut plan, job);
            }
            // Jobs already being deleted are replaced as well.
            plan.status.active = Some(Vec::new());
        }
        _ => {}
    }
    // The annotation is in `spec.timeZone`, in UTC when that is unset, as upstream writes it.
    let zone = if spec.time_zone.is_some() { schedule.time_zone().clone() } else { TimeZone::UTC };
    plan.events.push(EventNote::normal("SuccessfulCreate", format!("Created job {name}")));
    plan.create = Some(new_job(cron_job, spec, name, rfc3339(due, &zone)));
    plan.status.last_schedule_time = Some(Time(due));
    plan
}

/// The status as the Jobs show it: the unfinished ones as `active`, `lastSuccessfulTime`
/// moved to the latest completion, `lastScheduleTime` kept.
fn observed_status(old: &CronJobStatus, jobs: &[Job]) -> CronJobStatus {
    let active = jobs.iter().filter(|job| finished_condition(job).is_none()).map(job_reference);
    let completions = jobs
        .iter()
        .filter(|job| finished_condition(job) == Some("Complete"))
        .filter_map(|job| job.status.as_ref()?.completion_time.as_ref());
    let last_successful_time = old.last_successful_time.iter().chain(completions).max().cloned();
    let active: Vec<_> = active.collect();
    CronJobStatus {
        active: (!active.is_empty()).then_some(active),
        last_schedule_time: old.last_schedule_time.clone(),
        last_successful_time,
    }
}

/// `SawCompletedJob` for each Job the old status lists as active that has finished since.
fn completed_events(old: &CronJobStatus, jobs: &[Job]) -> Vec<EventNote> {
    let listed: BTreeSet<&str> =
        old.active.iter().flatten().filter_map(|r| r.uid.as_deref()).collect();
    jobs.iter()
        .filter(|job| job.metadata.uid.as_deref().is_some_and(|uid| listed.contains(uid)))
        .filter_map(|job| {
            let condition = finished_condition(job)?;
            let note = format!("Saw completed job: {}, condition: {condition}", name(job));
            Some(EventNote::normal("SawCompletedJob", note))
        })
        .collect()
}

/// Finished Jobs beyond the history limits, the oldest of each kind first; Jobs already being
/// deleted do not count.
fn expired_history<'a>(spec: &CronJobSpec, jobs: &'a [Job]) -> Vec<&'a Job> {
    let limits = [
        ("Complete", spec.successful_jobs_history_limit, DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT),
        ("Failed", spec.failed_jobs_history_limit, DEFAULT_FAILED_JOBS_HISTORY_LIMIT),
    ];
    let mut expired = Vec::new();
    for (condition, limit, default) in limits {
        let mut finished: Vec<&Job> = jobs
            .iter()
            .filter(|job| job.metadata.deletion_timestamp.is_none())
            .filter(|job| finished_condition(job) == Some(condition))
            .collect();
        finished.sort_by_key(|job| (started_at(job), name(job)));
        let keep = usize::try_from(limit.unwrap_or(default)).unwrap_or(0);
        let excess = finished.len().saturating_sub(keep);
        expired.extend(finished.into_iter().take(excess));
    }
    expired
}

/// Adds `job` to the plan's deletions, with its event, and drops it from `active`.
fn delete(plan: &mut CronJobPlan, job: &Job) {
    let name = name(job);
    if let Some(active) = &mut plan.status.active {
        active.retain(|r| r.uid != job.metadata.uid);
    }
    plan.events.push(EventNote::normal("SuccessfulDelete", format!("Deleted job {name}")));
    plan.delete.push(name);
}

/// When a CronJob fires.
enum Schedule {
    /// Cron fields or a macro, in a time zone.
    Cron(Box<CronSchedule>),
    /// `@every`: at `since` plus each multiple of `interval`.
    Every { interval: SignedDuration, since: Timestamp, time_zone: TimeZone },
}

impl Schedule {
    /// The first time the schedule fires strictly after `after`.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            Schedule::Cron(cron) => cron.next_after(after),
            Schedule::Every { interval, since, .. } => {
                let elapsed = after.duration_since(*since).as_nanos().max(0);
                let steps = elapsed / interval.as_nanos() + 1;
                let offset = SignedDuration::try_from_nanos_i128(steps * interval.as_nanos())?;
                since.checked_add(offset).ok()
            }
        }
    }

    /// The zone scheduled times are written in.
    fn time_zone(&self) -> &TimeZone {
        match self {
            Schedule::Cron(cron) => cron.time_zone(),
            Schedule::Every { time_zone, .. } => time_zone,
        }
    }
}

/// The interval of `@every <duration>`, as upstream's cron library takes it: a Go duration
/// (`90s`, `1h30m`, `1.5h`) cut to whole seconds, at least one.
fn every_interval(duration: &str) -> Result<SignedDuration, String> {
    let parsed: SignedDuration =
        duration.parse().map_err(|_| format!("time: invalid duration \"{duration}\""))?;
    Ok(SignedDuration::from_secs(parsed.as_secs().max(1)))
}

/// The schedule in its time zone, `@every` counted from `since`; the error is the warning
/// event to record.
fn parse_schedule(spec: &CronJobSpec, since: Timestamp) -> Result<Schedule, EventNote> {
    let zone = match spec.time_zone.as_deref() {
        None => TimeZone::system(),
        Some(name) => jiff::tz::db().get(name).map_err(|_| {
            let note = format!("invalid timeZone: \"{name}\": unknown time zone {name}");
            EventNote::warning("UnknownTimeZone", note)
        })?,
    };
    parse_expression(&spec.schedule, zone, since).map_err(|reason| {
        let note = format!("unparseable schedule: \"{}\" : {reason}", spec.schedule);
        EventNote::warning("UnparseableSchedule", note)
    })
}

/// What is wrong with a CronJob's schedule expression, if anything: what the API server's
/// validation tells a client that writes it.
pub(crate) fn schedule_problem(expression: &str) -> Option<String> {
    parse_expression(expression, TimeZone::UTC, Timestamp::UNIX_EPOCH).err()
}

/// A schedule expression (five cron fields, a macro, `@every <duration>`) in `zone`; the error
/// says why it does not parse.
fn parse_expression(
    expression: &str,
    zone: TimeZone,
    since: Timestamp,
) -> Result<Schedule, String> {
    let expression = expression.trim();
    if expression.starts_with("TZ=") || expression.starts_with("CRON_TZ=") {
        return Err("TZ and CRON_TZ are not supported, use spec.timeZone".into());
    }
    if let Some(duration) = expression.strip_prefix("@every ") {
        let interval = every_interval(duration.trim())
            .map_err(|problem| format!("failed to parse duration {expression}: {problem}"))?;
        return Ok(Schedule::Every { interval, since, time_zone: zone });
    }
    CronSchedule::with_time_zone(expression, zone)
        .map(|cron| Schedule::Cron(Box::new(cron)))
        .map_err(|problem| problem.message)
}

/// The latest time `schedule` fires after `after` and at or before `until`, found by halving
/// the interval rather than stepping through every firing.
fn latest_due(schedule: &Schedule, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
    // `found` is a firing, and no firing lies after `bound` (up to `until`).
    let mut found = schedule.next_after(after).filter(|at| *at <= until)?;
    let mut bound = until;
    while schedule.next_after(found).is_some_and(|next| next <= bound) {
        let middle = found + bound.duration_since(found) / 2;
        match schedule.next_after(middle).filter(|at| *at <= bound) {
            Some(at) => found = at,
            None => bound = middle,
        }
    }
    Some(found)
}

/// Whether `due` is more than `startingDeadlineSeconds` before `now`.
fn too_late(spec: &CronJobSpec, due: Timestamp, now: Timestamp) -> bool {
    spec.starting_deadline_seconds.is_some_and(|deadline| {
        due.checked_add(SignedDuration::from_secs(deadline)).is_ok_and(|latest| latest < now)
    })
}

/// How long until just after the next time `schedule` fires.
fn until_next(schedule: &Schedule, now: Timestamp) -> Option<Duration> {
    let next = schedule.next_after(now)?;
    let wait = Duration::try_from(now.duration_until(next)).ok()?;
    Some(wait.saturating_add(WAKE_UP_MARGIN))
}

/// `<cronjob>-<due time in minutes since the epoch>`, the same for every reconcile.
fn job_name(cron_job: &CronJob, due: Timestamp) -> String {
    let cron_job_name = cron_job.metadata.name.as_deref().unwrap_or_default();
    format!("{cron_job_name}-{}", due.as_second().div_euclid(60))
}

/// The Job for a due time: the template's labels, annotations (plus `scheduled`, the due time
/// for [`SCHEDULED_TIMESTAMP_ANNOTATION`]) and spec, with the CronJob as controller.
fn new_job(cron_job: &CronJob, spec: &CronJobSpec, name: String, scheduled: String) -> Job {
    let template = spec.job_template.metadata.clone().unwrap_or_default();
    let mut annotations = template.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(), scheduled);
    let owner = pods::controller_reference("batch/v1", "CronJob", &cron_job.metadata);
    Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: cron_job.metadata.namespace.clone(),
            labels: template.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: spec.job_template.spec.clone(),
        status: None,
    }
}

/// A reference to a Job, as `status.active` lists it.
fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".to_owned()),
        kind: Some("Job".to_owned()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// `Complete` or `Failed`, when the Job has that condition with status `True`.
fn finished_condition(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_deref().unwrap_or_default();
    ["Complete", "Failed"]
        .into_iter()
        .find(|type_| conditions.iter().any(|c| c.type_ == *type_ && c.status == "True"))
}

/// When the Job started, its creation when that is not recorded.
fn started_at(job: &Job) -> Option<Timestamp> {
    let started = job.status.as_ref().and_then(|s| s.start_time.as_ref());
    started.or(job.metadata.creation_timestamp.as_ref()).map(|t| t.0)
}

fn name(job: &Job) -> String {
    job.metadata.name.clone().unwrap_or_default()
}

/// RFC 3339 in `zone`, with `Z` for a zero offset as Go writes it.
fn rfc3339(at: Timestamp, zone: &TimeZone) -> String {
    let zoned = at.to_zoned(zone.clone());
    let format =
        if zoned.offset().seconds() == 0 { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S%:z" };
    zoned.strftime(format).to_string()
}

/// RFC 1123 with a numeric offset, in UTC (`Thu, 01 Jan 2026 00:10:00 +0000`).
fn rfc1123(at: Timestamp) -> String {
    at.to_zoned(TimeZone::UTC).strftime("%a, %d %b %Y %H:%M:%S %z").to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::batch::v1::{JobCondition, JobSpec, JobStatus, JobTemplateSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn job_spec() -> JobSpec {
        JobSpec {
            backoff_limit: Some(2),
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    containers: vec![Container { name: "main".into(), ..Container::default() }],
                    restart_policy: Some("Never".into()),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }
    }

    /// CronJob `hello` in UTC, created at 00:00:30 on 2026-01-01.
    fn cron_job(schedule: &str) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("hello".into()),
                namespace: Some("ns".into()),
                uid: Some("cj-uid".into()),
                creation_timestamp: Some(Time(t("2026-01-01T00:00:30Z"))),
                ..ObjectMeta::default()
            },
            spec: Some(CronJobSpec {
                schedule: schedule.into(),
                time_zone: Some("UTC".into()),
                job_template: JobTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(map(&[("app", "hello")])),
                        annotations: Some(map(&[("team", "infra")])),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(job_spec()),
                },
                ..CronJobSpec::default()
            }),
            status: None,
        }
    }

    fn spec(cron_job: &mut CronJob) -> &mut CronJobSpec {
        cron_job.spec.as_mut().unwrap()
    }

    /// The Job of `hello` for the time `at`, started then; `outcome` is its finished condition,
    /// a success completing a minute later.
    fn job(at: &str, outcome: Option<&str>) -> Job {
        let at = t(at);
        let name = format!("hello-{}", at.as_second() / 60);
        let owner = ObjectMeta {
            name: Some("hello".into()),
            uid: Some("cj-uid".into()),
            ..ObjectMeta::default()
        };
        Job {
            metadata: ObjectMeta {
                uid: Some(format!("uid-{name}")),
                name: Some(name),
                namespace: Some("ns".into()),
                creation_timestamp: Some(Time(at)),
                owner_references: Some(vec![pods::controller_reference(
                    "batch/v1", "CronJob", &owner,
                )]),
                ..ObjectMeta::default()
            },
            spec: Some(job_spec()),
            status: Some(JobStatus {
                start_time: Some(Time(at)),
                completion_time: (outcome == Some("Complete"))
                    .then(|| Time(at + SignedDuration::from_secs(60))),
                conditions: outcome.map(|type_| {
                    vec![JobCondition {
                        type_: type_.into(),
                        status: "True".into(),
                        ..JobCondition::default()
                    }]
                }),
                ..JobStatus::default()
            }),
        }
    }

    fn active_names(plan: &CronJobPlan) -> Vec<String> {
        let active = plan.status.active.as_deref().unwrap_or_default();
        active.iter().map(|r| r.name.clone().unwrap_or_default()).collect()
    }

    fn reasons(plan: &CronJobPlan) -> Vec<&str> {
        plan.events.iter().map(|e| e.reason.as_str()).collect()
    }

    fn secs_ms(secs: u64, millis: u64) -> Option<Duration> {
        Some(Duration::from_secs(secs) + Duration::from_millis(millis))
    }

    #[test]
    fn a_due_time_starts_a_job_named_after_it() {
        let cron_job = cron_job("*/5 * * * *");
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:05:10Z"));
        let job = plan.create.as_ref().expect("a job");
        // 2026-01-01T00:05:00Z is 1767225900 s, 29453765 min after the epoch.
        assert_eq!(job.metadata.name.as_deref(), Some("hello-29453765"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(job.metadata.labels, Some(map(&[("app", "hello")])));
        assert_eq!(
            job.metadata.annotations,
            Some(map(&[
                ("team", "infra"),
                (SCHEDULED_TIMESTAMP_ANNOTATION, "2026-01-01T00:05:00Z")
            ]))
        );
        let owners = job.metadata.owner_references.as_deref().unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(
            (owners[0].api_version.as_str(), owners[0].kind.as_str(), owners[0].name.as_str()),
            ("batch/v1", "CronJob", "hello")
        );
        assert_eq!(owners[0].controller, Some(true));
        assert!(pods::is_controlled_by(&job.metadata, "cj-uid"));
        assert_eq!(job.spec, Some(job_spec()));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:05:00Z"))));
        assert_eq!(plan.status.active, None, "the reconciler lists it next time");
        assert!(plan.delete.is_empty());
        assert_eq!(
            plan.events,
            [EventNote::normal("SuccessfulCreate", "Created job hello-29453765")]
        );
        // Until 00:10:00, plus the margin.
        assert_eq!(plan.requeue_after, secs_ms(290, 100));
    }

    #[test]
    fn nothing_starts_before_the_first_time() {
        let cron_job = cron_job("*/5 * * * *");
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:03:00Z"));
        assert_eq!(plan.create, None);
        assert!(plan.events.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.status.last_schedule_time, None);
        assert_eq!(plan.requeue_after, secs_ms(120, 100));
        // A time before the CronJob was created is not due: 00:00 precedes 00:00:30.
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:04:59Z"));
        assert_eq!(plan.create, None);
    }

    #[test]
    fn only_the_latest_missed_time_starts_and_earlier_handled_ones_do_not_again() {
        let mut cron_job = cron_job("*/5 * * * *");
        cron_job.status = Some(CronJobStatus {
            last_schedule_time: Some(Time(t("2026-01-01T00:05:00Z"))),
            ..CronJobStatus::default()
        });
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:27:00Z"));
        assert_eq!(plan.create.unwrap().metadata.name, Some(format!("hello-{}", 29453765 + 20)));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:25:00Z"))));
        // Right at a scheduled time it is due.
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:10:00Z"));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:10:00Z"))));
        // The time of lastScheduleTime is handled already.
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:09:59Z"));
        assert_eq!(plan.create, None);
    }

    #[test]
    fn years_of_missed_minutes_find_the_latest_quickly() {
        let mut cron_job = cron_job("* * * * *");
        cron_job.metadata.creation_timestamp = Some(Time(t("2000-01-01T00:00:00Z")));
        let plan = plan_cronjob(&cron_job, &[], t("2026-03-04T05:06:59Z"));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-03-04T05:06:00Z"))));
        assert_eq!(plan.requeue_after, secs_ms(1, 100));
    }

    #[test]
    fn a_time_whose_job_exists_is_only_recorded() {
        let cron_job = cron_job("*/5 * * * *");
        let existing = job("2026-01-01T00:05:00Z", None);
        let plan = plan_cronjob(&cron_job, &[existing], t("2026-01-01T00:05:10Z"));
        assert_eq!(plan.create, None);
        assert!(plan.events.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:05:00Z"))));
        assert_eq!(active_names(&plan), ["hello-29453765"]);
        let reference = &plan.status.active.as_ref().unwrap()[0];
        assert_eq!(
            (reference.api_version.as_deref(), reference.kind.as_deref()),
            (Some("batch/v1"), Some("Job"))
        );
        assert_eq!(reference.namespace.as_deref(), Some("ns"));
        assert_eq!(reference.uid.as_deref(), Some("uid-hello-29453765"));
        assert_eq!(reference.resource_version, None);
    }

    #[test]
    fn a_suspended_cron_job_starts_nothing_but_keeps_its_status() {
        let mut cron_job = cron_job("*/5 * * * *");
        spec(&mut cron_job).suspend = Some(true);
        let jobs =
            [job("2025-12-31T23:00:00Z", Some("Complete")), job("2026-01-01T00:00:00Z", None)];
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:05:10Z"));
        assert_eq!(plan.create, None);
        assert_eq!(plan.requeue_after, None);
        assert!(plan.events.is_empty());
        assert_eq!(plan.status.last_schedule_time, None);
        assert_eq!(active_names(&plan), [name(&jobs[1])]);
        assert_eq!(plan.status.last_successful_time, Some(Time(t("2025-12-31T23:01:00Z"))));
    }

    #[test]
    fn forbid_skips_while_a_job_runs_and_starts_once_it_finished() {
        let mut cron_job = cron_job("*/5 * * * *");
        spec(&mut cron_job).concurrency_policy = Some("Forbid".into());
        let mut running = job("2026-01-01T00:05:00Z", None);
        let first =
            plan_cronjob(&cron_job, std::slice::from_ref(&running), t("2026-01-01T00:06:00Z"));
        cron_job.status = Some(first.status);
        let plan =
            plan_cronjob(&cron_job, std::slice::from_ref(&running), t("2026-01-01T00:10:05Z"));
        assert_eq!(plan.create, None);
        assert!(plan.delete.is_empty());
        assert_eq!(
            plan.events,
            [EventNote::normal(
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is \
                 Forbid"
            )]
        );
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:05:00Z"))));
        assert_eq!(plan.requeue_after, secs_ms(295, 100), "waits for the next time, not busily");
        // The running job completes: the skipped time starts late, as upstream does.
        running = job("2026-01-01T00:05:00Z", Some("Complete"));
        let plan =
            plan_cronjob(&cron_job, std::slice::from_ref(&running), t("2026-01-01T00:12:00Z"));
        let created = plan.create.as_ref().unwrap();
        assert_eq!(created.metadata.name.as_deref(), Some("hello-29453770"));
        assert_eq!(reasons(&plan), ["SawCompletedJob", "SuccessfulCreate"]);
        assert_eq!(plan.events[0].note, "Saw completed job: hello-29453765, condition: Complete");
        assert_eq!(plan.status.active, None);
        assert_eq!(plan.status.last_successful_time, Some(Time(t("2026-01-01T00:06:00Z"))));
    }

    #[test]
    fn replace_deletes_the_running_jobs_and_starts_a_new_one() {
        let mut cron_job = cron_job("*/5 * * * *");
        spec(&mut cron_job).concurrency_policy = Some("Replace".into());
        let jobs =
            [job("2026-01-01T00:00:00Z", Some("Complete")), job("2026-01-01T00:05:00Z", None)];
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:10:05Z"));
        assert_eq!(plan.delete, ["hello-29453765"]);
        assert_eq!(plan.create.unwrap().metadata.name, Some("hello-29453770".into()));
        assert_eq!(
            plan.events,
            [
                EventNote::normal("SuccessfulDelete", "Deleted job hello-29453765"),
                EventNote::normal("SuccessfulCreate", "Created job hello-29453770"),
            ]
        );
        assert_eq!(plan.status.active, Some(Vec::new()));
        // Allow, the default, starts beside it.
        spec(&mut cron_job).concurrency_policy = None;
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:10:05Z"));
        assert!(plan.delete.is_empty() && plan.create.is_some());
        assert_eq!(active_names(&plan), ["hello-29453765"]);
    }

    #[test]
    fn a_time_past_the_starting_deadline_is_missed() {
        let mut cron_job = cron_job("*/5 * * * *");
        spec(&mut cron_job).starting_deadline_seconds = Some(60);
        cron_job.status = Some(CronJobStatus {
            last_schedule_time: Some(Time(t("2026-01-01T00:05:00Z"))),
            ..CronJobStatus::default()
        });
        // Exactly the deadline late still starts.
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:11:00Z"));
        assert!(plan.create.is_some());
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:11:30Z"));
        assert_eq!(plan.create, None);
        assert_eq!(
            plan.events,
            [EventNote::warning(
                "MissSchedule",
                "Missed scheduled time to start a job: Thu, 01 Jan 2026 00:10:00 +0000"
            )]
        );
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:05:00Z"))));
        assert_eq!(plan.requeue_after, secs_ms(210, 100));
    }

    #[test]
    fn finished_jobs_beyond_the_history_limits_are_deleted_oldest_first() {
        let mut cron_job = cron_job("0 * * * *");
        spec(&mut cron_job).successful_jobs_history_limit = Some(2);
        let mut going = job("2025-12-31T18:00:00Z", Some("Complete"));
        going.metadata.deletion_timestamp = Some(Time(t("2026-01-01T00:00:00Z")));
        let jobs = [
            job("2025-12-31T22:00:00Z", Some("Complete")),
            job("2025-12-31T19:00:00Z", Some("Complete")),
            job("2025-12-31T20:00:00Z", Some("Failed")),
            job("2025-12-31T21:00:00Z", Some("Complete")),
            job("2025-12-31T23:00:00Z", Some("Failed")),
            job("2025-12-31T17:00:00Z", Some("Failed")),
            going,
            job("2026-01-01T00:00:00Z", None),
        ];
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:10:00Z"));
        let expected = [&jobs[1], &jobs[5], &jobs[2]].map(name);
        assert_eq!(plan.delete, expected);
        let notes: Vec<&str> = plan.events.iter().map(|e| e.note.as_str()).collect();
        assert_eq!(notes, expected.map(|n| format!("Deleted job {n}")));
        assert_eq!(reasons(&plan), ["SuccessfulDelete"; 3]);
        assert_eq!(active_names(&plan), [name(&jobs[7])]);
        assert_eq!(plan.status.last_successful_time, Some(Time(t("2025-12-31T22:01:00Z"))));
        // Unset limits keep three successful jobs and one failed.
        spec(&mut cron_job).successful_jobs_history_limit = None;
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:10:00Z"));
        assert_eq!(plan.delete, [&jobs[5], &jobs[2]].map(name));
        // A limit of zero keeps none.
        spec(&mut cron_job).failed_jobs_history_limit = Some(0);
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:10:00Z"));
        assert_eq!(plan.delete, [&jobs[5], &jobs[2], &jobs[4]].map(name));
    }

    #[test]
    fn a_completed_job_is_reported_once() {
        let mut cron_job = cron_job("0 * * * *");
        let mut jobs = vec![job("2026-01-01T00:00:00Z", None)];
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:00:20Z"));
        assert!(plan.events.is_empty());
        cron_job.status = Some(plan.status);
        jobs[0] = job("2026-01-01T00:00:00Z", Some("Failed"));
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:02:00Z"));
        assert_eq!(
            plan.events,
            [EventNote::normal(
                "SawCompletedJob",
                "Saw completed job: hello-29453760, condition: Failed"
            )]
        );
        assert_eq!(plan.status.last_successful_time, None, "a failure is no success");
        cron_job.status = Some(plan.status);
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:03:00Z"));
        assert!(plan.events.is_empty());
    }

    #[test]
    fn an_invalid_schedule_warns_and_starts_nothing() {
        let now = t("2026-01-01T00:05:10Z");
        let plan = plan_cronjob(&cron_job("every day"), &[], now);
        assert_eq!((&plan.create, plan.requeue_after), (&None, None));
        assert_eq!(reasons(&plan), ["UnparseableSchedule"]);
        assert!(plan.events[0].warning);
        assert!(
            plan.events[0].note.starts_with("unparseable schedule: \"every day\" : "),
            "{}",
            plan.events[0].note
        );
        let plan = plan_cronjob(&cron_job("TZ=UTC */5 * * * *"), &[], now);
        assert_eq!(plan.create, None);
        assert_eq!(
            plan.events,
            [EventNote::warning(
                "UnparseableSchedule",
                "unparseable schedule: \"TZ=UTC */5 * * * *\" : TZ and CRON_TZ are not \
                 supported, use spec.timeZone"
            )]
        );
        let mut cron_job = cron_job("*/5 * * * *");
        spec(&mut cron_job).time_zone = Some("Mars/Olympus".into());
        let plan = plan_cronjob(&cron_job, &[], now);
        assert_eq!((plan.create, plan.requeue_after), (None, None));
        assert_eq!(
            plan.events,
            [EventNote::warning(
                "UnknownTimeZone",
                "invalid timeZone: \"Mars/Olympus\": unknown time zone Mars/Olympus"
            )]
        );
    }

    #[test]
    fn every_counts_its_interval_from_the_last_scheduled_time() {
        // Created at 00:00:30: due at 00:02:00, 00:03:30, 00:05:00...
        let mut cron_job = cron_job("@every 1m30s");
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:01:00Z"));
        assert_eq!((&plan.create, plan.requeue_after), (&None, secs_ms(60, 100)));
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:04:00Z"));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:03:30Z"))));
        assert_eq!(plan.create.unwrap().metadata.name.as_deref(), Some("hello-29453763"));
        assert_eq!(plan.requeue_after, secs_ms(60, 100), "the next is due at 00:05:00");
        cron_job.status = Some(plan.status);
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T00:05:01Z"));
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-01T00:05:00Z"))));
        // Years later, the latest time on the same grid.
        cron_job.status = Some(plan.status);
        let plan = plan_cronjob(&cron_job, &[], t("2029-06-01T00:00:10Z"));
        let due = plan.status.last_schedule_time.unwrap().0;
        let after_last = due.duration_since(t("2026-01-01T00:05:00Z")).as_secs();
        assert_eq!(after_last % 90, 0, "{due} is on the grid");
        assert!(
            t("2029-06-01T00:00:10Z").duration_since(due).as_secs() < 90,
            "{due} is the latest"
        );
    }

    #[test]
    fn every_takes_go_durations_in_whole_seconds() {
        assert_eq!(every_interval("1.5h"), Ok(SignedDuration::from_secs(5400)));
        assert_eq!(every_interval("2h45m"), Ok(SignedDuration::from_secs(9900)));
        assert_eq!(every_interval("1500ms"), Ok(SignedDuration::from_secs(1)));
        assert_eq!(every_interval("10ms"), Ok(SignedDuration::from_secs(1)), "at least a second");
        let plan = plan_cronjob(&cron_job("@every soon"), &[], t("2026-01-01T00:05:00Z"));
        assert_eq!(
            plan.events,
            [EventNote::warning(
                "UnparseableSchedule",
                "unparseable schedule: \"@every soon\" : failed to parse duration @every soon: \
                 time: invalid duration \"soon\""
            )]
        );
    }

    #[test]
    fn the_time_zone_is_honoured() {
        let mut cron_job = cron_job("0 9 * * *");
        spec(&mut cron_job).time_zone = Some("Asia/Tokyo".into());
        // 09:00 in Tokyo is 00:00 UTC; the CronJob was created at 09:00:30 JST, 2026-01-01.
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-01T23:59:00Z"));
        assert_eq!(plan.create, None);
        assert_eq!(plan.requeue_after, secs_ms(60, 100));
        let plan = plan_cronjob(&cron_job, &[], t("2026-01-02T00:00:30Z"));
        let job = plan.create.expect("due at 09:00 JST");
        assert_eq!(
            job.metadata.annotations.unwrap().get(SCHEDULED_TIMESTAMP_ANNOTATION),
            Some(&"2026-01-02T09:00:00+09:00".to_owned())
        );
        assert_eq!(plan.status.last_schedule_time, Some(Time(t("2026-01-02T00:00:00Z"))));
        assert_eq!(plan.requeue_after, secs_ms(86_400 - 30, 100));
    }

    #[test]
    fn without_a_time_zone_the_schedule_is_read_in_the_local_zone() {
        let mut cron_job = cron_job("0 9 * * *");
        spec(&mut cron_job).time_zone = None;
        cron_job.metadata.creation_timestamp = Some(Time(t("2025-12-01T00:00:00Z")));
        let now = t("2026-01-01T00:00:00Z");
        let local = CronSchedule::with_time_zone("0 9 * * *", TimeZone::system()).unwrap();
        let next = local.next_after(now).unwrap();
        let plan = plan_cronjob(&cron_job, &[], now);
        let wait = Duration::try_from(now.duration_until(next)).unwrap();
        assert_eq!(plan.requeue_after, Some(wait + WAKE_UP_MARGIN));
        // The scheduled time is annotated in UTC, as upstream does without a zone.
        let due = plan.status.last_schedule_time.unwrap().0;
        let job = plan.create.unwrap();
        let scheduled = job.metadata.annotations.unwrap()[SCHEDULED_TIMESTAMP_ANNOTATION].clone();
        assert_eq!(scheduled, due.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    }

    #[test]
    fn a_cron_job_being_deleted_only_gets_its_status() {
        let mut cron_job = cron_job("*/5 * * * *");
        cron_job.metadata.deletion_timestamp = Some(Time(t("2026-01-01T00:05:00Z")));
        let jobs = [
            job("2025-12-31T23:00:00Z", Some("Failed")),
            job("2025-12-31T23:05:00Z", Some("Failed")),
            job("2026-01-01T00:00:00Z", None),
        ];
        let plan = plan_cronjob(&cron_job, &jobs, t("2026-01-01T00:05:10Z"));
        assert_eq!(
            plan,
            CronJobPlan {
                status: CronJobStatus {
                    active: Some(vec![job_reference(&jobs[2])]),
                    ..CronJobStatus::default()
                },
                ..CronJobPlan::default()
            }
        );
    }

    #[test]
    fn scheduled_times_are_written_as_go_writes_rfc3339() {
        let at = t("2026-07-01T12:00:00Z");
        let zone = |name: &str| jiff::tz::db().get(name).unwrap();
        assert_eq!(rfc3339(at, &TimeZone::UTC), "2026-07-01T12:00:00Z");
        assert_eq!(rfc3339(at, &zone("America/New_York")), "2026-07-01T08:00:00-04:00");
        assert_eq!(rfc3339(at, &zone("Asia/Kathmandu")), "2026-07-01T17:45:00+05:45");
        // London in winter is at offset zero: Go writes `Z` there too.
        assert_eq!(
            rfc3339(t("2026-01-01T12:00:00Z"), &zone("Europe/London")),
            "2026-01-01T12:00:00Z"
        );
    }
}
