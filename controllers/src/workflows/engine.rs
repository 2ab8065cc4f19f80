//! The state machine of a workflow Run: from what one reconcile observed (the spec, the plan
//! snapshot, each attempt's Job, the time), the next status, the actions to carry out and when
//! to look again.
//!
//! [`step`] is pure, deterministic and idempotent: fed its own status and the same
//! observations, it returns the same status, no events and no new attempts. One call reaches
//! the fixed point: a node that succeeds starts its successors in the same call.
//!
//! The rules:
//! - A run is created queued and starts when `spec.start` is set; `spec.cancel` ends it as
//!   `Cancelled`, queued or running.
//! - A node waits for its predecessors: the `from` of the edges to it and its agent step's
//!   `inputs`, each counted once. When all have succeeded, an agent step starts attempt 1 (a Job
//!   named by [`job_name`]) and a gate waits for a decision.
//! - A failed attempt is retried `retries` times, after `retryBackoffSeconds` (10 when absent)
//!   doubled for each further retry, at most ten minutes; then the node fails.
//! - A gate takes the first decision for it in `spec.decisions`, even one recorded before it was
//!   reached; after its `timeoutSeconds` without one it takes its `defaultDecision` (reject).
//! - The first node that fails for good (a rejected gate too) fails the run at once, as do the
//!   run's timeout and pending nodes that can never start; running attempts are then stopped and
//!   the nodes left are skipped. The run succeeds when every node succeeded or was skipped.
//! - Succeeded, Failed and Cancelled are final: the status never changes again, and Jobs still
//!   running that belong to no running node are stopped.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{SUCCEEDED, Status, Update};
use keelson_api_crds::workflows::{
    GateDecision, GateDecisionRecord, NodePhase, NodeState, Plan, RunPhase, RunSpec, RunStatus,
};

use super::names::job_name;

/// Seconds before the first retry when a step does not say.
const DEFAULT_BACKOFF_SECONDS: i64 = 10;
/// The longest wait between two attempts.
const MAX_BACKOFF_SECONDS: i64 = 600;

/// What the reconciler observed, as input to [`step`].
#[derive(Debug, Clone, PartialEq)]
pub struct Context<'a> {
    /// The Run's name, which prefixes its Jobs' names.
    pub run_name: &'a str,
    /// `metadata.generation`, for conditions' `observedGeneration`.
    pub generation: Option<i64>,
    /// The Run's spec: start, cancel, decisions, timeout.
    pub spec: &'a RunSpec,
    /// The plan snapshot being run (`status.plan`).
    pub plan: &'a Plan,
    /// What the cluster shows of each attempt's Job, by Job name.
    pub attempts: &'a BTreeMap<String, Attempt>,
    /// The time of the reconcile.
    pub now: Timestamp,
}

/// An attempt's Job as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Not finished.
    Running,
    /// Finished successfully, with the outputs the step reported.
    Succeeded {
        /// Output key to value.
        outputs: BTreeMap<String, String>,
    },
    /// Finished unsuccessfully.
    Failed {
        /// The container's exit code, when known.
        exit_code: Option<i32>,
        /// CamelCase reason, e.g. `BackoffLimitExceeded`.
        reason: String,
        /// Detail.
        message: String,
    },
}

/// The outcome of [`step`]: the status to write, what to do, when to look again.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The run's new status.
    pub status: RunStatus,
    /// What the reconciler carries out, in order.
    pub actions: Vec<Action>,
    /// The earliest time something happens without a new observation (a retry, a gate's or the
    /// run's deadline); none when nothing is timed.
    pub wake_at: Option<Timestamp>,
}

/// Something the reconciler does for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create the attempt's Job if absent (adopt it if present).
    StartAttempt {
        /// The node's id.
        node: String,
        /// The attempt number, from 1.
        attempt: i32,
        /// The Job's name.
        job_name: String,
    },
    /// Delete the Job.
    StopAttempt {
        /// The Job's name.
        job_name: String,
    },
    /// Record a Kubernetes event on the Run.
    Event(RunEvent),
}

/// An event to record on the Run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEvent {
    /// A `Warning` event rather than a `Normal` one.
    pub warning: bool,
    /// CamelCase reason, e.g. `NodeStarted`.
    pub reason: &'static str,
    /// The node concerned, if any.
    pub node: Option<String>,
    /// What happened, for people.
    pub note: String,
}

/// Advances a run from its `current` status given what the reconciler observed.
///
/// `current.plan` and `current.parameters` are carried over as they are; `current.nodes` may be
/// empty on the first call, and is then one pending node per plan node.
pub fn step(cx: &Context<'_>, current: &RunStatus) -> Step {
    if current.phase.is_some_and(is_final) {
        let actions = stop_strays(cx.attempts, &current.nodes, &[]);
        return Step { status: current.clone(), actions, wake_at: None };
    }
    let mut machine = Machine::new(cx, current);
    if current.phase == Some(RunPhase::Running) {
        machine.run();
    } else {
        machine.queued();
    }
    machine.into_step()
}

/// Whether a run in `phase` is over.
fn is_final(phase: RunPhase) -> bool {
    matches!(phase, RunPhase::Succeeded | RunPhase::Failed | RunPhase::Cancelled)
}

/// Why a run ends without succeeding.
enum Ending {
    /// `spec.cancel` was set.
    Cancelled,
    /// The run's timeout, in seconds, passed.
    TimedOut(i64),
    /// The node at this index failed for good.
    NodeFailed(usize),
    /// These pending nodes can never start.
    Blocked(Vec<String>),
}

/// One call of [`step`] under way.
struct Machine<'c, 'a> {
    cx: &'c Context<'a>,
    /// Per node in plan order, the indices of its predecessors; none when one is unknown.
    predecessors: Vec<Option<BTreeSet<usize>>>,
    status: RunStatus,
    actions: Vec<Action>,
}

impl<'c, 'a> Machine<'c, 'a> {
    fn new(cx: &'c Context<'a>, current: &RunStatus) -> Self {
        let mut status = current.clone();
        status.nodes = cx
            .plan
            .nodes
            .iter()
            .map(|node| {
                current
                    .nodes
                    .iter()
                    .find(|state| state.id == node.id)
                    .cloned()
                    .unwrap_or_else(|| pending(&node.id))
            })
            .collect();
        status.observed.observed_generation = cx.generation;
        Machine { cx, predecessors: predecessors(cx.plan), status, actions: Vec::new() }
    }

