//! The pure decisions of the Schedule controller: from a Schedule, the Runs it started and the
//! time, which run to start, which runs to cancel or delete, and the status to write.
//!
//! - Due times are the firings of the cron expression in the schedule's time zone strictly
//!   after `status.lastScheduleTime` (the creation time when the schedule never fired, now
//!   when that is unknown) and at or before now. Across daylight saving changes they follow
//!   [`CronSchedule`]: a wall-clock time that clocks skip fires right after the gap, and a
//!   pattern of every minute or hour fires in both passes of a repeated hour.
//! - Only the latest due time may start a run; it is found by bisection, so a schedule that
//!   was down for years costs a few dozen steps. With `startingDeadlineSeconds`, due times more
//!   than that many seconds before now are missed: added to `status.missedSchedules` (the count
//!   stops at [`MAX_COUNTED_MISSES`]) and reported in a `MissedSchedules` warning event. A due
//!   time exactly the deadline old still starts; when the latest one is missed, nothing does.
//! - `lastScheduleTime` moves to the latest due time once it is handled: started, found
//!   already started, skipped under `Forbid`, or missed. So nothing starts late and nothing is
//!   counted twice. A suspended schedule handles nothing and keeps `lastScheduleTime`, so once
//!   it is resumed the deadline decides what still runs.
//! - Concurrency, against the owned runs not finished yet: `Allow` starts anyway, `Forbid`
//!   skips the due time (`SkippedForbid` event), `Replace` cancels them (`Replaced` event)
//!   and starts. A run's name is derived from its due time ([`run_name`]), so a due time
//!   whose run already exists is never started twice.
//! - Finished runs beyond `successfulRunsHistoryLimit` and `failedRunsHistoryLimit` (failed
//!   and cancelled runs count as failed) are deleted, oldest first.
//! - An expression or zone that does not parse sets Ready=False (`InvalidSpec`) and nothing
//!   else happens.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use keelson_api_crds::conditions::{READY, REASON_INVALID_SPEC, Status, Update};
use keelson_api_crds::workflows::{
    ConcurrencyPolicy, Run, RunPhase, RunSpec, Schedule, ScheduleSpec, ScheduleStatus,
};
use keelson_webhooks::schedule::CronSchedule;
use kube::Resource;

use super::names::{SCHEDULE_LABEL, label_value};

/// Annotation on every Run a Schedule starts: the due time it was started for (RFC 3339).
pub const SCHEDULED_AT_ANNOTATION: &str = "workflows.keelson.dev/scheduled-at";

/// Missed due times counted in one decision at most; more are reported as "more than" this.
pub const MAX_COUNTED_MISSES: i64 = 1_000_000;

/// A Run this schedule started, as the reconciler read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRun {
    /// The Run's name.
    pub name: String,
    /// The due time it was started for ([`SCHEDULED_AT_ANNOTATION`]).
    pub scheduled_at: Timestamp,
    /// Its `status.phase`; `None` before the run controller saw it.
    pub phase: Option<RunPhase>,
    /// Whether its `spec.cancel` is set.
    pub cancel_requested: bool,
    /// Its `status.finishedAt`.
    pub finished_at: Option<Timestamp>,
}

impl OwnedRun {
    /// Whether the run reached a final phase.
    fn is_finished(&self) -> bool {
        matches!(self.phase, Some(RunPhase::Succeeded | RunPhase::Failed | RunPhase::Cancelled))
    }
}

/// A Kubernetes event to record on the Schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleEvent {
    /// A `Warning` event rather than a `Normal` one.
    pub warning: bool,
    /// CamelCase reason: `Started`, `SkippedForbid`, `Replaced` or `MissedSchedules`.
    pub reason: &'static str,
    /// What happened, for a person to read.
    pub note: String,
}

/// What the reconciler should do, in this order: cancel, start, delete, write the status,
/// record the events, and come back at `wake_at`.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The status to write: `lastScheduleTime`, `nextScheduleTime`, `lastRunName`, `active`,
    /// `missedSchedules` and the `Ready` condition.
    pub status: ScheduleStatus,
    /// Start a run for this due time: create [`build_run`] (a conflict means it already was).
    pub start: Option<Timestamp>,
    /// Runs to cancel (set `spec.cancel`), under `Replace`.
    pub cancel: Vec<String>,
    /// Finished runs beyond the history limits, to delete.
    pub delete: Vec<String>,
    /// Events to record.
    pub events: Vec<ScheduleEvent>,
    /// When to reconcile again: the next due time; `None` when suspended, invalid, or when the
    /// schedule never fires again.
    pub wake_at: Option<Timestamp>,
}

