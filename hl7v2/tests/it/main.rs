//! Integration tests of the structural HL7v2 parser (one binary).

mod corpus;
mod delimiters;
mod escapes;
mod framing;
mod hostile;
mod invalid;
mod mutations;
mod python_hl7;
mod support;
