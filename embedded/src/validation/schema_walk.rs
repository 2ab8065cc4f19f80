//! Validation of a (pruned, defaulted) value against the OpenAPI v3 value
//! validations, with go-openapi's error details as the API server reports them.

use serde_json::{Map, Number, Value};

use super::checks::Limits;
use super::errors::{
    Bad, FieldError, invalid, not_supported, quote, required, too_long, too_many, type_invalid,
};
use super::schema::{FieldPath, body_name, child, json_eq, json_type};
use super::tree::SchemaTree;
use super::{formats, list_type};

/// Appends every violation of `value` (at `path`) against `schema` to `errors`.
pub(crate) fn validate(
    schema: &SchemaTree,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    node(schema, value, &mut FieldPath::new(path), true, errors);
}

/// Whether `value` satisfies `schema` (used for `anyOf`/`oneOf`/`not`).
fn passes(schema: &SchemaTree, value: &Value, path: &mut FieldPath) -> bool {
    let mut errors = Vec::new();
    node(schema, value, path, false, &mut errors);
    errors.is_empty()
}

/// `structural` is false inside `allOf`/`anyOf`/`oneOf`/`not`, where list-type and
/// embedded-resource semantics do not apply.
fn node(
    schema: &SchemaTree,
    value: &Value,
    path: &mut FieldPath,
    structural: bool,
    errors: &mut Vec<FieldError>,
) {
    let checks = &schema.checks;
    if value.is_null() {
        if !schema.nullable
            && let Some(expected) = &checks.expected
        {
            let name = body_name(path.as_str());
            let detail = format!("{name} in body must be of type {}: \"null\"", expected.name);
            errors.push(type_invalid(path.as_str(), Bad::Str("null"), &detail));
        }
        return;
    }
    if !check_type(schema, value, path.as_str(), errors) {
        return;
    }
    check_enum(schema, value, path.as_str(), errors);
    let limits = checks.limits.as_deref();
    match value {
        Value::Number(n) => {
            if let Some(limits) = limits {
                check_number(limits, value, n, path.as_str(), errors);
            }
        }
        Value::String(s) => check_string(schema, s, value, path.as_str(), errors),
        Value::Array(list) => check_array(schema, list, path, structural, errors),
        Value::Object(map) => check_object(schema, map, path, structural, errors),
        _ => {}
    }
    if let Some(format) = &checks.format
        && formats::check(format, value) == Some(false)
    {
        let shown = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let name = body_name(path.as_str());
        let detail = format!("{name} in body must be of type {format}: {}", quote(&shown));
        errors.push(type_invalid(path.as_str(), Bad::Json(value), &detail));
    }
    check_junctors(schema, value, path, errors);
}

fn check_string(
    schema: &SchemaTree,
    s: &str,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let checks = &schema.checks;
    if let Some(limits) = checks.limits.as_deref() {
        let length = s.chars().count() as u64;
        if let Some(max) = limits.max_length
            && length > max
        {
            errors.push(too_long(path, max));
        }
        if let Some(min) = limits.min_length
            && length < min
        {
            let detail = format!("{} in body should be at least {min} chars long", body_name(path));
            errors.push(invalid(path, Bad::Json(value), &detail));
        }
    }
    if let Some(pattern) = &checks.pattern
        && !pattern.regex.is_match(s)
    {
        let detail = format!("{} in body should match '{}'", body_name(path), pattern.text);
        errors.push(invalid(path, Bad::Json(value), &detail));
    }
}

fn check_array(
    schema: &SchemaTree,
    list: &[Value],
    path: &mut FieldPath,
    structural: bool,
    errors: &mut Vec<FieldError>,
) {
    if let Some(limits) = schema.checks.limits.as_deref() {
        if let Some(max) = limits.max_items
            && list.len() as u64 > max
        {
            errors.push(too_many(path.as_str(), list.len(), max));
        }
        if let Some(min) = limits.min_items
            && (list.len() as u64) < min
        {
            let name = body_name(path.as_str());
            let detail = format!("{name} in body should have at least {min} items");
            errors.push(invalid(path.as_str(), Bad::Count(list.len()), &detail));
        }
    }
    if let Some(item_schema) = &schema.items {
        for (i, item) in list.iter().enumerate() {
            path.index(i, |path| node(item_schema, item, path, structural, errors));
        }
    }
    if structural && let Some(list_type) = &schema.checks.list_type {
        list_type::check(list_type, list, path.as_str(), errors);
    }
}

