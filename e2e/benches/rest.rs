//! The orchestrator REST API of a release `keelson up` under load, measured from outside the
//! process with `wrk` (Debian package `wrk`), each figure with its baseline from the same run:
//!
//! - p99 of `GET /api/v1/runs/{id}` and of the run list (first page, and `limit=500`) with
//!   1,000 runs, against `GET /health` on the same server (HTTP with no work behind it);
//! - runs created per second through `POST /api/v1/runs`, against the same Runs created
//!   straight through the Kubernetes API with the same concurrency;
//! - with 100 subscribers on a run's event stream, the delay from approving a gate to each
//!   subscriber's `node_status` event, against a watch of the Run on the Kubernetes API seeing
//!   the same transition.
//!
//! Run: `cargo build --release -p keelson && cargo bench -p keelson-e2e --bench rest`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use futures::StreamExt;
use keelson_api_crds::workflows::{NodePhase, Run, RunSpec};
use keelson_e2e::bench::{percentile, spawn_up_in, until_ready, wrk};
use keelson_e2e::rest::Rest;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

const RUNS: usize = 1_000;
const CONNECTIONS: usize = 8;
const SUBSCRIBERS: usize = 100;
const GATES: usize = 50;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn queued_run(name: String) -> Run {
    Run::new(&name, RunSpec { flow_ref: Some("bench".into()), ..RunSpec::default() })
}

#[tokio::main]
async fn main() {
    let up = spawn_up_in(tempfile::tempdir().unwrap(), &[], &[("KEELSON_API_RATE_LIMIT", "0")]);
    let (_, client) = until_ready(&up).await;
    let rest = up.rest();
    while rest.get("/ready").status != 200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let token = rest.token.clone().unwrap();
    let base = rest.base.clone();
    let agent = json!({"id": "noop", "image": "busybox", "command": ["true"]});
    assert_eq!(rest.post("/api/v1/agents", agent).status, 201);
    let flow = json!({"id": "bench", "nodes": [{"id": "a", "agent_id": "noop"}]});
    assert_eq!(rest.post("/api/v1/flows", flow).status, 201);

    // 1,000 queued runs, created straight through the Kubernetes API.
    let runs: Api<Run> = Api::namespaced(client.clone(), "default");
    futures::stream::iter(0..RUNS)
        .for_each_concurrent(16, |i| {
            let runs = runs.clone();
            async move {
                runs.create(&PostParams::default(), &queued_run(format!("seed-{i:04}")))
                    .await
                    .unwrap();
            }
        })
        .await;
    while rest.get("/api/v1/runs?limit=500").json["items"].as_array().map_or(0, Vec::len) < 500 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    println!("REST API, wrk -t2 -c{CONNECTIONS}, 10 s each, {RUNS} runs stored");
    let health = wrk(CONNECTIONS, &format!("{base}/health"), &token, 10, None);
    let get = wrk(CONNECTIONS, &format!("{base}/api/v1/runs/seed-0500"), &token, 10, None);
    let page = wrk(CONNECTIONS, &format!("{base}/api/v1/runs"), &token, 10, None);
    let big_page = wrk(CONNECTIONS, &format!("{base}/api/v1/runs?limit=500"), &token, 10, None);
    for (name, figures) in [
        ("GET /health (baseline)", &health),
        ("GET /api/v1/runs/{id}", &get),
        ("GET /api/v1/runs (50 of 1,000)", &page),
        ("GET /api/v1/runs?limit=500", &big_page),
    ] {
        println!(
            "  {name:<32} p50 {:>7.3} ms  p99 {:>7.3} ms  ({:>6.0} req/s)  p99 {:.1}x the baseline",
            ms(figures.p50),
            ms(figures.p99),
            figures.per_second,
            figures.p99.as_secs_f64() / health.p99.as_secs_f64()
        );
    }

    // Creates: through the REST API, then the same Runs straight through the Kubernetes API.
    let create = "wrk.method = 'POST'\nwrk.body = '{\"flow_id\":\"bench\"}'\nwrk.headers['Content-Type'] = 'application/json'\n";
    let through_rest = wrk(CONNECTIONS, &format!("{base}/api/v1/runs"), &token, 10, Some(create));
    let started = Instant::now();
    let direct = 1_000;
    futures::stream::iter(0..direct)
        .for_each_concurrent(CONNECTIONS, |i| {
            let runs = runs.clone();
            async move {
                runs.create(&PostParams::default(), &queued_run(format!("direct-{i:04}")))
                    .await
                    .unwrap();
            }
        })
        .await;
    let direct_rate = direct as f64 / started.elapsed().as_secs_f64();
    println!(
        "  POST /api/v1/runs                {:>6.0} runs/s (p99 {:.2} ms), straight to the Kubernetes API {:>6.0} runs/s: {:.2}x",
        through_rest.per_second,
        ms(through_rest.p99),
        direct_rate,
        through_rest.per_second / direct_rate
    );

    sse_delay(&up, &rest, client).await;
}

