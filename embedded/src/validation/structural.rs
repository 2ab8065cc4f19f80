//! The structural-schema rules the API server enforces on a CRD version's schema
//! (`apiextensions-apiserver/pkg/apiserver/schema/validation.go` and `complete.go`),
//! plus the keyword bans of CRD v1 validation that matter for Keelson's generated CRDs.

use serde_json::Value;

use super::schema::{
    additional_schema, branches, flag, items, list_map_keys, list_type, properties, type_of,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Every structural-schema violation of `schema` (a version's `openAPIV3Schema`),
/// as `<schema path>: <cause>`, e.g.
/// `openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`.
/// Sorted, like the API server's list. An empty result means the schema is structural.
pub fn structural_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    node(schema, Level::Root, "openAPIV3Schema", &mut problems);
    problems.sort();
    problems.dedup();
    problems
}

/// Keywords CRD v1 rejects anywhere in a schema.
fn banned_keywords(s: &Value, path: &str, out: &mut Vec<String>) {
    for keyword in [
        "$ref",
        "$schema",
        "id",
        "definitions",
        "dependencies",
        "additionalItems",
        "patternProperties",
    ] {
        if s.get(keyword).is_some() {
            out.push(format!("{path}.{keyword}: Forbidden: {keyword} is not supported"));
        }
    }
    if flag(s, "uniqueItems") {
        out.push(format!(
            "{path}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ));
    }
    if s.get("items").is_some_and(Value::is_array) {
        out.push(format!(
            "{path}.items: Forbidden: items must be a schema object and not an array"
        ));
    }
}

fn node(s: &Value, level: Level, path: &str, out: &mut Vec<String>) {
    if !s.is_object() {
        out.push(format!("{path}: Invalid value: must be a schema object"));
        return;
    }
    banned_keywords(s, path, out);
    let ty = type_of(s);
    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    let props = properties(s);
    let has_props = props.is_some_and(|p| !p.is_empty());

    if ty == Some("array") && items(s).is_none() {
        out.push(format!("{path}.items: Required value: must be specified"));
    }
    if let Some(i) = items(s) {
        node(i, Level::Item, &format!("{path}.items"), out);
    }
    if let Some(props) = props {
        for (k, v) in props {
            node(v, Level::Field, &format!("{path}.properties[{k}]"), out);
        }
    }
    if let Some(additional) = s.get("additionalProperties") {
        if level == Level::Root {
            out.push(format!(
                "{path}.additionalProperties: Forbidden: must not be used at the root"
            ));
        }
        if has_props && additional != &Value::Bool(true) {
            out.push(format!(
                "{path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ));
        }
        if embedded {
            out.push(format!(
                "{path}.additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"
            ));
        }
    }
    if let Some(additional) = additional_schema(s) {
        node(additional, Level::Field, &format!("{path}.additionalProperties"), out);
    }
    if int_or_string && preserve {
        out.push(format!(
            "{path}.x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
        ));
    }
    if int_or_string && embedded {
        out.push(format!(
            "{path}.x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
        ));
    }

    value_validation(s, is_int_or_string_any_of(s), is_int_or_string_all_of(s), path, out);

    if embedded && ty != Some("object") {
        out.push(match ty {
            None => format!("{path}.type: Required value: must be object if x-kubernetes-embedded-resource is true"),
            Some(t) => format!(
                "{path}.type: Invalid value: \"{t}\": must be object if x-kubernetes-embedded-resource is true"
            ),
        });
    } else if ty.is_none() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(format!("{path}.type: Required value: {detail}"));
    }
    if level == Level::Root
        && let Some(t) = ty.filter(|t| *t != "object")
    {
        out.push(format!("{path}.type: Invalid value: \"{t}\": must be object at the root"));
    }

    let check_metadata = level == Level::Root || embedded;
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(f) = props.and_then(|p| p.get(field)) {
                let t = type_of(f).unwrap_or_default();
                if t != "string" {
                    out.push(format!(
                        "{path}.properties[{field}].type: Invalid value: \"{t}\": must be string"
                    ));
                }
            }
        }
    }
    if let Some(metadata) = props.and_then(|p| p.get("metadata")) {
        metadata_invariants(
            metadata,
            check_metadata,
            level,
            &format!("{path}.properties[metadata]"),
            out,
        );
    }
    if embedded && !preserve && !has_props {
        out.push(format!(
            "{path}.properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
        ));
    }
    list_type_rules(s, ty, path, out);

    // Completeness: what value validations name must exist in the structural schema.
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in branches(s, junctor).iter().enumerate() {
            completeness(branch, s, path, &format!("{path}.{junctor}[{i}]"), out);
        }
    }
    if let Some(not) = s.get("not") {
        completeness(not, s, path, &format!("{path}.not"), out);
    }
}

fn metadata_invariants(
    s: &Value,
    check_metadata: bool,
    level: Level,
    path: &str,
    out: &mut Vec<String>,
) {
    let ty = type_of(s).unwrap_or_default();
    if check_metadata && ty != "object" {
        out.push(format!("{path}.type: Invalid value: \"{ty}\": must be object"));
    }
    if level != Level::Root {
        return;
    }
    let only_names = |props: &serde_json::Map<String, Value>| {
        props.keys().all(|k| k == "name" || k == "generateName")
    };
    let allowed = s.as_object().is_some_and(|m| {
        m.iter().all(|(k, v)| match k.as_str() {
            "type" | "default" => true,
            "properties" => v.as_object().is_some_and(only_names),
            _ => false,
        })
    });
    if !allowed {
        out.push(format!(
            "{path}: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ));
    }
}

fn list_type_rules(s: &Value, ty: Option<&str>, path: &str, out: &mut Vec<String>) {
    let keys = list_map_keys(s);
    match list_type(s) {
        None if !keys.is_empty() => out.push(format!(
            "{path}.x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
        )),
        None => {}
        Some(lt) if ty != Some("array") => out.push(format!(
            "{path}.x-kubernetes-list-type: Invalid value: \"{lt}\": must only be used if type is array"
        )),
        Some("atomic" | "set") if !keys.is_empty() => out.push(format!(
            "{path}.x-kubernetes-list-map-keys: Forbidden: must be empty if x-kubernetes-list-type is not map"
        )),
        Some("atomic" | "set") => {}
        Some("map") => {
            if keys.is_empty() {
                out.push(format!(
                    "{path}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                ));
            }
            let item = items(s);
            if item.is_some_and(|i| type_of(i) != Some("object")) {
                out.push(format!(
                    "{path}.items.type: Invalid value: must be object if parent array's x-kubernetes-list-type is map"
                ));
            }
            let item_props = item.and_then(properties);
            for k in &keys {
                if !item_props.is_some_and(|p| p.contains_key(k)) {
                    out.push(format!(
                        "{path}.x-kubernetes-list-map-keys: Invalid value: \"{k}\": entries must all be names of item properties"
                    ));
                }
            }
        }
        Some(other) => out.push(format!(
            "{path}.x-kubernetes-list-type: Unsupported value: \"{other}\": supported values: \"atomic\", \"map\", \"set\""
        )),
    }
}

fn is_int_or_string_pair(any_of: Option<&Value>) -> bool {
    any_of.is_some_and(|a| *a == serde_json::json!([{"type": "integer"}, {"type": "string"}]))
}

/// `anyOf: [{type: integer}, {type: string}]`, allowed to carry types.
fn is_int_or_string_any_of(s: &Value) -> bool {
    is_int_or_string_pair(s.get("anyOf"))
}

/// `allOf: [{anyOf: [{type: integer}, {type: string}]}, ...]`.
fn is_int_or_string_all_of(s: &Value) -> bool {
    is_int_or_string_pair(branches(s, "allOf").first().and_then(|b| b.get("anyOf")))
}

fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    if !skip_any_of {
        for (i, b) in branches(s, "anyOf").iter().enumerate() {
            nested(b, false, &format!("{path}.anyOf[{i}]"), out);
        }
    }
    for (i, b) in branches(s, "allOf").iter().enumerate() {
        nested(b, skip_first_all_of_any_of && i == 0, &format!("{path}.allOf[{i}]"), out);
    }
    for (i, b) in branches(s, "oneOf").iter().enumerate() {
        nested(b, false, &format!("{path}.oneOf[{i}]"), out);
    }
    if let Some(not) = s.get("not") {
        nested(not, false, &format!("{path}.not"), out);
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(pattern)
    {
        out.push(format!(
            "{path}.pattern: Invalid value: \"{pattern}\": must be a valid regular expression, but isn't: {e}"
        ));
    }
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not`: value validations only.
fn nested(v: &Value, skip_any_of: bool, path: &str, out: &mut Vec<String>) {
    if !v.is_object() {
        out.push(format!("{path}: Invalid value: must be a schema object"));
        return;
    }
    banned_keywords(v, path, out);
    value_validation(v, skip_any_of, false, path, out);
    if let Some(i) = items(v) {
        nested(i, false, &format!("{path}.items"), out);
    }
    if let Some(props) = properties(v) {
        for (k, p) in props {
            nested(p, false, &format!("{path}.properties[{k}]"), out);
        }
        if props.contains_key("metadata") {
            out.push(format!(
                "{path}.properties[metadata]: Forbidden: must not be specified in a nested context"
            ));
        }
    }
    let non_empty_str = |k: &str| v.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    let present = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
    if non_empty_str("type") {
        out.push(format!("{path}.type: Forbidden: must be empty to be structural"));
    }
    if present("additionalProperties") {
        out.push(format!(
            "{path}.additionalProperties: Forbidden: must be undefined to be structural"
        ));
    }
    for k in ["default", "externalDocs", "x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if present(k) {
            out.push(format!("{path}.{k}: Forbidden: must be undefined to be structural"));
        }
    }
    for k in ["title", "description"] {
        if non_empty_str(k) {
            out.push(format!("{path}.{k}: Forbidden: must be empty to be structural"));
        }
    }
    for k in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(v, k) {
            out.push(format!("{path}.{k}: Forbidden: must be false to be structural"));
        }
    }
    for k in ["x-kubernetes-list-map-keys", "x-kubernetes-validations"] {
        if v.get(k).and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
            out.push(format!("{path}.{k}: Forbidden: must be empty to be structural"));
        }
    }
}

/// Every property or items schema named in the value validation `v` must exist in `s`.
fn completeness(v: &Value, s: &Value, s_path: &str, v_path: &str, out: &mut Vec<String>) {
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in branches(v, junctor).iter().enumerate() {
            completeness(b, s, s_path, &format!("{v_path}.{junctor}[{i}]"), out);
        }
    }
    if let Some(not) = v.get("not") {
        completeness(not, s, s_path, &format!("{v_path}.not"), out);
    }
    if let Some(v_items) = items(v) {
        let s_items_path = format!("{s_path}.items");
        let v_items_path = format!("{v_path}.items");
        match items(s) {
            Some(s_items) => completeness(v_items, s_items, &s_items_path, &v_items_path, out),
            None => out.push(format!(
                "{s_items_path}: Required value: because it is defined in {v_items_path}"
            )),
        }
    }
    if let Some(v_props) = properties(v) {
        for (k, v_prop) in v_props {
            let s_prop_path = format!("{s_path}.properties[{k}]");
            let v_prop_path = format!("{v_path}.properties[{k}]");
            match properties(s).and_then(|p| p.get(k)) {
                Some(s_prop) => completeness(v_prop, s_prop, &s_prop_path, &v_prop_path, out),
                None => out.push(format!(
                    "{s_prop_path}: Required value: because it is defined in {v_prop_path}"
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_structural_schema_has_no_problems() {
        let schema = json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
                "spec": {
                    "type": "object",
                    "required": ["a"],
                    "properties": {
                        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]},
                        "port": {"x-kubernetes-int-or-string": true,
                                 "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "free": {"x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "nodes": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "required": ["name"],
                                            "properties": {"name": {"type": "string"}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true}
                    },
                    "oneOf": [{"required": ["a"]}, {"properties": {"a": {"minLength": 1}}}]
                }
            }
        });
        assert_eq!(structural_problems(&schema), Vec::<String>::new());
    }

    #[test]
    fn missing_type_is_reported_with_its_path() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"minimum": 0},
            "list": {"type": "array", "items": {"properties": {}}}
        }}}});
        assert_eq!(
            structural_problems(&schema),
            vec![
                "openAPIV3Schema.properties[spec].properties[list].items.type: Required value: must not be empty for specified array items",
                "openAPIV3Schema.properties[spec].properties[replicas].type: Required value: must not be empty for specified object fields",
            ]
        );
    }

    #[test]
    fn additional_properties_with_properties_is_reported() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"}}}});
        assert_eq!(
            structural_problems(&schema),
            vec![
                "openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ]
        );
    }

    #[test]
    fn refs_metadata_and_nested_types_are_reported() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "spec": {"$ref": "#/definitions/Spec"},
            "mode": {"type": "string", "anyOf": [{"type": "string", "enum": ["a"]}, {"properties": {"x": {}}}]}
        }});
        let problems = structural_problems(&schema);
        assert_eq!(
            problems,
            vec![
                "openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                "openAPIV3Schema.properties[mode].anyOf[0].type: Forbidden: must be empty to be structural",
                "openAPIV3Schema.properties[mode].properties[x]: Required value: because it is defined in openAPIV3Schema.properties[mode].anyOf[1].properties[x]",
                "openAPIV3Schema.properties[spec].$ref: Forbidden: $ref is not supported",
                "openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ]
        );
    }

    #[test]
    fn root_rules() {
        assert_eq!(
            structural_problems(&json!({"type": "string"})),
            vec!["openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"]
        );
        assert_eq!(
            structural_problems(
                &json!({"type": "object", "additionalProperties": {"type": "string"}})
            ),
            vec!["openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"]
        );
    }
}
