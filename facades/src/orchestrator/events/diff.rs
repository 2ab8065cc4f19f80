//! Run events derived from successive observations of a run's status.
//!
//! A [`Snapshot`] records what the events so far were derived from; [`diff`] compares it with a
//! newer [`RunStatus`] and returns the events ([`Draft`]s, not yet numbered) that describe the
//! change. Pure: no I/O, no clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use keelson_api_crds::workflows::{
    GateDecision, GateDecisionRecord, NodePhase, NodeState, RunPhase, RunStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The type of a run event, the envelope's `type`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The run's phase changed.
    Status,
    /// A node's phase or attempt count changed.
    NodeStatus,
    /// A gate was decided.
    GateDecision,
    /// A node output is new or changed.
    Output,
    /// An agent log line.
    Log,
    /// The run reached a terminal phase.
    End,
}

impl EventKind {
    /// The name used in the envelope and as the SSE event name, e.g. `node_status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::NodeStatus => "node_status",
            Self::GateDecision => "gate_decision",
            Self::Output => "output",
            Self::Log => "log",
            Self::End => "end",
        }
    }
}

/// An event before it is numbered and stamped.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    /// The event's type.
    pub kind: EventKind,
    /// The node the event is about, if any.
    pub node_id: Option<String>,
    /// The type-specific payload, a JSON object.
    pub data: Value,
}

/// What the events so far were derived from; compact and serializable, so it can be persisted
/// next to the history. [`Default`] is the start: a run never seen.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<RunPhase>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    nodes: BTreeMap<String, NodeSnapshot>,
}

/// What was seen of one node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct NodeSnapshot {
    phase: NodePhase,
    #[serde(default)]
    attempts: i32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    decided: bool,
    /// Output key to a short hash of its value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    outputs: BTreeMap<String, String>,
}

impl Snapshot {
    /// The snapshot of a status: what a diff against it treats as already reported.
    pub fn of(status: &RunStatus) -> Self {
        let nodes = status
            .nodes
            .iter()
            .map(|node| {
                let seen = NodeSnapshot {
                    phase: node.phase,
                    attempts: node.attempts,
                    decided: node.decision.is_some(),
                    outputs: node
                        .outputs
                        .iter()
                        .map(|(key, value)| (key.clone(), short_hash(value)))
                        .collect(),
                };
                (node.id.clone(), seen)
            })
            .collect();
        Self { phase: status.phase, nodes }
    }

    /// Whether the run was last seen in a terminal phase (succeeded, failed or cancelled).
    pub fn is_terminal(&self) -> bool {
        self.phase.is_some_and(is_terminal)
    }
}

/// The events that take `old` to `new`, in order: a non-terminal `status`; then per node, in
/// `new.nodes` order, `gate_decision`, `node_status` and `output`s (by key); then a terminal
/// `status` followed by `end`. Nodes missing from `new` and removed outputs are ignored.
pub fn diff(old: &Snapshot, new: &RunStatus) -> Vec<Draft> {
    let mut drafts = Vec::new();
    let phase_change = new.phase.filter(|phase| old.phase != Some(*phase));
    if let Some(phase) = phase_change.filter(|phase| !is_terminal(*phase)) {
        drafts.push(run_status(phase, old.phase, new.message.as_deref()));
    }
    for node in &new.nodes {
        node_drafts(old.nodes.get(&node.id), node, &mut drafts);
    }
    if let Some(phase) = phase_change.filter(|phase| is_terminal(*phase)) {
        drafts.push(run_status(phase, old.phase, new.message.as_deref()));
        if !old.is_terminal() {
            let data = Value::Object(Map::from_iter([field("status", run_phase_name(phase))]));
            drafts.push(draft(EventKind::End, None, data));
        }
    }
    drafts
}

/// A time as RFC 3339 in UTC with milliseconds, e.g. `2026-11-22T10:00:00.123Z`.
pub fn format_time(time: jiff::Timestamp) -> String {
    format!("{time:.3}")
}

