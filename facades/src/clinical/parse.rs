//! `POST /api/v1/parse`: one HL7v2 message to canonical events, warnings and lineage.

use axum::extract::State;
use keelson_hl7v2::{Limits, MapError, MapOptions, Message, ParseError, Warning};
use serde::Deserialize;

use super::Clinical;
use super::message::MessageBody;
use super::model::{Diagnostic, Lineage, ParseRequest, ParseResponse};
use crate::error::{ApiError, ErrorBody, ErrorDetail};
use crate::extract::Query;

/// Query of a parse request.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParseQuery {
    /// Strict rules for a raw body (a JSON body says `strict` itself).
    #[serde(default)]
    strict: Option<bool>,
}

/// Parses one message.
#[utoipa::path(post, path = "/api/v1/parse", tag = "clinical",
    params(("strict" = Option<bool>, Query, description = "Strict rules for a raw body")),
    request_body(content(
        (ParseRequest = "application/json"),
        (String = "application/hl7-v2+er7"),
        (String = "text/plain"))),
    responses((status = 200, description = "What the message holds", body = ParseResponse),
        (status = 422, description = "Not a valid HL7v2 message (code INVALID_HL7V2_MESSAGE); details name each problem's code and path", body = ErrorBody)))]
pub async fn parse(
    State(_): State<Clinical>,
    Query(query): Query<ParseQuery>,
    body: MessageBody,
) -> Result<axum::Json<ParseResponse>, ApiError> {
    let strict = body.strict.or(query.strict).unwrap_or(false);
    parse_message(&body.bytes, strict).map(axum::Json)
}

/// Parses and maps `bytes`; shared with `POST /api/v1/workflow`.
pub fn parse_message(bytes: &[u8], strict: bool) -> Result<ParseResponse, ApiError> {
    let message = Message::parse_with(bytes, &Limits::default()).map_err(invalid_message)?;
    let mapping = keelson_hl7v2::map_events(&message, &MapOptions { strict }).map_err(|error| {
        let MapError::Strict { diagnostics } = error;
        ApiError::unprocessable(
            "INVALID_HL7V2_MESSAGE",
            "the message breaks the strict rules",
            diagnostics.iter().map(detail).collect(),
        )
    })?;
    let events = mapping
        .events
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()
        .map_err(|error| ApiError::internal(&error))?;
    Ok(ParseResponse {
        message_type: message.message_type().map(str::to_owned),
        trigger: message.trigger_event().map(str::to_owned),
        control_id: message.control_id().map(str::to_owned),
        version: message.version().map(str::to_owned),
        mapped: mapping.mapped,
        events,
        warnings: mapping.warnings.iter().map(diagnostic).collect(),
        lineage: mapping
            .lineage
            .into_iter()
            .map(|link| Lineage {
                source: link.source,
                target: link.target,
                value_preview: link.value_preview,
            })
            .collect(),
    })
}

/// 413 for a message over the size limit, else 422 naming the problem and where it is.
fn invalid_message(error: ParseError) -> ApiError {
    let (code, path) = match &error {
        ParseError::TooLarge { .. } => {
            return ApiError::payload_too_large(format!("the HL7v2 {error}"));
        }
        ParseError::Empty => ("EMPTY_MESSAGE", None),
        ParseError::InvalidUtf8 { .. } => ("INVALID_ENCODING", None),
        ParseError::MissingMsh => ("MISSING_MSH", Some("MSH".to_owned())),
        ParseError::MshTooShort { .. } => ("INVALID_MSH", Some("MSH".to_owned())),
        ParseError::InvalidDelimiters { .. } => ("INVALID_DELIMITERS", Some("MSH.2".to_owned())),
        ParseError::InvalidSegmentId { segment_index } => {
            ("INVALID_SEGMENT", Some(format!("segment[{segment_index}]")))
        }
        ParseError::TooManySegments { .. } => ("LIMIT_EXCEEDED", None),
        ParseError::TooManyFields { segment_index, segment_id, .. } => {
            ("LIMIT_EXCEEDED", Some(format!("{segment_id}[{segment_index}]")))
        }
        ParseError::TooManyParts { segment_index, segment_id, field, .. } => {
            ("LIMIT_EXCEEDED", Some(format!("{segment_id}[{segment_index}].{field}")))
        }
    };
    let detail =
        ErrorDetail { code: Some(code.to_owned()), field: path, message: error.to_string() };
    ApiError::unprocessable(
        "INVALID_HL7V2_MESSAGE",
        format!("not a valid HL7v2 message: {error}"),
        vec![detail],
    )
}

fn detail(warning: &Warning) -> ErrorDetail {
    ErrorDetail {
        code: Some(warning.code.to_owned()),
        field: warning.path.clone(),
        message: warning.message.clone(),
    }
}

/// A parser warning as the API shows it.
pub fn diagnostic(warning: &Warning) -> Diagnostic {
    Diagnostic {
        phase: warning.phase.as_str().to_owned(),
        code: warning.code.to_owned(),
        message: warning.message.clone(),
        path: warning.path.clone(),
        severity: warning.severity.as_str().to_owned(),
    }
}
