//! Contract tests of the orchestrator REST API against `keelson up`: every endpoint's success,
//! its documented errors, and the JSON shapes.

use serde_json::{Value, json};

use crate::support::{Keelson, eventually};
use keelson_e2e::rest::{Answer, Rest};

/// An agent that prints one output and one log line.
fn echo_agent(id: &str) -> Value {
    json!({
        "id": id,
        "name": "Echo",
        "image": "busybox",
        "command": ["sh", "-c", "echo '{\"type\":\"output\",\"key\":\"n\",\"value\":\"42\"}'; echo working"],
        "capabilities": ["echo", "test"]
    })
}

/// A flow: step `a`, then gate `ok`, then step `b` reading `a`'s output.
fn gated_flow(id: &str, agent: &str) -> Value {
    json!({
        "id": id,
        "name": "Gated",
        "params": [{"name": "week", "default": "1"}],
        "nodes": [
            {"id": "a", "agent_id": agent},
            {"id": "ok", "kind": "gate", "description": "Go on?"},
            {"id": "b", "agent_id": agent, "inputs": ["a"]}
        ],
        "edges": [{"from": "a", "to": "ok"}, {"from": "ok", "to": "b"}]
    })
}

fn assert_error(answer: &Answer, status: u16, code: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert_eq!(answer.code(), code, "{}", answer.text);
    assert!(answer.json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(answer.json["error"]["details"].is_array(), "{}", answer.text);
    assert_eq!(answer.header("content-type"), Some("application/json"));
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// Waits until the run's node has the status.
fn wait_node(rest: &Rest, run: &str, node: &str, status: &str) -> Value {
    let mut last = Value::Null;
    eventually(60, &format!("node {node} of {run} to be {status}"), || {
        last = rest.get(&format!("/api/v1/runs/{run}")).json;
        last["nodes"].as_array().unwrap().iter().any(|n| n["id"] == node && n["status"] == status)
    });
    last
}

fn wait_run(rest: &Rest, run: &str, status: &str) -> Value {
    let mut last = Value::Null;
    eventually(60, &format!("run {run} to be {status}: {last}"), || {
        last = rest.get(&format!("/api/v1/runs/{run}")).json;
        last["status"] == status
    });
    last
}

#[test]
fn health_auth_scopes_and_tokens() {
    let k = Keelson::up();
    k.wait_api_ready();
    let rest = k.rest();
    let anonymous = rest.with_token(None);
    // `keelson up`'s write token is readable by its user only.
    let mode = std::fs::metadata(k.data_dir().join("api-token")).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    for path in ["/health", "/healthz"] {
        let answer = anonymous.get(path);
        assert_eq!((answer.status, answer.json.clone()), (200, json!({"status": "ok"})));
    }
    assert_eq!(anonymous.get("/ready").json, json!({"status": "ready"}));

    // No token, a wrong one, another scheme: 401 with a challenge, the same shape everywhere.
    for client in [anonymous.clone(), rest.with_token(Some("kat_wrong"))] {
        let answer = client.get("/api/v1/runs");
        assert_error(&answer, 401, "UNAUTHORIZED");
        assert_eq!(answer.header("www-authenticate"), Some("Bearer realm=\"keelson\""));
    }
    assert_error(&anonymous.get("/api/v1/openapi.json"), 401, "UNAUTHORIZED");

    // `keelson token create --scope read` makes a token that reads but cannot write.
    let viewer = k.read_token("viewer");
    assert!(viewer.starts_with("kat_"), "{viewer}");
    let reader = rest.with_token(Some(&viewer));
    eventually(10, "the new token to be known", || reader.get("/api/v1/flows").status == 200);
    assert_error(&reader.post("/api/v1/agents", echo_agent("nope")), 403, "FORBIDDEN");
    // The token itself is stored nowhere: only its hash.
    let secret = k.ok(&["get", "secret", "keelson-api-token-viewer", "-o", "json"]);
    assert!(!secret.contains(&viewer[4..]));

    let document = rest.get("/api/v1/openapi.json");
    assert_eq!(document.json["openapi"], "3.1.0");
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::support::workspace().join("docs/openapi.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(document.json, committed);

    // Unknown paths and methods answer in the same shape.
    assert_error(&rest.get("/api/v1/nothing"), 404, "NOT_FOUND");
    let answer = rest.call("PATCH", "/api/v1/runs", Some(&json!({})));
    assert_error(&answer, 405, "METHOD_NOT_ALLOWED");
    assert!(answer.header("allow").is_some_and(|allow| allow.contains("POST")));
}

#[test]
fn agents_and_flows_round_trip_and_refuse_bad_input() {
    let k = Keelson::up();
    k.wait_api_ready();
    let rest = k.rest();

    // Agents.
    let created = rest.post("/api/v1/agents", echo_agent("echo"));
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        keys(&created.json),
        [
            "args",
            "capabilities",
            "command",
            "created_at",
            "created_by",
            "description",
            "env",
            "id",
            "image",
            "name",
            "version"
        ]
    );
    assert_eq!(created.json["created_by"], "local");
    assert_error(&rest.post("/api/v1/agents", echo_agent("echo")), 409, "CONFLICT");
    assert_eq!(rest.get("/api/v1/agents/echo").json, created.json);
    assert_error(&rest.get("/api/v1/agents/none"), 404, "NOT_FOUND");
    let mut changed = echo_agent("ignored");
    changed["image"] = json!("alpine");
    changed["capabilities"] = json!(["echo"]);
    let updated = rest.put("/api/v1/agents/echo", changed.clone());
    assert_eq!((updated.status, updated.json["image"].clone()), (200, json!("alpine")));
    assert_error(&rest.put("/api/v1/agents/none", changed), 404, "NOT_FOUND");
    assert!(rest.post("/api/v1/agents", echo_agent("other")).status == 201);
    let filtered = rest.get("/api/v1/agents?capabilities=echo,test");
    let ids: Vec<_> = filtered.json["items"].as_array().unwrap().iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!("other")]);
    let invalid = rest.post("/api/v1/agents", json!({"id": "Bad Id", "image": "x"}));
    assert_error(&invalid, 400, "INVALID");
    assert_eq!(invalid.json["error"]["details"][0]["field"], "id");
    assert_error(&rest.post("/api/v1/agents", json!({"id": "x"})), 400, "BAD_REQUEST");

    // Flows: invalid graphs name the field and the problem.
    let mut cyclic = gated_flow("cyclic", "echo");
    cyclic["edges"] = json!([{"from": "b", "to": "a"}]);
    let refused = rest.post("/api/v1/flows", cyclic);
    assert_error(&refused, 400, "INVALID");
    let details = refused.json["error"]["details"].to_string();
    assert!(details.contains("cycle") && details.contains("\"field\""), "{details}");
    let mut dangling = gated_flow("dangling", "echo");
    dangling["edges"] = json!([{"from": "a", "to": "zzz"}]);
    assert_error(&rest.post("/api/v1/flows", dangling), 400, "INVALID");

    let flow = rest.post("/api/v1/flows", gated_flow("gated", "echo"));
    assert_eq!(flow.status, 201, "{}", flow.text);
    assert_eq!(
        keys(&flow.json),
        [
            "created_at",
            "created_by",
            "description",
            "edges",
            "id",
            "name",
            "nodes",
            "params",
            "problems",
            "ready",
            "timeout_seconds",
            "ttl_seconds_after_finished",
            "version"
        ]
    );
    assert_eq!(flow.json["nodes"][1], json!({"id": "ok", "kind": "gate", "description": "Go on?"}));
    assert_eq!(flow.json["version"], 1);
    assert_error(&rest.post("/api/v1/flows", gated_flow("gated", "echo")), 409, "CONFLICT");
    eventually(20, "the flow to be ready", || {
        rest.get("/api/v1/flows/gated").json["ready"] == true
    });
    let mut replaced = gated_flow("ignored", "echo");
    replaced["description"] = json!("second version");
    let updated = rest.put("/api/v1/flows/gated", replaced);
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(
        (updated.json["version"].clone(), updated.json["id"].clone()),
        (json!(2), json!("gated"))
    );
    assert_error(&rest.get("/api/v1/flows/none"), 404, "NOT_FOUND");

    // A flow naming an agent that does not exist is kept, but says why it is not ready.
    assert_eq!(rest.post("/api/v1/flows", gated_flow("orphan", "ghost")).status, 201);
    eventually(20, "the orphan flow to report its problem", || {
        let flow = rest.get("/api/v1/flows/orphan").json;
        flow["ready"] == false && flow["problems"].to_string().contains("ghost")
    });

    // Pages: limit, cursor, and bad values.
    let first = rest.get("/api/v1/flows?limit=1");
    assert_eq!(first.json["items"].as_array().unwrap().len(), 1);
    let cursor = first.json["next_cursor"].as_str().unwrap().to_owned();
    let second = rest.get(&format!("/api/v1/flows?limit=1&cursor={cursor}"));
    assert_ne!(first.json["items"][0]["id"], second.json["items"][0]["id"]);
    assert!(second.json.get("next_cursor").is_none(), "{}", second.text);
    assert_error(&rest.get("/api/v1/flows?limit=0"), 400, "BAD_REQUEST");
    assert_error(&rest.get("/api/v1/flows?limit=501"), 400, "BAD_REQUEST");
    assert_error(&rest.get("/api/v1/flows?limit=abc"), 400, "BAD_REQUEST");
    assert_error(&rest.get("/api/v1/flows?cursor=bogus"), 400, "BAD_REQUEST");

    // Bodies: not JSON, malformed, too large.
    let text = rest.raw("POST", "/api/v1/flows", Some("id=x"), "text/plain", &[]);
    assert_error(&text, 415, "UNSUPPORTED_MEDIA_TYPE");
    let malformed = rest.raw("POST", "/api/v1/flows", Some("{\"id\":"), "application/json", &[]);
    assert_error(&malformed, 400, "BAD_REQUEST");
    let huge = json!({"id": "huge", "description": "x".repeat(1_100_000), "nodes": []}).to_string();
    assert_error(
        &rest.raw("POST", "/api/v1/flows", Some(&huge), "application/json", &[]),
        413,
        "PAYLOAD_TOO_LARGE",
    );

    // Deletes.
    assert_eq!(rest.delete("/api/v1/flows/orphan").status, 204);
    assert_error(&rest.get("/api/v1/flows/orphan"), 404, "NOT_FOUND");
    assert_error(&rest.delete("/api/v1/flows/orphan"), 404, "NOT_FOUND");
    assert_eq!(rest.delete("/api/v1/agents/other").status, 204);
    assert_error(&rest.delete("/api/v1/agents/other"), 404, "NOT_FOUND");
}

