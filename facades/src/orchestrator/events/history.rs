//! A bounded, numbered history of one run's events, as served by the events stream.
//!
//! Each event is serialized once into its JSON envelope and shared by every subscriber. The
//! history can be saved to and restored from a ConfigMap's `data`. Pure: no I/O, no clock.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use keelson_api_crds::workflows::RunStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::diff::{Draft, EventKind, Snapshot, diff, format_time};

/// How many names of recorded log Events are remembered, to record each only once.
const LOG_IDS_KEPT: usize = 500;

/// ConfigMap keys used by [`History::to_data`] and [`History::from_data`].
const EVENTS_KEY: &str = "events";
const SNAPSHOT_KEY: &str = "snapshot";
const NEXT_SEQ_KEY: &str = "nextSeq";
const LOG_IDS_KEY: &str = "logIds";

/// Bounds of a history; the oldest events beyond them are dropped, though never the newest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most events kept.
    pub max_events: usize,
    /// Most bytes of envelope JSON kept.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_events: 1000, max_bytes: 512 * 1024 }
    }
}

/// One numbered event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Per-run sequence number, from 1.
    pub seq: u64,
    /// The event's type.
    pub kind: EventKind,
    /// The full JSON envelope.
    pub json: Arc<str>,
}

/// Some requested events were dropped from the history; the oldest kept has seq `oldest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lagged {
    /// The seq of the oldest event kept (the next one to come when none is kept).
    pub oldest: u64,
}

/// A ConfigMap's `data` does not hold a valid history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    /// The key whose value is invalid.
    pub key: &'static str,
    /// What is wrong with it.
    pub detail: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid `{}` in run event history: {}", self.key, self.detail)
    }
}

impl std::error::Error for HistoryError {}

/// The bounded history of one run's events, with the snapshot they were derived from.
#[derive(Clone, Debug)]
pub struct History {
    run_id: String,
    limits: Limits,
    next_seq: u64,
    events: VecDeque<Arc<Stored>>,
    bytes: usize,
    snapshot: Snapshot,
    ended: bool,
    log_ids: VecDeque<String>,
}

/// The envelope as written.
#[derive(Serialize)]
struct Envelope<'a> {
    seq: u64,
    run_id: &'a str,
    #[serde(rename = "type")]
    kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_id: Option<&'a str>,
    time: &'a str,
    data: &'a Value,
}

/// The envelope as read back: checked, then kept as its text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadEnvelope {
    seq: u64,
    run_id: String,
    #[serde(rename = "type")]
    kind: EventKind,
    #[serde(default, rename = "node_id")]
    _node_id: Option<String>,
    time: String,
    #[serde(rename = "data")]
    _data: Map<String, Value>,
}

impl History {
    /// An empty history of a run.
    pub fn new(run_id: &str, limits: Limits) -> Self {
        Self {
            run_id: run_id.to_owned(),
            limits,
            next_seq: 1,
            events: VecDeque::new(),
            bytes: 0,
            snapshot: Snapshot::default(),
            ended: false,
            log_ids: VecDeque::new(),
        }
    }

