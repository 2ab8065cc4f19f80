//! Writes: create, update, patch (JSON, merge, strategic, apply), scale, delete.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::catalog::ResourceInfo;
use crate::patch::{
    self, ApplyError, BuiltinLists, ListSemantics, PatchError, PatchType, SchemaLists,
};
use crate::storage::{Entry, Store, StoreError, WriteOp};

use super::admission::{CRD_CLEANUP_FINALIZER, admit, establish_crd};
use super::convert::{from_stored, to_stored};
use super::errors::{ApiError, ApiResult, Cause, Details};
use super::objects::{
    FINALIZE, count_generation, deletion_grace, finalizers, is_core, is_crd, is_namespace,
    meta_str, metadata_mut, now_rfc3339, prepare_create, prepare_update, ready_to_remove,
    resource_version,
};
use super::paths::object_key;
use super::query::Query;
use super::read::{json_response, json_text_response, pointer, scale_of, scale_paths};
use super::registry::Served;
use super::{ApiState, ResourceRequest};
use super::{certificates, ephemeral, priority, quota, rbac, root_ca, service_accounts};

/// How often a write without a `resourceVersion` precondition (an update, a patch, a scale) is
/// tried when other writers keep getting in between.
const PATCH_ATTEMPTS: usize = 5;

/// Namespaces that always exist.
const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// How list items merge for this resource: as its CRD's compiled schema says, else (built-ins,
/// whose list semantics are compiled in) as the built-in tables say.
fn lists(served: &Served, info: &ResourceInfo) -> Box<dyn ListSemantics + Send + Sync> {
    match served.validator(info) {
        Some(validator) => Box::new(SchemaLists::new(validator)),
        None => Box::new(BuiltinLists::for_kind(&info.group, &info.kind)),
    }
}

/// The field manager of a request: `?fieldManager=`, else the client's name from `User-Agent`.
fn manager(request: &ResourceRequest) -> String {
    request.query.field_manager.clone().unwrap_or_else(|| {
        request
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .and_then(|ua| ua.split('/').next())
            .filter(|s| !s.is_empty())
            .unwrap_or("unknown")
            .to_owned()
    })
}

/// The request body as JSON (YAML accepted for `application/yaml`).
pub(crate) fn body(request: &ResourceRequest) -> ApiResult<Value> {
    let content_type =
        request.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with(crate::protobuf::CONTENT_TYPE) {
        return crate::protobuf::decode(&request.body).map_err(|e| {
            ApiError::unsupported_media_type(format!(
                "{e}; send the object as JSON instead, e.g. with `kubectl apply -f`"
            ))
        });
    }
    // Without a content type the body is taken as JSON; any other type than JSON or YAML
    // (CBOR, a form, text) is refused rather than guessed at.
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !(essence.is_empty() || essence.ends_with("json") || essence.ends_with("yaml")) {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type})"
        )));
    }
    let parsed = if content_type.contains("yaml") {
        serde_saphyr::from_slice::<Value>(&request.body).map_err(|e| e.to_string())
    } else {
        // Checked as UTF-8 once, as a whole: parsing text then need not check each string again,
        // as parsing bytes does (a call per string, about 1 % of a create's instructions).
        std::str::from_utf8(&request.body)
            .map_err(|e| format!("the text is not UTF-8: {e}"))
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| e.to_string()))
    };
    parsed.map_err(|e| ApiError::bad_request(format!("the request body is not valid: {e}")))
}

/// Refuses writes into a namespace that does not exist or is being deleted.
fn check_namespace(
    state: &ApiState,
    info: &ResourceInfo,
    namespace: Option<&str>,
) -> ApiResult<()> {
    if !info.namespaced {
        return Ok(());
    }
    let namespace = namespace.unwrap_or("default");
    let namespaces = state
        .registry
        .served()
        .find("", "v1", "namespaces")
        .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
    match state.store.get(&object_key(&namespaces, "", namespace)) {
        None => Err(ApiError::namespace_not_found(namespace)),
        Some(entry)
            if meta_str(&entry.object, "deletionTimestamp").is_some()
                && info.resource != "events" =>
        {
            Err(ApiError::namespace_terminating(namespace))
        }
        Some(_) => Ok(()),
    }
}

/// Built-in defaults the server fills on create.
fn default_builtin(info: &ResourceInfo, object: &mut Value) {
    if is_namespace(info) {
        object["spec"]["finalizers"] = json!(["kubernetes"]);
        object["status"] = json!({ "phase": "Active" });
    }
}

