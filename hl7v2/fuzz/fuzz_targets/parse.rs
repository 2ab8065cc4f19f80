//! Any bytes: parsing never panics; what parses re-encodes to a message that parses to the
//! same encoding and the same values under another delimiter set; MLLP decoding and batch
//! splitting never panic.

#![no_main]

use keelson_hl7v2::{Delimiters, Message, MllpDecoder, split_batch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::parse(data) {
        let encoded = message.encode();
        let again = Message::parse(encoded.as_bytes()).expect("an encoded message parses");
        assert_eq!(again.encode(), encoded, "encoding is stable");
        if let Ok(other) = Delimiters::new('*', '@', '!', '%', '$') {
            let rewritten = message.encode_with(&other);
            let twin = Message::parse(rewritten.as_bytes()).expect("a re-delimited message parses");
            assert_eq!(twin.segments().len(), message.segments().len());
        }
    }
    let mut decoder = MllpDecoder::default();
    decoder.feed(data);
    while decoder.next_frame().is_some() {}
    let _ = split_batch(data);
});