/// Decides what the schedule does at `now`, given the runs it owns.
pub fn decide(schedule: &Schedule, runs: &[OwnedRun], now: Timestamp) -> Decision {
    let spec = &schedule.spec;
    let generation = schedule.metadata.generation;
    let mut decision = Decision {
        status: schedule.status.clone().unwrap_or_default(),
        start: None,
        cancel: Vec::new(),
        delete: Vec::new(),
        events: Vec::new(),
        wake_at: None,
    };
    let cron = match CronSchedule::parse(&spec.cron, &spec.time_zone) {
        Ok(cron) => cron,
        Err(problem) => {
            let status = &mut decision.status;
            status.next_schedule_time = None;
            let update = Update {
                type_: READY,
                status: Status::False,
                reason: REASON_INVALID_SPEC,
                message: &problem.message,
            };
            status.observed.set(update, generation, now);
            return decision;
        }
    };
    decision.delete = beyond_history(spec, runs);
    decision.status.active = unfinished(runs).map(|run| run.name.clone()).collect();
    let cursor = decision
        .status
        .last_schedule_time
        .as_ref()
        .or(schedule.metadata.creation_timestamp.as_ref())
        .map_or(now, |time| time.0);
    if !spec.suspend
        && let Some(due) = latest_firing(&cron, cursor, now)
    {
        handle_due(schedule, &cron, runs, cursor, due, now, &mut decision);
    }
    let next = cron.next_after(cursor.max(now));
    let (reason, message) = match next {
        _ if spec.suspend => ("Suspended", "suspended: no run is started".to_owned()),
        Some(next) => ("Scheduled", format!("next run due at {next}")),
        None => ("Scheduled", "the schedule does not fire again".to_owned()),
    };
    let status = &mut decision.status;
    status.next_schedule_time = next.map(Time);
    let update = Update { type_: READY, status: Status::True, reason, message: &message };
    status.observed.set(update, generation, now);
    decision.wake_at = if spec.suspend { None } else { next };
    decision
}

/// The name of the Run started for `scheduled_at`: `<schedule>-<minutes since the Unix epoch>`.
/// Due times are whole minutes, so the two passes of a repeated hour get distinct names.
pub fn run_name(schedule_name: &str, scheduled_at: Timestamp) -> String {
    format!("{schedule_name}-{}", scheduled_at.as_second().div_euclid(60))
}

