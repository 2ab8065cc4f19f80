//! `keelson benchmark <name>`: measures a ModelDeployment again and follows the benchmark to
//! its new figure.
//!
//! The controller runs the benchmark Job only for a model without a figure, so this command
//! deletes the Job `<name>-benchmark` and the ConfigMap `<name>-benchmark-results`, then clears
//! the figure (`status.tokensPerSecond`) once both are gone. The controller creates a new Job
//! (as soon as the model is Ready), copies its result into the status, and this command prints
//! it, e.g. `qwen: 412.3/s`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use keelson_api_crds::serving::ModelDeployment;
use keelson_controllers::serving::benchmark::{JOB_SUFFIX, RESULTS_SUFFIX, tokens_per_second};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::kube_args::KubeArgs;

/// How often the command looks at the benchmark.
const POLL: Duration = Duration::from_millis(500);

/// Settings of `keelson benchmark`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchmarkArgs {
    /// The ModelDeployment.
    pub name: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Give up after this long, e.g. `30m`.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::bench::args::duration)]
    pub timeout: Duration,
}

/// Where the benchmark Job is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// No Job (yet).
    Missing,
    /// Created, its pod not running yet.
    Created,
    /// Its pod runs.
    Running,
    /// It completed.
    Succeeded,
    /// It failed, with the reason.
    Failed(String),
}

impl JobState {
    /// The state of `job`.
    pub fn of(job: Option<&Job>) -> JobState {
        let Some(job) = job else { return JobState::Missing };
        let status = job.status.clone().unwrap_or_default();
        let condition = |type_: &str| {
            status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == type_ && c.status == "True")
                .map(|c| c.message.clone().or(c.reason.clone()).unwrap_or_default())
        };
        if let Some(message) = condition("Failed") {
            JobState::Failed(message)
        } else if condition("Complete").is_some() || status.succeeded.unwrap_or(0) > 0 {
            JobState::Succeeded
        } else if status.active.unwrap_or(0) > 0 {
            JobState::Running
        } else {
            JobState::Created
        }
    }

    /// What to print when the Job reaches this state.
    fn progress(&self, job: &str) -> Option<String> {
        match self {
            JobState::Missing | JobState::Failed(_) => None,
            JobState::Created => Some(format!("job/{job} created")),
            JobState::Running => Some(format!("job/{job} running")),
            JobState::Succeeded => Some(format!("job/{job} done, waiting for the figure")),
        }
    }
}

/// What the command sees at one look.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Whether the ModelDeployment is Ready.
    pub ready: bool,
    /// The benchmark Job.
    pub job: JobState,
    /// `status.tokensPerSecond`.
    pub status: Option<f64>,
    /// `tokensPerSecond` of the results ConfigMap.
    pub results: Option<f64>,
}

/// What to do after a look.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Look again.
    Wait,
    /// The status holds an old figure again (a controller write computed before it was
    /// cleared): clear it again.
    ClearAgain,
    /// The new figure is in the status.
    Done(f64),
    /// The benchmark Job failed.
    Failed(String),
}

/// Decides what follows `seen`.
pub fn next(seen: &Observation) -> Next {
    match (seen.status, seen.results, &seen.job) {
        (Some(status), Some(results), _) if (status - results).abs() < 1e-9 => Next::Done(status),
        (_, _, JobState::Failed(message)) => Next::Failed(message.clone()),
        (Some(_), None, JobState::Missing) => Next::ClearAgain,
        _ => Next::Wait,
    }
}

/// `12.3/s`.
pub fn figure(tps: f64) -> String {
    format!("{tps:.1}/s")
}

