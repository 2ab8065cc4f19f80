//! The agent protocol: what an agent reports by writing JSON lines to its stdout.
//!
//! Each line of the log, without its line ending, is read on its own; blank lines are skipped.
//!
//! - `{"type": "output", "key": K, "value": V}` sets output `K` to `V`: the string itself when
//!   `V` is a JSON string, else its compact JSON text. A later output with the same key
//!   replaces the earlier one. An `output` line without a string `key` or without a `value`
//!   becomes a `log` event saying what is missing.
//! - `{"type": "log", ...}`, or an object without `type`, is a `log` event whose message is its
//!   `message` string (else the whole line), prefixed with `[level] ` when it has a `level`
//!   string.
//! - Any other object is an event of its `type` (`log` when that is not a string), with the
//!   whole line as its message.
//! - Anything else (plain text, arrays, broken JSON) is a `log` event with the line as message.
//!
//! Only the first [`Limits::events`] events are kept, the rest are counted; messages longer
//! than [`MAX_MESSAGE_BYTES`] are cut. The outputs together (keys and values) may not exceed
//! [`Limits::output_bytes`], since they end up in the Run's status.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// Event messages longer than this many bytes are cut and end in `…`.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// What an agent reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentOutput {
    /// Outputs, by key.
    pub outputs: BTreeMap<String, String>,
    /// Events, in log order, at most [`Limits::events`].
    pub events: Vec<AgentEvent>,
    /// Events past [`Limits::events`], counted but not kept.
    pub dropped_events: usize,
}

/// One thing an agent said that is not an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentEvent {
    /// `log`, or the line's own `type`.
    pub kind: String,
    /// What was said, at most [`MAX_MESSAGE_BYTES`] plus the `…` marking a cut.
    pub message: String,
}

/// Why an agent's output is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputError {
    /// The outputs (keys and values) are `size` bytes, more than `limit`.
    TooLarge {
        /// Bytes allowed.
        limit: usize,
        /// Bytes reported.
        size: usize,
    },
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit, size } => {
                write!(f, "outputs are {size} bytes, more than the {limit} allowed per node")
            }
        }
    }
}

impl std::error::Error for OutputError {}

/// How much of an agent's output is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of all outputs' keys and values together; 64 KiB by default.
    pub output_bytes: usize,
    /// Events kept; 100 by default.
    pub events: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { output_bytes: 64 * 1024, events: 100 }
    }
}

/// Reads an agent's log (see the module doc), or refuses outputs larger than allowed.
pub fn parse(log: &str, limits: Limits) -> Result<AgentOutput, OutputError> {
    let mut output = AgentOutput::default();
    for line in log.split('\n').map(|line| line.trim_matches(['\r', '\n'])) {
        if line.trim().is_empty() {
            continue;
        }
        match read_line(line) {
            Line::Output { key, value } => {
                output.outputs.insert(key, value);
            }
            Line::Event { kind, message } if output.events.len() < limits.events => {
                output.events.push(AgentEvent { kind, message: cut(message) });
            }
            Line::Event { .. } => output.dropped_events += 1,
        }
    }
    let size = output.outputs.iter().map(|(key, value)| key.len() + value.len()).sum();
    if size > limits.output_bytes {
        return Err(OutputError::TooLarge { limit: limits.output_bytes, size });
    }
    Ok(output)
}

/// What one line says.
enum Line {
    /// An output.
    Output { key: String, value: String },
    /// An event, its message not cut yet.
    Event { kind: String, message: String },
}

/// Reads one non-blank line.
fn read_line(line: &str) -> Line {
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line) else {
        return log(line.to_owned());
    };
    match object.get("type") {
        None => log_line(&object, line),
        Some(Value::String(kind)) if kind == "log" => log_line(&object, line),
        Some(Value::String(kind)) if kind == "output" => output_line(&object, line),
        Some(Value::String(kind)) => Line::Event { kind: kind.clone(), message: line.to_owned() },
        Some(_) => log(line.to_owned()),
    }
}

