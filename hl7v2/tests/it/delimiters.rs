//! Declared delimiters are honoured: truncated and extended MSH-2, custom sets, and the
//! standard/non-standard twins of every corpus message.

use keelson_hl7v2::{Delimiters, Message, Phase, warning};

use crate::support::{corpus, leaves};

#[test]
fn non_standard_twin_gives_the_same_values_for_every_path() {
    let sets = [
        Delimiters::new('|', '#', '~', '\\', '&').unwrap(),
        Delimiters::new('*', '@', '!', '%', '$').unwrap(),
    ];
    for (name, bytes) in corpus() {
        let standard = Message::parse(&bytes).unwrap();
        let expected = leaves(&standard);
        for set in &sets {
            let encoded = standard.encode_with(set);
            let twin = Message::parse_str(&encoded).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(twin.delimiters(), set, "{name}");
            assert_eq!(leaves(&twin), expected, "{name}");
            for (path, text) in expected.iter().step_by(7) {
                assert_eq!(twin.get_text(path).as_deref(), Some(text.as_str()), "{name} {path}");
                assert_eq!(standard.get_text(path).as_deref(), Some(text.as_str()), "{name}");
            }
            let warning =
                twin.warnings().iter().find(|w| w.code == warning::NON_STANDARD_DELIMITERS);
            assert_eq!(warning.map(|w| w.phase), Some(Phase::Syntactic), "{name}");
            // And back to the standard set, byte for byte.
            assert_eq!(
                twin.encode_with(&Delimiters::default()),
                standard.encode_with(&Delimiters::default())
            );
        }
    }
}

#[test]
fn custom_set_splits_on_declared_characters() {
    let m = Message::parse(b"MSH*@!%$*APP*FAC\rPID*1**a@b$c!d@e*x^y~z&w|v").unwrap();
    assert_eq!(m.get("MSH-1"), Some("*"));
    assert_eq!(m.get("MSH-2"), Some("@!%$"));
    assert_eq!(m.get("MSH-4"), Some("FAC"));
    assert_eq!(m.get("PID-3.2.2"), Some("c"));
    assert_eq!(m.get("PID-3[1].2"), Some("e"));
    // Standard characters are plain data here.
    assert_eq!(m.get("PID-4.1.1"), Some("x^y~z&w|v"));
}

#[test]
fn truncated_msh2_splits_only_on_declared_separators() {
    let m = Message::parse(b"MSH|^~\\|A\rPID|1|x&y^z~w\\T\\").unwrap();
    assert_eq!(m.delimiters().subcomponent(), None);
    assert_eq!(m.get("PID-2.1.1"), Some("x&y"));
    assert_eq!(m.get("PID-2[1]"), Some("w\\T\\"));
    // `\T\` has no meaning without a subcomponent separator: kept literally.
    assert_eq!(m.get_text("PID-2[1]").unwrap(), "w\\T\\");
    assert!(m.warnings().iter().any(|w| w.code == warning::NON_STANDARD_DELIMITERS));

    let m = Message::parse(b"MSH|^|APP\rPID|1|x~y\\F\\").unwrap();
    assert_eq!(m.get("PID-2[0]"), Some("x~y\\F\\"));
    assert_eq!(m.get_text("PID-2").unwrap(), "x~y\\F\\");
}

#[test]
fn truncation_character_is_kept_and_ignored() {
    let m = Message::parse(b"MSH|^~\\&#|A\rPID|1|a#b").unwrap();
    assert_eq!(m.delimiters().truncation(), Some(b'#'));
    assert_eq!(m.get("MSH-2"), Some("^~\\&#"));
    assert_eq!(m.get("PID-2.1"), Some("a#b"));
    assert!(m.warnings().is_empty());
    assert!(m.encode_with(&Delimiters::default()).starts_with("MSH|^~\\&|A\r"));
}

#[test]
fn line_endings_and_blank_lines() {
    let cr = Message::parse(b"MSH|^~\\&|A\rPID|1\r").unwrap();
    assert!(cr.warnings().is_empty());
    for input in [&b"MSH|^~\\&|A\nPID|1\n"[..], b"MSH|^~\\&|A\r\nPID|1\r\n"] {
        let m = Message::parse(input).unwrap();
        assert_eq!(m.segments().len(), 2);
        assert_eq!(m.warnings().len(), 1);
        assert_eq!(m.warnings()[0].code, warning::NON_STANDARD_LINE_ENDING);
    }
    let m = Message::parse(b"\xEF\xBB\xBFMSH|^~\\&|A\r\r  \rPID|1 \r\n\n \t\n").unwrap();
    assert_eq!(m.encode(), "MSH|^~\\&|A\rPID|1 \r");
    let codes: Vec<_> = m.warnings().iter().map(|w| w.code).collect();
    assert_eq!(
        codes,
        [warning::BYTE_ORDER_MARK, warning::NON_STANDARD_LINE_ENDING, warning::EMPTY_SEGMENT]
    );
}
