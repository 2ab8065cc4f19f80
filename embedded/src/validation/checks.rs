//! The value validations of one schema node, read from the schema when a CRD version's
//! validator is built: `type`, `enum`, `format`, lengths, `pattern`, item and property counts,
//! numeric bounds, `required` and the list type. Validating a value then reads fields; read
//! from the schema as JSON, every value visited cost a pass over its node's keys.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use super::SchemaError;
use super::list_type::ListType;
use super::schema::{flag, type_of};

/// What one schema node checks of a value (not its children: they are the tree's).
#[derive(Debug, Default)]
pub(crate) struct Checks {
    /// `type` or `x-kubernetes-int-or-string`.
    pub(crate) expected: Option<Expected>,
    /// `enum`, when it has values.
    pub(crate) allowed: Vec<Value>,
    /// `format`.
    pub(crate) format: Option<String>,
    /// `pattern`, compiled.
    pub(crate) pattern: Option<Pattern>,
    /// `required`.
    pub(crate) required: Vec<String>,
    /// `x-kubernetes-list-type` with its keys.
    pub(crate) list_type: Option<ListType>,
    /// The numeric keywords, boxed because most nodes have none.
    pub(crate) limits: Option<Box<Limits>>,
}

/// The type a value must have, as `type` (or `x-kubernetes-int-or-string`) names it.
#[derive(Debug)]
pub(crate) struct Expected {
    /// The name messages give: the `type` as written, or `integer,string`.
    pub(crate) name: String,
    accepts: Accepts,
}

#[derive(Debug, Clone, Copy)]
enum Accepts {
    Object,
    Array,
    String,
    Boolean,
    Integer,
    Number,
    IntOrString,
    /// A `type` this validator does not know: any value.
    Any,
}

impl Expected {
    fn of(schema: &Value) -> Option<Self> {
        if flag(schema, "x-kubernetes-int-or-string") {
            return Some(Self { name: "integer,string".to_owned(), accepts: Accepts::IntOrString });
        }
        let name = type_of(schema)?;
        let accepts = match name {
            "object" => Accepts::Object,
            "array" => Accepts::Array,
            "string" => Accepts::String,
            "boolean" => Accepts::Boolean,
            "integer" => Accepts::Integer,
            "number" => Accepts::Number,
            _ => Accepts::Any,
        };
        Some(Self { name: name.to_owned(), accepts })
    }

    /// Whether `value` has the type.
    pub(crate) fn accepts(&self, value: &Value) -> bool {
        match self.accepts {
            Accepts::Object => value.is_object(),
            Accepts::Array => value.is_array(),
            Accepts::String => value.is_string(),
            Accepts::Boolean => value.is_boolean(),
            Accepts::Integer => is_integer(value),
            Accepts::Number => value.is_number(),
            Accepts::IntOrString => is_integer(value) || value.is_string(),
            Accepts::Any => true,
        }
    }
}

/// An integer, or a float without a fractional part.
fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A `pattern` with its regular expression.
#[derive(Debug)]
pub(crate) struct Pattern {
    /// The pattern as written, for messages.
    pub(crate) text: String,
    /// The pattern compiled.
    pub(crate) regex: Regex,
}

/// Regular expressions already compiled for a schema, by pattern: a pattern used by many
/// fields (a DNS label, say) is compiled once and its program shared.
pub(crate) type Patterns = HashMap<String, Regex>;

/// `minimum` or `maximum`, with its `exclusive…` flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bound {
    pub(crate) value: f64,
    pub(crate) exclusive: bool,
}

/// `multipleOf`, positive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MultipleOf {
    pub(crate) factor: f64,
    /// The factor when the schema wrote an integer: integers are checked exactly.
    pub(crate) integer: Option<i64>,
}

/// The numeric keywords of a node, each named after its keyword.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Limits {
    pub(crate) max_length: Option<u64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) minimum: Option<Bound>,
    pub(crate) maximum: Option<Bound>,
    pub(crate) multiple_of: Option<MultipleOf>,
}

