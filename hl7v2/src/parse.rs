//! The parser: line splitting, MSH delimiters, segment and field splitting, limits.

use crate::delimiters::Delimiters;
use crate::error::ParseError;
use crate::limits::Limits;
use crate::message::{Message, Segment};
use crate::value::Parts;
use crate::warning::{self, Phase, Severity, Warning};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Parses `input` under `limits`; single pass, no recursion.
pub(crate) fn parse_bytes<'a>(input: &'a [u8], limits: &Limits) -> Result<Message<'a>, ParseError> {
    if input.len() > limits.max_message_bytes {
        return Err(ParseError::TooLarge { size: input.len(), limit: limits.max_message_bytes });
    }
    let mut warnings = Vec::new();
    let body = match input.strip_prefix(BOM) {
        Some(rest) => {
            warnings.push(byte_warning(
                warning::BYTE_ORDER_MARK,
                "a UTF-8 byte order mark was skipped".into(),
                Severity::Info,
            ));
            rest
        }
        None => input,
    };
    let text = std::str::from_utf8(body)
        .map_err(|e| ParseError::InvalidUtf8 { offset: e.valid_up_to() })?;
    let mut parser = Parser { limits, lines: Lines::new(text), segments: Vec::new() };
    let delimiters = parser.parse_segments()?;
    warnings.extend(parser.lines.warnings());
    if !delimiters.is_standard() {
        warnings.push(Warning {
            phase: Phase::Syntactic,
            code: warning::NON_STANDARD_DELIMITERS,
            message: format!(
                "delimiters are {}{}, not |^~\\&",
                char::from(delimiters.field()),
                delimiters.encoding_characters()
            ),
            path: Some("MSH-2".into()),
            severity: Severity::Warning,
        });
    }
    Ok(Message { source: text, delimiters, segments: parser.segments, warnings })
}

fn byte_warning(code: &'static str, message: String, severity: Severity) -> Warning {
    Warning { phase: Phase::Byte, code, message, path: None, severity }
}

struct Parser<'a, 'l> {
    limits: &'l Limits,
    lines: Lines<'a>,
    segments: Vec<Segment<'a>>,
}

impl<'a> Parser<'a, '_> {
    fn parse_segments(&mut self) -> Result<Delimiters, ParseError> {
        let first = self.lines.next().ok_or(ParseError::Empty)?;
        let delimiters = msh_delimiters(first)?;
        self.push_segment(first, delimiters)?;
        while let Some(line) = self.lines.next() {
            self.push_segment(line, delimiters)?;
        }
        Ok(delimiters)
    }

    fn push_segment(&mut self, line: &'a str, delimiters: Delimiters) -> Result<(), ParseError> {
        let index = self.segments.len();
        if index >= self.limits.max_segments {
            return Err(ParseError::TooManySegments { limit: self.limits.max_segments });
        }
        let id = segment_id(line, delimiters.field())
            .ok_or(ParseError::InvalidSegmentId { segment_index: index })?;
        let fields = split_fields(line, id, index, delimiters, self.limits)?;
        self.segments.push(Segment { id, raw: line, fields, index, delimiters });
        Ok(())
    }
}

/// Reads the delimiters of the first segment, which must be MSH.
fn msh_delimiters(line: &str) -> Result<Delimiters, ParseError> {
    let bytes = line.as_bytes();
    if !bytes.starts_with(b"MSH") {
        return Err(ParseError::MissingMsh);
    }
    if bytes.len() < 8 {
        return Err(ParseError::MshTooShort { len: bytes.len() });
    }
    let field = bytes.get(3).copied().ok_or(ParseError::MshTooShort { len: bytes.len() })?;
    let after = bytes.get(4..).unwrap_or_default();
    let end = memchr::memchr(field, after).unwrap_or(after.len());
    Delimiters::from_msh(field, after.get(..end).unwrap_or_default())
}

/// The segment id when `line` starts with `[A-Z][A-Z0-9]{2}` followed by the separator or
/// the end of the line.
fn segment_id(line: &str, field: u8) -> Option<&str> {
    let bytes = line.as_bytes();
    let [first, second, third] = *bytes.get(..3)? else { return None };
    let valid = first.is_ascii_uppercase()
        && [second, third].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && bytes.get(3).is_none_or(|&b| b == field);
    if valid { line.get(..3) } else { None }
}

