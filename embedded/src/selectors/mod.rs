//! Label and field selectors (`?labelSelector=`, `?fieldSelector=`).
//!
//! Label selectors follow apimachinery's `labels.Parse` (`a=b`, `a==b`,
//! `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`; comma = AND);
//! field selectors follow `fields.ParseSelector` (`f=v`, `f==v`, `f!=v`, comma =
//! AND, `\,` `\=` `\\` escapes). A missing field compares as `""`, as upstream.

use serde_json::Value;

mod label;
mod parse;
#[cfg(test)]
mod tests;

pub use label::{LabelSelector, Operator, Requirement};
pub(crate) use parse::{validate_label_key, validate_label_value};

/// Why a selector was rejected (the server answers 400 BadRequest).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// Malformed selector text or object.
    #[error("{0}")]
    Syntax(String),
    /// A label key that is not a valid qualified name.
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The offending key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A label value that is not valid.
    #[error("invalid label value {value:?}: {reason}")]
    InvalidValue {
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A malformed field-selector term.
    #[error("invalid selector: {selector:?}; can't understand {term:?}")]
    Field {
        /// The whole selector.
        selector: String,
        /// The term that failed.
        term: String,
    },
}

/// Operator of a field-selector term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `f=v` or `f==v`
    Equals,
    /// `f!=v`
    NotEquals,
}

/// One term of a [`FieldSelector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted field path, e.g. `metadata.name`.
    pub field: String,
    /// Operator.
    pub operator: FieldOperator,
    /// Unescaped value.
    pub value: String,
}

/// A parsed field selector: the AND of its terms. Empty selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `f=v,g!=w` (whitespace around names and values is ignored).
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let error =
            |term: &str| SelectorError::Field { selector: input.to_owned(), term: term.to_owned() };
        let mut requirements = Vec::new();
        for term in split_unescaped_commas(input) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (field, operator, value) = split_term(term).ok_or_else(|| error(term))?;
            let field = field.trim();
            if field.is_empty() {
                return Err(error(term));
            }
            let value = unescape(value.trim()).ok_or_else(|| error(term))?;
            requirements.push(FieldRequirement { field: field.to_owned(), operator, value });
        }
        Ok(FieldSelector { requirements })
    }

    /// The fields used, so the server can refuse unsupported ones.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// The terms.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector has no term.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value `field` must equal, if a `field=value` term exists
    /// (e.g. kubectl's `metadata.name=w1`).
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether `object` satisfies every term; `get` resolves a field (see
    /// [`field_value`]); `None` compares as the empty string.
    pub fn matches(&self, object: &Value, get: impl Fn(&Value, &str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(object, &r.field).unwrap_or_default();
            match r.operator {
                FieldOperator::Equals => have == r.value,
                FieldOperator::NotEquals => have != r.value,
            }
        })
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

fn split_unescaped_commas(input: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&input[start..]);
    parts
}

fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

/// `\\`, `\,`, `\=` escapes; an unescaped `,` or `=` or another escape is invalid.
fn unescape(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                _ => return None,
            },
            ',' | '=' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// Default field getter: resolves a dotted path (`metadata.name`,
/// `spec.nodeName`, `involvedObject.uid`, `status.phase`, ...) to its scalar
/// value as a string (arrays of scalars are joined with `,`).
///
/// A Job's `status.successful` is its `status.succeeded`, and a Node's `spec.unschedulable` is
/// `false` when unset, as upstream's field sets give them.
///
/// Events are one kind seen through two APIs, so on `kind: Event` objects
/// `involvedObject.*` and `regarding.*`, and `reportingComponent` and
/// `reportingController`, resolve to each other, and `source` is
/// `source.component` (or `deprecatedSource.component`).
pub fn field_value(object: &Value, field: &str) -> Option<String> {
    // Fields upstream's field sets name their own way, or give Go's zero value when unset.
    match field {
        "status.successful" => {
            return Some(lookup(object, "status.succeeded").unwrap_or_else(|| "0".into()));
        }
        "spec.unschedulable" => {
            return Some(lookup(object, field).unwrap_or_else(|| "false".into()));
        }
        _ => {}
    }
    let is_event = object.get("kind").and_then(Value::as_str) == Some("Event");
    if is_event && field == "source" {
        return lookup(object, "source.component")
            .or_else(|| lookup(object, "deprecatedSource.component"));
    }
    if let Some(value) = lookup(object, field) {
        return Some(value);
    }
    if !is_event {
        return None;
    }
    let alias = if let Some(rest) = field.strip_prefix("involvedObject.") {
        format!("regarding.{rest}")
    } else if let Some(rest) = field.strip_prefix("regarding.") {
        format!("involvedObject.{rest}")
    } else {
        match field {
            "reportingComponent" => "reportingController",
            "reportingController" => "reportingComponent",
            _ => return None,
        }
        .to_owned()
    };
    lookup(object, &alias)
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn lookup(object: &Value, path: &str) -> Option<String> {
    let value = path.split('.').try_fold(object, |v, segment| v.get(segment))?;
    match value {
        Value::Array(items) => {
            let parts: Option<Vec<String>> = items.iter().map(scalar).collect();
            parts.map(|p| p.join(","))
        }
        other => scalar(other),
    }
}
