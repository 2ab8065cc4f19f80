//! `x-kubernetes-list-type` checks (`apiextensions-apiserver/pkg/apiserver/schema/listtype`):
//! a `set` must not repeat a value, a `map` must not repeat a key tuple.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::errors::{Bad, FieldError, duplicate, invalid};
use super::schema::{canonical, index, list_map_keys, list_type};

/// A list type that constrains items (`atomic` does not).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListType {
    /// `set`: no value twice.
    Set,
    /// `map` with its `x-kubernetes-list-map-keys`: no key tuple twice.
    Map(Vec<String>),
}

impl ListType {
    /// The list type `schema` declares, if it constrains items.
    pub(crate) fn of(schema: &Value) -> Option<Self> {
        match list_type(schema) {
            Some("set") => Some(Self::Set),
            Some("map") => Some(Self::Map(list_map_keys(schema))),
            _ => None,
        }
    }
}

/// Checks the list at `path` against its list type.
pub(crate) fn check(
    list_type: &ListType,
    list: &[Value],
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    match list_type {
        ListType::Set => check_set(list, path, errors),
        ListType::Map(keys) => check_map(keys, list, path, errors),
    }
}

/// A set item as compared for duplicates: strings, what most sets hold, as they are; other
/// values by their canonical JSON.
#[derive(PartialEq, Eq, Hash)]
enum SetItem<'a> {
    Str(&'a str),
    Other(String),
}

/// Reports the second occurrence of every repeated value, like the API server.
fn check_set(list: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if list.len() < 2 {
        return;
    }
    let mut seen: HashMap<SetItem<'_>, usize> = HashMap::new();
    for (i, item) in list.iter().enumerate() {
        let item_key = match item {
            Value::String(s) => SetItem::Str(s),
            other => SetItem::Other(canonical(other)),
        };
        let count = seen.entry(item_key).or_insert(0);
        *count += 1;
        if *count == 2 {
            errors.push(duplicate(&index(path, i), Bad::Json(item)));
        }
    }
}

/// The key tuple of a map-list item, `None` when a key field is missing.
pub(crate) fn key_of(item: &Value, keys: &[String]) -> Option<Map<String, Value>> {
    let object = item.as_object()?;
    keys.iter().map(|k| object.get(k).map(|v| (k.clone(), v.clone()))).collect()
}

/// Reports every item whose key tuple was already used by an earlier item.
fn check_map(keys: &[String], list: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if let Some((i, item)) =
        list.iter().enumerate().find(|(_, item)| !item.is_object() && !item.is_null())
    {
        errors.push(invalid(
            &index(path, i),
            Bad::Json(item),
            "must be an object for an array of list-type map",
        ));
        return;
    }
    if keys.is_empty() {
        return;
    }
    let mut seen = HashSet::new();
    for (i, item) in list.iter().enumerate() {
        // Missing key fields are reported by `required` (Kubernetes demands map keys
        // be required or defaulted).
        if let Some(key) = key_of(item, keys) {
            let key = Value::Object(key);
            if !seen.insert(canonical(&key)) {
                errors.push(duplicate(&index(path, i), Bad::Json(&key)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::errors::FieldErrorKind;
    use serde_json::json;

    #[test]
    fn set_reports_second_occurrence_only() {
        let schema = ListType::of(
            &json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
        )
        .unwrap();
        let mut errors = Vec::new();
        check(&schema, &[json!("a"), json!("b"), json!("a"), json!("a")], "spec.tags", &mut errors);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.tags[2]");
        assert_eq!(errors[0].kind, FieldErrorKind::Duplicate);
        assert_eq!(errors[0].message, "Duplicate value: \"a\"");

        // A string and a number with the same text are different values.
        let mut errors = Vec::new();
        let list = [json!("1"), json!(1), json!({"a": 1}), json!(1), json!({"a": 1})];
        check(&schema, &list, "s", &mut errors);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["s[3]", "s[4]"]);
    }

    #[test]
    fn map_reports_repeated_key_tuples() {
        let schema = ListType::of(&json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "port"]}))
        .unwrap();
        assert_eq!(ListType::of(&json!({"x-kubernetes-list-type": "atomic"})), None);
        let list = [
            json!({"name": "a", "port": 1}),
            json!({"name": "a", "port": 2}),
            json!({"port": 1, "name": "a", "extra": true}),
        ];
        let mut errors = Vec::new();
        check(&schema, &list, "spec.ports", &mut errors);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.ports[2]");
        assert_eq!(errors[0].message, r#"Duplicate value: {"name":"a","port":1}"#);

        let mut errors = Vec::new();
        check(&schema, &[json!({"name": "a"}), json!(3)], "spec.ports", &mut errors);
        assert_eq!(errors[0].field, "spec.ports[1]");
        assert_eq!(errors[0].kind, FieldErrorKind::Invalid);
    }
}
