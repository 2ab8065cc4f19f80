//! Object metadata the server owns: names, uid, timestamps, generation, and what a write through
//! the main resource or a subresource may change. Pure functions.

use jiff::{RoundMode, TimestampRound, Unit};
use serde_json::{Map, Value, json};

use crate::catalog::{ResourceInfo, Subresource};
use crate::validation::{forbidden, required};

use super::errors::{ApiError, ApiResult, Cause};

/// Annotations and labels a client may set but the server keeps as given.
const SERVER_OWNED: [&str; 5] =
    ["uid", "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp"];

/// The current time as Kubernetes writes `metav1.Time` (seconds precision, UTC).
pub fn now_rfc3339() -> String {
    rfc3339(jiff::Timestamp::now())
}

/// `at` as Kubernetes writes times (RFC 3339, whole seconds, UTC).
pub fn rfc3339(at: jiff::Timestamp) -> String {
    // Whole seconds printed by jiff's RFC 3339 printer, which leaves out a zero fraction: a
    // `strftime` format is interpreted anew on every call (about 1.5 % of a create).
    let seconds = TimestampRound::new().smallest(Unit::Second).mode(RoundMode::Floor);
    at.round(seconds).unwrap_or(at).to_string()
}

/// A new uid: a version 7 UUID, random but ordered by creation within the process. The store
/// indexes objects by uid; a new uid then extends that index at its end, where the nodes a write
/// copies are the few the previous writes touched, instead of landing in a random node each
/// time (with version 4 uids that copy took about 5 % of the API server's CPU under a stream of
/// creates).
pub fn new_uid() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Five characters for `generateName`, from upstream's alphabet (no vowels, no look-alikes).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = [0u8; 5];
    getrandom::fill(&mut bytes).expect("the operating system's random generator is available");
    bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

/// `metadata` of an object, created if missing.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    object["metadata"].as_object_mut().expect("metadata is an object")
}

/// Drops the `metadata` maps and lists that are empty (`labels: {}`, `finalizers: []`…), as
/// upstream's decoding into `ObjectMeta`, whose fields are all `omitempty`, drops them. A
/// client-side apply patch sends `annotations: {}` for an object without its last-applied
/// annotation (`kubectl diff` does), which would otherwise be stored and shown.
fn drop_empty_metadata(object: &mut Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    meta.retain(|field, value| {
        let collection = matches!(
            field.as_str(),
            "labels" | "annotations" | "finalizers" | "ownerReferences" | "managedFields"
        );
        let empty = match value {
            Value::Object(map) => map.is_empty(),
            Value::Array(items) => items.is_empty(),
            Value::Null => true,
            _ => false,
        };
        !(collection && empty)
    });
}

/// A string field of `metadata`.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// The object's `resourceVersion` as a revision; `None` when absent or empty.
pub fn resource_version(object: &Value) -> ApiResult<Option<u64>> {
    match meta_str(object, "resourceVersion") {
        None | Some("") => Ok(None),
        Some(rv) => rv.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: must be a number"))
        }),
    }
}

/// Whether two versions of an object differ in anything but metadata and status: what
/// `generation` counts.
fn spec_changed(old: &Value, new: &Value) -> bool {
    fn spec(object: &Value) -> impl Iterator<Item = (&String, &Value)> {
        const NOT_SPEC: [&str; 4] = ["metadata", "status", "apiVersion", "kind"];
        let fields = object.as_object().into_iter().flatten();
        fields.filter(|(field, _)| !NOT_SPEC.contains(&field.as_str()))
    }
    spec(old).count() != spec(new).count() || spec(old).any(|(field, v)| new.get(field) != Some(v))
}

/// Whether objects of this kind count `metadata.generation`, as in Kubernetes 1.32: custom
/// resources, CRDs, Ingresses, PodDisruptionBudgets and the workloads a controller rolls out.
/// ConfigMaps, Secrets, Pods,
/// Namespaces, Events and the other built-ins have no generation.
fn tracks_generation(info: &ResourceInfo) -> bool {
    !info.builtin
        || matches!(
            info.group.as_str(),
            "apps" | "batch" | "networking.k8s.io" | "apiextensions.k8s.io"
        )
        || is_core(info, "replicationcontrollers")
        || (info.group == "policy" && info.resource == "poddisruptionbudgets")
}

/// Whether this is the `customresourcedefinitions` resource, whose status the server owns.
pub fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.resource == "customresourcedefinitions"
}