fn check_object(
    schema: &SchemaTree,
    map: &Map<String, Value>,
    path: &mut FieldPath,
    structural: bool,
    errors: &mut Vec<FieldError>,
) {
    if let Some(limits) = schema.checks.limits.as_deref() {
        if let Some(max) = limits.max_properties
            && map.len() as u64 > max
        {
            errors.push(too_many(path.as_str(), map.len(), max));
        }
        if let Some(min) = limits.min_properties
            && (map.len() as u64) < min
        {
            let name = body_name(path.as_str());
            let detail = format!("{name} in body should have at least {min} properties");
            errors.push(invalid(path.as_str(), Bad::Count(map.len()), &detail));
        }
    }
    for field in &schema.checks.required {
        if !map.contains_key(field) {
            errors.push(required(&child(path.as_str(), field), ""));
        }
    }
    for (k, prop) in &schema.properties {
        if let Some(v) = map.get(k) {
            path.field(k, |path| node(prop, v, path, structural, errors));
        }
    }
    if let Some(additional) = schema.additional_schema() {
        for (k, v) in map {
            if !schema.properties.contains_key(k) {
                path.key(k, |path| node(additional, v, path, structural, errors));
            }
        }
    }
    if structural && schema.embedded {
        check_embedded_type_meta(map, path.as_str(), errors);
    }
}

fn check_junctors(
    schema: &SchemaTree,
    value: &Value,
    path: &mut FieldPath,
    errors: &mut Vec<FieldError>,
) {
    let Some(junctors) = schema.junctors.as_deref() else {
        return;
    };
    let shown = || match value {
        Value::Object(_) | Value::Array(_) => Bad::Str(json_type(value)),
        other => Bad::Json(other),
    };
    for branch in &junctors.all_of {
        node(branch, value, path, false, errors);
    }
    let any_of = &junctors.any_of;
    if !any_of.is_empty() && !any_of.iter().any(|b| passes(b, value, path)) {
        let name = body_name(path.as_str());
        let detail = format!("{name} in body must validate at least one schema (anyOf)");
        errors.push(invalid(path.as_str(), shown(), &detail));
    }
    let one_of = &junctors.one_of;
    if !one_of.is_empty() {
        let valid = one_of.iter().filter(|b| passes(b, value, path)).count();
        if valid != 1 {
            let name = body_name(path.as_str());
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            let detail =
                format!("{name} in body must validate one and only one schema (oneOf). {found}");
            errors.push(invalid(path.as_str(), shown(), &detail));
        }
    }
    if let Some(not) = &junctors.not
        && passes(not, value, path)
    {
        let name = body_name(path.as_str());
        let detail = format!("{name} in body must not validate the schema (not)");
        errors.push(invalid(path.as_str(), shown(), &detail));
    }
}

/// Checks `type` (or `x-kubernetes-int-or-string`); false when the value has the wrong type.
fn check_type(
    schema: &SchemaTree,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> bool {
    let Some(expected) = &schema.checks.expected else {
        return true;
    };
    let ok = expected.accepts(value);
    if !ok {
        let actual = json_type(value);
        let detail =
            format!("{} in body must be of type {}: \"{actual}\"", body_name(path), expected.name);
        errors.push(type_invalid(path, Bad::Str(actual), &detail));
    }
    ok
}

fn check_enum(schema: &SchemaTree, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let allowed = &schema.checks.allowed;
    if allowed.is_empty() || allowed.iter().any(|a| json_eq(a, value)) {
        return;
    }
    let supported: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    errors.push(not_supported(path, Bad::Json(value), &supported));
}

/// Go's `%v` for the float64 bounds in go-openapi's messages.
fn go_number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { format!("{f}") }
}

