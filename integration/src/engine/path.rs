//! Field paths into an event's JSON: `patient.gender`, `results[0].test.code`, `results[*].status`.
//!
//! Grammar: a key, then any number of `.key`, `[index]` or `[*]` steps. Keys are any characters
//! except `.`, `[` and `]`. `[*]` (any element of an array) is allowed when reading and removing;
//! setting and renaming need a path naming exactly one place.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

/// A parsed field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

/// One step of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
    Any,
}

/// Why a path could not be parsed or applied. Messages name the path, never event values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path text is malformed.
    #[error("invalid field path `{path}`: {reason}")]
    Syntax {
        /// The path as written.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A step met a value that is not an object (for a key) or an array (for an index).
    #[error("`{at}` is not {expected}")]
    NotContainer {
        /// The path prefix that holds the wrong kind of value.
        at: String,
        /// `an object` or `an array`.
        expected: &'static str,
    },
    /// An index step points past the end of an array.
    #[error("`{at}` has no element {index}")]
    OutOfRange {
        /// The path prefix of the array.
        at: String,
        /// The missing index.
        index: usize,
    },
    /// `[*]` where a single place is required.
    #[error("`{path}` uses `[*]`, which names more than one place")]
    Wildcard {
        /// The path as written.
        path: String,
    },
}

impl PathError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Syntax { .. } => "path_syntax",
            Self::NotContainer { .. } => "path_not_container",
            Self::OutOfRange { .. } => "path_out_of_range",
            Self::Wildcard { .. } => "path_wildcard",
        }
    }
}

impl FromStr for FieldPath {
    type Err = PathError;

    fn from_str(text: &str) -> Result<Self, PathError> {
        let syntax = |reason| PathError::Syntax { path: text.to_owned(), reason };
        let mut steps = Vec::new();
        let mut rest = text;
        let mut expect_key = true;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('[') {
                if steps.is_empty() {
                    return Err(syntax("a path starts with a key"));
                }
                if expect_key {
                    return Err(syntax("expected a key after `.`"));
                }
                let close = after.find(']').ok_or_else(|| syntax("`[` without `]`"))?;
                let inside = &after[..close];
                if inside == "*" {
                    steps.push(Step::Any);
                } else if !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit()) {
                    let index = inside.parse().map_err(|_| syntax("index too large"))?;
                    steps.push(Step::Index(index));
                } else {
                    return Err(syntax("an index is digits or `*`"));
                }
                rest = &after[close + 1..];
                expect_key = false;
            } else if let Some(after) = rest.strip_prefix('.') {
                if steps.is_empty() {
                    return Err(syntax("a path starts with a key"));
                }
                if expect_key {
                    return Err(syntax("empty key"));
                }
                rest = after;
                expect_key = true;
                if rest.is_empty() {
                    return Err(syntax("a path cannot end with `.`"));
                }
            } else {
                if !expect_key {
                    return Err(syntax("expected `.` or `[` after `]`"));
                }
                let end = rest.find(['.', '[', ']']).unwrap_or(rest.len());
                if end == 0 {
                    return Err(syntax("empty key"));
                }
                steps.push(Step::Key(rest[..end].to_owned()));
                rest = &rest[end..];
                expect_key = false;
            }
        }
        if steps.is_empty() {
            return Err(syntax("empty path"));
        }
        Ok(Self { text: text.to_owned(), steps })
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for FieldPath {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl FieldPath {
    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the path contains `[*]`.
    pub fn has_wildcard(&self) -> bool {
        self.steps.contains(&Step::Any)
    }

    /// Every value the path reaches in `root` (none when a step is missing; several with `[*]`).
    pub fn resolve<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                match (step, value) {
                    (Step::Key(key), Value::Object(map)) => next.extend(map.get(key)),
                    (Step::Index(index), Value::Array(items)) => next.extend(items.get(*index)),
                    (Step::Any, Value::Array(items)) => next.extend(items.iter()),
                    _ => {}
                }
            }
            if next.is_empty() {
                return next;
            }
            current = next;
        }
        current
    }

    /// The path text of the first `len` steps, for error messages.
    fn prefix(&self, len: usize) -> String {
        let mut text = String::new();
        for step in &self.steps[..len] {
            match step {
                Step::Key(key) if text.is_empty() => text.push_str(key),
                Step::Key(key) => {
                    text.push('.');
                    text.push_str(key);
                }
                Step::Index(index) => text.push_str(&format!("[{index}]")),
                Step::Any => text.push_str("[*]"),
            }
        }
        if text.is_empty() { "(event)".to_owned() } else { text }
    }

    /// Sets the single place the path names to `value`, creating missing objects on the way.
    /// An index must name an existing array element.
    pub fn set(&self, root: &mut Value, value: Value) -> Result<(), PathError> {
        if self.has_wildcard() {
            return Err(PathError::Wildcard { path: self.text.clone() });
        }
        let (last, parents) = self.steps.split_last().expect("a parsed path has at least one step");
        let mut current = root;
        for (depth, step) in parents.iter().enumerate() {
            let next_is_key = matches!(self.steps[depth + 1], Step::Key(_));
            current = match step {
                Step::Key(key) => {
                    let map = as_object(current, || self.prefix(depth))?;
                    let slot = map.entry(key.clone()).or_insert(Value::Null);
                    if slot.is_null() && next_is_key {
                        *slot = Value::Object(Map::new());
                    }
                    slot
                }
                Step::Index(index) => element(current, *index, || self.prefix(depth))?,
                Step::Any => unreachable!("wildcards were rejected above"),
            };
        }
        let depth = parents.len();
        match last {
            Step::Key(key) => {
                as_object(current, || self.prefix(depth))?.insert(key.clone(), value);
            }
            Step::Index(index) => *element(current, *index, || self.prefix(depth))? = value,
            Step::Any => unreachable!("wildcards were rejected above"),
        }
        Ok(())
    }

    /// Removes every place the path names; returns how many values were removed. Missing places
    /// are not an error.
    pub fn remove(&self, root: &mut Value) -> usize {
        remove_at(root, &self.steps)
    }

    /// Removes and returns the single value the path names (`None` when absent).
    pub fn take(&self, root: &mut Value) -> Result<Option<Value>, PathError> {
        if self.has_wildcard() {
            return Err(PathError::Wildcard { path: self.text.clone() });
        }
        let (last, parents) = self.steps.split_last().expect("a parsed path has at least one step");
        let mut current = root;
        for step in parents {
            let next = match (step, current) {
                (Step::Key(key), Value::Object(map)) => map.get_mut(key),
                (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
                _ => None,
            };
            match next {
                Some(value) => current = value,
                None => return Ok(None),
            }
        }
        Ok(match (last, current) {
            (Step::Key(key), Value::Object(map)) => map.remove(key),
            (Step::Index(index), Value::Array(items)) if *index < items.len() => {
                Some(items.remove(*index))
            }
            _ => None,
        })
    }
}

