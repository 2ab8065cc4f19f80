//! Read helpers over an OpenAPI v3 schema node held as JSON, and path builders.

use serde_json::{Map, Value};

/// The node's `type`, if it names one.
pub(crate) fn type_of(schema: &Value) -> Option<&str> {
    schema.get("type").and_then(Value::as_str).filter(|t| !t.is_empty())
}

/// Whether a boolean extension or keyword is `true` on the node.
pub(crate) fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

/// The node's `properties`, if any.
pub(crate) fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The node's `items` schema (the single-schema form only).
pub(crate) fn items(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|i| i.is_object())
}

/// The node's `additionalProperties` when it is a schema.
pub(crate) fn additional_schema(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// Whether `additionalProperties` makes every key of an object known (`true` or a schema).
pub(crate) fn has_additional(schema: &Value) -> bool {
    matches!(schema.get("additionalProperties"), Some(Value::Object(_)) | Some(Value::Bool(true)))
}

/// The branches of `allOf`/`anyOf`/`oneOf`.
pub(crate) fn branches<'a>(schema: &'a Value, key: &str) -> &'a [Value] {
    schema.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// `x-kubernetes-list-map-keys`.
pub(crate) fn list_map_keys(schema: &Value) -> Vec<String> {
    schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// `x-kubernetes-list-type`.
pub(crate) fn list_type(schema: &Value) -> Option<&str> {
    schema.get("x-kubernetes-list-type").and_then(Value::as_str)
}

/// The JSON type name go-openapi reports for a value (`"integer"` only for
/// numbers decoded as integers).
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `parent.name` (or `name` at the root). Paths are built for every field of every object
/// validated: concatenated with one allocation rather than `format!`ted.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_string() } else { [parent, ".", name].concat() }
}

/// A field path built in place while a walk descends: each step appends its segment for the
/// walk below it and takes it off again after, so that walking a valid object allocates no
/// path (a walk builds one for every field it visits, and most are never reported).
pub(crate) struct FieldPath(String);

impl FieldPath {
    /// A path starting at `root` (`""` for the object itself).
    pub(crate) fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path so far.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Runs `within` at `path.name` (`name` at the root), as [`child`] spells it.
    pub(crate) fn field<R>(&mut self, name: &str, within: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.0.len();
        if len > 0 {
            self.0.push('.');
        }
        self.0.push_str(name);
        self.within(len, within)
    }

    /// Runs `within` at `path[i]`, as [`index`] spells it.
    pub(crate) fn index<R>(&mut self, i: usize, within: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.0.len();
        self.0.push('[');
        // By itoa rather than `write!`: formatting machinery for every list item walked cost
        // more than the walks' own work on it.
        self.0.push_str(itoa::Buffer::new().format(i));
        self.0.push(']');
        self.within(len, within)
    }

    /// Runs `within` at `path[key]`, the API server's notation for a map value.
    pub(crate) fn key<R>(&mut self, key: &str, within: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.0.len();
        self.0.push('[');
        self.0.push_str(key);
        self.0.push(']');
        self.within(len, within)
    }

    fn within<R>(&mut self, len: usize, within: impl FnOnce(&mut Self) -> R) -> R {
        let result = within(self);
        self.0.truncate(len);
        result
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// The path as go-openapi names it in message details (`spec.x in body ...`).
pub(crate) fn body_name(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

/// A canonical JSON string (object keys sorted) used to compare values for equality.
pub(crate) fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_and_equality() {
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(index(&child("spec", "items"), 2), "spec.items[2]");
        let mut path = FieldPath::new("");
        let inner = path.field("spec", |p| {
            p.field("items", |p| p.index(2, |p| p.key("a", |p| p.as_str().to_owned())))
        });
        assert_eq!(inner, "spec.items[2][a]");
        assert_eq!(path.as_str(), "", "each step takes its segment off again");
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_eq(&json!("1"), &json!(1)));
        assert_eq!(
            canonical(&json!({"b": 1, "a": {"d": 1, "c": 2}})),
            r#"{"a":{"c":2,"d":1},"b":1}"#
        );
        assert_eq!(json_type(&json!(1.5)), "number");
        assert_eq!(json_type(&json!(-3)), "integer");
    }
}
