//! Lineage: which message field became which event field (the reference's canonical source
//! paths).
//!
//! Sources are written `SEG-F` for the first occurrence of a segment and `SEG[n]-F` for a
//! later one; OBX is always indexed from 0 (`OBX[0]-5`), so `OBX[i]` pairs with
//! `event.results[i]`. The fixed table:
//!
//! | Source | Target |
//! |---|---|
//! | MSH-9 | `event.type` |
//! | MSH-10 | `event.source_message_id` |
//! | MSH-7 | `event.timestamp` |
//! | PID-3 | `event.patient.identifiers` |
//! | PID-5 | `event.patient.name` |
//! | PID-7 | `event.patient.birth_date` |
//! | PID-8 | `event.patient.gender` |
//! | PV1-2 | `event.encounter.class` |
//! | PV1-3 | `event.encounter.location` |
//! | PV1-19 | `event.encounter.id` |
//! | OBR-4 | `event.test.panel` |
//! | OBX\[i\]-3 | `event.results[i].test` |
//! | OBX\[i\]-5 | `event.results[i].result` |
//!
//! A link is given only when the field holds a value and the event has the target (an
//! invalid MSH-7 gives no `event.timestamp` and so no link). `value_preview` is
//! `[redacted]` for PID-3, 5, 7, 11, 13 and 19; otherwise the field's text (components
//! joined with `^` whatever the declared delimiters), trimmed, and cut to 77 characters
//! followed by `...` when longer than 80 characters.

use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::event::context::segment_label;
use crate::event::text::{canonical_field, field_is_empty};
use crate::message::Message;

/// The preview of an identity field.
pub const REDACTED_PREVIEW: &str = "[redacted]";

/// One link from a message field to an event field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineageLink {
    /// The message field, e.g. `PID-5` or `OBX[1]-5`.
    pub source: String,
    /// The event field, e.g. `event.patient.name` or `event.results[1].result`.
    pub target: String,
    /// A short preview of the value, `[redacted]` for identity fields.
    pub value_preview: String,
}

/// PID fields whose previews are redacted.
const REDACTED_PID_FIELDS: [usize; 6] = [3, 5, 7, 11, 13, 19];

/// (segment, field, target, whether the event has the target).
type Row = (&'static str, usize, &'static str, fn(&Event) -> bool);

const FIXED: &[Row] = &[
    ("MSH", 9, "event.type", |_| true),
    ("MSH", 10, "event.source_message_id", |e| e.meta.source_message_id.is_some()),
    ("MSH", 7, "event.timestamp", |e| e.meta.timestamp.is_some()),
    ("PID", 3, "event.patient.identifiers", |e| {
        e.patient.as_ref().is_some_and(|p| !p.identifiers.is_empty())
    }),
    ("PID", 5, "event.patient.name", |e| e.patient.as_ref().is_some_and(|p| p.name.is_some())),
    ("PID", 7, "event.patient.birth_date", |e| {
        e.patient.as_ref().is_some_and(|p| p.birth_date.is_some())
    }),
    ("PID", 8, "event.patient.gender", |e| e.patient.as_ref().is_some_and(|p| p.gender.is_some())),
    ("PV1", 2, "event.encounter.class", |e| {
        e.encounter.as_ref().is_some_and(|v| v.class.is_some())
    }),
    ("PV1", 3, "event.encounter.location", |e| {
        e.encounter.as_ref().is_some_and(|v| v.location.is_some())
    }),
    ("PV1", 19, "event.encounter.id", |e| e.encounter.as_ref().is_some_and(|v| v.id.is_some())),
    ("OBR", 4, "event.test.panel", |e| e.test.as_ref().is_some_and(|t| t.panel.is_some())),
];

/// The lineage of `event`, mapped from `message`.
pub(crate) fn build(message: &Message<'_>, event: &Event) -> Vec<LineageLink> {
    let mut links = Vec::new();
    for &(id, n, target, has_target) in FIXED {
        if has_target(event) {
            links.extend(link(message, id, 0, n, target.to_owned()));
        }
    }
    for (i, result) in event.results.iter().enumerate() {
        if result.test.is_some() {
            links.extend(link(message, "OBX", i, 3, format!("event.results[{i}].test")));
        }
        if result.result.is_some() {
            links.extend(link(message, "OBX", i, 5, format!("event.results[{i}].result")));
        }
    }
    links
}

fn link(
    message: &Message<'_>,
    id: &str,
    occurrence: usize,
    n: usize,
    target: String,
) -> Option<LineageLink> {
    let field = message.segment_at(id, occurrence)?.field(n)?;
    if field_is_empty(&field) {
        return None;
    }
    let value_preview = if id == "PID" && REDACTED_PID_FIELDS.contains(&n) {
        REDACTED_PREVIEW.to_owned()
    } else {
        preview(&canonical_field(&field))
    };
    Some(LineageLink {
        source: format!("{}-{n}", segment_label(id, occurrence)),
        target,
        value_preview,
    })
}

/// Trimmed, and cut to 77 characters plus `...` when longer than 80 characters.
pub(crate) fn preview(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() > 80 {
        let mut cut: String = text.chars().take(77).collect();
        cut.push_str("...");
        cut
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_count_characters() {
        assert_eq!(preview("  short "), "short");
        let eighty = "é".repeat(80);
        assert_eq!(preview(&eighty), eighty);
        let long = "é".repeat(81);
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), 80);
        assert!(cut.ends_with("é..."));
    }
}
