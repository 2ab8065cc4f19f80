//! A schema node with the keywords it has found in one pass over its keys. Validation asks every
//! node of every object for about a dozen keywords, most of them absent (a typical node has
//! `type` and `description`); looking each one up in the node's map costs more than one pass
//! over its few keys that keeps each keyword's value where asking for it finds it.

use serde_json::{Map, Value};

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
            const ALL: [Keyword; [$(Keyword::$keyword),*].len()] = [$(Keyword::$keyword),*];

            /// The keyword as the schema spells it.
            #[cfg(test)]
            fn name(self) -> &'static str {
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

/// A schema node and the values of the [`Keyword`]s it has, found in one pass over its keys:
/// asking for one is then an index into an array, where looking it up in the node's map would
/// search its keys again for every value validated.
pub(crate) struct Node<'a> {
    schema: &'a Value,
    keywords: [Option<&'a Value>; Keyword::ALL.len()],
}

impl<'a> Node<'a> {
    /// Finds `schema`'s keywords (none when it is not an object).
    pub(crate) fn new(schema: &'a Value) -> Self {
        let mut keywords = [None; Keyword::ALL.len()];
        for (key, value) in schema.as_object().into_iter().flatten() {
            if let Some(keyword) = Keyword::named(key) {
                keywords[keyword as usize] = Some(value);
            }
        }
        Self { schema, keywords }
    }

    /// The node as JSON.
    pub(crate) fn value(&self) -> &'a Value {
        self.schema
    }

    /// The keyword's value, if the node has it.
    pub(crate) fn get(&self, keyword: Keyword) -> Option<&'a Value> {
        self.keywords[keyword as usize]
    }

    /// Whether a boolean keyword is `true`.
    pub(crate) fn flag(&self, keyword: Keyword) -> bool {
        self.get(keyword).and_then(Value::as_bool) == Some(true)
    }

    /// `type`, unless absent or empty.
    pub(crate) fn type_name(&self) -> Option<&'a str> {
        self.get(Keyword::Type).and_then(Value::as_str).filter(|t| !t.is_empty())
    }

    /// `properties`.
    pub(crate) fn properties(&self) -> Option<&'a Map<String, Value>> {
        self.get(Keyword::Properties).and_then(Value::as_object)
    }

    /// `items`, in its single-schema form.
    pub(crate) fn items(&self) -> Option<&'a Value> {
        self.get(Keyword::Items).filter(|i| i.is_object())
    }

    /// `additionalProperties` when it is a schema.
    pub(crate) fn additional(&self) -> Option<&'a Value> {
        self.get(Keyword::AdditionalProperties).filter(|a| a.is_object())
    }

    /// The branches of `allOf`, `anyOf` or `oneOf`.
    pub(crate) fn branches(&self, junctor: Keyword) -> &'a [Value] {
        self.get(junctor).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
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