/// Appends the events of one node: its decision, its phase or attempts, its outputs.
fn node_drafts(old: Option<&NodeSnapshot>, node: &NodeState, drafts: &mut Vec<Draft>) {
    let id = || Some(node.id.clone());
    if let Some(record) = &node.decision
        && !old.is_some_and(|seen| seen.decided)
    {
        drafts.push(draft(EventKind::GateDecision, id(), decision_data(record)));
    }
    let changed = match old {
        Some(seen) => seen.phase != node.phase || seen.attempts != node.attempts,
        None => node.phase != NodePhase::Pending || node.attempts != 0,
    };
    if changed {
        let data = node_status_data(node, old.map(|seen| seen.phase));
        drafts.push(draft(EventKind::NodeStatus, id(), data));
    }
    for (key, value) in &node.outputs {
        let seen = old.and_then(|seen| seen.outputs.get(key));
        if seen.is_none_or(|hash| *hash != short_hash(value)) {
            let data = Map::from_iter([field("key", key.as_str()), field("value", value.as_str())]);
            drafts.push(draft(EventKind::Output, id(), Value::Object(data)));
        }
    }
}

fn run_status(phase: RunPhase, previous: Option<RunPhase>, message: Option<&str>) -> Draft {
    let mut data = Map::from_iter([
        field("status", run_phase_name(phase)),
        ("previous".to_owned(), previous.map(run_phase_name).into()),
    ]);
    data.extend(message.map(|message| field("message", message)));
    draft(EventKind::Status, None, Value::Object(data))
}

fn node_status_data(node: &NodeState, previous: Option<NodePhase>) -> Value {
    let mut data = Map::from_iter([
        field("status", node_phase_name(node.phase)),
        ("previous".to_owned(), previous.map(node_phase_name).into()),
        field("attempts", node.attempts),
    ]);
    data.extend(node.exit_code.map(|code| field("exit_code", code)));
    data.extend(node.reason.as_deref().map(|reason| field("reason", reason)));
    data.extend(node.message.as_deref().map(|message| field("message", message)));
    Value::Object(data)
}

fn decision_data(record: &GateDecisionRecord) -> Value {
    let decision = match record.decision {
        GateDecision::Approve => "approve",
        GateDecision::Reject => "reject",
    };
    let mut data = Map::from_iter([field("decision", decision)]);
    data.extend(record.by.as_deref().map(|by| field("by", by)));
    data.extend(record.comment.as_deref().map(|comment| field("comment", comment)));
    data.extend(record.at.as_ref().map(|at| field("at", format_time(at.0))));
    Value::Object(data)
}

fn draft(kind: EventKind, node_id: Option<String>, data: Value) -> Draft {
    Draft { kind, node_id, data }
}

fn field(name: &str, value: impl Into<Value>) -> (String, Value) {
    (name.to_owned(), value.into())
}

fn is_terminal(phase: RunPhase) -> bool {
    matches!(phase, RunPhase::Succeeded | RunPhase::Failed | RunPhase::Cancelled)
}

/// The serde name of a run phase.
fn run_phase_name(phase: RunPhase) -> &'static str {
    match phase {
        RunPhase::Queued => "queued",
        RunPhase::Running => "running",
        RunPhase::Succeeded => "succeeded",
        RunPhase::Failed => "failed",
        RunPhase::Cancelled => "cancelled",
    }
}

/// The serde name of a node phase.
fn node_phase_name(phase: NodePhase) -> &'static str {
    match phase {
        NodePhase::Pending => "pending",
        NodePhase::Running => "running",
        NodePhase::WaitingApproval => "waiting_approval",
        NodePhase::Succeeded => "succeeded",
        NodePhase::Failed => "failed",
        NodePhase::Skipped => "skipped",
    }
}

