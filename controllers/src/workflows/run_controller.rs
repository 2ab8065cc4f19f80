//! The Run reconciler: fixes what the run executes on first sight, observes its attempts'
//! Jobs (reading a finished attempt's outputs from its pod's log), lets the [`engine`] decide,
//! writes the status, then creates and deletes Jobs and records events; deletes finished runs
//! after their time to live.
//!
//! The status is written with the resourceVersion it was computed from, before any Job is
//! created: a reconcile working from an old read fails with a conflict and starts over, and a
//! Job is only ever created for an attempt the status already records (creation is
//! idempotent by name, so a crash between the two is harmless).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{SUCCEEDED, Status, Update};
use keelson_api_crds::workflows::{Agent, Flow, NodePhase, Plan, Run, RunPhase, RunStatus};
use kube::api::{ListParams, LogParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};

use super::agent_output::{self, AgentOutput, Limits};
use super::engine::{self, Attempt};
use super::job::{self, AttemptJob, JobState};
use super::names::{RUN_LABEL, label_value};
use super::plan;
use super::reconcile::{Context, Result};
use crate::api;

/// How a run's plan could not be fixed.
enum Unresolved {
    /// Something it needs does not exist yet; the run waits (reason, message).
    Waiting(&'static str, String),
    /// It can never run (reason, message).
    Invalid(&'static str, String),
}

pub(super) async fn reconcile(cached: Arc<Run>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = cached.namespace().unwrap_or_default();
    let runs = Api::<Run>::namespaced(ctx.client.clone(), &namespace);
    // The cache can lag behind this controller's own last write: decide from the stored run.
    let Some(run) = runs.get_opt(&cached.name_any()).await? else {
        return Ok(Action::await_change());
    };
    if run.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let now = ctx.settings.now();
    let mut status = run.status.clone().unwrap_or_default();

    if let Some(finished) = &status.finished_at {
        return expire(&ctx, &run, finished.0, now).await;
    }

    if status.plan.is_none() {
        match resolve(&ctx, &run).await? {
            Ok((plan, parameters)) => {
                status.plan = Some(plan);
                status.parameters = parameters;
            }
            Err(Unresolved::Waiting(reason, message)) => {
                status.phase.get_or_insert(RunPhase::Queued);
                let update =
                    Update { type_: SUCCEEDED, status: Status::Unknown, reason, message: &message };
                status.observed.set(update, run.metadata.generation, now);
                write(&ctx, &run, &status).await?;
                return Ok(Action::requeue(Duration::from_secs(5)));
            }
            Err(Unresolved::Invalid(reason, message)) => {
                return fail_unrunnable(&ctx, &run, status, reason, message, now).await;
            }
        }
    }
    let plan = status.plan.clone().unwrap_or_default();
    let agents = ctx.agents_of(&namespace, &plan).await?;

    let run_jobs = jobs_of(&ctx, &run).await?;
    let mut attempts = BTreeMap::new();
    let mut agent_events = Vec::new();
    for node in &status.nodes {
        let Some(job) = node.job_name.as_ref().and_then(|name| run_jobs.get(name)) else {
            continue;
        };
        let running = node.phase == NodePhase::Running;
        let attempt = match (job::state(job), running) {
            (JobState::Running, _) => Attempt::Running,
            // A finished attempt of a node that moved on was read already.
            (_, false) => continue,
            (state, true) => {
                let (attempt, events) = observe_finished(&ctx, &namespace, job, state).await;
                agent_events.extend(events.into_iter().map(|e| (node.id.clone(), e)));
                attempt
            }
        };
        attempts.insert(job.name_any(), attempt);
    }
    // Jobs still running for nodes that are no longer running (a cancel or failure decided
    // before a restart) are reported so the engine stops them.
    for (name, job) in &run_jobs {
        if !attempts.contains_key(name) && matches!(job::state(job), JobState::Running) {
            attempts.insert(name.clone(), Attempt::Running);
        }
    }

    let step = loop {
        let cx = engine::Context {
            run_name: &run.name_any(),
            generation: run.metadata.generation,
            spec: &run.spec,
            plan: &plan,
            attempts: &attempts,
            now,
        };
        let step = engine::step(&cx, &status);
        // An attempt whose Agent does not exist fails like any other, so retries and the
        // run's failure follow the usual rules.
        let mut missing = false;
        for action in &step.actions {
            if let engine::Action::StartAttempt { node, job_name, .. } = action
                && let Some(agent) = agent_ref(&plan, node)
                && !agents.contains_key(agent)
                && !attempts.contains_key(job_name)
            {
                let message = format!("agent {agent:?} does not exist");
                attempts.insert(
                    job_name.clone(),
                    Attempt::Failed { exit_code: None, reason: "AgentNotFound".into(), message },
                );
                missing = true;
            }
        }
        if !missing {
            break step;
        }
    };

    let mut status = step.status;
    status.plan = Some(plan.clone());
    write(&ctx, &run, &status).await?;

    for action in step.actions {
        match action {
            engine::Action::StartAttempt { node, attempt, .. } => {
                start_attempt(&ctx, &run, &status, &agents, &node, attempt).await?;
            }
            engine::Action::StopAttempt { job_name } => {
                let jobs = Api::<Job>::namespaced(ctx.client.clone(), &namespace);
                api::delete_if_present(&jobs, &job_name).await?;
            }
            engine::Action::Event(event) => {
                let note = match &event.node {
                    Some(node) => format!("{node}: {}", event.note),
                    None => event.note,
                };
                ctx.record(&run, event.warning, event.reason, note).await;
            }
        }
    }
    for (node, event) in agent_events {
        let reason = if event.kind == "log" { "AgentLog" } else { "AgentEvent" };
        let note = if event.kind == "log" {
            format!("{node}: {}", event.message)
        } else {
            format!("{node}: {}: {}", event.kind, event.message)
        };
        ctx.record(&run, false, reason, note).await;
    }

    if let Some(finished) = &status.finished_at {
        return expire(&ctx, &run, finished.0, now).await;
    }
    let wake = step.wake_at.map(|at| duration_until(now, at));
    // Job changes wake the run; the periodic requeue is a safety net.
    let safety = Duration::from_secs(60);
    Ok(Action::requeue(wake.map_or(safety, |w| w.min(safety))))
}

/// The plan and parameters a run executes: its own plan, its flow's, or the cloned run's.
async fn resolve(
    ctx: &Context,
    run: &Run,
) -> Result<Result<(Plan, BTreeMap<String, String>), Unresolved>> {
    let namespace = run.namespace().unwrap_or_default();
    if let Some(plan) = &run.spec.plan {
        return Ok(Ok((plan.clone(), run.spec.parameters.clone())));
    }
    if let Some(source) = &run.spec.clone_of {
        let found = Api::<Run>::namespaced(ctx.client.clone(), &namespace).get_opt(source).await?;
        let Some(source_run) = found else {
            let message = format!("run {source:?}, to be cloned, does not exist");
            return Ok(Err(Unresolved::Invalid("CloneSourceNotFound", message)));
        };
        let source_status = source_run.status.unwrap_or_default();
        let Some(plan) = source_status.plan.or(source_run.spec.plan) else {
            let message = format!("run {source:?} has no plan yet to clone");
            return Ok(Err(Unresolved::Waiting("CloneSourcePending", message)));
        };
        let parameters = if source_status.parameters.is_empty() {
            source_run.spec.parameters
        } else {
            source_status.parameters
        };
        return Ok(Ok((plan, parameters)));
    }
    let name = run.spec.flow_ref.clone().unwrap_or_default();
    let Some(flow) = Api::<Flow>::namespaced(ctx.client.clone(), &namespace).get_opt(&name).await?
    else {
        return Ok(Err(Unresolved::Waiting(
            "FlowNotFound",
            format!("flow {name:?} does not exist"),
        )));
    };
    let agents = ctx.agents_of(&namespace, &flow.spec.plan).await?;
    let problems = plan::flow_problems(&flow.spec, |agent| agents.contains_key(agent));
    if !problems.is_empty() {
        let message = format!("flow {name:?} cannot run: {}", problems.join("; "));
        return Ok(Err(Unresolved::Waiting("FlowInvalid", message)));
    }
    Ok(match plan::parameters(&flow.spec.parameters, &run.spec.parameters) {
        Ok(parameters) => Ok((flow.spec.plan, parameters)),
        Err(problems) => Err(Unresolved::Invalid("InvalidParameters", problems.join("; "))),
    })
}

/// Fails a run that can never execute, at once.
async fn fail_unrunnable(
    ctx: &Context,
    run: &Run,
    mut status: RunStatus,
    reason: &'static str,
    message: String,
    now: Timestamp,
) -> Result<Action> {
    status.phase = Some(RunPhase::Failed);
    status.finished_at = Some(Time(now));
    status.message = Some(message.clone());
    let update = Update { type_: SUCCEEDED, status: false.into(), reason, message: &message };
    status.observed.set(update, run.metadata.generation, now);
    write(ctx, run, &status).await?;
    ctx.record(run, true, reason, message).await;
    expire(ctx, run, now, now).await
}

/// Deletes a finished run (and, through owner references, its Jobs and pods) once its time to
/// live has passed; else asks to be woken then.
async fn expire(ctx: &Context, run: &Run, finished: Timestamp, now: Timestamp) -> Result<Action> {
    let ttl = match run.spec.ttl_seconds_after_finished {
        Some(ttl) => ttl,
        None => {
            let flow = match &run.spec.flow_ref {
                Some(name) => {
                    Api::<Flow>::namespaced(
                        ctx.client.clone(),
                        &run.namespace().unwrap_or_default(),
                    )
                    .get_opt(name)
                    .await?
                }
                None => None,
            };
            flow.and_then(|f| f.spec.ttl_seconds_after_finished)
                .unwrap_or(ctx.settings.run_ttl_seconds)
        }
    };
    let expires = finished + jiff::SignedDuration::from_secs(ttl);
    if expires > now {
        return Ok(Action::requeue(duration_until(now, expires)));
    }
    let runs = Api::<Run>::namespaced(ctx.client.clone(), &run.namespace().unwrap_or_default());
    api::delete_if_present(&runs, &run.name_any()).await?;
    Ok(Action::await_change())
}

/// Writes the status, with the resourceVersion it was computed from, when it changed.
async fn write(ctx: &Context, run: &Run, status: &RunStatus) -> Result<()> {
    api::write_status_at_version(&ctx.client, run, run.status.as_ref(), status).await?;
    Ok(())
}

/// The run's Jobs by name: labelled for it and owned by it (a shortened label can be shared).
async fn jobs_of(ctx: &Context, run: &Run) -> Result<BTreeMap<String, Job>> {
    let api = Api::<Job>::namespaced(ctx.client.clone(), &run.namespace().unwrap_or_default());
    let selector = format!("{RUN_LABEL}={}", label_value(&run.name_any()));
    let uid = run.metadata.uid.clone().unwrap_or_default();
    Ok(api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(|job| job.owner_references().iter().any(|r| r.uid == uid))
        .map(|job| (job.name_any(), job))
        .collect())
}

/// The Agent a node of `plan` runs, if it is an agent step.
fn agent_ref<'a>(plan: &'a Plan, node: &str) -> Option<&'a str> {
    let node = plan.nodes.iter().find(|n| n.id == node)?;
    Some(node.agent.as_ref()?.agent_ref.as_str())
}

