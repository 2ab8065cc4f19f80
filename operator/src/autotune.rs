//! `keelson autotune <name>`: starts a ModelAutotune search over a vLLM ModelDeployment's
//! settings and follows it with a progress bar. The search runs in the autotune controller, so
//! closing the terminal does not stop it; Ctrl-C asks whether to stop it and restore the
//! baseline settings. Exit codes: 0 the search finished, 1 it failed or could not start,
//! 2 usage, 130 stopped at Ctrl-C.

use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use keelson_api_crds::serving::{
    AutotuneBenchmark, AutotunePhase, AutotuneStep, ModelAutotune, ModelAutotuneSpec,
    ModelAutotuneStatus, ModelDeployment, QualityGuard, SearchSpace,
};
use keelson_controllers::serving::autotune::{log, space};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

use crate::bench::args::duration;
use crate::kube_args::KubeArgs;

/// Flags of `keelson autotune`.
#[derive(Debug, Clone, clap::Args)]
pub struct AutotuneArgs {
    /// The vLLM ModelDeployment to tune.
    pub name: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Veto candidates that raise aggregate throughput while the decode speed of a workload
    /// class (prompt-copy lookup, novel text) regresses; also searches speculativeConfig.
    #[arg(long)]
    pub quality_guard: bool,
    /// Percent regression of a workload class tolerated by the guard.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=100))]
    pub quality_tolerance: i32,
    /// Probes per workload class; the guard uses their median.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(i32).range(1..=10))]
    pub quality_repeats: i32,
    /// Measure each candidate for at least this long.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub bench_duration: Duration,
    /// Measured requests per candidate, at least.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub bench_iterations: i32,
    /// Requests sent before measuring each candidate.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(i32).range(0..=100))]
    pub bench_warmup: i32,
    /// How long a candidate may take to roll out before it counts as failed.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration)]
    pub rollout_timeout: Duration,
    /// Search only these parameters, with these values, e.g. `--param maxNumSeqs=4,8,16`
    /// (repeatable; default: the whole built-in space).
    #[arg(long, value_name = "NAME=V1,V2,…")]
    pub param: Vec<String>,
    /// Start the search and return without following it.
    #[arg(long)]
    pub detach: bool,
}

