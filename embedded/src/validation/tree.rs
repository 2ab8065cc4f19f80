//! A CRD version's schema compiled once into a tree for the walks that run on every write of
//! its objects, pruning, defaulting and value validation: the keywords they read at each node
//! are resolved into fields, so that walking an object looks up only its own field names. Read
//! from the schema as JSON, each keyword was a search through the node's keys for every value
//! visited.

use std::collections::BTreeMap;

use serde_json::Value;

use super::SchemaError;
use super::checks::{Checks, Patterns};
use super::prune::Structure;
use super::schema::{branches, flag};

/// One node of a schema, with what pruning, defaulting and value validation read of it.
#[derive(Debug, Default)]
pub(crate) struct SchemaTree {
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub(crate) preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub(crate) embedded: bool,
    /// `nullable: true`.
    pub(crate) nullable: bool,
    /// `default`.
    pub(crate) default: Option<Value>,
    /// Whether some property has a `default`, so that a missing field may be filled in.
    pub(crate) defaults_properties: bool,
    /// `properties`.
    pub(crate) properties: BTreeMap<String, SchemaTree>,
    /// `items`, when it is a schema.
    pub(crate) items: Option<Box<SchemaTree>>,
    /// `additionalProperties`.
    pub(crate) additional: Additional,
    /// The value validations of the node itself.
    pub(crate) checks: Checks,
    /// `allOf`, `anyOf`, `oneOf` and `not`, boxed because most nodes have none.
    pub(crate) junctors: Option<Box<Junctors>>,
}

/// The branches of a node's `allOf`, `anyOf`, `oneOf` and its `not`.
#[derive(Debug)]
pub(crate) struct Junctors {
    pub(crate) all_of: Vec<SchemaTree>,
    pub(crate) any_of: Vec<SchemaTree>,
    pub(crate) one_of: Vec<SchemaTree>,
    pub(crate) not: Option<SchemaTree>,
}

/// What `additionalProperties` says of keys `properties` does not name.
#[derive(Debug, Default)]
pub(crate) enum Additional {
    /// Absent or `false`: they are unknown.
    #[default]
    Unknown,
    /// `true`: any key and value.
    Any,
    /// A schema every such value follows.
    Schema(Box<SchemaTree>),
}

impl SchemaTree {
    /// Compiles `schema` (a version's `openAPIV3Schema` as JSON) and every node below it,
    /// reading the structural keywords as pruning by the JSON schema does; fails on the first
    /// `pattern` that is not a valid regular expression.
    pub(crate) fn new(schema: &Value) -> Result<Self, SchemaError> {
        Self::compile(schema, "openAPIV3Schema", &mut Patterns::new())
    }

    /// Compiles the node at `path` (which names it in an invalid pattern's error).
    fn compile(schema: &Value, path: &str, patterns: &mut Patterns) -> Result<Self, SchemaError> {
        let checks = Checks::new(schema, path, patterns)?;
        let mut properties = BTreeMap::new();
        for (name, s) in Structure::properties(schema).into_iter().flatten() {
            let node = Self::compile(s, &format!("{path}.properties[{name}]"), patterns)?;
            properties.insert(name.clone(), node);
        }
        let items = match Structure::items(schema) {
            Some(s) => Some(Box::new(Self::compile(s, &format!("{path}.items"), patterns)?)),
            None => None,
        };
        let additional = match (schema.additional(), schema.any_additional()) {
            (Some(s), _) => Additional::Schema(Box::new(Self::compile(
                s,
                &format!("{path}.additionalProperties"),
                patterns,
            )?)),
            (None, true) => Additional::Any,
            (None, false) => Additional::Unknown,
        };
        Ok(Self {
            preserve_unknown: schema.preserve_unknown(),
            embedded: schema.embedded(),
            nullable: flag(schema, "nullable"),
            default: schema.get("default").cloned(),
            defaults_properties: properties.values().any(|p| p.default.is_some()),
            properties,
            items,
            additional,
            checks,
            junctors: Junctors::new(schema, path, patterns)?,
        })
    }

    /// The node at `path` below this one: field names (or map keys) and `*` for list items.
    pub(crate) fn at(&self, path: &[&str]) -> Option<&SchemaTree> {
        path.iter().try_fold(self, |node, step| match *step {
            "*" => node.items.as_deref(),
            name => node.properties.get(name).or(node.additional_schema()),
        })
    }

    /// The schema of `additionalProperties`, when it is one.
    pub(crate) fn additional_schema(&self) -> Option<&SchemaTree> {
        match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        }
    }
}

impl Junctors {
    /// The node's junctors compiled, `None` when it has none.
    fn new(
        schema: &Value,
        path: &str,
        patterns: &mut Patterns,
    ) -> Result<Option<Box<Self>>, SchemaError> {
        let mut compile_all = |junctor: &str| -> Result<Vec<SchemaTree>, SchemaError> {
            let branches = branches(schema, junctor).iter().enumerate();
            branches
                .map(|(i, b)| SchemaTree::compile(b, &format!("{path}.{junctor}[{i}]"), patterns))
                .collect()
        };
        let all_of = compile_all("allOf")?;
        let any_of = compile_all("anyOf")?;
        let one_of = compile_all("oneOf")?;
        let not = match schema.get("not").filter(|n| n.is_object()) {
            Some(n) => Some(SchemaTree::compile(n, &format!("{path}.not"), patterns)?),
            None => None,
        };
        let none = all_of.is_empty() && any_of.is_empty() && one_of.is_empty() && not.is_none();
        Ok((!none).then(|| Box::new(Self { all_of, any_of, one_of, not })))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keywords_are_read_into_the_tree() {
        let tree = SchemaTree::new(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "nullable": true, "properties": {
                    "mode": {"type": "string", "default": "Fast"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                }},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "any": {"type": "object", "additionalProperties": true},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "closed": {"type": "object", "additionalProperties": false},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true},
                "either": {"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "integer"}]}
            }
        }))
        .unwrap();
        let spec = &tree.properties["spec"];
        assert!(spec.nullable && spec.defaults_properties && !tree.defaults_properties);
        assert_eq!(spec.properties["mode"].default, Some(json!("Fast")));
        assert!(spec.properties["tags"].items.is_some());
        assert!(tree.properties["free"].preserve_unknown);
        assert!(matches!(tree.properties["any"].additional, Additional::Any));
        assert!(tree.properties["env"].additional_schema().is_some());
        assert!(matches!(tree.properties["closed"].additional, Additional::Unknown));
        assert!(tree.properties["template"].embedded);
        assert!(tree.at(&["spec", "tags", "*"]).is_some_and(|n| n.items.is_none()));
        assert!(tree.at(&["env", "any-key"]).is_some_and(|n| n.properties.is_empty()));
        assert!(tree.at(&["spec", "unknown"]).is_none());
        let either = tree.properties["either"].junctors.as_ref().unwrap();
        assert_eq!(either.any_of.len(), 2);
        assert!(either.any_of[0].checks.pattern.is_some() && either.not.is_none());
        assert!(tree.properties["spec"].junctors.is_none());
    }

    #[test]
    fn an_invalid_pattern_is_named_by_its_place_in_the_schema() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {
            "anyOf": [{"type": "string"}, {"type": "string", "pattern": "("}]
        }}}});
        let err = SchemaTree::new(&schema).unwrap_err();
        assert!(matches!(err, SchemaError::InvalidPattern { ref path, .. }
            if path == "openAPIV3Schema.properties[a].items.anyOf[1].pattern"));
    }
}
