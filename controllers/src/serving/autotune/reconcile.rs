//! The ModelAutotune reconciler: moves the experiment under way one stage on per reconcile.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{Status, Update};
use keelson_api_crds::serving::{
    AutotuneAction, AutotunePhase, AutotuneStage, Backend, GPUGroup, ModelAutotune,
    ModelAutotuneStatus, ModelDeployment,
};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::task::JoinHandle;

use super::rollout::{self, Rollout};
use super::search::{self, Outcome};
use super::{log, space};
use crate::api;
use crate::serving::benchmark::{self, BenchRun};
use crate::serving::settings::{Settings, owner_reference};

/// The finalizer that restores the baseline settings when a search is deleted before it ends.
pub const FINALIZER: &str = "serving.keelson.dev/autotune-restore";
/// The summary condition of a search.
const SUCCEEDED: &str = "Succeeded";
/// How often a rollout or a benchmark is looked at while it runs.
const POLL: Duration = Duration::from_secs(1);
/// Longest autotune name: its step Jobs add `-step-NN` and must stay within 63 characters.
const MAX_NAME: usize = 52;

struct Context {
    client: Client,
    recorder: Recorder,
    settings: Settings,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<finalizer::Error<Error>>),
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// Starts the ModelAutotune controller; it runs until its task is aborted.
pub fn spawn(client: Client, settings: Settings) -> JoinHandle<()> {
    let reporter = Reporter { controller: "keelson-autotune".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let ctx = Arc::new(Context { client: client.clone(), recorder, settings });
    let all = watcher::Config::default();
    let controller = Controller::new(Api::<ModelAutotune>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone())
        // `keelson bench` writes a step's results ConfigMap, `<autotune>-step-<n>`.
        .watches(Api::<ConfigMap>::all(client), all, |cm| {
            let name = cm.name_any();
            let (autotune, step) = name.rsplit_once("-step-")?;
            step.parse::<u32>().ok()?;
            Some(ObjectRef::new(autotune).within(&cm.namespace()?))
        })
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(2)), ctx)
        .for_each(api::log("modelautotune"));
    tokio::spawn(controller)
}