fn as_object(
    value: &mut Value,
    at: impl FnOnce() -> String,
) -> Result<&mut Map<String, Value>, PathError> {
    if value.is_null() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(PathError::NotContainer { at: at(), expected: "an object" }),
    }
}

fn element(
    value: &mut Value,
    index: usize,
    at: impl FnOnce() -> String,
) -> Result<&mut Value, PathError> {
    match value {
        Value::Array(items) => {
            items.get_mut(index).ok_or_else(|| PathError::OutOfRange { at: at(), index })
        }
        _ => Err(PathError::NotContainer { at: at(), expected: "an array" }),
    }
}

fn remove_at(value: &mut Value, steps: &[Step]) -> usize {
    let Some((first, rest)) = steps.split_first() else { return 0 };
    if rest.is_empty() {
        return match (first, value) {
            (Step::Key(key), Value::Object(map)) => usize::from(map.remove(key).is_some()),
            (Step::Index(index), Value::Array(items)) if *index < items.len() => {
                items.remove(*index);
                1
            }
            (Step::Any, Value::Array(items)) => std::mem::take(items).len(),
            _ => 0,
        };
    }
    match (first, value) {
        (Step::Key(key), Value::Object(map)) => map.get_mut(key).map_or(0, |v| remove_at(v, rest)),
        (Step::Index(index), Value::Array(items)) => {
            items.get_mut(*index).map_or(0, |v| remove_at(v, rest))
        }
        (Step::Any, Value::Array(items)) => items.iter_mut().map(|v| remove_at(v, rest)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(text: &str) -> FieldPath {
        text.parse().unwrap()
    }

    #[test]
    fn parses_keys_indexes_and_wildcards() {
        assert_eq!(path("a.b[2].c[*]").to_string(), "a.b[2].c[*]");
        assert!(path("results[*].status").has_wildcard());
        for bad in ["", ".a", "a.", "a..b", "a.[0]", "a[", "a[x]", "[0]", "a[0]b", "a]"] {
            assert!(bad.parse::<FieldPath>().is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn resolves_nested_values() {
        let event =
            json!({"patient": {"name": {"family": "DOE"}}, "results": [{"s": "F"}, {"s": "P"}]});
        assert_eq!(path("patient.name.family").resolve(&event), vec![&json!("DOE")]);
        assert_eq!(path("results[1].s").resolve(&event), vec![&json!("P")]);
        assert_eq!(path("results[*].s").resolve(&event), vec![&json!("F"), &json!("P")]);
        assert!(path("results[5].s").resolve(&event).is_empty());
        assert!(path("patient.name.family.x").resolve(&event).is_empty());
    }

    #[test]
    fn sets_creating_objects() {
        let mut event = json!({"a": 1, "list": [{}]});
        path("meta.route").set(&mut event, json!("admit")).unwrap();
        path("list[0].x").set(&mut event, json!(true)).unwrap();
        assert_eq!(event, json!({"a": 1, "list": [{"x": true}], "meta": {"route": "admit"}}));
        assert!(matches!(
            path("a.b").set(&mut event, json!(1)),
            Err(PathError::NotContainer { .. })
        ));
        assert!(matches!(
            path("list[3]").set(&mut event, json!(1)),
            Err(PathError::OutOfRange { .. })
        ));
        assert!(matches!(
            path("list[*].x").set(&mut event, json!(1)),
            Err(PathError::Wildcard { .. })
        ));
    }

    #[test]
    fn removes_and_takes() {
        let mut event = json!({"p": {"ssn": "1", "x": 2}, "r": [{"a": 1, "b": 2}, {"a": 3}]});
        assert_eq!(path("p.ssn").remove(&mut event), 1);
        assert_eq!(path("p.ssn").remove(&mut event), 0);
        assert_eq!(path("r[*].a").remove(&mut event), 2);
        assert_eq!(path("p.x").take(&mut event).unwrap(), Some(json!(2)));
        assert_eq!(path("p.nope.deeper").take(&mut event).unwrap(), None);
        assert_eq!(event, json!({"p": {}, "r": [{"b": 2}, {}]}));
    }
}
