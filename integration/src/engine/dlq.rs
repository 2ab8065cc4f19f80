//! The dead letter queue: actions that did not succeed, with the original event, kept for
//! inspection, replay and discard.
//!
//! Bounded: when full, the oldest entry is dropped and a warning names it (id, workflow, route,
//! action; never the event) with the running count of dropped entries. Entries live in memory
//! (this is the legacy in-process engine; the durable outbox has its own dead letters). A replay
//! in progress holds its entry: a second replay or a discard of it is refused until it ends.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use prometheus_client::metrics::gauge::Gauge;
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::outcome::{ActionKind, ActionStatus};

/// One dead-lettered action.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadLetter {
    /// Queue-assigned id (`dlq_000001`, …), unique within the process.
    pub id: String,
    /// The original event, before the route's transforms.
    pub event: Value,
    /// Workflow name.
    pub workflow: String,
    /// Route name.
    pub route: String,
    /// Action id.
    pub action: String,
    /// Action kind.
    pub action_type: ActionKind,
    /// `scheme://host:port` of a webhook or FHIR action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// How the latest try ended (`failed`, `circuit_open` or `rate_limited`).
    pub status: ActionStatus,
    /// Why the latest try failed (no event data).
    pub error: String,
    /// Attempts made by the latest try.
    pub attempts: u32,
    /// When the latest try failed.
    #[serde(serialize_with = "rfc3339")]
    pub failed_at: jiff::Timestamp,
    /// Replays tried so far.
    pub replay_count: u32,
}

fn rfc3339<S: Serializer>(at: &jiff::Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(at)
}

/// Dead letter operations that cannot be done.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeadLetterError {
    /// No entry has this id (never existed, replayed, discarded or dropped).
    #[error("dead letter `{0}` not found")]
    NotFound(String),
    /// The entry is being replayed.
    #[error("dead letter `{0}` is being replayed")]
    ReplayInProgress(String),
    /// The entry belongs to another workflow than the one given for the replay.
    #[error("dead letter `{id}` belongs to workflow `{expected}`, not `{given}`")]
    WorkflowMismatch {
        /// The entry id.
        id: String,
        /// The entry's workflow.
        expected: String,
        /// The workflow given.
        given: String,
    },
    /// The workflow no longer has the entry's route or action.
    #[error("workflow `{workflow}` has no action `{action}` in route `{route}`")]
    UnknownAction {
        /// Workflow name.
        workflow: String,
        /// Route name.
        route: String,
        /// Action id.
        action: String,
    },
}

impl DeadLetterError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "dlq_not_found",
            Self::ReplayInProgress(_) => "dlq_replay_in_progress",
            Self::WorkflowMismatch { .. } => "dlq_workflow_mismatch",
            Self::UnknownAction { .. } => "dlq_unknown_action",
        }
    }
}

#[derive(Default)]
struct Inner {
    entries: VecDeque<DeadLetter>,
    next_id: u64,
    dropped: u64,
    replaying: HashSet<String>,
}

/// The queue.
pub(crate) struct DeadLetterQueue {
    inner: Mutex<Inner>,
    capacity: usize,
    size: Gauge,
}

impl DeadLetterQueue {
    pub fn new(capacity: usize, size: Gauge) -> Self {
        Self { inner: Mutex::new(Inner::default()), capacity, size }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, inner: &Inner) {
        self.size.set(i64::try_from(inner.entries.len()).unwrap_or(i64::MAX));
    }

    /// Adds `entry` under a new id (its `id` is replaced) and returns the id.
    pub fn push(&self, mut entry: DeadLetter) -> String {
        let mut inner = self.lock();
        inner.next_id += 1;
        entry.id = format!("dlq_{:06}", inner.next_id);
        let id = entry.id.clone();
        self.insert(&mut inner, entry);
        id
    }

    fn insert(&self, inner: &mut Inner, entry: DeadLetter) {
        inner.entries.push_back(entry);
        while inner.entries.len() > self.capacity {
            let Some(oldest) = inner.entries.pop_front() else { break };
            inner.dropped += 1;
            tracing::warn!(
                dropped_id = %oldest.id,
                workflow = %oldest.workflow,
                route = %oldest.route,
                action = %oldest.action,
                capacity = self.capacity,
                dropped_total = inner.dropped,
                "dead letter queue full: dropped the oldest entry"
            );
        }
        self.publish(inner);
    }

    /// Every entry, oldest first.
    pub fn list(&self) -> Vec<DeadLetter> {
        self.lock().entries.iter().cloned().collect()
    }

    /// The entry with `id`.
    pub fn get(&self, id: &str) -> Option<DeadLetter> {
        self.lock().entries.iter().find(|e| e.id == id).cloned()
    }

