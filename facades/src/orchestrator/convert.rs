//! Pure translations between the REST shapes ([`model`]) and the workflow resources.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use keelson_api_crds::conditions;
use keelson_api_crds::workflows as crd;
use kube::ResourceExt;

use super::model;
use crate::error::{ApiError, ErrorDetail};

/// Annotation holding a resource's display name.
pub const DISPLAY_NAME: &str = "keelson.dev/display-name";
/// Annotation naming who created a resource through the API.
pub const CREATED_BY: &str = "keelson.dev/created-by";
/// Label the schedule controller puts on the runs it starts.
const SCHEDULE_LABEL: &str = "workflows.keelson.dev/schedule";

/// The path of a run's event stream.
pub fn events_url(run: &str) -> String {
    format!("/api/v1/runs/{run}/events")
}

/// The path that triggers a flow's webhooks.
pub fn trigger_url(flow: &str) -> String {
    format!("/api/v1/webhooks/trigger/{flow}")
}

fn time(time: &Time) -> String {
    time.0.to_string()
}

fn created_at(meta: &ObjectMeta) -> String {
    meta.creation_timestamp.as_ref().map(time).unwrap_or_default()
}

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

fn display_name(meta: &ObjectMeta) -> String {
    annotation(meta, DISPLAY_NAME).unwrap_or_else(|| meta.name.clone().unwrap_or_default())
}

/// Metadata of a resource created through the API: its id, display name and creator.
pub fn new_meta(id: &str, name: Option<String>, created_by: &str) -> ObjectMeta {
    let mut annotations = BTreeMap::from([(CREATED_BY.to_owned(), created_by.to_owned())]);
    if let Some(name) = name {
        annotations.insert(DISPLAY_NAME.to_owned(), name);
    }
    ObjectMeta {
        name: Some(id.to_owned()),
        annotations: Some(annotations),
        ..ObjectMeta::default()
    }
}

/// The id a client chose, checked, or a new one: `<prefix>-<12 hex digits>`.
pub fn id_or_new(id: Option<String>, prefix: &str) -> Result<String, ApiError> {
    match id {
        Some(id) => {
            check_id(&id)?;
            Ok(id)
        }
        None => {
            let mut bytes = [0u8; 6];
            getrandom::fill(&mut bytes).map_err(|e| ApiError::internal(&e))?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            Ok(format!("{prefix}-{hex}"))
        }
    }
}

/// Whether a resource could be named `id` (a DNS subdomain, as kubectl allows): ids that
/// cannot are answered 404 without asking the Kubernetes API.
pub fn could_exist(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 253
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Refuses an id that is not a DNS label (ids name resources, and a run's id names its Jobs).
pub fn check_id(id: &str) -> Result<(), ApiError> {
    let valid = !id.is_empty()
        && id.len() <= 63
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-');
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "invalid id",
            vec![ErrorDetail {
            code: None,
                field: Some("id".into()),
                message: "must be 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit".into(),
            }],
        ))
    }
}

/// Parameter values as the text steps see.
pub fn params(values: BTreeMap<String, model::ParamValue>) -> BTreeMap<String, String> {
    values.into_iter().map(|(name, value)| (name, value.into_text())).collect()
}

/// A timeout in whole seconds.
pub fn timeout_seconds(timeout: model::Timeout) -> Result<i64, ApiError> {
    let seconds = match &timeout {
        model::Timeout::Seconds(seconds) => *seconds,
        model::Timeout::Text(text) => {
            let duration: jiff::SignedDuration = text.parse().map_err(|_| {
                timeout_error(format!("{text:?} is not a duration such as 90s, 30m or 1h 30m"))
            })?;
            duration.as_secs()
        }
    };
    if (1..=604_800).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(timeout_error(format!("must be 1 second to 7 days, not {seconds} seconds")))
    }
}

fn timeout_error(message: String) -> ApiError {
    ApiError::invalid(
        "invalid timeout",
        vec![ErrorDetail { code: None, field: Some("timeout".into()), message }],
    )
}

fn env_map(env: &[EnvVar]) -> BTreeMap<String, String> {
    // References (`valueFrom`, e.g. Secrets) are not shown: only literal values are.
    env.iter().filter_map(|var| Some((var.name.clone(), var.value.clone()?))).collect()
}