/// With 100 subscribers on a run of 50 gates in a row: from each approval to each subscriber's
/// `node_status: succeeded` of that gate, against a watch of the Run seeing the same change.
async fn sse_delay(up: &keelson_e2e::bench::Up, rest: &Rest, client: kube::Client) {
    let nodes: Vec<_> =
        (0..GATES).map(|i| json!({"id": format!("g{i}"), "kind": "gate"})).collect();
    let edges: Vec<_> =
        (1..GATES).map(|i| json!({"from": format!("g{}", i - 1), "to": format!("g{i}")})).collect();
    let flow = json!({"id": "gates", "nodes": nodes, "edges": edges});
    assert_eq!(rest.post("/api/v1/flows", flow).status, 201);
    let run =
        rest.post("/api/v1/runs", json!({"id": "gated", "flow_id": "gates", "auto_start": true}));
    assert_eq!(run.status, 201, "{}", run.text);

    // The subscribers: threads reading the stream, reporting (gate, when) for each success.
    let (seen, arrivals) = mpsc::channel::<(usize, Instant)>();
    let url = format!("http://127.0.0.1:{}/api/v1/runs/gated/events", up.api_port);
    let token = rest.token.clone().unwrap();
    let (ready, subscribed) = mpsc::channel();
    for _ in 0..SUBSCRIBERS {
        let (seen, url, token, ready) = (seen.clone(), url.clone(), token.clone(), ready.clone());
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder().build().into();
            let response =
                agent.get(&url).header("authorization", format!("Bearer {token}")).call().unwrap();
            ready.send(()).unwrap();
            let mut event = String::new();
            for line in BufReader::new(response.into_body().into_reader()).lines() {
                let line = line.unwrap();
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_owned();
                } else if let Some(data) = line.strip_prefix("data: ")
                    && event == "node_status"
                {
                    let data: serde_json::Value = serde_json::from_str(data).unwrap();
                    if data["data"]["status"] == "succeeded" {
                        let gate: usize = data["node_id"].as_str().unwrap()[1..].parse().unwrap();
                        let _ = seen.send((gate, Instant::now()));
                    }
                } else if event == "end" {
                    return;
                }
            }
        });
    }
    for _ in 0..SUBSCRIBERS {
        subscribed.recv().unwrap();
    }

    // The baseline: a watch of the Run straight on the Kubernetes API, noting when it first
    // saw each gate in each phase.
    let first_seen: Arc<Mutex<HashMap<(usize, String), Instant>>> = Arc::default();
    let runs: Api<Run> = Api::namespaced(client, "default");
    let config = watcher::Config::default().fields("metadata.name=gated");
    let noted = first_seen.clone();
    tokio::spawn(watcher(runs, config).applied_objects().for_each(move |run| {
        if let Ok(run) = run {
            let now = Instant::now();
            let mut noted = noted.lock().unwrap();
            for node in run.status.map(|s| s.nodes).unwrap_or_default() {
                let gate: usize = node.id[1..].parse().unwrap();
                noted.entry((gate, format!("{:?}", node.phase))).or_insert(now);
            }
        }
        futures::future::ready(())
    }));
    let seen_at = |gate: usize, phase: NodePhase| {
        let first_seen = first_seen.clone();
        async move {
            loop {
                if let Some(at) = first_seen.lock().unwrap().get(&(gate, format!("{phase:?}"))) {
                    return *at;
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
    };

    let mut through_sse = Vec::new();
    let mut through_watch = Vec::new();
    for gate in 0..GATES {
        seen_at(gate, NodePhase::WaitingApproval).await;
        let approved = Instant::now();
        let answer = rest.post_empty(&format!("/api/v1/runs/gated/nodes/g{gate}/approve"));
        assert_eq!(answer.status, 200, "{}", answer.text);
        through_watch.push(seen_at(gate, NodePhase::Succeeded).await - approved);
        let mut got = 0;
        while got < SUBSCRIBERS {
            let (g, at) = arrivals.recv_timeout(Duration::from_secs(30)).unwrap();
            if g == gate {
                through_sse.push(at - approved);
                got += 1;
            }
        }
    }
    through_sse.sort();
    through_watch.sort();
    println!(
        "SSE, {SUBSCRIBERS} subscribers, {GATES} gate approvals: approval to node_status p50 {:.2} ms, p99 {:.2} ms; \
         the Kubernetes watch of the Run p50 {:.2} ms, p99 {:.2} ms; SSE p99 {:.2}x the watch",
        ms(percentile(&through_sse, 0.5)),
        ms(percentile(&through_sse, 0.99)),
        ms(percentile(&through_watch, 0.5)),
        ms(percentile(&through_watch, 0.99)),
        percentile(&through_sse, 0.99).as_secs_f64()
            / percentile(&through_watch, 0.99).as_secs_f64()
    );
}
