//! Pruning of unknown fields, as the API server does when it decodes a custom
//! resource (`apiextensions-apiserver/pkg/apiserver/schema/pruning`), followed by
//! the `ObjectMeta` coercion that drops unknown `metadata` fields.
//!
//! Pruned paths use the API server's unknown-field notation: `.` before every
//! object key (also map keys) and `[i]` for list items, e.g. `spec.items[0].bar`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::schema::{self, FieldPath, additional_schema, child, flag, has_additional};
use super::tree::{Additional, SchemaTree};

/// What pruning reads of a schema node. Pruned by a built-in kind's schema as JSON, or by a
/// CRD's schema compiled into a [`SchemaTree`] (its objects are pruned on every write).
pub(crate) trait Structure: Sized {
    /// The node's `properties`.
    type Properties;
    /// `properties`, if any.
    fn properties(&self) -> Option<&Self::Properties>;
    /// The schema of property `name`.
    fn property<'a>(properties: &'a Self::Properties, name: &str) -> Option<&'a Self>;
    /// `x-kubernetes-preserve-unknown-fields: true`.
    fn preserve_unknown(&self) -> bool;
    /// `x-kubernetes-embedded-resource: true`.
    fn embedded(&self) -> bool;
    /// `additionalProperties`, when it is a schema.
    fn additional(&self) -> Option<&Self>;
    /// Whether `additionalProperties` makes every key known (`true` or a schema).
    fn any_additional(&self) -> bool;
    /// `items`, when it is a schema.
    fn items(&self) -> Option<&Self>;
}

impl Structure for Value {
    type Properties = Map<String, Value>;
    fn properties(&self) -> Option<&Self::Properties> {
        schema::properties(self)
    }
    fn property<'a>(properties: &'a Self::Properties, name: &str) -> Option<&'a Self> {
        properties.get(name)
    }
    fn preserve_unknown(&self) -> bool {
        flag(self, "x-kubernetes-preserve-unknown-fields")
    }
    fn embedded(&self) -> bool {
        flag(self, "x-kubernetes-embedded-resource")
    }
    fn additional(&self) -> Option<&Self> {
        additional_schema(self)
    }
    fn any_additional(&self) -> bool {
        has_additional(self)
    }
    fn items(&self) -> Option<&Self> {
        schema::items(self)
    }
}

impl Structure for SchemaTree {
    type Properties = BTreeMap<String, SchemaTree>;
    fn properties(&self) -> Option<&Self::Properties> {
        Some(&self.properties)
    }
    fn property<'a>(properties: &'a Self::Properties, name: &str) -> Option<&'a Self> {
        properties.get(name)
    }
    fn preserve_unknown(&self) -> bool {
        self.preserve_unknown
    }
    fn embedded(&self) -> bool {
        self.embedded
    }
    fn additional(&self) -> Option<&Self> {
        self.additional_schema()
    }
    fn any_additional(&self) -> bool {
        !matches!(self.additional, Additional::Unknown)
    }
    fn items(&self) -> Option<&Self> {
        self.items.as_deref()
    }
}

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
pub(crate) fn prune<S: Structure>(object: &mut Value, schema: &S) -> Vec<String> {
    let mut pruned = Vec::new();
    // The root behaves like an embedded resource: apiVersion, kind and metadata stay.
    prune_node(object, Some(schema), &mut FieldPath::new(""), true, &mut pruned);
    pruned
}

fn prune_node<S: Structure>(
    value: &mut Value,
    schema: Option<&S>,
    path: &mut FieldPath,
    resource_root: bool,
    pruned: &mut Vec<String>,
) {
    let embedded = resource_root || schema.is_some_and(S::embedded);
    if let Some(s) = schema
        && s.preserve_unknown()
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
            let item_schema = schema.and_then(S::items);
            for (i, v) in list.iter_mut().enumerate() {
                path.index(i, |path| prune_node(v, item_schema, path, false, pruned));
            }
        }
        _ => {}
    }
}

/// Walk of an `x-kubernetes-preserve-unknown-fields` node: unknown fields stay,
/// declared ones are pruned by their own schema.
fn skip_prune<S: Structure>(
    value: &mut Value,
    schema: &S,
    path: &mut FieldPath,
    embedded: bool,
    pruned: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => prune_fields(map, schema, path, embedded, Unknown::Keep, pruned),
        Value::Array(list) => {
            if let Some(item_schema) = schema.items() {
                let embedded = item_schema.embedded();
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
fn prune_fields<S: Structure>(
    map: &mut Map<String, Value>,
    schema: &S,
    path: &mut FieldPath,
    embedded: bool,
    unknown: Unknown,
    pruned: &mut Vec<String>,
) {
    let props = schema.properties();
    let mut undeclared = Vec::new();
    for (k, v) in map.iter_mut() {
        if embedded && TYPE_AND_OBJECT_META.contains(&k.as_str()) {
            if k == "metadata" {
                path.field(k, |path| coerce_object_meta(v, path.as_str(), pruned));
            }
        } else if let Some(prop) = props.and_then(|p| S::property(p, k)) {
            path.field(k, |path| prune_node(v, Some(prop), path, false, pruned));
        } else if let Some(additional) = schema.additional() {
            path.field(k, |path| prune_node(v, Some(additional), path, false, pruned));
        } else if unknown == Unknown::Prune && !schema.any_additional() {
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
        let mut compiled = obj.clone();
        let pruned = prune(&mut obj, &schema());
        assert_eq!(prune(&mut compiled, &SchemaTree::new(&schema()).unwrap()), pruned);
        assert_eq!(compiled, obj, "the compiled schema prunes as the schema does");
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
        let mut compiled = obj.clone();
        let pruned = prune(&mut obj, &schema());
        assert_eq!(prune(&mut compiled, &SchemaTree::new(&schema()).unwrap()), pruned);
        assert_eq!(compiled, obj);
        assert_eq!(pruned, vec!["spec.name.a"]);
        assert_eq!(obj, json!({"spec": {"name": {}}}));
    }
}
