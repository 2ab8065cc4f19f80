//! Redaction of stored message samples: the patient identity fields of every PID segment.
//!
//! Rules (the reference's sample redaction, with the declared separator honoured):
//! - CR, LF and CRLF become `\n`; lines are joined again with `\n`.
//! - In PID segments, fields 3 (identifiers), 5 (name), 7 (birth date), 11 (address),
//!   13 (home phone) and 19 (SSN), when non-empty, become `REDACTED`; the other fields and
//!   the separators are kept.
//! - A PID segment is a line that starts with `PID` followed by the field separator the
//!   message declares in MSH-1 (the reference only knows a literal `|`). When the input does
//!   not parse as a message, every line starting with `PID` followed by an ASCII punctuation
//!   character is redacted with that character as its separator.
//! - `phi_redacted` is whether the text changed (so normalising line endings alone counts,
//!   as in the reference).
//!
//! ```
//! use keelson_hl7v2::redact;
//!
//! let sample = redact("MSH!^~\\&!APP\rPID!1!!42^^^H^MR!!DOE^JOHN\r");
//! assert_eq!(sample.text, "MSH!^~\\&!APP\nPID!1!!REDACTED!!REDACTED\n");
//! assert!(sample.phi_redacted);
//! ```

use std::borrow::Cow;

use crate::message::Message;

/// PID fields replaced by [`REDACTED`].
pub const REDACTED_PID_FIELDS: [usize; 6] = [3, 5, 7, 11, 13, 19];

/// The text that replaces a redacted field.
pub const REDACTED: &str = "REDACTED";

/// A redacted sample.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Redacted {
    /// The sample with `\n` line endings and the PID identity fields replaced.
    pub text: String,
    /// Whether `text` differs from the input.
    pub phi_redacted: bool,
}

/// Redacts `raw` as described in the module docs.
#[must_use]
pub fn redact(raw: &str) -> Redacted {
    let normalised = raw.replace("\r\n", "\n").replace('\r', "\n");
    let mut pid_lines: Vec<usize> =
        normalised.match_indices("\nPID").map(|(at, _)| at + 1).collect();
    if normalised.starts_with("PID") {
        pid_lines.insert(0, 0);
    }
    if pid_lines.is_empty() {
        let phi_redacted = normalised != raw;
        return Redacted { text: normalised, phi_redacted };
    }
    let declared = Message::parse_str(raw).ok().map(|message| message.delimiters().field());
    let mut text = String::with_capacity(normalised.len());
    let mut copied = 0;
    for start in pid_lines {
        let rest = normalised.get(start..).unwrap_or_default();
        let end = rest.find('\n').map_or(normalised.len(), |len| start + len);
        text.push_str(normalised.get(copied..start).unwrap_or_default());
        text.push_str(&redact_line(normalised.get(start..end).unwrap_or_default(), declared));
        copied = end;
    }
    text.push_str(normalised.get(copied..).unwrap_or_default());
    let phi_redacted = text != raw;
    Redacted { text, phi_redacted }
}

/// The line with its identity fields replaced when it is a PID segment.
fn redact_line(line: &str, declared: Option<u8>) -> Cow<'_, str> {
    let Some(rest) = line.strip_prefix("PID") else { return Cow::Borrowed(line) };
    let Some(&separator) = rest.as_bytes().first() else { return Cow::Borrowed(line) };
    let is_separator = match declared {
        Some(field) => separator == field,
        None => separator.is_ascii_punctuation(),
    };
    if !is_separator {
        return Cow::Borrowed(line);
    }
    let separator = char::from(separator);
    let mut changed = false;
    let fields: Vec<&str> = line
        .split(separator)
        .enumerate()
        .map(|(n, field)| {
            if REDACTED_PID_FIELDS.contains(&n) && !field.is_empty() {
                changed = true;
                REDACTED
            } else {
                field
            }
        })
        .collect();
    if !changed {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    for (n, field) in fields.iter().enumerate() {
        if n > 0 {
            out.push(separator);
        }
        out.push_str(field);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_segments_with_the_declared_separator() {
        let raw = "MSH|^~\\&|A\r\nPID|1||X||Y\r\nNK1|1|DOE\r\n";
        let out = redact(raw);
        assert_eq!(out.text, "MSH|^~\\&|A\nPID|1||REDACTED||REDACTED\nNK1|1|DOE\n");
        // With `!` declared, `|` inside a field is data and the field is redacted whole.
        let out = redact("MSH!^~\\&!A\rPID!1!!X|Y!!D|O\r");
        assert_eq!(out.text, "MSH!^~\\&!A\nPID!1!!REDACTED!!REDACTED\n");
    }

    #[test]
    fn unparsable_input_uses_the_line_separator() {
        let out = redact("PID#1##X##Y#Z\nPID|1||A\nPIDA\nPID");
        assert_eq!(out.text, "PID#1##REDACTED##REDACTED#Z\nPID|1||REDACTED\nPIDA\nPID");
        assert!(out.phi_redacted);
        let untouched = redact("no PID here");
        assert_eq!(untouched.text, "no PID here");
        assert!(!untouched.phi_redacted);
    }

    #[test]
    fn empty_fields_stay_empty_and_line_endings_count() {
        let out = redact("MSH|^~\\&|A\nPID|1||||||\n");
        assert_eq!(out.text, "MSH|^~\\&|A\nPID|1||||||\n");
        assert!(!out.phi_redacted);
        assert!(redact("MSH|^~\\&|A\rPID|1\r").phi_redacted);
    }
}
