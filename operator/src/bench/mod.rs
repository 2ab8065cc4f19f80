//! `keelson bench`: the OpenAI-compatible load client the benchmark Job runs.
//!
//! It waits for the model server's readiness paths, sends warm-up requests, then measures
//! requests (`--concurrency` in flight) until both `--iterations` and `--min-duration` are
//! reached, and writes the results ConfigMap the controller copies into the ModelDeployment's
//! status. Exit codes: 0 measured, 1 the benchmark failed, 2 usage.

pub mod args;
pub mod client;
pub mod measure;
pub mod quality;
pub mod results;
pub mod wait;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

pub use args::BenchArgs;
use client::Target;
use measure::{Sample, wants_more};
use results::Results;

/// Why a benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A readiness path answered a status that waiting will not change.
    #[error("{url} answered HTTP {status}, not a status of a server still starting: {body}")]
    NotServing {
        /// The readiness URL.
        url: String,
        /// Its status.
        status: u16,
        /// The start of its body.
        body: String,
    },
    /// The server did not become ready within `--cold-start-timeout`.
    #[error("{url} was not ready after {}s (last: {last}); raise --cold-start-timeout if the model loads slowly", waited.as_secs())]
    ColdStartTimeout {
        /// The readiness URL.
        url: String,
        /// How long was waited.
        waited: Duration,
        /// The last answer or error.
        last: String,
    },
    /// A benchmark request failed.
    #[error("request to {url} failed: {reason}")]
    Request {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// Requests succeeded but generated nothing measurable.
    #[error("the measured requests generated no tokens")]
    NothingMeasured,
    /// No namespace for the results ConfigMap.
    #[error(
        "no namespace for the results ConfigMap: pass --namespace (or set POD_NAMESPACE), or --no-configmap"
    )]
    NoNamespace,
    /// The cluster could not be reached.
    #[error("connecting to the cluster for the results ConfigMap: {0:#}")]
    Cluster(anyhow::Error),
    /// The results ConfigMap could not be written.
    #[error("writing ConfigMap {namespace}/{name}: {source}")]
    WriteResults {
        /// The ConfigMap's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// The HTTP client could not be built.
    #[error("building the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Where the results go: a ConfigMap, or only the output.
struct Destination {
    client: kube::Client,
    namespace: String,
    name: String,
}

/// Runs `keelson bench`.
pub async fn run(args: BenchArgs) -> Result<(), BenchError> {
    // Reach the cluster first: a broken kubeconfig should not cost a whole benchmark.
    let destination = match (&args.configmap, args.no_configmap) {
        (Some(name), false) => Some(destination(&args, name).await?),
        _ => None,
    };
    let target = Arc::new(Target {
        http: reqwest::Client::builder().tcp_nodelay(true).build()?,
        endpoint: args.endpoint.trim_end_matches('/').to_owned(),
        model: args.model.clone(),
        backend: args.backend,
        max_tokens: args.batch_size,
        prompt: client::DEFAULT_PROMPT.to_owned(),
        temperature: None,
        api_key: args.api_key.clone().filter(|k| !k.is_empty()),
    });
    wait::until_ready(
        &target.http,
        &target.endpoint,
        args.backend,
        target.api_key.as_deref(),
        args.poll_interval,
        args.cold_start_timeout,
    )
    .await?;
    if args.warmup_iterations > 0 {
        eprintln!("warming up: {} requests", args.warmup_iterations);
        for _ in 0..args.warmup_iterations {
            client::timed_request(&target).await?;
        }
    }
    eprintln!(
        "measuring: at least {} requests and {}, {} in flight",
        args.iterations, args.min_duration.text, args.concurrency
    );
    let (samples, wall) = measure(&target, &args).await?;
    let summary = measure::summarize(&samples, wall).ok_or(BenchError::NothingMeasured)?;
    let mut results = Results::new(&args, summary);
    if args.quality_repeats > 0 && args.backend.generates_text() {
        eprintln!("probing quality: {} requests per workload class", args.quality_repeats);
        results.quality = quality::probe(&target, args.quality_repeats).await?;
    }
    if let Some(Destination { client, namespace, name }) = destination {
        if let Err(source) = results::write(&client, &results, &name, &namespace).await {
            return Err(BenchError::WriteResults { namespace, name, source });
        }
        eprintln!("wrote ConfigMap {namespace}/{name}");
    }
    match args.output {
        args::Output::Json => {
            eprintln!("{}", results.summary_line());
            println!("{}", results.json());
        }
        args::Output::Text => println!("{}", results.summary_line()),
    }
    Ok(())
}

/// The cluster and namespace of the results ConfigMap `name`.
async fn destination(args: &BenchArgs, name: &str) -> Result<Destination, BenchError> {
    let client =
        crate::kube_args::client(args.kubeconfig.as_deref()).await.map_err(BenchError::Cluster)?;
    let namespace = args
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| Some(client.default_namespace().to_owned()).filter(|n| !n.is_empty()))
        .ok_or(BenchError::NoNamespace)?;
    Ok(Destination { client, namespace, name: name.to_owned() })
}

/// The measured phase: `--concurrency` workers each sending requests one after another until
/// both the iteration count and the minimum duration are reached. Returns the samples and the
/// phase's wall time (until the last request ended).
async fn measure(
    target: &Arc<Target>,
    args: &BenchArgs,
) -> Result<(Vec<Sample>, Duration), BenchError> {
    let started = Instant::now();
    let count = Arc::new(AtomicU64::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..args.concurrency {
        let (target, count) = (Arc::clone(target), Arc::clone(&count));
        let (iterations, min_duration) = (args.iterations, args.min_duration.value);
        workers.spawn(async move {
            let mut samples = Vec::new();
            while wants_more(
                count.fetch_add(1, Ordering::SeqCst),
                iterations,
                started.elapsed(),
                min_duration,
            ) {
                samples.push(client::timed_request(&target).await?);
            }
            Ok::<_, BenchError>(samples)
        });
    }
    let mut samples = Vec::new();
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(Ok(done)) => samples.extend(done),
            Ok(Err(e)) => return Err(e),
            Err(panic) => std::panic::resume_unwind(panic.into_panic()),
        }
    }
    Ok((samples, started.elapsed()))
}
