//! The workflow controllers against `keelson up` with its local node, driven with kubectl: the
//! example flow runs its steps as Jobs around an approval gate, retries follow the step's
//! policy, a restart mid-run resumes, and a deleted run takes its Jobs and pods with it.

use crate::support::{Keelson, eventually};

const RUN: &str = "weekly-report-2026-w47";

fn phase(k: &Keelson, run: &str) -> String {
    k.jsonpath("run", run, "{.status.phase}")
}

fn node(k: &Keelson, run: &str, node: &str, field: &str) -> String {
    k.jsonpath("run", run, &format!("{{.status.nodes[?(@.id==\"{node}\")].{field}}}"))
}

fn decide(k: &Keelson, run: &str, decision: &str) {
    let patch = format!(
        r#"{{"spec":{{"decisions":[{{"node":"approve","decision":"{decision}","by":"alice","comment":"looked fine"}}]}}}}"#
    );
    k.ok(&["patch", "run", run, "--type=merge", "-p", &patch]);
}

fn wait_for_gate(k: &Keelson, run: &str) {
    eventually(60, "the gate to wait for approval", || {
        node(k, run, "approve", "phase") == "waiting_approval"
    });
    assert_eq!(phase(k, run), "running");
}

#[test]
fn the_example_flow_runs_around_its_gate_and_approval_completes_it() {
    let k = Keelson::up();
    k.ok(&["apply", "-f", "examples/workflows/"]);
    k.ok(&[
        "wait",
        "--for=condition=Ready",
        "flow/weekly-report",
        "agent/summarize",
        "--timeout=30s",
    ]);
    k.ok(&["wait", "--for=condition=Ready", "webhook/weekly-report", "--timeout=30s"]);
    assert_eq!(
        k.jsonpath("webhook", "weekly-report", "{.status.triggerPath}"),
        "/api/v1/webhooks/trigger/weekly-report"
    );

    wait_for_gate(&k, RUN);
    assert_eq!(node(&k, RUN, "fetch", "outputs.report"), "weekly-2026-W47");
    assert_eq!(node(&k, RUN, "summarize", "phase"), "pending");
    decide(&k, RUN, "approve");
    k.ok(&["wait", "--for=condition=Succeeded", &format!("run/{RUN}"), "--timeout=60s"]);
    assert_eq!(phase(&k, RUN), "succeeded");
    assert_eq!(
        node(&k, RUN, "summarize", "outputs.summary"),
        "bullet-points: weekly-2026-W47 is all green",
        "the second step sees the first step's output"
    );
    assert_eq!(node(&k, RUN, "approve", "decision.by"), "alice");

    let table = k.ok(&["get", "runs"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "FLOW", "PHASE", "NODES", "STARTED", "DURATION", "AGE"]);
    assert!(table.contains("succeeded") && table.contains("3/3"), "{table}");
    let described = k.ok(&["describe", "run", RUN]);
    for reason in ["NodeSucceeded", "GateWaiting", "GateApproved", "RunSucceeded", "AgentLog"] {
        assert!(described.contains(reason), "{reason} in {described}");
    }

    // The run's Jobs carry its label; deleting the run removes them and their pods.
    let selector = format!("workflows.keelson.dev/run={RUN}");
    let jobs = k.ok(&["get", "jobs", "-l", &selector, "-o", "name"]);
    assert_eq!(jobs.lines().count(), 2, "{jobs}");
    k.ok(&["delete", "run", RUN]);
    eventually(30, "the run's Jobs and pods to be deleted", || {
        k.ok(&["get", "jobs,pods", "-l", &selector, "-o", "name"]).trim().is_empty()
    });
}

#[test]
fn rejecting_the_gate_fails_the_run_and_skips_what_follows() {
    let k = Keelson::up();
    k.ok(&["apply", "-f", "examples/workflows/agents.yaml", "-f", "examples/workflows/flow.yaml"]);
    k.ok(&["apply", "-f", "examples/workflows/run.yaml"]);
    wait_for_gate(&k, RUN);
    decide(&k, RUN, "reject");
    eventually(10, "the run to fail", || phase(&k, RUN) == "failed");
    assert_eq!(node(&k, RUN, "approve", "reason"), "GateRejected");
    assert_eq!(node(&k, RUN, "summarize", "phase"), "skipped");
    // A second decision is refused: decisions cannot be changed.
    let refused = k.fails(&[
        "patch",
        "run",
        RUN,
        "--type=merge",
        "-p",
        r#"{"spec":{"decisions":[{"node":"approve","decision":"approve"}]}}"#,
    ]);
    assert!(refused.contains("gate decisions cannot be changed"), "{refused}");
}

