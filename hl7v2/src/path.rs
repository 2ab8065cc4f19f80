//! Paths to values: `SEG[occurrence]-field[repetition].component.subcomponent`.
//!
//! Bracketed numbers are 0-based indexes (as the reference's lineage `OBX[0]-5` and warning
//! paths `PID.3[0]`); the other numbers are 1-based HL7 positions. `.` is accepted in place
//! of `-` after the segment (`PID.5.1`). [`Path`]'s `Display` writes the canonical dash form.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::error::PathError;
use crate::escape::unescape;
use crate::message::Message;

/// A parsed path; see the module docs for the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Path {
    segment: [u8; 3],
    occurrence: Option<usize>,
    field: usize,
    repetition: Option<usize>,
    component: Option<usize>,
    subcomponent: Option<usize>,
}

/// Largest number accepted in a path (keeps parsing free of overflow).
const MAX_NUMBER: usize = 999_999;

struct Cursor<'s> {
    bytes: &'s [u8],
    at: usize,
}

impl Cursor<'_> {
    fn error(&self, reason: &'static str) -> PathError {
        PathError { position: self.at, reason }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let found = self.peek() == Some(b);
        self.at += usize::from(found);
        found
    }

    fn number(&mut self) -> Result<usize, PathError> {
        let start = self.at;
        let mut value = 0usize;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            value = value * 10 + usize::from(digit - b'0');
            if value > MAX_NUMBER {
                return Err(self.error("number too large"));
            }
            self.at += 1;
        }
        if self.at == start { Err(self.error("expected a number")) } else { Ok(value) }
    }

    fn position(&mut self) -> Result<usize, PathError> {
        let start = self.at;
        let n = self.number()?;
        if n == 0 {
            return Err(PathError { position: start, reason: "positions start at 1" });
        }
        Ok(n)
    }

    fn index(&mut self) -> Result<Option<usize>, PathError> {
        if !self.eat(b'[') {
            return Ok(None);
        }
        let n = self.number()?;
        if !self.eat(b']') {
            return Err(self.error("expected ']'"));
        }
        Ok(Some(n))
    }

    fn dotted(&mut self) -> Result<Option<usize>, PathError> {
        if self.eat(b'.') { self.position().map(Some) } else { Ok(None) }
    }
}

impl Path {
    /// Parses a path such as `PID-5.1`, `PID-3[1].4.1` or `OBX[2]-5`.
    ///
    /// # Errors
    /// [`PathError`] with the position and reason of the first syntax error.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let mut c = Cursor { bytes: text.as_bytes(), at: 0 };
        let segment = segment_id(&mut c)?;
        let occurrence = c.index()?;
        if !(c.eat(b'-') || c.eat(b'.')) {
            return Err(c.error("expected '-' after the segment"));
        }
        let field = c.position()?;
        let repetition = c.index()?;
        let component = c.dotted()?;
        let subcomponent = if component.is_some() { c.dotted()? } else { None };
        if c.at != c.bytes.len() {
            return Err(c.error("unexpected character"));
        }
        Ok(Self { segment, occurrence, field, repetition, component, subcomponent })
    }

    /// Segment id, e.g. `PID`.
    #[must_use]
    pub fn segment(&self) -> &str {
        std::str::from_utf8(&self.segment).unwrap_or_default()
    }
    /// 0-based occurrence of the segment, if given (absent means the first).
    #[must_use]
    pub fn occurrence(&self) -> Option<usize> {
        self.occurrence
    }
    /// 1-based field number.
    #[must_use]
    pub fn field(&self) -> usize {
        self.field
    }
    /// 0-based repetition, if given (absent means the whole field, or the first
    /// repetition when a component is given).
    #[must_use]
    pub fn repetition(&self) -> Option<usize> {
        self.repetition
    }
    /// 1-based component, if given.
    #[must_use]
    pub fn component(&self) -> Option<usize> {
        self.component
    }
    /// 1-based subcomponent, if given.
    #[must_use]
    pub fn subcomponent(&self) -> Option<usize> {
        self.subcomponent
    }

    /// The raw value and whether it is literal (MSH-1/MSH-2).
    fn locate<'a>(&self, message: &Message<'a>) -> Option<(&'a str, bool)> {
        let segment = message.segment_at(self.segment(), self.occurrence.unwrap_or(0))?;
        let field = segment.field(self.field)?;
        let literal = segment.id() == "MSH" && self.field <= 2;
        if self.repetition.is_none() && self.component.is_none() {
            return Some((field.raw(), literal));
        }
        let repetition = field.repetition(self.repetition.unwrap_or(0))?;
        let Some(component) = self.component else { return Some((repetition.raw(), literal)) };
        let component = repetition.component(component)?;
        let Some(sub) = self.subcomponent else { return Some((component.raw(), literal)) };
        Some((component.subcomponent(sub)?.raw(), literal))
    }

    /// The raw value this path designates in `message`.
    #[must_use]
    pub fn raw<'a>(&self, message: &Message<'a>) -> Option<&'a str> {
        self.locate(message).map(|(raw, _)| raw)
    }

    /// The unescaped value this path designates in `message`.
    #[must_use]
    pub fn text<'a>(&self, message: &Message<'a>) -> Option<Cow<'a, str>> {
        let (raw, literal) = self.locate(message)?;
        Some(if literal { Cow::Borrowed(raw) } else { unescape(raw, message.delimiters()) })
    }
}

fn segment_id(c: &mut Cursor<'_>) -> Result<[u8; 3], PathError> {
    let id = c.bytes.get(..3).ok_or_else(|| c.error("expected a 3-character segment id"))?;
    let [a, b, d] = [id.first(), id.get(1), id.get(2)].map(|b| b.copied().unwrap_or_default());
    let valid = a.is_ascii_uppercase()
        && [b, d].iter().all(|x| x.is_ascii_uppercase() || x.is_ascii_digit());
    if !valid {
        return Err(c.error("segment id must be an upper-case letter and two letters or digits"));
    }
    c.at = 3;
    Ok([a, b, d])
}

impl FromStr for Path {
    type Err = PathError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.segment())?;
        if let Some(n) = self.occurrence {
            write!(f, "[{n}]")?;
        }
        write!(f, "-{}", self.field)?;
        if let Some(n) = self.repetition {
            write!(f, "[{n}]")?;
        }
        for n in [self.component, self.subcomponent].into_iter().flatten() {
            write!(f, ".{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_round_trips_through_display() {
        for text in ["PID-5", "PID-5.1", "PID-3[1].4.1", "OBX[2]-5", "ZX1[0]-1[0].2.3"] {
            assert_eq!(Path::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Path::parse("PID.5.1").unwrap().to_string(), "PID-5.1");
    }

    #[test]
    fn syntax_errors_say_where() {
        let cases = [
            ("", 0),
            ("pid-5", 0),
            ("PID", 3),
            ("PID-0", 4),
            ("PID-5.", 6),
            ("PID-5[1", 7),
            ("PID-5.1.2.3", 9),
            ("PID-99999999", 10),
            ("PID-5x", 5),
        ];
        for (text, position) in cases {
            assert_eq!(Path::parse(text).unwrap_err().position, position, "{text}");
        }
    }
}