    /// Marks `id` as being replayed and returns a copy.
    pub fn begin_replay(&self, id: &str) -> Result<DeadLetter, DeadLetterError> {
        let mut inner = self.lock();
        let entry = inner
            .entries
            .iter()
            .find(|e| e.id == id)
            .cloned()
            .ok_or_else(|| DeadLetterError::NotFound(id.to_owned()))?;
        if !inner.replaying.insert(id.to_owned()) {
            return Err(DeadLetterError::ReplayInProgress(id.to_owned()));
        }
        Ok(entry)
    }

    /// Ends a replay: `None` (success) removes the entry; `Some(update)` records the failed try
    /// (re-adding the entry if it was dropped meanwhile).
    pub fn end_replay(&self, id: &str, failure: Option<ReplayFailure>) {
        let mut inner = self.lock();
        inner.replaying.remove(id);
        let position = inner.entries.iter().position(|e| e.id == id);
        match (failure, position) {
            (None, Some(index)) => {
                inner.entries.remove(index);
                self.publish(&inner);
            }
            (None, None) => {}
            (Some(failure), Some(index)) => failure.apply(&mut inner.entries[index]),
            (Some(failure), None) => {
                let mut entry = failure.entry;
                entry.replay_count += 1;
                self.insert(&mut inner, entry);
            }
        }
    }

    /// Ends a replay that could not start, leaving the entry as it was.
    pub fn abandon_replay(&self, id: &str) {
        self.lock().replaying.remove(id);
    }

    /// Removes the entry with `id`.
    pub fn discard(&self, id: &str) -> Result<DeadLetter, DeadLetterError> {
        let mut inner = self.lock();
        if inner.replaying.contains(id) {
            return Err(DeadLetterError::ReplayInProgress(id.to_owned()));
        }
        let index = inner
            .entries
            .iter()
            .position(|e| e.id == id)
            .ok_or_else(|| DeadLetterError::NotFound(id.to_owned()))?;
        let entry = inner.entries.remove(index).expect("index was just found");
        self.publish(&inner);
        Ok(entry)
    }
}

/// The result of a failed replay: the entry as it should now read.
pub(crate) struct ReplayFailure {
    /// The entry with `status`, `error`, `attempts` and `failed_at` of the failed try.
    pub entry: DeadLetter,
}

impl ReplayFailure {
    fn apply(self, target: &mut DeadLetter) {
        target.status = self.entry.status;
        target.error = self.entry.error;
        target.attempts = self.entry.attempts;
        target.failed_at = self.entry.failed_at;
        target.destination = self.entry.destination;
        target.replay_count += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(n: u32) -> DeadLetter {
        DeadLetter {
            id: String::new(),
            event: json!({"id": format!("evt_{n}")}),
            workflow: "w".into(),
            route: "r".into(),
            action: "a".into(),
            action_type: ActionKind::Webhook,
            destination: Some("http://h:1".into()),
            status: ActionStatus::Failed,
            error: "HTTP 500".into(),
            attempts: 3,
            failed_at: jiff::Timestamp::UNIX_EPOCH,
            replay_count: 0,
        }
    }

    #[test]
    fn bounded_drops_oldest_and_tracks_size() {
        let gauge = Gauge::default();
        let queue = DeadLetterQueue::new(2, gauge.clone());
        let first = queue.push(entry(1));
        queue.push(entry(2));
        assert_eq!(gauge.get(), 2);
        queue.push(entry(3));
        assert_eq!(gauge.get(), 2);
        assert!(queue.get(&first).is_none(), "oldest dropped");
        let ids: Vec<_> = queue.list().into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["dlq_000002", "dlq_000003"]);
        assert_eq!(queue.discard("dlq_000002").unwrap().event, json!({"id": "evt_2"}));
        assert_eq!(gauge.get(), 1);
        assert_eq!(
            queue.discard("dlq_000002"),
            Err(DeadLetterError::NotFound("dlq_000002".into()))
        );
    }

    #[test]
    fn replay_holds_the_entry() {
        let gauge = Gauge::default();
        let queue = DeadLetterQueue::new(10, gauge.clone());
        let id = queue.push(entry(1));
        let copy = queue.begin_replay(&id).unwrap();
        assert_eq!(queue.begin_replay(&id), Err(DeadLetterError::ReplayInProgress(id.clone())));
        assert_eq!(queue.discard(&id), Err(DeadLetterError::ReplayInProgress(id.clone())));
        let mut failed = copy.clone();
        failed.error = "HTTP 503".into();
        failed.attempts = 1;
        queue.end_replay(&id, Some(ReplayFailure { entry: failed }));
        let now = queue.get(&id).unwrap();
        assert_eq!((now.error.as_str(), now.attempts, now.replay_count), ("HTTP 503", 1, 1));
        queue.begin_replay(&id).unwrap();
        queue.end_replay(&id, None);
        assert!(queue.list().is_empty());
        assert_eq!(gauge.get(), 0);
    }
}
