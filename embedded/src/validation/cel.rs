//! `x-kubernetes-validations` (CEL) evaluated with `kube-cel`.
//!
//! The rules of each schema node are compiled once, into a `kube_cel::CompiledSchema`
//! of that node's subtree with every nested rule stripped. The walk over the object
//! is ours so that `oldSelf` is correlated the way the API server does it: by
//! property name, by map key, and for `x-kubernetes-list-type: map` lists by the
//! item's key fields (other lists do not correlate, so transition rules under them
//! never see an old value).

use std::collections::HashSet;

use kube_cel::{
    CompiledSchema, ErrorKind, RootContext, ValidationError, Validator, compile_schema,
};
use serde_json::{Map, Value};

use super::errors::{Bad, FieldError, duplicate, forbidden, invalid, required};
use super::list_type::{ListType, key_of};
use super::schema::{
    FieldPath, additional_schema, branches, canonical, child, items, json_type, properties, type_of,
};

thread_local! {
    /// `Validator` registers every Kubernetes CEL library at construction; build it
    /// once per thread, as `kube_cel::validate_compiled` does.
    static CEL: Validator = Validator::new();
}

/// The compiled rules of one schema.
#[derive(Debug)]
pub(crate) struct CelRules {
    root: Option<CelNode>,
    root_context: RootContext,
    compile_errors: Vec<FieldError>,
}

/// A schema node with rules at it or below it.
#[derive(Debug)]
struct CelNode {
    /// This node's rules (including those of its `allOf`/`anyOf`/`oneOf` branches).
    compiled: Option<CompiledSchema>,
    /// The schema's `type`, printed as the bad value of a failed rule.
    schema_type: Option<String>,
    properties: Vec<(String, CelNode)>,
    declared: HashSet<String>,
    items: Option<Box<CelNode>>,
    additional: Option<Box<CelNode>>,
    /// Key fields when this node is an `x-kubernetes-list-type: map` list.
    map_keys: Vec<String>,
}

impl CelRules {
    /// Compiles every rule of `schema`; rules that fail to compile are kept as errors.
    pub(crate) fn new(schema: &Value, root_context: RootContext) -> Self {
        let mut compile_errors = Vec::new();
        let root = build(schema, "", &mut compile_errors);
        Self { root, root_context, compile_errors }
    }

    /// Whether the schema has any rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Rules that did not compile, one error per rule, at the field the rule sits on
    /// (`[*]` for every item or map value).
    pub(crate) fn compile_errors(&self) -> &[FieldError] {
        &self.compile_errors
    }

    /// Evaluates every rule whose value is present; `old` enables transition rules.
    pub(crate) fn evaluate(
        &self,
        object: &Value,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        if let Some(root) = &self.root {
            self.node(root, object, old, &mut FieldPath::new(""), true, errors);
        }
    }