/// Whether this is the built-in core (`v1`) `resource`.
pub fn is_core(info: &ResourceInfo, resource: &str) -> bool {
    info.builtin && info.group.is_empty() && info.resource == resource
}

/// Whether this is the `namespaces` resource.
pub fn is_namespace(info: &ResourceInfo) -> bool {
    is_core(info, "namespaces")
}

fn has_status_subresource(info: &ResourceInfo) -> bool {
    info.subresources.iter().any(|s| matches!(s, Subresource::Status))
}

/// What a lowercase RFC 1123 label (a DNS-1123 label) must be, in upstream's words.
pub const DNS_LABEL_RULE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/// Whether `text` is a DNS-1123 label: 1 to 63 lowercase alphanumerics or '-', starting and
/// ending alphanumeric.
pub fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// Checks a name the way upstream checks object names (a DNS subdomain; a DNS label for
/// namespaces; any path segment for RBAC's kinds, so `system:discovery`, and one with a dot for
/// APIServices, `version.group`, so `v1.`), returning the causes.
pub fn name_problems(info: &ResourceInfo, name: &str) -> Vec<Cause> {
    let invalid = |rule: &str| {
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {name:?}: {rule}"),
            field: "metadata.name".into(),
        }]
    };
    let apiservice = info.builtin && info.resource == "apiservices";
    if info.builtin && info.group == "rbac.authorization.k8s.io" || apiservice {
        return match name {
            "." | ".." => invalid(&format!("may not be '{name}'")),
            _ if name.contains('/') => invalid("may not contain '/'"),
            _ if name.contains('%') => invalid("may not contain '%'"),
            // `v1.` names the core group's.
            _ if apiservice && !name.contains('.') => invalid("must be in the form: version.group"),
            _ => Vec::new(),
        };
    }
    let label =
        info.group.is_empty() && matches!(info.resource.as_str(), "namespaces" | "services");
    let max = if label { 63 } else { 253 };
    let ok = name.len() <= max
        && if label { is_dns_label(name) } else { name.split('.').all(is_dns_label) };
    if ok {
        return Vec::new();
    }
    let rule = if label {
        DNS_LABEL_RULE
    } else {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    };
    invalid(rule)
}

/// Prepares a new object for storage: type and namespace checked against the path, name or
/// `generateName`, uid, creation time, generation 1 (where the kind counts one); status dropped
/// when it has its own subresource (the CRD kind keeps its server-owned status).
pub fn prepare_create(
    info: &ResourceInfo,
    namespace: Option<&str>,
    mut object: Value,
    now: &str,
) -> ApiResult<Value> {
    check_type(info, &mut object)?;
    let meta = metadata_mut(&mut object);
    for field in SERVER_OWNED {
        meta.remove(field);
    }
    meta.remove("deletionGracePeriodSeconds");
    if info.namespaced {
        let path_ns = namespace.unwrap_or("default");
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != path_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), json!(path_ns));
            }
        }
    } else {
        meta.remove("namespace");
    }
    let name = match (
        meta.get("name").and_then(Value::as_str),
        meta.get("generateName").and_then(Value::as_str),
    ) {
        (Some(name), _) if !name.is_empty() => name.to_owned(),
        (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{}", random_suffix()),
        _ => {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                "",
                vec![Cause::from(&required("metadata.name", "name or generateName is required"))],
            ));
        }
    };
    let problems = name_problems(info, &name);
    if !problems.is_empty() {
        return Err(ApiError::invalid(&info.group, &info.kind, &name, problems));
    }
    meta.insert("name".into(), json!(name));
    meta.insert("uid".into(), json!(new_uid()));
    meta.insert("creationTimestamp".into(), json!(now));
    if tracks_generation(info) {
        meta.insert("generation".into(), json!(1));
    }
    // As upstream's strategies: a new object's status is the controllers' to write (a Job
    // copied with its status would otherwise never run), except a Node's, which its kubelet
    // registers with, and a CRD's, which the server fills.
    if has_status_subresource(info)
        && !is_crd(info)
        && !is_core(info, "nodes")
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    drop_empty_metadata(&mut object);
    super::defaults::normalize(info, &mut object);
    super::defaults::on_create(info, &mut object);
    refuse_problems(info, &name, &object, None)?;
    Ok(object)
}

