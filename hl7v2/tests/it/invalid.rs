//! Invalid inputs are errors that say where and why; limits are enforced.

use keelson_hl7v2::{Limits, Message, ParseError};

#[test]
fn reference_invalid_inputs() {
    assert_eq!(Message::parse(b""), Err(ParseError::Empty));
    assert_eq!(Message::parse(b"PID|1||123"), Err(ParseError::MissingMsh));
    assert_eq!(Message::parse(b"not a valid message"), Err(ParseError::MissingMsh));
}

#[test]
fn short_or_malformed_headers() {
    assert_eq!(Message::parse(b"\r\n \n"), Err(ParseError::Empty));
    assert_eq!(Message::parse(b"MSH"), Err(ParseError::MshTooShort { len: 3 }));
    assert_eq!(Message::parse(b"MSH|"), Err(ParseError::MshTooShort { len: 4 }));
    assert_eq!(Message::parse(b"MSH|^~\\"), Err(ParseError::MshTooShort { len: 7 }));
    for bad in
        [&b"MSH|^^\\&|A"[..], b"MSH|ab\\&|A", b"MSH|^~\\&#!|A", b"MSH||^~\\&|A", b"MSHA^~\\&|A"]
    {
        assert!(
            matches!(Message::parse(bad), Err(ParseError::InvalidDelimiters { .. })),
            "{bad:?}"
        );
    }
    assert_eq!(Message::parse(b"MSH|^~\\&|A\r\xFF"), Err(ParseError::InvalidUtf8 { offset: 11 }));
}

#[test]
fn bad_segment_ids_are_located() {
    for line in ["pid|1", "PI|1", "PID1", " PID|1", "P-D|1"] {
        let input = format!("MSH|^~\\&|A\rEVN|x\r{line}");
        assert_eq!(
            Message::parse(input.as_bytes()),
            Err(ParseError::InvalidSegmentId { segment_index: 2 }),
            "{line}"
        );
    }
    assert!(Message::parse(b"MSH|^~\\&|A\rZZ1").is_ok());
}

#[test]
fn limits_are_enforced_with_location() {
    let limits = Limits {
        max_message_bytes: 200,
        max_segments: 3,
        max_fields: 5,
        max_repetitions: 2,
        max_components: 3,
        max_subcomponents: 2,
    };
    let parse = |s: &str| Message::parse_with(s.as_bytes(), &limits).map(|m| m.encode());
    assert!(parse("MSH|^~\\&|A\rPID|1|a~b|a^b^c|a&b").is_ok());
    assert_eq!(
        parse(&format!("MSH|^~\\&|{}", "x".repeat(200))),
        Err(ParseError::TooLarge { size: 209, limit: 200 })
    );
    assert_eq!(parse("MSH|^~\\&|A\rA01\rA02\rA03"), Err(ParseError::TooManySegments { limit: 3 }));
    let fields = parse("MSH|^~\\&|A\rPID|1|2|3|4|5|6").unwrap_err();
    assert_eq!(
        fields,
        ParseError::TooManyFields { segment_index: 1, segment_id: "PID".into(), limit: 5 }
    );
    let parts = |what: &'static str, field: usize, limit: usize| ParseError::TooManyParts {
        segment_index: 1,
        segment_id: "PID".into(),
        field,
        what,
        limit,
    };
    assert_eq!(parse("MSH|^~\\&|A\rPID|1|a~b~c"), Err(parts("repetitions", 2, 2)));
    assert_eq!(parse("MSH|^~\\&|A\rPID|1|x|a^b^c^d"), Err(parts("components", 3, 3)));
    assert_eq!(parse("MSH|^~\\&|A\rPID|a&b&c"), Err(parts("subcomponents", 1, 2)));
    // Counts restart per repetition and component.
    assert!(parse("MSH|^~\\&|A\rPID|a^b^c~d^e^f|a&b^c&d").is_ok());
    let msh = Message::parse_with(b"MSH|^~\\&|A|B|C|D|E", &limits).unwrap_err();
    assert!(matches!(msh, ParseError::TooManyFields { segment_index: 0, .. }));
}

#[test]
fn errors_never_echo_content() {
    let secret = "SECRETNAME";
    for input in [format!("{secret}|x"), format!("MSH|^~\\&|A\r{secret}x|1")] {
        let error = Message::parse(input.as_bytes()).unwrap_err().to_string();
        assert!(!error.contains(secret), "{error}");
    }
}