    fn node(
        &self,
        node: &CelNode,
        value: &Value,
        old: Option<&Value>,
        path: &mut FieldPath,
        is_root: bool,
        errors: &mut Vec<FieldError>,
    ) {
        if value.is_null() {
            return;
        }
        if let Some(compiled) = &node.compiled {
            let context = is_root.then_some(&self.root_context);
            let old = old.filter(|o| !o.is_null());
            let result =
                CEL.with(|cel| cel.validate_compiled_with_context(compiled, value, old, context));
            if let Err(failures) = result {
                let bad = node.schema_type.as_deref().unwrap_or_else(|| json_type(value));
                let path = path.as_str();
                errors.extend(failures.iter().filter_map(|f| field_error(f, path, bad)));
            }
        }
        match value {
            Value::Object(map) => {
                for (name, child_node) in &node.properties {
                    if let Some(v) = map.get(name) {
                        let old_v = old.and_then(|o| o.get(name));
                        path.field(name, |path| {
                            self.node(child_node, v, old_v, path, false, errors);
                        });
                    }
                }
                if let Some(additional) = &node.additional {
                    for (k, v) in map.iter().filter(|(k, _)| !node.declared.contains(*k)) {
                        let old_v = old.and_then(|o| o.get(k));
                        path.key(k, |path| self.node(additional, v, old_v, path, false, errors));
                    }
                }
            }
            Value::Array(list) => {
                if let Some(item_node) = &node.items {
                    let old_list = old.and_then(Value::as_array);
                    for (i, item) in list.iter().enumerate() {
                        let old_item = old_list.and_then(|o| correlate(&node.map_keys, item, o));
                        path.index(i, |path| {
                            self.node(item_node, item, old_item, path, false, errors);
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// The old item with the same key fields, for `map` lists only.
fn correlate<'a>(keys: &[String], item: &Value, old: &'a [Value]) -> Option<&'a Value> {
    if keys.is_empty() {
        return None;
    }
    let wanted = canonical(&Value::Object(key_of(item, keys)?));
    old.iter().find(|o| key_of(o, keys).is_some_and(|k| canonical(&Value::Object(k)) == wanted))
}

/// The API server's mapping of a failed rule to a field error (`reason` picks the cause).
fn field_error(failure: &ValidationError, path: &str, bad: &str) -> Option<FieldError> {
    let field = rule_field(path, &failure.field_path);
    let message = &failure.message;
    match failure.kind {
        // Reported once per validation from `compile_errors`, whether or not the field is set.
        ErrorKind::CompilationFailure | ErrorKind::InvalidRule => None,
        ErrorKind::ValidationFailure => Some(match failure.reason.as_deref() {
            Some("FieldValueForbidden") => forbidden(&field, message),
            Some("FieldValueRequired") => required(&field, message),
            Some("FieldValueDuplicate") => duplicate(&field, Bad::Str(bad)),
            _ => invalid(&field, Bad::Str(bad), message),
        }),
        // Evaluation errors, non-boolean results, unsupported functions, too deep: fail closed.
        _ => Some(invalid(&field, Bad::Str(bad), message)),
    }
}

/// Joins the node path and a rule's `fieldPath` (`.x.y` relative to the node).
fn rule_field(path: &str, rule_path: &str) -> String {
    match rule_path.strip_prefix('.') {
        _ if rule_path.is_empty() => path.to_string(),
        Some(rest) if path.is_empty() => rest.to_string(),
        Some(_) => format!("{path}{rule_path}"),
        None => child(path, rule_path),
    }
}

fn has_rules(schema: &Value) -> bool {
    let here = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|rules| !rules.is_empty());
    here || ["allOf", "anyOf", "oneOf"].iter().any(|j| branches(schema, j).iter().any(has_rules))
}

/// A copy of `schema` keeping the rules of this node and its junctor branches only.
fn strip_nested_rules(schema: &Value, keep_here: bool) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let v = match k.as_str() {
            "x-kubernetes-validations" if !keep_here => continue,
            "properties" => match v {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, p)| (name.clone(), strip_nested_rules(p, false)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" | "not" => strip_nested_rules(v, false),
            "allOf" | "anyOf" | "oneOf" => match v {
                Value::Array(list) => {
                    Value::Array(list.iter().map(|b| strip_nested_rules(b, keep_here)).collect())
                }
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

fn collect_compile_errors(
    compiled: &CompiledSchema,
    path: &str,
    bad: &str,
    out: &mut Vec<FieldError>,
) {
    for e in compiled.compilation_errors() {
        out.push(invalid(path, Bad::Str(bad), &format!("rule compile error: {e}")));
    }
    for branch in compiled.all_of.iter().chain(&compiled.any_of).chain(&compiled.one_of) {
        collect_compile_errors(branch, path, bad, out);
    }
}

fn build(schema: &Value, path: &str, compile_errors: &mut Vec<FieldError>) -> Option<CelNode> {
    let schema_type = type_of(schema).map(str::to_string);
    let compiled = has_rules(schema).then(|| {
        let compiled = compile_schema(&strip_nested_rules(schema, true));
        let bad = schema_type.as_deref().unwrap_or("object");
        collect_compile_errors(&compiled, path, bad, compile_errors);
        compiled
    });
    let mut children = Vec::new();
    let mut declared = HashSet::new();
    if let Some(props) = properties(schema) {
        for (name, prop) in props {
            declared.insert(name.clone());
            if let Some(node) = build(prop, &child(path, name), compile_errors) {
                children.push((name.clone(), node));
            }
        }
    }
    let every = format!("{path}[*]");
    let item_node = items(schema).and_then(|i| build(i, &every, compile_errors));
    let additional = additional_schema(schema).and_then(|a| build(a, &every, compile_errors));
    if compiled.is_none() && children.is_empty() && item_node.is_none() && additional.is_none() {
        return None;
    }
    let map_keys = match ListType::of(schema) {
        Some(ListType::Map(keys)) => keys,
        _ => Vec::new(),
    };
    Some(CelNode {
        compiled,
        schema_type,
        properties: children,
        declared,
        items: item_node.map(Box::new),
        additional: additional.map(Box::new),
        map_keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::errors::FieldErrorKind::{self, *};
    use serde_json::json;

    fn run(
        schema: &Value,
        object: &Value,
        old: Option<&Value>,
    ) -> Vec<(String, FieldErrorKind, String)> {
        let rules = CelRules::new(schema, RootContext::default());
        let mut errors = rules.compile_errors().to_vec();
        rules.evaluate(object, old, &mut errors);
        errors.into_iter().map(|e| (e.field, e.kind, e.message)).collect()
    }

    #[test]
    fn rule_paths_join_like_the_api_server() {
        assert_eq!(rule_field("spec", ""), "spec");
        assert_eq!(rule_field("spec", ".x"), "spec.x");
        assert_eq!(rule_field("", ".spec.x"), "spec.x");
        assert_eq!(rule_field("spec", "x"), "spec.x");
    }

    #[test]
    fn map_list_items_correlate_by_key() {
        let schema = json!({"type": "object", "properties": {"nodes": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "size": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "size is immutable"}]}
            }}
        }}});
        let old = json!({"nodes": [{"name": "a", "size": 1}, {"name": "b", "size": 2}]});
        // Reordered but unchanged: no error (index correlation would report two).
        let reordered = json!({"nodes": [{"name": "b", "size": 2}, {"name": "a", "size": 1}, {"name": "c", "size": 9}]});
        assert_eq!(run(&schema, &reordered, Some(&old)), vec![]);
        let changed = json!({"nodes": [{"name": "b", "size": 3}]});
        assert_eq!(
            run(&schema, &changed, Some(&old)),
            vec![(
                "nodes[0].size".to_string(),
                Invalid,
                r#"Invalid value: "integer": size is immutable"#.to_string()
            )]
        );
    }

    #[test]
    fn atomic_lists_do_not_correlate() {
        let schema = json!({"type": "object", "properties": {"l": {"type": "array", "items": {
            "type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}});
        assert_eq!(run(&schema, &json!({"l": [2]}), Some(&json!({"l": [1]}))), vec![]);
    }

    #[test]
    fn reasons_pick_the_cause() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "has(self.a)", "message": "a is required", "reason": "FieldValueRequired", "fieldPath": ".a"},
            {"rule": "false", "message": "never", "reason": "FieldValueForbidden"},
            {"rule": "false", "reason": "FieldValueDuplicate"}
        ]}}});
        assert_eq!(
            run(&schema, &json!({"spec": {}}), None),
            vec![
                ("spec.a".to_string(), Required, "Required value: a is required".to_string()),
                ("spec".to_string(), Forbidden, "Forbidden: never".to_string()),
                ("spec".to_string(), Duplicate, r#"Duplicate value: "object""#.to_string()),
            ]
        );
    }

    #[test]
    fn broken_rules_fail_closed() {
        let schema = json!({"type": "object", "properties": {"opt": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self >="}]}}});
        let errors = run(&schema, &json!({}), None);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, "opt");
        assert_eq!(errors[0].1, Invalid);
        assert!(errors[0].2.contains("rule compile error"), "{}", errors[0].2);
        // Present value: still one error, not two.
        assert_eq!(run(&schema, &json!({"opt": "x"}), None).len(), 1);
    }

    #[test]
    fn evaluation_errors_fail_closed() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.missing > 0"}]}}});
        let errors = run(&schema, &json!({"spec": {}}), None);
        assert_eq!(errors.len(), 1);
        assert_eq!((errors[0].0.as_str(), errors[0].1), ("spec", Invalid));
    }
}
