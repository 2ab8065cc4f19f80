//! The pod `ephemeralcontainers` subresource, which `kubectl debug <pod>` patches to add a
//! debugging container to a running pod. As upstream, writes through it change nothing but
//! `spec.ephemeralContainers`, and only by adding containers: one added cannot be changed or
//! removed, and writes to the pod itself keep the stored ones. Pure: no I/O.

use serde_json::{Value, json};

use crate::validation::{Bad, FieldError, FieldErrors, duplicate, forbidden, not_found, required};

use super::errors::{ApiError, ApiResult};

/// The subresource's URL segment.
pub(crate) const SUBRESOURCE: &str = "ephemeralcontainers";

/// Fields an ephemeral container may not set: it gets no ports, probes, lifecycle hooks,
/// resources or restart policy of its own.
const FORBIDDEN: [&str; 8] = [
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resources",
    "resizePolicy",
    "restartPolicy",
];

/// The pod `old` with the ephemeral containers of `new`, or why they are refused.
pub(crate) fn merge(old: &Value, new: &Value) -> ApiResult<Value> {
    let empty = Vec::new();
    let before = ephemeral_containers(old).unwrap_or(&empty);
    let after = ephemeral_containers(new).unwrap_or(&empty);
    let mut causes: Vec<FieldError> = Vec::new();
    for (i, kept) in before.iter().enumerate() {
        let name = kept["name"].as_str().unwrap_or_default();
        let field = format!("spec.ephemeralContainers[{i}]");
        match after.iter().find(|c| c["name"] == kept["name"]) {
            None => causes.push(forbidden(
                &field,
                &format!("existing ephemeral containers \"{name}\" may not be removed"),
            )),
            Some(now) if now != kept => causes.push(forbidden(
                &field,
                &format!("existing ephemeral containers \"{name}\" may not be changed"),
            )),
            Some(_) => {}
        }
    }
    let spec = &old["spec"];
    let names =
        |list: &str| spec[list].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str());
    let mut taken: Vec<&str> = names("containers").chain(names("initContainers")).collect();
    let targets = taken.clone();
    let mut added = Vec::new();
    for (i, container) in after.iter().enumerate() {
        let field = |name: &str| format!("spec.ephemeralContainers[{i}].{name}");
        let name = container["name"].as_str().unwrap_or_default();
        if before.iter().any(|c| c["name"] == container["name"]) {
            taken.push(name);
            continue;
        }
        if name.is_empty() {
            causes.push(required(&field("name"), ""));
        } else if taken.contains(&name) {
            causes.push(duplicate(&field("name"), Bad::Str(name)));
        }
        taken.push(name);
        if container["image"].as_str().is_none_or(str::is_empty) {
            causes.push(required(&field("image"), ""));
        }
        for forbidden_field in FORBIDDEN {
            if container.get(forbidden_field).is_some_and(|v| !is_empty(v)) {
                let message = "cannot be set for an Ephemeral Container";
                causes.push(forbidden(&field(forbidden_field), message));
            }
        }
        if let Some(target) = container["targetContainerName"].as_str()
            && !targets.contains(&target)
        {
            causes.push(not_found(&field("targetContainerName"), Bad::Str(target)));
        }
        let mut container = container.clone();
        if let Some(map) = container.as_object_mut() {
            super::defaults::container(map);
        }
        added.push(container);
    }
    if !causes.is_empty() {
        let name = old.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        return Err(ApiError::from_field_errors("", "Pod", name, &FieldErrors(causes)));
    }
    let mut merged = old.clone();
    let all: Vec<Value> = before.iter().cloned().chain(added).collect();
    if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut)
        && !all.is_empty()
    {
        spec.insert("ephemeralContainers".into(), json!(all));
    }
    Ok(merged)
}

/// Keeps the stored ephemeral containers in a write to the pod itself, which cannot change
/// them.
pub(crate) fn keep(old: &Value, new: &mut Value) {
    let stored = old.pointer("/spec/ephemeralContainers").cloned();
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    match stored {
        Some(stored) => spec.insert("ephemeralContainers".into(), stored),
        None => spec.remove("ephemeralContainers"),
    };
}