    /// A run not started yet: cancel it, keep it queued or start it.
    fn queued(&mut self) {
        if self.cx.spec.cancel {
            self.end(Ending::Cancelled);
        } else if !self.cx.spec.start {
            self.status.phase = Some(RunPhase::Queued);
            self.condition(Status::Unknown, "Queued", "waiting for spec.start");
        } else {
            self.status.phase = Some(RunPhase::Running);
            self.status.started_at.get_or_insert(Time(self.cx.now));
            let note = format!("started with {} nodes", self.status.nodes.len());
            self.event(false, "RunStarted", None, note);
            self.run();
        }
    }

    /// A started run: stop it, or move its nodes as far as they go.
    fn run(&mut self) {
        if self.cx.spec.cancel {
            self.end(Ending::Cancelled);
            return;
        }
        if let Some((seconds, deadline)) = self.run_deadline()
            && deadline <= self.cx.now
        {
            self.end(Ending::TimedOut(seconds));
            return;
        }
        loop {
            let settled = self.settle();
            if let Some(failed) =
                self.status.nodes.iter().position(|n| n.phase == NodePhase::Failed)
            {
                self.end(Ending::NodeFailed(failed));
                return;
            }
            if !self.start_ready() && !settled {
                break;
            }
        }
        let nodes = &self.status.nodes;
        if nodes.iter().all(|n| matches!(n.phase, NodePhase::Succeeded | NodePhase::Skipped)) {
            self.succeed();
        } else if !(0..nodes.len()).any(|i| self.can_move(i)) {
            let blocked = nodes
                .iter()
                .filter(|n| n.phase == NodePhase::Pending)
                .map(|n| n.id.clone())
                .collect();
            self.end(Ending::Blocked(blocked));
        } else {
            self.condition(Status::Unknown, "Running", "");
        }
    }

    /// Applies observations, decisions and gate timeouts to running and waiting nodes;
    /// returns whether any node changed.
    fn settle(&mut self) -> bool {
        let mut changed = false;
        for i in 0..self.status.nodes.len() {
            changed |= match self.status.nodes[i].phase {
                NodePhase::Running => self.observe(i),
                NodePhase::WaitingApproval => self.decide(i),
                _ => false,
            };
        }
        changed
    }

    /// A running agent node's attempt, as its Job shows it.
    fn observe(&mut self, i: usize) -> bool {
        let cx = self.cx;
        let node = &cx.plan.nodes[i];
        let state = &mut self.status.nodes[i];
        let attempt = state.attempts;
        match cx.attempts.get(&current_job(cx.run_name, state)) {
            None | Some(Attempt::Running) => false,
            Some(Attempt::Succeeded { outputs }) => {
                state.phase = NodePhase::Succeeded;
                state.finished_at = Some(Time(cx.now));
                state.outputs = outputs.clone();
                state.exit_code = None;
                state.reason = None;
                state.message = None;
                for (key, value) in outputs {
                    self.status.outputs.insert(format!("{}.{key}", node.id), value.clone());
                }
                let note = format!("attempt {attempt} succeeded with {} outputs", outputs.len());
                self.event(false, "NodeSucceeded", Some(&node.id), note);
                true
            }
            Some(Attempt::Failed { exit_code, reason, message }) => {
                state.exit_code = *exit_code;
                state.reason = Some(if reason.is_empty() { "Failed" } else { reason }.to_owned());
                state.message = (!message.is_empty()).then(|| message.clone());
                let failure =
                    format!("attempt {attempt} failed{}", describe(reason, *exit_code, message));
                let step = node.agent.as_ref();
                if attempt <= step.map_or(0, |s| s.retries) {
                    let base = step
                        .and_then(|s| s.retry_backoff_seconds)
                        .unwrap_or(DEFAULT_BACKOFF_SECONDS);
                    let wait = backoff(base, attempt);
                    state.phase = NodePhase::Pending;
                    state.retry_at = Some(Time(after(cx.now, wait)));
                    let note = format!("{failure}; attempt {} in {wait}s", attempt + 1);
                    self.event(true, "NodeRetrying", Some(&node.id), note);
                } else {
                    state.phase = NodePhase::Failed;
                    state.finished_at = Some(Time(cx.now));
                    self.event(true, "NodeFailed", Some(&node.id), failure);
                }
                true
            }
        }
    }

    /// A waiting gate: its first decision, else its default decision once it timed out.
    fn decide(&mut self, i: usize) -> bool {
        let cx = self.cx;
        let node = &cx.plan.nodes[i];
        let gate = node.gate.as_ref();
        let state = &mut self.status.nodes[i];
        let (record, timed_out) =
            if let Some(decision) = cx.spec.decisions.iter().find(|d| d.node == node.id) {
                let mut record = decision.clone();
                record.at.get_or_insert(Time(cx.now));
                (record, false)
            } else if let Some(seconds) = gate.and_then(|g| g.timeout_seconds)
                && let Some(started) = &state.started_at
                && after(started.0, seconds) <= cx.now
            {
                let record = GateDecisionRecord {
                    node: node.id.clone(),
                    decision: gate.and_then(|g| g.default_decision).unwrap_or(GateDecision::Reject),
                    by: None,
                    at: Some(Time(cx.now)),
                    comment: Some(format!("no decision within {seconds}s")),
                };
                (record, true)
            } else {
                return false;
            };
        let approved = record.decision == GateDecision::Approve;
        let verb = if approved { "approved" } else { "rejected" };
        let note = match (&record.by, &record.comment) {
            _ if timed_out => format!("{verb}: {}", record.comment.as_deref().unwrap_or_default()),
            (Some(by), Some(comment)) => format!("{verb} by {by}: {comment}"),
            (Some(by), None) => format!("{verb} by {by}"),
            (None, Some(comment)) => format!("{verb}: {comment}"),
            (None, None) => verb.to_owned(),
        };
        let reason = match (timed_out, approved) {
            (true, _) => "GateTimedOut",
            (false, true) => "GateApproved",
            (false, false) => "GateRejected",
        };
        state.phase = if approved { NodePhase::Succeeded } else { NodePhase::Failed };
        state.finished_at = Some(Time(cx.now));
        state.decision = Some(record);
        state.reason = Some(reason.to_owned());
        state.message = Some(note.clone());
        self.event(!approved, reason, Some(&node.id), note);
        true
    }

