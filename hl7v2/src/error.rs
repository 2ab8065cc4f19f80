//! Errors of parsing, path syntax and MLLP framing; they say where and why, never echo content.

use thiserror::Error;

/// Why a message could not be parsed. Segment indexes are 0-based positions in the message;
/// field numbers are HL7 field numbers (MSH-3 is field 3).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// The input holds no segment at all.
    #[error("empty message")]
    Empty,
    /// The input is larger than [`crate::Limits::max_message_bytes`].
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Input size in bytes.
        size: usize,
        /// Configured limit.
        limit: usize,
    },
    /// The input is not valid UTF-8.
    #[error("invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8 {
        /// Offset of the first invalid byte (after any byte order mark).
        offset: usize,
    },
    /// The first segment is not `MSH`.
    #[error("message does not start with an MSH segment")]
    MissingMsh,
    /// The MSH segment is too short to declare its delimiters (at least 8 bytes).
    #[error("MSH segment of {len} bytes is too short to hold MSH-1 and MSH-2")]
    MshTooShort {
        /// Length of the MSH segment in bytes.
        len: usize,
    },
    /// MSH-1/MSH-2 do not form a legal delimiter set.
    #[error("invalid delimiters in MSH-1/MSH-2: {reason}")]
    InvalidDelimiters {
        /// What is wrong with them.
        reason: &'static str,
    },
    /// A segment id is not three upper-case letters or digits followed by the field separator.
    #[error("segment {segment_index}: invalid segment id")]
    InvalidSegmentId {
        /// Position of the segment.
        segment_index: usize,
    },
    /// The message has more segments than [`crate::Limits::max_segments`].
    #[error("more than {limit} segments")]
    TooManySegments {
        /// Configured limit.
        limit: usize,
    },
    /// A segment has more fields than allowed.
    #[error("segment {segment_index} ({segment_id}): more than {limit} fields")]
    TooManyFields {
        /// Position of the segment.
        segment_index: usize,
        /// Its id.
        segment_id: String,
        /// Configured limit.
        limit: usize,
    },
    /// A field, repetition or component has too many parts.
    #[error("segment {segment_index} ({segment_id}) field {field}: more than {limit} {what}")]
    TooManyParts {
        /// Position of the segment.
        segment_index: usize,
        /// Its id.
        segment_id: String,
        /// HL7 field number.
        field: usize,
        /// `repetitions`, `components` or `subcomponents`.
        what: &'static str,
        /// Configured limit.
        limit: usize,
    },
}

/// Why a path such as `PID-3[1].4.1` is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid path at character {position}: {reason}")]
pub struct PathError {
    /// 0-based character position where parsing stopped.
    pub position: usize,
    /// What was expected.
    pub reason: &'static str,
}

/// Errors of the MLLP decoder.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MllpError {
    /// A frame grew beyond the decoder's maximum; its bytes were discarded up to the next end.
    #[error("MLLP frame exceeds {limit} bytes")]
    FrameTooLarge {
        /// Configured maximum.
        limit: usize,
    },
    /// A start byte arrived inside a non-empty frame; the unterminated frame was dropped.
    #[error("MLLP frame of {len} bytes was not terminated before the next start byte")]
    Unterminated {
        /// Bytes dropped.
        len: usize,
    },
}
