//! Splitting files into messages (batches `FHS/BHS/…/BTS/FTS` and concatenated messages)
//! and MLLP framing (`0x0B message 0x1C 0x0D`) with an incremental decoder.

use std::collections::VecDeque;

use crate::error::MllpError;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// MLLP start block byte.
pub const START_BLOCK: u8 = 0x0B;
/// MLLP end block byte, followed by [`CARRIAGE_RETURN`].
pub const END_BLOCK: u8 = 0x1C;
/// Carriage return closing an MLLP frame.
pub const CARRIAGE_RETURN: u8 = 0x0D;

/// A file split into its envelope segments and its messages, all borrowed from the input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch<'a> {
    /// `FHS`, `BHS`, `BTS` and `FTS` segments, in order, without terminators.
    pub envelope: Vec<&'a [u8]>,
    /// Each message from its `MSH` up to (excluding) the next message or envelope segment,
    /// terminators included; parse each with [`crate::Message::parse`].
    pub messages: Vec<&'a [u8]>,
}

/// Splits `input` into messages: a new message starts at every line beginning with `MSH`;
/// lines beginning with `FHS`, `BHS`, `BTS` or `FTS` go to the envelope. Lines before the
/// first `MSH` that are neither are attached to no message and dropped; blank lines are
/// kept inside the message they follow. A UTF-8 byte order mark opening a line is skipped.
#[must_use]
pub fn split_batch(input: &[u8]) -> Batch<'_> {
    let mut batch = Batch::default();
    let mut current: Option<usize> = None;
    let mut at = 0;
    while at < input.len() {
        let rest = input.get(at..).unwrap_or_default();
        let line_len = memchr::memchr2(b'\r', b'\n', rest).unwrap_or(rest.len());
        let end = at + line_len + terminator_len(rest.get(line_len..).unwrap_or_default());
        let line = rest.get(..line_len).unwrap_or_default();
        // Concatenated files may each start with a byte order mark.
        let (line, start) = match line.strip_prefix(BOM) {
            Some(stripped) => (stripped, at + BOM.len()),
            None => (line, at),
        };
        let kind = line.get(..3).unwrap_or_default();
        if matches!(kind, b"FHS" | b"BHS" | b"BTS" | b"FTS") {
            close(&mut batch, input, &mut current, at);
            batch.envelope.push(line);
        } else if kind == b"MSH" {
            close(&mut batch, input, &mut current, at);
            current = Some(start);
        }
        at = end;
    }
    close(&mut batch, input, &mut current, input.len());
    batch
}

fn terminator_len(rest: &[u8]) -> usize {
    match rest {
        [b'\r', b'\n', ..] => 2,
        [b'\r' | b'\n', ..] => 1,
        _ => 0,
    }
}

fn close<'a>(batch: &mut Batch<'a>, input: &'a [u8], current: &mut Option<usize>, end: usize) {
    if let Some(start) = current.take() {
        batch.messages.extend(input.get(start..end));
    }
}

/// Wraps `message` in an MLLP frame.
#[must_use]
pub fn mllp_frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 3);
    out.push(START_BLOCK);
    out.extend_from_slice(message);
    out.extend_from_slice(&[END_BLOCK, CARRIAGE_RETURN]);
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between frames: bytes are ignored until a start byte.
    Idle,
    /// Inside a frame.
    InFrame,
    /// Inside a frame, just after an end block byte.
    AfterEnd,
    /// Inside an oversized frame being discarded.
    Discarding,
    /// Discarding, just after an end block byte.
    DiscardingAfterEnd,
}

/// Incremental MLLP decoder: feed it byte chunks as they arrive, then take complete frames.
/// No I/O; memory is bounded by the maximum frame size.
#[derive(Debug, Clone)]
pub struct MllpDecoder {
    max_frame: usize,
    state: State,
    frame: Vec<u8>,
    ready: VecDeque<Result<Vec<u8>, MllpError>>,
}

impl Default for MllpDecoder {
    /// A decoder with the default message size limit (1 MiB) as maximum frame size.
    fn default() -> Self {
        Self::new(crate::Limits::default().max_message_bytes)
    }
}

impl MllpDecoder {
    /// A decoder refusing frames larger than `max_frame` bytes (payload only).
    #[must_use]
    pub fn new(max_frame: usize) -> Self {
        Self { max_frame, state: State::Idle, frame: Vec::new(), ready: VecDeque::new() }
    }

    /// Consumes a chunk of bytes; completed frames become available from
    /// [`Self::next_frame`]. An end byte not followed by CR is kept as payload.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.state == State::Idle {
                // Skip noise between frames up to the next start byte.
                let n = memchr::memchr(START_BLOCK, rest).unwrap_or(rest.len());
                rest = rest.get(n..).unwrap_or_default();
                if rest.is_empty() {
                    break;
                }
            }
            if self.state == State::InFrame {
                // Fast path: copy payload up to the next control byte.
                let n = memchr::memchr2(END_BLOCK, START_BLOCK, rest).unwrap_or(rest.len());
                if n > 0 {
                    let (payload, tail) = rest.split_at_checked(n).unwrap_or((rest, &[]));
                    self.push_payload(payload);
                    rest = tail;
                    continue;
                }
            }
            let Some((&b, tail)) = rest.split_first() else { break };
            rest = tail;
            self.step(b);
        }
    }

    fn push_payload(&mut self, bytes: &[u8]) {
        self.frame.extend_from_slice(bytes);
        if self.frame.len() > self.max_frame {
            self.frame = Vec::new();
            self.state = State::Discarding;
            self.ready.push_back(Err(MllpError::FrameTooLarge { limit: self.max_frame }));
        }
    }

    fn step(&mut self, b: u8) {
        self.state = match (self.state, b) {
            (State::Idle, START_BLOCK) => State::InFrame,
            (State::Idle, _) => State::Idle,
            (State::InFrame | State::AfterEnd, START_BLOCK) => {
                // A repeated start byte with nothing in between is harmless.
                let len = self.frame.len() + usize::from(self.state == State::AfterEnd);
                if len > 0 {
                    self.frame.clear();
                    self.ready.push_back(Err(MllpError::Unterminated { len }));
                }
                State::InFrame
            }
            (State::InFrame, END_BLOCK) => State::AfterEnd,
            (State::AfterEnd, CARRIAGE_RETURN) => {
                self.ready.push_back(Ok(std::mem::take(&mut self.frame)));
                State::Idle
            }
            (State::AfterEnd, END_BLOCK) => {
                self.push_payload(&[END_BLOCK]);
                self.after_payload(State::AfterEnd)
            }
            (State::AfterEnd, other) => {
                self.push_payload(&[END_BLOCK, other]);
                self.after_payload(State::InFrame)
            }
            (State::InFrame, other) => {
                self.push_payload(&[other]);
                self.after_payload(State::InFrame)
            }
            (State::Discarding | State::DiscardingAfterEnd, END_BLOCK) => State::DiscardingAfterEnd,
            (State::DiscardingAfterEnd, CARRIAGE_RETURN) => State::Idle,
            (State::Discarding | State::DiscardingAfterEnd, START_BLOCK) => State::InFrame,
            (State::Discarding | State::DiscardingAfterEnd, _) => State::Discarding,
        };
    }

    /// `next` unless pushing payload switched to discarding.
    fn after_payload(&self, next: State) -> State {
        if self.state == State::Discarding { State::Discarding } else { next }
    }

    /// The next complete frame (its payload) or framing error, in arrival order.
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, MllpError>> {
        self.ready.pop_front()
    }

    /// Bytes buffered for the frame in progress.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.frame.len()
    }
}
