//! Integration tests of the HL7v2 parser and its event mapping (one binary).

mod corpus;
mod delimiters;
mod escapes;
mod event_json;
mod events;
mod events_corpus;
mod framing;
mod hostile;
mod invalid;
mod messages;
mod mutations;
mod python_hl7;
mod redaction;
mod support;
