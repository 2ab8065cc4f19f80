//! Defaulting, as the API server does after pruning
//! (`apiextensions-apiserver/pkg/apiserver/schema/defaulting`): a missing field, or a
//! `null` in a field that is not `nullable`, gets the schema's `default`; a `null`
//! in a non-nullable field without a default is removed.
//!
//! Hand-written rather than `kube_cel::apply_defaults` because that function
//! neither replaces non-nullable `null`s nor removes them.

use serde_json::Value;

use super::tree::SchemaTree;

/// Applies defaults in place, walking `properties`, `items` and `additionalProperties`.
pub(crate) fn apply_defaults(value: &mut Value, schema: &SchemaTree) {
    match value {
        Value::Object(map) => {
            if schema.defaults_properties {
                for (k, prop) in &schema.properties {
                    if let Some(default) = &prop.default
                        && !map.contains_key(k)
                    {
                        map.insert(k.clone(), default.clone());
                    }
                }
            }
            let additional = schema.additional_schema();
            let mut null_values = Vec::new();
            for (k, v) in map.iter_mut() {
                let Some(field) = schema.properties.get(k).or(additional) else { continue };
                if v.is_null() && !field.nullable {
                    match &field.default {
                        Some(default) => *v = default.clone(),
                        None => null_values.push(k.clone()),
                    }
                }
                apply_defaults(v, field);
            }
            for k in null_values {
                map.remove(&k);
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = &schema.items {
                for v in list.iter_mut() {
                    if v.is_null()
                        && !item_schema.nullable
                        && let Some(default) = &item_schema.default
                    {
                        *v = default.clone();
                    }
                    apply_defaults(v, item_schema);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_missing_and_null_fields_recursively() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "mode": {"type": "string", "default": "Fast"},
                        "note": {"type": "string"},
                        "maybe": {"type": "string", "nullable": true, "default": "x"},
                        "ports": {"type": "array", "items": {
                            "type": "object",
                            "properties": {"protocol": {"type": "string", "default": "TCP"}}
                        }},
                        "env": {"type": "object", "additionalProperties": {"type": "string", "default": "e"}}
                    }
                }
            }
        });
        let schema = SchemaTree::new(&schema).unwrap();
        let mut obj = json!({"kind": "K"});
        apply_defaults(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"kind": "K", "spec": {"replicas": 1, "mode": "Fast", "maybe": "x"}})
        );

        let mut obj = json!({"spec": {
            "replicas": 3, "mode": null, "note": null, "maybe": null,
            "ports": [{}, {"protocol": "UDP"}], "env": {"a": null, "b": "B"}
        }});
        apply_defaults(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"spec": {
                "replicas": 3, "mode": "Fast", "maybe": null,
                "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}], "env": {"a": "e", "b": "B"}
            }})
        );
    }
}
