//! Status conditions, set the Kubernetes way.
//!
//! A condition's `lastTransitionTime` moves only when its `status` changes; `reason`, `message`
//! and `observedGeneration` are refreshed on every write. Conditions are a list keyed by `type`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde::{Deserialize, Serialize};

/// The summary condition of long-lived kinds.
pub const READY: &str = "Ready";
/// The summary condition of bounded kinds (runs, autotunes).
pub const SUCCEEDED: &str = "Succeeded";
/// The reason used when a spec is refused by the controller's own checks.
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";

/// `status.conditions` and `status.observedGeneration`, flattened into every kind's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObservedConditions {
    /// The summary condition (`Ready` or `Succeeded`) and the finer ones behind it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl ObservedConditions {
    /// [`set`]s a condition on these conditions; returns whether anything changed.
    pub fn set(
        &mut self,
        update: Update<'_>,
        generation: Option<i64>,
        now: jiff::Timestamp,
    ) -> bool {
        set(&mut self.conditions, update, generation, now)
    }

    /// Whether the condition of the given type is `True`.
    pub fn is_true(&self, type_: &str) -> bool {
        is_true(&self.conditions, type_)
    }
}

/// The three values of a condition's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet (written on the first reconcile).
    Unknown,
}

impl Status {
    /// The wire form: `True`, `False` or `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Status {
    fn from(value: bool) -> Self {
        if value { Status::True } else { Status::False }
    }
}

/// A condition to write: everything but the transition time, which [`set`] decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update<'a> {
    /// PascalCase type, e.g. `Ready`.
    pub type_: &'a str,
    /// New status.
    pub status: Status,
    /// CamelCase reason, never empty.
    pub reason: &'a str,
    /// Human-readable detail; may be empty.
    pub message: &'a str,
}

/// Sets a condition in `conditions`, returning whether anything changed.
///
/// `generation` is the object's `metadata.generation`, recorded as `observedGeneration`.
/// `now` becomes `lastTransitionTime` only for a new condition or a changed status.
pub fn set(
    conditions: &mut Vec<Condition>,
    update: Update<'_>,
    generation: Option<i64>,
    now: jiff::Timestamp,
) -> bool {
    let status = update.status.as_str();
    match conditions.iter_mut().find(|c| c.type_ == update.type_) {
        Some(existing) => {
            let before = existing.clone();
            if existing.status != status {
                existing.status = status.to_owned();
                existing.last_transition_time = Time(now);
            }
            existing.reason = update.reason.to_owned();
            existing.message = update.message.to_owned();
            existing.observed_generation = generation;
            *existing != before
        }
        None => {
            conditions.push(Condition {
                type_: update.type_.to_owned(),
                status: status.to_owned(),
                reason: update.reason.to_owned(),
                message: update.message.to_owned(),
                observed_generation: generation,
                last_transition_time: Time(now),
            });
            true
        }
    }
}

/// The condition of the given type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The conditions of `new` that are new or whose status differs from `old`'s: the transitions
/// worth an event.
pub fn transitions<'a>(
    old: &'a [Condition],
    new: &'a [Condition],
) -> impl Iterator<Item = &'a Condition> {
    new.iter().filter(|c| find(old, &c.type_).is_none_or(|o| o.status != c.status))
}

/// Whether the condition of the given type is `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == Status::True.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(seconds).unwrap()
    }

    fn ready(status: Status, reason: &'static str) -> Update<'static> {
        Update { type_: READY, status, reason, message: "" }
    }

    #[test]
    fn first_write_adds_the_condition_with_generation_and_time() {
        let mut conditions = Vec::new();
        assert!(set(&mut conditions, ready(Status::Unknown, "Reconciling"), Some(1), at(10)));
        let c = find(&conditions, READY).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("Unknown", "Reconciling"));
        assert_eq!(c.observed_generation, Some(1));
        assert_eq!(c.last_transition_time, Time(at(10)));
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = Vec::new();
        set(&mut conditions, ready(Status::False, "Pending"), Some(1), at(10));
        assert!(set(&mut conditions, ready(Status::False, "StillPending"), Some(2), at(20)));
        let c = find(&conditions, READY).unwrap();
        assert_eq!(c.last_transition_time, Time(at(10)));
        assert_eq!((c.reason.as_str(), c.observed_generation), ("StillPending", Some(2)));

        assert!(set(&mut conditions, ready(Status::True, "DeploymentReady"), Some(2), at(30)));
        assert_eq!(find(&conditions, READY).unwrap().last_transition_time, Time(at(30)));
        assert!(is_true(&conditions, READY));
    }

    #[test]
    fn an_identical_write_reports_no_change() {
        let mut conditions = Vec::new();
        set(&mut conditions, ready(Status::True, "Ok"), Some(3), at(10));
        assert!(!set(&mut conditions, ready(Status::True, "Ok"), Some(3), at(99)));
        assert_eq!(conditions.len(), 1);
    }

    #[test]
    fn conditions_of_other_types_are_left_alone() {
        let mut conditions = Vec::new();
        set(&mut conditions, ready(Status::True, "Ok"), None, at(1));
        let other =
            Update { type_: "Progressing", status: Status::False, reason: "Done", message: "m" };
        set(&mut conditions, other, None, at(2));
        assert_eq!(conditions.len(), 2);
        assert!(is_true(&conditions, READY));
        assert!(!is_true(&conditions, "Progressing"));
        assert!(!is_true(&conditions, "Missing"));
    }

    #[test]
    fn transitions_are_new_conditions_and_changed_statuses() {
        let mut old = Vec::new();
        set(&mut old, ready(Status::False, "Starting"), Some(1), at(0));
        set(
            &mut old,
            Update { type_: "Progressing", ..ready(Status::True, "Rolling") },
            None,
            at(0),
        );
        let mut new = old.clone();
        set(&mut new, ready(Status::True, "Serving"), Some(1), at(5));
        set(&mut new, Update { type_: "Progressing", ..ready(Status::True, "Other") }, None, at(5));
        set(&mut new, Update { type_: "CacheReady", ..ready(Status::True, "Cached") }, None, at(5));
        let changed: Vec<&str> = transitions(&old, &new).map(|c| c.type_.as_str()).collect();
        assert_eq!(changed, ["Ready", "CacheReady"]);
        assert_eq!(transitions(&new, &new).count(), 0);
    }
}