    /// Starts, in plan order, every pending node whose predecessors succeeded and whose retry
    /// time came; returns whether any did.
    fn start_ready(&mut self) -> bool {
        let mut started = false;
        for i in 0..self.status.nodes.len() {
            let state = &self.status.nodes[i];
            let due = state.retry_at.as_ref().is_none_or(|at| at.0 <= self.cx.now);
            if state.phase == NodePhase::Pending && due && self.predecessors_succeeded(i) {
                self.start(i);
                started = true;
            }
        }
        started
    }

    /// Starts node `i`: its next attempt for an agent step, the wait for a gate.
    fn start(&mut self, i: usize) {
        let cx = self.cx;
        let node = &cx.plan.nodes[i];
        let state = &mut self.status.nodes[i];
        state.started_at.get_or_insert(Time(cx.now));
        state.retry_at = None;
        if node.agent.is_some() {
            state.attempts += 1;
            let attempt = state.attempts;
            let job = job_name(cx.run_name, &node.id, attempt);
            state.phase = NodePhase::Running;
            state.job_name = Some(job.clone());
            let note = format!("attempt {attempt} in Job {job}");
            self.actions.push(Action::StartAttempt {
                node: node.id.clone(),
                attempt,
                job_name: job,
            });
            self.event(false, "NodeStarted", Some(&node.id), note);
        } else {
            state.phase = NodePhase::WaitingApproval;
            let note = node
                .gate
                .as_ref()
                .and_then(|g| g.description.clone())
                .unwrap_or_else(|| "waiting for a decision".to_owned());
            self.event(false, "GateWaiting", Some(&node.id), note);
        }
    }

    /// Ends the run without success: stops running nodes, skips those not reached.
    fn end(&mut self, ending: Ending) {
        let cx = self.cx;
        let (phase, reason, message, event, skipped) = match ending {
            Ending::Cancelled => (
                RunPhase::Cancelled,
                "Cancelled",
                "cancelled by spec.cancel".to_owned(),
                "RunCancelled",
                "Cancelled",
            ),
            Ending::TimedOut(seconds) => (
                RunPhase::Failed,
                "RunTimedOut",
                format!("the run did not finish within {seconds}s"),
                "RunTimedOut",
                "RunFailed",
            ),
            Ending::NodeFailed(i) => {
                let state = &self.status.nodes[i];
                if cx.plan.nodes[i].agent.is_some() {
                    let detail = describe(
                        state.reason.as_deref().unwrap_or_default(),
                        state.exit_code,
                        state.message.as_deref().unwrap_or_default(),
                    );
                    let message = format!("node {} failed{detail}", state.id);
                    (RunPhase::Failed, "NodeFailed", message, "RunFailed", "RunFailed")
                } else {
                    let detail = state.message.as_deref().unwrap_or("rejected");
                    let message = format!("gate {} was {detail}", state.id);
                    (RunPhase::Failed, "GateRejected", message, "RunFailed", "RunFailed")
                }
            }
            Ending::Blocked(ids) => (
                RunPhase::Failed,
                "Blocked",
                format!(
                    "nodes {} can never start: they depend on unknown nodes or on each other",
                    ids.join(", ")
                ),
                "RunFailed",
                "RunFailed",
            ),
        };
        let now = Time(cx.now);
        for state in &mut self.status.nodes {
            match state.phase {
                NodePhase::Running => {
                    let job = current_job(cx.run_name, state);
                    self.actions.push(Action::StopAttempt { job_name: job });
                    state.phase = NodePhase::Failed;
                    state.finished_at = Some(now.clone());
                    state.reason = Some("Stopped".to_owned());
                    state.message = Some(format!("stopped: {message}"));
                }
                NodePhase::Pending | NodePhase::WaitingApproval => {
                    if state.started_at.is_some() {
                        state.finished_at = Some(now.clone());
                    }
                    state.phase = NodePhase::Skipped;
                    state.retry_at = None;
                    state.reason = Some(skipped.to_owned());
                    state.message = Some(format!("skipped: {message}"));
                }
                NodePhase::Succeeded | NodePhase::Failed | NodePhase::Skipped => {}
            }
        }
        self.finish(phase);
        self.status.message = Some(message.clone());
        self.condition(Status::False, reason, &message);
        let warning = phase == RunPhase::Failed;
        self.event(warning, event, None, message);
    }

    /// Ends the run with success.
    fn succeed(&mut self) {
        self.finish(RunPhase::Succeeded);
        self.condition(Status::True, "Succeeded", "every node succeeded or was skipped");
        let note = format!(
            "{} nodes succeeded or were skipped in {}",
            self.status.nodes.len(),
            self.status.duration.as_deref().unwrap_or("0s")
        );
        self.event(false, "RunSucceeded", None, note);
    }

    /// Sets the final `phase`, `finishedAt` and `duration`.
    fn finish(&mut self, phase: RunPhase) {
        let now = self.cx.now;
        self.status.phase = Some(phase);
        self.status.finished_at = Some(Time(now));
        self.status.duration = self
            .status
            .started_at
            .as_ref()
            .map(|started| human_duration(now.duration_since(started.0).as_secs()));
    }

    /// Whether node `i` can still move without the run ending: it is running, waiting for a
    /// decision, or pending with its predecessors succeeded (waiting for a retry).
    fn can_move(&self, i: usize) -> bool {
        match self.status.nodes[i].phase {
            NodePhase::Running | NodePhase::WaitingApproval => true,
            NodePhase::Pending => self.predecessors_succeeded(i),
            NodePhase::Succeeded | NodePhase::Failed | NodePhase::Skipped => false,
        }
    }

    fn predecessors_succeeded(&self, i: usize) -> bool {
        self.predecessors[i]
            .as_ref()
            .is_some_and(|p| p.iter().all(|&j| self.status.nodes[j].phase == NodePhase::Succeeded))
    }

    /// The run's timeout in seconds and its deadline, when it has one and has started.
    fn run_deadline(&self) -> Option<(i64, Timestamp)> {
        let seconds = self.cx.spec.timeout_seconds.or(self.cx.plan.timeout_seconds)?;
        let started = self.status.started_at.as_ref()?;
        Some((seconds, after(started.0, seconds)))
    }

