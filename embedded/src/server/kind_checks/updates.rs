//! What an update may not change: most of a pod's spec, of a StatefulSet's, of a
//! PersistentVolumeClaim's and of a Job's, and a Service's primary cluster IP and IP family.
//!
//! Upstream compares the old and new objects after both were defaulted and decoded; here both
//! get the defaults Keelson fills, lose the fields their kind does not have, and compare with
//! Go's zero values (null, `""`, `false`, `0`, empty lists and maps) left out and quantities by
//! value (see [`defaulted`] and [`zero_free`]). So a write that leaves defaults out (`kubectl
//! replace` of a manifest) or that a Go client round-tripped changes nothing. Keelson's
//! scheduler binds pods by setting `spec.nodeName` through the main resource, which upstream
//! does through `pods/binding`: an unset node name may be set.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value, json};

use crate::catalog::ResourceInfo;
use crate::node::quantity;
use crate::server::errors::Cause;
use crate::validation;

use super::{IMMUTABLE, go_labels, go_selector, go_strings, invalid, set_field, terms};

/// Upstream's detail for a change to a pod's spec beyond what an update may change.
const POD_UPDATE_RULE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The fields of a StatefulSet's spec an update may change.
const STATEFUL_SET_MUTABLE: [&str; 7] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// Upstream's detail for a change to the rest of a StatefulSet's spec.
const STATEFUL_SET_UPDATE_RULE: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

/// Upstream's detail for a change to a PersistentVolumeClaim's spec beyond what may change.
const CLAIM_UPDATE_RULE: &str = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";

/// A pod update: upstream lets it change only its containers' and init containers' images,
/// set or lower `activeDeadlineSeconds`, add tolerations (or change their
/// `tolerationSeconds`), remove scheduling gates, add to a gated pod's node selector and set a
/// negative grace period to 1. Keelson's scheduler also sets an unset `nodeName`. Ephemeral
/// containers change through their own subresource, and are kept as stored here.
pub(super) fn pod_update(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    let spec_of = |pod: &Value| {
        let mut spec = spec(pod);
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("ephemeralContainers");
        }
        spec
    };
    if spec_of(new) == spec_of(old) {
        return Vec::new();
    }
    let (new, old) = (spec_of(&defaulted(info, new)), spec_of(&defaulted(info, old)));
    for list in ["containers", "initContainers"] {
        if items(&new, list).len() != items(&old, list).len() {
            let detail = "pod updates may not add or remove containers";
            return vec![Cause::from(&validation::forbidden(&format!("spec.{list}"), detail))];
        }
    }
    let mut causes = Vec::new();
    match deadline_problem(&new, &old) {
        Some((cause, true)) => return vec![cause],
        Some((cause, false)) => causes.push(cause),
        None => {}
    }
    causes.extend(tolerations_problem(&new, &old));
    causes.extend(added_gates(&new, &old));

    let mut munged = new.clone();
    for list in ["containers", "initContainers"] {
        let containers = munged.get_mut(list).and_then(Value::as_array_mut);
        for (container, was) in containers.into_iter().flatten().zip(items(&old, list)) {
            copy_path(was, container, &["image"]);
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        copy_path(&old, &mut munged, &[field]);
    }
    let grace = |spec: &Value| spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(&old).is_some_and(|g| g < 0) && grace(&munged) == Some(1) {
        copy_path(&old, &mut munged, &["terminationGracePeriodSeconds"]);
    }
    if old.get("nodeName").and_then(Value::as_str).is_none_or(str::is_empty) {
        copy_path(&old, &mut munged, &["nodeName"]);
    }
    if !items(&old, "schedulingGates").is_empty() {
        causes.extend(node_selector_problem(&munged, &old));
        copy_path(&old, &mut munged, &["nodeSelector"]);
    }
    let changed = changed_fields(&zero_free(&munged), &zero_free(&old));
    if !changed.is_empty() {
        let fields: Vec<String> = changed.iter().map(|field| format!("spec.{field}")).collect();
        let detail = format!("{POD_UPDATE_RULE}\n  changed: {}", fields.join(", "));
        causes.push(Cause::from(&validation::forbidden("spec", &detail)));
    }
    causes
}