/// Refuses an object upstream's validation would refuse: checks of every kind (see
/// `object_checks`) and of its own kind (see `kind_checks`), on an update against `old`.
fn refuse_problems(
    info: &ResourceInfo,
    name: &str,
    object: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    let mut problems = super::object_checks::problems(info, object);
    problems.extend(super::kind_checks::problems(info, object, old));
    if problems.is_empty() {
        return Ok(());
    }
    // A value of the wrong type fails upstream's decoding before any validation sees it (and
    // may be what the problems found come from): that `400` is the answer then.
    super::admission::refuse_undecodable(info, object)?;
    Err(ApiError::invalid(&info.group, &info.kind, name, problems))
}

/// Sets `apiVersion`/`kind` when missing and refuses a body of another type.
pub fn check_type(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), json!(info.api_version()));
        }
        Some(v) if info.is_api_version(v) => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({})",
                info.api_version()
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), json!(info.kind));
        }
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    Ok(())
}

/// The subresource through which a namespace's `spec.finalizers` change.
pub const FINALIZE: &str = "finalize";

/// Merges an update into the stored object the way upstream strategies do:
/// - through the main resource, `status` stays as stored (when it has its own subresource),
///   and so do a pod's ephemeral containers;
/// - through `/status`, only `status` changes (and metadata changes are ignored);
/// - through a pod's `/ephemeralcontainers`, only containers are added to them (see
///   `ephemeral`);
/// - through a namespace's `/finalize`, only its `spec.finalizers` change;
/// - uid, name, namespace, creation time, deletion time and generation never change (the
///   generation moves after admission, see [`count_generation`]).
pub fn prepare_update(
    info: &ResourceInfo,
    subresource: Option<&str>,
    old: &Value,
    mut new: Value,
) -> ApiResult<Value> {
    check_type(info, &mut new)?;
    if is_core(info, "pods") {
        match subresource {
            Some(super::ephemeral::SUBRESOURCE) => return super::ephemeral::merge(old, &new),
            None => super::ephemeral::keep(old, &mut new),
            _ => {}
        }
    }
    // A namespace's `finalize` changes only its own finalizers.
    if subresource == Some(FINALIZE) {
        let mut merged = old.clone();
        merged["spec"]["finalizers"] =
            new.pointer("/spec/finalizers").cloned().unwrap_or(json!([]));
        return Ok(merged);
    }
    if subresource == Some("status") {
        let mut merged = old.clone();
        merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
        if merged["status"].is_null()
            && let Some(map) = merged.as_object_mut()
        {
            map.remove("status");
        }
        // Upstream keeps the client's resourceVersion precondition; the caller has checked it.
        return Ok(merged);
    }
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let name = meta_str(old, "name").unwrap_or_default().to_owned();
    if let Some(new_name) = meta_str(&new, "name")
        && !new_name.is_empty()
        && new_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({new_name}) does not match the name on the URL ({name})"
        )));
    }
    let meta = metadata_mut(&mut new);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(field) {
            Some(value) => {
                meta.insert(field.into(), value.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    // Once deleting, finalizers may only be removed, never added.
    if old_meta.get("deletionTimestamp").is_some() {
        let old_finalizers = finalizers(old);
        if finalizers(&new).iter().any(|f| !old_finalizers.contains(f)) {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                &name,
                vec![Cause::from(&forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted",
                ))],
            ));
        }
    }
    if has_status_subresource(info) {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(map) = new.as_object_mut() {
                    map.remove("status");
                }
            }
        }
    }
    drop_empty_metadata(&mut new);
    super::defaults::normalize(info, &mut new);
    if is_core(info, "pods") {
        super::priority::keep_on_update(&mut new, old);
    }
    refuse_problems(info, &name, &new, Some(old))?;
    Ok(new)
}

/// Moves `new`'s generation one past `old`'s when anything but metadata and status changed, for
/// the kinds that count generations. Runs on the admitted object, so that fields admission
/// prunes do not count as a change.
pub fn count_generation(info: &ResourceInfo, old: &Value, new: &mut Value) {
    if tracks_generation(info) && spec_changed(old, new) {
        let generation = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        metadata_mut(new).insert("generation".into(), json!(generation + 1));
    }
}

