//! Route filters: does an event go down a route? Pure functions over the event JSON.
//!
//! Comparison rules: when either side is a JSON number, both compare as numbers (`"5"` equals
//! `5`, `"007"` equals `7`); otherwise strings compare as text and booleans as booleans, with a
//! boolean also equal to the text `true`/`false`. `gt`/`lt` compare numbers numerically and other
//! text lexicographically (ISO dates order correctly). With `[*]` in a path, a positive operator
//! holds when any reached value satisfies it; `ne`, `not_in` and `not_exists` hold when none
//! does.

use serde_json::Value;

use super::definition::{Condition, Filter, Operator};

/// Checks `filter` against `event`; `Err` carries the skip reason. Reasons name event types,
/// fields and operators, never field values.
pub fn evaluate(filter: &Filter, event: &Value) -> Result<(), String> {
    if !event.is_object() {
        return Err("the event is not a JSON object".to_owned());
    }
    if !filter.event_types.is_empty() {
        let Some(event_type) = event.get("type").and_then(Value::as_str) else {
            return Err("the event has no type".to_owned());
        };
        if !filter.event_types.iter().any(|t| t == event_type) {
            return Err(format!(
                "event type `{event_type}` is not one of [{}]",
                filter.event_types.join(", ")
            ));
        }
    }
    for (index, condition) in filter.conditions.iter().enumerate() {
        if !holds(condition, event) {
            return Err(format!(
                "condition {index} (`{} {}`) does not hold",
                condition.field, condition.operator
            ));
        }
    }
    Ok(())
}

/// Whether one condition holds for `event`.
pub fn holds(condition: &Condition, event: &Value) -> bool {
    let present: Vec<&Value> =
        condition.field.resolve(event).into_iter().filter(|v| !v.is_null()).collect();
    let any = |test: &dyn Fn(&Value) -> bool| present.iter().any(|v| test(v));
    let Some(expected) = condition.value.as_ref() else {
        return match condition.operator {
            Operator::Exists => !present.is_empty(),
            Operator::NotExists => present.is_empty(),
            // Validation requires a value for every other operator.
            Operator::Ne | Operator::NotIn => true,
            _ => false,
        };
    };
    let listed =
        |v: &Value| expected.as_array().is_some_and(|items| items.iter().any(|i| equal(v, i)));
    let ordered = |v: &Value, want| compare(v, expected) == Some(want);
    match condition.operator {
        Operator::Exists => !present.is_empty(),
        Operator::NotExists => present.is_empty(),
        Operator::Eq => any(&|v| equal(v, expected)),
        Operator::Ne => !any(&|v| equal(v, expected)),
        Operator::In => any(&listed),
        Operator::NotIn => !any(&listed),
        Operator::Contains => any(&|v| contains(v, expected)),
        Operator::StartsWith => scalar_text(expected).is_some_and(|prefix| {
            any(&|v| scalar_text(v).is_some_and(|text| text.starts_with(&prefix)))
        }),
        Operator::Gt => any(&|v| ordered(v, std::cmp::Ordering::Greater)),
        Operator::Lt => any(&|v| ordered(v, std::cmp::Ordering::Less)),
    }
}

/// Text of a string, number or boolean.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A number, or text that is a plain decimal number.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let t = s.trim();
            let plain = !t.is_empty()
                && t.trim_start_matches(['+', '-'])
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.');
            if plain { t.parse().ok() } else { None }
        }
        _ => None,
    }
}

fn equal(actual: &Value, expected: &Value) -> bool {
    if actual.is_number() || expected.is_number() {
        return match (number(actual), number(expected)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
    }
    match (actual, expected) {
        (Value::String(_) | Value::Bool(_), Value::String(_) | Value::Bool(_)) => {
            scalar_text(actual) == scalar_text(expected)
        }
        _ => actual == expected,
    }
}

fn contains(actual: &Value, expected: &Value) -> bool {
    match actual {
        Value::Array(items) => items.iter().any(|item| equal(item, expected)),
        Value::String(text) => scalar_text(expected).is_some_and(|needle| text.contains(&needle)),
        _ => false,
    }
}

fn compare(actual: &Value, expected: &Value) -> Option<std::cmp::Ordering> {
    if let (Some(a), Some(b)) = (number(actual), number(expected)) {
        return a.partial_cmp(&b);
    }
    match (actual, expected) {
        (Value::String(a), Value::String(b)) => Some(a.as_str().cmp(b.as_str())),
        _ => None,
    }
}
