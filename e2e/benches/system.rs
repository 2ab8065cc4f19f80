//! Whole-system benchmarks of `keelson up` (release build), each reported with its baseline
//! from the same run:
//!
//! - start-up: spawn to a served `/readyz`, against spawning `keelson --version`;
//! - memory: idle RSS, and RSS holding 10,000 custom resources;
//! - writes: creates per second through HTTP with 16 concurrent clients, against raw SQLite
//!   inserts of the same bytes (one transaction each, WAL, `synchronous=NORMAL`, as the store);
//!   the clients are `kube::Client`s in this process, then 16 connections of `wrk` (Debian
//!   package `wrk`), a separate and lighter load generator; each beside the floor under every
//!   create, as many SelfSubjectReviews (authenticated, routed, parsed and answered, not stored);
//! - watch latency: from sending an update to receiving its watch event, p50 and p99;
//! - the local node: 200 trivial Jobs (`sh -c true`) created at once until all are complete,
//!   against spawning the same 200 processes directly;
//! - the serving controllers: 1,000 ModelDeployments applied at once until all are Ready, the
//!   API writes each costs, and what a restart's full reconcile pass rewrites (nothing, ideally);
//! - the workflow controllers: a run of a 100-node fan-out/fan-in flow of trivial steps from
//!   start to success, against the same 100 Jobs created directly.
//!
//! Run: `cargo build --release -p keelson && cargo bench -p keelson-e2e --bench system`; name
//! sections after `--` to run only those (`api`, `jobs`, `serving`, `workflows`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use keelson_api_crds::serving::ModelDeployment;
use keelson_api_crds::workflows::{Agent, AgentSpec, Run, RunPhase};
use keelson_e2e::bench::{Up, percentile, spawn_up, spawn_up_in, until_ready, wrk};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};

const RESOURCES: usize = 10_000;
const CLIENTS: usize = 16;
const LATENCY_SAMPLES: usize = 1_000;
const JOBS: usize = 200;
const MODELS: usize = 1_000;
const FLOW_NODES: usize = 100;
/// The issue's goal for creates/s against raw SQLite inserts of the same bytes.
const RATIO_GOAL: f64 = 0.5;

/// Whether the command line selects benchmark section `name` (all when it names none).
fn selected(name: &str) -> bool {
    let named: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    named.is_empty() || named.iter().any(|n| n == name)
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

/// CPU time (user + system) a process has used, from `/proc/<pid>/stat`.
fn cpu_time(pid: &str) -> Duration {
    stat_ticks(pid, 11)
}

/// CPU time (user + system) of this process's children that have been waited for.
fn children_cpu_time() -> Duration {
    stat_ticks("self", 13)
}

/// The sum of two adjacent clock-tick fields of `/proc/<pid>/stat` as a duration; `field` counts
/// from the state, the first field after the parenthesised command name.
fn stat_ticks(pid: &str, field: usize) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 =
        fields[field].parse::<u64>().unwrap() + fields[field + 1].parse::<u64>().unwrap();
    Duration::from_secs_f64(ticks as f64 / 100.0)
}

fn agent(i: usize) -> Agent {
    Agent {
        metadata: ObjectMeta { name: Some(format!("agent-{i:05}")), ..Default::default() },
        spec: AgentSpec {
            image: "busybox:1.36".into(),
            command: vec!["sh".into(), "-c".into()],
            args: vec![format!("echo step {i}")],
            capabilities: vec!["bench".into()],
            version: Some("1.0.0".into()),
            ..Default::default()
        },
        status: None,
    }
}

/// Raw SQLite inserts of `rows`, one transaction each, with the store's settings.
fn sqlite_inserts_per_second(dir: &Path, rows: &[Vec<u8>]) -> f64 {
    let db = rusqlite::Connection::open(dir.join("baseline.db")).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE log (revision INTEGER PRIMARY KEY, key TEXT NOT NULL, value BLOB NOT NULL);",
    )
    .unwrap();
    let started = Instant::now();
    let mut insert = db.prepare("INSERT INTO log (key, value) VALUES (?1, ?2)").unwrap();
    for (i, row) in rows.iter().enumerate() {
        insert
            .execute(rusqlite::params![format!("/bench/agents/default/agent-{i:05}"), row])
            .unwrap();
    }
    rows.len() as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    // The serving figures are reported against the create rate `api` measures.
    let creates_per_second =
        if selected("api") || selected("serving") { Some(api().await) } else { None };
    if selected("jobs") {
        jobs().await;
    }
    if let Some(rate) = creates_per_second.filter(|_| selected("serving")) {
        model_deployments(rate).await;
    }
    if selected("workflows") {
        workflow_fan_out().await;
    }
}