fn env_list(env: BTreeMap<String, String>) -> Vec<EnvVar> {
    env.into_iter()
        .map(|(name, value)| EnvVar { name, value: Some(value), value_from: None })
        .collect()
}

fn decision(decision: crd::GateDecision) -> model::Decision {
    match decision {
        crd::GateDecision::Approve => model::Decision::Approve,
        crd::GateDecision::Reject => model::Decision::Reject,
    }
}

/// The resource's decision for a REST one.
pub fn crd_decision(decision: model::Decision) -> crd::GateDecision {
    match decision {
        model::Decision::Approve => crd::GateDecision::Approve,
        model::Decision::Reject => crd::GateDecision::Reject,
    }
}

/// A plan as the API shows it.
pub fn plan(plan: &crd::Plan) -> model::Plan {
    model::Plan {
        nodes: plan.nodes.iter().map(plan_node).collect(),
        edges: plan
            .edges
            .iter()
            .map(|e| model::Edge { from: e.from.clone(), to: e.to.clone() })
            .collect(),
        timeout_seconds: plan.timeout_seconds,
    }
}

fn plan_node(node: &crd::FlowNode) -> model::PlanNode {
    let id = node.id.clone();
    match (&node.agent, &node.gate) {
        (Some(step), _) => model::PlanNode {
            id,
            kind: Some(model::NodeKind::Agent),
            agent_id: Some(step.agent_ref.clone()),
            args: step.args.clone(),
            env: env_map(&step.env),
            inputs: step.inputs.clone(),
            timeout_seconds: step.timeout_seconds,
            retries: (step.retries != 0).then_some(step.retries),
            retry_backoff_seconds: step.retry_backoff_seconds,
            ..model::PlanNode::default()
        },
        (None, gate) => {
            let gate = gate.clone().unwrap_or_default();
            model::PlanNode {
                id,
                kind: Some(model::NodeKind::Gate),
                timeout_seconds: gate.timeout_seconds,
                description: gate.description,
                default_decision: gate.default_decision.map(decision),
                ..model::PlanNode::default()
            }
        }
    }
}

/// The resource's plan for a REST one; refuses nodes whose fields contradict their kind.
pub fn crd_plan(plan: model::Plan, field: &str) -> Result<crd::Plan, ApiError> {
    let mut details = Vec::new();
    let mut nodes = Vec::with_capacity(plan.nodes.len());
    for (i, node) in plan.nodes.into_iter().enumerate() {
        let at = |name: &str| format!("{field}nodes[{i}].{name}");
        let kind = node.kind.unwrap_or(if node.agent_id.is_some() {
            model::NodeKind::Agent
        } else {
            model::NodeKind::Gate
        });
        match kind {
            model::NodeKind::Agent => {
                let Some(agent_ref) = node.agent_id else {
                    details.push(ErrorDetail {
                        code: None,
                        field: Some(at("agent_id")),
                        message: "an agent step names its agent".into(),
                    });
                    continue;
                };
                if node.description.is_some() || node.default_decision.is_some() {
                    details.push(ErrorDetail {
                        code: None,
                        field: Some(at("kind")),
                        message: "description and default_decision belong to gates".into(),
                    });
                }
                nodes.push(crd::FlowNode {
                    id: node.id,
                    agent: Some(crd::AgentStep {
                        agent_ref,
                        args: node.args,
                        env: env_list(node.env),
                        inputs: node.inputs,
                        timeout_seconds: node.timeout_seconds,
                        retries: node.retries.unwrap_or(0),
                        retry_backoff_seconds: node.retry_backoff_seconds,
                    }),
                    gate: None,
                });
            }
            model::NodeKind::Gate => {
                let step_fields = node.agent_id.is_some()
                    || !node.args.is_empty()
                    || !node.env.is_empty()
                    || !node.inputs.is_empty()
                    || node.retries.is_some()
                    || node.retry_backoff_seconds.is_some();
                if step_fields {
                    details.push(ErrorDetail {
                        code: None,
                        field: Some(at("kind")),
                        message: "agent_id, args, env, inputs and retries belong to agent steps"
                            .into(),
                    });
                }
                nodes.push(crd::FlowNode {
                    id: node.id,
                    agent: None,
                    gate: Some(crd::GateStep {
                        description: node.description,
                        timeout_seconds: node.timeout_seconds,
                        default_decision: node.default_decision.map(crd_decision),
                    }),
                });
            }
        }
    }
    if !details.is_empty() {
        return Err(ApiError::invalid("invalid plan", details));
    }
    Ok(crd::Plan {
        nodes,
        edges: plan.edges.into_iter().map(|e| crd::FlowEdge { from: e.from, to: e.to }).collect(),
        timeout_seconds: plan.timeout_seconds,
    })
}

