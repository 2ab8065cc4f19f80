//! A schema node with the keywords it has found in one pass over its keys. Validation asks every
//! node of every object for about a dozen keywords, most of them absent (a typical node has
//! `type` and `description`); looking each one up in the node's map costs more than one pass
//! over its few keys and a bit test per question.

use serde_json::{Map, Value};

use super::schema;

/// The keywords validation asks a node for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keyword {
    Nullable,
    IntOrString,
    Type,
    Enum,
    Format,
    MaxLength,
    MinLength,
    Pattern,
    MaxItems,
    MinItems,
    Items,
    MaxProperties,
    MinProperties,
    Required,
    Properties,
    AdditionalProperties,
    EmbeddedResource,
    AllOf,
    AnyOf,
    OneOf,
    Not,
    Minimum,
    Maximum,
    ExclusiveMinimum,
    ExclusiveMaximum,
    MultipleOf,
}

impl Keyword {
    /// Every keyword.
    const ALL: [Keyword; 26] = [
        Keyword::Nullable,
        Keyword::IntOrString,
        Keyword::Type,
        Keyword::Enum,
        Keyword::Format,
        Keyword::MaxLength,
        Keyword::MinLength,
        Keyword::Pattern,
        Keyword::MaxItems,
        Keyword::MinItems,
        Keyword::Items,
        Keyword::MaxProperties,
        Keyword::MinProperties,
        Keyword::Required,
        Keyword::Properties,
        Keyword::AdditionalProperties,
        Keyword::EmbeddedResource,
        Keyword::AllOf,
        Keyword::AnyOf,
        Keyword::OneOf,
        Keyword::Not,
        Keyword::Minimum,
        Keyword::Maximum,
        Keyword::ExclusiveMinimum,
        Keyword::ExclusiveMaximum,
        Keyword::MultipleOf,
    ];

    /// The keyword as the schema spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Keyword::Nullable => "nullable",
            Keyword::IntOrString => "x-kubernetes-int-or-string",
            Keyword::Type => "type",
            Keyword::Enum => "enum",
            Keyword::Format => "format",
            Keyword::MaxLength => "maxLength",
            Keyword::MinLength => "minLength",
            Keyword::Pattern => "pattern",
            Keyword::MaxItems => "maxItems",
            Keyword::MinItems => "minItems",
            Keyword::Items => "items",
            Keyword::MaxProperties => "maxProperties",
            Keyword::MinProperties => "minProperties",
            Keyword::Required => "required",
            Keyword::Properties => "properties",
            Keyword::AdditionalProperties => "additionalProperties",
            Keyword::EmbeddedResource => "x-kubernetes-embedded-resource",
            Keyword::AllOf => "allOf",
            Keyword::AnyOf => "anyOf",
            Keyword::OneOf => "oneOf",
            Keyword::Not => "not",
            Keyword::Minimum => "minimum",
            Keyword::Maximum => "maximum",
            Keyword::ExclusiveMinimum => "exclusiveMinimum",
            Keyword::ExclusiveMaximum => "exclusiveMaximum",
            Keyword::MultipleOf => "multipleOf",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A schema node and the set of [`Keyword`]s it has.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    schema: &'a Value,
    present: u32,
}

impl<'a> Node<'a> {
    /// Finds `schema`'s keywords (none when it is not an object).
    pub(crate) fn new(schema: &'a Value) -> Self {
        let present = schema.as_object().map_or(0, |fields| {
            fields
                .keys()
                .filter_map(|k| Keyword::ALL.iter().find(|w| w.name() == k))
                .fold(0, |bits, keyword| bits | keyword.bit())
        });
        Self { schema, present }
    }

    /// The node as JSON.
    pub(crate) fn value(self) -> &'a Value {
        self.schema
    }

    fn has(self, keyword: Keyword) -> bool {
        self.present & keyword.bit() != 0
    }

    /// The keyword's value, if the node has it.
    pub(crate) fn get(self, keyword: Keyword) -> Option<&'a Value> {
        self.has(keyword).then(|| self.schema.get(keyword.name())).flatten()
    }

    /// Whether a boolean keyword is `true`.
    pub(crate) fn flag(self, keyword: Keyword) -> bool {
        self.has(keyword) && schema::flag(self.schema, keyword.name())
    }

    /// `type`, unless absent or empty.
    pub(crate) fn type_name(self) -> Option<&'a str> {
        self.has(Keyword::Type).then(|| schema::type_of(self.schema)).flatten()
    }

    /// `properties`.
    pub(crate) fn properties(self) -> Option<&'a Map<String, Value>> {
        self.has(Keyword::Properties).then(|| schema::properties(self.schema)).flatten()
    }

    /// `items`, in its single-schema form.
    pub(crate) fn items(self) -> Option<&'a Value> {
        self.has(Keyword::Items).then(|| schema::items(self.schema)).flatten()
    }

    /// `additionalProperties` when it is a schema.
    pub(crate) fn additional(self) -> Option<&'a Value> {
        let has = self.has(Keyword::AdditionalProperties);
        has.then(|| schema::additional_schema(self.schema)).flatten()
    }

    /// The branches of `allOf`, `anyOf` or `oneOf`.
    pub(crate) fn branches(self, junctor: Keyword) -> &'a [Value] {
        if self.has(junctor) { schema::branches(self.schema, junctor.name()) } else { &[] }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Keyword, Node};

    #[test]
    fn a_node_answers_for_the_keywords_it_has_and_only_those() {
        let schema = json!({
            "type": "string", "maxLength": 3, "x-kubernetes-int-or-string": true,
            "description": "not a keyword the walk asks for", "nullable": false
        });
        let node = Node::new(&schema);
        assert_eq!(node.type_name(), Some("string"));
        assert_eq!(node.get(Keyword::MaxLength), Some(&json!(3)));
        assert!(node.flag(Keyword::IntOrString));
        assert!(!node.flag(Keyword::Nullable));
        assert_eq!(node.get(Keyword::MinLength), None);
        assert!(node.branches(Keyword::AnyOf).is_empty());
        assert_eq!(Node::new(&json!(true)).get(Keyword::Type), None);
        for keyword in Keyword::ALL {
            let schema = json!({ keyword.name(): 1 });
            assert_eq!(Node::new(&schema).get(keyword), Some(&json!(1)), "{keyword:?}");
        }
    }
}
