//! The results: the ConfigMap the controller reads back, the JSON and the summary line.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::args::BenchArgs;
use super::measure::Summary;
use keelson_controllers::serving::benchmark::QUALITY_KEY_PREFIX;

/// Field manager of the results ConfigMap.
pub const FIELD_MANAGER: &str = "keelson-bench";

/// A finished benchmark: what was asked, what was measured, and when.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// Model name sent in requests.
    pub model: String,
    /// Backend name.
    pub backend: String,
    /// Warm-up requests.
    pub warmup_iterations: u32,
    /// `--iterations`.
    pub iterations: u32,
    /// `--batch-size`.
    pub batch_size: u32,
    /// `--min-duration` as given.
    pub min_duration: String,
    /// Requests in flight at once.
    pub concurrency: u32,
    /// The measured phase.
    pub summary: Summary,
    /// Decode tokens per second per workload class, when quality was probed.
    pub quality: BTreeMap<String, f64>,
    /// When the measurement ended (RFC 3339, whole seconds).
    pub timestamp: jiff::Timestamp,
}

impl Results {
    /// Results of a run with `args` that measured `summary`, ending now.
    pub fn new(args: &BenchArgs, summary: Summary) -> Results {
        Results {
            model: args.model.clone(),
            backend: args.backend.as_str().to_owned(),
            warmup_iterations: args.warmup_iterations,
            iterations: args.iterations,
            batch_size: args.batch_size,
            min_duration: args.min_duration.text.clone(),
            concurrency: args.concurrency,
            summary,
            quality: BTreeMap::new(),
            timestamp: jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .unwrap_or_else(|_| jiff::Timestamp::now()),
        }
    }

    /// The data of the results ConfigMap: exactly the keys the controller and the reference
    /// know, every value a string.
    pub fn configmap_data(&self) -> BTreeMap<String, String> {
        let s = &self.summary;
        [
            ("tokensPerSecond", format!("{:.2}", s.tokens_per_second)),
            ("model", self.model.clone()),
            ("backend", self.backend.clone()),
            ("warmupIterations", self.warmup_iterations.to_string()),
            ("iterations", self.iterations.to_string()),
            ("batchSize", self.batch_size.to_string()),
            ("minDuration", self.min_duration.clone()),
            ("completionTokens", s.completion_tokens.to_string()),
            ("durationSeconds", format!("{:.3}", s.duration_seconds)),
            ("samples", s.samples.to_string()),
            ("timestamp", self.timestamp.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .chain(
            self.quality
                .iter()
                .map(|(class, tps)| (format!("{QUALITY_KEY_PREFIX}{class}"), format!("{tps:.2}"))),
        )
        .collect()
    }

    /// The results as JSON for people and scripts: the ConfigMap's keys with numbers as
    /// numbers, plus `aggregateTokensPerSecond` and `concurrency`.
    pub fn json(&self) -> Value {
        let s = &self.summary;
        json!({
            "tokensPerSecond": round(s.tokens_per_second, 2),
            "aggregateTokensPerSecond": round(s.aggregate_tokens_per_second, 2),
            "model": self.model,
            "backend": self.backend,
            "warmupIterations": self.warmup_iterations,
            "iterations": self.iterations,
            "batchSize": self.batch_size,
            "minDuration": self.min_duration,
            "concurrency": self.concurrency,
            "completionTokens": s.completion_tokens,
            "durationSeconds": round(s.duration_seconds, 3),
            "samples": s.samples,
            "timestamp": self.timestamp.to_string(),
            "quality": self.quality.iter().map(|(c, v)| (c.clone(), json!(round(*v, 2)))).collect::<serde_json::Map<_, _>>(),
        })
    }

    /// One line for people, e.g. `qwen (vllm): 412.3 tokens/s per request, 1534.0 tokens/s
    /// aggregate over 12 requests in 30.1s at concurrency 4`.
    pub fn summary_line(&self) -> String {
        let s = &self.summary;
        let mut line = format!(
            "{} ({}): {:.1} tokens/s per request, {:.1} tokens/s aggregate over {} requests in {:.1}s at concurrency {}",
            self.model,
            self.backend,
            s.tokens_per_second,
            s.aggregate_tokens_per_second,
            s.samples,
            s.duration_seconds,
            self.concurrency
        );
        if s.unstreamed > 0 {
            line.push_str(&format!(" ({} not streamed: timed by wall time)", s.unstreamed));
        }
        line
    }

    /// The results ConfigMap `name` in `namespace`.
    pub fn configmap(&self, name: &str, namespace: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(self.configmap_data()),
            ..ConfigMap::default()
        }
    }
}

/// Writes the results ConfigMap with server-side apply (field manager `keelson-bench`).
pub async fn write(
    client: &kube::Client,
    results: &Results,
    name: &str,
    namespace: &str,
) -> kube::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = results.configmap(name, namespace);
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&cm)).await?;
    Ok(())
}

fn round(value: f64, places: i32) -> f64 {
    let factor = 10f64.powi(places);
    (value * factor).round() / factor
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Results {
        Results {
            model: "qwen".into(),
            backend: "vllm".into(),
            warmup_iterations: 2,
            iterations: 5,
            batch_size: 128,
            min_duration: "30s".into(),
            concurrency: 1,
            summary: Summary {
                tokens_per_second: 412.345,
                aggregate_tokens_per_second: 398.0,
                completion_tokens: 1280,
                duration_seconds: 30.1234,
                samples: 10,
                unstreamed: 0,
            },
            quality: BTreeMap::new(),
            timestamp: "2026-05-01T12:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn quality_probes_add_a_key_per_class_that_the_controller_reads() {
        let mut results = results();
        results.quality = BTreeMap::from([("lookup".into(), 80.0), ("novel".into(), 41.256)]);
        let cm = results.configmap("m-step-1", "default");
        let read = keelson_controllers::serving::benchmark::quality(&cm);
        assert_eq!(read, BTreeMap::from([("lookup".into(), 80.0), ("novel".into(), 41.26)]));
        assert_eq!(results.json()["quality"]["novel"], 41.26);
    }

    #[test]
    fn the_configmap_holds_exactly_the_reference_keys() {
        let data = results().configmap_data();
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        let mut expected = [
            "tokensPerSecond",
            "model",
            "backend",
            "warmupIterations",
            "iterations",
            "batchSize",
            "minDuration",
            "completionTokens",
            "durationSeconds",
            "samples",
            "timestamp",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(data["tokensPerSecond"], "412.35");
        assert_eq!(data["durationSeconds"], "30.123");
        assert_eq!(data["minDuration"], "30s");
        assert_eq!(data["timestamp"], "2026-05-01T12:00:00Z");
        // What the controller reads back.
        let cm = results().configmap("qwen-benchmark-results", "models");
        assert_eq!(keelson_controllers::serving::benchmark::tokens_per_second(&cm), Some(412.35));
    }

    #[test]
    fn json_and_summary() {
        let r = results();
        let json = r.json();
        assert_eq!(json["tokensPerSecond"], 412.35);
        assert_eq!(json["aggregateTokensPerSecond"], 398.0);
        assert_eq!(json["samples"], 10);
        assert_eq!(
            r.summary_line(),
            "qwen (vllm): 412.3 tokens/s per request, 398.0 tokens/s aggregate over 10 requests in 30.1s at concurrency 1"
        );
    }
}