fn run_state(phase: Option<crd::RunPhase>) -> model::RunState {
    match phase {
        None | Some(crd::RunPhase::Queued) => model::RunState::Queued,
        Some(crd::RunPhase::Running) => model::RunState::Running,
        Some(crd::RunPhase::Succeeded) => model::RunState::Succeeded,
        Some(crd::RunPhase::Failed) => model::RunState::Failed,
        Some(crd::RunPhase::Cancelled) => model::RunState::Cancelled,
    }
}

fn node_status(phase: crd::NodePhase) -> model::NodeStatus {
    match phase {
        crd::NodePhase::Pending => model::NodeStatus::Pending,
        crd::NodePhase::Running => model::NodeStatus::Running,
        crd::NodePhase::WaitingApproval => model::NodeStatus::WaitingApproval,
        crd::NodePhase::Succeeded => model::NodeStatus::Succeeded,
        crd::NodePhase::Failed => model::NodeStatus::Failed,
        crd::NodePhase::Skipped => model::NodeStatus::Skipped,
    }
}

/// Whether a run has finished.
pub fn is_finished(run: &crd::Run) -> bool {
    matches!(
        run.status.as_ref().and_then(|s| s.phase),
        Some(crd::RunPhase::Succeeded | crd::RunPhase::Failed | crd::RunPhase::Cancelled)
    )
}

/// The run's state as the API names it.
pub fn state_of(run: &crd::Run) -> model::RunState {
    run_state(run.status.as_ref().and_then(|s| s.phase))
}

/// Who created a run: the annotation the API writes, or the schedule that started it.
fn run_creator(run: &crd::Run) -> Option<String> {
    annotation(&run.metadata, CREATED_BY)
        .or_else(|| run.labels().get(SCHEDULE_LABEL).map(|schedule| format!("schedule:{schedule}")))
}

/// A decision as the API shows it.
pub fn gate_decision(run: &str, record: &crd::GateDecisionRecord) -> model::GateDecision {
    model::GateDecision {
        run_id: run.to_owned(),
        node_id: record.node.clone(),
        decision: decision(record.decision),
        by: record.by.clone(),
        at: record.at.as_ref().map(time),
        comment: record.comment.clone(),
    }
}

/// A run as the API shows it. `flow_plan` is the plan of its flow, used for the node list
/// until the controller has copied the plan into the run's status.
pub fn run(run: &crd::Run, flow_plan: Option<&crd::Plan>) -> model::Run {
    let id = run.name_any();
    let status = run.status.clone().unwrap_or_default();
    let plan = status.plan.as_ref().or(run.spec.plan.as_ref()).or(flow_plan);
    let kinds: BTreeMap<&str, model::NodeKind> = plan
        .map(|plan| {
            plan.nodes
                .iter()
                .map(|n| {
                    let kind = if n.agent.is_some() {
                        model::NodeKind::Agent
                    } else {
                        model::NodeKind::Gate
                    };
                    (n.id.as_str(), kind)
                })
                .collect()
        })
        .unwrap_or_default();
    let kind_of = |node: &str| kinds.get(node).copied().unwrap_or(model::NodeKind::Agent);
    let nodes = if status.nodes.is_empty() {
        plan.map(|plan| plan.nodes.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|node| model::RunNode {
                id: node.id.clone(),
                kind: kind_of(&node.id),
                status: model::NodeStatus::Pending,
                attempts: 0,
                started_at: None,
                finished_at: None,
                outputs: BTreeMap::new(),
                message: None,
                job_id: None,
                exit_code: None,
                decision: None,
            })
            .collect()
    } else {
        status
            .nodes
            .iter()
            .map(|node| model::RunNode {
                id: node.id.clone(),
                kind: kind_of(&node.id),
                status: node_status(node.phase),
                attempts: node.attempts,
                started_at: node.started_at.as_ref().map(time),
                finished_at: node.finished_at.as_ref().map(time),
                outputs: node.outputs.clone(),
                message: node.message.clone(),
                job_id: node.job_name.clone(),
                exit_code: node.exit_code,
                decision: node.decision.as_ref().map(|d| gate_decision(&id, d)),
            })
            .collect()
    };
    let params = if status.parameters.is_empty() {
        run.spec.parameters.clone()
    } else {
        status.parameters.clone()
    };
    model::Run {
        name: display_name(&run.metadata),
        flow_id: run.spec.flow_ref.clone(),
        status: run_state(status.phase),
        params,
        nodes,
        outputs: status.outputs,
        parent_run_id: run.spec.clone_of.clone(),
        message: status.message,
        created_by: run_creator(run),
        created_at: created_at(&run.metadata),
        started_at: status.started_at.as_ref().map(time),
        finished_at: status.finished_at.as_ref().map(time),
        events_url: events_url(&id),
        id,
    }
}