/// The object's finalizers.
pub fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Whether the object is being deleted and nothing holds it any more (no finalizer, no grace
/// period a kubelet is still using): the server removes it.
pub fn ready_to_remove(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
        && finalizers(object).is_empty()
        && object
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        && !held_namespace(object)
}

/// Whether `object` is a namespace its own finalizers (`spec.finalizers`, which the namespace
/// controller's `kubernetes` heads) still hold.
fn held_namespace(object: &Value) -> bool {
    let namespace = object.get("kind").and_then(Value::as_str) == Some("Namespace")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let held = object.pointer("/spec/finalizers").and_then(Value::as_array);
    namespace && held.is_some_and(|held| !held.is_empty())
}

/// The grace period a delete gives the object: only pods bound to a node and still running get
/// one (`requested`, else their `terminationGracePeriodSeconds`, else 30 s), so the node can stop
/// their containers before the pod disappears; everything else goes at once.
pub fn deletion_grace(info: &ResourceInfo, object: &Value, requested: Option<i64>) -> i64 {
    let is_pod = is_core(info, "pods");
    let bound =
        object.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let finished = matches!(
        object.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if !is_pod || !bound || finished {
        return 0;
    }
    requested
        .or_else(|| object.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
        .unwrap_or(30)
        .max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;

    #[test]
    fn times_are_written_in_whole_seconds_as_kubernetes_writes_them() {
        let at = |text: &str| text.parse::<jiff::Timestamp>().unwrap();
        assert_eq!(rfc3339(at("2026-11-28T18:04:14.999999Z")), "2026-11-28T18:04:14Z");
        assert_eq!(rfc3339(at("2026-01-01T00:00:00Z")), "2026-01-01T00:00:00Z");
        assert_eq!(rfc3339(at("1969-12-31T23:59:58.5Z")), "1969-12-31T23:59:58Z");
        let now = now_rfc3339();
        assert_eq!((now.len(), now.ends_with('Z')), (20, true), "{now}");
    }

    fn info(resource: &str) -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.resource == resource).unwrap()
    }

    fn custom() -> ResourceInfo {
        let mut info = info("configmaps");
        info.group = "example.dev".into();
        info.version = "v1".into();
        info.resource = "widgets".into();
        info.kind = "Widget".into();
        info.builtin = false;
        info.subresources = vec![Subresource::Status];
        info
    }

    #[test]
    fn uids_are_distinct_uuids_in_creation_order() {
        let uids: Vec<String> = (0..1000).map(|_| new_uid()).collect();
        for uid in &uids {
            assert!(uuid::Uuid::parse_str(uid).is_ok(), "{uid} is not a UUID");
        }
        // Strictly increasing, hence distinct: the store's uid index grows at its end.
        assert!(uids.windows(2).all(|pair| pair[0] < pair[1]), "{uids:?}");
    }

    #[test]
    fn create_sets_server_fields_and_drops_status_of_custom_resources() {
        let body = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
            "metadata": {"generateName": "w-", "uid": "mine", "resourceVersion": "9"},
            "spec": {"a": 1}, "status": {"ready": true}});
        let object = prepare_create(&custom(), Some("team"), body, "2026-11-21T00:00:00Z").unwrap();
        let meta = &object["metadata"];
        assert!(
            meta["name"].as_str().unwrap().starts_with("w-")
                && meta["name"].as_str().unwrap().len() == 7
        );
        assert_ne!(meta["uid"], "mine");
        assert_eq!(meta["namespace"], "team");
        assert_eq!(meta["generation"], 1);
        assert!(meta.get("resourceVersion").is_none());
        assert!(object.get("status").is_none());
    }

    #[test]
    fn a_built_in_object_is_created_without_the_status_it_sent_but_a_node() {
        let job = json!({"metadata": {"name": "rerun"}, "spec": {"template": {"spec":
            {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
            "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
        let created = prepare_create(&info("jobs"), Some("default"), job, "t").unwrap();
        assert!(created.get("status").is_none(), "{created}");
        let node = json!({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}});
        let created = prepare_create(&info("nodes"), None, node, "t").unwrap();
        assert_eq!(created["status"]["capacity"]["cpu"], "2");
    }

    #[test]
    fn empty_metadata_maps_and_lists_are_dropped_as_upstream_drops_them() {
        let body = json!({"metadata": {"name": "a", "labels": {}, "annotations": {},
            "finalizers": [], "ownerReferences": null}, "data": {}});
        let object =
            prepare_create(&info("configmaps"), Some("team"), body, "2026-11-21T00:00:00Z")
                .unwrap();
        let meta = object["metadata"].as_object().unwrap();
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            assert!(!meta.contains_key(field), "{field} is left: {meta:?}");
        }
        assert_eq!(object["data"], json!({}), "only metadata is touched");
        let kept = json!({"metadata": {"name": "a", "labels": {"app": "web"}}});
        let kept = prepare_create(&info("configmaps"), Some("team"), kept, "2026-11-21T00:00:00Z")
            .unwrap();
        assert_eq!(kept["metadata"]["labels"], json!({"app": "web"}));
    }

    #[test]
    fn create_refuses_a_bad_name_and_a_foreign_namespace() {
        let bad = json!({"metadata": {"name": "Not_OK"}});
        let error = prepare_create(&info("configmaps"), Some("default"), bad, "t").unwrap_err();
        assert_eq!(error.code.as_u16(), 422);
        assert_eq!(error.details.unwrap().causes[0].field, "metadata.name");
        let elsewhere = json!({"metadata": {"name": "ok", "namespace": "other"}});
        assert_eq!(
            prepare_create(&info("configmaps"), Some("default"), elsewhere, "t")
                .unwrap_err()
                .code
                .as_u16(),
            400
        );
    }

    #[test]
    fn generation_moves_only_on_spec_changes_and_status_goes_through_its_subresource() {
        let old = json!({"apiVersion": "example.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "uid": "u", "generation": 3}, "spec": {"a": 1}, "status": {"s": 1}});
        let mut relabel = old.clone();
        relabel["metadata"]["labels"] = json!({"x": "y"});
        relabel["status"] = json!({"s": 2});
        let mut updated = prepare_update(&custom(), None, &old, relabel).unwrap();
        count_generation(&custom(), &old, &mut updated);
        assert_eq!(updated["metadata"]["generation"], 3);
        assert_eq!(updated["status"], json!({"s": 1}), "status is kept on the main resource");

        let mut respec = old.clone();
        respec["spec"]["a"] = json!(2);
        assert_eq!(generation_after(&old, respec), 4);

        let mut status = old.clone();
        status["status"] = json!({"s": 9});
        status["spec"]["a"] = json!(7);
        let updated = prepare_update(&custom(), Some("status"), &old, status).unwrap();
        assert_eq!(
            (updated["status"]["s"].clone(), updated["spec"]["a"].clone()),
            (json!(9), json!(1))
        );
    }

    #[test]
    fn only_kinds_that_count_generations_get_one() {
        let data = |a: i64| json!({"metadata": {"name": "c"}, "data": {"a": a}});
        let created = prepare_create(&info("configmaps"), Some("default"), data(1), "t").unwrap();
        assert!(created["metadata"].get("generation").is_none(), "{created}");
        let mut updated = prepare_update(&info("configmaps"), None, &created, data(2)).unwrap();
        count_generation(&info("configmaps"), &created, &mut updated);
        assert!(updated["metadata"].get("generation").is_none(), "{updated}");

        let deployment = json!({"metadata": {"name": "d"}, "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "d", "image": "nginx"}]}}}});
        let created = prepare_create(&info("deployments"), Some("default"), deployment, "t");
        assert_eq!(created.unwrap()["metadata"]["generation"], 1);
    }

    #[test]
    fn a_new_top_level_field_is_a_spec_change() {
        let old = json!({"metadata": {"name": "w", "generation": 1}, "spec": {"a": 1}});
        let mut new = old.clone();
        new["extra"] = json!(true);
        assert_eq!(generation_after(&old, new), 2);
    }

    /// The generation of a custom resource `old` updated to `new`.
    fn generation_after(old: &Value, new: Value) -> Value {
        let mut updated = prepare_update(&custom(), None, old, new).unwrap();
        count_generation(&custom(), old, &mut updated);
        updated["metadata"]["generation"].clone()
    }

    #[test]
    fn no_finalizer_can_be_added_while_deleting() {
        let old = json!({"metadata": {"name": "w", "deletionTimestamp": "t", "finalizers": ["a"]}});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["a", "b"]);
        assert_eq!(prepare_update(&custom(), None, &old, new).unwrap_err().code.as_u16(), 422);
        let mut done = old.clone();
        done["metadata"]["finalizers"] = json!([]);
        assert!(ready_to_remove(&prepare_update(&custom(), None, &old, done).unwrap()));
    }
}
