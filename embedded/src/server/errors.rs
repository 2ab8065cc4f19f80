//! Every failure of the API server as a Kubernetes `Status` object with the right code and reason.

use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::storage::StoreError;
use crate::validation::{FieldError, FieldErrors};

/// A cause inside a `Status`'s details: one field and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// Cause type, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// Human-readable text.
    pub message: String,
    /// The field at fault, e.g. `spec.replicas`.
    pub field: String,
}

impl From<&FieldError> for Cause {
    fn from(error: &FieldError) -> Self {
        Cause {
            reason: error.kind.cause_type().to_owned(),
            message: error.message.clone(),
            field: error.field.clone(),
        }
    }
}

/// An error answered as a `Status`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: StatusCode,
    /// Machine-readable reason, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details.name`, `details.group`, `details.kind`, `details.causes`.
    pub details: Option<Box<Details>>,
}

/// The `details` of a `Status`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details {
    /// The object's name.
    pub name: String,
    /// The object's API group.
    pub group: String,
    /// The object's resource or kind.
    pub kind: String,
    /// Per-field causes.
    pub causes: Vec<Cause>,
}

impl ApiError {
    fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            causes: Vec::new(),
        }));
        self
    }

    /// 404 for an object: `pods "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 404 for a path the server does not serve. Its `details` are empty, not absent: kubectl
    /// reads them to tell a missing subresource (as `kubectl debug` does for `ephemeralcontainers`
    /// on older servers) from a missing object, and crashes on a Status without them.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
        .with_details("", "", "")
    }

    /// 409 for a create of an existing object.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 for a write based on a stale `resourceVersion`.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 422 with one cause per invalid field.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let list = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect::<Vec<_>>();
        // As apimachinery's aggregate error: one cause alone, several in brackets.
        let list = match list.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let subject = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
        let mut error = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("{subject} \"{name}\" is invalid: {list}"),
        )
        .with_details(group, kind, name);
        if let Some(details) = error.details.as_mut() {
            details.causes = causes;
        }
        error
    }

    /// 422 from schema validation errors.
    pub fn from_field_errors(group: &str, kind: &str, name: &str, errors: &FieldErrors) -> Self {
        Self::invalid(group, kind, name, errors.0.iter().map(Cause::from).collect())
    }

    /// 400 for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 401 for a request without the bearer token.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized")
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed(verb: &str, resource: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {resource})"
            ),
        )
    }

    /// 405 for a create of a custom resource whose CRD is being deleted, in upstream's words.
    pub fn terminating_crd(group: &str, resource: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        )
        .with_details(group, resource, "")
    }

    /// 410 for a watch or continue token older than the kept history.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    /// 504 for a `resourceVersion` the store has not reached in time, as upstream answers it.
    pub fn revision_too_large(requested: u64, current: u64) -> Self {
        let mut error = Self::new(
            StatusCode::GATEWAY_TIMEOUT,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details("", "", "");
        if let Some(details) = error.details.as_mut() {
            details.causes = vec![Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }];
        }
        error
    }

    /// 413 for a body over `limit` bytes, 400 for one that could not be read otherwise.
    pub fn unreadable_body(rejection: &BytesRejection, limit: usize) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {limit}"),
            );
        }
        Self::bad_request(format!("the request body could not be read: {}", rejection.body_text()))
    }

    /// 415 for a body or patch type the resource does not take.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", message)
    }

    /// 406 for an `Accept` naming nothing the server writes.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    /// 403 for a request admission refuses.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", message)
    }

    /// 403 for a request on a resource that the user may not make: `pods "web" is forbidden:
    /// <why>`, then `: <reason>` when there is one.
    pub fn forbidden_resource(
        group: &str,
        resource: &str,
        name: &str,
        why: &str,
        reason: &str,
    ) -> Self {
        let resource_name = qualified(group, resource);
        let mut message = match name {
            "" => format!("{resource_name} is forbidden: {why}"),
            name => format!("{resource_name} \"{name}\" is forbidden: {why}"),
        };
        if !reason.is_empty() {
            message = format!("{message}: {reason}");
        }
        Self::forbidden(message).with_details(group, resource, name)
    }

    /// 409 for a namespace that is being deleted.
    pub fn namespace_terminating(namespace: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        )
    }

    /// 404 for an object in a namespace that does not exist.
    pub fn namespace_not_found(namespace: &str) -> Self {
        Self::not_found("", "namespaces", namespace)
    }

    /// 429 for an eviction the pod's disruption budget does not allow now; `why` names the
    /// budget (a `DisruptionBudget` cause, as upstream words it).
    pub fn disruption_budget(why: String) -> Self {
        let mut error = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
        )
        .with_details("", "", "");
        if let Some(details) = error.details.as_mut() {
            details.causes = vec![Cause {
                reason: "DisruptionBudget".into(),
                message: why,
                field: String::new(),
            }];
        }
        error
    }

    /// 500 for a failure of the server itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// 503 while the server shuts down.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", message)
    }

    /// Maps a storage error for the object `group/resource/name`.
    pub fn from_store(error: StoreError, group: &str, resource: &str, name: &str) -> Self {
        match error {
            StoreError::NotFound { .. } => Self::not_found(group, resource, name),
            StoreError::AlreadyExists { .. } => Self::already_exists(group, resource, name),
            StoreError::Conflict { .. } => Self::conflict(
                group,
                resource,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ),
            StoreError::Compacted { requested, oldest } => {
                Self::gone(format!("too old resource version: {requested} ({oldest})"))
            }
            StoreError::Closed => Self::unavailable("the server is shutting down"),
            other => Self::internal(format!("storage error: {other}")),
        }
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        if let Some(details) = &self.details {
            let mut d = json!({});
            if !details.kind.is_empty() {
                d["kind"] = json!(details.kind);
            }
            if !details.name.is_empty() {
                d["name"] = json!(details.name);
            }
            if !details.group.is_empty() {
                d["group"] = json!(details.group);
            }
            if !details.causes.is_empty() {
                d["causes"] = details
                    .causes
                    .iter()
                    .map(|c| {
                        let mut cause = json!({ "reason": c.reason, "message": c.message });
                        if !c.field.is_empty() {
                            cause["field"] = json!(c.field);
                        }
                        cause
                    })
                    .collect();
            }
            status["details"] = d;
        }
        status
    }
}