/// The API server: start-up, memory, create rate and watch latency; returns the create rate.
async fn api() -> f64 {
    // Start-up, against a bare process spawn of the same binary.
    let mut startups = Vec::new();
    let mut spawns = Vec::new();
    for _ in 0..5 {
        let up = spawn_up();
        startups.push(until_ready(&up).await.0);
        let started = Instant::now();
        Command::new(keelson_e2e::keelson_binary())
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        spawns.push(started.elapsed());
    }
    startups.sort();
    spawns.sort();
    let (startup, spawn) = (startups[2], spawns[2]);
    println!(
        "startup to /readyz      median {:>8.1} ms   (spawn of `keelson --version`: {:.1} ms, ratio {:.1})",
        startup.as_secs_f64() * 1e3,
        spawn.as_secs_f64() * 1e3,
        startup.as_secs_f64() / spawn.as_secs_f64()
    );

    let up = spawn_up();
    let (_, client) = until_ready(&up).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_mib(up.child.id());
    println!("idle RSS                        {idle:>8.1} MiB");

    // Creates through HTTP, 16 clients: the whole control plane (the Agent controller writes
    // each new Agent's status), then the API server alone.
    let api: Api<Agent> = Api::namespaced(client.clone(), "default");
    let (http, _) = creates(&up, &api, "creates, 16 HTTP clients, keelson up").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let loaded = rss_mib(up.child.id());
    println!(
        "RSS with {RESOURCES} resources     {loaded:>8.1} MiB   (idle {idle:.1} MiB, ratio {:.2})",
        loaded / idle
    );
    {
        let alone = spawn_up_in(tempfile::tempdir().unwrap(), &["--no-controllers"], &[]);
        let (_, client) = until_ready(&alone).await;
        let api: Api<Agent> = Api::namespaced(client.clone(), "default");
        let (created, sqlite_rate) = creates(&alone, &api, "  the API server alone").await;
        let reviewed = reviews(&alone, &client, sqlite_rate).await;
        print_budget(created.total_cpu_us(), reviewed.total_cpu_us(), sqlite_rate);
    }
    wrk_creates().await;

    // Write-to-watch-event latency.
    let rv = api.get("agent-00000").await.unwrap().metadata.resource_version.unwrap();
    let mut events = api
        .watch(&WatchParams::default().fields("metadata.name=agent-00000"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut latencies = Vec::with_capacity(LATENCY_SAMPLES);
    for i in 0..LATENCY_SAMPLES {
        let sent = Instant::now();
        let patch = serde_json::json!({"spec": {"args": [format!("echo {i}")]}});
        api.patch("agent-00000", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
        match events.try_next().await.unwrap() {
            Some(WatchEvent::Modified(_)) => latencies.push(sent.elapsed()),
            other => panic!("unexpected watch event {other:?}"),
        }
    }
    latencies.sort();
    println!(
        "write → watch event     p50 {:>8.2} ms   p99 {:.2} ms ({LATENCY_SAMPLES} sequential updates)",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3
    );
    drop(up);
    http.rate
}

/// What a phase of `RESOURCES` requests from `CLIENTS` concurrent clients took.
struct Load {
    /// Requests per second.
    rate: f64,
    elapsed: Duration,
    /// CPU the server spent per request.
    server_cpu: Duration,
    /// CPU this process (the clients) spent per request.
    clients_cpu: Duration,
}

impl Load {
    /// CPU per request, server and clients together, in µs.
    fn total_cpu_us(&self) -> f64 {
        (self.server_cpu + self.clients_cpu).as_secs_f64() * 1e6
    }

    fn print_cpu(&self, what: &str) {
        println!(
            "  CPU per {what}: server {:.0} µs, clients {:.0} µs, over {:.2} s of wall time on {} cores",
            self.server_cpu.as_secs_f64() * 1e6,
            self.clients_cpu.as_secs_f64() * 1e6,
            self.elapsed.as_secs_f64(),
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        );
    }
}

/// Sends `RESOURCES` requests to `up` from `CLIENTS` concurrent tasks, request `i` being
/// `send(i)`, and measures the rate and the CPU each side spent.
async fn drive<F, R>(up: &Up, send: F) -> Load
where
    F: Fn(usize) -> R + Clone + Send + 'static,
    R: Future<Output = ()> + Send,
{
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server_pid = up.child.id().to_string();
    let (server_cpu, own_cpu) = (cpu_time(&server_pid), cpu_time("self"));
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (send, next) = (send.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= RESOURCES {
                        return;
                    }
                    send(i).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let elapsed = started.elapsed();
    let per_request = |cpu: Duration| cpu / RESOURCES as u32;
    Load {
        rate: RESOURCES as f64 / elapsed.as_secs_f64(),
        elapsed,
        server_cpu: per_request(cpu_time(&server_pid) - server_cpu),
        clients_cpu: per_request(cpu_time("self") - own_cpu),
    }
}

/// Creates `RESOURCES` Agents from `CLIENTS` concurrent clients and prints the rate against raw
/// SQLite inserts of the stored bytes, with the CPU each side spent; returns the load and the
/// SQLite rate.
async fn creates(up: &Up, api: &Api<Agent>, label: &str) -> (Load, f64) {
    let agents = api.clone();
    let load = drive(up, move |i| {
        let api = agents.clone();
        async move {
            api.create(&PostParams::default(), &agent(i)).await.unwrap();
        }
    })
    .await;
    let sqlite_rate = stored_inserts_per_second(up, api).await;
    println!(
        "{label:<40}{:>8.0} /s   (raw SQLite inserts of the same bytes: {sqlite_rate:.0} /s, ratio {:.2})",
        load.rate,
        load.rate / sqlite_rate
    );
    load.print_cpu("create");
    (load, sqlite_rate)
}

/// The floor under every create: as many SelfSubjectReviews (`kubectl auth whoami`) from the
/// same clients, each authenticated, routed, parsed and answered like a create but neither
/// admitted nor stored; prints their rate against the create phase's SQLite baseline.
async fn reviews(up: &Up, client: &kube::Client, sqlite_rate: f64) -> Load {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let load = drive(up, move |_| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap();
        }
    })
    .await;
    println!(
        "  its floor: SelfSubjectReviews        {:>8.0} /s   (against the same SQLite inserts: ratio {:.2})",
        load.rate,
        load.rate / sqlite_rate
    );
    load.print_cpu("review");
    load
}

/// Prints the CPU per create, server and clients together, that a rate of `RATIO_GOAL` times
/// `sqlite_rate` allows with every core busy (as 16 closed-loop clients keep them), what is
/// left of it beyond a review's CPU, and what a create takes beyond a review's.
fn print_budget(create_cpu_us: f64, review_cpu_us: f64, sqlite_rate: f64) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let allowed = cores as f64 * 1e6 / (RATIO_GOAL * sqlite_rate);
    println!(
        "  ratio {RATIO_GOAL} allows {allowed:.0} µs of CPU per create on {cores} cores; a review takes {review_cpu_us:.0}, leaving {:.0} µs for what a create adds; it adds {:.0} µs",
        allowed - review_cpu_us,
        create_cpu_us - review_cpu_us
    );
}

/// Raw SQLite inserts per second of the Agents `api` lists, serialized as stored.
async fn stored_inserts_per_second(up: &Up, api: &Api<Agent>) -> f64 {
    let stored: Vec<Vec<u8>> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|a| serde_json::to_vec(a).unwrap())
        .collect();
    sqlite_inserts_per_second(up.dir.path(), &stored)
}

