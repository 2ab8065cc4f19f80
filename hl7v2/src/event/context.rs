//! The state of one mapping: the message, the segments with their occurrence numbers, and
//! the semantic warnings found on the way.

use crate::datetime::parse_dtm;
use crate::message::{Message, Segment};
use crate::value::{Field, Repetition};
use crate::warning::{self, Phase, Severity, Warning};

use super::text::{canonical_field, clean, comp};

/// A segment and its 0-based occurrence among the segments with the same id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seg<'m, 'a> {
    pub(crate) segment: &'m Segment<'a>,
    pub(crate) occurrence: usize,
}

impl<'a> Seg<'_, 'a> {
    /// `PID`, `NK1[1]`, `OBX[0]`: the segment part of lineage and warning paths (OBX is
    /// always indexed, other segments from their second occurrence on).
    pub(crate) fn label(&self) -> String {
        segment_label(self.segment.id(), self.occurrence)
    }

    /// Field `n`, if present.
    pub(crate) fn field(&self, n: usize) -> Option<Field<'a>> {
        self.segment.field(n)
    }

    /// First repetition of field `n`.
    pub(crate) fn rep(&self, n: usize) -> Option<Repetition<'a>> {
        self.field(n)?.repetition(0)
    }

    /// All repetitions of field `n` (none when absent).
    pub(crate) fn reps(&self, n: usize) -> Vec<Repetition<'a>> {
        self.field(n).map(|f| f.repetitions().collect()).unwrap_or_default()
    }

    /// Component `c` (first subcomponent) of the first repetition of field `n`.
    pub(crate) fn value(&self, n: usize, c: usize) -> Option<String> {
        comp(&self.rep(n)?, c)
    }

    /// Field `n` as delimiter-independent text (see `text::canonical_field`).
    pub(crate) fn text(&self, n: usize) -> Option<String> {
        clean(canonical_field(&self.field(n)?).into())
    }
}

/// The segment part of a path; see [`Seg::label`].
pub(crate) fn segment_label(id: &str, occurrence: usize) -> String {
    if occurrence > 0 || id == "OBX" { format!("{id}[{occurrence}]") } else { id.to_owned() }
}

/// One mapping in progress.
pub(crate) struct Ctx<'m, 'a> {
    pub(crate) message: &'m Message<'a>,
    pub(crate) warnings: Vec<Warning>,
}

impl<'m, 'a> Ctx<'m, 'a> {
    pub(crate) fn new(message: &'m Message<'a>) -> Self {
        Self { message, warnings: Vec::new() }
    }

    /// Every segment with the given id, with its occurrence.
    pub(crate) fn all(&self, id: &'m str) -> impl Iterator<Item = Seg<'m, 'a>> + use<'m, 'a> {
        self.message
            .segments_by_id(id)
            .enumerate()
            .map(|(occurrence, segment)| Seg { segment, occurrence })
    }

    /// The first segment with the given id.
    pub(crate) fn first(&self, id: &'m str) -> Option<Seg<'m, 'a>> {
        self.all(id).next()
    }

    /// Component `c` of field `n` of `seg` as ISO date/time text. A value that is present but
    /// not a DTM gives `INVALID_DTM` (path `SEG.n`) and `None`.
    pub(crate) fn datetime(&mut self, seg: Seg<'_, '_>, n: usize, c: usize) -> Option<String> {
        let value = seg.value(n, c)?;
        match parse_dtm(&value) {
            Ok(dtm) => Some(dtm.to_iso()),
            Err(error) => {
                self.semantic(
                    warning::INVALID_DTM,
                    format!("{}-{n} is not a valid date/time ({})", seg.segment.id(), error.reason),
                    format!("{}.{n}", seg.label()),
                );
                None
            }
        }
    }

    /// Records a semantic warning.
    pub(crate) fn semantic(&mut self, code: &'static str, message: String, path: String) {
        self.warnings.push(Warning::new(
            Phase::Semantic,
            Severity::Warning,
            code,
            message,
            Some(path),
        ));
    }
}