/// What is wrong with a change of a pod's `activeDeadlineSeconds`, which may only be set or
/// lowered (to 0 or more), and whether upstream checks nothing further then.
fn deadline_problem(new: &Value, old: &Value) -> Option<(Cause, bool)> {
    let field = "spec.activeDeadlineSeconds";
    let deadline = |spec: &Value| spec.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(new), deadline(old)) {
        (Some(after), _) if !(0..=i64::from(i32::MAX)).contains(&after) => {
            let detail = "must be between 0 and 2147483647, inclusive";
            Some((invalid(field, &after.to_string(), detail), true))
        }
        (Some(after), Some(before)) if before < after => {
            let detail = "must be less than or equal to previous value";
            Some((invalid(field, &after.to_string(), detail), true))
        }
        (None, Some(_)) => {
            let detail = "must not update from a positive integer to nil value";
            Some((invalid(field, "\"null\"", detail), false))
        }
        _ => None,
    }
}

/// A pod keeps every toleration it has (only their `tolerationSeconds` may change): an update
/// may only add some.
fn tolerations_problem(new: &Value, old: &Value) -> Option<Cause> {
    let key = |toleration: &Value| {
        let mut toleration = zero_free(toleration);
        if let Some(fields) = toleration.as_object_mut() {
            fields.remove("tolerationSeconds");
        }
        toleration
    };
    let now: Vec<Value> = items(new, "tolerations").iter().map(key).collect();
    let kept = items(old, "tolerations").iter().all(|toleration| now.contains(&key(toleration)));
    let detail = "existing toleration can not be modified except its tolerationSeconds";
    (!kept).then(|| Cause::from(&validation::forbidden("spec.tolerations", detail)))
}

/// A pod's scheduling gates may only be removed: a cause for each one an update adds.
fn added_gates(new: &Value, old: &Value) -> Vec<Cause> {
    fn name(gate: &Value) -> &str {
        gate.get("name").and_then(Value::as_str).unwrap_or_default()
    }
    let before: HashSet<&str> = items(old, "schedulingGates").iter().map(name).collect();
    let gates = items(new, "schedulingGates").iter().enumerate();
    gates
        .filter(|(_, gate)| !before.contains(name(gate)))
        .map(|(index, gate)| {
            let at = format!("spec.schedulingGates[{index}].name");
            let detail =
                format!("only deletion is allowed, but found new scheduling gate '{}'", name(gate));
            Cause::from(&validation::forbidden(&at, &detail))
        })
        .collect()
}

/// A gated pod's node selector may gain entries but not lose or change one.
fn node_selector_problem(new: &Value, old: &Value) -> Option<Cause> {
    let after = new.get("nodeSelector");
    let before = old.get("nodeSelector").and_then(Value::as_object)?;
    let kept = before.iter().all(|(key, value)| after.and_then(|a| a.get(key)) == Some(value));
    let detail = "only additions to spec.nodeSelector are allowed (no mutations or deletions)";
    (!kept).then(|| invalid("spec.nodeSelector", &go_labels(after), detail))
}

/// A StatefulSet update may change only the fields of [`STATEFUL_SET_MUTABLE`] in its spec:
/// its selector, Service name, pod management policy and claim templates stay.
pub(super) fn stateful_set_update(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    let fixed = |set: &Value| {
        let mut spec = spec(set);
        if let Some(spec) = spec.as_object_mut() {
            spec.retain(|field, _| !STATEFUL_SET_MUTABLE.contains(&field.as_str()));
        }
        spec
    };
    if fixed(new) == fixed(old) {
        return Vec::new();
    }
    let comparable = |set: &Value| {
        let mut spec = fixed(&defaulted(info, set));
        let templates = spec.get_mut("volumeClaimTemplates").and_then(Value::as_array_mut);
        for template in templates.into_iter().flatten() {
            // Upstream defaults their status to `phase: Pending`; Keelson leaves it out.
            if let Some(template) = template.as_object_mut() {
                template.remove("status");
            }
            claim_defaults(template.get_mut("spec"));
        }
        zero_free(&spec)
    };
    if comparable(new) == comparable(old) {
        return Vec::new();
    }
    vec![Cause::from(&validation::forbidden("spec", STATEFUL_SET_UPDATE_RULE))]
}