/// wrk's Lua script creating the benchmark's Agents, with names unique per wrk thread.
const CREATE_AGENTS_LUA: &str = include_str!("../../bench/create-agents.lua");

/// wrk's Lua script asking who it is, a SelfSubjectReview (`kubectl auth whoami`).
const WHOAMI_LUA: &str = r#"
wrk.method = "POST"
wrk.body = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
wrk.headers["Content-Type"] = "application/json"
"#;

/// Creates into the API server alone from wrk, a separate and lighter load generator than 16
/// `kube::Client`s, for 5 s; prints the rate against raw SQLite inserts and each side's CPU.
/// Then the same for SelfSubjectReviews, the floor under every create, and the budget the goal
/// leaves a create.
async fn wrk_creates() {
    let up = spawn_up_in(tempfile::tempdir().unwrap(), &["--no-controllers"], &[]);
    let (_, client) = until_ready(&up).await;
    let kubeconfig = std::fs::read_to_string(up.dir.path().join("kubeconfig")).unwrap();
    let field = |name: &str| {
        kubeconfig.lines().find_map(|l| l.trim().strip_prefix(name)).unwrap().trim().to_owned()
    };
    let server = field("server:");
    let server_pid = up.child.id().to_string();
    let run_wrk = |path: &str, script: &str| {
        let (server_cpu, wrk_cpu) = (cpu_time(&server_pid), children_cpu_time());
        let run = wrk(CLIENTS, &format!("{server}{path}"), &field("token:"), 5, Some(script));
        let per_request = |cpu: Duration| cpu.as_secs_f64() * 1e6 / run.requests as f64;
        let cpu = (
            per_request(cpu_time(&server_pid) - server_cpu),
            per_request(children_cpu_time() - wrk_cpu),
        );
        (run, cpu)
    };
    let agents = "/apis/workflows.keelson.dev/v1alpha1/namespaces/default/agents";
    let (run, (server_cpu, wrk_cpu)) = run_wrk(agents, CREATE_AGENTS_LUA);
    let api: Api<Agent> = Api::namespaced(client, "default");
    let sqlite_rate = stored_inserts_per_second(&up, &api).await;
    println!(
        "  the API server alone, wrk -c{CLIENTS}      {:>8.0} /s   (raw SQLite inserts of the same bytes: {sqlite_rate:.0} /s, ratio {:.2})",
        run.per_second,
        run.per_second / sqlite_rate
    );
    println!(
        "  CPU per create: server {server_cpu:.0} µs, wrk {wrk_cpu:.0} µs ({} creates)",
        run.requests
    );
    let create_cpu = server_cpu + wrk_cpu;
    let reviews = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let (run, (server_cpu, wrk_cpu)) = run_wrk(reviews, WHOAMI_LUA);
    println!(
        "  its floor: SelfSubjectReviews, wrk   {:>8.0} /s   (against the same SQLite inserts: ratio {:.2})",
        run.per_second,
        run.per_second / sqlite_rate
    );
    println!(
        "  CPU per review: server {server_cpu:.0} µs, wrk {wrk_cpu:.0} µs ({} reviews)",
        run.requests
    );
    print_budget(create_cpu, server_cpu + wrk_cpu, sqlite_rate);
}