/// Splits the fields of one segment and checks every limit on the way.
fn split_fields<'a>(
    line: &'a str,
    id: &'a str,
    index: usize,
    delimiters: Delimiters,
    limits: &Limits,
) -> Result<Vec<&'a str>, ParseError> {
    let mut fields = Vec::new();
    let Some(content) = line.get(4..) else { return Ok(fields) };
    let is_msh = id == "MSH";
    if is_msh {
        fields.extend(line.get(3..4));
    }
    for raw in Parts::new(content, Some(delimiters.field())) {
        if fields.len() >= limits.max_fields {
            return Err(ParseError::TooManyFields {
                segment_index: index,
                segment_id: id.to_owned(),
                limit: limits.max_fields,
            });
        }
        fields.push(raw);
        let number = fields.len();
        if !(is_msh && number <= 2) {
            check_parts(raw, &delimiters, limits).map_err(|(what, limit)| {
                ParseError::TooManyParts {
                    segment_index: index,
                    segment_id: id.to_owned(),
                    field: number,
                    what,
                    limit,
                }
            })?;
        }
    }
    Ok(fields)
}

/// Counts repetitions, components and subcomponents of one field against the limits.
fn check_parts(raw: &str, d: &Delimiters, limits: &Limits) -> Result<(), (&'static str, usize)> {
    let (mut repetitions, mut components, mut subcomponents) = (1usize, 1usize, 1usize);
    for b in raw.bytes() {
        if Some(b) == d.repetition() {
            repetitions += 1;
            (components, subcomponents) = (1, 1);
        } else if b == d.component() {
            components += 1;
            subcomponents = 1;
        } else if Some(b) == d.subcomponent() {
            subcomponents += 1;
        } else {
            continue;
        }
        if repetitions > limits.max_repetitions {
            return Err(("repetitions", limits.max_repetitions));
        }
        if components > limits.max_components {
            return Err(("components", limits.max_components));
        }
        if subcomponents > limits.max_subcomponents {
            return Err(("subcomponents", limits.max_subcomponents));
        }
    }
    Ok(())
}

/// Non-blank lines split on CR, LF or CRLF, remembering which terminators were seen.
struct Lines<'a> {
    rest: &'a str,
    lf: usize,
    crlf: usize,
    blank_between: bool,
    pending_blank: bool,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Self { rest: text, lf: 0, crlf: 0, blank_between: false, pending_blank: false }
    }

    /// The next raw line (possibly blank) or `None` at the end.
    fn next_raw(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let bytes = self.rest.as_bytes();
        let Some(at) = memchr::memchr2(b'\r', b'\n', bytes) else {
            return Some(std::mem::take(&mut self.rest));
        };
        let (line, tail) = self.rest.split_at_checked(at)?;
        let skip = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(b'\r'), Some(b'\n')) => {
                self.crlf += 1;
                2
            }
            (Some(b'\n'), _) => {
                self.lf += 1;
                1
            }
            _ => 1,
        };
        self.rest = tail.get(skip..).unwrap_or_default();
        Some(line)
    }

    fn warnings(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        let endings = match (self.lf > 0, self.crlf > 0) {
            (true, true) => Some("LF and CRLF"),
            (true, false) => Some("LF"),
            (false, true) => Some("CRLF"),
            (false, false) => None,
        };
        if let Some(kind) = endings {
            out.push(byte_warning(
                warning::NON_STANDARD_LINE_ENDING,
                format!("segments are terminated by {kind} instead of CR"),
                Severity::Warning,
            ));
        }
        if self.blank_between {
            out.push(byte_warning(
                warning::EMPTY_SEGMENT,
                "blank lines were skipped".into(),
                Severity::Info,
            ));
        }
        out
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while let Some(line) = self.next_raw() {
            if line.bytes().all(|b| b.is_ascii_whitespace()) {
                self.pending_blank = true;
                continue;
            }
            self.blank_between |= std::mem::take(&mut self.pending_blank);
            return Some(line);
        }
        None
    }
}
