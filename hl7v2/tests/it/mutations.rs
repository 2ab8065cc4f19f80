//! Deterministic mutation testing over the corpus: no panic, and every accepted mutant
//! re-encodes stably and survives a change of delimiters with the same values and the same
//! events.

use keelson_hl7v2::{Delimiters, MapOptions, Message, map_events};

use crate::support::{corpus, leaves};

/// Small deterministic generator (xorshift64*), so failures are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n.max(1)).unwrap()).unwrap()
    }
}

const PALETTE: &[u8] = b"|^~\\&#\r\n\x00\xFF\x0B\x1CXFST.br HNCM0D";

fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..=rng.below(8) {
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => {
                if let Some(b) = bytes.get_mut(at) {
                    *b = PALETTE[rng.below(PALETTE.len())];
                }
            }
            1 => bytes.insert(at.min(bytes.len()), PALETTE[rng.below(PALETTE.len())]),
            2 => {
                let end = (at + rng.below(64)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            _ => bytes.truncate(at.max(8)),
        }
    }
}

#[test]
fn mutants_never_panic_and_accepted_ones_round_trip() {
    let files = corpus();
    let hash = Delimiters::new('|', '#', '~', '\\', '&').unwrap();
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut accepted = 0;
    for iteration in 0..1500 {
        let (name, original) = &files[iteration % files.len()];
        let mut bytes = original.clone();
        mutate(&mut rng, &mut bytes);
        let context = format!("iteration {iteration} on {name}");
        let Ok(message) = Message::parse(&bytes) else { continue };
        accepted += 1;
        let encoded = message.encode();
        let again = Message::parse_str(&encoded).unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(again.encode(), encoded, "{context}");
        let twin_text = message.encode_with(&hash);
        let twin = Message::parse_str(&twin_text).unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(leaves(&twin), leaves(&message), "{context}");
        let events = |m: &Message<'_>| {
            let mapping = map_events(m, &MapOptions::default()).unwrap();
            serde_json::to_value(&mapping.events).unwrap()
        };
        assert_eq!(events(&twin), events(&message), "{context}");
        let _ = keelson_hl7v2::redact(&encoded);
    }
    assert!(accepted > 300, "only {accepted} mutants parsed");
}
