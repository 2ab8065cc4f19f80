//! The REST API as a user drives it with curl: a flow triggered through its webhook, its
//! events followed with `curl -N`, its gate approved; a reconnect with `Last-Event-ID` gets
//! exactly what it missed, also after Keelson restarts.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Keelson, eventually};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: Option<u64>,
    event: String,
    data: Value,
}

/// `curl -N` on a run's events, its events arriving on a channel as they stream.
struct Follow {
    curl: Child,
    events: mpsc::Receiver<Sse>,
}

impl Follow {
    fn start(k: &Keelson, run: &str, last_event_id: Option<u64>) -> Self {
        let headers = last_event_id.map(|id| format!("Last-Event-ID: {id}"));
        Self::request(k, &format!("/api/v1/runs/{run}/events"), headers.as_deref())
    }

    /// Follows `path` (with a query, for clients that cannot set headers) with an extra header.
    fn request(k: &Keelson, path: &str, header: Option<&str>) -> Self {
        let token = std::fs::read_to_string(k.data_dir().join("api-token")).unwrap();
        let mut command = Command::new("curl");
        command.args(["-sSN", "-H", &format!("Authorization: Bearer {}", token.trim())]);
        if let Some(header) = header {
            command.args(["-H", header]);
        }
        let mut curl =
            command.arg(format!("{}{path}", k.api_url())).stdout(Stdio::piped()).spawn().unwrap();
        let stdout = curl.stdout.take().unwrap();
        let (send, events) = mpsc::channel();
        std::thread::spawn(move || {
            let mut current = Sse { id: None, event: String::new(), data: Value::Null };
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if line.is_empty() {
                    if !current.event.is_empty() && send.send(current.clone()).is_err() {
                        return;
                    }
                    current = Sse { id: None, event: String::new(), data: Value::Null };
                } else if let Some(id) = line.strip_prefix("id: ") {
                    current.id = id.parse().ok();
                } else if let Some(event) = line.strip_prefix("event: ") {
                    current.event = event.to_owned();
                } else if let Some(data) = line.strip_prefix("data: ") {
                    current.data = serde_json::from_str(data).unwrap();
                }
            }
        });
        Self { curl, events }
    }

    /// The next event, within 60 s.
    fn next(&self) -> Sse {
        self.events.recv_timeout(Duration::from_secs(60)).expect("an event within 60 s")
    }

    /// Events up to and including the first that `stop` accepts.
    fn until(&self, stop: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let event = self.next();
            let done = stop(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }

    /// Waits until curl exits: the server closed the stream.
    fn closed(mut self) -> bool {
        for _ in 0..100 {
            if self.curl.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.curl.kill();
        let _ = self.curl.wait();
    }
}

/// `curl` with a JSON body, returning the JSON answer.
fn curl(k: &Keelson, method: &str, path: &str, headers: &[&str], body: &str) -> Value {
    let mut command = Command::new("curl");
    command.args(["-sS", "-X", method, "-H", "Content-Type: application/json"]);
    for header in headers {
        command.args(["-H", header]);
    }
    let output = command.args(["-d", body]).arg(format!("{}{path}", k.api_url())).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn follow_a_webhook_run_approve_its_gate_and_resume_with_last_event_id() {
    let mut k = Keelson::up();
    k.wait_api_ready();
    let token = std::fs::read_to_string(k.data_dir().join("api-token")).unwrap();
    let auth = format!("Authorization: Bearer {}", token.trim());
    let agent = json!({"id": "echo", "image": "busybox", "command": ["sh", "-c",
        "echo '{\"type\":\"output\",\"key\":\"rows\",\"value\":\"3\"}'; echo '{\"type\":\"log\",\"message\":\"fetched\"}'"]});
    assert_eq!(
        curl(&k, "POST", "/api/v1/agents", &[auth.as_str()], &agent.to_string())["id"],
        "echo"
    );
    let flow = json!({"id": "report", "params": [{"name": "week", "required": true}],
        "nodes": [{"id": "fetch", "agent_id": "echo"}, {"id": "approve", "kind": "gate"},
                  {"id": "publish", "agent_id": "echo", "inputs": ["fetch"]}],
        "edges": [{"from": "fetch", "to": "approve"}, {"from": "approve", "to": "publish"}]});
    assert_eq!(
        curl(&k, "POST", "/api/v1/flows", &[auth.as_str()], &flow.to_string())["id"],
        "report"
    );
    let webhook = curl(&k, "POST", "/api/v1/webhooks", &[auth.as_str()], r#"{"flow_id":"report"}"#);
    let trigger_token = webhook["token"].as_str().unwrap();

    // Trigger with curl and the webhook token; the body's values are the run's parameters.
    let run = curl(
        &k,
        "POST",
        webhook["trigger_url"].as_str().unwrap(),
        &[&format!("X-Webhook-Token: {trigger_token}")],
        r#"{"week": 47}"#,
    );
    let run_id = run["id"].as_str().unwrap().to_owned();
    assert_eq!(run["params"]["week"], "47");

    // Follow until the gate waits, then disconnect.
    let follow = Follow::start(&k, &run_id, None);
    let hello = follow.next();
    assert_eq!((hello.event.as_str(), hello.id), ("hello", None));
    let before = follow
        .until(|e| e.event == "node_status" && e.data["data"]["status"] == "waiting_approval");
    drop(follow);
    let seqs: Vec<u64> = before.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "numbered 1, 2, 3, … without gaps"
    );
    for event in &before {
        assert_eq!(event.data["seq"], event.id.unwrap());
        assert_eq!(event.data["run_id"], run_id.as_str());
        assert_eq!(event.data["type"], event.event.as_str());
        assert!(event.data["time"].is_string());
    }
    let kinds: Vec<&str> = before.iter().map(|e| e.event.as_str()).collect();
    assert!(kinds.contains(&"output") && kinds.contains(&"status"), "{kinds:?}");
    let last_seen = *seqs.last().unwrap();

    // While nobody listens: approve through the API; the run finishes.
    let decided = curl(
        &k,
        "POST",
        &format!("/api/v1/runs/{run_id}/nodes/approve/approve"),
        &[auth.as_str()],
        "{}",
    );
    assert_eq!(decided["by"], "local");
    let rest = k.rest();
    eventually(60, "the run to succeed", || {
        rest.get(&format!("/api/v1/runs/{run_id}")).json["status"] == "succeeded"
    });

    // Reconnect with Last-Event-ID: exactly the missed events, ending with `end`; the server
    // closes the stream.
    let resumed = Follow::start(&k, &run_id, Some(last_seen));
    assert_eq!(resumed.next().event, "hello");
    let missed = resumed.until(|e| e.event == "end");
    assert!(resumed.closed(), "the stream closes after end");
    let missed_seqs: Vec<u64> = missed.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(missed_seqs, (last_seen + 1..=last_seen + missed.len() as u64).collect::<Vec<_>>());
    assert!(
        missed
            .iter()
            .any(|e| e.event == "gate_decision" && e.data["data"]["decision"] == "approve")
    );
    assert!(missed.iter().any(|e| e.event == "log" && e.data["data"]["message"] == "fetched"));
    assert!(missed.iter().any(|e| e.event == "status" && e.data["data"]["status"] == "succeeded"));

    // The whole history, replayed, is what was seen live plus what was missed.
    let full = Follow::start(&k, &run_id, Some(0));
    full.next();
    let all = full.until(|e| e.event == "end");
    let mut expected = before.clone();
    expected.extend(missed.clone());
    assert_eq!(all, expected);

    // It survives a crash and restart of Keelson: the same events, the same numbers.
    eventually(10, "the history to be saved", || {
        k.ok(&["get", "configmap", &format!("{run_id}.events"), "-o", "jsonpath={.data.nextSeq}"])
            == (expected.len() as u64 + 1).to_string()
    });
    k.kill();
    k.start();
    k.wait_api_ready();
    let after_restart = Follow::start(&k, &run_id, Some(last_seen));
    after_restart.next();
    assert_eq!(after_restart.until(|e| e.event == "end"), missed);
}

#[test]
fn a_client_behind_the_kept_history_is_told_and_goes_on_from_the_oldest_event_kept() {
    let k = Keelson::up_with_env(&[], &[("KEELSON_API_EVENT_HISTORY", "10")]);
    k.wait_api_ready();
    let rest = k.rest();
    // Twelve gates side by side: a status event and twelve node events, more than are kept.
    let nodes: Vec<Value> =
        (0..12).map(|i| json!({"id": format!("g{i}"), "kind": "gate"})).collect();
    assert_eq!(rest.post("/api/v1/flows", json!({"id": "wide", "nodes": nodes})).status, 201);
    let run =
        rest.post("/api/v1/runs", json!({"id": "wide-1", "flow_id": "wide", "auto_start": true}));
    assert_eq!(run.status, 201, "{}", run.text);
    eventually(30, "every gate to wait", || {
        rest.get("/api/v1/runs/wide-1").json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["status"] == "waiting_approval")
    });

    let follow = Follow::start(&k, "wide-1", Some(1));
    assert_eq!(follow.next().event, "hello");
    let lagged = follow.next();
    assert_eq!((lagged.event.as_str(), lagged.id), ("lagged", None));
    assert_eq!(lagged.data["data"], json!({"after": 1, "oldest_kept": 4}));
    let kept: Vec<u64> = (0..10).map(|_| follow.next().id.unwrap()).collect();
    assert_eq!(kept, (4..=13).collect::<Vec<_>>());

    // `?since=` does the same for clients that cannot send Last-Event-ID.
    let follow = Follow::request(&k, "/api/v1/runs/wide-1/events?since=11", None);
    assert_eq!(follow.next().event, "hello");
    assert_eq!((follow.next().id, follow.next().id), (Some(12), Some(13)));
}
