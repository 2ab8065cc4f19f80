//! Pruning of unknown fields, as the API server does when it decodes a custom
//! resource (`apiextensions-apiserver/pkg/apiserver/schema/pruning`), followed by
//! the `ObjectMeta` coercion that drops unknown `metadata` fields.
//!
//! Pruned paths use the API server's unknown-field notation: `.` before every
//! object key (also map keys) and `[i]` for list items, e.g. `spec.items[0].bar`.

use serde_json::Value;

use super::schema::{FieldPath, additional_schema, child, flag, has_additional, items, properties};

/// Fields every resource root and every `x-kubernetes-embedded-resource` keeps.
const TYPE_AND_OBJECT_META: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `metav1.ObjectMeta`; other keys under `metadata` are dropped.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Removes every field of `object` the schema does not declare and returns the
/// removed paths in walk order.
pub(crate) fn prune(object: &mut Value, schema: &Value) -> Vec<String> {
    let mut pruned = Vec::new();
    // The root behaves like an embedded resource: apiVersion, kind and metadata stay.
    prune_node(object, Some(schema), &mut FieldPath::new(""), true, &mut pruned);
    pruned
}

fn is_embedded(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

fn prune_node(
    value: &mut Value,
    schema: Option<&Value>,
    path: &mut FieldPath,
    resource_root: bool,
    pruned: &mut Vec<String>,
) {
    let embedded = resource_root || schema.is_some_and(is_embedded);
    if let Some(s) = schema
        && flag(s, "x-kubernetes-preserve-unknown-fields")
    {
        skip_prune(value, s, path, embedded, pruned);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = schema else {
                pruned.extend(map.keys().map(|k| child(path.as_str(), k)));
                map.clear();
                return;
            };
            prune_fields(map, s, path, embedded, Unknown::Prune, pruned);
        }
        Value::Array(list) => {
            let item_schema = schema.and_then(items);
            for (i, v) in list.iter_mut().enumerate() {
                path.index(i, |path| prune_node(v, item_schema, path, false, pruned));
            }
        }
        _ => {}
    }
}

/// Walk of an `x-kubernetes-preserve-unknown-fields` node: unknown fields stay,
/// declared ones are pruned by their own schema.
fn skip_prune(
    value: &mut Value,
    schema: &Value,
    path: &mut FieldPath,
    embedded: bool,
    pruned: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => prune_fields(map, schema, path, embedded, Unknown::Keep, pruned),
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                let embedded = is_embedded(item_schema);
                for (i, v) in list.iter_mut().enumerate() {
                    path.index(i, |path| skip_prune(v, item_schema, path, embedded, pruned));
                }
            }
        }
        _ => {}
    }
}

/// What [`prune_fields`] does with a key the schema does not declare.
#[derive(Clone, Copy, PartialEq)]
enum Unknown {
    /// Remove it and record its path.
    Prune,
    /// Leave it (`x-kubernetes-preserve-unknown-fields`).
    Keep,
}

/// Walks the fields of an object: declared fields and map values are pruned by their own
/// schema, `apiVersion`/`kind`/`metadata` of an embedded resource are kept (metadata coerced),
/// and undeclared fields are handled as `unknown` says.
fn prune_fields(
    map: &mut serde_json::Map<String, Value>,
    schema: &Value,
    path: &mut FieldPath,
    embedded: bool,
    unknown: Unknown,
    pruned: &mut Vec<String>,
) {
    let props = properties(schema);
    let mut undeclared = Vec::new();
    for (k, v) in map.iter_mut() {
        if embedded && TYPE_AND_OBJECT_META.contains(&k.as_str()) {
            if k == "metadata" {
                path.field(k, |path| coerce_object_meta(v, path.as_str(), pruned));
            }
        } else if let Some(prop) = props.and_then(|p| p.get(k)) {
            path.field(k, |path| prune_node(v, Some(prop), path, false, pruned));
        } else if let Some(additional) = additional_schema(schema) {
            path.field(k, |path| prune_node(v, Some(additional), path, false, pruned));
        } else if unknown == Unknown::Prune && !has_additional(schema) {
            undeclared.push(k.clone());
            pruned.push(child(path.as_str(), k));
        }
        // `additionalProperties: true`, or preserved: the value is kept as it is.
    }
    for k in undeclared {
        map.remove(&k);
    }
}

/// Drops the keys of an object-valued `metadata` that `ObjectMeta` does not have.
fn coerce_object_meta(metadata: &mut Value, path: &str, pruned: &mut Vec<String>) {
    if let Value::Object(map) = metadata {
        let unknown: Vec<String> =
            map.keys().filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str())).cloned().collect();
        for k in unknown {
            map.remove(&k);
            pruned.push(child(path, &k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "items": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"id": {"type": "integer"}}}
                        },
                        "labels": {"type": "object", "additionalProperties": {
                            "type": "object", "properties": {"v": {"type": "string"}}
                        }},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                 "properties": {"strict": {"type": "object"}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "properties": {"spec": {"type": "object"}}}
                    }
                }
            }
        })
    }

    #[test]
    fn unknown_fields_are_removed_and_reported() {
        let mut obj = json!({
            "apiVersion": "a/v1", "kind": "K",
            "metadata": {"name": "n", "labels": {"x": "y"}, "bogus": 1},
            "extra": true,
            "spec": {
                "name": "n", "foo": 1,
                "items": [{"id": 1}, {"id": 2, "bar": 3}],
                "labels": {"a": {"v": "1", "w": 2}},
                "free": {"anything": {"deep": 1}, "strict": {"gone": 1}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "nope": 1},
                             "spec": {}, "other": 1}
            }
        });
        let pruned = prune(&mut obj, &schema());
        assert_eq!(
            pruned,
            vec![
                "extra",
                "metadata.bogus",
                "spec.foo",
                "spec.free.strict.gone",
                "spec.items[1].bar",
                "spec.labels.a.w",
                "spec.template.metadata.nope",
                "spec.template.other",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "a/v1", "kind": "K",
                "metadata": {"name": "n", "labels": {"x": "y"}},
                "spec": {
                    "name": "n",
                    "items": [{"id": 1}, {"id": 2}],
                    "labels": {"a": {"v": "1"}},
                    "free": {"anything": {"deep": 1}, "strict": {}},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
                }
            })
        );
    }

    #[test]
    fn object_value_under_scalar_schema_loses_its_keys() {
        let mut obj = json!({"spec": {"name": {"a": 1}}});
        let pruned = prune(&mut obj, &schema());
        assert_eq!(pruned, vec!["spec.name.a"]);
        assert_eq!(obj, json!({"spec": {"name": {}}}));
    }
}
