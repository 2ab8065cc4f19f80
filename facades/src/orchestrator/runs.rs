//! `/api/v1/runs`: list, create, read, delete, start, clone, stream, and gate decisions.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as Reply};
use keelson_api_crds::workflows::{self as crd, GateDecisionRecord, NodePhase};
use kube::ResourceExt;
use serde::Deserialize;
use utoipa::IntoParams;

use super::convert;
use super::model::{self, CloneRun, CreateRun, Decision, DecisionRequest, GateDecision, Run};
use super::page::{Page, PageQuery};
use super::{Orchestrator, sort_key};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, OptionalJson, Query};

/// Filters of the run list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunFilter {
    /// Only runs in this state.
    pub status: Option<model::RunState>,
    /// Only runs of this flow.
    pub flow_id: Option<String>,
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs",
    params(PageQuery, RunFilter),
    responses((status = 200, description = "A page of runs", body = Page<Run>)))]
pub async fn list_runs(
    State(api): State<Orchestrator>,
    Query(page): Query<PageQuery>,
    Query(filter): Query<RunFilter>,
) -> Result<Reply<Page<Run>>, ApiError> {
    let runs = api
        .runs
        .all()
        .into_iter()
        .filter(|run| filter.flow_id.is_none() || run.spec.flow_ref == filter.flow_id)
        .filter(|run| filter.status.is_none_or(|status| convert::state_of(run) == status))
        .map(|run| (sort_key(&run.metadata), run))
        .collect();
    let page = super::page::page(runs, &page)?;
    Ok(Reply(Page {
        items: page.items.iter().map(|run| api.show_run(run)).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Creates a run of a flow or of an inline plan; `auto_start` starts it at once.
#[utoipa::path(post, path = "/api/v1/runs", tag = "runs", request_body = CreateRun,
    responses(
        (status = 201, description = "The run, with its events_url", body = Run),
        (status = 404, description = "The flow does not exist", body = ErrorBody),
        (status = 409, description = "A run with this id exists", body = ErrorBody)))]
pub async fn create_run(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Json(request): Json<CreateRun>,
) -> Result<Response, ApiError> {
    let id = convert::id_or_new(request.id, "run")?;
    let (flow_ref, plan) = match (request.flow_id, request.plan) {
        (Some(flow), None) => {
            api.flow(&flow)?;
            (Some(flow), None)
        }
        (None, Some(plan)) => (None, Some(convert::crd_plan(plan, "plan.")?)),
        _ => return Err(ApiError::bad_request("give exactly one of flow_id and plan")),
    };
    let spec = crd::RunSpec {
        flow_ref,
        plan,
        parameters: convert::params(request.params),
        start: request.auto_start,
        timeout_seconds: request.timeout.map(convert::timeout_seconds).transpose()?,
        ..crd::RunSpec::default()
    };
    let run =
        crd::Run { metadata: convert::new_meta(&id, request.name, &who.name), spec, status: None };
    let run = api.create(&api.runs, "run", run).await?;
    Ok((StatusCode::CREATED, Reply(api.show_run(&run))).into_response())
}

/// A run, with every node.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, description = "The run", body = Run),
        (status = 404, description = "No such run", body = ErrorBody)))]
pub async fn get_run(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<Run>, ApiError> {
    Ok(Reply(api.show_run(&*api.run(&id)?)))
}

/// Deletes a run: its running steps are stopped and its Jobs deleted.
#[utoipa::path(delete, path = "/api/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such run", body = ErrorBody)))]
pub async fn delete_run(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    api.delete(&api.runs, "run", &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Starts a queued run.
#[utoipa::path(post, path = "/api/v1/runs/{id}/start", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, description = "The started run", body = Run),
        (status = 404, description = "No such run", body = ErrorBody),
        (status = 409, description = "The run was already started or has ended", body = ErrorBody)))]
pub async fn start_run(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<Run>, ApiError> {
    let run = api
        .update(&api.runs, "run", &id, |run: &mut crd::Run| {
            if run.spec.start {
                return Err(ApiError::conflict(format!("run {id:?} was already started")));
            }
            if run.spec.cancel || convert::is_finished(run) {
                return Err(ApiError::conflict(format!(
                    "run {id:?} has ended; clone it to run it again"
                )));
            }
            run.spec.start = true;
            Ok(())
        })
        .await?;
    Ok(Reply(api.show_run(&run)))
}

/// Creates a new run of what a run ran (its plan and parameters).
#[utoipa::path(post, path = "/api/v1/runs/{id}/clone", tag = "runs", request_body(content = Option<CloneRun>),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 201, description = "The new run", body = Run),
        (status = 404, description = "No such run", body = ErrorBody)))]
pub async fn clone_run(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    OptionalJson(request): OptionalJson<CloneRun>,
) -> Result<Response, ApiError> {
    let source = api.run(&id)?;
    let new_id = convert::id_or_new(None, "run")?;
    let name = format!("{} (clone)", api.show_run(&source).name);
    let spec =
        crd::RunSpec { clone_of: Some(id), start: request.auto_start, ..crd::RunSpec::default() };
    let run = crd::Run {
        metadata: convert::new_meta(&new_id, Some(name), &who.name),
        spec,
        status: None,
    };
    let run = api.create(&api.runs, "run", run).await?;
    Ok((StatusCode::CREATED, Reply(api.show_run(&run))).into_response())
}

