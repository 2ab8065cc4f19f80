//! The parsed message: segments borrowing the input, header accessors and path access.

use std::borrow::Cow;

use crate::delimiters::Delimiters;
use crate::error::{ParseError, PathError};
use crate::limits::Limits;
use crate::path::Path;
use crate::value::Field;
use crate::warning::Warning;

/// One segment: its id and fields, borrowed from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    pub(crate) id: &'a str,
    pub(crate) raw: &'a str,
    /// Field texts; index 0 is field 1 (for MSH: MSH-1, the separator itself).
    pub(crate) fields: Vec<&'a str>,
    pub(crate) index: usize,
    pub(crate) delimiters: Delimiters,
}

impl<'a> Segment<'a> {
    /// The three-character segment id, e.g. `PID`.
    #[must_use]
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The whole segment as written, without its terminator.
    #[must_use]
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// 0-based position of the segment in its message.
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of fields present (for MSH this counts MSH-1 and MSH-2).
    #[must_use]
    pub fn field_count(&self) -> usize {
        self.fields.len()
    }

    fn is_msh(&self) -> bool {
        self.id == "MSH"
    }

    /// Field `n`, 1-based with HL7 numbering (`MSH-1` is the field separator, `MSH-2` the
    /// encoding characters, both literal; for other segments field 1 follows the id).
    #[must_use]
    pub fn field(&self, n: usize) -> Option<Field<'a>> {
        let raw = *self.fields.get(n.checked_sub(1)?)?;
        Some(Field::new(raw, self.delimiters, self.is_msh() && n <= 2))
    }

    /// All fields, in order (field 1 first).
    pub fn fields(&self) -> impl Iterator<Item = Field<'a>> + '_ {
        (1..=self.fields.len()).filter_map(|n| self.field(n))
    }

    /// Raw text of field `n` (1-based), if present.
    #[must_use]
    pub fn field_raw(&self, n: usize) -> Option<&'a str> {
        self.field(n).map(|f| f.raw())
    }

    /// Unescaped text of field `n` (1-based), if present.
    #[must_use]
    pub fn field_text(&self, n: usize) -> Option<Cow<'a, str>> {
        self.field(n).map(|f| f.text())
    }
}

/// A parsed HL7v2 message borrowing its input; see the crate docs for the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    pub(crate) source: &'a str,
    pub(crate) delimiters: Delimiters,
    pub(crate) segments: Vec<Segment<'a>>,
    pub(crate) warnings: Vec<Warning>,
}

impl<'a> Message<'a> {
    /// Parses bytes (UTF-8, optional byte order mark) with the default [`Limits`].
    ///
    /// # Errors
    /// A [`ParseError`] saying where and why the input is not a message.
    pub fn parse(input: &'a [u8]) -> Result<Self, ParseError> {
        crate::parse::parse_bytes(input, &Limits::default())
    }

    /// Parses bytes with explicit [`Limits`].
    ///
    /// # Errors
    /// A [`ParseError`] saying where and why the input is not a message.
    pub fn parse_with(input: &'a [u8], limits: &Limits) -> Result<Self, ParseError> {
        crate::parse::parse_bytes(input, limits)
    }

    /// Parses text with the default [`Limits`].
    ///
    /// # Errors
    /// A [`ParseError`] saying where and why the input is not a message.
    pub fn parse_str(input: &'a str) -> Result<Self, ParseError> {
        crate::parse::parse_bytes(input.as_bytes(), &Limits::default())
    }

    /// The parsed text (the input without any byte order mark).
    #[must_use]
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// The delimiters declared in MSH-1/MSH-2.
    #[must_use]
    pub fn delimiters(&self) -> &Delimiters {
        &self.delimiters
    }

    /// Structural warnings (line endings, delimiters, blank lines, byte order mark).
    #[must_use]
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// All segments in order; the first is MSH.
    #[must_use]
    pub fn segments(&self) -> &[Segment<'a>] {
        &self.segments
    }

    /// Segments with the given id, in order.
    pub fn segments_by_id<'m>(&'m self, id: &'m str) -> impl Iterator<Item = &'m Segment<'a>> {
        self.segments.iter().filter(move |s| s.id == id)
    }

    /// The first segment with the given id.
    #[must_use]
    pub fn segment(&self, id: &str) -> Option<&Segment<'a>> {
        self.segments.iter().find(|s| s.id == id)
    }

    /// The `occurrence`-th (0-based) segment with the given id.
    #[must_use]
    pub fn segment_at(&self, id: &str, occurrence: usize) -> Option<&Segment<'a>> {
        self.segments.iter().filter(|s| s.id == id).nth(occurrence)
    }

    fn header(&self, field: usize, component: usize) -> Option<&'a str> {
        let raw = self.segments.first()?.field(field)?.component(component)?.raw();
        (!raw.is_empty()).then_some(raw)
    }

    /// Message code, MSH-9.1 (e.g. `ADT`); `None` when absent or empty.
    #[must_use]
    pub fn message_type(&self) -> Option<&'a str> {
        self.header(9, 1)
    }

    /// Trigger event, MSH-9.2 (e.g. `A01`).
    #[must_use]
    pub fn trigger_event(&self) -> Option<&'a str> {
        self.header(9, 2)
    }

    /// Message structure, MSH-9.3 (e.g. `ADT_A01`).
    #[must_use]
    pub fn message_structure(&self) -> Option<&'a str> {
        self.header(9, 3)
    }

    /// Message control id, MSH-10.
    #[must_use]
    pub fn control_id(&self) -> Option<&'a str> {
        self.header(10, 1)
    }

    /// Version id, MSH-12.1 (e.g. `2.5.1`).
    #[must_use]
    pub fn version(&self) -> Option<&'a str> {
        self.header(12, 1)
    }

    /// Raw value at a path such as `PID-5.1` or `OBX[1]-5`; `None` when the path is
    /// invalid or the value absent (use [`Path::parse`] to see syntax errors).
    #[must_use]
    pub fn get(&self, path: &str) -> Option<&'a str> {
        Path::parse(path).ok()?.raw(self)
    }

    /// Unescaped value at a path; `None` when the path is invalid or the value absent.
    #[must_use]
    pub fn get_text(&self, path: &str) -> Option<Cow<'a, str>> {
        Path::parse(path).ok()?.text(self)
    }

    /// Raw value at a path, reporting path syntax errors.
    ///
    /// # Errors
    /// [`PathError`] when `path` does not follow the grammar.
    pub fn try_get(&self, path: &str) -> Result<Option<&'a str>, PathError> {
        Ok(Path::parse(path)?.raw(self))
    }
}