/// A run of one step that fails until its third attempt, with `retries` further attempts.
fn flaky_run(name: &str, retries: u32) -> String {
    format!(
        "apiVersion: workflows.keelson.dev/v1alpha1
kind: Run
metadata:
  name: {name}
spec:
  start: true
  plan:
    nodes:
      - id: flaky
        agent:
          agentRef: flaky
          retries: {retries}
          retryBackoffSeconds: 1
"
    )
}

const FLAKY_AGENT: &str = "apiVersion: workflows.keelson.dev/v1alpha1
kind: Agent
metadata:
  name: flaky
spec:
  image: busybox:1.36
  command: [sh, -c]
  args: ['echo \"attempt $KEELSON_ATTEMPT\"; test \"$KEELSON_ATTEMPT\" -ge 3']
";

#[test]
fn a_step_is_retried_up_to_its_limit() {
    let k = Keelson::up();
    k.apply("agent.yaml", FLAKY_AGENT);
    k.apply("enough.yaml", &flaky_run("enough", 3));
    k.apply("too-few.yaml", &flaky_run("too-few", 1));
    eventually(60, "both runs to finish", || {
        phase(&k, "enough") == "succeeded" && phase(&k, "too-few") == "failed"
    });
    assert_eq!(node(&k, "enough", "flaky", "attempts"), "3");
    assert_eq!(node(&k, "too-few", "flaky", "attempts"), "2");
    assert_eq!(node(&k, "too-few", "flaky", "exitCode"), "1");
    let message = k.jsonpath("run", "too-few", "{.status.message}");
    assert!(message.contains("flaky"), "{message}");
    let jobs = k.ok(&["get", "jobs", "-l", "workflows.keelson.dev/run=enough", "-o", "name"]);
    assert_eq!(jobs.lines().count(), 3, "one Job per attempt: {jobs}");
}

#[test]
fn a_crash_mid_run_resumes_without_running_anything_twice() {
    let mut k = Keelson::up();
    k.ok(&["apply", "-f", "examples/workflows/agents.yaml", "-f", "examples/workflows/flow.yaml"]);
    // A slow first step, so the kill lands while it runs.
    k.ok(&[
        "patch",
        "agent",
        "fetch-report",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/args/0","value":"sleep 4\necho '{\"type\":\"output\",\"key\":\"report\",\"value\":\"slow\"}'"}]"#,
    ]);
    k.ok(&["apply", "-f", "examples/workflows/run.yaml"]);
    eventually(30, "the first step to run", || node(&k, RUN, "fetch", "phase") == "running");
    k.kill();
    k.start();
    // The step's process ran on under its supervisor: the restarted node adopts it, and the
    // run goes on with its output. One attempt, one Job.
    wait_for_gate(&k, RUN);
    assert_eq!(node(&k, RUN, "fetch", "attempts"), "1");
    assert_eq!(node(&k, RUN, "fetch", "outputs.report"), "slow");
    let selector = format!("workflows.keelson.dev/run={RUN},workflows.keelson.dev/node=fetch");
    let jobs = k.ok(&["get", "jobs", "-l", &selector, "-o", "name"]);
    assert_eq!(jobs.lines().count(), 1, "{jobs}");

    // A pending gate survives a restart too.
    k.kill();
    k.start();
    assert_eq!(node(&k, RUN, "approve", "phase"), "waiting_approval");
    decide(&k, RUN, "approve");
    let waited =
        k.kubectl(&["wait", "--for=condition=Succeeded", &format!("run/{RUN}"), "--timeout=60s"]);
    assert!(
        waited.status.success(),
        "the run did not succeed after its gate was approved ({}):\n{}\n{}\n{}",
        String::from_utf8_lossy(&waited.stderr).trim(),
        k.ok(&["get", "run", RUN, "-o", "yaml"]),
        k.ok(&["get", "jobs,pods", "-o", "wide"]),
        k.ok(&["get", "events", "--sort-by=.metadata.creationTimestamp"])
    );
    assert_eq!(node(&k, RUN, "summarize", "attempts"), "1");
}