#[test]
fn runs_start_clone_gates_jobs_and_deletes() {
    let k = Keelson::up();
    k.wait_api_ready();
    let rest = k.rest();
    assert_eq!(rest.post("/api/v1/agents", echo_agent("echo")).status, 201);
    assert_eq!(rest.post("/api/v1/flows", gated_flow("gated", "echo")).status, 201);

    // Create (queued), read it back at once, start, start again.
    let created =
        rest.post("/api/v1/runs", json!({"id": "r1", "flow_id": "gated", "params": {"week": 47}}));
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        keys(&created.json),
        [
            "created_at",
            "created_by",
            "events_url",
            "finished_at",
            "flow_id",
            "id",
            "message",
            "name",
            "nodes",
            "outputs",
            "params",
            "parent_run_id",
            "started_at",
            "status"
        ]
    );
    assert_eq!(created.json["status"], "queued");
    assert_eq!(created.json["events_url"], "/api/v1/runs/r1/events");
    assert_eq!(created.json["params"], json!({"week": "47"}));
    assert_eq!(
        created.json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].clone())
            .collect::<Vec<_>>(),
        [json!("agent"), json!("gate"), json!("agent")]
    );
    assert_eq!(rest.get("/api/v1/runs/r1").status, 200);
    assert_error(
        &rest.post("/api/v1/runs", json!({"id": "r1", "flow_id": "gated"})),
        409,
        "CONFLICT",
    );
    assert_error(&rest.post("/api/v1/runs", json!({"flow_id": "none"})), 404, "NOT_FOUND");
    assert_error(&rest.post("/api/v1/runs", json!({})), 400, "BAD_REQUEST");
    let bad_timeout = rest.post("/api/v1/runs", json!({"flow_id": "gated", "timeout": "soon"}));
    assert_error(&bad_timeout, 400, "INVALID");
    assert_eq!(bad_timeout.json["error"]["details"][0]["field"], "timeout");
    let bad_plan =
        rest.post("/api/v1/runs", json!({"plan": {"nodes": [{"id": "x", "kind": "agent"}]}}));
    assert_error(&bad_plan, 400, "INVALID");
    assert_eq!(bad_plan.json["error"]["details"][0]["field"], "plan.nodes[0].agent_id");

    // Approving before the gate waits is a conflict that says why.
    let early = rest.post_empty("/api/v1/runs/r1/nodes/ok/approve");
    assert_error(&early, 409, "CONFLICT");
    assert!(early.json["error"]["message"].as_str().unwrap().contains("not waiting"));
    let started = rest.post_empty("/api/v1/runs/r1/start");
    assert_eq!((started.status, started.json["id"].clone()), (200, json!("r1")));
    assert_error(&rest.post_empty("/api/v1/runs/r1/start"), 409, "CONFLICT");
    assert_error(&rest.post_empty("/api/v1/runs/none/start"), 404, "NOT_FOUND");

    let waiting = wait_node(&rest, "r1", "ok", "waiting_approval");
    assert_eq!(waiting["status"], "running");
    assert_eq!(waiting["nodes"][0]["outputs"], json!({"n": "42"}));
    let job = waiting["nodes"][0]["job_id"].as_str().unwrap().to_owned();
    let status = rest.get(&format!("/api/v1/jobs/{job}/status"));
    assert_eq!(
        keys(&status.json),
        ["active", "completion_time", "failed", "job_id", "start_time", "status", "succeeded"]
    );
    assert_eq!(
        (status.json["status"].clone(), status.json["succeeded"].clone()),
        (json!("succeeded"), json!(1))
    );
    assert_error(&rest.get("/api/v1/jobs/none/status"), 404, "NOT_FOUND");

    // Decisions: not a gate, unknown node, then approve once.
    assert_error(&rest.post_empty("/api/v1/runs/r1/nodes/a/approve"), 409, "CONFLICT");
    assert_error(&rest.post_empty("/api/v1/runs/r1/nodes/zzz/approve"), 404, "NOT_FOUND");
    assert_error(&rest.post_empty("/api/v1/runs/none/nodes/ok/approve"), 404, "NOT_FOUND");
    let decided = rest.post("/api/v1/runs/r1/nodes/ok/approve", json!({"comment": "looks good"}));
    assert_eq!(decided.status, 200, "{}", decided.text);
    assert_eq!(
        (
            decided.json["decision"].clone(),
            decided.json["by"].clone(),
            decided.json["comment"].clone()
        ),
        (json!("approve"), json!("local"), json!("looks good"))
    );
    assert_error(&rest.post_empty("/api/v1/runs/r1/nodes/ok/reject"), 409, "CONFLICT");
    let done = wait_run(&rest, "r1", "succeeded");
    assert_eq!(done["nodes"][1]["decision"]["by"], "local");
    assert!(done["finished_at"].is_string());

    // Lists filter by status and flow.
    let run_flow =
        rest.post("/api/v1/flows/gated/run", json!({"params": {"week": "48"}, "timeout": "30m"}));
    assert_eq!(run_flow.status, 201, "{}", run_flow.text);
    let second = run_flow.json["id"].as_str().unwrap().to_owned();
    assert!(second.starts_with("gated-"), "{second}");
    assert_error(&rest.post_empty("/api/v1/flows/none/run"), 404, "NOT_FOUND");
    wait_node(&rest, &second, "ok", "waiting_approval");
    let rejected = rest.post_empty(&format!("/api/v1/runs/{second}/nodes/ok/reject"));
    assert_eq!(rejected.json["decision"], "reject");
    wait_run(&rest, &second, "failed");
    let ids = |query: &str| -> Vec<String> {
        rest.get(&format!("/api/v1/runs?{query}")).json["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids("status=failed"), [second.as_str()]);
    assert_eq!(ids("status=succeeded&flow_id=gated"), ["r1"]);
    assert!(ids("flow_id=other").is_empty());
    assert_error(&rest.get("/api/v1/runs?status=sleeping"), 400, "BAD_REQUEST");

    // Clone: a new queued run of the same plan and parameters, or started at once.
    let clone = rest.post_empty("/api/v1/runs/r1/clone");
    assert_eq!(clone.status, 201, "{}", clone.text);
    assert_eq!(
        (clone.json["parent_run_id"].clone(), clone.json["status"].clone()),
        (json!("r1"), json!("queued"))
    );
    let started_clone = rest.post("/api/v1/runs/r1/clone", json!({"auto_start": true}));
    let clone_id = started_clone.json["id"].as_str().unwrap().to_owned();
    let waiting = wait_node(&rest, &clone_id, "ok", "waiting_approval");
    assert_eq!(waiting["params"]["week"], "47");
    assert_error(&rest.post_empty("/api/v1/runs/none/clone"), 404, "NOT_FOUND");

    // Delete stops the run and removes its Jobs.
    assert_eq!(rest.delete(&format!("/api/v1/runs/{clone_id}")).status, 204);
    assert_error(&rest.get(&format!("/api/v1/runs/{clone_id}")), 404, "NOT_FOUND");
    eventually(30, "the clone's Jobs to go", || {
        k.ok(&["get", "jobs", "-l", &format!("workflows.keelson.dev/run={clone_id}"), "-o", "name"])
            .is_empty()
    });
    assert_error(&rest.delete("/api/v1/runs/none"), 404, "NOT_FOUND");
}

#[test]
fn schedules_have_no_update_and_webhooks_authenticate_first() {
    let k = Keelson::up_with_env(&[], &[("KEELSON_API_RATE_LIMIT", "20")]);
    k.wait_api_ready();
    let rest = k.rest();
    assert_eq!(rest.post("/api/v1/agents", echo_agent("echo")).status, 201);
    let mut flow = gated_flow("plain", "echo");
    flow["nodes"] = json!([{"id": "a", "agent_id": "echo"}]);
    flow["edges"] = json!([]);
    assert_eq!(rest.post("/api/v1/flows", flow).status, 201);

    // Schedules.
    let schedule = json!({"id": "nightly", "flow_id": "plain", "cron": "0 3 * * *", "time_zone": "Europe/Berlin", "params": {"week": 1}});
    let created = rest.post("/api/v1/schedules", schedule.clone());
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        keys(&created.json),
        [
            "active_run_ids",
            "concurrency",
            "created_at",
            "created_by",
            "cron",
            "flow_id",
            "id",
            "last_run_at",
            "last_run_id",
            "next_run_at",
            "params",
            "suspended",
            "time_zone"
        ]
    );
    assert_eq!(created.json["concurrency"], "forbid");
    assert_error(&rest.post("/api/v1/schedules", schedule), 409, "CONFLICT");
    let bad_cron = json!({"flow_id": "plain", "cron": "61 * * * *"});
    assert_error(&rest.post("/api/v1/schedules", bad_cron), 400, "INVALID");
    assert_error(
        &rest.post("/api/v1/schedules", json!({"flow_id": "none", "cron": "@hourly"})),
        404,
        "NOT_FOUND",
    );
    eventually(20, "the next run time", || {
        rest.get("/api/v1/schedules/nightly").json["next_run_at"].is_string()
    });
    assert_eq!(rest.get("/api/v1/schedules").json["items"][0]["id"], "nightly");
    for method in ["PUT", "PATCH"] {
        let answer = rest.call(method, "/api/v1/schedules/nightly", Some(&json!({})));
        assert_error(&answer, 405, "METHOD_NOT_ALLOWED");
        assert_eq!(answer.header("allow"), Some("GET,DELETE"));
    }
    assert_eq!(rest.delete("/api/v1/schedules/nightly").status, 204);
    assert_error(&rest.get("/api/v1/schedules/nightly"), 404, "NOT_FOUND");

    // Webhooks: the token is shown once, only its hash is kept.
    let created = rest.post("/api/v1/webhooks", json!({"flow_id": "plain"}));
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(keys(&created.json), ["flow_id", "id", "token", "trigger_url"]);
    assert_eq!(created.json["trigger_url"], "/api/v1/webhooks/trigger/plain");
    let token = created.json["token"].as_str().unwrap().to_owned();
    assert_error(&rest.post("/api/v1/webhooks", json!({"flow_id": "none"})), 404, "NOT_FOUND");
    let anonymous = rest.with_token(None);
    let trigger = |flow: &str, token: Option<&str>, body: Option<&str>| {
        let headers: Vec<(&str, &str)> =
            token.map(|t| ("x-webhook-token", t)).into_iter().collect();
        anonymous.raw(
            "POST",
            &format!("/api/v1/webhooks/trigger/{flow}"),
            body,
            "application/json",
            &headers,
        )
    };
    assert_error(&trigger("plain", None, None), 401, "UNAUTHORIZED");
    assert_error(&trigger("plain", Some("kwh_wrong"), None), 401, "UNAUTHORIZED");
    // Nothing is revealed to a caller without the token: an unknown flow is also 401.
    assert_error(&trigger("none", Some("kwh_wrong"), None), 401, "UNAUTHORIZED");
    assert_error(&trigger("plain", Some(&token), Some("[1,2]")), 400, "BAD_REQUEST");
    let big = json!({"x": "y".repeat(300 * 1024)}).to_string();
    assert_error(&trigger("plain", Some(&token), Some(&big)), 413, "PAYLOAD_TOO_LARGE");
    let run = trigger("plain", Some(&token), Some(r#"{"week": 12, "dry": true}"#));
    assert_eq!(run.status, 201, "{}", run.text);
    assert_eq!(run.json["params"], json!({"week": "12", "dry": "true"}));
    assert!(run.json["created_by"].as_str().unwrap().starts_with("webhook:"));
    // The token also works as a Bearer token.
    let bearer = rest.with_token(Some(&token)).raw(
        "POST",
        "/api/v1/webhooks/trigger/plain",
        None,
        "application/json",
        &[],
    );
    assert_eq!(bearer.status, 201, "{}", bearer.text);
    // A valid token whose flow was deleted: 404.
    assert_eq!(rest.delete("/api/v1/flows/plain").status, 204);
    assert_error(&trigger("plain", Some(&token), None), 404, "NOT_FOUND");

    // Rate limit: 20 a second with bursts of 40, then 429 with Retry-After.
    let limited = (0..200).map(|_| rest.get("/api/v1/runs")).find(|answer| answer.status == 429);
    let limited = limited.expect("a burst beyond the limit is refused");
    assert_error(&limited, 429, "RATE_LIMITED");
    assert_eq!(limited.header("retry-after"), Some("1"));
}
