//! The type check decoding does upstream: the API server decodes a built-in object into its Go
//! type, and a value of the wrong JSON type (a string for an `int32`, a number for a string, a
//! fraction or an out-of-range number for an integer, text that is not base64 for bytes) fails
//! the request before any validation runs. `null` decodes anywhere, as the zero value. Without
//! this check such an object would be stored, and every typed client that later reads it (the
//! project's own controllers among them) would fail to decode it.

use base64::Engine as _;
use serde_json::Value;

use super::schema::{FieldPath, additional_schema, flag, items, properties, type_of};

/// A value decoding would refuse: where it is, what it is and what the type wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeMismatch {
    /// The field, as `spec.template.spec.containers[0].ports[0].containerPort`.
    pub(crate) path: String,
    /// The value as Go's decoder names it: `string`, `number 1.5`, `bool`, `array`, `object`.
    pub(crate) found: String,
    /// The type it should have: `int32`, `int64`, `float64`, `string`, `bool`, `[]byte`, ...
    pub(crate) expected: &'static str,
}

impl std::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot unmarshal {} into field {} of type {}",
            self.found, self.path, self.expected
        )
    }
}

/// The first value of `object` (walked in key order) that does not decode into the type
/// `schema` describes (a built-in kind's schema, after pruning: unknown fields are gone).
pub(crate) fn type_mismatch(object: &Value, schema: &Value) -> Option<TypeMismatch> {
    check(object, schema, &mut FieldPath::new(""))
}

/// The walk of [`type_mismatch`]: `path` is where `value` is; each field's path is built in
/// place, as it is on every built-in write and most have no mismatch to report.
fn check(value: &Value, schema: &Value, path: &mut FieldPath) -> Option<TypeMismatch> {
    let mismatch = |expected, path: &FieldPath| {
        Some(TypeMismatch { path: path.as_str().to_owned(), found: go_name(value), expected })
    };
    if value.is_null() {
        return None;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        // Both IntOrString and Quantity take this form; a Quantity also takes fractions.
        return match value {
            Value::Number(_) | Value::String(_) => None,
            _ => mismatch("int-or-string", path),
        };
    }
    match (type_of(schema), value) {
        (Some("integer"), Value::Number(n)) => {
            let expected = integer_type(schema);
            let fits = n.as_i64().is_some_and(|i| expected == "int64" || i32::try_from(i).is_ok());
            if fits { None } else { mismatch(expected, path) }
        }
        (Some("integer"), _) => mismatch(integer_type(schema), path),
        (Some("number"), Value::Number(_)) => None,
        (Some("number"), _) => mismatch("float64", path),
        (Some("boolean"), Value::Bool(_)) => None,
        (Some("boolean"), _) => mismatch("bool", path),
        (Some("string"), Value::String(text)) => {
            let bytes = schema.get("format").and_then(Value::as_str) == Some("byte");
            // Go's decoder skips line breaks in base64 text.
            let decodes = || {
                let text: String = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
                base64::engine::general_purpose::STANDARD.decode(text).is_ok()
            };
            if bytes && !decodes() {
                return Some(TypeMismatch {
                    path: path.as_str().to_owned(),
                    found: "text that is not base64".into(),
                    expected: "[]byte",
                });
            }
            None
        }
        (Some("string"), _) => mismatch(string_type(schema), path),
        (Some("array"), Value::Array(list)) => {
            let item_schema = items(schema)?;
            list.iter()
                .enumerate()
                .find_map(|(i, item)| path.index(i, |p| check(item, item_schema, p)))
        }
        (Some("array"), _) => mismatch("array", path),
        (Some("object"), Value::Object(fields)) => {
            let declared = properties(schema);
            let additional = additional_schema(schema);
            fields.iter().find_map(|(name, field)| {
                match (declared.and_then(|d| d.get(name)), additional) {
                    (Some(field_schema), _) => path.field(name, |p| check(field, field_schema, p)),
                    (None, Some(value_schema)) => path.key(name, |p| check(field, value_schema, p)),
                    (None, None) => None,
                }
            })
        }
        (Some("object"), _) => mismatch("object", path),
        // No type (or one this check does not know): anything decodes.
        _ => None,
    }
}