/// Creates the system namespaces when they are missing.
pub(crate) async fn ensure_default_namespaces(store: &Store) -> Result<(), StoreError> {
    let info = crate::catalog::builtin_resource("", "namespaces").expect("namespaces are built in");
    for name in SYSTEM_NAMESPACES {
        create_missing(store, info, None, json!({"metadata": {"name": name}}), None).await?;
    }
    Ok(())
}

/// Creates an object the server keeps for itself (a system namespace, a default account or
/// role) unless it exists, with `status` when given (which a create through the API would drop
/// as the status subresource's). `object` must be valid.
pub(crate) async fn create_missing(
    store: &Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    object: Value,
    status: Option<Value>,
) -> Result<(), StoreError> {
    let name = meta_str(&object, "name").unwrap_or_default();
    let key = object_key(info, namespace.unwrap_or_default(), name);
    if store.get(&key).is_some() {
        return Ok(());
    }
    let mut object = prepare_create(info, namespace, object, &now_rfc3339())
        .expect("the server's own objects are valid");
    default_builtin(info, &mut object);
    if let Some(status) = status {
        object["status"] = status;
    }
    match store.write(WriteOp::Create { key, object }).await {
        Ok(_) | Err(StoreError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A response showing a stored object as the addressed version shows it. `text` is the stored
/// JSON when the store has just written it: sent as it is when that version is the stored one.
fn respond(
    info: &ResourceInfo,
    status: StatusCode,
    stored: &Value,
    text: Option<String>,
    warnings: &[String],
) -> Response {
    match (from_stored(info, stored), text) {
        (Cow::Borrowed(_), Some(text)) => json_text_response(status, text, warnings),
        (served, _) => json_response(status, &served, warnings),
    }
}

fn store_error<'a>(info: &'a ResourceInfo, name: &'a str) -> impl Fn(StoreError) -> ApiError + 'a {
    move |e| ApiError::from_store(e, &info.group, &info.resource, name)
}

/// Stores a prepared new object (admission, managed fields, CRD status included).
async fn create_object(
    state: &ApiState,
    request: &ResourceRequest,
    mut object: Value,
    track: bool,
) -> ApiResult<Response> {
    let info = &request.target.info;
    let now = now_rfc3339();
    let served = state.registry.served();
    // A custom resource served without `create` is one whose CRD is being deleted: its
    // objects can still be read, changed and deleted, so that their finalizers can run.
    if !info.builtin && !info.verbs.iter().any(|v| v == "create") {
        return Err(ApiError::terminating_crd(&info.group, &info.resource));
    }
    if certificates::is_request(info) {
        certificates::record_requestor(&request.user, &mut object);
    }
    let admitted = admit(&served, info, object, None, request.query.field_validation)?;
    let mut object = admitted.object;
    if is_crd(info) {
        establish_crd(&mut object, &now);
    }
    default_builtin(info, &mut object);
    rbac::check_no_escalation(&state.store, &request.user, info, &object)?;
    if is_core(info, "pods") {
        service_accounts::admit_pod(&state.store, &mut object).await?;
        priority::admit_pod(&state.store, &mut object)?;
    }
    quota::admit(&state.store, info, &object)?;
    // Held until the Service is stored, so that no other Service takes its addresses meanwhile.
    let _allocation = match is_core(info, "services") {
        true => Some(state.services.allocate(&state.store, None, &mut object).await?),
        false => None,
    };
    if track {
        object = patch::track_update(
            None,
            object,
            &manager(request),
            lists(&served, info).as_ref(),
            &info.api_version(),
            None,
            &now,
        );
    }
    let name = meta_str(&object, "name").unwrap_or_default().to_owned();
    if request.query.dry_run {
        return Ok(json_response(StatusCode::CREATED, &object, &admitted.warnings));
    }
    let key = object_key(info, meta_str(&object, "namespace").unwrap_or(""), &name);
    let written = state
        .store
        .write(WriteOp::Create { key, object: to_stored(info, object) })
        .await
        .map_err(store_error(info, &name))?;
    if is_crd(info) {
        state.registry.refresh(&state.store);
    }
    if is_namespace(info) {
        service_accounts::ensure_default(&state.store, &name).await.map_err(|e| {
            ApiError::from_store(e, "", "serviceaccounts", service_accounts::DEFAULT)
        })?;
        root_ca::publish(&state.store, &name, &state.ca_pem)
            .await
            .map_err(|e| ApiError::from_store(e, "", "configmaps", root_ca::NAME))?;
    }
    Ok(respond(info, StatusCode::CREATED, &written.object, Some(written.json), &admitted.warnings))
}

/// `POST` to a collection.
pub(crate) async fn create(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = request.target.info.clone();
    if info.namespaced && request.target.namespace.is_none() {
        return Err(ApiError::method_not_allowed("create", &info.resource));
    }
    check_namespace(state, &info, request.target.namespace.as_deref())?;
    let body = body(&request)?;
    // Upstream's storage refuses it (as a 500; a 400 here, which it is): an exported object
    // created again must leave its version behind.
    if meta_str(&body, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let object = prepare_create(&info, request.target.namespace.as_deref(), body, &now_rfc3339())?;
    create_object(state, &request, object, true).await
}

/// The outcome of an update: the object in its stored form, and warnings.
struct Updated {
    object: Arc<Value>,
    /// The stored JSON text, when this update wrote it.
    text: Option<String>,
    warnings: Vec<String>,
}

/// Admits and stores `new` over `current` (unchanged objects are not written; an object whose
/// deletion waited only for finalizers now removed is deleted). Through `subresource` `status`
/// only the status changes; the managed-fields entry of the write names its subresource.
async fn store_update(
    state: &ApiState,
    request: &ResourceRequest,
    current: &Entry,
    new: Value,
    track: bool,
    subresource: Option<&str>,
) -> Result<Updated, ApiError> {
    let info = &request.target.info;
    let old = from_stored(info, &current.object);
    let name = meta_str(&old, "name").unwrap_or_default().to_owned();
    let now = now_rfc3339();
    // An approval is merged as a status write, then narrowed to its conditions.
    let merged_through = match subresource {
        Some(certificates::APPROVAL) => Some("status"),
        other => other.filter(|s| ["status", ephemeral::SUBRESOURCE].contains(s)),
    };
    let mut new = prepare_update(info, merged_through, &old, new)?;
    if certificates::is_request(info) {
        new = certificates::merge_update(subresource, &old, new, &now);
    }
    let served = state.registry.served();
    let admitted = admit(&served, info, new, Some(&old), request.query.field_validation)?;
    let mut new = admitted.object;
    if certificates::is_request(info) {
        certificates::check_approver(&state.store, &request.user, &old, &new)?;
    }
    count_generation(info, &old, &mut new);
    if is_crd(info) {
        establish_crd(&mut new, &now);
    }
    rbac::check_no_escalation(&state.store, &request.user, info, &new)?;
    let _allocation = match is_core(info, "services") && subresource.is_none() {
        true => Some(state.services.allocate(&state.store, Some(&old), &mut new).await?),
        false => None,
    };
    if same_but_volatile(&new, &old) {
        return Ok(Updated {
            object: current.object.clone(),
            text: None,
            warnings: admitted.warnings,
        });
    }
    if track {
        new = patch::track_update(
            Some(&old),
            new,
            &manager(request),
            lists(&served, info).as_ref(),
            &info.api_version(),
            subresource,
            &now,
        );
    }
    if request.query.dry_run {
        return Ok(Updated {
            object: Arc::new(to_stored(info, new)),
            text: None,
            warnings: admitted.warnings,
        });
    }
    let key = current.key.clone();
    let op = if ready_to_remove(&new) {
        WriteOp::Delete { key, expected_revision: current.revision }
    } else {
        WriteOp::Update { key, expected_revision: current.revision, object: to_stored(info, new) }
    };
    let written = state.store.write(op).await.map_err(store_error(info, &name))?;
    if is_crd(info) {
        state.registry.refresh(&state.store);
    }
    Ok(Updated { object: written.object, text: Some(written.json), warnings: admitted.warnings })
}

/// Whether `new` would store nothing `old` does not hold: they differ at most in
/// `resourceVersion` and in the times of managed-field entries (which a write moves on its own).
/// Managed fields `new` leaves out are kept as they are; ones it sends count, so that a client
/// rewriting them (as kubectl does when it moves an object to server-side apply) is heard.
/// Compared in place, as updates are frequent.
fn same_but_volatile(new: &Value, old: &Value) -> bool {
    let (Some(new), Some(old)) = (new.as_object(), old.as_object()) else { return new == old };
    same_except(new, old, &["metadata"])
        && match (new.get("metadata"), old.get("metadata")) {
            (Some(Value::Object(new)), Some(Value::Object(old))) => {
                same_except(new, old, &["resourceVersion", "managedFields"])
                    && new.get("managedFields").is_none_or(|sent| {
                        same_entries_but_times(
                            sent,
                            old.get("managedFields").unwrap_or(&Value::Null),
                        )
                    })
            }
            (new, old) => new == old,
        }
}

/// Whether two `managedFields` lists hold the same entries, leaving out their times.
fn same_entries_but_times(a: &Value, b: &Value) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().zip(b).all(|(a, b)| match (a.as_object(), b.as_object()) {
                    (Some(a), Some(b)) => same_except(a, b, &["time"]),
                    _ => a == b,
                })
        }
        _ => a == b,
    }
}

/// Whether two maps hold the same entries, leaving out the keys in `skip`.
fn same_except(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> bool {
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b)
        && a.iter().filter(|(k, _)| !skip.contains(&k.as_str())).all(|(k, v)| b.get(k) == Some(v))
}

/// `PUT` of an object, its `/status`, a pod's `/ephemeralcontainers`, a namespace's
/// `/finalize` or a CertificateSigningRequest's `/approval`.
pub(crate) async fn update(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = request.target.info.clone();
    let name = request.target.object_name("update")?.to_owned();
    if request.target.subresource.as_deref().is_some_and(|s| {
        !["status", ephemeral::SUBRESOURCE, FINALIZE, certificates::APPROVAL].contains(&s)
    }) {
        return Err(ApiError::method_not_allowed("update", &info.resource));
    }
    let mut body = body(&request)?;
    let subresource = request.target.subresource.clone();
    let precondition = resource_version(&body)?;
    // Built-in kinds take an update without a version (it replaces whatever is stored, retried
    // over concurrent writes), as upstream's strategies allow; custom resources and CRDs do not.
    if precondition.is_none() && (!info.builtin || is_crd(&info)) {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            &name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: 0x0: must be specified for an update".into(),
                field: "metadata.resourceVersion".into(),
            }],
        ));
    }
    for _ in 0..PATCH_ATTEMPTS {
        let current = state
            .store
            .get(&request.target.key(&name))
            .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, &name))?;
        if precondition.is_some_and(|rv| rv != current.revision) {
            return Err(stale(&info, &name));
        }
        // With a precondition there is one attempt: no copy to keep.
        let sent = if precondition.is_some() { std::mem::take(&mut body) } else { body.clone() };
        match store_update(state, &request, &current, sent, true, subresource.as_deref()).await {
            Err(e) if precondition.is_none() && e.reason == "Conflict" => continue,
            Err(e) => return Err(e),
            Ok(updated) => {
                let (object, text) = (&updated.object, updated.text);
                return Ok(respond(&info, StatusCode::OK, object, text, &updated.warnings));
            }
        }
    }
    Err(stale(&info, &name))
}

