//! `/api/v1/schedules`: cron schedules of flows. Schedules have no update: delete and create.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as Reply};
use keelson_api_crds::workflows as crd;

use super::convert;
use super::model::{Schedule, ScheduleInput};
use super::page::{Page, PageQuery};
use super::{Orchestrator, sort_key};
use crate::auth::Identity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, Query};

/// Lists schedules, newest first.
#[utoipa::path(get, path = "/api/v1/schedules", tag = "schedules", params(PageQuery),
    responses((status = 200, description = "A page of schedules", body = Page<Schedule>)))]
pub async fn list_schedules(
    State(api): State<Orchestrator>,
    Query(page): Query<PageQuery>,
) -> Result<Reply<Page<Schedule>>, ApiError> {
    let schedules = api.schedules.all().into_iter().map(|s| (sort_key(&s.metadata), s)).collect();
    let page = super::page::page(schedules, &page)?;
    Ok(Reply(Page {
        items: page.items.iter().map(|s| convert::schedule(s)).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// Creates a schedule. An invalid cron expression or time zone answers 400.
#[utoipa::path(post, path = "/api/v1/schedules", tag = "schedules", request_body = ScheduleInput,
    responses((status = 201, description = "The schedule", body = Schedule),
        (status = 404, description = "The flow does not exist", body = ErrorBody),
        (status = 409, description = "A schedule with this id exists", body = ErrorBody)))]
pub async fn create_schedule(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Json(input): Json<ScheduleInput>,
) -> Result<Response, ApiError> {
    let id = convert::id_or_new(input.id.clone(), "schedule")?;
    api.flow(&input.flow_id)?;
    let schedule = crd::Schedule {
        metadata: convert::new_meta(&id, None, &who.name),
        spec: convert::schedule_spec(input),
        status: None,
    };
    let schedule = api.create(&api.schedules, "schedule", schedule).await?;
    Ok((StatusCode::CREATED, Reply(convert::schedule(&schedule))).into_response())
}

/// A schedule, with its next and last run.
#[utoipa::path(get, path = "/api/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id")),
    responses((status = 200, description = "The schedule", body = Schedule),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
pub async fn get_schedule(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<Reply<Schedule>, ApiError> {
    let schedule = api.schedules.get(&id).ok_or_else(|| ApiError::not_found("schedule", &id))?;
    Ok(Reply(convert::schedule(&schedule)))
}

/// Deletes a schedule with the runs it started, as deleting a CronJob deletes its Jobs.
#[utoipa::path(delete, path = "/api/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id")),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such schedule", body = ErrorBody)))]
pub async fn delete_schedule(
    State(api): State<Orchestrator>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    api.delete(&api.schedules, "schedule", &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