#[test]
fn flows_check_their_agents_and_runs_keep_their_plan_clone_cancel_and_expire() {
    let k = Keelson::up();
    // A flow whose agents do not exist yet cannot run; it can once they do.
    k.ok(&["apply", "-f", "examples/workflows/flow.yaml"]);
    eventually(30, "the flow to be refused", || {
        k.jsonpath("flow", "weekly-report", "{.status.conditions[?(@.type==\"Ready\")].reason}")
            == "InvalidSpec"
    });
    k.ok(&["apply", "-f", "examples/workflows/agents.yaml"]);
    k.ok(&["wait", "--for=condition=Ready", "flow/weekly-report", "--timeout=30s"]);

    k.apply(
        "first.yaml",
        "apiVersion: workflows.keelson.dev/v1alpha1\nkind: Run\nmetadata:\n  name: first\nspec:\n  flowRef: weekly-report\n  parameters: {WEEK: 2026-W48}\n  start: true\n",
    );
    wait_for_gate(&k, "first");
    // Editing the flow does not change a run already made from it.
    k.ok(&[
        "patch",
        "flow",
        "weekly-report",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/edges/1"},{"op":"remove","path":"/spec/nodes/2"}]"#,
    ]);

    k.apply(
        "second.yaml",
        "apiVersion: workflows.keelson.dev/v1alpha1\nkind: Run\nmetadata:\n  name: second\nspec:\n  cloneOf: first\n  start: true\n",
    );
    wait_for_gate(&k, "second");
    assert_eq!(node(&k, "second", "fetch", "outputs.report"), "weekly-2026-W48");
    assert_eq!(k.jsonpath("run", "second", "{.status.progress}"), "1/3");
    k.ok(&["patch", "run", "second", "--type=merge", "-p", r#"{"spec":{"cancel":true}}"#]);
    eventually(10, "the clone to be cancelled", || phase(&k, "second") == "cancelled");
    assert_eq!(node(&k, "second", "approve", "phase"), "skipped");

    decide(&k, "first", "approve");
    k.ok(&["wait", "--for=condition=Succeeded", "run/first", "--timeout=60s"]);
    assert_eq!(k.jsonpath("run", "first", "{.status.progress}"), "3/3");

    // A finished run is deleted with its Jobs once its time to live has passed.
    k.ok(&[
        "patch",
        "run",
        "first",
        "--type=merge",
        "-p",
        r#"{"spec":{"ttlSecondsAfterFinished":1}}"#,
    ]);
    eventually(30, "the run to expire", || !k.kubectl(&["get", "run", "first"]).status.success());
    eventually(30, "its Jobs to go with it", || {
        k.ok(&["get", "jobs", "-l", "workflows.keelson.dev/run=first", "-o", "name"])
            .trim()
            .is_empty()
    });
}

#[test]
fn a_schedule_starts_runs_of_its_flow_and_takes_them_with_it() {
    let k = Keelson::up();
    k.ok(&["apply", "-f", "examples/workflows/agents.yaml", "-f", "examples/workflows/flow.yaml"]);
    k.apply(
        "every-minute.yaml",
        "apiVersion: workflows.keelson.dev/v1alpha1\nkind: Schedule\nmetadata:\n  name: every-minute\nspec:\n  flowRef: weekly-report\n  cron: '* * * * *'\n  timeZone: Europe/Berlin\n  parameters: {WEEK: 2026-W49}\n",
    );
    k.ok(&["wait", "--for=condition=Ready", "schedule/every-minute", "--timeout=30s"]);
    assert!(!k.jsonpath("schedule", "every-minute", "{.status.nextScheduleTime}").is_empty());
    eventually(75, "the first run to start", || {
        !k.jsonpath("schedule", "every-minute", "{.status.lastRunName}").is_empty()
    });
    let run = k.jsonpath("schedule", "every-minute", "{.status.lastRunName}");
    assert!(run.starts_with("every-minute-"), "{run}");
    let runs =
        k.ok(&["get", "runs", "-l", "workflows.keelson.dev/schedule=every-minute", "-o", "name"]);
    assert_eq!(runs.trim(), format!("run.workflows.keelson.dev/{run}"));
    wait_for_gate(&k, &run);
    assert_eq!(node(&k, &run, "fetch", "outputs.report"), "weekly-2026-W49");
    // Only suspend may change; deleting the schedule takes its runs with it.
    let refused = k.fails(&[
        "patch",
        "schedule",
        "every-minute",
        "--type=merge",
        "-p",
        r#"{"spec":{"cron":"0 * * * *"}}"#,
    ]);
    assert!(refused.contains("a schedule cannot be updated"), "{refused}");
    k.ok(&[
        "patch",
        "schedule",
        "every-minute",
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ]);
    k.ok(&["delete", "schedule", "every-minute"]);
    eventually(30, "the schedule's runs to go", || {
        !k.kubectl(&["get", "run", &run]).status.success()
    });
}