impl Limits {
    fn of(schema: &Value) -> Option<Box<Self>> {
        let count = |key| schema.get(key).and_then(Value::as_u64);
        let bound = |key, exclusive| {
            let value = schema.get(key).and_then(Value::as_f64)?;
            Some(Bound { value, exclusive: flag(schema, exclusive) })
        };
        let multiple_of = schema.get("multipleOf").and_then(|m| {
            let factor = m.as_f64().filter(|f| *f > 0.0)?;
            Some(MultipleOf { factor, integer: m.as_i64().filter(|i| *i > 0) })
        });
        let limits = Self {
            max_length: count("maxLength"),
            min_length: count("minLength"),
            max_items: count("maxItems"),
            min_items: count("minItems"),
            max_properties: count("maxProperties"),
            min_properties: count("minProperties"),
            minimum: bound("minimum", "exclusiveMinimum"),
            maximum: bound("maximum", "exclusiveMaximum"),
            multiple_of,
        };
        (limits != Self::default()).then(|| Box::new(limits))
    }
}

impl Checks {
    /// Reads `schema`'s checks; `path` names the node in an invalid pattern's error.
    pub(crate) fn new(
        schema: &Value,
        path: &str,
        patterns: &mut Patterns,
    ) -> Result<Self, SchemaError> {
        let pattern = match schema.get("pattern").and_then(Value::as_str) {
            Some(text) => {
                Some(Pattern { text: text.to_owned(), regex: compile(text, path, patterns)? })
            }
            None => None,
        };
        let strings = |key| -> Vec<String> {
            let list = schema.get(key).and_then(Value::as_array).into_iter().flatten();
            list.filter_map(Value::as_str).map(str::to_owned).collect()
        };
        Ok(Self {
            expected: Expected::of(schema),
            allowed: schema.get("enum").and_then(Value::as_array).cloned().unwrap_or_default(),
            format: schema.get("format").and_then(Value::as_str).map(str::to_owned),
            pattern,
            required: strings("required"),
            list_type: ListType::of(schema),
            limits: Limits::of(schema),
        })
    }
}

fn compile(pattern: &str, path: &str, patterns: &mut Patterns) -> Result<Regex, SchemaError> {
    if let Some(regex) = patterns.get(pattern) {
        return Ok(regex.clone());
    }
    let regex = Regex::new(pattern).map_err(|e| SchemaError::InvalidPattern {
        path: format!("{path}.pattern"),
        pattern: pattern.to_owned(),
        message: e.to_string(),
    })?;
    patterns.insert(pattern.to_owned(), regex.clone());
    Ok(regex)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checks(schema: Value) -> Checks {
        Checks::new(&schema, "openAPIV3Schema", &mut Patterns::new()).unwrap()
    }

    #[test]
    fn keywords_are_read_as_validation_asks_for_them() {
        let c = checks(json!({
            "type": "string", "maxLength": 3, "pattern": "^a", "enum": ["a", "ab"],
            "format": "byte", "required": ["x", 3], "description": "not a check"
        }));
        let expected = c.expected.as_ref().unwrap();
        assert_eq!(expected.name, "string");
        assert!(expected.accepts(&json!("s")) && !expected.accepts(&json!(1)));
        assert_eq!(c.limits.as_ref().unwrap().max_length, Some(3));
        assert_eq!(c.pattern.as_ref().unwrap().text, "^a");
        assert_eq!(c.allowed, [json!("a"), json!("ab")]);
        assert_eq!(c.format.as_deref(), Some("byte"));
        assert_eq!(c.required, ["x"]);

        let c = checks(json!({"type": "integer", "x-kubernetes-int-or-string": true}));
        assert_eq!(c.expected.as_ref().unwrap().name, "integer,string");
        assert!(c.expected.as_ref().unwrap().accepts(&json!("http")));
        assert!(checks(json!({"type": ""})).expected.is_none());
        assert!(checks(json!({"type": "whatever"})).expected.unwrap().accepts(&json!([])));

        let c = checks(json!({"minimum": 0, "exclusiveMinimum": true, "multipleOf": 5}));
        let limits = c.limits.unwrap();
        assert!(limits.minimum.unwrap().exclusive && limits.maximum.is_none());
        assert_eq!(limits.multiple_of.unwrap().integer, Some(5));
        assert!(checks(json!({"multipleOf": 0})).limits.is_none(), "a zero factor checks nothing");
        assert!(checks(json!({"type": "object"})).limits.is_none());
    }

    #[test]
    fn a_pattern_is_compiled_once_per_schema() {
        let mut patterns = Patterns::new();
        for path in ["a", "b"] {
            Checks::new(&json!({"pattern": "^x+$"}), path, &mut patterns).unwrap();
        }
        assert_eq!(patterns.len(), 1);
        let err = Checks::new(&json!({"pattern": "("}), "root.properties[a]", &mut patterns);
        assert!(matches!(
            err,
            Err(SchemaError::InvalidPattern { ref path, .. }) if path == "root.properties[a].pattern"
        ));
    }
}
