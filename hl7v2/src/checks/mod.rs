//! Syntactic checks of a parsed message against the message family: repeated MSH, unknown
//! segments and extra components; and the strict rules that turn findings into errors.

pub(crate) mod components;
pub(crate) mod segments;

use crate::event::catalog::Family;
use crate::message::Message;
use crate::warning::{self, Severity, Warning};

/// Syntactic warnings in order: `MULTIPLE_MSH` and `UNKNOWN_SEGMENT` (segment order), then
/// `EXTRA_COMPONENTS` (segment and field order).
pub(crate) fn syntactic(message: &Message<'_>, family: Option<Family>) -> Vec<Warning> {
    let mut out = Vec::new();
    segments::check(message, family, &mut out);
    components::check(message, family, &mut out);
    out
}

/// Codes that strict mode refuses.
pub(crate) const STRICT_CODES: [&str; 5] = [
    warning::NON_STANDARD_LINE_ENDING,
    warning::NON_STANDARD_DELIMITERS,
    warning::MULTIPLE_MSH,
    warning::UNKNOWN_SEGMENT,
    warning::EXTRA_COMPONENTS,
];

/// The warnings strict mode refuses, as errors.
pub(crate) fn strict_violations(warnings: &[Warning]) -> Vec<Warning> {
    warnings
        .iter()
        .filter(|w| STRICT_CODES.contains(&w.code))
        .map(|w| Warning { severity: Severity::Error, ..w.clone() })
        .collect()
}
