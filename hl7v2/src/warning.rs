//! Non-fatal findings of the parser and of the event mapping, in the reference's warning
//! shape. Serialized as `{"phase", "code", "message", "path", "severity"}` with lower-case
//! phase and severity and no `path` key when there is none. Messages describe, never quote
//! message content.

use std::fmt;

use serde::Serialize;

/// `NON_STANDARD_LINE_ENDING`: segments were terminated by LF or CRLF instead of CR.
pub const NON_STANDARD_LINE_ENDING: &str = "NON_STANDARD_LINE_ENDING";
/// `NON_STANDARD_DELIMITERS`: MSH-1/MSH-2 differ from `|^~\&` (optionally `|^~\&#`).
pub const NON_STANDARD_DELIMITERS: &str = "NON_STANDARD_DELIMITERS";
/// `EMPTY_SEGMENT`: blank lines between segments were skipped.
pub const EMPTY_SEGMENT: &str = "EMPTY_SEGMENT";
/// `BYTE_ORDER_MARK`: a leading UTF-8 byte order mark was skipped.
pub const BYTE_ORDER_MARK: &str = "BYTE_ORDER_MARK";

/// `MULTIPLE_MSH`: a later segment is another MSH (one input is one message; split
/// batches first).
pub const MULTIPLE_MSH: &str = "MULTIPLE_MSH";
/// `UNKNOWN_SEGMENT`: a segment id that the message family does not define (Z segments are
/// allowed silently).
pub const UNKNOWN_SEGMENT: &str = "UNKNOWN_SEGMENT";
/// `EXTRA_COMPONENTS`: a mapped field has more components than its HL7 datatype.
pub const EXTRA_COMPONENTS: &str = "EXTRA_COMPONENTS";
/// `MISSING_PV1`: an ADT trigger that requires PV1 has none; the event has no encounter.
pub const MISSING_PV1: &str = "MISSING_PV1";
/// `MISSING_EVN`: an ADT message has no EVN segment.
pub const MISSING_EVN: &str = "MISSING_EVN";
/// `INVALID_DTM`: a mapped date/time field is not a valid HL7 DTM; the event omits it.
pub const INVALID_DTM: &str = "INVALID_DTM";
/// `INVALID_SSN_AREA`: PID-19 starts with an area number never issued (000, 666, 900–999).
pub const INVALID_SSN_AREA: &str = "INVALID_SSN_AREA";
/// `NO_EVENT_MAPPING`: the message type has no event mapping; it was parsed structurally.
pub const NO_EVENT_MAPPING: &str = "NO_EVENT_MAPPING";

/// Processing stage that produced a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Raw bytes: encoding, line endings, framing.
    Byte,
    /// Message syntax: delimiters, segment structure.
    Syntactic,
    /// Meaning of values (used by the event mapping built on this crate).
    Semantic,
}

/// How serious a warning is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational only.
    Info,
    /// Tolerated deviation from the standard.
    Warning,
    /// Deviation that a strict consumer should reject.
    Error,
}

impl Phase {
    /// Lower-case name as in the reference (`byte`, `syntactic`, `semantic`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Byte => "byte",
            Self::Syntactic => "syntactic",
            Self::Semantic => "semantic",
        }
    }
}

impl Severity {
    /// Lower-case name (`info`, `warning`, `error`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// One warning: `{phase, code, message, path, severity}`; never contains message content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// Stage that produced it.
    pub phase: Phase,
    /// Stable machine-readable code, e.g. [`NON_STANDARD_LINE_ENDING`].
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
    /// Location such as `MSH-2` or `PID.3[0]`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Seriousness.
    pub severity: Severity,
}

impl Warning {
    /// A warning of `phase` and `severity` at `path`.
    #[must_use]
    pub fn new(
        phase: Phase,
        severity: Severity,
        code: &'static str,
        message: impl Into<String>,
        path: Option<String>,
    ) -> Self {
        Self { phase, code, message: message.into(), path, severity }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.severity.as_str(), self.code, self.message)?;
        match &self.path {
            Some(path) => write!(f, " (at {path})"),
            None => Ok(()),
        }
    }
}