fn stale(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::conflict(
        &info.group,
        &info.resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// `PUT …/scale`: the replicas of an `autoscaling/v1` Scale into the object.
pub(crate) async fn update_scale(
    state: &ApiState,
    request: ResourceRequest,
) -> ApiResult<Response> {
    let scale = body(&request)?;
    scale_write(state, &request, |_| Ok(scale.clone())).await
}

/// Applies `change` to the Scale view of the object and writes the replicas back.
async fn scale_write(
    state: &ApiState,
    request: &ResourceRequest,
    change: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Response> {
    let info = request.target.info.clone();
    let name = request.target.object_name("update")?.to_owned();
    let (spec_path, _, _) = scale_paths(&info)?;
    for _ in 0..PATCH_ATTEMPTS {
        let current = state
            .store
            .get(&request.target.key(&name))
            .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, &name))?;
        let object = from_stored(&info, &current.object);
        let scale = change(&scale_of(&info, &object)?)?;
        if let Some(rv) = resource_version(&scale)?
            && rv != current.revision
        {
            return Err(stale(&info, &name));
        }
        let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
        if replicas.as_i64().is_none_or(|r| r < 0) {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                &name,
                vec![Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {replicas}: must be greater than or equal to 0"
                    ),
                    field: "spec.replicas".into(),
                }],
            ));
        }
        let mut new = object.into_owned();
        set_pointer(&mut new, &pointer(spec_path), replicas);
        match store_update(state, request, &current, new, true, Some("scale")).await {
            Ok(updated) => {
                return Ok(json_response(
                    StatusCode::OK,
                    &scale_of(&info, &from_stored(&info, &updated.object))?,
                    &updated.warnings,
                ));
            }
            Err(e) if e.reason == "Conflict" => continue,
            Err(e) => return Err(e),
        }
    }
    Err(stale(&info, &name))
}

