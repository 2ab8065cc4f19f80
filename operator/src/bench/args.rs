//! The flags of `keelson bench`: those the benchmark Job passes, and a few for people.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of `keelson bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Base URL of the model server, e.g. `http://qwen.models.svc:8000`.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The model name sent in requests (the served model name).
    #[arg(long)]
    pub model: String,
    /// The serving backend: decides the readiness paths and the requests.
    #[arg(long, value_enum, default_value = "vllm")]
    pub backend: Backend,
    /// The results ConfigMap to write (server-side apply, in --namespace).
    #[arg(long, value_name = "NAME")]
    pub configmap: Option<String>,
    /// Requests sent and discarded before measuring.
    #[arg(long, default_value_t = 2)]
    pub warmup_iterations: u32,
    /// Measured requests, at least.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Tokens asked for per request (`max_tokens`).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch_size: u32,
    /// Measure for at least this long, e.g. `30s` or `2m`.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = given_duration)]
    pub min_duration: GivenDuration,
    /// After measuring, probe the decode speed of each workload class (`lookup`, `novel`) this
    /// many times and record the medians (what the autotune quality guard compares).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub quality_repeats: u32,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// How long to wait for the model server to answer its readiness paths.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = duration)]
    pub cold_start_timeout: Duration,
    /// How often to ask whether the model server is ready.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration)]
    pub poll_interval: Duration,
    /// Namespace of the results ConfigMap: `POD_NAMESPACE`, else the kubeconfig's.
    #[arg(short = 'n', long, env = "POD_NAMESPACE")]
    pub namespace: Option<String>,
    /// The kubeconfig of the cluster (default: `KUBECONFIG`, `~/.kube/config` or in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Do not write the results ConfigMap, only print the results.
    #[arg(long)]
    pub no_configmap: bool,
    /// How to print the results: a summary line, or JSON on stdout.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Output,
    /// Bearer token of the model server or gateway.
    #[arg(long, env = "MASTER_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}

/// A duration together with how it was written (the results repeat `--min-duration` as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenDuration {
    /// As written, e.g. `2m`.
    pub text: String,
    /// Its value.
    pub value: Duration,
}

/// The serving backends `keelson bench` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// vLLM: OpenAI-compatible chat completions.
    Vllm,
    /// MLC LLM: OpenAI-compatible chat completions.
    #[value(name = "mlc-llm")]
    MlcLlm,
    /// llama.cpp's server: OpenAI-compatible chat completions.
    Llamacpp,
    /// Text embeddings inference: `POST /embed`, one embedding counted per request.
    Tei,
    /// A diffusers server: `POST /v1/images/generations`, one image counted per request.
    Diffusers,
}

impl Backend {
    /// The name as on the command line and in the results.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Vllm => "vllm",
            Backend::MlcLlm => "mlc-llm",
            Backend::Llamacpp => "llamacpp",
            Backend::Tei => "tei",
            Backend::Diffusers => "diffusers",
        }
    }

    /// Whether the backend streams generated tokens (an OpenAI-compatible text generator).
    pub fn generates_text(self) -> bool {
        matches!(self, Backend::Vllm | Backend::MlcLlm | Backend::Llamacpp)
    }
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// One summary line.
    Text,
    /// The results as one JSON object on stdout (the summary line goes to stderr).
    Json,
}

/// A duration such as `30s`, `2m`, `1m30s` or `500ms`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration =
        text.parse().map_err(|e| format!("{text:?} is not a duration like 30s or 2m: {e}"))?;
    Duration::try_from(parsed).map_err(|_| format!("{text:?} must not be negative"))
}

/// [`duration`], keeping the text.
fn given_duration(text: &str) -> Result<GivenDuration, String> {
    Ok(GivenDuration { text: text.trim().to_owned(), value: duration(text)? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(duration("soon").is_err());
        assert!(duration("-1s").is_err());
    }
}
