//! Reads: get, list (selectors, pagination, tables) and the scale view.

use std::borrow::Cow;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::catalog::{ResourceInfo, Subresource, builtin_resource};
use crate::selectors::{LabelSelector, field_value};
use crate::storage::Snapshot;
use crate::table::{self, IncludeObject};
use crate::validation::forbidden;

use super::convert::from_stored;
use super::errors::{ApiError, ApiResult, Cause};
use super::paths::object_key;
use super::query::{ContinueToken, Query, VersionMatch};
use super::{ApiState, ResourceRequest};

/// Refuses field selectors on fields the resource cannot be selected by.
/// The stored core/v1 object `resource/name` of `namespace`, as its type; a `404` if there is
/// none.
pub(crate) fn stored_core<T: DeserializeOwned>(
    state: &ApiState,
    resource: &str,
    namespace: &str,
    name: &str,
) -> ApiResult<T> {
    let info = builtin_resource("", resource).expect("a built-in core resource");
    let entry = state
        .store
        .get(&object_key(info, namespace, name))
        .ok_or_else(|| ApiError::not_found("", resource, name))?;
    serde_json::from_value(Value::clone(&entry.object)).map_err(|e| {
        ApiError::internal(format!("stored {} {name:?} is unreadable: {e}", info.singular))
    })
}

pub(crate) fn check_field_selector(info: &ResourceInfo, query: &Query) -> ApiResult<()> {
    if let Some(selector) = &query.fields
        && let Some(field) = selector.fields().find(|field| !info.supports_field(field))
    {
        return Err(ApiError::bad_request(format!("field label not supported: {field}")));
    }
    Ok(())
}

/// Whether `object` (as the addressed version shows it) matches the request's selectors.
pub(crate) fn selected(query: &Query, object: &Value) -> bool {
    let labels_ok = query.labels.as_ref().is_none_or(|selector| selector.matches_object(object));
    let fields_ok =
        query.fields.as_ref().is_none_or(|selector| selector.matches(object, field_value));
    labels_ok && fields_ok
}

/// The table the client asked for through `Accept`, if any.
pub(crate) fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(table::parse_table_accept)
        .is_some()
}

pub(crate) fn include_object(query: &Query) -> IncludeObject {
    match query.include_object.as_deref() {
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        _ => IncludeObject::Metadata,
    }
}

/// A JSON response.
pub(crate) fn json_response(
    status: StatusCode,
    body: &impl Serialize,
    warnings: &[String],
) -> Response {
    json_text_response(status, serde_json::to_string(body).unwrap_or_default(), warnings)
}