/// Sets the value at a JSON pointer, creating objects on the way.
fn set_pointer(object: &mut Value, pointer: &str, value: Value) {
    let mut current = object;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !current.is_object() {
            *current = json!({});
        }
        let map = current.as_object_mut().expect("just made an object");
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return;
        }
        current = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
}

fn patch_error(info: &ResourceInfo, name: &str, error: PatchError) -> ApiError {
    match error {
        PatchError::UnsupportedMediaType(m) => ApiError::unsupported_media_type(m),
        // The cause names the patch, so that kubectl's `<field>: <message>` reads well.
        PatchError::TestFailed(m) | PatchError::Invalid(m) => ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            vec![Cause { reason: "FieldValueInvalid".into(), message: m, field: "patch".into() }],
        ),
    }
}

/// `PATCH` of an object, its `/status` or its `/scale`.
pub(crate) async fn patch(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = request.target.info.clone();
    let name = request.target.object_name("patch")?.to_owned();
    let content_type =
        request.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let patch_type = PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiError::unsupported_media_type(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml{}", if info.builtin { ", application/strategic-merge-patch+json" } else { "" })))?;
    if patch_type == PatchType::Strategic && !info.builtin {
        return Err(ApiError::unsupported_media_type(
            "strategic merge patch is not supported for custom resources; use application/merge-patch+json",
        ));
    }
    let patch_body = match patch_type {
        PatchType::Apply => {
            patch::parse_apply_body(&request.body).map_err(|e| patch_error(&info, &name, e))?
        }
        _ => serde_json::from_slice(&request.body)
            .map_err(|e| ApiError::bad_request(format!("the patch is not valid JSON: {e}")))?,
    };
    if patch_type == PatchType::Apply
        && request.query.field_manager.as_deref().is_none_or(str::is_empty)
    {
        let cause = Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        };
        return Err(ApiError::invalid("meta.k8s.io", "PatchOptions", "", vec![cause]));
    }
    let lists = lists(&state.registry.served(), &info);
    let apply = |live: Option<&Value>| -> ApiResult<Value> {
        patch::apply(patch::ApplyRequest {
            live,
            applied: &patch_body,
            manager: &manager(&request),
            force: request.query.force,
            lists: lists.as_ref(),
            api_version: &info.api_version(),
            subresource: request.target.subresource.as_deref(),
            now: &now_rfc3339(),
        })
        .map_err(|e| match e {
            ApplyError::Conflicts(conflicts) => {
                let mut error = ApiError::conflict(&info.group, &info.resource, &name, "");
                error.message = ApplyError::Conflicts(conflicts.clone()).to_string();
                error.details = Some(Box::new(Details {
                    name: name.clone(),
                    group: info.group.clone(),
                    kind: info.resource.clone(),
                    causes: conflicts
                        .into_iter()
                        .map(|c| Cause {
                            reason: "FieldManagerConflict".into(),
                            message: format!("conflict with \"{}\"", c.manager),
                            field: c.field,
                        })
                        .collect(),
                }));
                error
            }
            ApplyError::Invalid(m) => ApiError::bad_request(m),
        })
    };
    let change = |object: &Value| -> ApiResult<Value> {
        match patch_type {
            PatchType::Json => patch::json_patch(object, &patch_body),
            PatchType::Merge => patch::merge_patch(object, &patch_body),
            PatchType::Strategic => {
                patch::strategic_merge_patch(object, &patch_body, lists.as_ref())
            }
            PatchType::Apply => return apply(Some(object)),
        }
        .map_err(|e| patch_error(&info, &name, e))
    };
    if request.target.subresource.as_deref() == Some("scale") {
        return scale_write(state, &request, change).await;
    }
    let precondition = resource_version(&patch_body).ok().flatten();
    for _ in 0..PATCH_ATTEMPTS {
        let Some(current) = state.store.get(&request.target.key(&name)) else {
            if patch_type != PatchType::Apply || request.target.subresource.is_some() {
                return Err(ApiError::not_found(&info.group, &info.resource, &name));
            }
            check_namespace(state, &info, request.target.namespace.as_deref())?;
            let mut object = apply(None)?;
            metadata_mut(&mut object).insert("name".into(), json!(name));
            let object =
                prepare_create(&info, request.target.namespace.as_deref(), object, &now_rfc3339())?;
            match create_object(state, &request, object, false).await {
                Err(e) if e.reason == "AlreadyExists" => continue,
                other => return other,
            }
        };
        if precondition.is_some_and(|rv| rv != current.revision) {
            return Err(stale(&info, &name));
        }
        let old = from_stored(&info, &current.object);
        let mut new = change(&old)?;
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(current.revision.to_string()));
        }
        let subresource = request.target.subresource.as_deref();
        match store_update(
            state,
            &request,
            &current,
            new,
            patch_type != PatchType::Apply,
            subresource,
        )
        .await
        {
            Ok(updated) => {
                return Ok(respond(
                    &info,
                    StatusCode::OK,
                    &updated.object,
                    updated.text,
                    &updated.warnings,
                ));
            }
            Err(e)
                if e.reason == "Conflict"
                    && precondition.is_none()
                    && e.details.as_ref().is_none_or(|d| d.causes.is_empty()) =>
            {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
    Err(stale(&info, &name))
}

/// Propagation of a delete to dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Delete the owner now, dependents after.
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Leave dependents, without the owner reference.
    Orphan,
}

