//! Sample redaction: the reference's ADT case, declared separators, unparsable input, and
//! the corpus.

use keelson_hl7v2::{Delimiters, Message, redact};

use crate::messages::adt_a01;
use crate::support::corpus;

const PHI: [&str; 5] = ["DOE", "JOHN", "123 MAIN", "5551234567", "19800315"];

#[test]
fn reference_adt_is_redacted() {
    let raw = adt_a01(Some("I"));
    for phi in PHI {
        assert!(raw.contains(phi));
    }
    let sample = redact(&raw);
    assert!(sample.phi_redacted);
    for phi in PHI {
        assert!(!sample.text.contains(phi), "{phi} remains");
    }
    assert!(!sample.text.contains('\r'));
    let pid = sample.text.lines().find(|l| l.starts_with("PID|")).unwrap();
    let fields: Vec<_> = pid.split('|').collect();
    for n in [3, 5, 7, 11, 13, 19] {
        assert_eq!(fields[n], "REDACTED", "PID-{n}");
    }
    // Other fields are kept.
    assert_eq!(fields[8], "M");
    assert_eq!(fields[14], "^WPN^PH^^1^555^7654321^22");
    // Other segments are kept, line by line.
    let expected_lines: Vec<_> = raw.split('\r').filter(|l| !l.starts_with("PID")).collect();
    let kept: Vec<_> = sample.text.split('\n').filter(|l| !l.starts_with("PID")).collect();
    assert_eq!(kept, expected_lines);
}

#[test]
fn declared_separator_is_honoured() {
    let text = adt_a01(Some("I"));
    let standard = Message::parse_str(&text).unwrap();
    for set in [
        Delimiters::new('!', '#', '~', '\\', '&').unwrap(),
        Delimiters::new('*', '@', '!', '%', '$').unwrap(),
    ] {
        let raw = standard.encode_with(&set);
        let sample = redact(&raw);
        assert!(sample.phi_redacted);
        for phi in PHI {
            assert!(!sample.text.contains(phi), "{phi} remains with {set:?}");
        }
        let separator = char::from(set.field());
        let pid = sample.text.lines().find(|l| l.starts_with("PID")).unwrap();
        assert_eq!(pid.split(separator).nth(5), Some("REDACTED"));
    }
}

#[test]
fn unparsable_input_is_still_redacted() {
    // No MSH, so nothing declares a separator: any punctuation after `PID` is taken.
    let sample = redact("PID|1||123^^^H^MR||DOE^JOHN\r\nPID#1##456##ROE#X");
    assert_eq!(sample.text, "PID|1||REDACTED||REDACTED\nPID#1##REDACTED##REDACTED#X");
    assert!(sample.phi_redacted);
    let nothing = redact("not a valid message");
    assert_eq!(nothing.text, "not a valid message");
    assert!(!nothing.phi_redacted);
}

#[test]
fn every_corpus_pid_is_redacted() {
    for (name, bytes) in corpus() {
        let raw = String::from_utf8(bytes).unwrap();
        let message = Message::parse_str(&raw).unwrap();
        let sample = redact(&raw);
        let Some(pid) = message.segment("PID") else { continue };
        let line = sample.text.lines().find(|l| l.starts_with("PID|")).unwrap();
        let fields: Vec<_> = line.split('|').collect();
        for (n, field) in fields.iter().enumerate().skip(1) {
            let original = pid.field_raw(n).unwrap_or_default();
            let expected = if [3, 5, 7, 11, 13, 19].contains(&n) && !original.is_empty() {
                "REDACTED"
            } else {
                original
            };
            assert_eq!(*field, expected, "{name}: PID-{n}");
        }
        assert!(sample.phi_redacted, "{name}");
        assert!(!sample.text.contains('\r'), "{name}");
    }
}