    /// Appends, assigning the next seq; drops the oldest events beyond the limits.
    pub fn push(&mut self, draft: Draft, time: jiff::Timestamp) -> Arc<Stored> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let json = to_json(&Envelope {
            seq,
            run_id: &self.run_id,
            kind: draft.kind,
            node_id: draft.node_id.as_deref(),
            time: &format_time(time),
            data: &draft.data,
        });
        let stored = Arc::new(Stored { seq, kind: draft.kind, json: json.into() });
        self.ended |= draft.kind == EventKind::End;
        self.retain(Arc::clone(&stored));
        stored
    }

    /// Diffs the status against the snapshot, pushes the drafts, keeps the new snapshot.
    pub fn observe(&mut self, status: &RunStatus, time: jiff::Timestamp) -> Vec<Arc<Stored>> {
        let drafts = diff(&self.snapshot, status);
        self.snapshot = Snapshot::of(status);
        drafts.into_iter().map(|draft| self.push(draft, time)).collect()
    }

    /// Records a log line from a Kubernetes Event once: `None` when `event_name` was recorded
    /// already (the last 500 names are remembered).
    pub fn push_log_once(
        &mut self,
        event_name: &str,
        node_id: Option<String>,
        kind: &str,
        message: &str,
        time: jiff::Timestamp,
    ) -> Option<Arc<Stored>> {
        if self.log_ids.iter().any(|name| name == event_name) {
            return None;
        }
        self.log_ids.push_back(event_name.to_owned());
        if self.log_ids.len() > LOG_IDS_KEPT {
            self.log_ids.pop_front();
        }
        let data = Map::from_iter([
            ("message".to_owned(), Value::from(message)),
            ("kind".to_owned(), Value::from(kind)),
        ]);
        let draft = Draft { kind: EventKind::Log, node_id, data: Value::Object(data) };
        Some(self.push(draft, time))
    }

    /// The seq of the last event pushed; 0 when none was.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Whether an `end` event was pushed.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Events with seq > `after`. `Err(Lagged { oldest })` when some of them were dropped: the
    /// caller reports a gap and continues from `oldest`. `after >= last_seq` gives an empty Ok.
    pub fn since(&self, after: u64) -> Result<Vec<Arc<Stored>>, Lagged> {
        if after >= self.last_seq() {
            return Ok(Vec::new());
        }
        let oldest = self.events.front().map_or(self.next_seq, |e| e.seq);
        if after + 1 < oldest {
            return Err(Lagged { oldest });
        }
        let start = self.events.partition_point(|e| e.seq <= after);
        Ok(self.events.range(start..).cloned().collect())
    }

    /// The history as a ConfigMap's `data`: `events` (envelopes, one per line, oldest first),
    /// `snapshot` (JSON), `nextSeq` and `logIds` (JSON array of recorded log Event names).
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let mut events = String::with_capacity(self.bytes + self.events.len());
        for event in &self.events {
            events.push_str(&event.json);
            events.push('\n');
        }
        BTreeMap::from([
            (EVENTS_KEY.to_owned(), events),
            (SNAPSHOT_KEY.to_owned(), to_json(&self.snapshot)),
            (NEXT_SEQ_KEY.to_owned(), self.next_seq.to_string()),
            (LOG_IDS_KEY.to_owned(), to_json(&self.log_ids)),
        ])
    }

    /// Restores a history saved by [`History::to_data`], applying `limits`. Missing keys read
    /// as empty; an invalid value is an error.
    pub fn from_data(
        run_id: &str,
        data: &BTreeMap<String, String>,
        limits: Limits,
    ) -> Result<Self, HistoryError> {
        let mut history = Self::new(run_id, limits);
        let value = |key: &str| data.get(key).map(String::as_str).filter(|s| !s.is_empty());

        for (index, line) in value(EVENTS_KEY).unwrap_or("").lines().enumerate() {
            let invalid = |detail: String| HistoryError {
                key: EVENTS_KEY,
                detail: format!("line {}: {detail}", index + 1),
            };
            let envelope: ReadEnvelope =
                serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
            if envelope.run_id != run_id {
                return Err(invalid(format!("event of run {:?}", envelope.run_id)));
            }
            if envelope.seq < history.next_seq {
                return Err(invalid(format!("seq {} out of order", envelope.seq)));
            }
            envelope.time.parse::<jiff::Timestamp>().map_err(|e| invalid(format!("time: {e}")))?;
            history.next_seq = envelope.seq + 1;
            history.ended |= envelope.kind == EventKind::End;
            history.retain(Arc::new(Stored {
                seq: envelope.seq,
                kind: envelope.kind,
                json: line.into(),
            }));
        }

        if let Some(text) = value(NEXT_SEQ_KEY) {
            let next_seq: u64 = text.parse().map_err(|e| HistoryError {
                key: NEXT_SEQ_KEY,
                detail: format!("{text:?}: {e}"),
            })?;
            if next_seq < history.next_seq {
                return Err(HistoryError {
                    key: NEXT_SEQ_KEY,
                    detail: format!("{next_seq} is not after the last event"),
                });
            }
            history.next_seq = next_seq;
        }
        if let Some(text) = value(SNAPSHOT_KEY) {
            history.snapshot = serde_json::from_str(text)
                .map_err(|e| HistoryError { key: SNAPSHOT_KEY, detail: e.to_string() })?;
        }
        if let Some(text) = value(LOG_IDS_KEY) {
            let mut log_ids: VecDeque<String> = serde_json::from_str(text)
                .map_err(|e| HistoryError { key: LOG_IDS_KEY, detail: e.to_string() })?;
            let excess = log_ids.len().saturating_sub(LOG_IDS_KEPT);
            log_ids.drain(..excess);
            history.log_ids = log_ids;
        }
        // The `end` event may have been trimmed; the snapshot still tells.
        history.ended |= history.snapshot.is_terminal();
        Ok(history)
    }

    /// Appends an event and drops the oldest beyond the limits, always keeping the newest.
    fn retain(&mut self, stored: Arc<Stored>) {
        self.bytes += stored.json.len();
        self.events.push_back(stored);
        while self.events.len() > 1
            && (self.events.len() > self.limits.max_events || self.bytes > self.limits.max_bytes)
        {
            if let Some(dropped) = self.events.pop_front() {
                self.bytes -= dropped.json.len();
            }
        }
    }
}