/// The parts of `DeleteOptions` the server honours.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    propagation: Option<Propagation>,
    grace_period: Option<i64>,
    uid: Option<String>,
    /// A `resourceVersion` precondition.
    pub(crate) resource_version: Option<String>,
    /// `dryRun` of the query or of the body (kubectl sends it in the body).
    pub(crate) dry_run: bool,
}

/// The options of a delete, from its body (JSON, or protobuf as `kubectl drain` sends them) and
/// its query.
fn delete_options(request: &ResourceRequest) -> ApiResult<DeleteOptions> {
    let body: Value = if request.body.is_empty() { Value::Null } else { body(request)? };
    delete_options_from(&body, &request.query)
}

/// The options of a delete from a `DeleteOptions` object (`null` for none) and the query.
pub(crate) fn delete_options_from(body: &Value, query: &Query) -> ApiResult<DeleteOptions> {
    let mut options = DeleteOptions { dry_run: query.dry_run, ..DeleteOptions::default() };
    if let Some(directives) = body.get("dryRun") {
        let directives = directives.as_array().ok_or_else(|| {
            ApiError::bad_request("DeleteOptions.dryRun must be a list of directives")
        })?;
        for directive in directives {
            options.dry_run |= super::query::dry_run(Some(directive.as_str().unwrap_or("?")))?;
        }
    }
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(query.raw.get("propagationPolicy").map(String::as_str));
    options.propagation = match policy {
        None => match body.get("orphanDependents").and_then(Value::as_bool) {
            Some(true) => Some(Propagation::Orphan),
            _ => None,
        },
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy must be Background, Foreground or Orphan, not {other:?}"
            )));
        }
    };
    options.grace_period = match body.get("gracePeriodSeconds") {
        Some(value) => Some(value.as_i64().ok_or_else(|| {
            ApiError::bad_request("gracePeriodSeconds must be an integer number of seconds")
        })?),
        None => match query.raw.get("gracePeriodSeconds") {
            Some(raw) => Some(raw.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "gracePeriodSeconds must be an integer number of seconds, not {raw:?}"
                ))
            })?),
            None => None,
        },
    };
    options.uid = body.pointer("/preconditions/uid").and_then(Value::as_str).map(str::to_owned);
    options.resource_version =
        body.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(str::to_owned);
    Ok(options)
}