    /// The earliest future time a retry, a gate's timeout or the run's timeout is due.
    fn wake_at(&self) -> Option<Timestamp> {
        if self.status.phase != Some(RunPhase::Running) {
            return None;
        }
        let nodes = self.cx.plan.nodes.iter().zip(&self.status.nodes);
        let node_times = nodes.filter_map(|(node, state)| match state.phase {
            NodePhase::Pending => state.retry_at.as_ref().map(|at| at.0),
            NodePhase::WaitingApproval => {
                let seconds = node.gate.as_ref()?.timeout_seconds?;
                Some(after(state.started_at.as_ref()?.0, seconds))
            }
            _ => None,
        });
        node_times
            .chain(self.run_deadline().map(|(_, deadline)| deadline))
            .filter(|at| *at > self.cx.now)
            .min()
    }

    fn condition(&mut self, status: Status, reason: &str, message: &str) {
        let update = Update { type_: SUCCEEDED, status, reason, message };
        self.status.observed.set(update, self.cx.generation, self.cx.now);
    }

    fn event(&mut self, warning: bool, reason: &'static str, node: Option<&str>, note: String) {
        let node = node.map(str::to_owned);
        self.actions.push(Action::Event(RunEvent { warning, reason, node, note }));
    }

    /// The status, with progress, plus the actions: a running node's attempt whose Job is
    /// missing is started again, and running Jobs of no running node are stopped.
    fn into_step(mut self) -> Step {
        let cx = self.cx;
        for state in &self.status.nodes {
            let job = current_job(cx.run_name, state);
            let started = self
                .actions
                .iter()
                .any(|a| matches!(a, Action::StartAttempt { job_name, .. } if *job_name == job));
            if state.phase == NodePhase::Running && !cx.attempts.contains_key(&job) && !started {
                let (node, attempt) = (state.id.clone(), state.attempts);
                self.actions.push(Action::StartAttempt { node, attempt, job_name: job });
            }
        }
        let strays = stop_strays(cx.attempts, &self.status.nodes, &self.actions);
        self.actions.extend(strays);
        let done = self
            .status
            .nodes
            .iter()
            .filter(|n| {
                matches!(n.phase, NodePhase::Succeeded | NodePhase::Failed | NodePhase::Skipped)
            })
            .count();
        self.status.progress = Some(format!("{done}/{}", self.status.nodes.len()));
        let wake_at = self.wake_at();
        Step { status: self.status, actions: self.actions, wake_at }
    }
}

/// A node not started yet.
fn pending(id: &str) -> NodeState {
    NodeState::new(id, NodePhase::Pending)
}

/// Per node in plan order, the indices of the nodes it waits for (edges to it and its agent
/// step's inputs, each once); none when one of them is not in the plan.
fn predecessors(plan: &Plan) -> Vec<Option<BTreeSet<usize>>> {
    let index: BTreeMap<&str, usize> =
        plan.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    plan.nodes
        .iter()
        .map(|node| {
            let ids = super::plan::predecessors(plan, &node.id);
            ids.into_iter().map(|id| index.get(id).copied()).collect()
        })
        .collect()
}

/// The Job of a node's current (or last) attempt.
fn current_job(run: &str, state: &NodeState) -> String {
    state.job_name.clone().unwrap_or_else(|| job_name(run, &state.id, state.attempts))
}

/// A StopAttempt for each Job seen running that belongs to no running node and is not already
/// being stopped by `actions`.
fn stop_strays(
    attempts: &BTreeMap<String, Attempt>,
    nodes: &[NodeState],
    actions: &[Action],
) -> Vec<Action> {
    attempts
        .iter()
        .filter(|(_, attempt)| **attempt == Attempt::Running)
        .map(|(job, _)| job)
        .filter(|job| {
            !nodes
                .iter()
                .any(|n| n.phase == NodePhase::Running && n.job_name.as_ref() == Some(*job))
        })
        .filter(|job| {
            !actions
                .iter()
                .any(|a| matches!(a, Action::StopAttempt { job_name } if job_name == *job))
        })
        .map(|job| Action::StopAttempt { job_name: job.clone() })
        .collect()
}

/// Seconds to wait after failed attempt `attempt` (from 1): `base` doubled for each attempt
/// after the first, at most [`MAX_BACKOFF_SECONDS`].
fn backoff(base: i64, attempt: i32) -> i64 {
    let doublings = (attempt - 1).clamp(0, 16) as u32;
    base.max(0).saturating_mul(1 << doublings).min(MAX_BACKOFF_SECONDS)
}

/// `at` plus `seconds`, saturating at the end of time.
fn after(at: Timestamp, seconds: i64) -> Timestamp {
    at.saturating_add(SignedDuration::from_secs(seconds)).unwrap_or(Timestamp::MAX)
}

/// ` (Reason, exit code N): message`, leaving out what is empty.
fn describe(reason: &str, exit_code: Option<i32>, message: &str) -> String {
    let mut parts = Vec::new();
    if !reason.is_empty() {
        parts.push(reason.to_owned());
    }
    if let Some(code) = exit_code {
        parts.push(format!("exit code {code}"));
    }
    let mut text =
        if parts.is_empty() { String::new() } else { format!(" ({})", parts.join(", ")) };
    if !message.is_empty() {
        text.push_str(": ");
        text.push_str(message);
    }
    text
}

