//! Bounds applied while parsing, so hostile input fails fast instead of exhausting memory.

/// Upper bounds checked by the parser; exceeding one is a [`crate::ParseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted message, in bytes (default 1 MiB).
    pub max_message_bytes: usize,
    /// Most segments in one message (default 10,000).
    pub max_segments: usize,
    /// Most fields in one segment, not counting the segment id (default 1,000).
    pub max_fields: usize,
    /// Most repetitions in one field (default 1,000).
    pub max_repetitions: usize,
    /// Most components in one repetition (default 1,000).
    pub max_components: usize,
    /// Most subcomponents in one component (default 1,000).
    pub max_subcomponents: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_segments: 10_000,
            max_fields: 1_000,
            max_repetitions: 1_000,
            max_components: 1_000,
            max_subcomponents: 1_000,
        }
    }
}
