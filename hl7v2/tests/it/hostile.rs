//! Hostile input: the committed seed corpus and generated giants must never panic and must
//! return within a bounded time.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use keelson_hl7v2::{
    Delimiters, Limits, MapOptions, Message, MllpDecoder, map_events, redact, split_batch,
};

use crate::support::leaves;

/// Time allowed per input: enough for linear work on a few MB in an unoptimised build on a
/// loaded CI machine (the tests run in parallel), far too little for anything quadratic
/// (10^12 steps for 1 MB).
const BUDGET: Duration =
    if cfg!(debug_assertions) { Duration::from_secs(10) } else { Duration::from_secs(2) };

/// Everything a consumer may do with an input.
fn exercise(input: &[u8], limits: &Limits) {
    let parts = split_batch(input).messages;
    // A single split part is (nearly) the input itself: parse it only once.
    let parts = if parts.len() > 1 { parts } else { vec![input] };
    for part in parts {
        if let Ok(message) = Message::parse_with(part, limits) {
            let _ = message.encode();
            let _ = message.encode_with(&Delimiters::new('|', '#', '~', '\\', '&').unwrap());
            let _ = leaves(&message);
            for segment in message.segments() {
                for field in segment.fields() {
                    let _ = field.text();
                }
            }
            let _ = (message.get_text("PID-3[1].4.1"), message.get("MSH-9.2"));
            for strict in [false, true] {
                if let Ok(mapping) = map_events(&message, &MapOptions { strict }) {
                    let _ = serde_json::to_string(&mapping);
                }
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(input) {
        let _ = redact(text);
    }
    let mut decoder = MllpDecoder::new(limits.max_message_bytes);
    decoder.feed(input);
    while decoder.next_frame().is_some() {}
}

/// Runs `exercise` on `input`, reporting a panic or a timeout under `name`.
fn check(name: &str, input: &[u8], limits: &Limits) -> Result<(), String> {
    let start = Instant::now();
    catch_unwind(AssertUnwindSafe(|| exercise(input, limits)))
        .map_err(|_| format!("{name}: panicked"))?;
    let elapsed = start.elapsed();
    if elapsed > BUDGET { Err(format!("{name}: took {elapsed:?}")) } else { Ok(()) }
}

macro_rules! seed {
    ($name:literal) => {
        ($name, include_bytes!(concat!("../seeds/", $name)))
    };
}

/// The committed seed corpus of malformed inputs (`tests/seeds/`), embedded at build time.
const SEEDS: &[(&str, &[u8])] = &[
    seed!("bad_segment_ids.hl7"),
    seed!("batch_broken.hl7"),
    seed!("binary_after_msh.hl7"),
    seed!("binary_junk.hl7"),
    seed!("bom_only.hl7"),
    seed!("bom_then_junk.hl7"),
    seed!("custom_delimiters_escape_hash.hl7"),
    seed!("deep_escapes.hl7"),
    seed!("huge_components.hl7"),
    seed!("huge_repetitions.hl7"),
    seed!("huge_subcomponents.hl7"),
    seed!("invalid_utf8.hl7"),
    seed!("lone_msh.hl7"),
    seed!("many_fields.hl7"),
    seed!("mixed_line_endings.hl7"),
    seed!("mllp_wrapped.hl7"),
    seed!("msh_duplicate_delimiters.hl7"),
    seed!("msh_empty_encoding.hl7"),
    seed!("msh_non_ascii_separator.hl7"),
    seed!("msh_pipe_only.hl7"),
    seed!("msh_six_encoding_chars.hl7"),
    seed!("nested_looking_escapes.hl7"),
    seed!("nul_bytes.hl7"),
    seed!("nul_only.hl7"),
    seed!("odd_hex.hl7"),
    seed!("truncated_msh_1.hl7"),
    seed!("truncated_msh_2.hl7"),
    seed!("truncated_msh_3.hl7"),
    seed!("unclosed_escapes.hl7"),
    seed!("whitespace_only.hl7"),
];

#[test]
fn seed_corpus_replays_without_panic() {
    let failures: Vec<String> = SEEDS
        .iter()
        .filter_map(|(name, bytes)| check(name, bytes, &Limits::default()).err())
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn generated_giants_are_bounded() {
    let big = Limits { max_message_bytes: 16 * 1024 * 1024, ..Limits::default() };
    let header = b"MSH|^~\\&|A\rNTE|1||".to_vec();
    let with_header = |body: Vec<u8>| [header.clone(), body].concat();
    let cases: Vec<(&str, Vec<u8>, Limits)> = vec![
        ("10 MB of |", vec![b'|'; 10 << 20], Limits::default()),
        (
            "10 MB of | after MSH (big limit)",
            [b"MSH|^~\\&".to_vec(), vec![b'|'; 10 << 20]].concat(),
            big,
        ),
        ("1 MB of backslashes", with_header(vec![b'\\'; 1 << 20]), big),
        ("1 MB of \\X hex", with_header([b"\\X".to_vec(), vec![b'4'; 1 << 20]].concat()), big),
        ("1 MB of NUL", vec![0; 1 << 20], Limits::default()),
        ("NUL in a field", with_header(vec![0; 1 << 19]), big),
        ("many segments", [header.clone(), b"\rZZZ|1".repeat(200_000)].concat(), big),
        ("many repetitions", with_header(b"~".repeat(999)), Limits::default()),
        ("MLLP start bytes", vec![0x0B; 1 << 20], Limits::default()),
        ("CRs", vec![b'\r'; 1 << 20], Limits::default()),
    ];
    let failures: Vec<String> =
        cases.iter().filter_map(|(name, bytes, limits)| check(name, bytes, limits).err()).collect();
    assert!(failures.is_empty(), "{failures:?}");
}