/// A duration in whole seconds as kubectl shows one, in its two largest units with a zero
/// second unit left out: `45s`, `3m12s`, `2h5m`, `3d4h`, `1h`.
fn human_duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (big, big_unit, small, small_unit) = match seconds {
        0..60 => return format!("{seconds}s"),
        60..3600 => (seconds / 60, "m", seconds % 60, "s"),
        3600..86400 => (seconds / 3600, "h", seconds / 60 % 60, "m"),
        _ => (seconds / 86400, "d", seconds / 3600 % 24, "h"),
    };
    if small == 0 {
        format!("{big}{big_unit}")
    } else {
        format!("{big}{big_unit}{small}{small_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn ok(outputs: &[(&str, &str)]) -> Attempt {
        let outputs = outputs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Attempt::Succeeded { outputs }
    }

    fn failed(reason: &str, message: &str) -> Attempt {
        Attempt::Failed { exit_code: Some(1), reason: reason.into(), message: message.into() }
    }

    /// A run named `r` and a cluster that carries out the engine's actions.
    struct World {
        plan: Plan,
        spec: RunSpec,
        attempts: BTreeMap<String, Attempt>,
        status: RunStatus,
    }

    impl World {
        fn new(plan: &str) -> Self {
            let plan: Plan = serde_saphyr::from_str(plan).unwrap();
            let status = RunStatus { plan: Some(plan.clone()), ..RunStatus::default() };
            let spec = RunSpec { start: true, ..RunSpec::default() };
            World { plan, spec, attempts: BTreeMap::new(), status }
        }

        fn context(&self, now: i64) -> Context<'_> {
            Context {
                run_name: "r",
                generation: Some(2),
                spec: &self.spec,
                plan: &self.plan,
                attempts: &self.attempts,
                now: at(now),
            }
        }

        /// One reconcile at `now`: the engine's step, its actions carried out, its status
        /// written; then checks a second reconcile at the same time changes nothing.
        fn step(&mut self, now: i64) -> Step {
            let out = step(&self.context(now), &self.status);
            self.status = out.status.clone();
            for action in &out.actions {
                match action {
                    Action::StartAttempt { job_name, .. } => {
                        self.attempts.entry(job_name.clone()).or_insert(Attempt::Running);
                    }
                    Action::StopAttempt { job_name } => {
                        self.attempts.remove(job_name);
                    }
                    Action::Event(_) => {}
                }
            }
            let again = step(&self.context(now), &self.status);
            assert_eq!(again.status, self.status, "a second reconcile changes the status");
            assert!(
                again.actions.iter().all(|a| matches!(a, Action::StopAttempt { .. })),
                "a second reconcile acts: {:?}",
                again.actions
            );
            out
        }

        fn node(&self, id: &str) -> &NodeState {
            self.status.nodes.iter().find(|n| n.id == id).unwrap()
        }

        fn phases(&self) -> Vec<(&str, NodePhase)> {
            self.status.nodes.iter().map(|n| (n.id.as_str(), n.phase)).collect()
        }

        fn report(&mut self, job: &str, attempt: Attempt) {
            assert!(self.attempts.contains_key(job), "{job} was never started");
            self.attempts.insert(job.to_owned(), attempt);
        }

        fn condition(&self) -> (String, String) {
            let c = &self.status.observed.conditions[0];
            (c.status.clone(), c.reason.clone())
        }

        fn decide(&mut self, node: &str, decision: GateDecision, by: &str, comment: &str) {
            self.spec.decisions.push(GateDecisionRecord {
                node: node.into(),
                decision,
                by: Some(by.into()),
                at: None,
                comment: Some(comment.into()),
            });
        }
    }

    fn events(step: &Step) -> Vec<(&'static str, Option<&str>)> {
        step.actions
            .iter()
            .filter_map(|a| match a {
                Action::Event(e) => Some((e.reason, e.node.as_deref())),
                _ => None,
            })
            .collect()
    }

    fn event<'s>(step: &'s Step, reason: &str) -> &'s RunEvent {
        step.actions
            .iter()
            .find_map(|a| match a {
                Action::Event(e) if e.reason == reason => Some(e),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {reason} event in {:?}", step.actions))
    }

    fn starts(step: &Step) -> Vec<&str> {
        step.actions
            .iter()
            .filter_map(|a| match a {
                Action::StartAttempt { job_name, .. } => Some(job_name.as_str()),
                _ => None,
            })
            .collect()
    }

    fn stops(step: &Step) -> Vec<&str> {
        step.actions
            .iter()
            .filter_map(|a| match a {
                Action::StopAttempt { job_name } => Some(job_name.as_str()),
                _ => None,
            })
            .collect()
    }

    const LINEAR: &str = "
nodes:
  - id: fetch
    agent: {agentRef: fetcher}
  - id: summarize
    agent: {agentRef: writer, inputs: [fetch]}
  - id: publish
    agent: {agentRef: publisher}
edges:
  - {from: fetch, to: summarize}
  - {from: summarize, to: publish}
";

    #[test]
    fn a_linear_run_goes_from_start_to_success_and_maps_outputs() {
        let mut w = World::new(LINEAR);
        let first = w.step(0);
        assert_eq!(w.status.phase, Some(RunPhase::Running));
        assert_eq!(w.status.started_at, Some(Time(at(0))));
        assert_eq!(w.condition(), ("Unknown".into(), "Running".into()));
        assert_eq!(w.status.observed.observed_generation, Some(2));
        assert_eq!(
            w.phases(),
            [
                ("fetch", NodePhase::Running),
                ("summarize", NodePhase::Pending),
                ("publish", NodePhase::Pending)
            ]
        );
        assert_eq!(events(&first), [("RunStarted", None), ("NodeStarted", Some("fetch"))]);
        assert!(first.actions.contains(&Action::StartAttempt {
            node: "fetch".into(),
            attempt: 1,
            job_name: "r-fetch-1".into()
        }));
        assert_eq!(w.node("fetch").job_name.as_deref(), Some("r-fetch-1"));
        assert_eq!(w.node("fetch").attempts, 1);
        assert_eq!(w.status.progress.as_deref(), Some("0/3"));
        assert_eq!(first.wake_at, None, "nothing is timed");

        w.report("r-fetch-1", ok(&[("url", "https://example.org/a")]));
        let second = w.step(30);
        assert_eq!(
            events(&second),
            [("NodeSucceeded", Some("fetch")), ("NodeStarted", Some("summarize"))]
        );
        assert_eq!(starts(&second), ["r-summarize-1"]);
        assert_eq!(w.node("fetch").finished_at, Some(Time(at(30))));
        assert_eq!(w.node("summarize").started_at, Some(Time(at(30))));
        assert_eq!(w.status.progress.as_deref(), Some("1/3"));
        assert_eq!(w.status.duration, None, "no duration while running");

        w.report("r-summarize-1", ok(&[("text", "short")]));
        w.step(60);
        w.report("r-publish-1", ok(&[]));
        let last = w.step(192);
        assert_eq!(w.status.phase, Some(RunPhase::Succeeded));
        assert_eq!(events(&last), [("NodeSucceeded", Some("publish")), ("RunSucceeded", None)]);
        assert_eq!(w.condition(), ("True".into(), "Succeeded".into()));
        assert_eq!(w.status.finished_at, Some(Time(at(192))));
        assert_eq!(w.status.duration.as_deref(), Some("3m12s"));
        assert_eq!(w.status.progress.as_deref(), Some("3/3"));
        let outputs: Vec<_> =
            w.status.outputs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(outputs, [("fetch.url", "https://example.org/a"), ("summarize.text", "short")]);
        assert_eq!(w.node("summarize").outputs["text"], "short");
        assert_eq!(w.status.plan.as_ref(), Some(&w.plan), "the plan is carried over");
    }

    #[test]
    fn fan_out_starts_branches_together_and_fan_in_waits_for_all() {
        let mut w = World::new(
            "
nodes:
  - {id: root, agent: {agentRef: a}}
  - {id: left, agent: {agentRef: a}}
  - {id: right, agent: {agentRef: a}}
  - {id: join, agent: {agentRef: a, inputs: [left, right]}}
edges: [{from: root, to: left}, {from: root, to: right}]
",
        );
        w.step(0);
        w.report("r-root-1", ok(&[]));
        let fan_out = w.step(1);
        assert_eq!(starts(&fan_out), ["r-left-1", "r-right-1"]);
        w.report("r-right-1", ok(&[]));
        let one_branch = w.step(2);
        assert!(starts(&one_branch).is_empty(), "join waits for left");
        assert_eq!(w.node("join").phase, NodePhase::Pending);
        w.report("r-left-1", ok(&[]));
        let both = w.step(3);
        assert_eq!(starts(&both), ["r-join-1"]);
    }

    #[test]
    fn two_roots_start_in_one_call() {
        let mut w =
            World::new("nodes: [{id: a, agent: {agentRef: x}}, {id: b, agent: {agentRef: x}}]");
        assert_eq!(starts(&w.step(0)), ["r-a-1", "r-b-1"]);
    }

    #[test]
    fn an_edge_and_an_input_from_the_same_node_are_one_dependency() {
        let mut w = World::new(
            "
nodes:
  - {id: a, agent: {agentRef: x}}
  - {id: b, agent: {agentRef: x, inputs: [a]}}
edges: [{from: a, to: b}]
",
        );
        w.step(0);
        w.report("r-a-1", ok(&[]));
        assert_eq!(starts(&w.step(5)), ["r-b-1"]);
        w.report("r-b-1", ok(&[]));
        w.step(6);
        assert_eq!(w.status.phase, Some(RunPhase::Succeeded));
    }

    #[test]
    fn failed_attempts_are_retried_with_doubling_backoff_until_one_succeeds() {
        let mut w = World::new("nodes: [{id: a, agent: {agentRef: x, retries: 3}}]");
        w.step(0);
        w.report("r-a-1", failed("Error", "network down"));
        let first = w.step(5);
        let retrying = event(&first, "NodeRetrying");
        assert!(retrying.warning);
        assert!(retrying.note.contains("attempt 1 failed (Error, exit code 1): network down"));
        assert!(retrying.note.contains("attempt 2 in 10s"), "{}", retrying.note);
        let a = w.node("a");
        assert_eq!((a.phase, a.attempts), (NodePhase::Pending, 1));
        assert_eq!(a.retry_at, Some(Time(at(15))));
        assert_eq!((a.exit_code, a.reason.as_deref()), (Some(1), Some("Error")));
        assert_eq!(a.message.as_deref(), Some("network down"));
        assert_eq!(first.wake_at, Some(at(15)));
        assert_eq!(w.status.phase, Some(RunPhase::Running));

        let early = w.step(14);
        assert!(early.actions.is_empty(), "{:?}", early.actions);
        assert_eq!(early.wake_at, Some(at(15)));

        let second = w.step(15);
        assert_eq!(starts(&second), ["r-a-2"]);
        assert_eq!(w.node("a").retry_at, None);
        assert_eq!(w.node("a").started_at, Some(Time(at(0))), "the node started with attempt 1");

        w.report("r-a-2", failed("Error", "again"));
        let backoff = w.step(20);
        assert_eq!(w.node("a").retry_at, Some(Time(at(40))), "the backoff doubles");
        assert_eq!(backoff.wake_at, Some(at(40)));
        assert_eq!(starts(&w.step(40)), ["r-a-3"]);
        w.report("r-a-3", ok(&[("k", "v")]));
        w.step(41);
        let a = w.node("a");
        assert_eq!((a.phase, a.attempts), (NodePhase::Succeeded, 3));
        assert_eq!(a.exit_code, None);
        assert_eq!(w.status.phase, Some(RunPhase::Succeeded));
    }

    #[test]
    fn backoff_is_capped_at_ten_minutes_and_zero_retries_at_once() {
        let mut w = World::new(
            "
nodes:
  - {id: slow, agent: {agentRef: x, retries: 2, retryBackoffSeconds: 400}}
  - {id: fast, agent: {agentRef: x, retries: 1, retryBackoffSeconds: 0}}
",
        );
        w.step(0);
        w.report("r-slow-1", failed("Error", ""));
        w.report("r-fast-1", failed("Error", ""));
        let out = w.step(0);
        assert_eq!(starts(&out), ["r-fast-2"], "a zero backoff retries in the same call");
        assert_eq!(w.node("slow").retry_at, Some(Time(at(400))));
        w.step(400);
        w.report("r-slow-2", failed("Error", ""));
        w.step(500);
        assert_eq!(w.node("slow").retry_at, Some(Time(at(1100))), "800s capped at 600s");
    }

    #[test]
    fn a_step_out_of_retries_fails_the_run_and_stops_the_others() {
        let mut w = World::new(
            "
nodes:
  - {id: flaky, agent: {agentRef: x, retries: 1, retryBackoffSeconds: 0}}
  - {id: long, agent: {agentRef: x}}
  - {id: after, agent: {agentRef: x}}
edges: [{from: flaky, to: after}]
",
        );
        w.step(0);
        w.report("r-flaky-1", failed("Error", "one"));
        w.step(10);
        w.report("r-flaky-2", failed("BackoffLimitExceeded", "two"));
        let out = w.step(70);
        assert_eq!(w.status.phase, Some(RunPhase::Failed));
        assert_eq!(w.condition(), ("False".into(), "NodeFailed".into()));
        let message = w.status.message.clone().unwrap();
        assert_eq!(message, "node flaky failed (BackoffLimitExceeded, exit code 1): two");
        assert!(event(&out, "NodeFailed").warning);
        let failed_event = event(&out, "RunFailed");
        assert!(failed_event.warning);
        assert_eq!(failed_event.note, message);
        assert_eq!(stops(&out), ["r-long-1"]);
        let long = w.node("long");
        assert_eq!((long.phase, long.reason.as_deref()), (NodePhase::Failed, Some("Stopped")));
        assert!(long.message.as_deref().unwrap().contains("node flaky failed"));
        let after = w.node("after");
        assert_eq!((after.phase, after.reason.as_deref()), (NodePhase::Skipped, Some("RunFailed")));
        assert_eq!(w.status.finished_at, Some(Time(at(70))));
        assert_eq!(w.status.duration.as_deref(), Some("1m10s"));
        assert_eq!(w.status.progress.as_deref(), Some("3/3"));
        assert_eq!(out.wake_at, None);
    }

    const GATED: &str = "
nodes:
  - {id: draft, agent: {agentRef: x}}
  - id: review
    gate: {description: Publish the draft?, timeoutSeconds: 3600}
  - {id: publish, agent: {agentRef: x}}
edges: [{from: draft, to: review}, {from: review, to: publish}]
";

    #[test]
    fn an_approved_gate_lets_the_run_continue() {
        let mut w = World::new(GATED);
        w.step(0);
        w.report("r-draft-1", ok(&[]));
        let reached = w.step(100);
        let waiting = event(&reached, "GateWaiting");
        assert_eq!(
            (waiting.node.as_deref(), waiting.note.as_str()),
            (Some("review"), "Publish the draft?")
        );
        assert_eq!(w.node("review").phase, NodePhase::WaitingApproval);
        assert_eq!(w.node("review").started_at, Some(Time(at(100))));
        assert_eq!(reached.wake_at, Some(at(3700)), "the gate's deadline");

        w.decide("review", GateDecision::Approve, "alice", "looks good");
        let approved = w.step(200);
        let e = event(&approved, "GateApproved");
        assert!(!e.warning);
        assert!(e.note.contains("alice") && e.note.contains("looks good"), "{}", e.note);
        let review = w.node("review");
        assert_eq!(
            (review.phase, review.reason.as_deref()),
            (NodePhase::Succeeded, Some("GateApproved"))
        );
        let decision = review.decision.as_ref().unwrap();
        assert_eq!(decision.at, Some(Time(at(200))), "when the controller saw it");
        assert_eq!(decision.by.as_deref(), Some("alice"));
        assert_eq!(starts(&approved), ["r-publish-1"]);
    }

    #[test]
    fn a_rejected_gate_fails_the_run_at_once_skips_downstream_and_stops_running_steps() {
        let mut w = World::new(
            "
nodes:
  - {id: review, gate: {}}
  - {id: side, agent: {agentRef: x}}
  - {id: publish, agent: {agentRef: x}}
edges: [{from: review, to: publish}]
",
        );
        w.step(0);
        w.decide("review", GateDecision::Reject, "bob", "not now");
        let out = w.step(50);
        let e = event(&out, "GateRejected");
        assert!(e.warning && e.note.contains("bob") && e.note.contains("not now"), "{}", e.note);
        assert_eq!(w.status.phase, Some(RunPhase::Failed));
        assert_eq!(w.condition(), ("False".into(), "GateRejected".into()));
        assert_eq!(w.status.message.as_deref(), Some("gate review was rejected by bob: not now"));
        assert_eq!(stops(&out), ["r-side-1"]);
        assert_eq!(w.node("side").reason.as_deref(), Some("Stopped"));
        assert_eq!(w.node("publish").phase, NodePhase::Skipped);
        assert_eq!(w.node("review").reason.as_deref(), Some("GateRejected"));
        assert!(!w.attempts.contains_key("r-side-1"));
    }

    #[test]
    fn an_undecided_gate_is_rejected_at_its_timeout_by_default() {
        let mut w = World::new(
            "nodes: [{id: review, gate: {timeoutSeconds: 60}}, {id: publish, agent: {agentRef: x}}]
edges: [{from: review, to: publish}]",
        );
        assert_eq!(w.step(0).wake_at, Some(at(60)));
        assert_eq!(w.step(59).wake_at, Some(at(60)));
        let out = w.step(60);
        assert!(event(&out, "GateTimedOut").warning);
        let review = w.node("review");
        assert_eq!(
            (review.phase, review.reason.as_deref()),
            (NodePhase::Failed, Some("GateTimedOut"))
        );
        let decision = review.decision.as_ref().unwrap();
        assert_eq!(decision.decision, GateDecision::Reject);
        assert_eq!((decision.by.as_ref(), decision.at.as_ref()), (None, Some(&Time(at(60)))));
        assert_eq!(decision.comment.as_deref(), Some("no decision within 60s"));
        assert_eq!(w.status.phase, Some(RunPhase::Failed));
        assert_eq!(w.condition(), ("False".into(), "GateRejected".into()));
        assert_eq!(w.node("publish").phase, NodePhase::Skipped);
    }

    #[test]
    fn a_gate_with_default_approve_continues_at_its_timeout() {
        let mut w = World::new(
            "nodes: [{id: review, gate: {timeoutSeconds: 60, defaultDecision: approve}}, {id: publish, agent: {agentRef: x}}]
edges: [{from: review, to: publish}]",
        );
        w.step(0);
        let out = w.step(61);
        assert!(!event(&out, "GateTimedOut").warning);
        assert_eq!(w.node("review").phase, NodePhase::Succeeded);
        assert_eq!(w.node("review").decision.as_ref().unwrap().decision, GateDecision::Approve);
        assert_eq!(starts(&out), ["r-publish-1"]);
    }

    #[test]
    fn a_decision_recorded_before_the_gate_is_reached_applies_when_it_is() {
        let mut w = World::new(GATED);
        w.decide("review", GateDecision::Approve, "carol", "pre-approved");
        w.decide("review", GateDecision::Reject, "dave", "too late, the first one wins");
        w.step(0);
        assert_eq!(w.node("review").phase, NodePhase::Pending);
        w.report("r-draft-1", ok(&[]));
        let out = w.step(10);
        assert_eq!(
            events(&out),
            [
                ("NodeSucceeded", Some("draft")),
                ("GateWaiting", Some("review")),
                ("GateApproved", Some("review")),
                ("NodeStarted", Some("publish"))
            ]
        );
        assert_eq!(w.node("review").decision.as_ref().unwrap().by.as_deref(), Some("carol"));
    }

    #[test]
    fn a_queued_run_waits_and_can_be_cancelled() {
        let mut w = World::new(LINEAR);
        w.spec.start = false;
        let queued = w.step(0);
        assert!(queued.actions.is_empty());
        assert_eq!(w.status.phase, Some(RunPhase::Queued));
        assert_eq!(w.condition(), ("Unknown".into(), "Queued".into()));
        assert_eq!(w.status.progress.as_deref(), Some("0/3"));
        assert!(w.phases().iter().all(|(_, p)| *p == NodePhase::Pending));

        w.spec.cancel = true;
        let cancelled = w.step(30);
        assert_eq!(events(&cancelled), [("RunCancelled", None)]);
        assert_eq!(w.status.phase, Some(RunPhase::Cancelled));
        assert_eq!(w.condition(), ("False".into(), "Cancelled".into()));
        assert_eq!(w.status.finished_at, Some(Time(at(30))));
        assert_eq!((w.status.started_at.as_ref(), w.status.duration.as_ref()), (None, None));
        assert!(
            w.status
                .nodes
                .iter()
                .all(|n| n.phase == NodePhase::Skipped && n.reason.as_deref() == Some("Cancelled"))
        );
    }

    #[test]
    fn cancelling_a_running_run_stops_its_steps_and_skips_the_rest() {
        let mut w = World::new(GATED);
        w.step(0);
        w.spec.cancel = true;
        let out = w.step(20);
        assert_eq!(w.status.phase, Some(RunPhase::Cancelled));
        assert_eq!(w.condition(), ("False".into(), "Cancelled".into()));
        assert_eq!(events(&out), [("RunCancelled", None)]);
        assert_eq!(stops(&out), ["r-draft-1"]);
        assert_eq!(w.node("draft").phase, NodePhase::Failed);
        assert_eq!(w.node("draft").reason.as_deref(), Some("Stopped"));
        assert_eq!(w.node("review").reason.as_deref(), Some("Cancelled"));
        assert_eq!(w.node("publish").phase, NodePhase::Skipped);
        assert_eq!(w.status.duration.as_deref(), Some("20s"));
    }

    #[test]
    fn a_run_past_its_timeout_fails() {
        let mut w = World::new(&format!("{LINEAR}timeoutSeconds: 100\n"));
        w.spec.timeout_seconds = Some(300);
        assert_eq!(w.step(0).wake_at, Some(at(300)), "the run's own timeout wins");
        w.report("r-fetch-1", ok(&[]));
        w.step(100);
        let out = w.step(300);
        assert_eq!(w.status.phase, Some(RunPhase::Failed));
        assert_eq!(w.condition(), ("False".into(), "RunTimedOut".into()));
        assert!(event(&out, "RunTimedOut").warning);
        assert_eq!(w.status.message.as_deref(), Some("the run did not finish within 300s"));
        assert_eq!(stops(&out), ["r-summarize-1"]);
        assert_eq!(w.node("publish").phase, NodePhase::Skipped);
        assert_eq!(w.status.duration.as_deref(), Some("5m"));
    }

    #[test]
    fn a_reconcile_with_its_own_status_and_the_same_observations_repeats_nothing() {
        let w = World::new(LINEAR);
        let first = step(&w.context(0), &w.status);
        let second = step(&w.context(0), &first.status);
        assert_eq!(second.status, first.status);
        assert!(events(&second).is_empty());
        assert_eq!(starts(&second), ["r-fetch-1"], "the same attempt, never a new one");

        let mut running = w.attempts.clone();
        running.insert("r-fetch-1".into(), Attempt::Running);
        let cx = Context { attempts: &running, ..w.context(0) };
        let idle = step(&cx, &first.status);
        assert_eq!(idle.status, first.status);
        assert!(idle.actions.is_empty());
    }

    #[test]
    fn a_running_node_whose_job_is_missing_is_started_again_under_the_same_name() {
        let mut w = World::new(
            "nodes: [{id: a, agent: {agentRef: x, retries: 2, retryBackoffSeconds: 0}}]",
        );
        w.step(0);
        w.report("r-a-1", failed("Error", ""));
        w.step(1);
        w.attempts.remove("r-a-2");
        let out = w.step(2);
        assert_eq!(
            out.actions,
            [Action::StartAttempt { node: "a".into(), attempt: 2, job_name: "r-a-2".into() }]
        );
        assert_eq!(w.node("a").attempts, 2);
    }

    #[test]
    fn final_phases_never_change_and_stray_jobs_are_stopped() {
        let mut w = World::new("nodes: [{id: a, agent: {agentRef: x}}]");
        w.step(0);
        w.report("r-a-1", ok(&[]));
        w.step(10);
        let done = w.status.clone();
        w.spec.cancel = true;
        w.decide("a", GateDecision::Reject, "eve", "");
        w.attempts.insert("r-a-7".into(), Attempt::Running);
        let context = Context { generation: Some(9), ..w.context(5000) };
        let out = step(&context, &done);
        assert_eq!(out.status, done);
        assert_eq!(out.actions, [Action::StopAttempt { job_name: "r-a-7".into() }]);
        assert_eq!(out.wake_at, None);
    }

    #[test]
    fn a_node_depending_on_an_unknown_node_fails_the_run_instead_of_hanging() {
        let mut w = World::new(
            "nodes: [{id: a, agent: {agentRef: x}}, {id: b, agent: {agentRef: x, inputs: [ghost]}}]",
        );
        w.step(0);
        w.report("r-a-1", ok(&[]));
        w.step(1);
        assert_eq!(w.status.phase, Some(RunPhase::Failed));
        assert_eq!(w.condition(), ("False".into(), "Blocked".into()));
        assert_eq!(w.node("b").phase, NodePhase::Skipped);
    }

    #[test]
    fn durations_read_like_kubectl() {
        let cases = [
            (-3, "0s"),
            (0, "0s"),
            (45, "45s"),
            (60, "1m"),
            (192, "3m12s"),
            (3599, "59m59s"),
            (2 * 3600 + 5 * 60 + 9, "2h5m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 4 * 3600 + 59, "3d4h"),
            (30 * 86400, "30d"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_duration(seconds), want, "{seconds}s");
        }
    }
}
