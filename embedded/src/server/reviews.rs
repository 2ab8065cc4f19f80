//! The reviews clients ask for before they act: a SelfSubjectAccessReview (`kubectl auth can-i`,
//! and tools such as k9s before they list), a SelfSubjectRulesReview (`kubectl auth can-i
//! --list`) and a SelfSubjectReview (`kubectl auth whoami`). They are answered from the request
//! and never stored. The server authorizes nothing: the admin token and the service account
//! tokens it issued may do everything, so every review allows everything.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::catalog::ResourceInfo;

use super::ResourceRequest;
use super::errors::{ApiError, ApiResult, Cause};
use super::objects::check_type;
use super::read::json_response;
use super::write::body;

/// Whether `info` is one of the review kinds.
pub(crate) fn is_review(info: &ResourceInfo) -> bool {
    info.builtin && matches!(info.group.as_str(), "authorization.k8s.io" | "authentication.k8s.io")
}

/// Answers a review: the request's object with its `status` filled in.
pub(crate) fn review(request: &ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    if request.method != Method::POST || request.target.name.is_some() {
        return Err(ApiError::method_not_allowed(request.method.as_str(), &info.resource));
    }
    let mut object = body(request)?;
    check_type(info, &mut object)?;
    if info.kind == "SelfSubjectAccessReview" {
        check_attributes(info, &object)?;
    }
    object["status"] = match info.kind.as_str() {
        "SelfSubjectReview" => json!({ "userInfo": request.identity.user_info() }),
        kind => status(kind),
    };
    Ok(json_response(StatusCode::CREATED, &object, &[]))
}

/// An access review names either a resource or a non-resource URL, as upstream requires.
fn check_attributes(info: &ResourceInfo, review: &Value) -> ApiResult<()> {
    let given =
        |field: &str| review.pointer(&format!("/spec/{field}")).is_some_and(Value::is_object);
    if given("resourceAttributes") != given("nonResourceAttributes") {
        return Ok(());
    }
    let cause = Cause {
        reason: "FieldValueInvalid".into(),
        message: "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
        field: "spec.resourceAttributes".into(),
    };
    Err(ApiError::invalid(&info.group, &info.kind, "", vec![cause]))
}

/// The status of an access or rules review: all is allowed.
fn status(kind: &str) -> Value {
    if kind == "SelfSubjectAccessReview" {
        return json!({
            "allowed": true,
            "reason": "keelson authorizes nothing: whoever authenticates may do everything",
        });
    }
    json!({
        "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
        "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
        "incomplete": false,
    })
}
