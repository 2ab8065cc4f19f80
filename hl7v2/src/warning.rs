//! Non-fatal findings of the parser, in the reference's warning shape.

use std::fmt;

/// `NON_STANDARD_LINE_ENDING`: segments were terminated by LF or CRLF instead of CR.
pub const NON_STANDARD_LINE_ENDING: &str = "NON_STANDARD_LINE_ENDING";
/// `NON_STANDARD_DELIMITERS`: MSH-1/MSH-2 differ from `|^~\&` (optionally `|^~\&#`).
pub const NON_STANDARD_DELIMITERS: &str = "NON_STANDARD_DELIMITERS";
/// `EMPTY_SEGMENT`: blank lines between segments were skipped.
pub const EMPTY_SEGMENT: &str = "EMPTY_SEGMENT";
/// `BYTE_ORDER_MARK`: a leading UTF-8 byte order mark was skipped.
pub const BYTE_ORDER_MARK: &str = "BYTE_ORDER_MARK";

/// Processing stage that produced a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Raw bytes: encoding, line endings, framing.
    Byte,
    /// Message syntax: delimiters, segment structure.
    Syntactic,
    /// Meaning of values (used by the event mapping built on this crate).
    Semantic,
}

/// How serious a warning is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Stage that produced it.
    pub phase: Phase,
    /// Stable machine-readable code, e.g. [`NON_STANDARD_LINE_ENDING`].
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
    /// Location such as `MSH-2`, when there is one.
    pub path: Option<String>,
    /// Seriousness.
    pub severity: Severity,
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