/// The first 16 hex digits of the SHA-256 of a value.
fn short_hash(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let mut hex = String::with_capacity(16);
    for byte in &digest[..8] {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn node(id: &str, phase: NodePhase, attempts: i32) -> NodeState {
        NodeState { attempts, ..NodeState::new(id, phase) }
    }

    fn run(phase: RunPhase, nodes: Vec<NodeState>) -> RunStatus {
        RunStatus { phase: Some(phase), nodes, ..RunStatus::default() }
    }

    fn summary(drafts: &[Draft]) -> Vec<(&'static str, Option<&str>)> {
        drafts.iter().map(|d| (d.kind.as_str(), d.node_id.as_deref())).collect()
    }

    #[test]
    fn first_sight_of_a_running_run() {
        let status = run(
            RunPhase::Running,
            vec![node("fetch", NodePhase::Running, 1), node("build", NodePhase::Pending, 0)],
        );
        let drafts = diff(&Snapshot::default(), &status);
        assert_eq!(summary(&drafts), [("status", None), ("node_status", Some("fetch"))]);
        assert_eq!(drafts[0].data, json!({"status": "running", "previous": null}));
        assert_eq!(drafts[1].data, json!({"status": "running", "previous": null, "attempts": 1}));
        assert!(diff(&Snapshot::of(&status), &status).is_empty());
    }

    #[test]
    fn gate_waiting_then_approved() {
        let waiting = run(RunPhase::Running, vec![node("gate", NodePhase::WaitingApproval, 0)]);
        let drafts = diff(&Snapshot::default(), &waiting);
        assert_eq!(drafts[1].data["status"], "waiting_approval");

        let mut gate = node("gate", NodePhase::Succeeded, 0);
        gate.decision = Some(GateDecisionRecord {
            node: "gate".to_owned(),
            decision: GateDecision::Approve,
            by: Some("alice".to_owned()),
            at: Some(Time("2026-11-22T10:00:00.123456Z".parse().unwrap())),
            comment: None,
        });
        let approved = run(RunPhase::Running, vec![gate]);
        let drafts = diff(&Snapshot::of(&waiting), &approved);
        assert_eq!(
            summary(&drafts),
            [("gate_decision", Some("gate")), ("node_status", Some("gate"))]
        );
        assert_eq!(
            drafts[0].data,
            json!({"decision": "approve", "by": "alice", "at": "2026-11-22T10:00:00.123Z"})
        );
        assert_eq!(
            drafts[1].data,
            json!({"status": "succeeded", "previous": "waiting_approval", "attempts": 0})
        );
        assert!(diff(&Snapshot::of(&approved), &approved).is_empty());
    }

    #[test]
    fn retry_with_the_same_phase_is_a_node_status() {
        let first = run(RunPhase::Running, vec![node("fetch", NodePhase::Running, 1)]);
        let mut retry = node("fetch", NodePhase::Running, 2);
        retry.exit_code = Some(3);
        retry.reason = Some("Retrying".to_owned());
        let second = run(RunPhase::Running, vec![retry]);
        let drafts = diff(&Snapshot::of(&first), &second);
        assert_eq!(summary(&drafts), [("node_status", Some("fetch"))]);
        assert_eq!(
            drafts[0].data,
            json!({"status": "running", "previous": "running", "attempts": 2,
                   "exit_code": 3, "reason": "Retrying"})
        );
    }

    #[test]
    fn outputs_new_and_changed_but_not_unchanged() {
        let with = |pairs: &[(&str, &str)]| {
            let mut n = node("fetch", NodePhase::Running, 1);
            n.outputs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            run(RunPhase::Running, vec![n])
        };
        let old = with(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let new = with(&[("d", "4"), ("a", "1"), ("b", "22")]);
        let drafts = diff(&Snapshot::of(&old), &new);
        assert_eq!(summary(&drafts), [("output", Some("fetch")), ("output", Some("fetch"))]);
        assert_eq!(drafts[0].data, json!({"key": "b", "value": "22"}));
        assert_eq!(drafts[1].data, json!({"key": "d", "value": "4"}));
    }

    #[test]
    fn terminal_run_emits_status_then_end_once() {
        let running = run(RunPhase::Running, vec![node("fetch", NodePhase::Running, 1)]);
        let mut failed = run(RunPhase::Failed, vec![node("fetch", NodePhase::Failed, 1)]);
        failed.message = Some("fetch failed".to_owned());
        let drafts = diff(&Snapshot::of(&running), &failed);
        assert_eq!(
            summary(&drafts),
            [("node_status", Some("fetch")), ("status", None), ("end", None)]
        );
        assert_eq!(
            drafts[1].data,
            json!({"status": "failed", "previous": "running", "message": "fetch failed"})
        );
        assert_eq!(drafts[2].data, json!({"status": "failed"}));
        let snapshot = Snapshot::of(&failed);
        assert!(snapshot.is_terminal());
        assert!(diff(&snapshot, &failed).is_empty());
    }

    #[test]
    fn removed_node_is_ignored() {
        let both = run(
            RunPhase::Running,
            vec![node("a", NodePhase::Running, 1), node("b", NodePhase::Running, 1)],
        );
        let only_a = run(RunPhase::Running, vec![node("a", NodePhase::Running, 1)]);
        assert!(diff(&Snapshot::of(&both), &only_a).is_empty());
    }

    #[test]
    fn diff_is_repeatable() {
        let old = run(RunPhase::Queued, vec![node("a", NodePhase::Pending, 0)]);
        let new = run(RunPhase::Running, vec![node("a", NodePhase::Running, 1)]);
        let snapshot = Snapshot::of(&old);
        assert_eq!(diff(&snapshot, &new), diff(&snapshot, &new));
        assert_eq!(summary(&diff(&snapshot, &new)).len(), 2);
    }

    #[test]
    fn snapshot_round_trips_through_json() {
        let mut gate = node("gate", NodePhase::Succeeded, 0);
        gate.decision = Some(GateDecisionRecord::default());
        let mut fetch = node("fetch", NodePhase::Running, 2);
        fetch.outputs.insert("url".to_owned(), "https://x".to_owned());
        let snapshot = Snapshot::of(&run(RunPhase::Running, vec![gate, fetch]));
        let text = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(serde_json::from_str::<Snapshot>(&text).unwrap(), snapshot);
        let empty: Snapshot = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Snapshot::default());
    }

    #[test]
    fn names_match_serde() {
        for kind in [
            EventKind::Status,
            EventKind::NodeStatus,
            EventKind::GateDecision,
            EventKind::Output,
            EventKind::Log,
            EventKind::End,
        ] {
            assert_eq!(json!(kind), kind.as_str());
        }
        for phase in [
            RunPhase::Queued,
            RunPhase::Running,
            RunPhase::Succeeded,
            RunPhase::Failed,
            RunPhase::Cancelled,
        ] {
            assert_eq!(json!(phase), run_phase_name(phase));
        }
        for phase in [
            NodePhase::Pending,
            NodePhase::Running,
            NodePhase::WaitingApproval,
            NodePhase::Succeeded,
            NodePhase::Failed,
            NodePhase::Skipped,
        ] {
            assert_eq!(json!(phase), node_phase_name(phase));
        }
        assert_eq!(json!(GateDecision::Reject), "reject");
    }

    #[test]
    fn short_hash_is_16_hex_digits() {
        // SHA-256("abc") = ba7816bf8f01cfea...
        assert_eq!(short_hash("abc"), "ba7816bf8f01cfea");
    }

    #[test]
    fn times_have_milliseconds() {
        let at = |s: &str| format_time(s.parse().unwrap());
        assert_eq!(at("2026-11-22T10:00:00.123456Z"), "2026-11-22T10:00:00.123Z");
        assert_eq!(at("2026-11-22T10:00:00Z"), "2026-11-22T10:00:00.000Z");
    }
}