async fn reconcile(at: Arc<ModelAutotune>, ctx: Arc<Context>) -> Result<Action> {
    let api: Api<ModelAutotune> =
        Api::namespaced(ctx.client.clone(), &at.namespace().unwrap_or_default());
    // Read it fresh: the cache may not hold this controller's last status write yet, and every
    // stage acts on what the status says.
    let Some(at) = api.get_opt(&at.name_any()).await? else {
        return Ok(Action::await_change());
    };
    finalizer(&api, FINALIZER, Arc::new(at), |event| async {
        match event {
            finalizer::Event::Apply(at) => advance(&at, &ctx).await,
            finalizer::Event::Cleanup(at) => restore(&at, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// Name of the Job and results ConfigMap of `step`.
fn step_name(at: &ModelAutotune, step: i32) -> String {
    format!("{}-step-{step}", at.name_any())
}

/// Moves the search one stage on. Each stage makes sure of what it waits for (the candidate's
/// settings applied, the step's Job created), so a write that failed half way is redone.
async fn advance(at: &ModelAutotune, ctx: &Context) -> Result<Action> {
    let mut status = at.status.clone().unwrap_or_default();
    if matches!(status.phase, Some(AutotunePhase::Succeeded | AutotunePhase::Failed)) {
        return Ok(Action::await_change());
    }
    let namespace = at.namespace().unwrap_or_default();
    let models = Api::<ModelDeployment>::namespaced(ctx.client.clone(), &namespace);
    let Some(md) = models.get_opt(&at.spec.deployment_ref).await? else {
        let message = format!("ModelDeployment {:?} does not exist", at.spec.deployment_ref);
        return fail(at, ctx, status, "DeploymentNotFound", &message).await;
    };
    let now = jiff::Timestamp::now();
    let Some(current) = status.current.clone() else {
        if let Some((reason, message)) = refusal(at, &md, ctx).await? {
            return fail(at, ctx, status, reason, &message).await;
        }
        let baseline = space::config_of(md.spec.vllm.as_ref());
        let mut status = search::start(&at.spec, baseline, now);
        let total = status.progress.as_ref().map_or(0, |p| p.total);
        let message = format!("benchmarking the baseline; {total} candidates to try");
        set_condition(&mut status, at, Status::Unknown, "Searching", &message);
        write(ctx, at, &status).await?;
        if space::drops_speculative(&at.spec.search_space, at.spec.quality_guard.enabled) {
            let note = "the quality guard is off: speculativeConfig is left out of the search";
            api::record(&ctx.recorder, at, false, "SpeculativeDecodingSkipped", note.into()).await;
        }
        return Ok(Action::requeue(POLL));
    };
    match current.stage {
        AutotuneStage::RollingOut | AutotuneStage::Finishing => {
            let config = search::candidate_config(&status);
            if space::config_of(md.spec.vllm.as_ref()) != config {
                // Not applied yet, or changed by hand: during a search these settings are its.
                let patch = Patch::Merge(space::patch(&config));
                models.patch(&md.name_any(), &PatchParams::default(), &patch).await?;
                return Ok(Action::requeue(POLL));
            }
            let deployments = Api::<Deployment>::namespaced(ctx.client.clone(), &namespace);
            let deployment = deployments.get_opt(&md.name_any()).await?;
            let state = rollout::state(&md, deployment.as_ref());
            let waited = now.duration_since(current.since.0).as_secs();
            let timed_out = waited >= i64::from(at.spec.rollout_timeout_seconds);
            match (state, current.stage) {
                (Rollout::Done, AutotuneStage::Finishing) => finish(at, ctx, status, None).await,
                (Rollout::Waiting(why), AutotuneStage::Finishing) if timed_out => {
                    let note = format!("the best settings did not roll out in {waited}s: {why}");
                    finish(at, ctx, status, Some(note)).await
                }
                (Rollout::Done, _) => {
                    let stage = AutotuneStage::Benchmarking;
                    let candidate = candidate(&current);
                    status.current = Some(search::experiment(current.step, candidate, stage, now));
                    write(ctx, at, &status).await?;
                    start_benchmark(at, ctx, &md, current.step).await?;
                    Ok(Action::requeue(POLL))
                }
                (Rollout::Waiting(why), _) if timed_out => {
                    let error = format!("not rolled out after {waited}s: {why}");
                    conclude(at, ctx, &md, status, Outcome::Failed(error)).await
                }
                (Rollout::Waiting(_), _) => Ok(Action::requeue(POLL)),
            }
        }
        AutotuneStage::Benchmarking => {
            let name = step_name(at, current.step);
            let results =
                Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace).get_opt(&name).await?;
            let job = Api::<Job>::namespaced(ctx.client.clone(), &namespace).get_opt(&name).await?;
            let outcome = match (results.as_ref().and_then(benchmark::tokens_per_second), &job) {
                (Some(tokens_per_second), _) => Outcome::Measured {
                    tokens_per_second,
                    quality: results.as_ref().map(benchmark::quality).unwrap_or_default(),
                },
                (None, Some(job)) if !job_failed(job) => return Ok(Action::requeue(POLL)),
                (None, Some(_)) => Outcome::Failed(format!("benchmark Job {name} failed")),
                (None, None) => {
                    // Not created yet (the status is written first), or deleted by hand.
                    start_benchmark(at, ctx, &md, current.step).await?;
                    return Ok(Action::requeue(POLL));
                }
            };
            conclude(at, ctx, &md, status, outcome).await
        }
    }
}

/// Creates the benchmark Job of `step`, owned by the autotune, unless it exists.
async fn start_benchmark(
    at: &ModelAutotune,
    ctx: &Context,
    md: &ModelDeployment,
    step: i32,
) -> Result<()> {
    let name = step_name(at, step);
    let args = benchmark::bench_args(md, &name, &bench_run(at));
    let owner = owner_reference("ModelAutotune", &at.metadata);
    let job = benchmark::bench_job(md, name, owner, args, &ctx.settings);
    let jobs = Api::<Job>::namespaced(ctx.client.clone(), &at.namespace().unwrap_or_default());
    Ok(api::create_if_absent(&jobs, &job).await?)
}

/// Why `md` cannot be tuned, if it cannot.
async fn refusal(
    at: &ModelAutotune,
    md: &ModelDeployment,
    ctx: &Context,
) -> Result<Option<(&'static str, String)>> {
    let name = md.name_any();
    if at.name_any().len() > MAX_NAME {
        return Ok(Some((
            "NameTooLong",
            format!("the name must be at most {MAX_NAME} characters"),
        )));
    }
    if md.spec.backend != Backend::Vllm {
        let message =
            format!("{name} runs backend {}; autotune tunes vllm", md.spec.backend.as_str());
        return Ok(Some(("NotVllm", message)));
    }
    if md.spec.replicas == 0 {
        return Ok(Some(("ScaledToZero", format!("{name} is scaled to zero: nothing to measure"))));
    }
    let groups =
        Api::<GPUGroup>::namespaced(ctx.client.clone(), &md.namespace().unwrap_or_default())
            .list(&ListParams::default())
            .await?;
    if let Some(group) = groups.items.iter().find(|g| g.spec.models.iter().any(|m| m.name == name))
    {
        let message = format!(
            "{name} shares GPUs in GPUGroup {:?}: its throughput depends on the other members, so shared GPU groups are not tuned",
            group.name_any()
        );
        return Ok(Some(("SharedGpu", message)));
    }
    Ok(None)
}

/// The benchmark run of each experiment, from the spec.
fn bench_run(at: &ModelAutotune) -> BenchRun {
    let bench = &at.spec.benchmark;
    let guard = &at.spec.quality_guard;
    BenchRun {
        warmups: bench.warmup,
        iterations: bench.iterations,
        batch_size: 128,
        min_duration: format!("{}s", bench.duration_seconds),
        quality_repeats: if guard.enabled { guard.repeats } else { 0 },
    }
}

fn candidate(current: &keelson_api_crds::serving::AutotuneExperiment) -> Option<(String, String)> {
    Some((current.parameter.clone()?, current.value.clone()?))
}

fn job_failed(job: &Job) -> bool {
    let status = job.status.as_ref();
    status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
}

/// Records the outcome of the experiment under way and moves on to the next experiment, or to
/// applying the best settings. The status is written first, so a failed or conflicting write
/// leaves nothing half done; the next stage applies the settings the status names.
async fn conclude(
    at: &ModelAutotune,
    ctx: &Context,
    md: &ModelDeployment,
    mut status: ModelAutotuneStatus,
    outcome: Outcome,
) -> Result<Action> {
    let now = jiff::Timestamp::now();
    let step = search::record(&at.spec, &mut status, outcome, now);
    if step.step == 0 && step.action != AutotuneAction::Baseline {
        let error = step.error.clone().unwrap_or_default();
        let message = format!("the baseline could not be measured: {error}");
        return fail(at, ctx, status, "BaselineFailed", &message).await;
    }
    let next = search::next(&at.spec, &status);
    let stage = if next.is_some() { AutotuneStage::RollingOut } else { AutotuneStage::Finishing };
    status.current = Some(search::experiment(step.step + 1, next, stage, now));
    let progress = status.progress.clone().unwrap_or_default();
    let message = format!(
        "{} of {} candidates tried; best {:.1} tokens/s",
        progress.completed,
        progress.total,
        status.best_tokens_per_second.unwrap_or_default()
    );
    set_condition(&mut status, at, Status::Unknown, "Searching", &message);
    write(ctx, at, &status).await?;

    let namespace = at.namespace().unwrap_or_default();
    let name = step_name(at, step.step);
    api::delete_if_present(&Api::<Job>::namespaced(ctx.client.clone(), &namespace), &name).await?;
    let results = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    api::delete_if_present(&results, &name).await?;
    let warning = step.action == AutotuneAction::RolloutFailed;
    api::record(&ctx.recorder, at, warning, &reason(step.action), describe(&step)).await;
    let log = log::configmap(md, &status);
    api::apply(&ctx.client, crate::serving::MANAGER, &namespace, &log).await?;
    let patch = Patch::Merge(space::patch(&search::candidate_config(&status)));
    let models = Api::<ModelDeployment>::namespaced(ctx.client.clone(), &namespace);
    models.patch(&md.name_any(), &PatchParams::default(), &patch).await?;
    Ok(Action::requeue(POLL))
}

/// Ends a search whose best settings are applied (and, unless `problem`, rolled out).
async fn finish(
    at: &ModelAutotune,
    ctx: &Context,
    mut status: ModelAutotuneStatus,
    problem: Option<String>,
) -> Result<Action> {
    let now = jiff::Timestamp::now();
    status.current = None;
    status.phase = Some(AutotunePhase::Succeeded);
    status.completion_time = Some(Time(now));
    let baseline = status.baseline_tokens_per_second.unwrap_or_default();
    let best = status.best_tokens_per_second.unwrap_or_default();
    let changes: Vec<_> = status
        .best_config
        .iter()
        .filter(|(k, v)| status.baseline_config.get(*k) != Some(*v))
        .map(|(k, v)| space::delta(k, v))
        .collect();
    let changes = if changes.is_empty() {
        "the baseline settings stay".to_owned()
    } else {
        changes.join(",")
    };
    let gain = search::percent(best, baseline);
    let mut message = format!(
        "best {best:.1} tokens/s, {gain:+.2}% over the baseline's {baseline:.1}: {changes}"
    );
    if let Some(problem) = problem {
        message.push_str(&format!(" ({problem})"));
    }
    set_condition(&mut status, at, Status::True, "SearchComplete", &message);
    write(ctx, at, &status).await?;
    let namespace = at.namespace().unwrap_or_default();
    let models = Api::<ModelDeployment>::namespaced(ctx.client.clone(), &namespace);
    if let Some(md) = models.get_opt(&at.spec.deployment_ref).await? {
        let log = log::configmap(&md, &status);
        api::apply(&ctx.client, crate::serving::MANAGER, &namespace, &log).await?;
    }
    api::record(&ctx.recorder, at, false, "SearchComplete", message).await;
    Ok(Action::await_change())
}

/// Ends a search that cannot go on; the deployment gets its baseline settings back.
async fn fail(
    at: &ModelAutotune,
    ctx: &Context,
    mut status: ModelAutotuneStatus,
    reason: &str,
    message: &str,
) -> Result<Action> {
    // Restored before the status says Failed: a failed search is not looked at again.
    if status.current.is_some() {
        restore_baseline(at, ctx, &status).await?;
    }
    status.current = None;
    status.phase = Some(AutotunePhase::Failed);
    status.completion_time = Some(Time(jiff::Timestamp::now()));
    set_condition(&mut status, at, Status::False, reason, message);
    write(ctx, at, &status).await?;
    api::record(&ctx.recorder, at, true, reason, message.to_owned()).await;
    Ok(Action::await_change())
}

/// On deletion: a search still under way gives the deployment its baseline settings back.
async fn restore(at: &ModelAutotune, ctx: &Context) -> Result<Action> {
    let status = at.status.clone().unwrap_or_default();
    if status.current.is_some() {
        restore_baseline(at, ctx, &status).await?;
        let note =
            format!("search stopped; {} has its baseline settings again", at.spec.deployment_ref);
        api::record(&ctx.recorder, at, false, "BaselineRestored", note).await;
    }
    let namespace = at.namespace().unwrap_or_default();
    if let Some(current) = &status.current {
        let name = step_name(at, current.step);
        api::delete_if_present(
            &Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace),
            &name,
        )
        .await?;
    }
    Ok(Action::await_change())
}

async fn restore_baseline(
    at: &ModelAutotune,
    ctx: &Context,
    status: &ModelAutotuneStatus,
) -> Result<()> {
    let models =
        Api::<ModelDeployment>::namespaced(ctx.client.clone(), &at.namespace().unwrap_or_default());
    let patch = Patch::Merge(space::patch(&status.baseline_config));
    match models.patch(&at.spec.deployment_ref, &PatchParams::default(), &patch).await {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => other.map(drop).map_err(Error::from),
    }
}

fn set_condition(
    status: &mut ModelAutotuneStatus,
    at: &ModelAutotune,
    s: Status,
    reason: &str,
    message: &str,
) {
    let update = Update { type_: SUCCEEDED, status: s, reason, message };
    status.observed.set(update, at.metadata.generation, jiff::Timestamp::now());
}

/// Writes `status` whole (fields it leaves out are removed, unlike a merge patch) onto the
/// resourceVersion `at` was read at: a write computed from an older read fails with a 409.
async fn write(ctx: &Context, at: &ModelAutotune, status: &ModelAutotuneStatus) -> Result<()> {
    if at.status.as_ref() == Some(status) {
        return Ok(());
    }
    let api: Api<ModelAutotune> =
        Api::namespaced(ctx.client.clone(), &at.namespace().unwrap_or_default());
    let mut object = at.clone();
    object.status = Some(status.clone());
    api.replace_status(&at.name_any(), &PostParams::default(), &object).await?;
    Ok(())
}

/// The event reason of a step: its action in CamelCase.
fn reason(action: AutotuneAction) -> String {
    log::action(action).split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

/// An event note for a step, e.g. `step 3 maxNumSeqs=8: 81.2 tokens/s (+4.10%), accepted`.
fn describe(step: &keelson_api_crds::serving::AutotuneStep) -> String {
    let measured = match (step.tokens_per_second, step.improvement_percent) {
        (Some(tps), Some(change)) => format!("{tps:.1} tokens/s ({change:+.2}%)"),
        (Some(tps), None) => format!("{tps:.1} tokens/s"),
        _ => step.error.clone().unwrap_or_default(),
    };
    let mut note = format!(
        "step {} {}: {measured}, {}",
        step.step,
        step.config_delta,
        log::action(step.action)
    );
    if let Some(q) = &step.quality_note {
        note.push_str(&format!(": {q}"));
    }
    note
}