/// A flow as the API shows it.
pub fn flow(flow: &crd::Flow) -> model::Flow {
    let ready = flow.status.as_ref().is_some_and(|s| s.observed.is_true("Ready"));
    let problems = flow
        .status
        .as_ref()
        .and_then(|s| conditions::find(&s.observed.conditions, "Ready"))
        .filter(|condition| condition.status == "False")
        .map(|condition| condition.message.split("; ").map(str::to_owned).collect())
        .unwrap_or_default();
    let plan = plan(&flow.spec.plan);
    model::Flow {
        id: flow.name_any(),
        name: display_name(&flow.metadata),
        description: flow.spec.description.clone(),
        params: flow
            .spec
            .parameters
            .iter()
            .map(|p| model::FlowParam {
                name: p.name.clone(),
                description: p.description.clone(),
                required: p.required,
                default: p.default.clone(),
            })
            .collect(),
        nodes: plan.nodes,
        edges: plan.edges,
        timeout_seconds: plan.timeout_seconds,
        ttl_seconds_after_finished: flow.spec.ttl_seconds_after_finished,
        version: flow.metadata.generation.unwrap_or(1),
        ready,
        problems,
        created_by: annotation(&flow.metadata, CREATED_BY),
        created_at: created_at(&flow.metadata),
    }
}

/// The flow resource's spec for a REST definition.
pub fn flow_spec(input: model::FlowInput) -> Result<crd::FlowSpec, ApiError> {
    let plan = crd_plan(
        model::Plan {
            nodes: input.nodes,
            edges: input.edges,
            timeout_seconds: input.timeout_seconds,
        },
        "",
    )?;
    Ok(crd::FlowSpec {
        description: input.description,
        parameters: input
            .params
            .into_iter()
            .map(|p| crd::FlowParameter {
                name: p.name,
                description: p.description,
                required: p.required,
                default: p.default,
            })
            .collect(),
        plan,
        ttl_seconds_after_finished: input.ttl_seconds_after_finished,
    })
}

/// An agent as the API shows it.
pub fn agent(agent: &crd::Agent) -> model::Agent {
    let spec = &agent.spec;
    model::Agent {
        id: agent.name_any(),
        name: display_name(&agent.metadata),
        image: spec.image.clone(),
        command: spec.command.clone(),
        args: spec.args.clone(),
        env: env_map(&spec.env),
        capabilities: spec.capabilities.clone(),
        version: spec.version.clone(),
        description: spec.description.clone(),
        created_by: annotation(&agent.metadata, CREATED_BY),
        created_at: created_at(&agent.metadata),
    }
}

/// The agent resource's spec for a REST definition. `resources` are kept from the resource
/// being replaced: the API does not show or set them.
pub fn agent_spec(input: model::AgentInput) -> crd::AgentSpec {
    crd::AgentSpec {
        image: input.image,
        command: input.command,
        args: input.args,
        env: env_list(input.env),
        resources: None,
        capabilities: input.capabilities,
        version: input.version,
        description: input.description,
    }
}

fn concurrency(policy: crd::ConcurrencyPolicy) -> model::Concurrency {
    match policy {
        crd::ConcurrencyPolicy::Allow => model::Concurrency::Allow,
        crd::ConcurrencyPolicy::Forbid => model::Concurrency::Forbid,
        crd::ConcurrencyPolicy::Replace => model::Concurrency::Replace,
    }
}

