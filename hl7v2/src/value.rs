//! Borrowed views of a field and its repetitions, components and subcomponents.
//!
//! Every view holds the raw `&'a str` slice of the input plus the delimiters, and splits
//! lazily. Positions are 1-based as in HL7 (`component(1)` is the first component),
//! repetitions are 0-based (`repetition(0)` is the first), matching the path grammar.
//! An empty value has exactly one (empty) part. MSH-1 and MSH-2 are literal: they are never
//! split or unescaped.

use std::borrow::Cow;

use crate::delimiters::Delimiters;
use crate::escape::unescape;

/// Iterator over the parts of a value split on one separator (no separator: one part).
#[derive(Debug, Clone)]
pub(crate) struct Parts<'a> {
    rest: Option<&'a str>,
    separator: Option<u8>,
}

impl<'a> Parts<'a> {
    pub(crate) fn new(raw: &'a str, separator: Option<u8>) -> Self {
        Self { rest: Some(raw), separator }
    }
}

impl<'a> Iterator for Parts<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest.take()?;
        let found = self.separator.and_then(|sep| memchr::memchr(sep, rest.as_bytes()));
        match found {
            // Separators are ASCII, so both sides stay on character boundaries.
            Some(at) => {
                let (part, tail) = rest.split_at_checked(at)?;
                self.rest = tail.get(1..);
                Some(part)
            }
            None => Some(rest),
        }
    }
}

/// The `n`-th (0-based) part of `raw`.
fn nth(raw: &str, separator: Option<u8>, n: usize) -> Option<&str> {
    Parts::new(raw, separator).nth(n)
}

/// The 1-based `position`-th part of `raw`; position 0 is never present.
fn position(raw: &str, separator: Option<u8>, position: usize) -> Option<&str> {
    nth(raw, separator, position.checked_sub(1)?)
}

macro_rules! common {
    () => {
        /// The raw (still escaped) text.
        #[must_use]
        pub fn raw(&self) -> &'a str {
            self.raw
        }

        /// The unescaped text (borrowed when it holds no escape sequence).
        #[must_use]
        pub fn text(&self) -> Cow<'a, str> {
            if self.literal {
                Cow::Borrowed(self.raw)
            } else {
                unescape(self.raw, &self.delimiters)
            }
        }

        /// Whether the raw text is empty.
        #[must_use]
        pub fn is_empty(&self) -> bool {
            self.raw.is_empty()
        }

        /// Whether the value is the explicit HL7 null `""`.
        #[must_use]
        pub fn is_null(&self) -> bool {
            self.raw == "\"\""
        }
    };
}

/// One field (all its repetitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    raw: &'a str,
    delimiters: Delimiters,
    literal: bool,
}

impl<'a> Field<'a> {
    pub(crate) fn new(raw: &'a str, delimiters: Delimiters, literal: bool) -> Self {
        Self { raw, delimiters, literal }
    }

    common!();

    fn repetition_separator(&self) -> Option<u8> {
        if self.literal { None } else { self.delimiters.repetition() }
    }

    /// The repetitions, in order.
    pub fn repetitions(&self) -> impl Iterator<Item = Repetition<'a>> + use<'a> {
        let (delimiters, literal) = (self.delimiters, self.literal);
        Parts::new(self.raw, self.repetition_separator()).map(move |raw| Repetition {
            raw,
            delimiters,
            literal,
        })
    }

    /// The `index`-th repetition, 0-based.
    #[must_use]
    pub fn repetition(&self, index: usize) -> Option<Repetition<'a>> {
        let raw = nth(self.raw, self.repetition_separator(), index)?;
        Some(Repetition { raw, delimiters: self.delimiters, literal: self.literal })
    }

    /// Component `position` (1-based) of the first repetition.
    #[must_use]
    pub fn component(&self, position: usize) -> Option<Component<'a>> {
        self.repetition(0)?.component(position)
    }
}

/// One repetition of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repetition<'a> {
    raw: &'a str,
    delimiters: Delimiters,
    literal: bool,
}

impl<'a> Repetition<'a> {
    common!();

    fn separator(&self) -> Option<u8> {
        if self.literal { None } else { Some(self.delimiters.component()) }
    }

    /// The components, in order.
    pub fn components(&self) -> impl Iterator<Item = Component<'a>> + use<'a> {
        let (delimiters, literal) = (self.delimiters, self.literal);
        Parts::new(self.raw, self.separator()).map(move |raw| Component {
            raw,
            delimiters,
            literal,
        })
    }

    /// Component `n`, 1-based.
    #[must_use]
    pub fn component(&self, n: usize) -> Option<Component<'a>> {
        let raw = position(self.raw, self.separator(), n)?;
        Some(Component { raw, delimiters: self.delimiters, literal: self.literal })
    }
}

/// One component of a repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component<'a> {
    raw: &'a str,
    delimiters: Delimiters,
    literal: bool,
}

impl<'a> Component<'a> {
    common!();

    fn separator(&self) -> Option<u8> {
        if self.literal { None } else { self.delimiters.subcomponent() }
    }

    /// The subcomponents, in order.
    pub fn subcomponents(&self) -> impl Iterator<Item = Subcomponent<'a>> + use<'a> {
        let (delimiters, literal) = (self.delimiters, self.literal);
        Parts::new(self.raw, self.separator()).map(move |raw| Subcomponent {
            raw,
            delimiters,
            literal,
        })
    }

    /// Subcomponent `n`, 1-based.
    #[must_use]
    pub fn subcomponent(&self, n: usize) -> Option<Subcomponent<'a>> {
        let raw = position(self.raw, self.separator(), n)?;
        Some(Subcomponent { raw, delimiters: self.delimiters, literal: self.literal })
    }
}

/// One subcomponent: the leaf of the structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subcomponent<'a> {
    raw: &'a str,
    delimiters: Delimiters,
    literal: bool,
}

impl<'a> Subcomponent<'a> {
    common!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lazily_with_one_part_for_empty() {
        let f = Field::new("a^b&c~d", Delimiters::default(), false);
        assert_eq!(f.repetitions().count(), 2);
        assert_eq!(f.component(2).unwrap().subcomponent(2).unwrap().raw(), "c");
        assert_eq!(f.repetition(1).unwrap().raw(), "d");
        assert!(f.repetition(2).is_none());
        assert!(f.component(0).is_none());
        let empty = Field::new("", Delimiters::default(), false);
        assert_eq!(empty.repetitions().count(), 1);
    }

    #[test]
    fn literal_fields_are_not_split() {
        let f = Field::new("^~\\&", Delimiters::default(), true);
        assert_eq!(f.component(1).unwrap().text(), "^~\\&");
        assert!(f.component(2).is_none());
    }
}