/// A Job running `sh -c true` as a local process.
fn trivial_job(i: usize) -> Job {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("job-{i:03}") },
        "spec": { "template": { "spec": {
            "restartPolicy": "Never",
            "containers": [{ "name": "main", "image": "busybox", "command": ["sh", "-c", "true"] }],
        } } },
    }))
    .unwrap()
}

/// Starts `keelson up` and waits until its local node is registered.
async fn up_with_node(args: &[&str]) -> (Up, kube::Client) {
    let up = spawn_up_in(tempfile::tempdir().unwrap(), args, &[]);
    let (_, client) = until_ready(&up).await;
    let nodes: Api<Node> = Api::all(client.clone());
    while nodes.list(&Default::default()).await.unwrap().items.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (up, client)
}

/// Waits until `count` Jobs in `api` have succeeded.
async fn until_jobs_succeeded(api: &Api<Job>, count: usize) {
    loop {
        let jobs = api.list(&Default::default()).await.unwrap().items;
        let done =
            jobs.iter().filter(|j| j.status.as_ref().and_then(|s| s.succeeded) == Some(1)).count();
        if done >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// 200 Jobs created at once until all complete, against spawning their processes directly.
async fn jobs() {
    let started = Instant::now();
    let children: Vec<Child> =
        (0..JOBS).map(|_| Command::new("sh").args(["-c", "true"]).spawn().unwrap()).collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let direct = started.elapsed();

    let (up, client) = up_with_node(&[]).await;
    let api: Api<Job> = Api::namespaced(client, "default");
    let server_pid = up.child.id().to_string();
    let server_cpu = cpu_time(&server_pid);
    let started = Instant::now();
    let creates: Vec<_> = (0..JOBS)
        .map(|i| {
            let api = api.clone();
            tokio::spawn(async move {
                api.create(&PostParams::default(), &trivial_job(i)).await.unwrap()
            })
        })
        .collect();
    for create in creates {
        create.await.unwrap();
    }
    until_jobs_succeeded(&api, JOBS).await;
    let elapsed = started.elapsed();
    let server_cpu = cpu_time(&server_pid) - server_cpu;
    println!(
        "{JOBS} jobs to Complete      {:>8.2} s    {:.0} jobs/s   (the same {JOBS} processes spawned directly: {:.3} s)",
        elapsed.as_secs_f64(),
        JOBS as f64 / elapsed.as_secs_f64(),
        direct.as_secs_f64()
    );
    println!(
        "  overhead per job: {:.1} ms of wall time, {:.1} ms of keelson CPU",
        (elapsed - direct).as_secs_f64() * 1e3 / JOBS as f64,
        server_cpu.as_secs_f64() * 1e3 / JOBS as f64
    );
}

/// A ModelDeployment served without GPU or cache.
fn model(i: usize) -> ModelDeployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
        "metadata": { "name": format!("model-{i:04}") },
        "spec": { "backend": "tei", "model": "BAAI/bge-small-en-v1.5" },
    }))
    .unwrap()
}