/// A schedule as the API shows it.
pub fn schedule(schedule: &crd::Schedule) -> model::Schedule {
    let spec = &schedule.spec;
    let status = schedule.status.clone().unwrap_or_default();
    model::Schedule {
        id: schedule.name_any(),
        flow_id: spec.flow_ref.clone(),
        cron: spec.cron.clone(),
        time_zone: spec.time_zone.clone(),
        params: spec.parameters.clone(),
        suspended: spec.suspend,
        concurrency: concurrency(spec.concurrency_policy),
        next_run_at: status.next_schedule_time.as_ref().map(time),
        last_run_at: status.last_schedule_time.as_ref().map(time),
        last_run_id: status.last_run_name,
        active_run_ids: status.active,
        created_by: annotation(&schedule.metadata, CREATED_BY),
        created_at: created_at(&schedule.metadata),
    }
}

/// The schedule resource's spec for a REST definition.
pub fn schedule_spec(input: model::ScheduleInput) -> crd::ScheduleSpec {
    let policy = match input.concurrency.unwrap_or(model::Concurrency::Forbid) {
        model::Concurrency::Allow => crd::ConcurrencyPolicy::Allow,
        model::Concurrency::Forbid => crd::ConcurrencyPolicy::Forbid,
        model::Concurrency::Replace => crd::ConcurrencyPolicy::Replace,
    };
    crd::ScheduleSpec {
        flow_ref: input.flow_id,
        cron: input.cron,
        time_zone: input.time_zone.unwrap_or_else(|| "UTC".into()),
        suspend: input.suspended,
        concurrency_policy: policy,
        starting_deadline_seconds: None,
        parameters: params(input.params),
        successful_runs_history_limit: 3,
        failed_runs_history_limit: 1,
    }
}