/// Runs `keelson autotune`; returns the exit code.
pub async fn run(args: AutotuneArgs) -> anyhow::Result<i32> {
    if args.kube.all_namespaces {
        bail!("autotune acts on one ModelDeployment: pass -n NAMESPACE, not -A");
    }
    let spec = spec(&args)?;
    let client = args.kube.client().await?;
    let namespace = &args.kube.namespace;
    let models: Api<ModelDeployment> = Api::namespaced(client.clone(), namespace);
    if models.get_opt(&args.name).await?.is_none() {
        bail!("ModelDeployment {:?} not found in namespace {namespace:?}", args.name);
    }
    if space::drops_speculative(&spec.search_space, spec.quality_guard.enabled) {
        println!(
            "note: the quality guard is off, so speculativeConfig is left out of the search (pass --quality-guard to include it)"
        );
    }
    let searches: Api<ModelAutotune> = Api::namespaced(client, namespace);
    let autotune = ModelAutotune {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", prefix(&args.name))),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    };
    let created = searches
        .create(&PostParams::default(), &autotune)
        .await
        .context("creating the ModelAutotune")?;
    let name = created.name_any();
    println!("modelautotune/{name} created in {namespace}");
    if args.detach {
        println!("follow it with: kubectl get modelautotune {name} -n {namespace} -w");
        return Ok(0);
    }
    follow(&searches, &name, &args.name).await
}

/// The name prefix of a search of `model`: `<model>-autotune`, cut so the generated name fits
/// the controller's limit.
fn prefix(model: &str) -> String {
    let mut prefix = format!("{model}-autotune");
    prefix.truncate(46);
    prefix.trim_end_matches(['-', '.']).to_owned()
}

/// The ModelAutotune spec the flags ask for.
pub fn spec(args: &AutotuneArgs) -> anyhow::Result<ModelAutotuneSpec> {
    let seconds = |d: Duration, what: &str| -> anyhow::Result<i32> {
        i32::try_from(d.as_secs())
            .ok()
            .filter(|s| *s >= 1)
            .with_context(|| format!("{what} must be at least 1s"))
    };
    Ok(ModelAutotuneSpec {
        deployment_ref: args.name.clone(),
        search_space: search_space(&args.param)?,
        quality_guard: QualityGuard {
            enabled: args.quality_guard,
            tolerance_percent: args.quality_tolerance,
            repeats: args.quality_repeats,
        },
        benchmark: AutotuneBenchmark {
            duration_seconds: seconds(args.bench_duration, "--bench-duration")?,
            iterations: args.bench_iterations,
            warmup: args.bench_warmup,
        },
        rollout_timeout_seconds: seconds(args.rollout_timeout, "--rollout-timeout")?.max(30),
    })
}

/// The search space of `--param` flags: the whole built-in space without any, else only the
/// parameters named, with their values.
fn search_space(params: &[String]) -> anyhow::Result<SearchSpace> {
    if params.is_empty() {
        return Ok(SearchSpace::default());
    }
    let mut space = SearchSpace {
        max_num_seqs: vec![],
        gpu_memory_utilization: vec![],
        max_model_len: vec![],
        enforce_eager: vec![],
        enable_prefix_caching: vec![],
        max_num_batched_tokens: vec![],
        speculative_decoding: false,
    };
    for param in params {
        let (name, values) = param
            .split_once('=')
            .with_context(|| format!("--param {param:?} is not NAME=V1,V2"))?;
        let values: Vec<&str> =
            values.split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
        let numbers = || -> anyhow::Result<Vec<i32>> {
            values
                .iter()
                .map(|v| {
                    v.parse()
                        .with_context(|| format!("--param {name}: {v:?} is not a whole number"))
                })
                .collect()
        };
        let flags = || -> anyhow::Result<Vec<bool>> {
            values
                .iter()
                .map(|v| {
                    v.parse().with_context(|| format!("--param {name}: {v:?} is not true or false"))
                })
                .collect()
        };
        match name.trim() {
            "maxNumSeqs" => space.max_num_seqs = numbers()?,
            "maxModelLen" => space.max_model_len = numbers()?,
            "maxNumBatchedTokens" => space.max_num_batched_tokens = numbers()?,
            "enforceEager" => space.enforce_eager = flags()?,
            "enablePrefixCaching" => space.enable_prefix_caching = flags()?,
            "gpuMemoryUtilization" => {
                for v in &values {
                    let fraction: f64 = v.parse().with_context(|| {
                        format!("--param {name}: {v:?} is not a fraction like 0.90")
                    })?;
                    if fraction > 0.98 {
                        bail!("--param {name}: {v} is above the 0.98 safety cap");
                    }
                }
                space.gpu_memory_utilization = values.iter().map(|v| (*v).to_owned()).collect();
            }
            space::SPECULATIVE => space.speculative_decoding = true,
            other => bail!(
                "--param {other:?} is not a searched parameter (maxNumSeqs, gpuMemoryUtilization, maxModelLen, enforceEager, enablePrefixCaching, maxNumBatchedTokens, speculativeConfig)"
            ),
        }
    }
    Ok(space)
}

/// Follows the search `name` until it ends, drawing its progress.
async fn follow(searches: &Api<ModelAutotune>, name: &str, model: &str) -> anyhow::Result<i32> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:24}] {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut shown = 0;
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        let Some(search) = searches.get_opt(name).await? else {
            bar.finish_and_clear();
            println!("modelautotune/{name} was deleted; {model} has its baseline settings again");
            return Ok(1);
        };
        let status = search.status.clone().unwrap_or_default();
        for step in status.steps.iter().skip(shown) {
            bar.suspend(|| println!("{}", step_line(step)));
        }
        shown = status.steps.len();
        if let Some(progress) = &status.progress {
            bar.set_length(u64::try_from(progress.total).unwrap_or(0));
            bar.set_position(u64::try_from(progress.completed).unwrap_or(0));
        }
        bar.set_message(progress_message(&status));
        match status.phase {
            Some(AutotunePhase::Succeeded) => {
                bar.finish_and_clear();
                println!("{}", outcome_line(&status));
                println!(
                    "log: configmap/{} (results.tsv, best_config.json, summary.json)",
                    log::name(model)
                );
                return Ok(0);
            }
            Some(AutotunePhase::Failed) => {
                bar.finish_and_clear();
                eprintln!("autotune failed: {}", summary_message(&status));
                return Ok(1);
            }
            _ => {}
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = &mut interrupt => {
                bar.suspend(|| {
                    print!("\nStop the search and restore {model}'s baseline settings? [y/N] ");
                    let _ = std::io::stdout().flush();
                });
                if confirmed().await {
                    searches.delete(name, &DeleteParams::default()).await?;
                    bar.set_message("restoring the baseline settings");
                    while searches.get_opt(name).await?.is_some() {
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    bar.finish_and_clear();
                    println!("search stopped; {model} has its baseline settings again");
                    return Ok(130);
                }
                bar.suspend(|| println!("the search goes on (it also goes on if you close this terminal)"));
                interrupt.set(tokio::signal::ctrl_c());
            }
        }
    }
}