/// What deleting an object did.
pub(crate) enum Deleted {
    /// Gone; this was its last state.
    Removed(Arc<Value>),
    /// Marked for deletion; finalizers (or dependents) hold it.
    Marked(Arc<Value>),
}

/// Deletes the stored object `current` with a propagation policy: removed at once when nothing
/// holds it, otherwise marked with `deletionTimestamp` (and the policy's finalizer). A running pod
/// bound to a node is held for its grace period (`requested_grace`, else its own): its node stops
/// the containers, then deletes it with a grace period of 0.
pub(crate) async fn delete_entry(
    store: &Store,
    info: &ResourceInfo,
    current: &Entry,
    propagation: Propagation,
    requested_grace: Option<i64>,
    dry_run: bool,
) -> Result<Deleted, StoreError> {
    let mut object = Value::clone(&current.object);
    let mut held = finalizers(&object);
    let gc_finalizer = match propagation {
        Propagation::Foreground => Some("foregroundDeletion"),
        Propagation::Orphan => Some("orphan"),
        Propagation::Background => None,
    };
    if let Some(f) = gc_finalizer
        && !held.iter().any(|h| h == f)
    {
        held.push(f.to_owned());
    }
    let already = meta_str(&object, "deletionTimestamp").is_some();
    // A CRD waits for its custom resources, which the garbage collector deletes.
    let crd = is_crd(info);
    if crd && !already && !held.iter().any(|h| h == CRD_CLEANUP_FINALIZER) {
        held.push(CRD_CLEANUP_FINALIZER.to_owned());
    }
    let namespace_content = is_namespace(info);
    let grace = deletion_grace(info, &object, requested_grace);
    let granted = object.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64);
    // A second delete may shorten a grace period, never lengthen it.
    let grace = granted.map_or(grace, |g| g.min(grace));
    if held.is_empty() && !namespace_content && grace == 0 {
        if dry_run {
            return Ok(Deleted::Removed(current.object.clone()));
        }
        let written = store
            .write(WriteOp::Delete {
                key: current.key.clone(),
                expected_revision: current.revision,
            })
            .await?;
        return Ok(Deleted::Removed(written.object));
    }
    if already && finalizers(&object) == held && granted == Some(grace) {
        return Ok(Deleted::Marked(current.object.clone()));
    }
    let meta = metadata_mut(&mut object);
    meta.insert("finalizers".into(), json!(held));
    if !already || granted != Some(grace) {
        let deadline = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(grace);
        meta.insert("deletionTimestamp".into(), json!(super::objects::rfc3339(deadline)));
        meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    }
    if !already {
        // As in Kubernetes, marking for deletion moves a generation the kind counts.
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
            meta.insert("generation".into(), json!(generation + 1));
        }
        if namespace_content {
            object["status"]["phase"] = json!("Terminating");
        }
        if crd {
            establish_crd(&mut object, &now_rfc3339());
        }
    }
    if dry_run {
        return Ok(Deleted::Marked(Arc::new(object)));
    }
    let written = store
        .write(WriteOp::Update {
            key: current.key.clone(),
            expected_revision: current.revision,
            object,
        })
        .await?;
    Ok(Deleted::Marked(written.object))
}

