//! Writing messages back: verbatim ([`Message::encode`]) or re-escaped for another
//! delimiter set ([`Message::encode_with`]).

use crate::delimiters::Delimiters;
use crate::escape::{escape, unescape};
use crate::message::{Message, Segment};
use crate::value::Field;

impl Message<'_> {
    /// The message as parsed, each segment followed by CR: equal to the input with LF and
    /// CRLF turned into CR, blank lines and any byte order mark removed, and a final CR
    /// added when the input had no terminator after its last segment.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.source.len() + 1);
        for segment in &self.segments {
            out.push_str(segment.raw);
            out.push('\r');
        }
        out
    }

    /// The message re-encoded with `target` delimiters (MSH-1/MSH-2 rewritten, every
    /// subcomponent unescaped and re-escaped), each segment followed by CR. `target`
    /// should be complete (as from [`Delimiters::new`]); separators it lacks fall back to
    /// the standard characters. Formatting escapes without a text equivalent (`\H\`,
    /// `\N\`, `\C..\`) are not preserved.
    #[must_use]
    pub fn encode_with(&self, target: &Delimiters) -> String {
        let mut out = String::with_capacity(self.source.len() + self.source.len() / 8);
        for segment in &self.segments {
            encode_segment(segment, &self.delimiters, target, &mut out);
            out.push('\r');
        }
        out
    }
}

fn encode_segment(
    segment: &Segment<'_>,
    source: &Delimiters,
    target: &Delimiters,
    out: &mut String,
) {
    out.push_str(segment.id);
    let field_separator = char::from(target.field());
    let mut first = 1;
    if segment.id == "MSH" && segment.field_count() >= 2 {
        out.push(field_separator);
        out.push_str(&target.encoding_characters());
        first = 3;
    }
    for n in first..=segment.field_count() {
        out.push(field_separator);
        if let Some(field) = segment.field(n) {
            encode_field(&field, source, target, out);
        }
    }
}

fn encode_field(field: &Field<'_>, source: &Delimiters, target: &Delimiters, out: &mut String) {
    let standard = Delimiters::default();
    let repetition = separator(target.repetition(), standard.repetition());
    let component = char::from(target.component());
    let subcomponent = separator(target.subcomponent(), standard.subcomponent());
    for (r, rep) in field.repetitions().enumerate() {
        if r > 0 {
            out.push(repetition);
        }
        for (c, comp) in rep.components().enumerate() {
            if c > 0 {
                out.push(component);
            }
            for (s, sub) in comp.subcomponents().enumerate() {
                if s > 0 {
                    out.push(subcomponent);
                }
                out.push_str(&escape(&unescape(sub.raw(), source), target));
            }
        }
    }
}

fn separator(declared: Option<u8>, fallback: Option<u8>) -> char {
    char::from(declared.or(fallback).unwrap_or(b'^'))
}
