//! MLLP framing and decoding (every chunk split), batch files.

use keelson_hl7v2::{Message, MllpDecoder, MllpError, mllp_frame, split_batch};

const FIRST: &[u8] = b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5\rPID|1||42\r";
const SECOND: &[u8] = b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|2|P|2.5\rOBX|1|ST|x||\x1Cy\r";

fn drain(decoder: &mut MllpDecoder) -> Vec<Result<Vec<u8>, MllpError>> {
    std::iter::from_fn(|| decoder.next_frame()).collect()
}

fn stream() -> Vec<u8> {
    let mut bytes = b"noise".to_vec();
    bytes.extend(mllp_frame(FIRST));
    bytes.extend(b"\r\n");
    bytes.extend(mllp_frame(SECOND));
    bytes
}

#[test]
fn frame_wraps_payload() {
    assert_eq!(mllp_frame(b"MSH"), b"\x0BMSH\x1C\x0D");
}

#[test]
fn decoder_handles_every_split_point() {
    let bytes = stream();
    let expected = vec![Ok(FIRST.to_vec()), Ok(SECOND.to_vec())];
    for split in 0..=bytes.len() {
        let mut decoder = MllpDecoder::new(1024);
        let (a, b) = bytes.split_at(split);
        decoder.feed(a);
        decoder.feed(b);
        assert_eq!(drain(&mut decoder), expected, "split at {split}");
        assert_eq!(decoder.buffered(), 0);
    }
    let mut decoder = MllpDecoder::new(1024);
    for byte in &bytes {
        decoder.feed(std::slice::from_ref(byte));
    }
    assert_eq!(drain(&mut decoder), expected);
    for frame in expected {
        assert!(Message::parse(&frame.unwrap()).is_ok());
    }
}

#[test]
fn oversized_and_unterminated_frames_are_reported_then_skipped() {
    let mut decoder = MllpDecoder::new(16);
    let mut bytes = mllp_frame(&[b'x'; 40]);
    bytes.extend(b"\x0Bpartial");
    bytes.extend(mllp_frame(b"ok"));
    for chunk in bytes.chunks(3) {
        decoder.feed(chunk);
    }
    assert_eq!(
        drain(&mut decoder),
        vec![
            Err(MllpError::FrameTooLarge { limit: 16 }),
            Err(MllpError::Unterminated { len: 7 }),
            Ok(b"ok".to_vec()),
        ]
    );
    decoder.feed(b"\x0B\x0B\x0Bfine\x1C\x0D");
    assert_eq!(drain(&mut decoder), vec![Ok(b"fine".to_vec())]);
    decoder.feed(b"\x0Bnot yet");
    assert!(decoder.next_frame().is_none());
    assert_eq!(decoder.buffered(), 7);
}

#[test]
fn batch_file_splits_into_envelope_and_messages() {
    let mut file = b"FHS|^~\\&|APP\rBHS|^~\\&|APP\r".to_vec();
    file.extend(FIRST);
    file.extend(b"\n");
    file.extend(SECOND);
    file.extend(b"BTS|2\rFTS|1");
    let batch = split_batch(&file);
    let envelope: Vec<&[u8]> = vec![b"FHS|^~\\&|APP", b"BHS|^~\\&|APP", b"BTS|2", b"FTS|1"];
    assert_eq!(batch.envelope, envelope);
    assert_eq!(batch.messages.len(), 2);
    let types: Vec<_> = batch
        .messages
        .iter()
        .map(|m| Message::parse(m).unwrap().message_type().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["ADT", "ORU"]);
    assert_eq!(Message::parse(batch.messages[1]).unwrap().segments().len(), 2);
    assert!(split_batch(b"").messages.is_empty());
    assert!(split_batch(b"junk\nPID|1").messages.is_empty());
}
