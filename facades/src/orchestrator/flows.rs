//! `/api/v1/flows`: definitions, and starting a run of one.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as Reply};
use keelson_api_crds::workflows as crd;
use kube::ResourceExt;

use super::convert;
use super::model::{Flow, FlowInput, Run, RunFlow};
use super::page::{Page, PageQuery};
use super::{Orchestrator, sort_key};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, OptionalJson, Query};

/// Lists flows, newest first.
#[utoipa::path(get, path = "/api/v1/flows", tag = "flows", params(PageQuery),
    responses((status = 200, description = "A page of flows", body = Page<Flow>)))]
pub async fn list_flows(
    State(api): State<Orchestrator>,
    Query(page): Query<PageQuery>,
) -> Result<Reply<Page<Flow>>, ApiError> {
    let flows = api.flows.all().into_iter().map(|flow| (sort_key(&flow.metadata), flow)).collect();
    let page = super::page::page(flows, &page)?;
    Ok(Reply(Page {
        items: page.items.iter().map(|flow| convert::flow(flow)).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Creates a flow. Invalid graphs (cycles, dangling edges or inputs) answer 400 with a detail
/// per problem.
#[utoipa::path(post, path = "/api/v1/flows", tag = "flows", request_body = FlowInput,
    responses((status = 201, description = "The flow", body = Flow),
        (status = 409, description = "A flow with this id exists", body = ErrorBody)))]
pub async fn create_flow(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Json(input): Json<FlowInput>,
) -> Result<Response, ApiError> {
    let id = convert::id_or_new(input.id.clone(), "flow")?;
    let name = input.name.clone();
    let flow = crd::Flow {
        metadata: convert::new_meta(&id, name, &who.name),
        spec: convert::flow_spec(input)?,
        status: None,
    };
    let flow = api.create(&api.flows, "flow", flow).await?;
    Ok((StatusCode::CREATED, Reply(convert::flow(&flow))).into_response())
}

/// A flow.
#[utoipa::path(get, path = "/api/v1/flows/{id}", tag = "flows",
    params(("id" = String, Path, description = "Flow id")),
    responses((status = 200, description = "The flow", body = Flow),
        (status = 404, description = "No such flow", body = ErrorBody)))]
pub async fn get_flow(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<Flow>, ApiError> {
    Ok(Reply(convert::flow(&*api.flow(&id)?)))
}

/// Replaces a flow's definition; runs already made from it keep what they had.
#[utoipa::path(put, path = "/api/v1/flows/{id}", tag = "flows", request_body = FlowInput,
    params(("id" = String, Path, description = "Flow id")),
    responses((status = 200, description = "The flow", body = Flow),
        (status = 404, description = "No such flow", body = ErrorBody)))]
pub async fn update_flow(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
    Json(input): Json<FlowInput>,
) -> Result<Reply<Flow>, ApiError> {
    let name = input.name.clone();
    let spec = convert::flow_spec(input)?;
    let flow = api
        .update(&api.flows, "flow", &id, |flow: &mut crd::Flow| {
            flow.spec = spec.clone();
            if let Some(name) = &name {
                flow.annotations_mut().insert(convert::DISPLAY_NAME.into(), name.clone());
            }
            Ok(())
        })
        .await?;
    Ok(Reply(convert::flow(&flow)))
}

/// Deletes a flow; its runs stay.
#[utoipa::path(delete, path = "/api/v1/flows/{id}", tag = "flows",
    params(("id" = String, Path, description = "Flow id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such flow", body = ErrorBody)))]
pub async fn delete_flow(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    api.delete(&api.flows, "flow", &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates and starts a run of the flow.
#[utoipa::path(post, path = "/api/v1/flows/{id}/run", tag = "flows",
    request_body(content = Option<RunFlow>),
    params(("id" = String, Path, description = "Flow id")),
    responses((status = 201, description = "The started run", body = Run),
        (status = 404, description = "No such flow", body = ErrorBody)))]
pub async fn run_flow(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Path(id): Path<String>,
    OptionalJson(request): OptionalJson<RunFlow>,
) -> Result<Response, ApiError> {
    api.flow(&id)?;
    let timeout = request.timeout.map(convert::timeout_seconds).transpose()?;
    let run = api.start_flow(&id, convert::params(request.params), timeout, &who.name).await?;
    Ok((StatusCode::CREATED, Reply(api.show_run(&run))).into_response())
}
