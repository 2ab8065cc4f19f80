//! The reviews clients ask for before they act: a SelfSubjectAccessReview (`kubectl auth can-i`,
//! and tools such as k9s before they list), a SelfSubjectRulesReview (`kubectl auth can-i
//! --list`) and a SelfSubjectReview (`kubectl auth whoami`), answered for the request's user
//! (the impersonated one, with `--as`); and the reviews of servers that delegate to the API server:
//! a TokenReview (who a bearer token is) and a SubjectAccessReview or LocalSubjectAccessReview
//! (what a named user may do). All are answered by the same authentication and RBAC as requests,
//! and never stored.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use crate::catalog::ResourceInfo;
use crate::validation::required;

use super::errors::{ApiError, ApiResult, Cause};
use super::objects::check_type;
use super::rbac::{self, Attributes, ResourceAttributes};
use super::read::json_response;
use super::tokens;
use super::users::User;
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
        "SelfSubjectAccessReview" => access_status(state, user, &asked(info, &object)?),
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            if let Some(namespace) = &request.target.namespace {
                check_namespace(info, &mut object, namespace)?;
            }
            let subject = subject(info, &object)?;
            access_status(state, &subject, &asked(info, &object)?)
        }
        "TokenReview" => token_status(state, &object),
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

/// The status of an access review: whether RBAC allows `user` what `attributes` ask, and why.
fn access_status(state: &ApiState, user: &User, attributes: &Attributes) -> Value {
    let decision = rbac::authorize(&state.store, user, attributes);
    let mut status = json!({ "allowed": decision.allowed });
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    status
}

/// The user a SubjectAccessReview asks about; upstream's `422` when it names neither a user nor
/// a group.
fn subject(info: &ResourceInfo, review: &Value) -> ApiResult<User> {
    let spec = review.get("spec").cloned().unwrap_or_default();
    let text = |field: &str| spec.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
    let user = User {
        username: text("user"),
        uid: text("uid"),
        groups: serde_json::from_value(spec.get("groups").cloned().unwrap_or_default())
            .unwrap_or_default(),
        extra: serde_json::from_value(spec.get("extra").cloned().unwrap_or_default())
            .unwrap_or_default(),
    };
    if user.username.is_empty() && user.groups.is_empty() {
        let cause =
            Cause::from(&required("spec.user", "at least one of user or group must be specified"));
        return Err(ApiError::invalid(&info.group, &info.kind, "", vec![cause]));
    }
    Ok(user)
}

/// A LocalSubjectAccessReview asks about its own namespace only: one its resource attributes
/// leave out is filled in, another is refused, as upstream does.
fn check_namespace(info: &ResourceInfo, review: &mut Value, namespace: &str) -> ApiResult<()> {
    let invalid = |field: &str, message: &str| {
        let cause = Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        };
        ApiError::invalid(&info.group, &info.kind, "", vec![cause])
    };
    if review.pointer("/spec/nonResourceAttributes").is_some_and(|a| !a.is_null()) {
        let message = "Invalid value: disallowed on this kind of request";
        return Err(invalid("spec.nonResourceAttributes", message));
    }
    let Some(attributes) =
        review.pointer_mut("/spec/resourceAttributes").and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    match attributes.get("namespace").and_then(Value::as_str).unwrap_or_default() {
        "" => {
            attributes.insert("namespace".into(), json!(namespace));
            Ok(())
        }
        asked if asked == namespace => Ok(()),
        asked => Err(invalid(
            "spec.resourceAttributes.namespace",
            &format!("Invalid value: {asked:?}: must match metadata.namespace"),
        )),
    }
}

/// The status of a TokenReview: who the token is, for the audiences the review names (the API
/// server when it names none).
fn token_status(state: &ApiState, review: &Value) -> Value {
    let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or_default();
    let asked: Vec<&str> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .filter(|a: &Vec<&str>| !a.is_empty())
        .unwrap_or_else(|| vec![tokens::ISSUER]);
    match state.authenticate(token, &asked) {
        Some((user, audiences)) => {
            json!({ "authenticated": true, "user": user, "audiences": audiences })
        }
        None => json!({ "authenticated": false, "user": {}, "error": "invalid bearer token" }),
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