/// Approves a gate that waits for a decision.
#[utoipa::path(post, path = "/api/v1/runs/{id}/nodes/{nodeId}/approve", tag = "runs",
    request_body(content = Option<DecisionRequest>),
    params(("id" = String, Path, description = "Run id"), ("nodeId" = String, Path, description = "Gate node id")),
    responses((status = 200, description = "The decision", body = GateDecision),
        (status = 404, description = "No such run or node", body = ErrorBody),
        (status = 409, description = "The node is not a gate waiting for a decision", body = ErrorBody)))]
pub async fn approve(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Path((id, node)): Path<(String, String)>,
    OptionalJson(request): OptionalJson<DecisionRequest>,
) -> Result<Reply<GateDecision>, ApiError> {
    decide(api, who, id, node, Decision::Approve, request.comment).await
}

/// Rejects a gate that waits for a decision; the run fails.
#[utoipa::path(post, path = "/api/v1/runs/{id}/nodes/{nodeId}/reject", tag = "runs",
    request_body(content = Option<DecisionRequest>),
    params(("id" = String, Path, description = "Run id"), ("nodeId" = String, Path, description = "Gate node id")),
    responses((status = 200, description = "The decision", body = GateDecision),
        (status = 404, description = "No such run or node", body = ErrorBody),
        (status = 409, description = "The node is not a gate waiting for a decision", body = ErrorBody)))]
pub async fn reject(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Path((id, node)): Path<(String, String)>,
    OptionalJson(request): OptionalJson<DecisionRequest>,
) -> Result<Reply<GateDecision>, ApiError> {
    decide(api, who, id, node, Decision::Reject, request.comment).await
}

async fn decide(
    api: Orchestrator,
    who: Identity,
    id: String,
    node: String,
    decision: Decision,
    comment: Option<String>,
) -> Result<Reply<GateDecision>, ApiError> {
    let record = GateDecisionRecord {
        node: node.clone(),
        decision: convert::crd_decision(decision),
        by: Some(who.name),
        at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now())),
        comment,
    };
    let run = api
        .update(&api.runs, "run", &id, |run: &mut crd::Run| {
            waiting_gate(run, &node)?;
            run.spec.decisions.push(record.clone());
            Ok(())
        })
        .await?;
    Ok(Reply(convert::gate_decision(&run.name_any(), &record)))
}

/// Refuses a decision on anything but a gate that waits for one, saying why.
fn waiting_gate(run: &crd::Run, node: &str) -> Result<(), ApiError> {
    let status = run.status.clone().unwrap_or_default();
    let plan = status.plan.as_ref().or(run.spec.plan.as_ref());
    let planned = plan.and_then(|plan| plan.nodes.iter().find(|n| n.id == node));
    let state = status.nodes.iter().find(|n| n.id == node);
    let run_id = run.name_any();
    if planned.is_none() && state.is_none() {
        return Err(ApiError::not_found("node", &format!("{run_id}/{node}")));
    }
    if planned.is_some_and(|n| n.gate.is_none()) {
        return Err(ApiError::conflict(format!("node {node:?} is an agent step, not a gate")));
    }
    if run.spec.decisions.iter().any(|d| d.node == node) {
        return Err(ApiError::conflict(format!("gate {node:?} already has a decision")));
    }
    match state.map(|n| n.phase) {
        Some(NodePhase::WaitingApproval) => Ok(()),
        Some(phase) => Err(ApiError::conflict(format!(
            "gate {node:?} is {}, not waiting for a decision",
            serde_json::to_value(phase)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ))),
        None => Err(ApiError::conflict(format!("gate {node:?} is not waiting for a decision yet"))),
    }
}

/// Parameters of the event stream.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Replay from after this seq, for clients that cannot send `Last-Event-ID`.
    pub since: Option<u64>,
}

/// Streams the run's events as server-sent events (see docs/orchestrator-api.md).
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", tag = "runs",
    params(("id" = String, Path, description = "Run id"), EventsQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "Replay what came after this seq")),
    responses((status = 200, description = "An event stream: hello, then status, node_status, gate_decision, output, log, lagged, and end", content_type = "text/event-stream", body = model::EventFrame),
        (status = 404, description = "No such run", body = ErrorBody)))]
pub async fn events(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = api.run(&id)?;
    let after = match headers.get("last-event-id") {
        Some(value) => {
            value.to_str().ok().and_then(|text| text.trim().parse::<u64>().ok()).ok_or_else(
                || ApiError::bad_request("Last-Event-ID must be a seq this stream sent"),
            )?
        }
        None => query.since.unwrap_or(0),
    };
    // A run the hub has not seen yet (just created) gets an empty history to follow.
    api.events.observe(&run);
    let status = serde_json::to_value(convert::state_of(&run))
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default();
    super::events::sse::stream(api.events.clone(), &id, after, &status)
        .map(IntoResponse::into_response)
        .ok_or_else(|| ApiError::not_found("run", &id))
}
