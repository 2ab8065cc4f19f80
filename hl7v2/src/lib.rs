//! Structural, zero-copy HL7v2 parsing for Keelson: no I/O, no Kubernetes.
//!
//! [`Message::parse`] borrows the input and gives segments, fields, repetitions,
//! components and subcomponents as `&str` slices of it, plus unescaped text as
//! `Cow<str>`. On top of it, [`map_events`] maps a message to canonical JSON events with
//! warnings and lineage (see the [`event`] module for the event types, sections, warnings
//! and strict mode, and [`lineage`] for the source paths), [`redact()`] redacts stored
//! samples, and [`dtm_to_iso`] turns HL7 date/times into ISO text.
//!
//! ```
//! use keelson_hl7v2::Message;
//!
//! let input = b"MSH|^~\\&|APP|FAC|||20240101||ADT^A01^ADT_A01|MSG1|P|2.5\rPID|1||42^^^H^MR~7^^^S^SS||DOE^JOHN\\T\\JR\r";
//! let message = Message::parse(input)?;
//! assert_eq!(message.message_type(), Some("ADT"));
//! assert_eq!(message.trigger_event(), Some("A01"));
//! assert_eq!(message.get("PID-3[1].1"), Some("7"));
//! assert_eq!(message.get_text("PID-5.2").as_deref(), Some("JOHN&JR"));
//! let pid = message.segment("PID").expect("PID");
//! assert_eq!(pid.field(3).map(|f| f.repetitions().count()), Some(2));
//! # Ok::<(), keelson_hl7v2::ParseError>(())
//! ```
//!
//! # Parsing rules
//! - Input is UTF-8 (a leading byte order mark is skipped with an Info warning); other
//!   encodings are an error ([`ParseError::InvalidUtf8`]) — transcode before parsing.
//! - Segments end at CR, LF or CRLF; LF/CRLF give `NON_STANDARD_LINE_ENDING`. Blank
//!   (whitespace-only) lines are skipped; whitespace inside a segment is kept as data.
//! - The first segment must be `MSH`, at least 8 bytes long. MSH-1 (byte 3) is the field
//!   separator; MSH-2 runs to the next field separator and holds 1 to 5 characters:
//!   component, then optionally repetition, escape, subcomponent and the v2.7+
//!   truncation character (kept, ignored). All must be distinct ASCII punctuation. The
//!   declared set is honoured everywhere (splitting and escapes); a set other than
//!   `|^~\&` (or `|^~\&#`) gives `NON_STANDARD_DELIMITERS`.
//! - Segment ids are `[A-Z][A-Z0-9]{2}` followed by the field separator or the end of the
//!   line. MSH fields are numbered as in HL7 (MSH-1 is the separator, MSH-2 the encoding
//!   characters, both literal: never split nor unescaped); for other segments field 1
//!   follows the id.
//! - One input is one message: a later `MSH` line is just another segment. Use
//!   [`split_batch`] first for batch files and concatenated messages.
//!
//! # Positions and paths
//! Fields, components and subcomponents are 1-based HL7 positions; bracketed indexes
//! (segment occurrence, field repetition) are 0-based, as in the reference's lineage
//! (`OBX[0]-5` is the first OBX) and warning paths (`PID.3[0]`). Grammar of [`Path`]:
//! `SEG[occurrence]-field[repetition].component.subcomponent`, every part after the field
//! optional; `.` may replace `-`. `PID-5` is the whole field, `PID-5.1` component 1 of
//! its first repetition, `PID-3[1].4.1` subcomponent 1 of component 4 of the second
//! repetition, `OBX[2]-5` OBX-5 of the third OBX. An empty value has one empty part.
//!
//! # Escapes
//! [`unescape`] decodes `\F\ \S\ \T\ \R\ \E\` to the declared delimiters, `\Xhh..\` (even,
//! non-zero digit count) to its bytes when they are UTF-8 (otherwise the sequence is kept
//! literally, so nothing is lost), `\.br\` to `\n`, drops `\H\ \N\ \C..\ \M..\`, and keeps
//! unknown or unclosed sequences literally. [`escape`] writes delimiters as
//! `\F\ \S\ \T\ \R\`, the escape character as `\E\`, `\n` as `\.br\` and `\r` as `\X0D\`,
//! so `unescape(escape(t)) == t`.
//!
//! # Encoding
//! [`Message::encode`] writes every segment as parsed followed by CR: for any accepted
//! input it equals the input with CRLF/LF turned into CR, blank lines and a byte order
//! mark removed and a CR after the last segment. [`Message::encode_with`] rewrites the
//! message for another delimiter set, re-escaping every subcomponent.
//!
//! # Limits
//! [`Limits`] bounds message size (1 MiB), segments (10,000), fields per segment (1,000),
//! repetitions per field, components per repetition and subcomponents per component
//! (1,000 each); exceeding one is an error naming the segment index, id and field.
//! Parsing is a single linear pass without recursion, and no input can make it panic.
//!
//! # Framing
//! [`split_batch`] splits batch files (`FHS/BHS/BTS/FTS`) and concatenated messages;
//! [`mllp_frame`] and [`MllpDecoder`] handle MLLP (`0x0B … 0x1C 0x0D`) incrementally.
//!
//! # Events
//! ```
//! use keelson_hl7v2::{MapOptions, Message, map_events};
//!
//! let input = "MSH|^~\\&|APP|FAC|||20240101120000||ADT^A01|MSG1|P|2.5\r\
//!              EVN|A01\rPID|1||42^^^H^MR||DOE^JOHN\rPV1|1|I|ICU^1^A\r";
//! let message = Message::parse_str(input)?;
//! let mapping = map_events(&message, &MapOptions::default()).expect("not strict");
//! let event = &mapping.events[0];
//! assert_eq!(event.meta.event_type, "inpatient_admit");
//! let json = serde_json::to_value(event).unwrap();
//! assert_eq!(json["patient"]["mrn"], "42");
//! assert_eq!(json["encounter"]["location"]["unit"], "ICU");
//! assert_eq!(json["timestamp"], "2024-01-01T12:00:00Z");
//! assert_eq!(mapping.lineage[0].source, "MSH-9");
//! # Ok::<(), keelson_hl7v2::ParseError>(())
//! ```

mod checks;
pub mod datetime;
mod delimiters;
mod encode;
mod error;
mod escape;
pub mod event;
mod framing;
mod limits;
pub mod lineage;
mod message;
mod parse;
mod path;
pub mod redact;
mod value;
pub mod warning;

pub use datetime::{Dtm, DtmError, Precision, dtm_to_iso, parse_dtm};
pub use delimiters::Delimiters;
pub use error::{MllpError, ParseError, PathError};
pub use escape::{escape, unescape};
pub use event::{Event, EventMeta, MapError, MapOptions, Mapping, map_events};
pub use framing::{
    Batch, CARRIAGE_RETURN, END_BLOCK, MllpDecoder, START_BLOCK, mllp_frame, split_batch,
};
pub use limits::Limits;
pub use lineage::LineageLink;
pub use message::{Message, Segment};
pub use path::Path;
pub use redact::{Redacted, redact};
pub use value::{Component, Field, Repetition, Subcomponent};
pub use warning::{Phase, Severity, Warning};