/// A Job update may not change its selector, completion mode, `backoffLimitPerIndex` or
/// `managedBy`; nor its completions, except an Indexed Job's together with its parallelism;
/// nor its pod template, except the scheduling directives of a suspended Job that never
/// started (see [`scheduling_directives`]).
pub(super) fn job_update(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    if new.get("spec") == old.get("spec") {
        return Vec::new();
    }
    let suspended = old.pointer("/spec/suspend") == Some(&Value::Bool(true));
    let started = old.pointer("/status/startTime").is_some_and(|time| !time.is_null());
    let (new, old) = (spec(&defaulted(info, new)), spec(&defaulted(info, old)));
    let mut causes: Vec<Cause> = completions_problem(&new, &old).into_iter().collect();
    let selector = set_field(&new, "selector");
    if terms(selector) != terms(set_field(&old, "selector")) {
        let shown = selector.map_or_else(|| "null".to_owned(), go_selector);
        causes.push(invalid("spec.selector", &shown, IMMUTABLE));
    }
    let template = new.get("template").cloned().unwrap_or(Value::Null);
    let mut before = old.get("template").cloned().unwrap_or(Value::Null);
    if suspended && !started {
        scheduling_directives(&template, &mut before);
    }
    if zero_free(&template) != zero_free(&before) {
        causes.push(invalid("spec.template", "core.PodTemplateSpec{...}", IMMUTABLE));
    }
    for field in ["completionMode", "backoffLimitPerIndex", "managedBy"] {
        let value = scalar(&new, field);
        if value != scalar(&old, field) {
            causes.push(invalid(&format!("spec.{field}"), &shown(value), IMMUTABLE));
        }
    }
    causes
}

/// A Job's `completions` never change, except an Indexed Job's, to the value its parallelism
/// changes to (elastic Indexed Jobs).
fn completions_problem(new: &Value, old: &Value) -> Option<Cause> {
    let completions = scalar(new, "completions");
    if completions == scalar(old, "completions") {
        return None;
    }
    let field = "spec.completions";
    if new.get("completionMode").and_then(Value::as_str) != Some("Indexed") {
        return Some(invalid(field, &shown(completions), IMMUTABLE));
    }
    // Upstream refuses an Indexed Job without completions on its own.
    let detail = "can only be modified in tandem with spec.parallelism";
    (completions? != scalar(new, "parallelism")?)
        .then(|| invalid(field, &shown(completions), detail))
}

/// Copies into `old` what the pod template of a suspended Job that never started may change:
/// its labels, annotations, node selector, node affinity, tolerations and scheduling gates.
fn scheduling_directives(template: &Value, old: &mut Value) {
    for path in [
        &["metadata", "labels"][..],
        &["metadata", "annotations"],
        &["spec", "nodeSelector"],
        &["spec", "affinity", "nodeAffinity"],
        &["spec", "tolerations"],
        &["spec", "schedulingGates"],
    ] {
        copy_path(template, old, path);
    }
}

/// A PersistentVolumeClaim update: its spec stays as created, except that an unset
/// `volumeName` may be set (binding it), `volumeAttributesClassName` may change and, once it
/// is bound, its storage request may change, though not to its capacity or less when lowered.
pub(super) fn claim_update(info: &ResourceInfo, new: &Value, old: &Value) -> Vec<Cause> {
    if new.get("spec") == old.get("spec") {
        return Vec::new();
    }
    let spec_of = |claim: &Value| {
        let mut spec = spec(&defaulted(info, claim));
        claim_defaults(Some(&mut spec));
        spec
    };
    let (mut munged, was) = (spec_of(new), spec_of(old));
    let storage = ["resources", "requests", "storage"];
    let requested = |spec: &Value| spec.pointer("/resources/requests/storage").and_then(amount);
    let (after, before) = (requested(&munged).unwrap_or(0), requested(&was).unwrap_or(0));
    let volume = was.get("volumeName").and_then(Value::as_str).unwrap_or_default();
    if volume.is_empty() {
        copy_path(&was, &mut munged, &["volumeName"]);
    }
    if !volume.is_empty() || old.pointer("/status/phase").and_then(Value::as_str) == Some("Bound") {
        copy_path(&was, &mut munged, &storage);
    }
    copy_path(&was, &mut munged, &["volumeAttributesClassName"]);
    let mut causes = Vec::new();
    if zero_free(&munged) != zero_free(&was) {
        causes.push(Cause::from(&validation::forbidden("spec", CLAIM_UPDATE_RULE)));
    }
    let capacity = old.pointer("/status/capacity/storage").and_then(amount).unwrap_or(0);
    if after < before && after <= capacity {
        let detail = "field can not be less than status.capacity";
        causes.push(Cause::from(&validation::forbidden("spec.resources.requests.storage", detail)));
    }
    causes
}