/// How Go's decoder names a JSON value in its errors.
fn go_name(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn integer_type(schema: &Value) -> &'static str {
    match schema.get("format").and_then(Value::as_str) {
        Some("int32") => "int32",
        _ => "int64",
    }
}

fn string_type(schema: &Value) -> &'static str {
    match schema.get("format").and_then(Value::as_str) {
        Some("byte") => "[]byte",
        Some("date-time") => "time",
        _ => "string",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "deadline": {"type": "integer", "format": "int64"},
                "ratio": {"type": "number"},
                "paused": {"type": "boolean"},
                "name": {"type": "string"},
                "surge": {"x-kubernetes-int-or-string": true},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "port": {"type": "integer", "format": "int32"}}}},
                "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }})
    }

    fn first(spec: Value) -> Option<String> {
        type_mismatch(&json!({ "spec": spec }), &schema()).map(|m| m.to_string())
    }

    #[test]
    fn values_of_their_types_and_nulls_decode() {
        let spec = json!({
            "replicas": 3, "deadline": 9_000_000_000_i64, "ratio": 0.5, "paused": false,
            "name": "web", "surge": "25%", "ports": [{"port": 80}],
            "data": {"a": "aGVsbG8=", "b": "aGVs\nbG8="}, "raw": {"anything": [1, "x"]}
        });
        assert_eq!(first(spec), None);
        assert_eq!(first(json!({"surge": 1, "ratio": 2, "replicas": null, "ports": [null]})), None);
        assert_eq!(first(json!({"surge": 0.5})), None, "a Quantity takes fractions");
    }

    #[test]
    fn each_wrong_type_is_named_with_its_path() {
        let cases = [
            (
                json!({"replicas": "x"}),
                "cannot unmarshal string into field spec.replicas of type int32",
            ),
            (
                json!({"replicas": 1.5}),
                "cannot unmarshal number 1.5 into field spec.replicas of type int32",
            ),
            (
                json!({"replicas": 3_000_000_000_i64}),
                "cannot unmarshal number 3000000000 into field spec.replicas of type int32",
            ),
            (
                json!({"deadline": "1"}),
                "cannot unmarshal string into field spec.deadline of type int64",
            ),
            (
                json!({"ratio": "1"}),
                "cannot unmarshal string into field spec.ratio of type float64",
            ),
            (
                json!({"paused": "yes"}),
                "cannot unmarshal string into field spec.paused of type bool",
            ),
            (json!({"name": 1}), "cannot unmarshal number 1 into field spec.name of type string"),
            (
                json!({"surge": true}),
                "cannot unmarshal bool into field spec.surge of type int-or-string",
            ),
            (json!({"ports": {}}), "cannot unmarshal object into field spec.ports of type array"),
            (
                json!({"ports": [{"port": 80}, {"port": "http"}]}),
                "cannot unmarshal string into field spec.ports[1].port of type int32",
            ),
            (
                json!({"data": {"k": 1}}),
                "cannot unmarshal number 1 into field spec.data[k] of type []byte",
            ),
            (
                json!({"data": {"k": "not base64!"}}),
                "cannot unmarshal text that is not base64 into field spec.data[k] of type []byte",
            ),
            (json!({"raw": "x"}), "cannot unmarshal string into field spec.raw of type object"),
        ];
        for (spec, expected) in cases {
            assert_eq!(first(spec.clone()).as_deref(), Some(expected), "{spec}");
        }
        let top = type_mismatch(&json!({"spec": []}), &schema()).unwrap();
        assert_eq!(
            (top.path.as_str(), top.found.as_str(), top.expected),
            ("spec", "array", "object")
        );
    }
}