/// `pods` or `modeldeployments.serving.keelson.dev`, as upstream messages name resources.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_owned() } else { format!("{resource}.{group}") }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.status()).unwrap_or_default();
        (self.code, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
    }
}

/// Results of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_like_the_api_server() {
        let status =
            ApiError::not_found("serving.keelson.dev", "modeldeployments", "qwen").status();
        assert_eq!(status["code"], 404);
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["message"], "modeldeployments.serving.keelson.dev \"qwen\" not found");
        assert_eq!(status["details"]["group"], "serving.keelson.dev");
    }

    #[test]
    fn an_unserved_path_has_empty_details() {
        let status = ApiError::no_route("/api/v1/namespaces/a/pods/b/ephemeralcontainers").status();
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["details"], json!({}));
    }

    #[test]
    fn invalid_lists_each_cause() {
        let cause = |field: &str| Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: field.into(),
        };
        let status = ApiError::invalid(
            "serving.keelson.dev",
            "ModelDeployment",
            "q",
            vec![cause("spec.model")],
        )
        .status();
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "ModelDeployment.serving.keelson.dev \"q\" is invalid: spec.model: Required value"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.model");
        let two = vec![cause("spec.model"), cause("spec.replicas")];
        let status = ApiError::invalid("serving.keelson.dev", "ModelDeployment", "q", two).status();
        assert_eq!(
            status["message"],
            "ModelDeployment.serving.keelson.dev \"q\" is invalid: [spec.model: Required value, spec.replicas: Required value]"
        );
    }
}