/// `DELETE` of an object.
pub(crate) async fn delete(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = &request.target.info;
    let name = request.target.object_name("delete")?;
    let options = delete_options(&request)?;
    let current = state
        .store
        .get(&request.target.key(name))
        .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
    Ok(match delete_with(state, info, &current, &options).await? {
        Deleted::Marked(object) => respond(info, StatusCode::OK, &object, None, &[]),
        Deleted::Removed(object) => {
            let mut details =
                json!({ "name": name, "kind": info.resource, "uid": meta_str(&object, "uid") });
            if !info.group.is_empty() {
                details["group"] = json!(info.group);
            }
            let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details });
            json_response(StatusCode::OK, &status, &[])
        }
    })
}

/// Deletes the stored object `current` as `options` say, checking their preconditions. A write
/// of someone else in between (a controller's status) is not the caller's conflict: without a
/// `resourceVersion` precondition the deletion is tried again on the object as it now is, for
/// as long as others keep writing in between, as upstream's storage retries it. (Each retry
/// follows someone else's successful write, so the store as a whole always moves on.)
pub(crate) async fn delete_with(
    state: &ApiState,
    info: &ResourceInfo,
    current: &Entry,
    options: &DeleteOptions,
) -> ApiResult<Deleted> {
    let name = meta_str(&current.object, "name").unwrap_or_default();
    check_deletable(info, name)?;
    let propagation = options.propagation.unwrap_or(Propagation::Background);
    let mut current = current.clone();
    loop {
        check_delete_preconditions(info, name, &current, options)?;
        let deleted = delete_entry(
            &state.store,
            info,
            &current,
            propagation,
            options.grace_period,
            options.dry_run,
        )
        .await;
        match deleted {
            Err(StoreError::Conflict { .. }) => {
                current = state
                    .store
                    .get(&current.key)
                    .ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
            }
            deleted => {
                let deleted = deleted.map_err(store_error(info, name))?;
                if is_crd(info) {
                    state.registry.refresh(&state.store);
                }
                return Ok(deleted);
            }
        }
    }
}