/// A claim spec's defaults: `volumeMode` is `Filesystem`.
fn claim_defaults(spec: Option<&mut Value>) {
    if let Some(spec) = spec.and_then(Value::as_object_mut) {
        spec.entry("volumeMode").or_insert(json!("Filesystem"));
    }
}

/// A Service update may not change its primary IP family, nor its primary cluster IP through
/// `clusterIPs` (`services` checks `clusterIP` as it allocates), unless it is or becomes an
/// `ExternalName` Service or it stays headless. What the update leaves out, `services` keeps.
pub(super) fn service_update(new: &Value, old: &Value) -> Vec<Cause> {
    let (new, old) = (spec(new), spec(old));
    let external = |spec: &Value| spec.get("type").and_then(Value::as_str) == Some("ExternalName");
    if external(&new) || external(&old) {
        return Vec::new();
    }
    // The update's value, else the stored one, which `services` keeps.
    let held = |field: &str| set_field(&new, field).or_else(|| set_field(&old, field));
    let headless = |ip: Option<&Value>| ip.and_then(Value::as_str) == Some("None");
    let was_headless = headless(set_field(&old, "clusterIP"));
    if was_headless || headless(held("clusterIP")) {
        return Vec::new();
    }
    let mut causes = Vec::new();
    fn first<'a>(spec: &'a Value, field: &str) -> Option<&'a Value> {
        set_field(spec, field).map(|list| &list[0])
    }
    if let (Some(after), Some(before)) = (first(&new, "clusterIPs"), first(&old, "clusterIPs"))
        && after != before
    {
        let shown = go_strings("string", new.get("clusterIPs"));
        causes.push(invalid("spec.clusterIPs[0]", &shown, "may not change once set"));
    }
    let families =
        |list: Option<&Value>| list.and_then(Value::as_array).cloned().unwrap_or_default();
    let (after, before) = (families(held("ipFamilies")), families(set_field(&old, "ipFamilies")));
    let changed = match (after.first(), before.first()) {
        (Some(_), Some(_)) if after.len() == before.len() => {
            after.iter().zip(&before).filter(|(a, b)| a != b).count()
        }
        (Some(a), Some(b)) => usize::from(a != b),
        _ => 0,
    };
    // Upstream names the primary family for every one that changed.
    let shown = go_strings("core.IPFamily", held("ipFamilies"));
    for _ in 0..changed {
        causes.push(invalid("spec.ipFamilies[0]", &shown, "may not change once set"));
    }
    causes
}

/// An object's `spec`, `{}` when it has none.
fn spec(object: &Value) -> Value {
    object.get("spec").filter(|spec| spec.is_object()).cloned().unwrap_or_else(|| json!({}))
}

/// The list at `field` of `object`, empty when it has none.
fn items<'a>(object: &'a Value, field: &str) -> &'a [Value] {
    object.get(field).and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
}

/// `object`'s `field` when it is not null.
fn scalar<'a>(object: &'a Value, field: &str) -> Option<&'a Value> {
    object.get(field).filter(|value| !value.is_null())
}

/// A value as upstream shows a pointer's in a cause: `null` when unset, strings quoted.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "null".to_owned(),
        Some(Value::String(text)) => format!("{text:?}"),
        Some(other) => other.to_string(),
    }
}

/// Sets the field at `path` of `to` to its value in `from`, or removes it when `from` has none.
fn copy_path(from: &Value, to: &mut Value, path: &[&str]) {
    let value = path.iter().try_fold(from, |value, key| value.get(key)).cloned();
    let Some((last, parents)) = path.split_last() else { return };
    let mut target = to;
    for key in parents {
        let Some(fields) = target.as_object_mut() else { return };
        if value.is_none() && !fields.contains_key(*key) {
            return;
        }
        target = fields.entry(*key).or_insert_with(|| json!({}));
    }
    let Some(fields) = target.as_object_mut() else { return };
    match value {
        Some(value) => fields.insert((*last).to_owned(), value),
        None => fields.remove(*last),
    };
}