/// A Job's status as the API shows it.
pub fn job_status(job: &Job) -> model::JobStatus {
    let status = job.status.clone().unwrap_or_default();
    let holds = |type_: &str| {
        status.conditions.iter().flatten().any(|c| c.type_ == type_ && c.status == "True")
    };
    let active = status.active.unwrap_or(0);
    let state = if holds("Complete") {
        model::JobState::Succeeded
    } else if holds("Failed") {
        model::JobState::Failed
    } else if active > 0 {
        model::JobState::Running
    } else {
        model::JobState::Pending
    };
    model::JobStatus {
        job_id: job.name_any(),
        status: state,
        active,
        succeeded: status.succeeded.unwrap_or(0),
        failed: status.failed.unwrap_or(0),
        start_time: status.start_time.as_ref().map(time),
        completion_time: status.completion_time.as_ref().map(time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> T {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn a_rest_plan_round_trips_through_the_resource() {
        let rest: model::Plan = serde_json::from_value(json!({
            "nodes": [
                {"id": "fetch", "agent_id": "fetcher", "env": {"A": "1"}, "retries": 2},
                {"id": "approve", "description": "Ship it?", "default_decision": "approve",
                 "timeout_seconds": 60},
                {"id": "sum", "kind": "agent", "agent_id": "summarizer", "inputs": ["fetch"]}
            ],
            "edges": [{"from": "fetch", "to": "approve"}],
            "timeout_seconds": 600
        }))
        .unwrap();
        let resource = crd_plan(rest, "").unwrap();
        assert_eq!(resource.nodes[0].agent.as_ref().unwrap().retries, 2);
        assert_eq!(resource.nodes[1].gate.as_ref().unwrap().timeout_seconds, Some(60));
        let back = serde_json::to_value(plan(&resource)).unwrap();
        assert_eq!(back["nodes"][0]["kind"], "agent");
        assert_eq!(back["nodes"][0]["env"], json!({"A": "1"}));
        assert_eq!(back["nodes"][1]["kind"], "gate");
        assert_eq!(back["nodes"][1]["default_decision"], "approve");
        assert_eq!(back["nodes"][2]["inputs"], json!(["fetch"]));
        assert_eq!(back["timeout_seconds"], 600);
    }

    #[test]
    fn nodes_contradicting_their_kind_are_refused_with_their_fields() {
        let rest: model::Plan = serde_json::from_value(json!({
            "nodes": [
                {"id": "a", "kind": "agent"},
                {"id": "b", "kind": "gate", "agent_id": "x"}
            ]
        }))
        .unwrap();
        let error = crd_plan(rest, "plan.").unwrap_err();
        let fields: Vec<_> = error.details.iter().filter_map(|d| d.field.clone()).collect();
        assert_eq!(fields, ["plan.nodes[0].agent_id", "plan.nodes[1].kind"]);
    }

    #[test]
    fn a_run_shows_its_nodes_with_kinds_and_pending_nodes_before_the_controller_saw_it() {
        let mut resource: crd::Run = yaml(
            r#"
apiVersion: workflows.keelson.dev/v1alpha1
kind: Run
metadata: {name: r1, creationTimestamp: "2026-11-22T10:00:00Z",
           annotations: {keelson.dev/created-by: ci}}
spec:
  flowRef: report
  parameters: {week: "47"}
"#,
        );
        let flow_plan: crd::Plan = yaml(
            "nodes: [{id: fetch, agent: {agentRef: f}}, {id: approve, gate: {}}]\nedges: [{from: fetch, to: approve}]",
        );
        let shown = run(&resource, Some(&flow_plan));
        assert_eq!(shown.status, model::RunState::Queued);
        assert_eq!(shown.nodes.len(), 2);
        assert_eq!(shown.nodes[1].kind, model::NodeKind::Gate);
        assert_eq!(shown.nodes[1].status, model::NodeStatus::Pending);
        assert_eq!(shown.created_by.as_deref(), Some("ci"));
        assert_eq!(shown.events_url, "/api/v1/runs/r1/events");
        assert_eq!(shown.params["week"], "47");

        resource.status = Some(yaml(
            r#"
phase: running
plan: {nodes: [{id: fetch, agent: {agentRef: f}}, {id: approve, gate: {}}]}
nodes:
  - {id: fetch, phase: succeeded, attempts: 1, jobName: r1-fetch-1, outputs: {n: "3"}}
  - id: approve
    phase: waiting_approval
    decision: {node: approve, decision: approve, by: ana}
"#,
        ));
        let shown = serde_json::to_value(run(&resource, None)).unwrap();
        assert_eq!(shown["status"], "running");
        assert_eq!(shown["nodes"][0]["job_id"], "r1-fetch-1");
        assert_eq!(shown["nodes"][1]["status"], "waiting_approval");
        assert_eq!(shown["nodes"][1]["decision"]["by"], "ana");
        assert_eq!(shown["nodes"][1]["kind"], "gate");
    }

    #[test]
    fn job_states_follow_conditions_then_active_pods() {
        let job = |status: &str| -> Job {
            yaml(&format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nstatus: {status}"
            ))
        };
        let state = |status| job_status(&job(status)).status;
        assert_eq!(state("{}"), model::JobState::Pending);
        assert_eq!(state("{active: 1}"), model::JobState::Running);
        assert_eq!(
            state("{succeeded: 1, conditions: [{type: Complete, status: \"True\"}]}"),
            model::JobState::Succeeded
        );
        assert_eq!(
            state("{failed: 1, conditions: [{type: Failed, status: \"True\"}]}"),
            model::JobState::Failed
        );
    }

    #[test]
    fn timeouts_are_seconds_or_durations_within_bounds() {
        assert_eq!(timeout_seconds(model::Timeout::Seconds(90)).unwrap(), 90);
        assert_eq!(timeout_seconds(model::Timeout::Text("30m".into())).unwrap(), 1800);
        assert_eq!(timeout_seconds(model::Timeout::Text("1h 30m".into())).unwrap(), 5400);
        assert!(timeout_seconds(model::Timeout::Seconds(0)).is_err());
        assert!(timeout_seconds(model::Timeout::Text("soon".into())).is_err());
    }

    #[test]
    fn ids_are_dns_labels_or_generated() {
        assert!(check_id("weekly-report").is_ok());
        assert!(check_id("Weekly").is_err());
        assert!(check_id("-a").is_err());
        assert!(check_id(&"a".repeat(64)).is_err());
        let id = id_or_new(None, "run").unwrap();
        assert!(id.starts_with("run-") && id.len() == 16, "{id}");
        assert!(check_id(&id).is_ok());
    }
}
