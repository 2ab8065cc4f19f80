//! What the workload planners share: the events a reconcile records.

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