/// What a finished attempt came to, read from its pod: outputs (or why they were refused),
/// exit code, and the agent's events.
async fn observe_finished(
    ctx: &Context,
    namespace: &str,
    job: &Job,
    state: JobState,
) -> (Attempt, Vec<agent_output::AgentEvent>) {
    let pod = last_pod(ctx, namespace, &job.name_any()).await;
    let exit_code = pod.as_ref().and_then(exit_code);
    let limits = Limits { output_bytes: ctx.settings.output_limit, ..Limits::default() };
    let log = match &pod {
        Some(pod) => read_log(ctx, namespace, &pod.name_any(), limits.output_bytes).await,
        None => None,
    };
    let parsed = log.as_deref().map(|log| agent_output::parse(log, limits));
    let mut events = match &parsed {
        Some(Ok(AgentOutput { events, .. })) => events.clone(),
        _ => Vec::new(),
    };
    if let Some(Ok(AgentOutput { dropped_events, .. })) = &parsed
        && *dropped_events > 0
    {
        let message = format!("{dropped_events} more lines not shown; see the pod's log");
        events.push(agent_output::AgentEvent { kind: "log".into(), message });
    }
    let attempt = match state {
        JobState::Succeeded => match parsed {
            Some(Ok(output)) => Attempt::Succeeded { outputs: output.outputs },
            Some(Err(error)) => Attempt::Failed {
                exit_code,
                reason: "OutputTooLarge".into(),
                message: error.to_string(),
            },
            None => Attempt::Succeeded { outputs: BTreeMap::new() },
        },
        JobState::Failed { reason, message } => match exit_code {
            Some(code) if reason != "DeadlineExceeded" => Attempt::Failed {
                exit_code,
                reason: "Error".into(),
                message: format!("the agent exited with code {code}"),
            },
            _ => Attempt::Failed { exit_code, reason, message },
        },
        JobState::Running => Attempt::Running,
    };
    (attempt, events)
}

