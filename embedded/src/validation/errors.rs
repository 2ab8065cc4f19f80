//! Kubernetes-style field errors (`k8s.io/apimachinery/pkg/util/validation/field`).
//!
//! A [`FieldError`]'s `message` is what the API server calls the error body: the
//! cause's canonical text (`Invalid value`, `Required value`, ...), the offending
//! value where Kubernetes prints one, and the detail. `Display` prefixes the field.

use serde_json::Value;

/// The cause of a [`FieldError`]; maps 1:1 to a `metav1.StatusCause` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A required field is missing (`FieldValueRequired`).
    Required,
    /// A value is not one of the enumerated values (`FieldValueNotSupported`).
    NotSupported,
    /// A value is malformed or out of bounds (`FieldValueInvalid`).
    Invalid,
    /// A value does not have the schema's type (`FieldValueTypeInvalid`).
    TypeInvalid,
    /// A string is longer than `maxLength` (`FieldValueTooLong`).
    TooLong,
    /// A list or map has more than `maxItems`/`maxProperties` entries (`FieldValueTooMany`).
    TooMany,
    /// A value repeats in a set or a key repeats in a map list (`FieldValueDuplicate`).
    Duplicate,
    /// A value is not allowed under the current conditions (`FieldValueForbidden`).
    Forbidden,
    /// A value names something that does not exist (`FieldValueNotFound`).
    NotFound,
}

impl FieldErrorKind {
    /// The `metav1.CauseType` string the API server puts in `Status.details.causes[].reason`.
    pub fn cause_type(&self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Forbidden => "FieldValueForbidden",
            Self::NotFound => "FieldValueNotFound",
        }
    }

    /// The canonical text the API server starts an error body with.
    fn text(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::NotSupported => "Unsupported value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "Not found",
        }
    }
}

/// One field-level validation failure, as the API server reports it in a status cause.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}", field_prefix(.field), .message)]
pub struct FieldError {
    /// Dotted path from the object root, `[i]` for list items and `[key]` for map
    /// values, e.g. `spec.nodes[1].id`; empty for errors about the whole object.
    pub field: String,
    /// The cause.
    pub kind: FieldErrorKind,
    /// The full error body, e.g. `Invalid value: -1: spec.replicas in body should be
    /// greater than or equal to 0`.
    pub message: String,
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!("{field}: ") }
}

/// All failures of one object; `Display` joins the causes with `", "`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", join(.0))]
pub struct FieldErrors(pub Vec<FieldError>);

fn join(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

impl FieldErrors {
    /// Drops repeated errors (same field and text), keeping the first, as the API
    /// server's error aggregation does.
    pub(crate) fn deduplicated(errors: Vec<FieldError>) -> Self {
        let mut seen = std::collections::HashSet::new();
        Self(
            errors
                .into_iter()
                .filter(|e| seen.insert((e.field.clone(), e.message.clone())))
                .collect(),
        )
    }
}

/// The offending value printed in an error body.
#[derive(Clone, Copy)]
pub(crate) enum Bad<'a> {
    /// A JSON value, printed like the API server prints decoded JSON.
    Json(&'a Value),
    /// A string, printed quoted.
    Str(&'a str),
    /// A count, printed bare.
    Count(usize),
}

impl Bad<'_> {
    fn render(&self) -> String {
        match self {
            Bad::Json(Value::Null) => "\"null\"".to_string(),
            Bad::Json(Value::String(s)) => quote(s),
            Bad::Str(s) => quote(s),
            Bad::Json(v) => v.to_string(),
            Bad::Count(n) => n.to_string(),
        }
    }
}

/// Go's `%q` for the strings we print (JSON escaping is close enough).
pub(crate) fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

fn make(field: &str, kind: FieldErrorKind, message: String) -> FieldError {
    FieldError { field: field.to_string(), kind, message }
}

fn with_value(field: &str, kind: FieldErrorKind, bad: Bad<'_>, detail: &str) -> FieldError {
    let body = format!("{}: {}", kind.text(), bad.render());
    make(field, kind, with_detail(body, detail))
}

/// `field.Required`.
pub(crate) fn required(field: &str, detail: &str) -> FieldError {
    let kind = FieldErrorKind::Required;
    make(field, kind, with_detail(kind.text().to_string(), detail))
}

/// `field.Forbidden`.
pub(crate) fn forbidden(field: &str, detail: &str) -> FieldError {
    let kind = FieldErrorKind::Forbidden;
    make(field, kind, with_detail(kind.text().to_string(), detail))
}

/// `field.Invalid`.
pub(crate) fn invalid(field: &str, bad: Bad<'_>, detail: &str) -> FieldError {
    with_value(field, FieldErrorKind::Invalid, bad, detail)
}

/// `field.TypeInvalid`.
pub(crate) fn type_invalid(field: &str, bad: Bad<'_>, detail: &str) -> FieldError {
    with_value(field, FieldErrorKind::TypeInvalid, bad, detail)
}

/// `field.Duplicate`.
pub(crate) fn duplicate(field: &str, bad: Bad<'_>) -> FieldError {
    with_value(field, FieldErrorKind::Duplicate, bad, "")
}

/// `field.NotFound`.
pub(crate) fn not_found(field: &str, bad: Bad<'_>) -> FieldError {
    with_value(field, FieldErrorKind::NotFound, bad, "")
}

/// `field.NotSupported`.
pub(crate) fn not_supported(field: &str, bad: Bad<'_>, supported: &[String]) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    with_value(field, FieldErrorKind::NotSupported, bad, &detail)
}

/// `field.TooLongMaxLength` (the value itself is not printed).
pub(crate) fn too_long(field: &str, max: u64) -> FieldError {
    let kind = FieldErrorKind::TooLong;
    make(field, kind, format!("{}: may not be longer than {max}", kind.text()))
}

/// `field.TooMany`.
pub(crate) fn too_many(field: &str, actual: usize, max: u64) -> FieldError {
    let detail = format!("must have at most {max} items");
    with_value(field, FieldErrorKind::TooMany, Bad::Count(actual), &detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_follow_the_api_server() {
        let e = invalid("spec.replicas", Bad::Json(&json!(-1)), "too small");
        assert_eq!(e.to_string(), "spec.replicas: Invalid value: -1: too small");
        assert_eq!(required("spec.backend", "").to_string(), "spec.backend: Required value");
        let e =
            not_supported("spec.s", Bad::Json(&json!("Foo")), &["A".to_string(), "B".to_string()]);
        assert_eq!(e.message, r#"Unsupported value: "Foo": supported values: "A", "B""#);
        assert_eq!(too_many("spec.l", 3, 2).message, "Too many: 3: must have at most 2 items");
        assert_eq!(too_long("spec.s", 5).message, "Too long: may not be longer than 5");
        assert_eq!(duplicate("x[1]", Bad::Json(&Value::Null)).message, "Duplicate value: \"null\"");
        assert_eq!(forbidden("", "nope").to_string(), "Forbidden: nope");
        assert_eq!(FieldErrorKind::TooMany.cause_type(), "FieldValueTooMany");
    }

    #[test]
    fn errors_join_and_deduplicate() {
        let a = required("a", "");
        let b = required("b", "");
        let all = FieldErrors::deduplicated(vec![a.clone(), b.clone(), a.clone()]);
        assert_eq!(all.0, vec![a, b]);
        assert_eq!(all.to_string(), "a: Required value, b: Required value");
    }
}
