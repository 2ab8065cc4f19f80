//! What the workload planners share: `IntOrString` limits, counters as upstream writes them,
//! and the merge patch that takes a stored status to a planned one.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value};

/// A status counter as upstream writes one tagged `omitempty`: none when zero.
pub fn nonzero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// A limit given as a number or a percentage of `total` (`maxSurge`, `maxUnavailable`),
/// percentages rounded up or down; `None` when malformed. Never negative.
pub fn int_or_percent(value: &IntOrString, total: i32, round_up: bool) -> Option<i32> {
    let scaled = match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(text) => {
            let percent: i64 = text.strip_suffix('%')?.parse().ok()?;
            let product = percent.max(0) * i64::from(total.max(0));
            if round_up { (product + 99) / 100 } else { product / 100 }
        }
    };
    Some(i32::try_from(scaled.max(0)).unwrap_or(i32::MAX))
}

/// The JSON merge patch (RFC 7386) that turns `current` into `new`: what changed, and `null` for
/// what `new` no longer has. A planned status leaves out the counts that fell to zero (upstream's
/// `omitempty`), so sending it as it is would leave the old counts in place.
pub fn merge_patch(current: &Value, new: &Value) -> Value {
    match (current, new) {
        (Value::Object(current), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, value) in new {
                match current.get(key) {
                    Some(old) if old == value => {}
                    Some(old) => {
                        patch.insert(key.clone(), merge_patch(old, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in current.keys().filter(|key| !new.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_merge_patch_clears_what_the_new_status_left_out() {
        let current =
            json!({"active": 1, "succeeded": 0, "uncounted": {"a": [1], "b": [2]}, "same": 3});
        let new = json!({"succeeded": 1, "uncounted": {"a": [1]}, "same": 3, "startTime": "t"});
        let patch = merge_patch(&current, &new);
        assert_eq!(
            patch,
            json!({"active": null, "succeeded": 1, "uncounted": {"b": null}, "startTime": "t"})
        );
        let mut patched = current.clone();
        json_patch::merge(&mut patched, &patch);
        assert_eq!(patched, new);
    }

    #[test]
    fn percentages_round_as_asked_and_malformed_limits_are_none() {
        let percent = |p: &str| IntOrString::String(p.into());
        assert_eq!(int_or_percent(&percent("25%"), 10, true), Some(3));
        assert_eq!(int_or_percent(&percent("25%"), 10, false), Some(2));
        assert_eq!(int_or_percent(&IntOrString::Int(4), 10, false), Some(4));
        assert_eq!(int_or_percent(&IntOrString::Int(-1), 10, false), Some(0));
        assert_eq!(int_or_percent(&percent("lots"), 10, true), None);
    }
}
