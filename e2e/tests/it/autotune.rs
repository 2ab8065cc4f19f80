//! `keelson autotune` against `keelson up`, with a local OpenAI-compatible server whose
//! throughput and per-class decode speed follow the vLLM settings applied to the
//! ModelDeployment: the search converges, the quality guard vetoes a candidate that hides a
//! regression, and Ctrl-C restores the baseline.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use keelson_api_crds::serving::ModelDeployment;
use keelson_e2e::openai::{Behaviour, OpenAiServer, Rate};
use kube::Api;
use serde_json::Value;

use crate::bench::bench_wrapper;
use crate::support::{GPU_NODE, Keelson, eventually, qwen};

/// Speeds of the server for a `spec.vllm`: (plain requests, `lookup` class, `novel` class).
type Speeds = fn(&Value) -> (f64, f64, f64);

/// Keeps the server's speeds in step with the ModelDeployment's `spec.vllm`, as a real vLLM
/// restarted with those flags would be; stops when dropped.
struct Settings {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Settings {
    fn follow(k: &Keelson, model: &str, rates: [Rate; 3], speeds: Speeds) -> Settings {
        let stop = Arc::new(AtomicBool::new(false));
        let (data_dir, model, stopped) = (k.data_dir(), model.to_owned(), stop.clone());
        let thread = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let client = keelson_e2e::client(&data_dir).await;
                let models: Api<ModelDeployment> = Api::namespaced(client, "default");
                while !stopped.load(Ordering::Relaxed) {
                    if let Ok(Some(md)) = models.get_opt(&model).await {
                        let vllm = serde_json::to_value(&md.spec.vllm).unwrap_or_default();
                        let (plain, lookup, novel) = speeds(&vllm);
                        rates[0].set(plain);
                        rates[1].set(lookup);
                        rates[2].set(novel);
                    }
                    tokio::time::sleep(Duration::from_millis(40)).await;
                }
            });
        });
        Settings { stop, thread: Some(thread) }
    }
}