/// The current revision of the store (a list's `resourceVersion`): every stored write moves it.
async fn revision(client: &kube::Client) -> u64 {
    let list = Api::<Namespace>::all(client.clone()).list(&Default::default()).await.unwrap();
    list.metadata.resource_version.unwrap().parse().unwrap()
}

/// 1,000 ModelDeployments applied at once until all are Ready, the writes they cost, and a
/// restart's fresh reconcile of all of them, which should write nothing.
async fn model_deployments(creates_per_second: f64) {
    let args = ["--node", "bench,pods=5000,cpu=1000,memory=4000Gi", "--pod-ready-delay", "0s"];
    let (up, client) = up_with_node(&args).await;
    let api: Api<ModelDeployment> = Api::namespaced(client.clone(), "default");
    let before = revision(&client).await;
    let started = Instant::now();
    futures::stream::iter(0..MODELS)
        .for_each_concurrent(CLIENTS, |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &model(i)).await.unwrap();
            }
        })
        .await;
    loop {
        let models = api.list(&Default::default()).await.unwrap().items;
        let ready = models
            .iter()
            .filter(|m| m.status.as_ref().is_some_and(|s| s.observed.is_true("Ready")))
            .count();
        if ready == MODELS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed();
    let writes = revision(&client).await - before;
    let rate = MODELS as f64 / elapsed.as_secs_f64();
    println!(
        "{MODELS} ModelDeployments Ready  {:>6.2} s    {rate:.1} /s   (ratio to the creates/s above: {:.5}); {:.1} API writes each",
        elapsed.as_secs_f64(),
        rate / creates_per_second,
        writes as f64 / MODELS as f64
    );

    // A restart reconciles every model again with nothing changed: count what it rewrites.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let versions = |client: kube::Client| async move {
        let mut seen = std::collections::BTreeMap::new();
        for m in Api::<ModelDeployment>::all(client.clone())
            .list(&Default::default())
            .await
            .unwrap()
            .items
        {
            seen.insert(
                format!("md/{}", m.metadata.name.unwrap()),
                m.metadata.resource_version.unwrap(),
            );
        }
        for d in
            Api::<Deployment>::all(client.clone()).list(&Default::default()).await.unwrap().items
        {
            seen.insert(
                format!("deploy/{}", d.metadata.name.unwrap()),
                d.metadata.resource_version.unwrap(),
            );
        }
        for s in Api::<Service>::all(client).list(&Default::default()).await.unwrap().items {
            seen.insert(
                format!("svc/{}", s.metadata.name.unwrap()),
                s.metadata.resource_version.unwrap(),
            );
        }
        seen
    };
    let settled = versions(client.clone()).await;
    let again = spawn_up_in(up.stop(), &args, &[]);
    let (_, client) = until_ready(&again).await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let after = versions(client).await;
    let rewritten = settled.iter().filter(|(k, v)| after.get(*k) != Some(*v)).count();
    println!(
        "  after a restart, a full reconcile pass rewrote {rewritten} of {} ModelDeployments, Deployments and Services",
        settled.len()
    );
}