/// The Run to create for the due time `scheduled_at`: the schedule's flow and parameters,
/// started; labelled with the schedule, annotated with the due time, owned by the schedule.
pub fn build_run(schedule: &Schedule, scheduled_at: Timestamp) -> Run {
    let schedule_name = schedule.metadata.name.clone().unwrap_or_default();
    let owner = OwnerReference {
        api_version: Schedule::api_version(&()).into_owned(),
        kind: Schedule::kind(&()).into_owned(),
        name: schedule_name.clone(),
        uid: schedule.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let metadata = ObjectMeta {
        name: Some(run_name(&schedule_name, scheduled_at)),
        namespace: schedule.metadata.namespace.clone(),
        labels: Some(BTreeMap::from([(SCHEDULE_LABEL.to_owned(), label_value(&schedule_name))])),
        annotations: Some(BTreeMap::from([(
            SCHEDULED_AT_ANNOTATION.to_owned(),
            scheduled_at.to_string(),
        )])),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    };
    let spec = RunSpec {
        flow_ref: Some(schedule.spec.flow_ref.clone()),
        parameters: schedule.spec.parameters.clone(),
        start: true,
        ..RunSpec::default()
    };
    Run { metadata, spec, status: None }
}

/// Handles the latest due time `due` (after `cursor`, at or before `now`): counts the missed
/// ones, then starts a run for it, skips it or finds it started, per the concurrency policy.
fn handle_due(
    schedule: &Schedule,
    cron: &CronSchedule,
    runs: &[OwnedRun],
    cursor: Timestamp,
    due: Timestamp,
    now: Timestamp,
    decision: &mut Decision,
) {
    let spec = &schedule.spec;
    decision.status.last_schedule_time = Some(Time(due));
    if let Some(deadline) = spec.starting_deadline_seconds {
        let cutoff =
            now.checked_sub(SignedDuration::from_secs(deadline.max(0))).unwrap_or(Timestamp::MIN);
        if let Some(missed) = count_firings(cron, cursor, cutoff, MAX_COUNTED_MISSES) {
            let status = &mut decision.status;
            status.missed_schedules = status.missed_schedules.saturating_add(missed.count);
            let how_many = if missed.more {
                format!("more than {}", missed.count)
            } else {
                missed.count.to_string()
            };
            decision.events.push(ScheduleEvent {
                warning: true,
                reason: "MissedSchedules",
                note: format!(
                    "{how_many} due times from {} on were older than the starting deadline of \
                     {deadline}s and did not run",
                    missed.first
                ),
            });
        }
        if due < cutoff {
            return;
        }
    }
    let name = run_name(schedule.metadata.name.as_deref().unwrap_or_default(), due);
    if runs.iter().any(|run| run.name == name) {
        decision.status.last_run_name = Some(name);
        return;
    }
    match spec.concurrency_policy {
        ConcurrencyPolicy::Forbid if !decision.status.active.is_empty() => {
            decision.events.push(ScheduleEvent {
                warning: false,
                reason: "SkippedForbid",
                note: format!(
                    "skipped the run due at {due}: still active: {}",
                    decision.status.active.join(", ")
                ),
            });
            return;
        }
        ConcurrencyPolicy::Replace => {
            decision.cancel = unfinished(runs)
                .filter(|run| !run.cancel_requested)
                .map(|run| run.name.clone())
                .collect();
            if !decision.cancel.is_empty() {
                decision.events.push(ScheduleEvent {
                    warning: false,
                    reason: "Replaced",
                    note: format!(
                        "cancelling {} to start the run due at {due}",
                        decision.cancel.join(", ")
                    ),
                });
            }
        }
        ConcurrencyPolicy::Allow | ConcurrencyPolicy::Forbid => {}
    }
    decision.events.push(ScheduleEvent {
        warning: false,
        reason: "Started",
        note: format!("started run {name} due at {due}"),
    });
    decision.start = Some(due);
    decision.status.active.push(name.clone());
    decision.status.last_run_name = Some(name);
}

/// The runs not finished, by due time.
fn unfinished(runs: &[OwnedRun]) -> impl Iterator<Item = &OwnedRun> {
    let mut unfinished: Vec<&OwnedRun> = runs.iter().filter(|run| !run.is_finished()).collect();
    unfinished
        .sort_by(|a, b| a.scheduled_at.cmp(&b.scheduled_at).then_with(|| a.name.cmp(&b.name)));
    unfinished.into_iter()
}

/// The finished runs beyond the history limits, oldest first within succeeded, then failed.
fn beyond_history(spec: &ScheduleSpec, runs: &[OwnedRun]) -> Vec<String> {
    let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
    for run in runs {
        match run.phase {
            Some(RunPhase::Succeeded) => succeeded.push(run),
            Some(RunPhase::Failed | RunPhase::Cancelled) => failed.push(run),
            Some(RunPhase::Queued | RunPhase::Running) | None => {}
        }
    }
    let mut delete = Vec::new();
    for (mut group, limit) in
        [(succeeded, spec.successful_runs_history_limit), (failed, spec.failed_runs_history_limit)]
    {
        group.sort_by(|a, b| oldest_first(a, b));
        let excess = group.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
        delete.extend(group[..excess].iter().map(|run| run.name.clone()));
    }
    delete
}

/// Orders finished runs by when they finished (their due time when that is unknown), then by
/// due time and name.
fn oldest_first(a: &OwnedRun, b: &OwnedRun) -> Ordering {
    let key = |run: &OwnedRun| (run.finished_at.unwrap_or(run.scheduled_at), run.scheduled_at);
    key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
}

/// The latest firing strictly after `after` and at or before `until`, by bisection: a few
/// dozen steps however many firings lie in between.
fn latest_firing(cron: &CronSchedule, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
    let (mut low, mut high) = (after, until);
    // Invariant: `first` is the first firing after `low`, at or before `high`, and no firing
    // lies in (`high`, `until`].
    let mut first = cron.next_after(low).filter(|at| *at <= high)?;
    loop {
        if cron.next_after(first).is_none_or(|at| at > high) {
            return Some(first);
        }
        let middle = low + high.duration_since(low) / 2;
        match cron.next_after(middle).filter(|at| *at <= high) {
            Some(at) => (low, first) = (middle, at),
            None => high = middle,
        }
    }
}

/// Firings counted by [`count_firings`].
struct Counted {
    /// How many, at most the cap.
    count: i64,
    /// Whether more lay beyond the cap.
    more: bool,
    /// The first.
    first: Timestamp,
}

/// Counts the firings strictly after `after` and strictly before `before`, stopping at `cap`;
/// `None` when there are none.
fn count_firings(
    cron: &CronSchedule,
    after: Timestamp,
    before: Timestamp,
    cap: i64,
) -> Option<Counted> {
    let first = cron.next_after(after).filter(|at| *at < before)?;
    let mut counted = Counted { count: 1, more: false, first };
    let mut at = first;
    while let Some(next) = cron.next_after(at).filter(|next| *next < before) {
        if counted.count == cap {
            counted.more = true;
            break;
        }
        counted.count += 1;
        at = next;
    }
    Some(counted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::tz::TimeZone;
    use keelson_api_crds::conditions::find;

    const NAME: &str = "nightly";

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn schedule(cron: &str, time_zone: &str, created: &str) -> Schedule {
        let mut schedule = Schedule::new(
            NAME,
            ScheduleSpec {
                flow_ref: "report".to_owned(),
                cron: cron.to_owned(),
                time_zone: time_zone.to_owned(),
                parameters: [("region".to_owned(), "eu".to_owned())].into(),
                successful_runs_history_limit: 100,
                failed_runs_history_limit: 100,
                ..ScheduleSpec::default()
            },
        );
        schedule.metadata.namespace = Some("team-a".to_owned());
        schedule.metadata.uid = Some("uid-1".to_owned());
        schedule.metadata.generation = Some(1);
        schedule.metadata.creation_timestamp = Some(Time(ts(created)));
        schedule
    }

    /// A schedule and its runs, driven by a simulated clock: every decision is applied, then
    /// decided again at the same time to check it is idempotent.
    struct Sim {
        schedule: Schedule,
        runs: Vec<OwnedRun>,
        started: Vec<Timestamp>,
        events: Vec<ScheduleEvent>,
    }

    impl Sim {
        fn new(schedule: Schedule) -> Self {
            Self { schedule, runs: Vec::new(), started: Vec::new(), events: Vec::new() }
        }

        fn step(&mut self, now: Timestamp) -> Decision {
            let decision = decide(&self.schedule, &self.runs, now);
            self.schedule.status = Some(decision.status.clone());
            for run in &mut self.runs {
                if decision.cancel.contains(&run.name) {
                    run.cancel_requested = true;
                }
            }
            self.runs.retain(|run| !decision.delete.contains(&run.name));
            if let Some(at) = decision.start {
                self.runs.push(OwnedRun {
                    name: run_name(NAME, at),
                    scheduled_at: at,
                    phase: Some(RunPhase::Queued),
                    cancel_requested: false,
                    finished_at: None,
                });
                self.started.push(at);
            }
            self.events.extend(decision.events.iter().cloned());
            let again = decide(&self.schedule, &self.runs, now);
            assert_eq!(again.start, None, "started twice at {now}");
            assert_eq!(again.events, [], "events repeated at {now}");
            assert_eq!((again.cancel.len(), again.delete.len()), (0, 0), "at {now}");
            assert_eq!(Some(&again.status), self.schedule.status.as_ref(), "at {now}");
            decision
        }

        /// Steps from `from`, each time at the decision's `wake_at` plus `lag`, until past `end`;
        /// each run has succeeded by the next step.
        fn run_until(&mut self, from: Timestamp, end: Timestamp, lag: SignedDuration) {
            let mut now = from;
            for _ in 0..10_000 {
                for run in self.runs.iter_mut().filter(|run| run.phase == Some(RunPhase::Queued)) {
                    run.phase = Some(RunPhase::Succeeded);
                    run.finished_at = Some(now);
                }
                let Some(wake) = self.step(now).wake_at else { return };
                now = wake + lag;
                if now > end {
                    return;
                }
            }
            panic!("the simulation did not reach {end}");
        }

        fn finish(&mut self, at: Timestamp, phase: RunPhase, finished_at: Timestamp) {
            let run = self.runs.iter_mut().find(|run| run.scheduled_at == at).unwrap();
            run.phase = Some(phase);
            run.finished_at = Some(finished_at);
        }

        fn status(&self) -> &ScheduleStatus {
            self.schedule.status.as_ref().unwrap()
        }

        fn reasons(&self) -> Vec<&'static str> {
            self.events.iter().map(|event| event.reason).collect()
        }
    }

    fn berlin_wall_clock(at: Timestamp) -> String {
        at.to_zoned(TimeZone::get("Europe/Berlin").unwrap()).strftime("%H:%M %Z").to_string()
    }

    fn ready(status: &ScheduleStatus) -> (String, String) {
        let ready = find(&status.observed.conditions, READY).unwrap();
        (ready.status.clone(), ready.reason.clone())
    }

    #[test]
    fn every_minute_in_berlin_runs_straight_through_the_spring_gap() {
        let mut sim = Sim::new(schedule("* * * * *", "Europe/Berlin", "2026-03-29T00:55:30Z"));
        sim.run_until(
            ts("2026-03-29T00:55:30Z"),
            ts("2026-03-29T01:05:00Z"),
            SignedDuration::from_secs(7),
        );
        let around: Vec<String> = sim
            .started
            .iter()
            .filter(|at| (ts("2026-03-29T00:58:00Z")..=ts("2026-03-29T01:02:00Z")).contains(at))
            .map(|at| berlin_wall_clock(*at))
            .collect();
        assert_eq!(around, ["01:58 CET", "01:59 CET", "03:00 CEST", "03:01 CEST", "03:02 CEST"]);
        assert!(
            sim.started
                .windows(2)
                .all(|w| w[1].duration_since(w[0]) == SignedDuration::from_mins(1))
        );
        assert_eq!(sim.started.len(), 9, "00:56Z to 01:04Z");
    }

    #[test]
    fn every_minute_in_berlin_runs_both_passes_of_the_repeated_autumn_hour() {
        let mut sim = Sim::new(schedule("* * * * *", "Europe/Berlin", "2026-10-24T23:58:00Z"));
        sim.run_until(ts("2026-10-24T23:58:00Z"), ts("2026-10-25T02:02:00Z"), SignedDuration::ZERO);
        // 02:00 CEST is 00:00Z and 03:00 CET is 02:00Z.
        let hour: Vec<Timestamp> = sim
            .started
            .iter()
            .copied()
            .filter(|at| (ts("2026-10-25T00:00:00Z")..ts("2026-10-25T02:00:00Z")).contains(at))
            .collect();
        assert_eq!(hour.len(), 120);
        assert_eq!(berlin_wall_clock(hour[0]), "02:00 CEST");
        assert_eq!(berlin_wall_clock(hour[59]), "02:59 CEST");
        assert_eq!(berlin_wall_clock(hour[60]), "02:00 CET");
        assert_eq!(berlin_wall_clock(hour[119]), "02:59 CET");
        let mut names: Vec<String> = hour.iter().map(|at| run_name(NAME, *at)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 120, "run names are distinct");
        assert!(
            sim.started
                .windows(2)
                .all(|w| w[1].duration_since(w[0]) == SignedDuration::from_mins(1))
        );
    }

    #[test]
    fn a_daily_run_at_half_past_two_fires_once_right_after_the_spring_gap() {
        let mut sim = Sim::new(schedule("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z"));
        sim.run_until(
            ts("2026-03-27T12:00:00Z"),
            ts("2026-03-30T12:00:00Z"),
            SignedDuration::from_secs(3),
        );
        let fired: Vec<String> = sim.started.iter().map(|at| berlin_wall_clock(*at)).collect();
        assert_eq!(fired, ["02:30 CET", "03:00 CEST", "02:30 CEST"]);
        assert_eq!(sim.started[1], ts("2026-03-29T01:00:00Z"));
    }

    #[test]
    fn forbid_skips_while_a_run_is_active_and_runs_again_once_it_finished() {
        let mut sim = Sim::new(schedule("*/5 * * * *", "UTC", "2026-05-04T12:00:00Z"));
        sim.step(ts("2026-05-04T12:05:02Z"));
        assert_eq!(sim.started, [ts("2026-05-04T12:05:00Z")]);

        let skipped = sim.step(ts("2026-05-04T12:10:01Z"));
        assert_eq!(skipped.start, None);
        assert_eq!(skipped.events[0].reason, "SkippedForbid");
        assert!(skipped.events[0].note.contains(&run_name(NAME, ts("2026-05-04T12:05:00Z"))));
        assert_eq!(sim.status().last_schedule_time, Some(Time(ts("2026-05-04T12:10:00Z"))));
        assert_eq!(skipped.wake_at, Some(ts("2026-05-04T12:15:00Z")));

        sim.finish(ts("2026-05-04T12:05:00Z"), RunPhase::Succeeded, ts("2026-05-04T12:12:00Z"));
        let after_finish = sim.step(ts("2026-05-04T12:12:01Z"));
        assert_eq!(after_finish.start, None, "the skipped due time does not start late");
        assert_eq!(sim.status().active, Vec::<String>::new());

        sim.step(ts("2026-05-04T12:15:00Z"));
        assert_eq!(sim.started, [ts("2026-05-04T12:05:00Z"), ts("2026-05-04T12:15:00Z")]);
        assert_eq!(sim.reasons(), ["Started", "SkippedForbid", "Started"]);
    }

    #[test]
    fn replace_cancels_the_active_run_and_starts_a_new_one() {
        let mut sched = schedule("*/5 * * * *", "UTC", "2026-05-04T12:00:00Z");
        sched.spec.concurrency_policy = ConcurrencyPolicy::Replace;
        let mut sim = Sim::new(sched);
        sim.step(ts("2026-05-04T12:05:00Z"));
        let first = run_name(NAME, ts("2026-05-04T12:05:00Z"));
        let second = run_name(NAME, ts("2026-05-04T12:10:00Z"));

        let replaced = sim.step(ts("2026-05-04T12:10:00Z"));
        assert_eq!(replaced.cancel, std::slice::from_ref(&first));
        assert_eq!(replaced.start, Some(ts("2026-05-04T12:10:00Z")));
        assert_eq!(sim.reasons(), ["Started", "Replaced", "Started"]);
        assert_eq!(sim.status().active, [first.clone(), second.clone()], "until it stops");
        assert_eq!(sim.status().last_run_name, Some(second.clone()));

        sim.finish(ts("2026-05-04T12:05:00Z"), RunPhase::Cancelled, ts("2026-05-04T12:10:30Z"));
        sim.step(ts("2026-05-04T12:11:00Z"));
        assert_eq!(sim.status().active, [second]);
    }

    #[test]
    fn allow_starts_alongside_an_active_run() {
        let mut sched = schedule("*/5 * * * *", "UTC", "2026-05-04T12:00:00Z");
        sched.spec.concurrency_policy = ConcurrencyPolicy::Allow;
        let mut sim = Sim::new(sched);
        sim.step(ts("2026-05-04T12:05:00Z"));
        let second = sim.step(ts("2026-05-04T12:10:00Z"));
        assert_eq!((second.start, second.cancel.len()), (Some(ts("2026-05-04T12:10:00Z")), 0));
        assert_eq!(sim.status().active.len(), 2);
    }

    /// Last fired at 11:59, down from 12:00 to 12:10: eleven due times.
    fn after_downtime(deadline: Option<i64>, now: &str) -> Sim {
        let mut sched = schedule("* * * * *", "UTC", "2026-05-04T11:00:00Z");
        sched.spec.starting_deadline_seconds = deadline;
        sched.status = Some(ScheduleStatus {
            last_schedule_time: Some(Time(ts("2026-05-04T11:59:00Z"))),
            missed_schedules: 2,
            ..ScheduleStatus::default()
        });
        let mut sim = Sim::new(sched);
        sim.step(ts(now));
        sim
    }

    #[test]
    fn after_downtime_due_times_past_the_deadline_are_counted_and_the_latest_runs() {
        // Deadline 5 minutes at 12:10:00: 12:00 to 12:04 are missed, 12:05 is exactly in time.
        let sim = after_downtime(Some(300), "2026-05-04T12:10:00Z");
        assert_eq!(sim.started, [ts("2026-05-04T12:10:00Z")]);
        assert_eq!(sim.status().missed_schedules, 2 + 5);
        assert_eq!(sim.reasons(), ["MissedSchedules", "Started"]);
        assert!(sim.events[0].warning);
        assert_eq!(
            sim.events[0].note,
            "5 due times from 2026-05-04T12:00:00Z on were older than the starting deadline of \
             300s and did not run"
        );
        assert_eq!(sim.status().last_schedule_time, Some(Time(ts("2026-05-04T12:10:00Z"))));

        // One second later 12:05 is past the deadline too.
        let sim = after_downtime(Some(300), "2026-05-04T12:10:01Z");
        assert_eq!(sim.status().missed_schedules, 2 + 6);
        assert_eq!(sim.started, [ts("2026-05-04T12:10:00Z")]);
    }

    #[test]
    fn after_downtime_without_a_deadline_only_the_latest_runs_and_nothing_is_counted() {
        let sim = after_downtime(None, "2026-05-04T12:10:00Z");
        assert_eq!(sim.started, [ts("2026-05-04T12:10:00Z")]);
        assert_eq!(sim.status().missed_schedules, 2);
        assert_eq!(sim.reasons(), ["Started"]);
    }

    #[test]
    fn a_due_time_past_the_deadline_does_not_start_and_is_counted_once() {
        let mut sched = schedule("0 6 * * *", "UTC", "2026-05-04T00:00:00Z");
        sched.spec.starting_deadline_seconds = Some(600);
        let mut sim = Sim::new(sched);
        let late = sim.step(ts("2026-05-04T07:00:00Z"));
        assert_eq!(late.start, None);
        assert_eq!(sim.status().missed_schedules, 1);
        assert_eq!(sim.status().last_schedule_time, Some(Time(ts("2026-05-04T06:00:00Z"))));
        assert_eq!(late.wake_at, Some(ts("2026-05-05T06:00:00Z")));
        sim.step(ts("2026-05-04T08:00:00Z"));
        assert_eq!(sim.status().missed_schedules, 1);
        assert_eq!(sim.reasons(), ["MissedSchedules"]);
    }

    #[test]
    fn a_year_down_every_minute_starts_one_run_without_a_deadline() {
        let mut sim = Sim::new(schedule("* * * * *", "Europe/Berlin", "2025-05-04T12:00:00Z"));
        sim.step(ts("2026-05-04T12:00:30Z"));
        assert_eq!(sim.started, [ts("2026-05-04T12:00:00Z")]);
    }

    #[test]
    fn counting_missed_due_times_stops_at_the_cap() {
        let cron = CronSchedule::parse("* * * * *", "UTC").unwrap();
        let (after, before) = (ts("2026-05-04T12:00:00Z"), ts("2026-05-04T13:00:00Z"));
        let all = count_firings(&cron, after, before, 100).unwrap();
        assert_eq!((all.count, all.more, all.first), (59, false, ts("2026-05-04T12:01:00Z")));
        let capped = count_firings(&cron, after, before, 10).unwrap();
        assert_eq!((capped.count, capped.more), (10, true));
        assert!(count_firings(&cron, after, ts("2026-05-04T12:01:00Z"), 10).is_none());
    }

    #[test]
    fn a_suspended_schedule_starts_nothing_until_resumed() {
        let mut sched = schedule("*/10 * * * *", "UTC", "2026-05-04T12:00:00Z");
        sched.spec.suspend = true;
        let mut sim = Sim::new(sched);
        for now in ["2026-05-04T12:10:00Z", "2026-05-04T12:20:00Z", "2026-05-04T12:31:00Z"] {
            let decision = sim.step(ts(now));
            assert_eq!((decision.start, decision.wake_at), (None, None));
        }
        assert_eq!(sim.started, []);
        assert_eq!(sim.events, []);
        assert_eq!(sim.status().last_schedule_time, None);
        assert_eq!(sim.status().next_schedule_time, Some(Time(ts("2026-05-04T12:40:00Z"))));
        assert_eq!(ready(sim.status()), ("True".to_owned(), "Suspended".to_owned()));

        sim.schedule.spec.suspend = false;
        let resumed = sim.step(ts("2026-05-04T12:32:00Z"));
        assert_eq!(sim.started, [ts("2026-05-04T12:30:00Z")]);
        assert_eq!(resumed.wake_at, Some(ts("2026-05-04T12:40:00Z")));
        assert_eq!(ready(sim.status()), ("True".to_owned(), "Scheduled".to_owned()));
    }

    #[test]
    fn history_limits_delete_the_oldest_finished_runs() {
        let mut sched = schedule("0 * * * *", "UTC", "2026-05-04T00:00:00Z");
        sched.spec.successful_runs_history_limit = 2;
        sched.spec.failed_runs_history_limit = 1;
        let run = |hour: i8, phase, finished_minute: Option<i8>| OwnedRun {
            name: format!("run-{hour}"),
            scheduled_at: jiff::civil::date(2026, 5, 4)
                .at(hour, 0, 0, 0)
                .to_zoned(TimeZone::UTC)
                .unwrap()
                .timestamp(),
            phase,
            cancel_requested: false,
            finished_at: finished_minute.map(|minute| {
                jiff::civil::date(2026, 5, 4)
                    .at(12, minute, 0, 0)
                    .to_zoned(TimeZone::UTC)
                    .unwrap()
                    .timestamp()
            }),
        };
        let runs = [
            // Finishing order differs from start order: run-2 finished last.
            run(1, Some(RunPhase::Succeeded), Some(10)),
            run(2, Some(RunPhase::Succeeded), Some(50)),
            run(3, Some(RunPhase::Succeeded), Some(20)),
            run(4, Some(RunPhase::Succeeded), Some(30)),
            run(5, Some(RunPhase::Failed), Some(11)),
            run(6, Some(RunPhase::Cancelled), Some(12)),
            run(7, Some(RunPhase::Failed), Some(5)),
            run(8, Some(RunPhase::Running), None),
            run(9, None, None),
        ];
        let decision = decide(&sched, &runs, ts("2026-05-04T12:59:00Z"));
        assert_eq!(decision.delete, ["run-1", "run-3", "run-7", "run-5"]);
        assert_eq!(decision.status.active, ["run-8", "run-9"]);
    }

    #[test]
    fn an_unknown_time_zone_is_an_invalid_spec_and_nothing_happens() {
        let mut sched = schedule("* * * * *", "Mars/Olympus", "2026-05-04T00:00:00Z");
        sched.spec.successful_runs_history_limit = 0;
        let finished = OwnedRun {
            name: "old".to_owned(),
            scheduled_at: ts("2026-05-04T00:01:00Z"),
            phase: Some(RunPhase::Succeeded),
            cancel_requested: false,
            finished_at: Some(ts("2026-05-04T00:02:00Z")),
        };
        let decision = decide(&sched, &[finished], ts("2026-05-04T12:00:00Z"));
        let condition = find(&decision.status.observed.conditions, READY).unwrap();
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "InvalidSpec")
        );
        assert!(condition.message.contains("unknown time zone \"Mars/Olympus\""));
        assert_eq!(condition.observed_generation, Some(1));
        assert_eq!(decision.start, None);
        assert_eq!(
            (decision.cancel.len(), decision.delete.len(), decision.events.len()),
            (0, 0, 0)
        );
        assert_eq!((decision.wake_at, decision.status.next_schedule_time), (None, None));
    }

    #[test]
    fn a_run_created_before_its_status_was_written_is_not_started_again() {
        let sched = schedule("*/5 * * * *", "UTC", "2026-05-04T12:00:00Z");
        let now = ts("2026-05-04T12:05:03Z");
        let first = decide(&sched, &[], now);
        assert_eq!(first.start, Some(ts("2026-05-04T12:05:00Z")));
        // The run was created, but writing the status failed.
        let created = OwnedRun {
            name: run_name(NAME, ts("2026-05-04T12:05:00Z")),
            scheduled_at: ts("2026-05-04T12:05:00Z"),
            phase: None,
            cancel_requested: false,
            finished_at: None,
        };
        let retried = decide(&sched, std::slice::from_ref(&created), now);
        assert_eq!(retried.start, None);
        assert_eq!(retried.events, []);
        assert_eq!(retried.status, first.status);
    }

    #[test]
    fn a_schedule_without_a_creation_time_waits_for_its_first_due_time() {
        let mut sched = schedule("*/5 * * * *", "UTC", "2026-05-04T12:00:00Z");
        sched.metadata.creation_timestamp = None;
        let decision = decide(&sched, &[], ts("2026-05-04T12:05:00Z"));
        assert_eq!(decision.start, None);
        assert_eq!(decision.wake_at, Some(ts("2026-05-04T12:10:00Z")));
        let condition = find(&decision.status.observed.conditions, READY).unwrap();
        assert_eq!(condition.message, "next run due at 2026-05-04T12:10:00Z");
    }

    #[test]
    fn runs_are_named_by_minute_labelled_annotated_and_owned() {
        let sched = schedule("30 2 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z");
        let at = ts("2026-03-29T01:00:00Z");
        assert_eq!(run_name(NAME, at), "nightly-29579100");
        let run = build_run(&sched, at);
        assert_eq!(run.metadata.name.as_deref(), Some("nightly-29579100"));
        assert_eq!(run.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(run.metadata.labels.unwrap()[SCHEDULE_LABEL], NAME);
        assert_eq!(
            run.metadata.annotations.unwrap()[SCHEDULED_AT_ANNOTATION],
            "2026-03-29T01:00:00Z"
        );
        let owner = &run.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str()
            ),
            ("workflows.keelson.dev/v1alpha1", "Schedule", NAME, "uid-1")
        );
        assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
        assert_eq!(run.spec.flow_ref.as_deref(), Some("report"));
        assert_eq!(run.spec.parameters["region"], "eu");
        assert!(run.spec.start);
    }
}
