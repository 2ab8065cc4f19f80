//! The 16 unescaping cases (reference §11 case 3 verbatim, plus ours) and escape on write.

use keelson_hl7v2::{Delimiters, Message, escape, unescape};

#[test]
fn sixteen_unescape_cases() {
    let standard = Delimiters::default();
    let hash = Delimiters::new('|', '^', '~', '#', '&').unwrap();
    let cases: [(&str, &Delimiters, &str); 16] = [
        // Reference cases.
        (r"test\F\value", &standard, "test|value"),
        (r"\X0D0A\", &standard, "\r\n"),
        (r"\H\bold text\N\", &standard, "bold text"),
        (r"\.br\", &standard, "\n"),
        (r"test\Fvalue", &standard, r"test\Fvalue"),
        (r"\Z\", &standard, r"\Z\"),
        ("test#F#value#S#component", &hash, "test|value^component"),
        (r"MARY\T\ANN", &standard, "MARY&ANN"),
        (r"123 MAIN ST \T\ APT 5", &standard, "123 MAIN ST & APT 5"),
        (r"Test \T\ Result", &standard, "Test & Result"),
        // Ours.
        (r"a\S\b\R\c\E\d", &standard, r"a^b~c\d"),
        (r"\C2842\abc\M2442\", &standard, "abc"),
        (r"\X48656C6C6F\ \XC3A9\", &standard, "Hello é"),
        (
            r"odd \X414\ and bad \XFF\ and empty \X\",
            &standard,
            r"odd \X414\ and bad \XFF\ and empty \X\",
        ),
        (r"first\.br\second\.sp\", &standard, "first\nsecond\\.sp\\"),
        (r"trailing escape \", &standard, r"trailing escape \"),
    ];
    for (raw, delimiters, expected) in cases {
        assert_eq!(unescape(raw, delimiters), expected, "unescape({raw:?})");
    }
}

#[test]
fn declared_delimiters_are_used_when_unescaping_in_a_message() {
    let message = Message::parse(b"MSH|#~\\&|A\rNTE|1||x\\S\\y#z\\F\\").unwrap();
    let field = message.segment("NTE").unwrap().field(3).unwrap();
    assert_eq!(field.component(1).unwrap().text(), "x#y");
    assert_eq!(field.component(2).unwrap().text(), "z|");
    assert_eq!(message.get_text("NTE-3.1").unwrap(), "x#y");
}

#[test]
fn escape_on_write() {
    let d = Delimiters::default();
    assert_eq!(escape("a|b^c~d\\e&f\ng\r", &d), r"a\F\b\S\c\R\d\E\e\T\f\.br\g\X0D\");
    let hash = Delimiters::new('|', '#', '~', '\\', '&').unwrap();
    assert_eq!(escape("C# ^", &hash), r"C\S\ ^");
    for text in ["", "plain", "|^~\\&#", "x\n\ny", "\\X41\\", "é\u{1F600}"] {
        assert_eq!(unescape(&escape(text, &d), &d), text);
        assert_eq!(unescape(&escape(text, &hash), &hash), text);
    }
}
