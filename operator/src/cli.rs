//! Command-line definition and dispatch.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// Keelson: a Kubernetes-native control plane for workflows, clinical integration and model serving.
#[derive(Debug, Parser)]
#[command(name = "keelson", version, about, propagate_version = true)]
pub struct Cli {
    /// Log lines as `text` or `json` (filter with `KEELSON_LOG`, e.g. `debug`).
    #[arg(long, global = true, env = "KEELSON_LOG_FORMAT", value_enum, default_value_t)]
    pub log_format: crate::telemetry::LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The `keelson` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run everything on this machine, with an embedded Kubernetes API server that kubectl uses.
    ///
    /// A local node runs the pods: Job pods (and pods annotated
    /// `keelson.dev/run-as-process: "true"`) run their command as local processes of your user;
    /// every other pod is simulated and becomes ready after --pod-ready-delay.
    ///
    /// Security: anyone holding the kubeconfig can therefore run commands on this machine by
    /// creating a Job. The API listens on loopback only unless --bind says otherwise; pass
    /// --no-process-pods to run no processes at all.
    Up(crate::up::UpArgs),
    /// Run the controllers and the REST API against a Kubernetes cluster (what the Helm chart
    /// runs).
    Operator(crate::operator::OperatorArgs),
    /// Print the OpenAPI 3.1 document of the HTTP API (as served at
    /// `/api/v1/openapi.json` and checked in as docs/openapi.json).
    Openapi,
    /// Manage the REST API's bearer tokens.
    Token {
        /// What to do.
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Print Keelson's CustomResourceDefinitions as YAML, or write one file per CRD.
    ///
    /// `keelson crds | kubectl apply -f -` installs them on a cluster.
    Crds {
        /// Write `<plural>.<group>.yaml` files into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// The weaver model preflight: `keelson weaver status [NAME]` shows which configured models
    /// the catalog serves and how to fix what is missing (exit 0 ok, 1 degraded, 2 error).
    Weaver(crate::weaver::WeaverArgs),
    /// Measure an OpenAI-compatible model server's decode speed (what the benchmark Job runs).
    ///
    /// Waits for the server's readiness paths, sends warm-up requests, then streams chat
    /// completions (--concurrency at once) until both --iterations and --min-duration are
    /// reached. tokensPerSecond is the per-request decode speed (Σ tokens after the first /
    /// Σ time from first to last token); the JSON output adds aggregateTokensPerSecond (Σ
    /// tokens / wall time). Writes the results ConfigMap unless --no-configmap. Exit codes: 0
    /// measured, 1 failed, 2 usage.
    Bench(crate::bench::BenchArgs),
    /// Benchmark a ModelDeployment again: recreate its benchmark Job and results ConfigMap and
    /// follow them to the new throughput figure.
    Benchmark(crate::benchmark::BenchmarkArgs),
    /// Search a vLLM ModelDeployment's settings for higher throughput (coordinate descent).
    ///
    /// Creates a ModelAutotune and follows it: each candidate is applied to the
    /// ModelDeployment, rolled out and benchmarked, kept when faster, else rolled back. The
    /// search runs in the controller, so closing the terminal does not stop it; Ctrl-C asks
    /// whether to stop it and restore the baseline settings (deleting the ModelAutotune does
    /// the same). Results: ConfigMap `<name>-autotune-log`. Exit codes: 0 finished, 1 failed,
    /// 2 usage, 130 stopped.
    Autotune(crate::autotune::AutotuneArgs),
    /// The model-serving commands: list, status, logs, delete, scale, cache, node, completions.
    #[command(flatten)]
    Models(crate::models::ModelCommand),
}

/// The `keelson token` subcommands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (shown only this once; only its hash is stored).
    Create(crate::token::CreateArgs),
}

fn block_on(future: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(future)
}

impl Cli {
    /// Runs the parsed command.
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Up(args) => block_on(crate::up::run(args)),
            Command::Operator(args) => block_on(crate::operator::run(args)),
            Command::Weaver(args) => crate::weaver::run(args),
            Command::Openapi => {
                let document = keelson_facades::server::openapi_json();
                writeln!(std::io::stdout().lock(), "{document}").context("writing to stdout")
            }
            Command::Token { command: TokenCommand::Create(args) } => {
                block_on(crate::token::create(args))
            }
            Command::Crds { out_dir: None } => {
                let yaml = crate::crds::render_all()?;
                std::io::stdout().lock().write_all(yaml.as_bytes()).context("writing to stdout")
            }
            Command::Crds { out_dir: Some(dir) } => {
                let written = crate::crds::write_files(&dir)?;
                eprintln!("wrote {} CRDs to {}", written.len(), dir.display());
                Ok(())
            }
            Command::Bench(args) => block_on(async { Ok(crate::bench::run(args).await?) }),
            Command::Benchmark(args) => block_on(crate::benchmark::run(args)),
            Command::Autotune(args) => block_on(async {
                match crate::autotune::run(args).await? {
                    0 => Ok(()),
                    code => std::process::exit(code),
                }
            }),
            Command::Models(command) => crate::models::run(command),
        }
    }
}