/// `object` as upstream's update validation sees it, which decoding has defaulted: with the
/// defaults Keelson fills on every write and on create (a write that leaves them out changes
/// nothing), and without the fields its kind does not have (admission prunes them after this
/// check).
fn defaulted(info: &ResourceInfo, object: &Value) -> Value {
    let mut object = object.clone();
    crate::server::defaults::normalize(info, &mut object);
    crate::server::defaults::on_create(info, &mut object);
    if let Some(schema) = info.schema.get() {
        validation::prune(&mut object, schema.as_ref());
    }
    object
}

/// `value` as Go's semantic equality compares what it decodes to: without the fields that
/// decode to their zero value (null, `""`, `false`, `0`, empty lists and maps), and with the
/// quantities of resource lists (`requests`, `limits`, `overhead`, `capacity`) by value, so
/// that `1Gi` equals `1024Mi`. Lenient where Go keeps a pointer to a zero value.
fn zero_free(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(field, value)| {
                    let value = match (field.as_str(), value) {
                        ("requests" | "limits" | "overhead" | "capacity", Value::Object(list)) => {
                            quantities(list)
                        }
                        _ => zero_free(value),
                    };
                    (field.clone(), value)
                })
                .filter(|(_, value)| !is_zero(value))
                .collect(),
        ),
        Value::Array(values) => Value::Array(values.iter().map(zero_free).collect()),
        _ => value.clone(),
    }
}

/// Whether Go decodes `value` to its type's zero value.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(set) => !set,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::String(text) => text.is_empty(),
        Value::Array(values) => values.is_empty(),
        Value::Object(fields) => fields.is_empty(),
    }
}

/// A resource list with each quantity by its value in milli-units (kept as given when it does
/// not parse).
fn quantities(list: &Map<String, Value>) -> Value {
    let by_value = list.iter().map(|(resource, value)| {
        let milli = amount(value).map_or_else(|| value.clone(), |milli| json!(milli.to_string()));
        (resource.clone(), milli)
    });
    Value::Object(by_value.collect())
}

/// A quantity's value in milli-units, from its text or a JSON number.
fn amount(value: &Value) -> Option<i128> {
    match value {
        Value::String(text) => quantity::parse(text).ok(),
        Value::Number(number) => quantity::parse(&number.to_string()).ok(),
        _ => None,
    }
}