/// Runs `keelson benchmark`.
pub async fn run(args: BenchmarkArgs) -> anyhow::Result<()> {
    let client = args.kube.client().await?;
    let namespace = args.kube.namespace.as_str();
    let name = args.name.as_str();
    let models: Api<ModelDeployment> = Api::namespaced(client.clone(), namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let job_name = format!("{name}{JOB_SUFFIX}");
    let results_name = format!("{name}{RESULTS_SUFFIX}");
    let Some(md) = models.get_opt(name).await.context("reading the ModelDeployment")? else {
        bail!("ModelDeployment {name:?} not found in namespace {namespace:?}");
    };
    if let Some(old) = md.status.as_ref().and_then(|s| s.tokens_per_second) {
        println!("{name}: was {}", figure(old));
    }

    let deadline = Instant::now() + args.timeout;
    let background = DeleteParams::background();
    if deleted(jobs.delete(&job_name, &background).await)? {
        println!("job/{job_name} deleted");
    }
    if deleted(configmaps.delete(&results_name, &background).await)? {
        println!("configmap/{results_name} deleted");
    }
    while jobs.get_opt(&job_name).await?.is_some()
        || configmaps.get_opt(&results_name).await?.is_some()
    {
        if Instant::now() > deadline {
            bail!("job/{job_name} and configmap/{results_name} were not deleted in time");
        }
        tokio::time::sleep(POLL).await;
    }
    clear_figure(&models, name).await?;

    let mut printed = JobState::Missing;
    let mut said_waiting = false;
    loop {
        let md = models.get_opt(name).await?.with_context(|| {
            format!("ModelDeployment {name:?} was deleted during the benchmark")
        })?;
        let job = jobs.get_opt(&job_name).await?;
        let results = configmaps.get_opt(&results_name).await?;
        let seen = Observation {
            ready: md.status.as_ref().is_some_and(|s| s.observed.is_true("Ready")),
            job: JobState::of(job.as_ref()),
            status: md.status.as_ref().and_then(|s| s.tokens_per_second),
            results: results.as_ref().and_then(tokens_per_second),
        };
        if seen.job != printed {
            if let Some(line) = seen.job.progress(&job_name) {
                println!("{line}");
            }
            printed = seen.job.clone();
        }
        if !seen.ready && seen.job == JobState::Missing && !said_waiting {
            println!("waiting for {name} to be Ready: the benchmark runs once the model serves");
            said_waiting = true;
        }
        match next(&seen) {
            Next::Done(tps) => {
                println!("{name}: {}", figure(tps));
                return Ok(());
            }
            Next::Failed(message) => bail!(
                "job/{job_name} failed: {message} (see `kubectl logs -n {namespace} job/{job_name}`)"
            ),
            Next::ClearAgain => clear_figure(&models, name).await?,
            Next::Wait => {}
        }
        if Instant::now() > deadline {
            bail!(
                "no new figure for {name} after {}s (see `kubectl get job -n {namespace} {job_name}`)",
                args.timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Removes the figure from the status, so that the controller benchmarks again.
async fn clear_figure(models: &Api<ModelDeployment>, name: &str) -> anyhow::Result<()> {
    let patch = json!({ "status": { "tokensPerSecond": null, "lastBenchmarkTime": null } });
    models
        .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .context("clearing the ModelDeployment's figure")?;
    Ok(())
}

/// Whether a delete deleted something: a 404 means there was nothing to delete.
fn deleted<T>(result: kube::Result<T>) -> kube::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(job: JobState, status: Option<f64>, results: Option<f64>) -> Observation {
        Observation { ready: true, job, status, results }
    }

    #[test]
    fn done_when_the_status_holds_the_new_results() {
        assert_eq!(next(&seen(JobState::Succeeded, Some(41.5), Some(41.5))), Next::Done(41.5));
        // Results written, not yet copied.
        assert_eq!(next(&seen(JobState::Succeeded, None, Some(41.5))), Next::Wait);
        assert_eq!(next(&seen(JobState::Running, None, None)), Next::Wait);
    }

    #[test]
    fn an_old_figure_without_a_job_is_cleared_again() {
        assert_eq!(next(&seen(JobState::Missing, Some(12.0), None)), Next::ClearAgain);
        assert_eq!(next(&seen(JobState::Running, Some(12.0), None)), Next::Wait);
    }

    #[test]
    fn a_failed_job_fails() {
        let failed = JobState::Failed("BackoffLimitExceeded".into());
        assert_eq!(next(&seen(failed, None, None)), Next::Failed("BackoffLimitExceeded".into()));
    }

    #[test]
    fn job_states() {
        assert_eq!(JobState::of(None), JobState::Missing);
        let job = |status: &str| -> Job { serde_json::from_str(status).unwrap() };
        assert_eq!(JobState::of(Some(&job(r#"{"status":{}}"#))), JobState::Created);
        assert_eq!(JobState::of(Some(&job(r#"{"status":{"active":1}}"#))), JobState::Running);
        assert_eq!(JobState::of(Some(&job(r#"{"status":{"succeeded":1}}"#))), JobState::Succeeded);
        let failed = r#"{"status":{"failed":2,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}}"#;
        assert_eq!(
            JobState::of(Some(&job(failed))),
            JobState::Failed("Job has reached the specified backoff limit".into())
        );
    }

    #[test]
    fn figures() {
        assert_eq!(figure(12.34), "12.3/s");
        assert_eq!(figure(400.0), "400.0/s");
    }
}
