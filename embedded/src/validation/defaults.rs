//! Defaulting, as the API server does after pruning
//! (`apiextensions-apiserver/pkg/apiserver/schema/defaulting`): a missing field, or a
//! `null` in a field that is not `nullable`, gets the schema's `default`; a `null`
//! in a non-nullable field without a default is removed.
//!
//! Hand-written rather than `kube_cel::apply_defaults` because that function
//! neither replaces non-nullable `null`s nor removes them.

use serde_json::Value;

use super::schema::{additional_schema, flag, items, properties};

fn default_of(schema: &Value) -> Option<&Value> {
    schema.get("default")
}

fn non_nullable(schema: &Value) -> bool {
    !flag(schema, "nullable")
}

/// Applies defaults in place, walking `properties`, `items` and `additionalProperties`.
pub(crate) fn apply_defaults(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            let props = properties(schema);
            if let Some(props) = props {
                for (k, prop) in props {
                    match map.get(k) {
                        None => {
                            if let Some(d) = default_of(prop) {
                                map.insert(k.clone(), d.clone());
                            }
                        }
                        Some(Value::Null) if non_nullable(prop) => match default_of(prop) {
                            Some(d) => {
                                map.insert(k.clone(), d.clone());
                            }
                            None => {
                                map.remove(k);
                            }
                        },
                        Some(_) => {}
                    }
                }
            }
            let additional = additional_schema(schema);
            let mut null_values = Vec::new();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = props.and_then(|p| p.get(k)) {
                    apply_defaults(v, prop);
                } else if let Some(additional) = additional {
                    if v.is_null() && non_nullable(additional) {
                        match default_of(additional) {
                            Some(d) => *v = d.clone(),
                            None => null_values.push(k.clone()),
                        }
                    }
                    apply_defaults(v, additional);
                }
            }
            for k in null_values {
                map.remove(&k);
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for v in list.iter_mut() {
                    if v.is_null()
                        && non_nullable(item_schema)
                        && let Some(d) = default_of(item_schema)
                    {
                        *v = d.clone();
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