/// Serializes a value whose maps all have string keys, which serde_json cannot fail on.
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("string-keyed data always serializes to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use keelson_api_crds::workflows::{NodePhase, NodeState, RunPhase};
    use serde_json::json;

    fn time() -> jiff::Timestamp {
        "2026-11-22T10:00:00.123456Z".parse().unwrap()
    }

    fn log_draft(message: &str) -> Draft {
        Draft {
            kind: EventKind::Log,
            node_id: None,
            data: json!({"message": message, "kind": "info"}),
        }
    }

    fn history_of(count: usize, limits: Limits) -> History {
        let mut history = History::new("r1", limits);
        for i in 0..count {
            history.push(log_draft(&format!("line {i}")), time());
        }
        history
    }

    fn seqs(events: &[Arc<Stored>]) -> Vec<u64> {
        events.iter().map(|e| e.seq).collect()
    }

    fn status(phase: RunPhase, node_phase: NodePhase) -> RunStatus {
        let mut node: NodeState =
            serde_json::from_value(json!({"id": "fetch", "phase": "pending"})).unwrap();
        node.phase = node_phase;
        node.attempts = 1;
        node.outputs.insert("url".to_owned(), "https://x".to_owned());
        RunStatus { phase: Some(phase), nodes: vec![node], ..RunStatus::default() }
    }

    #[test]
    fn seq_is_monotonic_from_one() {
        let mut history = History::new("r1", Limits::default());
        assert_eq!(history.last_seq(), 0);
        let first = history.push(log_draft("a"), time());
        let second = history.push(log_draft("b"), time());
        assert_eq!((first.seq, second.seq), (1, 2));
        assert_eq!(history.last_seq(), 2);
    }

    #[test]
    fn since_ranges() {
        let history = history_of(3, Limits::default());
        assert_eq!(seqs(&history.since(0).unwrap()), [1, 2, 3]);
        assert_eq!(seqs(&history.since(1).unwrap()), [2, 3]);
        assert_eq!(seqs(&history.since(2).unwrap()), [3]);
        assert!(history.since(3).unwrap().is_empty());
        assert!(history.since(99).unwrap().is_empty());
        let empty = History::new("r1", Limits::default());
        assert!(empty.since(0).unwrap().is_empty());
    }

    #[test]
    fn since_lags_after_trimming_by_count() {
        let limits = Limits { max_events: 3, ..Limits::default() };
        let history = history_of(5, limits);
        assert_eq!(history.since(0), Err(Lagged { oldest: 3 }));
        assert_eq!(history.since(1), Err(Lagged { oldest: 3 }));
        assert_eq!(seqs(&history.since(2).unwrap()), [3, 4, 5]);
        assert_eq!(seqs(&history.since(4).unwrap()), [5]);
    }

    #[test]
    fn since_lags_after_trimming_by_bytes() {
        let one = history_of(1, Limits::default()).events[0].json.len();
        let limits = Limits { max_events: 100, max_bytes: 2 * one + 1 };
        let history = history_of(5, limits);
        assert_eq!(seqs(&history.since(3).unwrap()), [4, 5]);
        assert_eq!(history.since(2), Err(Lagged { oldest: 4 }));
        assert!(history.bytes <= limits.max_bytes);
        // The newest event is kept even when it alone exceeds the bound.
        let tiny = history_of(2, Limits { max_events: 100, max_bytes: 1 });
        assert_eq!(seqs(&tiny.since(1).unwrap()), [2]);
    }

    #[test]
    fn envelope_has_exactly_the_documented_fields() {
        let mut history = History::new("r1", Limits::default());
        let without = history.push(log_draft("hello"), time());
        let envelope: Value = serde_json::from_str(&without.json).unwrap();
        assert_eq!(
            envelope,
            json!({"seq": 1, "run_id": "r1", "type": "log", "time": "2026-11-22T10:00:00.123Z",
                   "data": {"message": "hello", "kind": "info"}})
        );
        let with =
            history.push_log_once("ev1", Some("fetch".to_owned()), "warn", "slow", time()).unwrap();
        assert!(with.json.starts_with(r#"{"seq":2,"run_id":"r1","type":"log","node_id":"fetch","#));
        let envelope: Value = serde_json::from_str(&with.json).unwrap();
        let mut keys: Vec<&str> =
            envelope.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["data", "node_id", "run_id", "seq", "time", "type"]);
        assert_eq!(envelope["data"], json!({"message": "slow", "kind": "warn"}));
    }

    #[test]
    fn observe_twice_adds_nothing_and_ends_once() {
        let mut history = History::new("r1", Limits::default());
        let running = status(RunPhase::Running, NodePhase::Running);
        let kinds = |events: Vec<Arc<Stored>>| -> Vec<EventKind> {
            events.iter().map(|e| e.kind).collect()
        };
        assert_eq!(
            kinds(history.observe(&running, time())),
            [EventKind::Status, EventKind::NodeStatus, EventKind::Output]
        );
        assert!(history.observe(&running, time()).is_empty());
        assert!(!history.ended());
        let done = status(RunPhase::Succeeded, NodePhase::Succeeded);
        assert_eq!(
            kinds(history.observe(&done, time())),
            [EventKind::NodeStatus, EventKind::Status, EventKind::End]
        );
        assert!(history.ended());
        assert!(history.observe(&done, time()).is_empty());
        assert_eq!(history.last_seq(), 6);
    }

    #[test]
    fn push_log_once_records_a_name_once() {
        let mut history = History::new("r1", Limits::default());
        assert!(history.push_log_once("ev1", None, "info", "a", time()).is_some());
        assert!(history.push_log_once("ev1", None, "info", "a", time()).is_none());
        assert_eq!(history.last_seq(), 1);
        for i in 0..LOG_IDS_KEPT {
            history.push_log_once(&format!("other{i}"), None, "info", "b", time());
        }
        assert_eq!(history.log_ids.len(), LOG_IDS_KEPT);
        // The oldest name was forgotten.
        assert!(history.push_log_once("ev1", None, "info", "a", time()).is_some());
    }

    #[test]
    fn data_round_trip() {
        let limits = Limits { max_events: 4, ..Limits::default() };
        let mut history = History::new("r1", limits);
        let done = status(RunPhase::Succeeded, NodePhase::Succeeded);
        history.push_log_once("ev1", Some("fetch".to_owned()), "info", "hi", time());
        history.observe(&status(RunPhase::Running, NodePhase::Running), time());
        history.observe(&done, time());
        history.push_log_once("ev2", None, "info", "bye", time());
        let data = history.to_data();
        assert_eq!(data.len(), 4);
        assert_eq!(data["nextSeq"], "9");
        assert_eq!(data["events"].lines().count(), 4);

        let mut restored = History::from_data("r1", &data, limits).unwrap();
        assert_eq!(restored.last_seq(), history.last_seq());
        assert_eq!(restored.snapshot, history.snapshot);
        assert_eq!(restored.log_ids, history.log_ids);
        assert_eq!(restored.bytes, history.bytes);
        assert!(restored.ended());
        assert_eq!(restored.since(4).unwrap(), history.since(4).unwrap());
        assert_eq!(restored.since(0), Err(Lagged { oldest: 5 }));
        assert!(restored.observe(&done, time()).is_empty());
        assert!(restored.push_log_once("ev1", None, "info", "hi", time()).is_none());
        assert_eq!(restored.push(log_draft("more"), time()).seq, 9);
        assert_eq!(restored.to_data()["events"].lines().count(), 4);

        // Tighter limits on restore trim the oldest events.
        let tight = Limits { max_events: 2, ..limits };
        let trimmed = History::from_data("r1", &data, tight).unwrap();
        assert_eq!(seqs(&trimmed.since(6).unwrap()), [7, 8]);

        let empty = History::from_data("r1", &BTreeMap::new(), limits).unwrap();
        assert_eq!((empty.last_seq(), empty.ended()), (0, false));
    }

    #[test]
    fn invalid_data_is_an_error() {
        let mut history = history_of(2, Limits::default());
        history.push_log_once("ev1", None, "info", "a", time());
        let data = history.to_data();
        let with = |key: &str, value: &str| {
            let mut data = data.clone();
            data.insert(key.to_owned(), value.to_owned());
            History::from_data("r1", &data, Limits::default()).map(|_| ())
        };
        let mut lines: Vec<&str> = data["events"].lines().collect();
        lines[1] = "{\"seq\":2,\"run_id\":";
        let error = with("events", &lines.join("\n")).unwrap_err();
        assert_eq!(error.key, "events");
        assert!(error.to_string().starts_with("invalid `events` in run event history: line 2:"));
        assert!(with("events", "not json").is_err());
        assert!(with("events", "[1, 2]").is_err());
        let reversed: Vec<&str> = data["events"].lines().rev().collect();
        assert!(with("events", &reversed.join("\n")).is_err());
        assert!(History::from_data("r2", &data, Limits::default()).is_err());
        assert_eq!(with("nextSeq", "x").unwrap_err().key, "nextSeq");
        assert_eq!(with("nextSeq", "2").unwrap_err().key, "nextSeq");
        assert_eq!(with("snapshot", "[").unwrap_err().key, "snapshot");
        assert_eq!(with("logIds", "{}").unwrap_err().key, "logIds");
        assert!(with("events", "").is_ok());
    }
}
