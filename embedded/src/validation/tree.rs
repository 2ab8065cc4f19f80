//! A CRD version's schema compiled once into a tree for the walks that run on every write of
//! its objects, pruning and defaulting: the keywords they read at each node are resolved into
//! fields, so that walking an object looks up only its own field names. Read from the schema as
//! JSON, each keyword was a search through the node's keys for every value visited.

use std::collections::BTreeMap;

use serde_json::Value;

use super::prune::Structure;
use super::schema::flag;

/// One node of a structural schema, with what pruning and defaulting read of it.
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
    /// Compiles `schema` (a node of an OpenAPI v3 schema as JSON) and every node below it,
    /// reading the keywords as pruning by the JSON schema does.
    pub(crate) fn new(schema: &Value) -> Self {
        let properties: BTreeMap<String, SchemaTree> = Structure::properties(schema)
            .map(|p| p.iter().map(|(name, s)| (name.clone(), Self::new(s))).collect())
            .unwrap_or_default();
        let additional = match (schema.additional(), schema.any_additional()) {
            (Some(s), _) => Additional::Schema(Box::new(Self::new(s))),
            (None, true) => Additional::Any,
            (None, false) => Additional::Unknown,
        };
        Self {
            preserve_unknown: schema.preserve_unknown(),
            embedded: schema.embedded(),
            nullable: flag(schema, "nullable"),
            default: schema.get("default").cloned(),
            defaults_properties: properties.values().any(|p| p.default.is_some()),
            properties,
            items: Structure::items(schema).map(|s| Box::new(Self::new(s))),
            additional,
        }
    }

    /// The schema of `additionalProperties`, when it is one.
    pub(crate) fn additional_schema(&self) -> Option<&SchemaTree> {
        match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        }
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
                "template": {"type": "object", "x-kubernetes-embedded-resource": true}
            }
        }));
        let spec = &tree.properties["spec"];
        assert!(spec.nullable && spec.defaults_properties && !tree.defaults_properties);
        assert_eq!(spec.properties["mode"].default, Some(json!("Fast")));
        assert!(spec.properties["tags"].items.is_some());
        assert!(tree.properties["free"].preserve_unknown);
        assert!(matches!(tree.properties["any"].additional, Additional::Any));
        assert!(tree.properties["env"].additional_schema().is_some());
        assert!(matches!(tree.properties["closed"].additional, Additional::Unknown));
        assert!(tree.properties["template"].embedded);
    }
}