/// Whether the answer read from stdin is yes.
async fn confirmed() -> bool {
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(answer, Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// One finished step, e.g. `step 2  maxNumSeqs=8  81.2 tok/s  +4.10%  accepted`.
pub fn step_line(step: &AutotuneStep) -> String {
    let tps = step.tokens_per_second.map_or("-".to_owned(), |t| format!("{t:.1} tok/s"));
    let change = step.improvement_percent.map_or(String::new(), |c| format!("  {c:+.2}%"));
    let mut line = format!(
        "step {:<2} {:<28} {tps}{change}  {}",
        step.step,
        step.config_delta,
        log::action(step.action)
    );
    if let Some(note) = step.quality_note.as_deref().or(step.error.as_deref()) {
        line.push_str(&format!(" ({note})"));
    }
    line
}

/// What the bar says: the candidate under way and the best so far.
fn progress_message(status: &ModelAutotuneStatus) -> String {
    let best = status.best_tokens_per_second.map_or("-".to_owned(), |t| format!("{t:.1} tok/s"));
    let current = match &status.current {
        Some(c) => match (&c.parameter, &c.value) {
            (Some(p), Some(v)) => {
                format!("step {}: {} ({:?})", c.step, space::delta(p, v), c.stage)
            }
            _ => format!("step {}: baseline ({:?})", c.step, c.stage),
        },
        None => "starting".to_owned(),
    };
    format!("{current} · best {best}")
}

fn summary_message(status: &ModelAutotuneStatus) -> String {
    status
        .observed
        .conditions
        .iter()
        .find(|c| c.type_ == "Succeeded")
        .map_or_else(String::new, |c| c.message.clone())
}

/// The last line of a finished search.
fn outcome_line(status: &ModelAutotuneStatus) -> String {
    format!("done: {}", summary_message(status))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: AutotuneArgs,
    }

    fn parse(line: &[&str]) -> AutotuneArgs {
        Cli::try_parse_from([&["keelson"], line].concat()).unwrap().args
    }

    #[test]
    fn defaults_follow_the_reference() {
        let spec = spec(&parse(&["qwen"])).unwrap();
        assert_eq!(spec.deployment_ref, "qwen");
        assert_eq!(spec.search_space, SearchSpace::default());
        assert_eq!(
            spec.quality_guard,
            QualityGuard { enabled: false, tolerance_percent: 10, repeats: 2 }
        );
        assert_eq!(
            spec.benchmark,
            AutotuneBenchmark { duration_seconds: 30, iterations: 5, warmup: 2 }
        );
        assert_eq!(spec.rollout_timeout_seconds, 300);
    }

    #[test]
    fn params_narrow_the_space() {
        let args = parse(&[
            "qwen",
            "--param",
            "maxNumSeqs=4, 8",
            "--param",
            "enforceEager=true,false",
            "--quality-guard",
            "--param",
            "speculativeConfig=off,ngram",
        ]);
        let space = spec(&args).unwrap().search_space;
        assert_eq!(space.max_num_seqs, [4, 8]);
        assert_eq!(space.enforce_eager, [true, false]);
        assert!(space.max_model_len.is_empty() && space.gpu_memory_utilization.is_empty());
        assert!(space.speculative_decoding);
        for (bad, message) in [
            ("maxNumSeqs=four", "is not a whole number"),
            ("gpuMemoryUtilization=0.99", "safety cap"),
            ("topK=1", "is not a searched parameter"),
            ("maxNumSeqs", "is not NAME=V1,V2"),
        ] {
            let error = spec(&parse(&["qwen", "--param", bad])).unwrap_err().to_string();
            assert!(error.contains(message), "{bad}: {error}");
        }
    }

    #[test]
    fn names_fit_the_controller_limit() {
        assert_eq!(prefix("qwen"), "qwen-autotune");
        assert!(prefix(&"m".repeat(80)).len() + 5 <= 52);
    }
}