/// A `Conflict` when `current` is not the object `options`' preconditions name.
fn check_delete_preconditions(
    info: &ResourceInfo,
    name: &str,
    current: &Entry,
    options: &DeleteOptions,
) -> ApiResult<()> {
    if let Some(uid) = &options.uid
        && meta_str(&current.object, "uid") != Some(uid.as_str())
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.resource,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&current.object, "uid").unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = &options.resource_version
        && *rv != current.revision.to_string()
    {
        return Err(ApiError::conflict(
            &info.group,
            &info.resource,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                current.revision
            ),
        ));
    }
    Ok(())
}

/// Namespaces the cluster cannot do without, which upstream's namespace lifecycle admission
/// refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Refuses the deletion of an immortal namespace with upstream's `403`.
fn check_deletable(info: &ResourceInfo, name: &str) -> ApiResult<()> {
    if is_namespace(info) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden_resource(
            "",
            "namespaces",
            name,
            "this namespace may not be deleted",
            "",
        ));
    }
    Ok(())
}

/// `DELETE` of a collection: every selected object, as single deletes would. A selection that
/// takes in an object that may not be deleted is refused whole, before anything is deleted.
pub(crate) async fn delete_collection(
    state: &ApiState,
    request: ResourceRequest,
) -> ApiResult<Response> {
    let info = request.target.info.clone();
    super::read::check_field_selector(&info, &request.query)?;
    let options = delete_options(&request)?;
    let prefix = request.target.prefix();
    let snapshot = state.store.list(&prefix);
    let selected: Vec<&Entry> = snapshot
        .entries()
        .filter(|e| e.key.starts_with(&prefix))
        .filter(|e| super::read::selected(&request.query, &from_stored(&info, &e.object)))
        .collect();
    for entry in &selected {
        check_deletable(&info, meta_str(&entry.object, "name").unwrap_or_default())?;
    }
    let mut items = Vec::new();
    for entry in selected {
        match delete_with(state, &info, entry, &options).await {
            Ok(Deleted::Removed(o) | Deleted::Marked(o)) => {
                items.push(from_stored(&info, &o).into_owned())
            }
            // Deleted by someone else meanwhile.
            Err(e) if e.code == StatusCode::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({ "apiVersion": info.api_version(), "kind": info.list_kind, "metadata": {}, "items": items });
    Ok(json_response(StatusCode::OK, &list, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_pointer_creates_the_path() {
        let mut object = json!({"spec": {}});
        set_pointer(&mut object, "/spec/replicas", json!(3));
        set_pointer(&mut object, "/spec/template/x", json!(true));
        assert_eq!(object, json!({"spec": {"replicas": 3, "template": {"x": true}}}));
    }

    #[test]
    fn only_volatile_differences_count_as_unchanged() {
        let stored = json!({"metadata": {"name": "a", "resourceVersion": "7", "managedFields": [{}]}, "spec": {"x": 1}});
        let same = json!({"metadata": {"name": "a", "resourceVersion": "9"}, "spec": {"x": 1}});
        assert!(same_but_volatile(&same, &stored));
        for changed in [
            json!({"metadata": {"name": "a"}, "spec": {"x": 2}}),
            json!({"metadata": {"name": "a", "labels": {"l": "v"}}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {}}),
            json!({"spec": {"x": 1}}),
        ] {
            assert!(!same_but_volatile(&changed, &stored), "{changed}");
        }
        let entry = |manager: &str, time: &str| json!({"manager": manager, "time": time});
        let stored = json!({"metadata": {"name": "a", "managedFields": [entry("k", "t1")]}});
        let retimed = json!({"metadata": {"name": "a", "managedFields": [entry("k", "t2")]}});
        assert!(same_but_volatile(&retimed, &stored), "only a time moved");
        let rewritten = json!({"metadata": {"name": "a", "managedFields": [entry("j", "t1")]}});
        assert!(!same_but_volatile(&rewritten, &stored), "managed fields a client rewrote count");
        let odd = json!({"metadata": "x"});
        assert!(!same_but_volatile(&odd, &json!({"metadata": "y"})));
        assert!(same_but_volatile(&odd, &odd.clone()));
    }
}
