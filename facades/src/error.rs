//! The one error body of the REST API, `{"error": {"code", "message", "details"}}`, and how
//! Kubernetes API errors translate into it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// An error answered by the REST API.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Machine-readable code, e.g. `NOT_FOUND`.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// Field-level problems.
    pub details: Vec<ErrorDetail>,
    /// Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`).
    headers: Vec<(header::HeaderName, HeaderValue)>,
}

/// The response body of every error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorContent,
}

/// What an error body holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorContent {
    /// Machine-readable code: `BAD_REQUEST`, `INVALID`, `INVALID_HL7V2_MESSAGE`,
    /// `INVALID_WORKFLOW`, `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`, `METHOD_NOT_ALLOWED`,
    /// `CONFLICT`, `PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`, `RATE_LIMITED`,
    /// `UNAVAILABLE` or `INTERNAL`.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Field-level problems; empty when there are none.
    pub details: Vec<ErrorDetail>,
}

/// One problem with one field of a request.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A machine-readable code of the problem, where there is one (e.g. HL7v2 diagnostics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The field, as a path in the request body (e.g. `nodes[1].agent_id`) or in an HL7v2
    /// message (e.g. `PID.3[0]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong with it, e.g. `cycle detected: a -> b -> a`.
    pub message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), details: Vec::new(), headers: Vec::new() }
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }

    /// 400: the request is well-formed but describes something invalid.
    pub fn invalid(message: impl Into<String>, details: Vec<ErrorDetail>) -> Self {
        Self { details, ..Self::new(StatusCode::BAD_REQUEST, "INVALID", message) }
    }

    /// 401 with a `WWW-Authenticate` challenge.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message).with_header(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"keelson\""),
        )
    }

    /// 403: authenticated, but not allowed.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    /// 404 for a resource of `kind` named `id`.
    pub fn not_found(kind: &str, id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("{kind} {id:?} not found"))
    }

    /// 404 for a path that does not exist.
    pub fn no_route(path: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no endpoint at {path}"))
    }

    /// 405 with the `Allow` header.
    pub fn method_not_allowed(allow: &str) -> Self {
        let message = format!("method not allowed here; allowed: {allow}");
        let error = Self::new(StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", message);
        match HeaderValue::from_str(allow) {
            Ok(value) => error.with_header(header::ALLOW, value),
            Err(_) => error,
        }
    }

    /// 422 with a code of the caller's choosing (`INVALID_HL7V2_MESSAGE`, `INVALID_WORKFLOW`).
    pub fn unprocessable(
        code: &'static str,
        message: impl Into<String>,
        details: Vec<ErrorDetail>,
    ) -> Self {
        Self { details, ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message) }
    }

    /// 409: the request conflicts with the resource's state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "CONFLICT", message)
    }

    /// 413: the body is over the limit.
    pub fn too_large() -> Self {
        Self::payload_too_large(
            "the request body is too large: at most 1 MiB (2 MiB for clinical messages, 256 KiB for webhook triggers)",
        )
    }

    /// 413 saying which limit was passed.
    pub fn payload_too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", message)
    }

    /// 415: the body is not JSON.
    pub fn unsupported_media_type() -> Self {
        Self::unsupported_media_type_of(
            "the request body must be JSON, with Content-Type: application/json",
        )
    }

    /// 415 saying what the endpoint accepts.
    pub fn unsupported_media_type_of(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", message)
    }

    /// 429 with `Retry-After` in whole seconds.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        let message = "too many requests for this token; retry after the Retry-After delay";
        Self::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", message)
            .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after_secs.max(1)))
    }

    /// 503: a dependency is not available.
    pub fn unavailable(message: impl Into<String>, details: Vec<ErrorDetail>) -> Self {
        Self { details, ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", message) }
    }

    /// 500: a failure the caller cannot fix. The cause is logged, not returned.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::warn!(error = %cause, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "internal error; see the server log",
        )
    }

    fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Translates an error of the Kubernetes API about the resource `kind` named `id`.
    pub fn from_kube(kind: &str, id: &str, error: kube::Error) -> Self {
        let kube::Error::Api(status) = &error else {
            return Self::unavailable(
                format!("the Kubernetes API did not answer: {error}"),
                Vec::new(),
            );
        };
        match (status.code, status.reason.as_str()) {
            (404, _) => Self::not_found(kind, id),
            (409, "AlreadyExists") => Self::conflict(format!("{kind} {id:?} already exists")),
            (409, _) => Self::conflict(format!("{kind} {id:?} changed meanwhile; retry")),
            (422, _) | (400, _) => {
                let causes = status.details.as_ref().map(|d| d.causes.as_slice()).unwrap_or(&[]);
                let details = causes
                    .iter()
                    .map(|cause| ErrorDetail {
                        code: None,
                        field: (!cause.field.is_empty()).then(|| rest_field(&cause.field)),
                        message: cause.message.clone(),
                    })
                    .collect();
                Self::invalid(format!("invalid {kind}"), details)
            }
            (429, _) | (500.., _) => Self::unavailable(
                format!("the Kubernetes API answered {}: {}", status.code, status.message),
                Vec::new(),
            ),
            _ => Self::internal(&error),
        }
    }
}

/// The REST name of a field path the Kubernetes API reported: `spec.` dropped, camelCase
/// segments in snake_case, and the CRD's nesting of steps folded into the flat node shape.
pub fn rest_field(path: &str) -> String {
    let path = path.strip_prefix("spec.").unwrap_or(path);
    let renamed = path
        .replace(".agent.agentRef", ".agent_id")
        .replace(".agent.", ".")
        .replace(".gate.", ".")
        .replace("flowRef", "flow_id")
        .replace("parameters", "params");
    let mut out = String::with_capacity(renamed.len() + 4);
    for c in renamed.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorContent {
                code: self.code.to_owned(),
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_field_paths_become_rest_fields() {
        assert_eq!(rest_field("spec.nodes[1].agent.agentRef"), "nodes[1].agent_id");
        assert_eq!(rest_field("spec.nodes[0].gate.timeoutSeconds"), "nodes[0].timeout_seconds");
        assert_eq!(rest_field("spec.flowRef"), "flow_id");
        assert_eq!(rest_field("spec.parameters[0].name"), "params[0].name");
        assert_eq!(rest_field("spec.edges[2]"), "edges[2]");
    }

    #[tokio::test]
    async fn errors_have_one_shape_and_their_headers() {
        let response = ApiError::rate_limited(0).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "RATE_LIMITED");
        assert_eq!(body["error"]["details"], serde_json::json!([]));

        let response = ApiError::method_not_allowed("GET, DELETE").into_response();
        assert_eq!(response.headers()[header::ALLOW], "GET, DELETE");
        let response = ApiError::unauthorized("no token").into_response();
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
