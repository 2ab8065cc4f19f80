//! `keelson bench` against the OpenAI-compatible test server: it reports the speed the server
//! was set to produce, waits for a server still loading, writes the results ConfigMap; and
//! `keelson benchmark <name>` measures a ModelDeployment again, its Job running the real
//! `keelson bench`.

use std::process::{Command, Output};
use std::time::Duration;

use keelson_e2e::openai::{Behaviour, OpenAiServer};
use serde_json::Value;

use crate::support::{GPU_NODE, Keelson, eventually, qwen};

/// Runs `keelson <args>`.
fn keelson(args: &[&str]) -> Output {
    Command::new(keelson_e2e::keelson_binary())
        .args(args)
        .env("KEELSON_LOG", "warn")
        .output()
        .unwrap()
}

/// `keelson bench` against `server` with `--no-configmap -o json` and `extra`: its JSON.
fn bench_json(server: &OpenAiServer, extra: &[&str]) -> Value {
    let mut args = vec!["bench", "--endpoint", &server.url, "--model", "qwen", "--backend", "vllm"];
    args.extend(["--no-configmap", "-o", "json", "--poll-interval", "100ms"]);
    args.extend(extra);
    let output = keelson(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "keelson bench failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

fn within(actual: f64, expected: f64, percent: f64) -> bool {
    (actual - expected).abs() <= expected * percent / 100.0
}

#[test]
fn bench_reports_the_decode_speed_the_server_produces() {
    let server = OpenAiServer::start(Behaviour::new("qwen", 400.0));
    let json = bench_json(
        &server,
        &[
            "--warmup-iterations",
            "1",
            "--min-duration",
            "2s",
            "--iterations",
            "5",
            "--batch-size",
            "64",
        ],
    );
    let tps = json["tokensPerSecond"].as_f64().unwrap();
    assert!(within(tps, 400.0, 5.0), "{json}");
    // 64 tokens at 400/s take 160 ms: about 12 requests fill the 2 s, plus the warm-up.
    let samples = json["samples"].as_u64().unwrap();
    assert!(samples >= 5, "{json}");
    assert_eq!(server.requests(), samples + 1);
    assert_eq!(json["completionTokens"].as_u64(), Some(64 * samples));
    assert!(json["durationSeconds"].as_f64().unwrap() >= 2.0, "{json}");
    assert_eq!((json["batchSize"].as_u64(), json["minDuration"].as_str()), (Some(64), Some("2s")));
}

#[test]
fn bench_with_concurrency_reports_per_request_speed_and_the_aggregate() {
    let server = OpenAiServer::start(Behaviour::new("qwen", 400.0));
    let json = bench_json(
        &server,
        &[
            "--warmup-iterations",
            "0",
            "--min-duration",
            "2s",
            "--iterations",
            "8",
            "--batch-size",
            "64",
            "--concurrency",
            "4",
        ],
    );
    // Each request still decodes at 400/s; four at once put out about four times as much.
    let tps = json["tokensPerSecond"].as_f64().unwrap();
    assert!(within(tps, 400.0, 5.0), "{json}");
    let aggregate = json["aggregateTokensPerSecond"].as_f64().unwrap();
    assert!(aggregate > 3.0 * 400.0 && aggregate < 4.0 * 400.0 * 1.05, "{json}");
    assert_eq!(json["concurrency"].as_u64(), Some(4));
}

#[test]
fn bench_waits_for_a_loading_server_and_sends_the_key() {
    let server = OpenAiServer::start(
        Behaviour::new("qwen", 800.0).not_ready_for(Duration::from_millis(800)).api_key("sk-test"),
    );
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["bench", "--endpoint", &server.url, "--model", "qwen", "--no-configmap"])
        .args(["--warmup-iterations", "0", "--iterations", "2", "--min-duration", "0s"])
        .args(["--batch-size", "16", "--poll-interval", "200ms"])
        .env("MASTER_KEY", "sk-test")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("waiting for") && stderr.contains("HTTP 503"), "{stderr}");
    assert!(!stderr.contains("sk-test"), "the key is never printed: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("tokens/s per request"), "{stdout}");
}

#[test]
fn bench_fails_clearly_and_usage_errors_exit_2() {
    // A wrong key: 401 is not a status of a server still starting.
    let server = OpenAiServer::start(Behaviour::new("qwen", 400.0).api_key("right"));
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["bench", "--endpoint", &server.url, "--model", "qwen", "--no-configmap"])
        .env("MASTER_KEY", "wrong")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/health answered HTTP 401"), "{stderr}");
    // Nothing listens: the cold-start timeout ends the wait.
    let port = keelson_e2e::bench::free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let output = keelson(&[
        "bench",
        "--endpoint",
        &endpoint,
        "--model",
        "m",
        "--no-configmap",
        "--cold-start-timeout",
        "1s",
        "--poll-interval",
        "200ms",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("was not ready after 1s"), "{stderr}");
    let output = keelson(&["bench", "--endpoint", &endpoint, "--model", "m", "--batch-size", "0"]);
    assert_eq!(output.status.code(), Some(2));
    let output =
        keelson(&["bench", "--endpoint", &endpoint, "--model", "m", "--backend", "ollama"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bench_writes_the_results_configmap() {
    let k = Keelson::up();
    let server = OpenAiServer::start(Behaviour::new("qwen", 400.0));
    let kubeconfig = k.data_dir().join("kubeconfig");
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["bench", "--endpoint", &server.url, "--model", "qwen", "--backend", "vllm"])
        .args(["--configmap", "qwen-benchmark-results", "--warmup-iterations", "0"])
        .args(["--iterations", "3", "--batch-size", "32", "--min-duration", "0s"])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("POD_NAMESPACE", "default")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let data: Value =
        serde_json::from_str(&k.jsonpath("configmap", "qwen-benchmark-results", "{.data}"))
            .unwrap();
    let mut keys: Vec<&str> = data.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "backend",
            "batchSize",
            "completionTokens",
            "durationSeconds",
            "iterations",
            "minDuration",
            "model",
            "samples",
            "timestamp",
            "tokensPerSecond",
            "warmupIterations",
        ]
    );
    let tps: f64 = data["tokensPerSecond"].as_str().unwrap().parse().unwrap();
    assert!(within(tps, 400.0, 5.0), "{data}");
    assert_eq!(data["samples"], "3");
    assert_eq!(data["completionTokens"], "96");
    assert_eq!(data["minDuration"], "0s");
    // RFC 3339 in UTC, whole seconds: 2026-05-01T12:00:00Z.
    let timestamp = data["timestamp"].as_str().unwrap();
    assert!(
        timestamp.len() == 20 && timestamp.ends_with('Z') && timestamp.as_bytes()[10] == b'T',
        "{data}"
    );
    let managers =
        k.jsonpath("configmap", "qwen-benchmark-results", "{.metadata.managedFields[*].manager}");
    assert!(managers.contains("keelson-bench"), "{managers}");
}

/// The program the benchmark Job runs, written into `dir`: the real `keelson bench`, pointed at
/// `server` (the Job's endpoint is the model's in-cluster Service, which does not resolve on
/// this machine) and at `dir/kubeconfig` (a local process pod has no service account).
pub fn bench_wrapper(dir: &std::path::Path, server: &OpenAiServer) -> String {
    let script = format!(
        "#!/bin/sh\nexport KUBECONFIG='{kubeconfig}'\nprev=\nfor arg do\n  shift\n  [ \"$prev\" = --endpoint ] && arg='{url}'\n  set -- \"$@\" \"$arg\"\n  prev=$arg\ndone\nexec '{keelson}' \"$@\"\n",
        kubeconfig = dir.join("kubeconfig").display(),
        url = server.url,
        keelson = keelson_e2e::keelson_binary().display(),
    );
    let path = dir.join("bench.sh");
    std::fs::write(&path, script).unwrap();
    let _ = Command::new("chmod").arg("+x").arg(&path).status();
    path.display().to_string()
}

#[test]
fn benchmark_measures_a_model_again_and_prints_the_new_figure() {
    let server = OpenAiServer::start(Behaviour::new("qwen", 400.0));
    let shim = tempfile::tempdir().unwrap();
    let wrapper = bench_wrapper(shim.path(), &server);
    let k = Keelson::up_with_env(&GPU_NODE, &[("KEELSON_BENCH_COMMAND", &wrapper)]);
    std::fs::copy(k.data_dir().join("kubeconfig"), shim.path().join("kubeconfig")).unwrap();
    let benchmark =
        "  benchmark: {warmupIterations: 0, iterations: 3, batchSize: 32, minDuration: 0s}\n";
    k.apply("qwen.yaml", &qwen(benchmark));
    // The first benchmark runs once the model is Ready.
    let tps = || k.jsonpath("modeldeployment", "qwen", "{.status.tokensPerSecond}");
    eventually(60, "the first figure", || !tps().is_empty());
    // What this test checks is that the figure follows the server from 400 to 200 tokens/s;
    // the accuracy of one measurement is the other tests' subject, so a 10 % margin keeps a
    // busy machine's scheduling delays out of it.
    let first: f64 = tps().parse().unwrap();
    assert!(within(first, 400.0, 10.0), "{first}");

    server.behaviour().rate.set(200.0);
    let kubeconfig = k.data_dir().join("kubeconfig");
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["benchmark", "qwen", "-n", "default", "--timeout", "60s", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    for line in [
        "qwen: was ",
        "job/qwen-benchmark deleted",
        "configmap/qwen-benchmark-results deleted",
        "job/qwen-benchmark",
    ] {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
    let last = stdout.lines().last().unwrap();
    let figure: f64 =
        last.strip_prefix("qwen: ").and_then(|f| f.strip_suffix("/s")).unwrap().parse().unwrap();
    assert!(within(figure, 200.0, 10.0), "{stdout}");
    let now: f64 = tps().parse().unwrap();
    assert!(within(now, 200.0, 10.0), "{now}");

    // Unknown names fail clearly.
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["benchmark", "nope", "-n", "default", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ModelDeployment \"nope\" not found in namespace \"default\""),
        "{stderr}"
    );
}