fn check_number(
    limits: &Limits,
    value: &Value,
    n: &Number,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(f) = n.as_f64() else {
        return;
    };
    let name = body_name(path);
    if let Some(min) = limits.minimum
        && ((min.exclusive && f <= min.value) || f < min.value)
    {
        let relation = if min.exclusive { "greater than" } else { "greater than or equal to" };
        let detail = format!("{name} in body should be {relation} {}", go_number(min.value));
        errors.push(invalid(path, Bad::Json(value), &detail));
    }
    if let Some(max) = limits.maximum
        && ((max.exclusive && f >= max.value) || f > max.value)
    {
        let relation = if max.exclusive { "less than" } else { "less than or equal to" };
        let detail = format!("{name} in body should be {relation} {}", go_number(max.value));
        errors.push(invalid(path, Bad::Json(value), &detail));
    }
    if let Some(multiple_of) = limits.multiple_of {
        let multiple = match (n.as_i64(), multiple_of.integer) {
            (Some(i), Some(m)) => i % m == 0,
            _ => {
                let q = f / multiple_of.factor;
                (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
            }
        };
        if !multiple {
            let detail =
                format!("{name} in body should be a multiple of {}", go_number(multiple_of.factor));
            errors.push(invalid(path, Bad::Json(value), &detail));
        }
    }
}

/// An embedded resource needs a non-empty string `apiVersion` and `kind`.
fn check_embedded_type_meta(map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    for field in ["apiVersion", "kind"] {
        let field_path = child(path, field);
        match map.get(field) {
            None => errors.push(required(&field_path, "must not be empty")),
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(v @ Value::String(_)) => {
                errors.push(invalid(&field_path, Bad::Json(v), "must not be empty"))
            }
            Some(v) => errors.push(invalid(&field_path, Bad::Json(v), "must be a string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::errors::FieldErrorKind::{self, *};
    use serde_json::json;

    /// Validates `value` as `spec.x` under a one-property schema.
    fn check(x_schema: Value, value: Value) -> Vec<(String, FieldErrorKind, String)> {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": {"x": x_schema}
        }}});
        let mut errors = Vec::new();
        validate(
            &SchemaTree::new(&schema).unwrap(),
            &json!({"spec": {"x": value}}),
            "",
            &mut errors,
        );
        errors.into_iter().map(|e| (e.field, e.kind, e.message)).collect()
    }

    fn kinds(x_schema: Value, value: Value) -> Vec<(String, FieldErrorKind)> {
        check(x_schema, value).into_iter().map(|(f, k, _)| (f, k)).collect()
    }

    fn ok(x_schema: Value, value: Value) {
        assert_eq!(check(x_schema, value.clone()), vec![], "{value} should pass");
    }

    fn one(kind: FieldErrorKind) -> Vec<(String, FieldErrorKind)> {
        vec![("spec.x".to_string(), kind)]
    }

    #[test]
    fn types() {
        ok(json!({"type": "integer"}), json!(3));
        ok(json!({"type": "integer"}), json!(3.0));
        ok(json!({"type": "number"}), json!(3));
        ok(json!({"type": "boolean"}), json!(false));
        ok(json!({"type": "array"}), json!([]));
        assert_eq!(
            check(json!({"type": "integer"}), json!("string")),
            vec![(
                "spec.x".to_string(),
                TypeInvalid,
                r#"Invalid value: "string": spec.x in body must be of type integer: "string""#
                    .to_string()
            )]
        );
        assert_eq!(kinds(json!({"type": "integer"}), json!(1.5)), one(TypeInvalid));
        assert_eq!(kinds(json!({"type": "object"}), json!([])), one(TypeInvalid));
        assert_eq!(kinds(json!({"type": "string"}), json!(true)), one(TypeInvalid));
        // No type with preserve-unknown-fields: anything goes.
        ok(json!({"x-kubernetes-preserve-unknown-fields": true}), json!([1, {"a": "b"}]));
    }

    #[test]
    fn int_or_string() {
        let s = json!({"x-kubernetes-int-or-string": true});
        ok(s.clone(), json!(8080));
        ok(s.clone(), json!("http"));
        assert_eq!(kinds(s.clone(), json!(1.5)), one(TypeInvalid));
        assert_eq!(kinds(s, json!({"a": 1})), one(TypeInvalid));
    }

    #[test]
    fn nullable() {
        ok(json!({"type": "string", "nullable": true, "enum": ["a"]}), Value::Null);
        assert_eq!(
            check(json!({"type": "string"}), Value::Null),
            vec![(
                "spec.x".to_string(),
                TypeInvalid,
                r#"Invalid value: "null": spec.x in body must be of type string: "null""#
                    .to_string()
            )]
        );
    }

    #[test]
    fn required_fields() {
        let s = json!({"type": "object", "required": ["backend", "name"], "properties": {
            "backend": {"type": "string"}, "name": {"type": "string"}}});
        ok(s.clone(), json!({"backend": "a", "name": "b"}));
        assert_eq!(
            check(s, json!({"name": "b"})),
            vec![("spec.x.backend".to_string(), Required, "Required value".to_string())]
        );
    }

    #[test]
    fn enums() {
        let s = json!({"type": "string", "enum": ["SharedPVC", "Memory", "NodeLocal"]});
        ok(s.clone(), json!("Memory"));
        assert_eq!(
            check(s, json!("Foo")),
            vec![(
                "spec.x".to_string(),
                NotSupported,
                r#"Unsupported value: "Foo": supported values: "SharedPVC", "Memory", "NodeLocal""#
                    .to_string()
            )]
        );
        ok(json!({"type": "integer", "enum": [1, 2]}), json!(2));
        assert_eq!(
            check(json!({"type": "integer", "enum": [1, 2]}), json!(3))[0].2,
            r#"Unsupported value: 3: supported values: "1", "2""#
        );
    }

    #[test]
    fn numeric_bounds() {
        let s = json!({"type": "integer", "minimum": 0, "maximum": 10});
        ok(s.clone(), json!(0));
        ok(s.clone(), json!(10));
        assert_eq!(
            check(s.clone(), json!(-1)),
            vec![(
                "spec.x".to_string(),
                Invalid,
                "Invalid value: -1: spec.x in body should be greater than or equal to 0"
                    .to_string()
            )]
        );
        assert_eq!(
            check(s, json!(11))[0].2,
            "Invalid value: 11: spec.x in body should be less than or equal to 10"
        );
        let s = json!({"type": "number", "minimum": 0.0, "exclusiveMinimum": true,
                       "maximum": 1.5, "exclusiveMaximum": true});
        ok(s.clone(), json!(0.5));
        assert_eq!(
            check(s.clone(), json!(0))[0].2,
            "Invalid value: 0: spec.x in body should be greater than 0"
        );
        assert_eq!(
            check(s, json!(1.5))[0].2,
            "Invalid value: 1.5: spec.x in body should be less than 1.5"
        );
        ok(json!({"type": "integer", "multipleOf": 5}), json!(15));
        ok(json!({"type": "number", "multipleOf": 0.1}), json!(0.3));
        assert_eq!(
            check(json!({"type": "integer", "multipleOf": 5}), json!(7))[0].2,
            "Invalid value: 7: spec.x in body should be a multiple of 5"
        );
    }

    #[test]
    fn string_lengths_and_patterns() {
        let s = json!({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-zé]+$"});
        ok(s.clone(), json!("éé"));
        ok(s.clone(), json!("ééé"));
        assert_eq!(
            check(s.clone(), json!("éééé")),
            vec![("spec.x".to_string(), TooLong, "Too long: may not be longer than 3".to_string())]
        );
        assert_eq!(
            check(s.clone(), json!("a"))[0].2,
            r#"Invalid value: "a": spec.x in body should be at least 2 chars long"#
        );
        assert_eq!(
            check(s, json!("AB")),
            vec![(
                "spec.x".to_string(),
                Invalid,
                r#"Invalid value: "AB": spec.x in body should match '^[a-zé]+$'"#.to_string()
            )]
        );
    }

    #[test]
    fn formats() {
        let s = json!({"type": "string", "format": "date-time"});
        ok(s.clone(), json!("2024-05-01T10:00:00Z"));
        assert_eq!(
            check(s, json!("soon")),
            vec![(
                "spec.x".to_string(),
                TypeInvalid,
                r#"Invalid value: "soon": spec.x in body must be of type date-time: "soon""#
                    .to_string()
            )]
        );
        ok(json!({"type": "integer", "format": "int32"}), json!(5));
        assert_eq!(
            kinds(json!({"type": "integer", "format": "int32"}), json!(1_i64 << 40)),
            one(TypeInvalid)
        );
        ok(json!({"type": "string", "format": "byte"}), json!("aGk="));
        assert_eq!(
            kinds(json!({"type": "string", "format": "byte"}), json!("!!")),
            one(TypeInvalid)
        );
        ok(json!({"type": "string", "format": "no-such-format"}), json!("anything"));
    }

    #[test]
    fn item_and_property_counts() {
        let s =
            json!({"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}});
        ok(s.clone(), json!([1, 2]));
        assert_eq!(
            check(s.clone(), json!([1, 2, 3])),
            vec![(
                "spec.x".to_string(),
                TooMany,
                "Too many: 3: must have at most 2 items".to_string()
            )]
        );
        assert_eq!(
            check(s.clone(), json!([]))[0].2,
            "Invalid value: 0: spec.x in body should have at least 1 items"
        );
        assert_eq!(kinds(s, json!([1, "a"])), vec![("spec.x[1]".to_string(), TypeInvalid)]);
        let s = json!({"type": "object", "minProperties": 1, "maxProperties": 1,
                       "additionalProperties": {"type": "string"}});
        ok(s.clone(), json!({"a": "b"}));
        assert_eq!(kinds(s.clone(), json!({"a": "b", "c": "d"})), one(TooMany));
        assert_eq!(kinds(s.clone(), json!({})), one(Invalid));
        assert_eq!(kinds(s, json!({"k": 1})), vec![("spec.x[k]".to_string(), TypeInvalid)]);
    }

    #[test]
    fn list_types() {
        let set =
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
        ok(set.clone(), json!(["a", "b"]));
        assert_eq!(kinds(set, json!(["a", "b", "a"])), vec![("spec.x[2]".to_string(), Duplicate)]);
        let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "v": {"type": "integer"}}}});
        ok(map.clone(), json!([{"name": "a", "v": 1}, {"name": "b", "v": 1}]));
        assert_eq!(
            check(map, json!([{"name": "a", "v": 1}, {"name": "b"}, {"name": "a", "v": 2}])),
            vec![(
                "spec.x[2]".to_string(),
                Duplicate,
                r#"Duplicate value: {"name":"a"}"#.to_string()
            )]
        );
    }

    #[test]
    fn junctors() {
        let any = json!({"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]});
        ok(any.clone(), json!(11));
        ok(any.clone(), json!(-1));
        assert_eq!(
            check(any, json!(5)),
            vec![(
                "spec.x".to_string(),
                Invalid,
                "Invalid value: 5: spec.x in body must validate at least one schema (anyOf)"
                    .to_string()
            )]
        );
        let one_of = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                         "oneOf": [{"required": ["a"]}, {"required": ["b"]}]});
        ok(one_of.clone(), json!({"a": "x"}));
        assert_eq!(
            check(one_of.clone(), json!({"a": "x", "b": "y"}))[0].2,
            r#"Invalid value: "object": spec.x in body must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        );
        assert_eq!(kinds(one_of, json!({})), one(Invalid));
        let all = json!({"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^a"}]});
        ok(all.clone(), json!("ab"));
        assert_eq!(
            kinds(all, json!("b")),
            vec![("spec.x".to_string(), Invalid), ("spec.x".to_string(), Invalid)]
        );
        let not = json!({"type": "string", "not": {"enum": ["forbidden"]}});
        ok(not.clone(), json!("fine"));
        assert_eq!(
            check(not, json!("forbidden"))[0].2,
            r#"Invalid value: "forbidden": spec.x in body must not validate the schema (not)"#
        );
    }

    #[test]
    fn embedded_resources_need_type_meta() {
        let s = json!({"type": "object", "x-kubernetes-embedded-resource": true,
                       "x-kubernetes-preserve-unknown-fields": true});
        ok(s.clone(), json!({"apiVersion": "v1", "kind": "Pod"}));
        assert_eq!(
            kinds(s, json!({"apiVersion": "", "spec": {}})),
            vec![("spec.x.apiVersion".to_string(), Invalid), ("spec.x.kind".to_string(), Required)]
        );
    }
}
