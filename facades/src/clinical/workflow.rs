//! `POST /api/v1/workflow`: events through the legacy workflow engine.

use axum::extract::State;
use serde_json::Value;

use super::Clinical;
use super::message::ClinicalJson;
use super::model::{WorkflowRequest, WorkflowResponse};
use super::parse::parse_message;
use crate::error::{ApiError, ErrorBody, ErrorDetail};

/// Runs one canonical event, or the events of one raw message, through a workflow.
#[utoipa::path(post, path = "/api/v1/workflow", tag = "clinical", request_body = WorkflowRequest,
    responses((status = 200, description = "Each event's routes and action outcomes", body = WorkflowResponse),
        (status = 404, description = "The integration or its workflow does not exist", body = ErrorBody),
        (status = 409, description = "No integration_id and no default workflow", body = ErrorBody),
        (status = 422, description = "The message is not valid HL7v2 (INVALID_HL7V2_MESSAGE) or the workflow is not valid (INVALID_WORKFLOW)", body = ErrorBody)))]
pub async fn process(
    State(clinical): State<Clinical>,
    ClinicalJson(request): ClinicalJson<WorkflowRequest>,
) -> Result<axum::Json<WorkflowResponse>, ApiError> {
    let (events, warnings) = match (request.event, request.message) {
        (Some(event), None) => (vec![check_event(event)?], Vec::new()),
        (None, Some(message)) => {
            let parsed = parse_message(message.as_bytes(), false)?;
            (parsed.events, parsed.warnings)
        }
        (event, _) => {
            let both = event.is_some();
            return Err(ApiError::invalid(
                if both {
                    "send either event or message, not both"
                } else {
                    "send an event or a message"
                },
                vec![field_problem("event", "exactly one of event and message is needed")],
            ));
        }
    };
    let workflow = clinical.0.workflows.resolve(request.integration_id.as_deref()).await?;
    let mut outcomes = Vec::with_capacity(events.len());
    for event in events {
        let outcome = clinical.0.engine.process(&workflow, event).await;
        outcomes.push(serde_json::to_value(outcome).map_err(|error| ApiError::internal(&error))?);
    }
    Ok(axum::Json(WorkflowResponse {
        workflow: workflow.name.clone(),
        integration_id: request.integration_id,
        events: outcomes,
        warnings,
    }))
}

/// An event is an object with a non-empty string `type`.
fn check_event(event: Value) -> Result<Value, ApiError> {
    let typed = event.get("type").and_then(Value::as_str).is_some_and(|t| !t.is_empty());
    if !event.is_object() {
        return Err(ApiError::invalid(
            "the event must be a JSON object",
            vec![field_problem("event", "not an object")],
        ));
    }
    if !typed {
        return Err(ApiError::invalid(
            "the event has no type",
            vec![field_problem("event.type", "a non-empty string is needed")],
        ));
    }
    Ok(event)
}

fn field_problem(field: &str, message: &str) -> ErrorDetail {
    ErrorDetail { code: None, field: Some(field.to_owned()), message: message.to_owned() }
}