fn ephemeral_containers(pod: &Value) -> Option<&Vec<Value>> {
    pod.pointer("/spec/ephemeralContainers").and_then(Value::as_array)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().all(is_empty),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ephemeral: Value) -> Value {
        json!({
            "metadata": { "name": "web" },
            "spec": {
                "containers": [{ "name": "main", "image": "nginx" }],
                "ephemeralContainers": ephemeral,
            },
        })
    }

    #[test]
    fn a_container_is_added_with_upstream_defaults_and_nothing_else_changes() {
        let old = pod(json!([]));
        let mut new = pod(json!([{ "name": "debugger", "image": "busybox", "stdin": true }]));
        new["spec"]["containers"][0]["image"] = json!("changed");
        new["metadata"]["labels"] = json!({ "a": "b" });
        let merged = merge(&old, &new).unwrap();
        assert_eq!(merged["spec"]["containers"], old["spec"]["containers"]);
        assert!(merged["metadata"].get("labels").is_none());
        let added = &merged["spec"]["ephemeralContainers"][0];
        assert_eq!((&added["name"], &added["stdin"]), (&json!("debugger"), &json!(true)));
        assert_eq!(added["imagePullPolicy"], "Always");
        assert_eq!(added["terminationMessagePolicy"], "File");
    }

    #[test]
    fn existing_ones_stay_as_they_are() {
        let old =
            merge(&pod(json!([])), &pod(json!([{ "name": "d1", "image": "busybox" }]))).unwrap();
        let removed = merge(&old, &pod(json!([]))).unwrap_err();
        assert!(removed.message.contains("\"d1\" may not be removed"), "{}", removed.message);
        let mut changed = old.clone();
        changed["spec"]["ephemeralContainers"][0]["image"] = json!("alpine");
        let changed = merge(&old, &changed).unwrap_err();
        assert!(changed.message.contains("may not be changed"), "{}", changed.message);
        // kubectl sends the stored ones back with the new one.
        let mut more = old.clone();
        more["spec"]["ephemeralContainers"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "name": "d2", "image": "busybox" }));
        let merged = merge(&old, &more).unwrap();
        assert_eq!(merged["spec"]["ephemeralContainers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn what_upstream_refuses_is_refused_field_by_field() {
        let new = pod(json!([
            { "name": "main", "image": "busybox" },
            { "name": "d", "ports": [{ "containerPort": 80 }], "targetContainerName": "nope" },
        ]));
        let error = merge(&pod(json!([])), &new).unwrap_err();
        let causes: Vec<(String, String)> =
            error.details.unwrap().causes.into_iter().map(|c| (c.field, c.reason)).collect();
        assert_eq!(
            causes,
            [
                ("spec.ephemeralContainers[0].name".into(), "FieldValueDuplicate".into()),
                ("spec.ephemeralContainers[1].image".into(), "FieldValueRequired".into()),
                ("spec.ephemeralContainers[1].ports".into(), "FieldValueForbidden".into()),
                (
                    "spec.ephemeralContainers[1].targetContainerName".into(),
                    "FieldValueNotFound".into()
                ),
            ]
        );
        // Empty resources, as kubectl debug sends them, are no resources.
        let empty = pod(json!([{ "name": "d", "image": "busybox", "resources": {} }]));
        assert!(merge(&pod(json!([])), &empty).is_ok());
    }

    #[test]
    fn a_write_to_the_pod_keeps_the_stored_ones() {
        let old = pod(json!([{ "name": "d1", "image": "busybox" }]));
        let mut new = pod(json!([]));
        keep(&old, &mut new);
        assert_eq!(new["spec"]["ephemeralContainers"], old["spec"]["ephemeralContainers"]);
        let mut without = pod(json!([{ "name": "sneaked", "image": "busybox" }]));
        keep(&json!({ "spec": {} }), &mut without);
        assert!(without["spec"].get("ephemeralContainers").is_none());
    }
}
