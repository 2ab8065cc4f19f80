//! The delimiter set a message declares in MSH-1 and MSH-2.

use crate::error::ParseError;

/// Field, component, repetition, escape and subcomponent characters (plus the v2.7+
/// truncation character, kept but otherwise ignored). MSH-2 may be truncated, so the
/// repetition, escape and subcomponent characters are optional: a missing one is simply
/// never split on (or, for the escape character, never unescaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Delimiters {
    field: u8,
    component: u8,
    repetition: Option<u8>,
    escape: Option<u8>,
    subcomponent: Option<u8>,
    truncation: Option<u8>,
}

impl Default for Delimiters {
    /// The standard set `|^~\&`.
    fn default() -> Self {
        Self {
            field: b'|',
            component: b'^',
            repetition: Some(b'~'),
            escape: Some(b'\\'),
            subcomponent: Some(b'&'),
            truncation: None,
        }
    }
}

impl Delimiters {
    /// A complete set from field, component, repetition, escape and subcomponent
    /// characters; each must be distinct printable ASCII punctuation.
    ///
    /// # Errors
    /// [`ParseError::InvalidDelimiters`] when the set is not legal.
    pub fn new(
        field: char,
        component: char,
        repetition: char,
        escape: char,
        subcomponent: char,
    ) -> Result<Self, ParseError> {
        let all = [field, component, repetition, escape, subcomponent];
        let mut bytes = [0u8; 5];
        for (slot, c) in bytes.iter_mut().zip(all) {
            *slot = u8::try_from(c).map_err(|_| invalid("delimiters must be ASCII"))?;
        }
        let [f, c, r, e, s] = bytes;
        let set = Self {
            field: f,
            component: c,
            repetition: Some(r),
            escape: Some(e),
            subcomponent: Some(s),
            truncation: None,
        };
        set.validate()?;
        Ok(set)
    }

    /// Reads the set from MSH-1 (`field`) and the MSH-2 bytes (1 to 5 characters).
    pub(crate) fn from_msh(field: u8, encoding: &[u8]) -> Result<Self, ParseError> {
        let (&component, rest) = encoding.split_first().ok_or_else(|| invalid("MSH-2 is empty"))?;
        if rest.len() > 4 {
            return Err(invalid("MSH-2 holds more than 5 characters"));
        }
        let set = Self {
            field,
            component,
            repetition: rest.first().copied(),
            escape: rest.get(1).copied(),
            subcomponent: rest.get(2).copied(),
            truncation: rest.get(3).copied(),
        };
        set.validate()?;
        Ok(set)
    }

    fn declared(&self) -> impl Iterator<Item = u8> {
        [Some(self.field), Some(self.component), self.repetition, self.escape, self.subcomponent]
            .into_iter()
            .chain([self.truncation])
            .flatten()
    }

    fn validate(&self) -> Result<(), ParseError> {
        let mut seen = [false; 128];
        for b in self.declared() {
            if !b.is_ascii_punctuation() {
                return Err(invalid("delimiters must be printable ASCII punctuation"));
            }
            let slot = seen.get_mut(usize::from(b)).ok_or_else(|| invalid("non-ASCII"))?;
            if *slot {
                return Err(invalid("delimiters must be distinct"));
            }
            *slot = true;
        }
        Ok(())
    }

    /// Field separator (MSH-1).
    #[must_use]
    pub fn field(&self) -> u8 {
        self.field
    }
    /// Component separator (MSH-2, 1st character).
    #[must_use]
    pub fn component(&self) -> u8 {
        self.component
    }
    /// Repetition separator (MSH-2, 2nd character), if declared.
    #[must_use]
    pub fn repetition(&self) -> Option<u8> {
        self.repetition
    }
    /// Escape character (MSH-2, 3rd character), if declared.
    #[must_use]
    pub fn escape(&self) -> Option<u8> {
        self.escape
    }
    /// Subcomponent separator (MSH-2, 4th character), if declared.
    #[must_use]
    pub fn subcomponent(&self) -> Option<u8> {
        self.subcomponent
    }
    /// Truncation character (MSH-2, 5th character, v2.7+), if declared; never acted upon.
    #[must_use]
    pub fn truncation(&self) -> Option<u8> {
        self.truncation
    }

    /// Whether this is `|^~\&`, optionally followed by the truncation character `#`.
    #[must_use]
    pub fn is_standard(&self) -> bool {
        let standard = Self::default();
        self.field == standard.field
            && self.component == standard.component
            && self.repetition == standard.repetition
            && self.escape == standard.escape
            && self.subcomponent == standard.subcomponent
            && matches!(self.truncation, None | Some(b'#'))
    }

    /// MSH-2 as written: the declared encoding characters in order.
    #[must_use]
    pub fn encoding_characters(&self) -> String {
        self.declared().skip(1).map(char::from).collect()
    }
}

fn invalid(reason: &'static str) -> ParseError {
    ParseError::InvalidDelimiters { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_and_extended_sets() {
        let d = Delimiters::from_msh(b'|', b"^~\\").unwrap();
        assert_eq!(d.subcomponent(), None);
        assert_eq!(d.encoding_characters(), "^~\\");
        let d = Delimiters::from_msh(b'|', b"^~\\&#").unwrap();
        assert!(d.is_standard());
        assert_eq!(d.truncation(), Some(b'#'));
        assert!(Delimiters::from_msh(b'|', b"^~\\&#!").is_err());
        assert!(Delimiters::from_msh(b'|', b"").is_err());
    }

    #[test]
    fn rejects_duplicates_and_letters() {
        assert!(Delimiters::from_msh(b'|', b"^^\\&").is_err());
        assert!(Delimiters::from_msh(b'|', b"A~\\&").is_err());
        assert!(Delimiters::new('|', '#', '~', '\\', '&').is_ok());
        assert!(Delimiters::new('|', '#', '~', '\\', '|').is_err());
        assert!(Delimiters::new('|', 'é', '~', '\\', '&').is_err());
    }
}
