//! HL7 escape sequences: decoding on read ([`unescape`]) and encoding on write ([`escape`]).
//!
//! Both directions scan once, without recursion, and borrow the input when nothing changes.

use std::borrow::Cow;

use crate::delimiters::Delimiters;

/// Decodes the escape sequences of `raw` using the declared escape character and
/// delimiters: `\F\ \S\ \T\ \R\ \E\` give the delimiters, `\Xhh..\` (an even, non-zero
/// number of hex digits) gives the bytes (kept literally when they are not UTF-8),
/// `\.br\` gives `\n`, `\H\` and `\N\` are dropped, `\C..\` and `\M..\` (character set
/// switches) are dropped; unknown and unclosed sequences are kept literally.
#[must_use]
pub fn unescape<'a>(raw: &'a str, delimiters: &Delimiters) -> Cow<'a, str> {
    let Some(esc) = delimiters.escape() else {
        return Cow::Borrowed(raw);
    };
    let bytes = raw.as_bytes();
    let Some(first) = memchr::memchr(esc, bytes) else {
        return Cow::Borrowed(raw);
    };
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    let mut next = Some(first);
    while let Some(start) = next {
        let Some((before, from_escape)) = rest.split_at_checked(start) else { break };
        out.push_str(before);
        // `from_escape` begins with the (ASCII) escape character.
        let body = from_escape.get(1..).unwrap_or_default();
        let closed = memchr::memchr(esc, body.as_bytes())
            .and_then(|end| Some((end, body.split_at_checked(end)?)));
        let Some((end, (content, after))) = closed else {
            // Unclosed: the rest is kept literally.
            out.push_str(from_escape);
            return Cow::Owned(out);
        };
        let sequence = from_escape.get(..end + 2).unwrap_or(from_escape);
        decode_sequence(content, sequence, delimiters, &mut out);
        rest = after.get(1..).unwrap_or_default();
        next = memchr::memchr(esc, rest.as_bytes());
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Appends the meaning of one escape sequence (`content` between the escape characters;
/// `sequence` the whole text including them, written back when the content is unknown).
fn decode_sequence(content: &str, sequence: &str, d: &Delimiters, out: &mut String) {
    let delimiter = match content {
        "F" => Some(d.field()),
        "S" => Some(d.component()),
        "T" => d.subcomponent(),
        "R" => d.repetition(),
        "E" => d.escape(),
        _ => None,
    };
    if let Some(b) = delimiter {
        out.push(char::from(b));
        return;
    }
    match content.as_bytes() {
        b"H" | b"N" => {}
        b".br" => out.push('\n'),
        [b'C' | b'M', ..] => {}
        [b'X', hex @ ..] => match decode_hex(hex) {
            Some(text) => out.push_str(&text),
            None => out.push_str(sequence),
        },
        _ => out.push_str(sequence),
    }
}

/// Decodes an even, non-empty run of hex digits into UTF-8 text.
fn decode_hex(hex: &[u8]) -> Option<String> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    let bytes = hex
        .chunks_exact(2)
        .map(|pair| Some(hex_value(*pair.first()?)? << 4 | hex_value(*pair.get(1)?)?))
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Encodes `text` for writing with `delimiters`: each delimiter becomes `\F\ \S\ \T\ \R\`,
/// the escape character `\E\`, a line feed `\.br\` and a carriage return `\X0D\` (so that
/// [`unescape`] gives `text` back). Without a declared escape character nothing can be
/// escaped and `text` is returned unchanged.
#[must_use]
pub fn escape<'a>(text: &'a str, delimiters: &Delimiters) -> Cow<'a, str> {
    let Some(esc) = delimiters.escape() else {
        return Cow::Borrowed(text);
    };
    if !text.bytes().any(|b| escape_code(b, delimiters).is_some()) {
        return Cow::Borrowed(text);
    }
    let esc = char::from(esc);
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    // Every byte compared is ASCII, so `i` and `i + 1` are character boundaries.
    for (i, b) in text.bytes().enumerate() {
        let Some(code) = escape_code(b, delimiters) else { continue };
        out.push_str(text.get(copied..i).unwrap_or_default());
        out.push(esc);
        out.push_str(code);
        out.push(esc);
        copied = i + 1;
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// The escape sequence body standing for byte `b`, if it needs one.
fn escape_code(b: u8, d: &Delimiters) -> Option<&'static str> {
    let code = match b {
        b'\n' => ".br",
        b'\r' => "X0D",
        _ if b == d.field() => "F",
        _ if b == d.component() => "S",
        _ if Some(b) == d.subcomponent() => "T",
        _ if Some(b) == d.repetition() => "R",
        _ if Some(b) == d.escape() => "E",
        _ => return None,
    };
    Some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_when_nothing_to_do() {
        let d = Delimiters::default();
        assert!(matches!(unescape("plain", &d), Cow::Borrowed(_)));
        assert!(matches!(escape("plain", &d), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_then_unescape_is_identity() {
        let d = Delimiters::default();
        for text in ["a|b^c~d\\e&f", "line\nbreak\r\n", "\\Z\\", "é#"] {
            assert_eq!(unescape(&escape(text, &d), &d), text);
        }
    }
}
