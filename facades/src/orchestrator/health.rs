//! `/health`, `/healthz` and `/ready`, outside `/api/v1` and without a token; and the Job
//! status endpoint.

use axum::Json as Reply;
use axum::extract::{Path, State};

use super::Orchestrator;
use super::convert;
use super::model::{Health, JobStatus};
use crate::error::{ApiError, ErrorBody, ErrorDetail};

/// Answers while the process serves.
#[utoipa::path(get, path = "/health", tag = "health", security(()),
    responses((status = 200, description = "Serving", body = Health)))]
pub async fn health() -> Reply<Health> {
    Reply(Health { status: "ok".into() })
}

/// Answers while the process serves (the Kubernetes spelling).
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "Serving", body = Health)))]
pub async fn healthz() -> Reply<Health> {
    health().await
}

/// 200 when the Kubernetes API answers and every cache has synced; 503 naming what is not.
#[utoipa::path(get, path = "/ready", tag = "health", security(()),
    responses((status = 200, description = "Ready", body = Health),
        (status = 503, description = "Not ready; details say what is missing", body = ErrorBody)))]
pub async fn ready(State(api): State<Orchestrator>) -> Result<Reply<Health>, ApiError> {
    let mut missing: Vec<ErrorDetail> = api
        .unsynced_caches()
        .into_iter()
        .map(|cache| ErrorDetail {
            code: None,
            field: None,
            message: format!("the {cache} cache has not synced"),
        })
        .collect();
    if let Err(error) = api.client.apiserver_version().await {
        missing.insert(
            0,
            ErrorDetail {
                code: None,
                field: None,
                message: format!("the Kubernetes API does not answer: {error}"),
            },
        );
    }
    if missing.is_empty() {
        Ok(Reply(Health { status: "ready".into() }))
    } else {
        Err(ApiError::unavailable("not ready", missing))
    }
}

/// The status of a Kubernetes Job, by name (a run node's `job_id`, or any Job).
#[utoipa::path(get, path = "/api/v1/jobs/{id}/status", tag = "jobs",
    params(("id" = String, Path, description = "Job name")),
    responses((status = 200, description = "The Job's status", body = JobStatus),
        (status = 404, description = "No such Job", body = ErrorBody)))]
pub async fn job_status(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<JobStatus>, ApiError> {
    let job = api.jobs.get(&id).ok_or_else(|| ApiError::not_found("job", &id))?;
    Ok(Reply(convert::job_status(&job)))
}
