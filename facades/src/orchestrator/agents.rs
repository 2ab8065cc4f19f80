//! `/api/v1/agents`: the registry of agents that steps run.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as Reply};
use keelson_api_crds::workflows as crd;
use kube::ResourceExt;
use serde::Deserialize;
use utoipa::IntoParams;

use super::convert;
use super::model::{Agent, AgentInput};
use super::page::{Page, PageQuery};
use super::{Orchestrator, sort_key};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, Query};

/// Filters of the agent list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AgentFilter {
    /// Only agents with every one of these capabilities, comma-separated.
    pub capabilities: Option<String>,
}

/// Lists agents, newest first.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", params(PageQuery, AgentFilter),
    responses((status = 200, description = "A page of agents", body = Page<Agent>)))]
pub async fn list_agents(
    State(api): State<Orchestrator>,
    Query(page): Query<PageQuery>,
    Query(filter): Query<AgentFilter>,
) -> Result<Reply<Page<Agent>>, ApiError> {
    let wanted: Vec<&str> = filter
        .capabilities
        .as_deref()
        .map(|list| list.split(',').map(str::trim).filter(|c| !c.is_empty()).collect())
        .unwrap_or_default();
    let agents = api
        .agents
        .all()
        .into_iter()
        .filter(|agent| wanted.iter().all(|c| agent.spec.capabilities.iter().any(|have| have == c)))
        .map(|agent| (sort_key(&agent.metadata), agent))
        .collect();
    let page = super::page::page(agents, &page)?;
    Ok(Reply(Page {
        items: page.items.iter().map(|agent| convert::agent(agent)).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Registers an agent.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentInput,
    responses((status = 201, description = "The agent", body = Agent),
        (status = 409, description = "An agent with this id exists", body = ErrorBody)))]
pub async fn create_agent(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Json(input): Json<AgentInput>,
) -> Result<Response, ApiError> {
    let id = convert::id_or_new(input.id.clone(), "agent")?;
    let agent = crd::Agent {
        metadata: convert::new_meta(&id, input.name.clone(), &who.name),
        spec: convert::agent_spec(input),
        status: None,
    };
    let agent = api.create(&api.agents, "agent", agent).await?;
    Ok((StatusCode::CREATED, Reply(convert::agent(&agent))).into_response())
}

/// An agent.
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, description = "The agent", body = Agent),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub async fn get_agent(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<Agent>, ApiError> {
    let agent = api.agents.get(&id).ok_or_else(|| ApiError::not_found("agent", &id))?;
    Ok(Reply(convert::agent(&agent)))
}

/// Replaces an agent's definition (its resource requests, set with kubectl, stay).
#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentInput,
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, description = "The agent", body = Agent),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub async fn update_agent(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
    Json(input): Json<AgentInput>,
) -> Result<Reply<Agent>, ApiError> {
    let name = input.name.clone();
    let spec = convert::agent_spec(input);
    let agent = api
        .update(&api.agents, "agent", &id, |agent: &mut crd::Agent| {
            let resources = agent.spec.resources.take();
            agent.spec = crd::AgentSpec { resources, ..spec.clone() };
            if let Some(name) = &name {
                agent.annotations_mut().insert(convert::DISPLAY_NAME.into(), name.clone());
            }
            Ok(())
        })
        .await?;
    Ok(Reply(convert::agent(&agent)))
}

/// Deletes an agent; flows that use it become not ready.
#[utoipa::path(delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such agent", body = ErrorBody)))]
pub async fn delete_agent(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    api.delete(&api.agents, "agent", &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
