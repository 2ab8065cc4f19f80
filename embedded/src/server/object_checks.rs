//! What the Kubernetes API server validates on every object whatever its kind: label keys and
//! values, annotation keys and their total size; and the size of a ConfigMap's or Secret's data.
//! An object a real cluster would refuse is refused here too, so it does not first fail on the
//! way to production.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::catalog::ResourceInfo;
use crate::selectors::{SelectorError, validate_label_key, validate_label_value};

use super::errors::Cause;

/// Upstream's limit on the total size of an object's annotations (keys and values).
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Upstream's limit on the total size of a ConfigMap's or Secret's data (keys and values).
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The causes for refusing `object` as an `info`; empty when it is fine.
pub fn problems(info: &ResourceInfo, object: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let meta = object.get("metadata");
    if let Some(labels) = meta.and_then(|m| m.get("labels")).and_then(Value::as_object) {
        for (key, value) in labels {
            if let Err(e) = validate_label_key(key) {
                causes.push(invalid("metadata.labels", key, &e));
            }
            match value.as_str() {
                Some(text) => {
                    if let Err(e) = validate_label_value(text) {
                        causes.push(invalid("metadata.labels", text, &e));
                    }
                }
                None => causes.push(not_a_string("metadata.labels", key)),
            }
        }
    }
    if let Some(annotations) = meta.and_then(|m| m.get("annotations")).and_then(Value::as_object) {
        for (key, value) in annotations {
            if let Err(e) = validate_label_key(key) {
                causes.push(invalid("metadata.annotations", key, &e));
            }
            if !value.is_string() {
                causes.push(not_a_string("metadata.annotations", key));
            }
        }
        if size(annotations, |text| text.len()) > MAX_ANNOTATIONS_BYTES {
            causes.push(too_long("metadata.annotations", MAX_ANNOTATIONS_BYTES));
        }
    }
    if info.builtin && info.group.is_empty() {
        let data = |field: &str| object.get(field).and_then(Value::as_object);
        let total = match info.resource.as_str() {
            "configmaps" => {
                data("data").map_or(0, |d| size(d, str::len))
                    + data("binaryData").map_or(0, |d| size(d, decoded_len))
            }
            "secrets" => data("data").map_or(0, |d| size(d, decoded_len)),
            _ => 0,
        };
        if total > MAX_DATA_BYTES {
            causes.push(too_long("data", MAX_DATA_BYTES));
        }
    }
    causes
}

/// The bytes of a map's keys and string values, each value measured by `len`.
fn size(map: &Map<String, Value>, len: impl Fn(&str) -> usize) -> usize {
    map.iter().map(|(key, value)| key.len() + value.as_str().map_or(0, &len)).sum()
}

/// The length of base64 text once decoded (its own length when it is not base64).
fn decoded_len(text: &str) -> usize {
    base64::engine::general_purpose::STANDARD.decode(text).map_or(text.len(), |bytes| bytes.len())
}

fn invalid(field: &str, value: &str, error: &SelectorError) -> Cause {
    let reason = match error {
        SelectorError::InvalidKey { reason, .. } | SelectorError::InvalidValue { reason, .. } => {
            reason.clone()
        }
        other => other.to_string(),
    };
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value:?}: {reason}"),
        field: field.into(),
    }
}

fn not_a_string(field: &str, key: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: the value of {key:?} must be a string"),
        field: field.into(),
    }
}

fn too_long(field: &str, limit: usize) -> Cause {
    Cause {
        reason: "FieldValueTooLong".into(),
        message: format!("Too long: must have at most {limit} bytes"),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;
    use serde_json::json;

    fn info(resource: &str) -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.resource == resource).unwrap()
    }

    fn messages(resource: &str, object: Value) -> Vec<String> {
        problems(&info(resource), &object)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn labels_and_annotation_keys_are_qualified_names() {
        let object = json!({"metadata": {"name": "a",
            "labels": {"app": "web", "example.com/tier": "", "Bad_Key!": "x", "ok": "a b"},
            "annotations": {"note": "any text at all", "/nope": "x"}}});
        let found = messages("configmaps", object);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].starts_with("metadata.labels: Invalid value: \"Bad_Key!\": name part"));
        assert!(found[1].starts_with("metadata.labels: Invalid value: \"a b\": must consist"));
        assert!(found[2].starts_with("metadata.annotations: Invalid value: \"/nope\": prefix"));
    }

    #[test]
    fn annotations_and_data_have_upstream_size_limits() {
        let big = "x".repeat(MAX_ANNOTATIONS_BYTES);
        let found = messages("configmaps", json!({"metadata": {"annotations": {"a": big}}}));
        assert_eq!(found, ["metadata.annotations: Too long: must have at most 262144 bytes"]);

        let data = json!({"data": {"a": "x".repeat(MAX_DATA_BYTES - 1)}});
        assert!(messages("configmaps", data).is_empty(), "one key byte and the value fit");
        let data = json!({"data": {"ab": "x".repeat(MAX_DATA_BYTES - 1)}});
        assert_eq!(
            messages("configmaps", data),
            ["data: Too long: must have at most 1048576 bytes"]
        );

        // A Secret's data counts decoded: 1 MiB of base64 is 768 KiB.
        let encoded = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 786_432]);
        assert!(messages("secrets", json!({"data": {"k": encoded}})).is_empty());
        let data = json!({"data": {"a": "x".repeat(2 * MAX_DATA_BYTES)}});
        assert!(messages("pods", data).is_empty(), "only ConfigMaps and Secrets have the limit");
    }
}
