//! What every conversion uses: [`Object`], which writes a JSON object field by field the way Go's
//! `encoding/json` writes a Kubernetes struct, and [`Ctx`], which records the fields a conversion
//! met but does not map (and values with no JSON form), so that decoding fails instead of dropping
//! them.
//!
//! Go's protobuf encoder writes every field Go holds by value, even a zero one, so a decoded
//! `Some("")`, `Some(0)` or `Some(false)` is an unset value field. A field Go holds behind a
//! pointer is written only when the pointer is set, so there `Some` is data whatever it holds.

use std::collections::BTreeMap;
use std::fmt::Display;

use serde_json::{Map, Value};

use super::ProtobufError;

/// What a conversion found besides the JSON it wrote: the JSON paths of set fields it does not
/// map, and values it could not write.
#[derive(Debug, Default)]
pub(crate) struct Ctx {
    unsupported: Vec<String>,
    invalid: Vec<String>,
}

impl Ctx {
    /// An unmapped field Go holds by value: data when not zero.
    pub(crate) fn unmapped_value<T: Zero>(&mut self, path: &str, name: &str, value: &Option<T>) {
        if value.as_ref().is_some_and(|value| !value.is_zero()) {
            self.unsupported.push(join(path, name));
        }
    }

    /// An unmapped field Go holds behind a pointer (or a message): data when present at all.
    pub(crate) fn unmapped_pointer<T>(&mut self, path: &str, name: &str, value: &Option<T>) {
        if value.is_some() {
            self.unsupported.push(join(path, name));
        }
    }

    /// An unmapped repeated or map field: data when it has entries.
    pub(crate) fn unmapped_entries(&mut self, path: &str, name: &str, value: &impl Entries) {
        if value.has_entries() {
            self.unsupported.push(join(path, name));
        }
    }

    /// Records a set field that the conversion does not map (for checks the helpers above do
    /// not express, such as a field beyond what the decoder's schema knows).
    pub(crate) fn unsupported(&mut self, path: &str) {
        self.unsupported.push(path.to_owned());
    }

    /// Records a value that has no JSON form, such as an `IntOrString` of an unknown type.
    pub(crate) fn invalid(&mut self, path: &str, problem: impl Display) {
        self.invalid.push(format!("{path}: {problem}"));
    }

    /// The error for an object of `kind`, if the conversion recorded anything.
    pub(crate) fn finish(self, kind: &str) -> Result<(), ProtobufError> {
        if !self.invalid.is_empty() {
            return Err(ProtobufError::Decode(format!("{kind} {}", self.invalid.join("; "))));
        }
        if !self.unsupported.is_empty() {
            return Err(ProtobufError::UnsupportedField {
                kind: kind.to_owned(),
                field: self.unsupported.join(", "),
            });
        }
        Ok(())
    }
}

/// A scalar's zero value, which Go's `omitempty` leaves out.
pub(crate) trait Zero {
    /// Whether this is the zero value of its Go type.
    fn is_zero(&self) -> bool;
}

impl Zero for String {
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
}

impl Zero for bool {
    fn is_zero(&self) -> bool {
        !*self
    }
}

impl Zero for i32 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl Zero for i64 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

/// A repeated or map field.
pub(crate) trait Entries {
    /// Whether it holds anything.
    fn has_entries(&self) -> bool;
}

impl<T> Entries for Vec<T> {
    fn has_entries(&self) -> bool {
        !self.is_empty()
    }
}

impl<K, V> Entries for BTreeMap<K, V> {
    fn has_entries(&self) -> bool {
        !self.is_empty()
    }
}

/// Whether `object` holds an empty string anywhere, as a key or as a value.
pub(crate) fn has_empty_string(object: &Map<String, Value>) -> bool {
    fn in_value(value: &Value) -> bool {
        match value {
            Value::String(string) => string.is_empty(),
            Value::Array(items) => items.iter().any(in_value),
            Value::Object(object) => has_empty_string(object),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }
    object.iter().any(|(key, value)| key.is_empty() || in_value(value))
}

/// The JSON path of field `name` of the object at `path` (`""` for the top level).
pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

/// The JSON path of item `index` of list field `name` of the object at `path`.
pub(crate) fn item(path: &str, name: &str, index: usize) -> String {
    format!("{}[{index}]", join(path, name))
}

/// A JSON object written field by field with Go's `encoding/json` rules.
#[derive(Debug, Default)]
pub(crate) struct Object(Map<String, Value>);

impl Object {
    /// A value field tagged `omitempty`: written unless absent or zero.
    pub(crate) fn omitempty<T: Zero + Into<Value>>(&mut self, key: &str, value: Option<T>) {
        if let Some(value) = value.filter(|value| !value.is_zero()) {
            self.0.insert(key.to_owned(), value.into());
        }
    }

    /// A value field without `omitempty`: always written, as its zero value when absent.
    pub(crate) fn always<T: Default + Into<Value>>(&mut self, key: &str, value: Option<T>) {
        self.0.insert(key.to_owned(), value.unwrap_or_default().into());
    }

    /// A pointer field tagged `omitempty`: written whenever present, even when zero.
    pub(crate) fn pointer<T: Into<Value>>(&mut self, key: &str, value: Option<T>) {
        if let Some(value) = value {
            self.0.insert(key.to_owned(), value.into());
        }
    }

    /// A field written whatever its value: a struct held by value, or `null` for a nil pointer
    /// without `omitempty`.
    pub(crate) fn put(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }

    /// A slice tagged `omitempty`: written when it has items.
    pub(crate) fn items<T: Into<Value>>(&mut self, key: &str, items: Vec<T>) {
        if !items.is_empty() {
            self.0.insert(key.to_owned(), items.into_iter().map(Into::into).collect());
        }
    }

    /// A map tagged `omitempty`: written when it has entries.
    pub(crate) fn entries<T: Into<Value>>(&mut self, key: &str, entries: BTreeMap<String, T>) {
        if !entries.is_empty() {
            let map = entries.into_iter().map(|(key, value)| (key, value.into())).collect();
            self.0.insert(key.to_owned(), Value::Object(map));
        }
    }
}

impl From<Object> for Value {
    fn from(object: Object) -> Self {
        Value::Object(object.0)
    }
}

impl From<Object> for Map<String, Value> {
    fn from(object: Object) -> Self {
        object.0
    }
}
