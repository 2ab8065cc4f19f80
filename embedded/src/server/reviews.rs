//! The reviews clients ask for before they act: a SelfSubjectAccessReview (`kubectl auth can-i`,
//! and tools such as k9s before they list), a SelfSubjectRulesReview (`kubectl auth can-i
//! --list`) and a SelfSubjectReview (`kubectl auth whoami`). They are answered for the request's
//! user (the impersonated one, with `--as`) by RBAC, and never stored.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::catalog::ResourceInfo;

use super::errors::{ApiError, ApiResult, Cause};
use super::objects::check_type;
use super::rbac::{self, Attributes, ResourceAttributes};
use super::read::json_response;
use super::write::body;
use super::{ApiState, ResourceRequest};

/// Whether `info` is one of the review kinds.
pub(crate) fn is_review(info: &ResourceInfo) -> bool {
    info.builtin && matches!(info.group.as_str(), "authorization.k8s.io" | "authentication.k8s.io")
}

/// Answers a review: the request's object with its `status` filled in.
pub(crate) fn review(state: &ApiState, request: &ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    if request.method != Method::POST || request.target.name.is_some() {
        return Err(ApiError::method_not_allowed(request.method.as_str(), &info.resource));
    }
    let mut object = body(request)?;
    check_type(info, &mut object)?;
    let user = &request.user;
    object["status"] = match info.kind.as_str() {
        "SelfSubjectReview" => json!({ "userInfo": user }),
        "SelfSubjectAccessReview" => {
            let attributes = asked(info, &object)?;
            let decision = rbac::authorize(&state.store, user, &attributes);
            let mut status = json!({ "allowed": decision.allowed });
            if !decision.reason.is_empty() {
                status["reason"] = json!(decision.reason);
            }
            status
        }
        _ => {
            let namespace = object.pointer("/spec/namespace").and_then(Value::as_str);
            rules_status(&rbac::grants(&state.store, user, namespace.unwrap_or_default()))
        }
    };
    Ok(json_response(StatusCode::CREATED, &object, &[]))
}

/// What an access review asks about: a resource or a non-resource URL (exactly one, as upstream
/// requires).
fn asked(info: &ResourceInfo, review: &Value) -> ApiResult<Attributes> {
    let text = |pointer: &str| review.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let given =
        |field: &str| review.pointer(&format!("/spec/{field}")).is_some_and(Value::is_object);
    match (given("resourceAttributes"), given("nonResourceAttributes")) {
        (true, false) => {
            let field = |name: &str| text(&format!("/spec/resourceAttributes/{name}")).to_owned();
            Ok(Attributes::Resource(ResourceAttributes {
                verb: field("verb"),
                group: field("group"),
                resource: field("resource"),
                subresource: field("subresource"),
                name: field("name"),
                namespace: field("namespace"),
            }))
        }
        (false, true) => Ok(Attributes::NonResource {
            verb: text("/spec/nonResourceAttributes/verb").to_owned(),
            path: text("/spec/nonResourceAttributes/path").to_owned(),
        }),
        _ => {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
                field: "spec.resourceAttributes".into(),
            };
            Err(ApiError::invalid(&info.group, &info.kind, "", vec![cause]))
        }
    }
}

/// The status of a rules review: every rule the user's bindings grant in the namespace.
fn rules_status(grants: &rbac::Grants) -> Value {
    let (mut resource_rules, mut non_resource_rules) = (Vec::new(), Vec::new());
    for rule in grants.rules() {
        if let Some(urls) = rule.non_resource_urls.as_ref().filter(|u| !u.is_empty()) {
            non_resource_rules.push(json!({ "verbs": rule.verbs, "nonResourceURLs": urls }));
        } else {
            let mut entry = json!({
                "verbs": rule.verbs,
                "apiGroups": rule.api_groups.clone().unwrap_or_default(),
                "resources": rule.resources.clone().unwrap_or_default(),
            });
            if let Some(names) = rule.resource_names.as_ref().filter(|n| !n.is_empty()) {
                entry["resourceNames"] = json!(names);
            }
            resource_rules.push(entry);
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !grants.errors.is_empty(),
    });
    if !grants.errors.is_empty() {
        status["evaluationError"] = json!(grants.error_text());
    }
    status
}