/// The fields of two objects whose values differ, in order.
fn changed_fields(new: &Value, old: &Value) -> Vec<String> {
    let all: BTreeSet<&String> =
        [new, old].into_iter().filter_map(Value::as_object).flat_map(Map::keys).collect();
    all.into_iter().filter(|field| new.get(field) != old.get(field)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::problems;
    use super::super::tests::{deployment, found, info};
    use super::*;

    /// The field and reason of each cause.
    fn fields(resource: &str, object: &Value, old: &Value) -> Vec<(String, String)> {
        problems(&info(resource), object, Some(old))
            .into_iter()
            .map(|c| (c.field, c.reason))
            .collect()
    }

    /// `(field, reason)` of one cause.
    fn cause(field: &str, reason: &str) -> (String, String) {
        (field.to_owned(), reason.to_owned())
    }

    /// `object` with `patch` merged in (a JSON merge patch).
    fn merged(object: &Value, patch: Value) -> Value {
        fn merge(target: &mut Value, patch: Value) {
            let Value::Object(fields) = patch else {
                *target = patch;
                return;
            };
            if !target.is_object() {
                *target = json!({});
            }
            for (field, value) in fields {
                if value.is_null() {
                    target.as_object_mut().unwrap().remove(&field);
                } else {
                    merge(&mut target[&field], value);
                }
            }
        }
        let mut object = object.clone();
        merge(&mut object, patch);
        object
    }

    /// A pod as a manifest gives it, and as it is stored (defaulted on create).
    fn pod_manifest() -> (Value, Value) {
        let manifest = json!({"metadata": {"name": "web", "uid": "u1"}, "spec": {
            "containers": [{"name": "web", "image": "nginx:1",
                "resources": {"requests": {"memory": "1Gi", "cpu": "500m"}}}],
            "initContainers": [{"name": "init", "image": "busybox:1"}],
            "tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 10}],
            "schedulingGates": [{"name": "wait"}]}});
        let mut stored = manifest.clone();
        crate::server::defaults::on_create(&info("pods"), &mut stored);
        (manifest, stored)
    }

    #[test]
    fn a_pod_update_may_change_images_deadlines_tolerations_gates_and_bind_it() {
        let (manifest, old) = pod_manifest();
        assert_eq!(found("pods", &manifest, Some(&old)), [], "defaults left out change nothing");
        let allowed = [
            json!({"spec": {"containers": [{"name": "web", "image": "nginx:2",
                "resources": {"requests": {"memory": "1024Mi", "cpu": "0.5"}}}]}}),
            json!({"spec": {"initContainers": [{"name": "init", "image": "busybox:2"}]}}),
            json!({"spec": {"activeDeadlineSeconds": 60}}),
            json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 5},
                {"key": "b", "operator": "Exists"}]}}),
            json!({"spec": {"schedulingGates": []}}),
            json!({"spec": {"schedulingGates": [], "nodeName": "node-1"}}),
            json!({"spec": {"hostNetwork": false, "ephemeralContainers": [{"name": "debug"}]}}),
            json!({"spec": {"nodeSelector": {"disk": "ssd"}}}),
            json!({"metadata": {"labels": {"x": "y"}}}),
        ];
        for patch in allowed {
            let new = merged(&old, patch.clone());
            assert_eq!(found("pods", &new, Some(&old)), [], "{patch}");
        }
        let deadline = merged(&old, json!({"spec": {"activeDeadlineSeconds": 60}}));
        let lower = merged(&deadline, json!({"spec": {"activeDeadlineSeconds": 0}}));
        assert_eq!(found("pods", &lower, Some(&deadline)), []);
        let negative = merged(&old, json!({"spec": {"terminationGracePeriodSeconds": -1}}));
        let one = merged(&old, json!({"spec": {"terminationGracePeriodSeconds": 1}}));
        assert_eq!(found("pods", &one, Some(&negative)), []);
    }

    #[test]
    fn a_pod_update_may_not_change_the_rest_of_its_spec() {
        let (_, old) = pod_manifest();
        let refused = |patch: Value| found("pods", &merged(&old, patch), Some(&old));
        let forbidden = |changed: &str| {
            vec![(
                format!("spec: Forbidden: {POD_UPDATE_RULE}\n  changed: {changed}"),
                "FieldValueForbidden".to_owned(),
            )]
        };
        assert_eq!(
            refused(json!({"spec": {"restartPolicy": "Never"}})),
            forbidden("spec.restartPolicy")
        );
        let bound = merged(&old, json!({"spec": {"nodeName": "node-1"}}));
        let moved = merged(&bound, json!({"spec": {"nodeName": "node-2"}}));
        assert_eq!(found("pods", &moved, Some(&bound)), forbidden("spec.nodeName"), "bound once");
        let resized = json!({"spec": {"containers": [{"name": "web", "image": "nginx:2",
            "resources": {"requests": {"memory": "2Gi"}}}]}});
        assert_eq!(refused(resized), forbidden("spec.containers"), "only the image may change");

        let refused_at = |patch: Value| fields("pods", &merged(&old, patch), &old);
        let added = json!({"spec": {"containers": [{"name": "web", "image": "nginx"},
            {"name": "side", "image": "nginx"}], "restartPolicy": "Never"}});
        assert_eq!(refused_at(added), [cause("spec.containers", "FieldValueForbidden")]);
        let deadline = merged(&old, json!({"spec": {"activeDeadlineSeconds": 60}}));
        let raised = merged(&deadline, json!({"spec": {"activeDeadlineSeconds": 61}}));
        assert_eq!(
            found("pods", &raised, Some(&deadline)),
            [(
                "spec.activeDeadlineSeconds: Invalid value: 61: must be less than or equal to previous value".into(),
                "FieldValueInvalid".into()
            )]
        );
        let dropped = merged(&deadline, json!({"spec": {"activeDeadlineSeconds": null}}));
        assert_eq!(
            found("pods", &dropped, Some(&deadline)),
            [(
                "spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value".into(),
                "FieldValueInvalid".into()
            )]
        );
        assert_eq!(
            refused_at(json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}})),
            [cause("spec.tolerations", "FieldValueForbidden")]
        );
        assert_eq!(
            refused(json!({"spec": {"schedulingGates": [{"name": "wait"}, {"name": "more"}]}})),
            [(
                "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'more'".into(),
                "FieldValueForbidden".into()
            )]
        );
        let selected = merged(&old, json!({"spec": {"nodeSelector": {"disk": "ssd"}}}));
        let changed = merged(&selected, json!({"spec": {"nodeSelector": {"disk": "hdd"}}}));
        assert_eq!(
            fields("pods", &changed, &selected),
            [cause("spec.nodeSelector", "FieldValueInvalid")],
            "a gated pod's node selector only grows"
        );
        let ungated = merged(&selected, json!({"spec": {"schedulingGates": null}}));
        let changed = merged(&ungated, json!({"spec": {"nodeSelector": {"disk": "hdd"}}}));
        assert_eq!(found("pods", &changed, Some(&ungated)), forbidden("spec.nodeSelector"));
    }

    fn stateful_set() -> Value {
        let mut set = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}));
        set["spec"]["serviceName"] = json!("web");
        set["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
        crate::server::defaults::normalize(&info("statefulsets"), &mut set);
        set
    }

    #[test]
    fn a_stateful_set_update_may_change_only_what_upstream_lets_it() {
        let old = stateful_set();
        for patch in [
            json!({"spec": {"replicas": 3, "minReadySeconds": 5, "revisionHistoryLimit": 2,
                "ordinals": {"start": 1}, "updateStrategy": {"type": "OnDelete"},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}),
            json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": "1024Mi"}}},
                "status": {"phase": "Pending"}}]}}),
        ] {
            assert_eq!(
                found("statefulsets", &merged(&old, patch.clone()), Some(&old)),
                [],
                "{patch}"
            );
        }
        let forbidden = vec![(
            format!("spec: Forbidden: {STATEFUL_SET_UPDATE_RULE}"),
            "FieldValueForbidden".to_owned(),
        )];
        for patch in [
            json!({"spec": {"serviceName": "other"}}),
            json!({"spec": {"podManagementPolicy": "Parallel"}}),
            json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "2Gi"}}}}]}}),
            json!({"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}}),
        ] {
            let new = merged(&old, patch.clone());
            assert_eq!(found("statefulsets", &new, Some(&old)), forbidden, "{patch}");
        }
    }

    /// A Job as stored: created from its manifest, so defaulted with its uid.
    fn job(spec: Value) -> Value {
        let mut job = json!({"metadata": {"name": "work", "uid": "u1"}, "spec": spec});
        job["spec"]["template"] = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox"}]}});
        crate::server::defaults::on_create(&info("jobs"), &mut job);
        job
    }

    #[test]
    fn a_job_update_keeps_its_template_selector_completions_and_mode() {
        let old = job(json!({"completions": 2}));
        let mut replaced = old.clone();
        replaced["spec"] = json!({"completions": 2, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox"}]}}});
        assert_eq!(found("jobs", &replaced, Some(&old)), [], "defaults left out change nothing");
        let scaled = json!({"spec": {"parallelism": 2, "suspend": true, "backoffLimit": 1,
            "activeDeadlineSeconds": 60}});
        assert_eq!(found("jobs", &merged(&old, scaled), Some(&old)), []);

        let refused = |old: &Value, patch: Value| found("jobs", &merged(old, patch), Some(old));
        let immutable = |field: &str, shown: &str| {
            vec![(
                format!("{field}: Invalid value: {shown}: field is immutable"),
                "FieldValueInvalid".to_owned(),
            )]
        };
        assert_eq!(
            refused(&old, json!({"spec": {"completions": 3}})),
            immutable("spec.completions", "3")
        );
        assert_eq!(
            refused(&old, json!({"spec": {"completionMode": "Indexed"}})),
            immutable("spec.completionMode", "\"Indexed\"")
        );
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "work", "image": "alpine"}]}}}});
        assert_eq!(
            refused(&old, image.clone()),
            immutable("spec.template", "core.PodTemplateSpec{...}")
        );
        let selector = json!({"spec": {"selector": {"matchLabels": {"job": "other"}}}});
        let causes = fields("jobs", &merged(&old, selector), &old);
        assert!(causes.contains(&cause("spec.selector", "FieldValueInvalid")), "{causes:?}");

        let indexed = job(json!({"completions": 2, "parallelism": 2, "completionMode": "Indexed"}));
        let elastic = json!({"spec": {"completions": 4, "parallelism": 4}});
        assert_eq!(refused(&indexed, elastic), []);
        assert_eq!(
            refused(&indexed, json!({"spec": {"completions": 4}})),
            [(
                "spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism".into(),
                "FieldValueInvalid".into()
            )]
        );

        let suspended = job(json!({"suspend": true}));
        let directives = json!({"spec": {"template": {"metadata": {"labels": {"queue": "a"}},
            "spec": {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}}}}}});
        assert_eq!(refused(&suspended, directives.clone()), [], "until it starts");
        assert_eq!(refused(&suspended, image).len(), 1, "only scheduling directives");
        let started = merged(&suspended, json!({"status": {"startTime": "2026-01-01T00:00:00Z"}}));
        assert_eq!(refused(&started, directives).len(), 1, "not once started");
    }

    #[test]
    fn a_claim_s_spec_changes_only_to_bind_it_or_resize_it_once_bound() {
        let pending = json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}});
        let bound = merged(
            &pending,
            json!({"spec": {"volumeName": "pv-1"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
        );
        assert_eq!(found("persistentvolumeclaims", &bound, Some(&pending)), [], "binding it");
        let refused =
            |old: &Value, patch: Value| fields("persistentvolumeclaims", &merged(old, patch), old);
        let spec = vec![cause("spec", "FieldValueForbidden")];
        let grown = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});
        assert_eq!(refused(&pending, grown.clone()), spec, "not before it is bound");
        assert_eq!(refused(&bound, grown.clone()), []);
        assert_eq!(refused(&bound, json!({"spec": {"volumeAttributesClassName": "fast"}})), []);
        assert_eq!(refused(&bound, json!({"spec": {"volumeMode": "Filesystem"}})), [], "a default");
        assert_eq!(refused(&bound, json!({"spec": {"storageClassName": "fast"}})), spec);
        assert_eq!(refused(&pending, json!({"spec": {"accessModes": ["ReadWriteMany"]}})), spec);
        assert_eq!(refused(&bound, json!({"spec": {"volumeName": "pv-2"}})), spec);
        let shrunk = json!({"spec": {"resources": {"requests": {"storage": "512Mi"}}}});
        assert_eq!(
            found("persistentvolumeclaims", &merged(&bound, shrunk), Some(&bound)),
            [(
                "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity".into(),
                "FieldValueForbidden".into()
            )]
        );
        let expanded = merged(&bound, grown);
        let recovered = json!({"spec": {"resources": {"requests": {"storage": "1536Mi"}}}});
        assert_eq!(refused(&expanded, recovered), [], "back towards a capacity never reached");
    }

    #[test]
    fn a_service_keeps_its_primary_cluster_ip_and_ip_family() {
        let old = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.9",
            "clusterIPs": ["10.96.0.9"], "ipFamilies": ["IPv4"], "ports": [{"port": 80}]}});
        let kept = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 81}]}});
        assert_eq!(found("services", &kept, Some(&old)), [], "what is left out is kept");
        let refused = |patch: Value| found("services", &merged(&old, patch), Some(&old));
        assert_eq!(
            refused(json!({"spec": {"ipFamilies": ["IPv6"]}})),
            [(
                "spec.ipFamilies[0]: Invalid value: []core.IPFamily{\"IPv6\"}: may not change once set".into(),
                "FieldValueInvalid".into()
            )]
        );
        assert_eq!(
            refused(json!({"spec": {"clusterIPs": ["10.96.0.10"]}})),
            [(
                "spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.10\"}: may not change once set".into(),
                "FieldValueInvalid".into()
            )]
        );
        let external = json!({"spec": {"type": "ExternalName", "externalName": "example.com",
            "ipFamilies": ["IPv6"]}});
        assert_eq!(refused(external), [], "an ExternalName Service holds none");
        let headless =
            json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"]}});
        let moved = merged(&headless, json!({"spec": {"ipFamilies": ["IPv6"]}}));
        assert_eq!(found("services", &moved, Some(&headless)), [], "headless may change families");
    }
}