/// The most recently created pod of a Job.
async fn last_pod(ctx: &Context, namespace: &str, job: &str) -> Option<Pod> {
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), namespace);
    let selector = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
    let list = pods.list(&selector).await.ok()?;
    list.items.into_iter().max_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The exit code of the agent container's last termination.
fn exit_code(pod: &Pod) -> Option<i32> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    let container = statuses.iter().find(|c| c.name == job::CONTAINER)?;
    Some(container.state.as_ref()?.terminated.as_ref()?.exit_code)
}

/// The agent container's log, read with a bound: enough for the largest allowed outputs and
/// a generous amount of log lines.
async fn read_log(
    ctx: &Context,
    namespace: &str,
    pod: &str,
    output_limit: usize,
) -> Option<String> {
    let params = LogParams {
        container: Some(job::CONTAINER.to_owned()),
        limit_bytes: i64::try_from(output_limit * 2 + 1024 * 1024).ok(),
        ..LogParams::default()
    };
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), namespace);
    match pods.logs(pod, &params).await {
        Ok(log) => Some(log),
        Err(error) => {
            tracing::debug!(pod, %error, "reading an agent's log failed");
            None
        }
    }
}

/// Creates the Job of an attempt the status records (an existing one is adopted).
async fn start_attempt(
    ctx: &Context,
    run: &Run,
    status: &RunStatus,
    agents: &BTreeMap<String, Arc<Agent>>,
    node: &str,
    attempt: i32,
) -> Result<()> {
    let namespace = run.namespace().unwrap_or_default();
    let plan = status.plan.clone().unwrap_or_default();
    let Some(step) = plan.nodes.iter().find(|n| n.id == node).and_then(|n| n.agent.as_ref()) else {
        return Ok(());
    };
    let Some(agent) = agents.get(&step.agent_ref) else {
        // Not found: the engine's loop above failed this attempt instead.
        return Ok(());
    };
    let inputs = plan::predecessors(&plan, node)
        .into_iter()
        .filter_map(|id| status.nodes.iter().find(|n| n.id == id))
        .map(|n| (n.id.clone(), n.outputs.clone()))
        .collect();
    let job = job::build(&AttemptJob {
        run,
        node_id: node,
        step,
        agent: &agent.spec,
        attempt,
        parameters: &status.parameters,
        inputs: &inputs,
    });
    let jobs = Api::<Job>::namespaced(ctx.client.clone(), &namespace);
    Ok(api::create_if_absent(&jobs, &job).await?)
}

/// Time from `now` until `at`, zero when it has passed.
fn duration_until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or_default()
}
