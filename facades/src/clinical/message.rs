//! The message of a parse request: the raw ER7 body (`application/hl7-v2+er7` or
//! `text/plain`), or JSON `{"message": "...", "strict": false}`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;

use super::model::ParseRequest;
use crate::error::ApiError;
use crate::extract::{bytes, is_json};

/// Media types of a raw message body.
const RAW_TYPES: [&str; 3] = ["application/hl7-v2+er7", "x-application/hl7-v2+er7", "text/plain"];

/// A message to parse and whether strict rules apply (JSON `strict`; for raw bodies the
/// handler's `?strict=true`).
pub struct MessageBody {
    /// The message as sent.
    pub bytes: Bytes,
    /// `strict` of a JSON body; `None` for raw bodies.
    pub strict: Option<bool>,
}

impl<S: Send + Sync> FromRequest<S> for MessageBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        // A body declared too large is refused before any of it is read, so a client that
        // waits for `100 Continue` (curl above 1 MiB) gets the 413 without uploading it.
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|length| length > super::BODY_LIMIT) {
            return Err(ApiError::too_large());
        }
        if is_json(&request) {
            let body = bytes(request, state).await?;
            let json: ParseRequest = serde_json::from_slice(&body).map_err(|e| json_error(&e))?;
            return Ok(Self { bytes: Bytes::from(json.message), strict: Some(json.strict) });
        }
        let media = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap_or_default().split(';').next().unwrap_or_default());
        match media.map(|m| m.trim().to_ascii_lowercase()) {
            None => {}
            Some(media) if RAW_TYPES.contains(&media.as_str()) => {}
            Some(_) => {
                return Err(ApiError::unsupported_media_type_of(
                    "send the message as application/hl7-v2+er7 or text/plain (with curl: \
                     --data-binary @file, which keeps its carriage returns), or as JSON \
                     {\"message\": \"...\"} with Content-Type: application/json",
                ));
            }
        }
        Ok(Self { bytes: bytes(request, state).await?, strict: None })
    }
}

/// A JSON body error that names fields and positions but never quotes the body, which holds
/// clinical data.
pub fn json_error(error: &serde_json::Error) -> ApiError {
    let text = error.to_string();
    let names_fields = text.starts_with("unknown field") || text.starts_with("missing field");
    let what = if names_fields {
        text
    } else {
        let kind = match error.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "it is not well-formed JSON"
            }
            _ => "a field has a value of the wrong type",
        };
        format!("{kind} (line {}, column {})", error.line(), error.column())
    };
    ApiError::bad_request(format!("the request body is not valid: {what}"))
}

/// A JSON body whose errors never quote it (see [`json_error`]).
pub struct ClinicalJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for ClinicalJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(&request) {
            return Err(ApiError::unsupported_media_type());
        }
        let body = bytes(request, state).await?;
        serde_json::from_slice(&body).map(ClinicalJson).map_err(|error| json_error(&error))
    }
}
