//! What the workload planners share: the events a reconcile records, and `IntOrString` limits.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// An event a planner asks its controller to record on the reconciled object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanEvent {
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// Short CamelCase reason, e.g. `BackoffLimitExceeded`.
    pub reason: String,
    /// Human-readable message.
    pub note: String,
}

impl PlanEvent {
    /// A `Normal` event.
    pub fn normal(reason: &str, note: impl Into<String>) -> Self {
        Self { warning: false, reason: reason.to_owned(), note: note.into() }
    }

    /// A `Warning` event.
    pub fn warning(reason: &str, note: impl Into<String>) -> Self {
        Self { warning: true, reason: reason.to_owned(), note: note.into() }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