impl Drop for Settings {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server with `lookup` and `novel` classes, recognised by the probes' prompts.
fn server() -> (OpenAiServer, [Rate; 3]) {
    let (lookup, novel) = (Rate::new(60.0), Rate::new(72.0));
    let behaviour = Behaviour::new("qwen", 100.0)
        .class(|p| p.contains("SKU-001"), lookup.clone())
        .class(|p| p.contains("lighthouse"), novel.clone());
    let plain = behaviour.rate.clone();
    (OpenAiServer::start(behaviour), [plain, lookup, novel])
}

fn model(vllm: &str) -> String {
    let benchmark =
        "  benchmark: {warmupIterations: 0, iterations: 2, batchSize: 32, minDuration: 0s}";
    qwen(&format!("{benchmark}\n  vllm: {vllm}\n"))
}

/// `keelson up` with one GPU node and the benchmark command pointed at `server`.
fn keelson_for(server: &OpenAiServer, shim: &std::path::Path) -> Keelson {
    let wrapper = bench_wrapper(shim, server);
    let k = Keelson::up_with_env(&GPU_NODE, &[("KEELSON_BENCH_COMMAND", &wrapper)]);
    std::fs::copy(k.data_dir().join("kubeconfig"), shim.join("kubeconfig")).unwrap();
    k
}

/// `keelson autotune qwen` with quick benchmarks and `args`, its output read as it comes.
struct Autotune {
    child: Child,
    output: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Autotune {
    fn start(k: &Keelson, args: &[&str]) -> Autotune {
        let mut child = Command::new(keelson_e2e::keelson_binary())
            .args(["autotune", "qwen", "-n", "default", "--bench-duration", "1s"])
            .args(["--bench-iterations", "2", "--bench-warmup", "0", "--kubeconfig"])
            .arg(k.data_dir().join("kubeconfig"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let sink = output.clone();
        // Raw reads, not lines: the Ctrl-C question waits on its line for the answer.
        let reader = std::thread::spawn(move || {
            let (mut stdout, mut buffer) = (stdout, [0u8; 4096]);
            while let Ok(n @ 1..) = stdout.read(&mut buffer) {
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Autotune { child, output, reader: Some(reader) }
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits for the command to end; its exit code and output.
    fn wait(mut self, secs: u64) -> (i32, String) {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("autotune did not end in {secs}s:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (code, self.output())
    }
}

fn log_data(k: &Keelson, key: &str) -> String {
    let escaped = key.replace('.', "\\.");
    k.jsonpath("configmap", "qwen-autotune-log", &format!("{{.data.{escaped}}}"))
}

/// Throughput peaks at maxNumSeqs=4 with enforceEager=false; the classes follow along.
fn converging(vllm: &Value) -> (f64, f64, f64) {
    let seqs = match vllm["maxNumSeqs"].as_i64() {
        Some(2) => 1.2,
        Some(4) => 1.6,
        Some(8) => 1.4,
        _ => 1.0,
    };
    let eager = match vllm["enforceEager"].as_bool() {
        Some(true) => 0.8,
        Some(false) => 1.25,
        None => 1.0,
    };
    let plain = 100.0 * seqs * eager;
    (plain, plain, plain)
}

#[test]
fn autotune_converges_to_the_fastest_settings_and_ctrl_c_restores_the_baseline() {
    let (server, rates) = server();
    let shim = tempfile::tempdir().unwrap();
    let k = keelson_for(&server, shim.path());
    k.apply("qwen.yaml", &model("{dtype: half}"));
    let _settings = Settings::follow(&k, "qwen", rates, converging);
    eventually(60, "qwen Running", || {
        k.jsonpath("modeldeployment", "qwen", "{.status.phase}") == "Running"
    });

    let search =
        Autotune::start(&k, &["--param", "maxNumSeqs=2,4,8", "--param", "enforceEager=true,false"]);
    let (code, out) = search.wait(240);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("speculativeConfig is left out"), "not in this space: {out}");
    for line in [
        "baseline",
        "maxNumSeqs=4",
        "accepted",
        "rejected",
        "done: best ",
        "log: configmap/qwen-autotune-log",
    ] {
        assert!(out.contains(line), "{line:?} in\n{out}");
    }
    // The best settings are applied; the others the user set are left alone.
    let vllm = k.jsonpath("modeldeployment", "qwen", "{.spec.vllm}");
    let vllm: Value = serde_json::from_str(&vllm).unwrap();
    assert_eq!(vllm["maxNumSeqs"], 4, "{vllm}");
    assert_eq!(vllm["enforceEager"], false, "{vllm}");
    assert_eq!(vllm["dtype"], "half");
    assert!(vllm.get("speculativeConfig").is_none());

    let tsv = log_data(&k, "results.tsv");
    let rows: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(
        rows[0].join(" "),
        "step timestamp action tps improvement config_delta error quality_note"
    );
    assert_eq!(rows.len(), 1 + 1 + 5, "baseline and five candidates:\n{tsv}");
    let actions: Vec<(&str, &str)> = rows[1..].iter().map(|r| (r[5], r[2])).collect();
    assert_eq!(
        actions,
        [
            ("(no change)", "baseline"),
            ("maxNumSeqs=2", "accepted"),
            ("maxNumSeqs=4", "accepted"),
            ("maxNumSeqs=8", "rejected"),
            ("enforceEager=true", "rejected"),
            ("enforceEager=false", "accepted"),
        ],
        "{tsv}"
    );
    let summary: Value = serde_json::from_str(&log_data(&k, "summary.json")).unwrap();
    assert_eq!(summary["acceptedSteps"], 3);
    assert_eq!(summary["totalSteps"], 5);
    let improvement = summary["improvementPct"].as_f64().unwrap();
    assert!((improvement - 100.0).abs() < 10.0, "1.6 × 1.25 = +100 %: {summary}");
    let best: Value = serde_json::from_str(&log_data(&k, "best_config.json")).unwrap();
    assert_eq!(best, serde_json::json!({ "maxNumSeqs": 4, "enforceEager": false }));
    let searches = k.ok(&["get", "modelautotune", "-o", "jsonpath={.items[*].status.phase}"]);
    assert_eq!(searches, "Succeeded");
    let under_way = k.ok(&["get", "modelautotune", "-o", "jsonpath={.items[*].status.current}"]);
    assert_eq!(under_way, "", "a finished search has no experiment under way");

    // Ctrl-C in the middle of a second search, answered yes: the search is deleted and the
    // settings it started from come back.
    let args = ["--param", "maxNumSeqs=1,16,32", "--param", "speculativeConfig=off,ngram"];
    let mut search = Autotune::start(&k, &args);
    eventually(120, "a candidate applied", || {
        k.jsonpath("modeldeployment", "qwen", "{.spec.vllm.maxNumSeqs}") != "4"
    });
    Command::new("kill").args(["-s", "INT", &search.child.id().to_string()]).status().unwrap();
    eventually(10, "the question", || search.output().contains("Stop the search and restore"));
    search.child.stdin.as_mut().unwrap().write_all(b"y\n").unwrap();
    let (code, out) = search.wait(60);
    assert_eq!(code, 130, "{out}");
    assert!(out.contains("search stopped; qwen has its baseline settings again"), "{out}");
    let notice = "note: the quality guard is off, so speculativeConfig is left out of the search";
    assert!(out.contains(notice), "{out}");
    assert!(!out.contains("speculativeConfig=ngram"), "{out}");
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.vllm.maxNumSeqs}"), "4");
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.vllm.enforceEager}"), "false");
    assert_eq!(
        k.ok(&["get", "modelautotune", "-o", "name"]).lines().count(),
        1,
        "only the first search is left"
    );
}

/// maxNumSeqs=8 is faster overall but halves novel decoding; n-gram speculation is a bit
/// faster and doubles lookup decoding.
fn goodhart(vllm: &Value) -> (f64, f64, f64) {
    let (mut plain, mut lookup, mut novel) = (100.0, 60.0, 72.0);
    if vllm["maxNumSeqs"].as_i64() == Some(8) {
        (plain, novel) = (130.0, 36.0);
    }
    if vllm["speculativeConfig"].is_object() {
        (plain, lookup) = (plain * 1.1, lookup * 2.0);
    }
    (plain, lookup, novel)
}

#[test]
fn the_quality_guard_vetoes_a_faster_candidate_that_halves_novel_decoding() {
    let (server, rates) = server();
    let shim = tempfile::tempdir().unwrap();
    let k = keelson_for(&server, shim.path());
    k.apply("qwen.yaml", &model("{maxNumSeqs: 4}"));
    let _settings = Settings::follow(&k, "qwen", rates, goodhart);
    eventually(60, "qwen Running", || {
        k.jsonpath("modeldeployment", "qwen", "{.status.phase}") == "Running"
    });

    let args = [
        "--quality-guard",
        "--quality-repeats",
        "1",
        "--param",
        "maxNumSeqs=8",
        "--param",
        "speculativeConfig=off,ngram",
    ];
    let (code, out) = Autotune::start(&k, &args).wait(180);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("speculativeConfig is left out"), "{out}");
    let tsv = log_data(&k, "results.tsv");
    let vetoed = tsv.lines().find(|l| l.contains("maxNumSeqs=8")).unwrap();
    assert!(vetoed.contains("\tquality_vetoed\t"), "{tsv}");
    let note = vetoed.rsplit('\t').next().unwrap();
    let regressed = note.strip_prefix("class \"novel\" regressed ").unwrap();
    let regressed: f64 = regressed.split('%').next().unwrap().parse().unwrap();
    assert!((regressed - 50.0).abs() < 5.0, "{note}");
    assert!(note.contains("% (tolerance 10.0%) while aggregate moved +"), "{note}");
    let ngram = tsv.lines().find(|l| l.contains("speculativeConfig=ngram")).unwrap();
    assert!(ngram.contains("\taccepted\t"), "{tsv}");
    // The vetoed setting is not applied; speculation is, with the spec's n-gram values.
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.vllm.maxNumSeqs}"), "4");
    let speculative = k.jsonpath("modeldeployment", "qwen", "{.spec.vllm.speculativeConfig}");
    let speculative: Value = serde_json::from_str(&speculative).unwrap();
    assert_eq!(
        speculative,
        serde_json::json!({"method": "ngram", "numSpeculativeTokens": 7, "promptLookupMax": 6, "promptLookupMin": 1})
    );

    // Refusals: an unknown model, -A, and a search of a deployment that does not exist.
    let keelson = |args: &[&str]| {
        let kubeconfig = k.data_dir().join("kubeconfig");
        let output = Command::new(keelson_e2e::keelson_binary())
            .args(args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .output()
            .unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (code, stderr) = keelson(&["autotune", "nope", "-n", "default"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("ModelDeployment \"nope\" not found in namespace \"default\""),
        "{stderr}"
    );
    let (code, stderr) = keelson(&["autotune", "qwen", "-A"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("pass -n NAMESPACE, not -A"), "{stderr}");
    k.apply("orphan.yaml", "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelAutotune\nmetadata: {name: orphan}\nspec: {deploymentRef: gone}\n");
    let reason = || k.jsonpath("modelautotune", "orphan", "{.status.conditions[0].reason}");
    eventually(30, "the orphan search to fail", || reason() == "DeploymentNotFound");
    assert_eq!(k.jsonpath("modelautotune", "orphan", "{.status.phase}"), "Failed");
}
