//! The fields every event carries: id, type, timestamp and the MSH header.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::delimiters::Delimiters;

use super::context::Ctx;

/// The `source_format` of every event of this crate.
pub const SOURCE_FORMAT: &str = "hl7v2";

/// Top-level event fields (flattened into [`super::Event`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventMeta {
    /// `evt_` + the first 32 hex digits of a SHA-256 over the control id, the message type,
    /// the event's index and the message (see [`event_id`]).
    pub id: String,
    /// Canonical event type, e.g. `inpatient_admit` (table in the `event` module docs).
    #[serde(rename = "type")]
    pub event_type: String,
    /// MSH-7 as RFC 3339 (`Z` when no offset is given) or a date; absent when MSH-7 is
    /// empty or invalid (`INVALID_DTM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Always `hl7v2`.
    pub source_format: String,
    /// MSH-10, the message control id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    /// MSH-9.1 `^` MSH-9.2, e.g. `ADT^A01`.
    pub message_type: String,
    /// MSH-12, the HL7 version, e.g. `2.5.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// MSH-3, first component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sending_application: Option<String>,
    /// MSH-4, first component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sending_facility: Option<String>,
    /// MSH-5, first component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiving_application: Option<String>,
    /// MSH-6, first component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiving_facility: Option<String>,
}

/// The deterministic id of event `index` of a message: `evt_` + the first 32 hex digits of
/// SHA-256 over the length-prefixed (8-byte big-endian) control id, message type, decimal
/// index and message text. The message text is the message re-encoded with the standard
/// delimiters and CR terminators, so the id does not depend on line endings or on the
/// delimiter set the sender chose.
#[must_use]
pub fn event_id(control_id: &str, message_type: &str, index: usize, message: &str) -> String {
    let mut hasher = Sha256::new();
    let index = index.to_string();
    for part in [control_id, message_type, &index, message] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut id = String::with_capacity(36);
    id.push_str("evt_");
    for byte in digest.iter().take(16) {
        // Writing to a String cannot fail.
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// `ADT^A01` from the message's code and trigger.
pub(crate) fn message_type(ctx: &Ctx<'_, '_>, trigger: &str) -> String {
    let code = ctx.message.message_type().unwrap_or_default();
    if trigger.is_empty() { code.to_owned() } else { format!("{code}^{trigger}") }
}

/// The header fields of event `index`.
pub(crate) fn build(
    ctx: &mut Ctx<'_, '_>,
    event_type: &str,
    trigger: &str,
    index: usize,
) -> EventMeta {
    let message_type = message_type(ctx, trigger);
    let msh = ctx.first("MSH");
    let timestamp = msh.and_then(|msh| ctx.datetime(msh, 7, 1));
    let header = |n: usize| msh.and_then(|msh| msh.value(n, 1));
    let control_id = header(10);
    let canonical = ctx.message.encode_with(&Delimiters::default());
    EventMeta {
        id: event_id(control_id.as_deref().unwrap_or_default(), &message_type, index, &canonical),
        event_type: event_type.to_owned(),
        timestamp,
        source_format: SOURCE_FORMAT.to_owned(),
        source_message_id: control_id,
        message_type,
        version: header(12),
        sending_application: header(3),
        sending_facility: header(4),
        receiving_application: header(5),
        receiving_facility: header(6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_separate_their_parts() {
        let id = event_id("MSG1", "ADT^A01", 0, "MSH|^~\\&\r");
        assert_eq!(id.len(), 36);
        assert!(id.starts_with("evt_"));
        assert_eq!(id, event_id("MSG1", "ADT^A01", 0, "MSH|^~\\&\r"));
        assert_ne!(id, event_id("MSG1", "ADT^A01", 1, "MSH|^~\\&\r"));
        assert_ne!(event_id("AB", "C", 0, ""), event_id("A", "BC", 0, ""));
    }
}
