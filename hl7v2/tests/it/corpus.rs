//! The public corpus: every file parses and round-trips; header and path values of
//! `ADT-A01-01.hl7`.

use keelson_hl7v2::{Message, Phase, Severity, split_batch, warning};

use crate::support::{corpus, corpus_file};

/// The input as `encode` must give it back: no byte order mark, CR after every
/// non-blank line.
fn normalised(input: &[u8]) -> String {
    let text = std::str::from_utf8(input).unwrap();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::new();
    for line in text.split("\r\n").flat_map(|l| l.split(['\r', '\n'])) {
        if !line.trim().is_empty() {
            out.push_str(line);
            out.push('\r');
        }
    }
    out
}

#[test]
fn every_corpus_file_parses_and_round_trips() {
    let files = corpus();
    assert_eq!(files.len(), 139);
    for (name, bytes) in &files {
        let batch = split_batch(bytes);
        assert_eq!(batch.messages.len(), 1, "{name}");
        let message = Message::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(message.encode(), normalised(bytes), "{name}");
        assert!(message.message_type().is_some(), "{name}");
        assert!(message.control_id().is_some(), "{name}");
        assert!(message.delimiters().is_standard(), "{name}");
        // All corpus files use LF.
        let ending =
            message.warnings().iter().find(|w| w.code == warning::NON_STANDARD_LINE_ENDING);
        let ending = ending.unwrap_or_else(|| panic!("{name}: no line-ending warning"));
        assert_eq!((ending.phase, ending.severity), (Phase::Byte, Severity::Warning));
        // Re-parsing the CR form is warning-free and identical.
        let encoded = message.encode();
        let again = Message::parse_str(&encoded).unwrap();
        assert!(again.warnings().is_empty(), "{name}: {:?}", again.warnings());
        assert_eq!(again.encode(), encoded, "{name}");
    }
}

#[test]
fn adt_a01_header_and_paths() {
    let bytes = corpus_file("ADT-A01-01.hl7");
    let m = Message::parse(&bytes).unwrap();
    assert_eq!(m.message_type(), Some("ADT"));
    assert_eq!(m.trigger_event(), Some("A01"));
    assert_eq!(m.message_structure(), Some("ADT_A01"));
    assert_eq!(m.control_id(), Some("MSG00001"));
    assert_eq!(m.version(), Some("2.8"));
    assert_eq!(m.segments().len(), 24);
    assert_eq!(m.segments_by_id("ROL").count(), 3);
    let get = |path: &str| m.get(path);
    assert_eq!(get("MSH-1"), Some("|"));
    assert_eq!(get("MSH-2"), Some("^~\\&"));
    assert_eq!(get("MSH-3"), Some("ADTApp"));
    assert_eq!(get("MSH-4.2"), Some("2.16.840.1.122848.1.30"));
    assert_eq!(get("MSH-9"), Some("ADT^A01^ADT_A01"));
    assert_eq!(get("EVN-1"), Some("A01"));
    assert_eq!(
        get("PID-3"),
        Some("PATID1234^5^M11^test1&2.16.1&HCD^MR^GOOD HEALTH HOSPITAL~123456789^^^USSSA^SS")
    );
    assert_eq!(get("PID-3.1"), Some("PATID1234"));
    assert_eq!(get("PID-3[0].4.2"), Some("2.16.1"));
    assert_eq!(get("PID-3[1]"), Some("123456789^^^USSSA^SS"));
    assert_eq!(get("PID-3[1].4.1"), Some("USSSA"));
    assert_eq!(get("PID-3[2]"), None);
    assert_eq!(get("PID-5.1"), Some("EVERYMAN&&&&Aniston"));
    assert_eq!(get("PID-5.1.5"), Some("Aniston"));
    assert_eq!(get("PID-5.2"), Some("ADAM"));
    assert_eq!(get("PID.8"), Some("M"));
    assert_eq!(get("PV1-2"), Some("P"));
    assert_eq!(get("OBX[0]-5"), Some("60~120"));
    assert_eq!(get("OBX[0]-5[1]"), Some("120"));
    assert_eq!(get("OBX[1]-5"), None);
    assert_eq!(get("ROL[2]-4.2"), Some("Phoeb"));
    assert_eq!(get("PD1-17"), Some("20150202^20150202 "));
    assert_eq!(get("PID-999"), None);
    assert_eq!(get("not a path"), None);
    assert!(m.try_get("PID-").is_err());
    assert_eq!(get("PV1-14"), Some("NHS Provider-General (inc.A\\T\\E-this Hosp)"));
    assert_eq!(m.get_text("PV1-14").unwrap(), "NHS Provider-General (inc.A&E-this Hosp)");
    let pid = m.segment("PID").unwrap();
    assert_eq!(pid.index(), 3);
    assert_eq!(pid.field(5).unwrap().repetitions().count(), 2);
    assert_eq!(pid.field_raw(8), Some("M"));
    let msh = m.segment("MSH").unwrap();
    assert_eq!(msh.field(2).unwrap().component(1).unwrap().text(), "^~\\&");
}

#[test]
fn concatenated_corpus_messages_split() {
    let names = ["ADT-A01-01.hl7", "ORU-R01-01.hl7", "VXU.hl7"];
    let files: Vec<Vec<u8>> = names.iter().map(|n| corpus_file(n)).collect();
    let joined = files.join(&b"\n"[..]);
    let batch = split_batch(&joined);
    assert!(batch.envelope.is_empty());
    assert_eq!(batch.messages.len(), 3);
    for (part, original) in batch.messages.iter().zip(&files) {
        let expected = Message::parse(original).unwrap().encode();
        assert_eq!(Message::parse(part).unwrap().encode(), expected);
    }
}
