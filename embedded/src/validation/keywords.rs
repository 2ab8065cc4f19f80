//! A schema node with the keywords it has found in one pass over its keys. Validation asks every
//! node of every object for about a dozen keywords, most of them absent (a typical node has
//! `type` and `description`); looking each one up in the node's map costs more than one pass
//! over its few keys and a bit test per question.

use serde_json::{Map, Value};

use super::schema;

/// The keywords validation asks a node for, with their names as schemas spell them: one list
/// makes the enum and both directions between a keyword and its name.
macro_rules! keywords {
    ($($keyword:ident = $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Keyword {
            $($keyword,)*
        }

        impl Keyword {
            /// Every keyword.
            #[cfg(test)]
            const ALL: [Keyword; [$(Keyword::$keyword),*].len()] = [$(Keyword::$keyword),*];

            /// The keyword as the schema spells it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Keyword::$keyword => $name,)*
                }
            }

            /// The keyword a schema key spells, if validation asks for it (a `match` on the
            /// text, which compiles to a few length and byte comparisons).
            fn named(key: &str) -> Option<Keyword> {
                match key {
                    $($name => Some(Keyword::$keyword),)*
                    _ => None,
                }
            }
        }
    };
}

keywords! {
    Nullable = "nullable",
    IntOrString = "x-kubernetes-int-or-string",
    Type = "type",
    Enum = "enum",
    Format = "format",
    MaxLength = "maxLength",
    MinLength = "minLength",
    Pattern = "pattern",
    MaxItems = "maxItems",
    MinItems = "minItems",
    Items = "items",
    MaxProperties = "maxProperties",
    MinProperties = "minProperties",
    Required = "required",
    Properties = "properties",
    AdditionalProperties = "additionalProperties",
    EmbeddedResource = "x-kubernetes-embedded-resource",
    AllOf = "allOf",
    AnyOf = "anyOf",
    OneOf = "oneOf",
    Not = "not",
    Minimum = "minimum",
    Maximum = "maximum",
    ExclusiveMinimum = "exclusiveMinimum",
    ExclusiveMaximum = "exclusiveMaximum",
    MultipleOf = "multipleOf",
}

impl Keyword {
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
                .filter_map(|k| Keyword::named(k))
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