/// A run of a fan-out/fan-in plan of [`FLOW_NODES`] trivial steps (`first`, then the middle
/// ones in parallel, then `last`) from start to success, against the same number of Jobs of
/// the same command created directly, in the same `keelson up`.
async fn workflow_fan_out() {
    // Room for every pod at once, so neither side waits for the scheduler's retry of pods that
    // did not fit (the host node takes 110 pods, as upstream's default).
    let (up, client) = up_with_node(&["--node", "bench,pods=1000,cpu=1000,memory=4000Gi"]).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    // One Job first, so neither measurement pays for the node's first process.
    jobs.create(&PostParams::default(), &trivial_job(FLOW_NODES)).await.unwrap();
    until_jobs_succeeded(&jobs, 1).await;
    let started = Instant::now();
    futures::stream::iter(0..FLOW_NODES)
        .for_each_concurrent(CLIENTS, |i| {
            let jobs = jobs.clone();
            async move {
                jobs.create(&PostParams::default(), &trivial_job(i)).await.unwrap();
            }
        })
        .await;
    until_jobs_succeeded(&jobs, FLOW_NODES + 1).await;
    let direct = started.elapsed();

    let agent = serde_json::json!({
        "apiVersion": "workflows.keelson.dev/v1alpha1", "kind": "Agent",
        "metadata": { "name": "noop" },
        "spec": { "image": "busybox", "command": ["sh", "-c", "true"] },
    });
    let agents: Api<Agent> = Api::namespaced(client.clone(), "default");
    agents.create(&PostParams::default(), &serde_json::from_value(agent).unwrap()).await.unwrap();
    let middle: Vec<String> = (1..FLOW_NODES - 1).map(|i| format!("step-{i:03}")).collect();
    let mut nodes = vec![serde_json::json!({ "id": "first", "agent": { "agentRef": "noop" } })];
    let mut edges = Vec::new();
    for id in &middle {
        nodes.push(serde_json::json!({ "id": id, "agent": { "agentRef": "noop" } }));
        edges.push(serde_json::json!({ "from": "first", "to": id }));
        edges.push(serde_json::json!({ "from": id, "to": "last" }));
    }
    nodes.push(serde_json::json!({ "id": "last", "agent": { "agentRef": "noop" } }));
    let run = serde_json::json!({
        "apiVersion": "workflows.keelson.dev/v1alpha1", "kind": "Run",
        "metadata": { "name": "fan-out" },
        "spec": { "start": true, "plan": { "nodes": nodes, "edges": edges } },
    });
    let runs: Api<Run> = Api::namespaced(client, "default");
    let server_pid = up.child.id().to_string();
    let server_cpu = cpu_time(&server_pid);
    let started = Instant::now();
    runs.create(&PostParams::default(), &serde_json::from_value(run).unwrap()).await.unwrap();
    loop {
        let status = runs.get("fan-out").await.unwrap().status.unwrap_or_default();
        match status.phase {
            Some(RunPhase::Succeeded) => break,
            Some(RunPhase::Failed | RunPhase::Cancelled) => {
                panic!("the run ended {:?}: {:?}", status.phase, status.message)
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let elapsed = started.elapsed();
    let server_cpu = cpu_time(&server_pid) - server_cpu;
    println!(
        "{FLOW_NODES}-node fan-out/fan-in run {:>6.2} s    (the same {FLOW_NODES} Jobs created directly: {:.2} s, ratio {:.2})",
        elapsed.as_secs_f64(),
        direct.as_secs_f64(),
        elapsed.as_secs_f64() / direct.as_secs_f64()
    );
    println!(
        "  orchestration overhead per node: {:+.1} ms of wall time; {:.1} ms of keelson CPU per node in all",
        (elapsed.as_secs_f64() - direct.as_secs_f64()) * 1e3 / FLOW_NODES as f64,
        server_cpu.as_secs_f64() * 1e3 / FLOW_NODES as f64
    );
}