/// An `output` line, or a `log` event saying what it lacks.
fn output_line(object: &Map<String, Value>, line: &str) -> Line {
    let Some(key) = object.get("key").and_then(Value::as_str).filter(|key| !key.is_empty()) else {
        return log(format!("output line without a non-empty string key: {line}"));
    };
    let Some(value) = object.get("value") else {
        return log(format!("output line for key {key:?} without a value: {line}"));
    };
    let value = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Line::Output { key: key.to_owned(), value }
}

/// A `log` line: its message, with its level, or the whole line.
fn log_line(object: &Map<String, Value>, line: &str) -> Line {
    let message = object.get("message").and_then(Value::as_str).unwrap_or(line);
    match object.get("level").and_then(Value::as_str) {
        Some(level) => log(format!("[{level}] {message}")),
        None => log(message.to_owned()),
    }
}

/// A `log` event.
fn log(message: String) -> Line {
    Line::Event { kind: "log".to_owned(), message }
}

/// `message`, cut to at most [`MAX_MESSAGE_BYTES`] on a character boundary with `…` appended
/// when longer.
fn cut(mut message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let end = (0..=MAX_MESSAGE_BYTES).rev().find(|&i| message.is_char_boundary(i)).unwrap_or(0);
    message.truncate(end);
    message.push('…');
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(log: &str) -> AgentOutput {
        parse(log, Limits::default()).expect("within limits")
    }

    fn event(kind: &str, message: &str) -> AgentEvent {
        AgentEvent { kind: kind.to_owned(), message: message.to_owned() }
    }

    #[test]
    fn mixed_lines_become_outputs_and_events() {
        let log = r#"starting up
{"type":"output","key":"report","value":"s3://bucket/r.csv"}
{"type":"log","level":"warn","message":"slow source"}
{"message":"no type is a log"}
{"type":"progress","done":3,"of":10}
{"type":"output","key":"summary"
[1, 2, 3]

{"type":"log","level":"info"}
"#;
        let output = parsed(log);
        assert_eq!(
            output.outputs,
            BTreeMap::from([("report".to_owned(), "s3://bucket/r.csv".to_owned())])
        );
        assert_eq!(
            output.events,
            [
                event("log", "starting up"),
                event("log", "[warn] slow source"),
                event("log", "no type is a log"),
                event("progress", r#"{"type":"progress","done":3,"of":10}"#),
                event("log", r#"{"type":"output","key":"summary""#),
                event("log", "[1, 2, 3]"),
                event("log", r#"[info] {"type":"log","level":"info"}"#),
            ]
        );
        assert_eq!(output.dropped_events, 0);
    }

    #[test]
    fn incomplete_output_lines_are_reported_as_logs() {
        let output = parsed(
            r#"{"type":"output","value":"orphan"}
{"type":"output","key":"report"}
{"type":"output","key":7,"value":"x"}"#,
        );
        assert!(output.outputs.is_empty());
        let messages: Vec<&str> = output.events.iter().map(|e| e.message.as_str()).collect();
        assert!(
            messages[0].starts_with("output line without a non-empty string key"),
            "{messages:?}"
        );
        assert!(messages[1].starts_with("output line for key \"report\" without a value"));
        assert!(messages[2].contains(r#""key":7"#), "the line is quoted: {messages:?}");
        assert!(output.events.iter().all(|e| e.kind == "log"));
    }

    #[test]
    fn a_later_output_replaces_an_earlier_one() {
        let output = parsed(
            r#"{"type":"output","key":"status","value":"draft"}
{"type":"output","key":"status","value":"final"}"#,
        );
        assert_eq!(output.outputs["status"], "final");
        assert_eq!(output.outputs.len(), 1);
    }

    #[test]
    fn non_string_values_are_kept_as_compact_json() {
        let output = parsed(
            r#"{"type":"output","key":"count","value":42}
{"type":"output","key":"ok","value":true}
{"type":"output","key":"items","value":[ "a", {"b": 1} ]}"#,
        );
        assert_eq!(output.outputs["count"], "42");
        assert_eq!(output.outputs["ok"], "true");
        assert_eq!(output.outputs["items"], r#"["a",{"b":1}]"#);
    }

    #[test]
    fn outputs_up_to_the_limit_are_accepted() {
        let limits = Limits { output_bytes: 10, events: 100 };
        let log = r#"{"type":"output","key":"k","value":"123456789"}"#;
        assert_eq!(parse(log, limits).expect("exactly at the limit").outputs["k"], "123456789");
        let just_under = r#"{"type":"output","key":"k","value":"12345678"}"#;
        assert!(parse(just_under, limits).is_ok());
    }

    #[test]
    fn outputs_over_the_limit_are_refused() {
        let limits = Limits { output_bytes: 10, events: 100 };
        let log = r#"{"type":"output","key":"k","value":"1234567890"}"#;
        assert_eq!(parse(log, limits), Err(OutputError::TooLarge { limit: 10, size: 11 }));
    }

    #[test]
    fn only_the_final_outputs_count_towards_the_limit() {
        let limits = Limits { output_bytes: 10, events: 100 };
        let big = "x".repeat(100);
        let log = format!(
            "{{\"type\":\"output\",\"key\":\"k\",\"value\":\"{big}\"}}\n\
             {{\"type\":\"output\",\"key\":\"k\",\"value\":\"small\"}}"
        );
        assert_eq!(parse(&log, limits).expect("replaced").outputs["k"], "small");
    }

    #[test]
    fn the_too_large_error_says_both_sizes() {
        let error = OutputError::TooLarge { limit: 65536, size: 70000 };
        assert_eq!(
            error.to_string(),
            "outputs are 70000 bytes, more than the 65536 allowed per node"
        );
    }

    #[test]
    fn the_default_limits_are_64_kib_and_100_events() {
        let value = "v".repeat(64 * 1024 - 1);
        let log = format!("{{\"type\":\"output\",\"key\":\"k\",\"value\":\"{value}\"}}");
        assert!(parse(&log, Limits::default()).is_ok());
        let over = format!("{{\"type\":\"output\",\"key\":\"k\",\"value\":\"{value}v\"}}");
        assert_eq!(
            parse(&over, Limits::default()),
            Err(OutputError::TooLarge { limit: 65536, size: 65537 })
        );
    }

    #[test]
    fn events_past_the_cap_are_counted_not_kept() {
        let log: String = (0..105).map(|i| format!("line {i}\n")).collect();
        let output = parsed(&format!("{log}{{\"type\":\"output\",\"key\":\"k\",\"value\":\"v\"}}"));
        assert_eq!(output.events.len(), 100);
        assert_eq!(output.events[99].message, "line 99");
        assert_eq!(output.dropped_events, 5);
        assert_eq!(output.outputs["k"], "v", "outputs after the cap still count");
    }

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        let long = format!("a{}", "é".repeat(600));
        let output = parsed(&long);
        let message = &output.events[0].message;
        assert!(message.ends_with('…'), "{message}");
        let kept = message.trim_end_matches('…');
        assert_eq!(kept.len(), MAX_MESSAGE_BYTES - 1, "1 + 2*511 bytes fit, half a char does not");
        assert!(long.starts_with(kept));

        let exact = "b".repeat(MAX_MESSAGE_BYTES);
        assert_eq!(parsed(&exact).events[0].message, exact, "a message at the limit is whole");
    }

    #[test]
    fn crlf_line_endings_are_trimmed() {
        let output = parsed(
            "{\"type\":\"output\",\"key\":\"k\",\"value\":\"v\"}\r\nplain text\r\n\r\n{\"level\":\"error\",\"message\":\"boom\"}\r\n",
        );
        assert_eq!(output.outputs["k"], "v");
        assert_eq!(output.events, [event("log", "plain text"), event("log", "[error] boom")]);
    }

    #[test]
    fn a_non_string_type_is_a_log_event() {
        let output = parsed(r#"{"type":3,"message":"odd"}"#);
        assert_eq!(output.events, [event("log", r#"{"type":3,"message":"odd"}"#)]);
    }
}