/// A JSON response from serialized `body`, with `Warning` headers.
pub(crate) fn json_text_response(
    status: StatusCode,
    body: String,
    warnings: &[String],
) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    for warning in warnings {
        if let Ok(value) =
            format!("299 - {}", serde_json::to_string(warning).unwrap_or_default()).parse()
        {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// `GET` of one object (also `/status`).
pub(crate) fn get(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    let name = request.target.object_name("get")?;
    let entry = state
        .store
        .get(&request.target.key(name))
        .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
    let object = from_stored(info, &entry.object);
    if wants_table(&request.headers) {
        let mut table = table::table(
            info,
            &[&object],
            include_object(&request.query),
            jiff::Timestamp::now(),
            true,
        );
        table["metadata"] = json!({ "resourceVersion": entry.revision.to_string() });
        return Ok(json_response(StatusCode::OK, &table, &[]));
    }
    Ok(json_response(StatusCode::OK, &object, &[]))
}

/// `GET` of a collection.
pub(crate) async fn list(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    check_field_selector(info, &request.query)?;
    let prefix = request.target.prefix();
    let (snapshot, after) = match &request.query.continue_from {
        Some(token) => {
            let snapshot = state.snapshot_at(token.revision, &prefix).ok_or_else(|| {
                ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
            })?;
            (snapshot, Some(token.after_key.clone()))
        }
        None => (first_snapshot(state, &request.query, &prefix).await?, None),
    };
    let required = request.query.labels.as_ref().and_then(LabelSelector::required_label);
    let entries: Box<dyn Iterator<Item = &crate::storage::Entry>> = match (required, &after) {
        (Some((label, value)), after) => {
            Box::new(snapshot.labelled(label, value, after.as_deref()))
        }
        (None, Some(key)) => Box::new(snapshot.after(key)),
        (None, None) => Box::new(snapshot.entries()),
    };
    let mut items: Vec<Cow<'_, Value>> = Vec::new();
    let mut last_key = None;
    let mut next = None;
    for entry in entries {
        let object = from_stored(info, &entry.object);
        if !selected(&request.query, &object) {
            continue;
        }
        if request.query.limit.is_some_and(|limit| items.len() == limit) {
            next = last_key;
            break;
        }
        last_key = Some(entry.key.clone());
        items.push(object);
    }
    let mut metadata = json!({ "resourceVersion": snapshot.revision().to_string() });
    if let Some(after_key) = next {
        state.keep_snapshot(&snapshot);
        metadata["continue"] =
            json!(ContinueToken { revision: snapshot.revision(), after_key }.encode());
    }
    if wants_table(&request.headers) {
        let objects: Vec<&Value> = items.iter().map(|o| &**o).collect();
        let mut table = table::table(
            info,
            &objects,
            include_object(&request.query),
            jiff::Timestamp::now(),
            true,
        );
        table["metadata"] = metadata;
        return Ok(json_response(StatusCode::OK, &table, &[]));
    }
    let body = List { api_version: info.api_version(), kind: &info.list_kind, metadata, items };
    Ok(json_response(StatusCode::OK, &body, &[]))
}

/// How long a list waits for a `resourceVersion` the store has not reached (upstream: 3 s).
const WAIT_FOR_REVISION: std::time::Duration = std::time::Duration::from_secs(3);

/// The state a list's first page reads: by `resourceVersion` and `resourceVersionMatch`, the
/// current one (unset or `0`), the one at exactly that revision (`Exact`), or one at least that
/// recent (`NotOlderThan`, the default), waiting a little for a revision not reached yet.
async fn first_snapshot(state: &ApiState, query: &Query, prefix: &str) -> ApiResult<Snapshot> {
    let refused = |message: String| {
        let cause = Cause::from(&forbidden("resourceVersionMatch", &message));
        ApiError::invalid("meta.k8s.io", "ListOptions", "", vec![cause])
    };
    let requested = match query.resource_version.as_deref() {
        None | Some("") if query.version_match.is_some() => {
            return Err(refused(
                "resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
            ));
        }
        None | Some("") => return Ok(state.store.list(prefix)),
        Some("0") if query.version_match == Some(VersionMatch::Exact) => {
            return Err(refused(
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
            ));
        }
        Some("0") => return Ok(state.store.list(prefix)),
        Some(rv) => rv.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: must be a number"))
        })?,
    };
    let deadline = tokio::time::Instant::now() + WAIT_FOR_REVISION;
    while state.store.revision() < requested {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::revision_too_large(requested, state.store.revision()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    if query.version_match != Some(VersionMatch::Exact) {
        return Ok(state.store.list(prefix));
    }
    state
        .store
        .list_at(prefix, requested)
        .map_err(|_| ApiError::gone("The resourceVersion for the provided list is too old."))
}

/// A list response, serialized straight from the stored objects.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a> {
    api_version: String,
    kind: &'a str,
    metadata: Value,
    items: Vec<Cow<'a, Value>>,
}

/// The scale subresource's paths of a resource.
pub(crate) fn scale_paths(info: &ResourceInfo) -> ApiResult<(&str, &str, Option<&str>)> {
    info.subresources
        .iter()
        .find_map(|s| match s {
            Subresource::Scale {
                spec_replicas_path,
                status_replicas_path,
                label_selector_path,
            } => Some((
                spec_replicas_path.as_str(),
                status_replicas_path.as_str(),
                label_selector_path.as_deref(),
            )),
            _ => None,
        })
        .ok_or_else(|| ApiError::no_route(&format!("{}/scale", info.resource)))
}

/// `.spec.replicas` → `/spec/replicas`.
pub(crate) fn pointer(json_path: &str) -> String {
    json_path.replace('.', "/")
}

/// The `autoscaling/v1` Scale of an object.
pub(crate) fn scale_of(info: &ResourceInfo, object: &Value) -> ApiResult<Value> {
    let (spec_path, status_path, selector_path) = scale_paths(info)?;
    let selector = selector_path.and_then(|p| object.pointer(&pointer(p))).map(|s| match s {
        Value::String(s) => s.clone(),
        other => crate::selectors::LabelSelector::from_label_selector(other)
            .map(|s| s.to_string())
            .unwrap_or_default(),
    });
    let meta = &object["metadata"];
    let mut scale = json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": { "replicas": object.pointer(&pointer(spec_path)).cloned().unwrap_or(json!(0)) },
        "status": { "replicas": object.pointer(&pointer(status_path)).cloned().unwrap_or(json!(0)) },
    });
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        scale["status"]["selector"] = json!(selector);
    }
    Ok(scale)
}

/// `GET …/scale`.
pub(crate) fn get_scale(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    let name = request.target.object_name("get")?;
    let entry = state
        .store
        .get(&request.target.key(name))
        .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
    let scale = scale_of(info, &from_stored(info, &entry.object))?;
    Ok(json_response(StatusCode::OK, &scale, &[]))
}
