//! The server side of SPDY/3.1 framing, as far as `kubectl port-forward` uses it: kubectl opens
//! streams (`SYN_STREAM`) whose headers say what they are for, the server accepts them
//! (`SYN_REPLY`), and both sides send `DATA` until they close their half (`FIN`). Pings are
//! answered; flow control is not done (kubectl's SPDY library ignores it too).
//!
//! Written by hand: no maintained crate serves SPDY (only clients exist), and this subset is a
//! few frame layouts plus zlib-compressed header blocks.
//!
//! A [`Decoder`] and an [`Encoder`] each hold one direction's zlib stream: header blocks are
//! compressed as one stream per connection and direction, primed with SPDY's fixed dictionary.

use axum::body::Bytes;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use std::sync::OnceLock;

/// SPDY version 3.
const VERSION: u16 = 3;
/// Control frame types.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
/// The flag that closes the sender's half of a stream.
const FLAG_FIN: u8 = 0x01;
/// Frames larger than this are refused (a header block or data chunk is far smaller).
const MAX_FRAME: usize = 1 << 20;
/// `RST_STREAM` status: the stream was refused.
pub(crate) const REFUSED_STREAM: u32 = 3;

/// The names SPDY/3's header dictionary lists, each stored with a 32-bit length before it.
const DICTIONARY_WORDS: [&str; 65] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The text that ends SPDY/3's header dictionary, stored as it is.
const DICTIONARY_TAIL: &str = "100101201202205206300302303304305306307402405406407408409410411\
412413414415416417502504505203 Non-Authoritative Information204 No Content301 Moved \
Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server \
Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov \
Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,\
image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivate\
max-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

/// SPDY/3's zlib dictionary for header blocks (1,423 bytes).
fn dictionary() -> &'static [u8] {
    static DICTIONARY: OnceLock<Vec<u8>> = OnceLock::new();
    DICTIONARY.get_or_init(|| {
        let mut bytes = Vec::with_capacity(1423);
        for word in DICTIONARY_WORDS {
            bytes.extend_from_slice(&(word.len() as u32).to_be_bytes());
            bytes.extend_from_slice(word.as_bytes());
        }
        bytes.extend_from_slice(DICTIONARY_TAIL.as_bytes());
        bytes
    })
}

/// A frame the peer sent.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    /// A new stream and its headers (names lower-case).
    SynStream { stream_id: u32, headers: Vec<(String, String)>, fin: bool },
    /// Stream data; `fin` closes the peer's half.
    Data { stream_id: u32, data: Bytes, fin: bool },
    /// The peer abandoned a stream.
    RstStream { stream_id: u32 },
    /// A ping to answer with the same id.
    Ping { id: u32 },
    /// The peer is going away.
    GoAway,
    /// Frames this server has no use for (settings, window updates, headers, replies).
    Ignored,
}

/// Why the byte stream is not SPDY/3.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum SpdyError {
    #[error("not a SPDY/3 frame: version {0}")]
    Version(u16),
    #[error("frame of {0} bytes is too large")]
    TooLarge(usize),
    #[error("malformed {0} frame")]
    Malformed(&'static str),
    #[error("header block does not decompress: {0}")]
    Compression(String),
}

/// Reads frames from the peer's bytes, however they are split.
pub(crate) struct Decoder {
    buffer: Vec<u8>,
    inflate: Decompress,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { buffer: Vec::new(), inflate: Decompress::new(true) }
    }
}

impl Decoder {
    /// Takes more bytes from the peer.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, if one has arrived.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, SpdyError> {
        let Some(header) = self.buffer.get(..8) else { return Ok(None) };
        let length = u32::from_be_bytes([0, header[5], header[6], header[7]]) as usize;
        if length > MAX_FRAME {
            return Err(SpdyError::TooLarge(length));
        }
        if self.buffer.len() < 8 + length {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..8 + length).collect();
        let flags = frame[4];
        let payload = &frame[8..];
        let word = |at: usize| -> Option<u32> {
            payload.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        if frame[0] & 0x80 == 0 {
            let stream_id = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let data = Bytes::copy_from_slice(payload);
            return Ok(Some(Frame::Data { stream_id, data, fin: flags & FLAG_FIN != 0 }));
        }
        let version = u16::from_be_bytes([frame[0] & 0x7f, frame[1]]);
        if version != VERSION {
            return Err(SpdyError::Version(version));
        }
        let stream = |name| word(0).map(|w| w & 0x7fff_ffff).ok_or(SpdyError::Malformed(name));
        Ok(Some(match u16::from_be_bytes([frame[2], frame[3]]) {
            SYN_STREAM => {
                let stream_id = stream("SYN_STREAM")?;
                let block = payload.get(10..).ok_or(SpdyError::Malformed("SYN_STREAM"))?;
                let headers = parse_headers(&self.inflate_block(block)?)?;
                Frame::SynStream { stream_id, headers, fin: flags & FLAG_FIN != 0 }
            }
            RST_STREAM => Frame::RstStream { stream_id: stream("RST_STREAM")? },
            PING => Frame::Ping { id: word(0).ok_or(SpdyError::Malformed("PING"))? },
            GOAWAY => Frame::GoAway,
            _ => Frame::Ignored,
        }))
    }

    /// Decompresses one header block, continuing the connection's zlib stream.
    fn inflate_block(&mut self, mut block: &[u8]) -> Result<Vec<u8>, SpdyError> {
        let failed = |e: flate2::DecompressError| SpdyError::Compression(e.to_string());
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        while !block.is_empty() {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity());
            }
            let before = self.inflate.total_in();
            let result = self.inflate.decompress_vec(block, &mut out, FlushDecompress::Sync);
            block = &block[(self.inflate.total_in() - before) as usize..];
            match result {
                Ok(Status::StreamEnd) => break,
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate.set_dictionary(dictionary()).map_err(failed)?;
                }
                Err(e) => return Err(failed(e)),
            }
        }
        Ok(out)
    }
}

/// A decompressed header block: a count, then length-prefixed names and values.
fn parse_headers(block: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
    let mut rest = block;
    let count = length(&mut rest)?;
    let mut headers = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let name = length(&mut rest).and_then(|n| take(&mut rest, n))?;
        let value = length(&mut rest).and_then(|n| take(&mut rest, n))?;
        let name = String::from_utf8_lossy(name).to_lowercase();
        headers.push((name, String::from_utf8_lossy(value).into_owned()));
    }
    Ok(headers)
}

/// The first `n` bytes of `rest`, which moves past them.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], SpdyError> {
    let (head, tail) = rest.split_at_checked(n).ok_or(SpdyError::Malformed("header block"))?;
    *rest = tail;
    Ok(head)
}

/// A 32-bit length at the start of `rest`, which moves past it.
fn length(rest: &mut &[u8]) -> Result<usize, SpdyError> {
    let b = take(rest, 4)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

/// Writes frames for the peer.
pub(crate) struct Encoder {
    deflate: Compress,
}

impl Default for Encoder {
    fn default() -> Self {
        let mut deflate = Compress::new(Compression::default(), true);
        deflate.set_dictionary(dictionary()).expect("a fresh zlib stream takes a dictionary");
        Encoder { deflate }
    }
}

impl Encoder {
    /// `SYN_REPLY` accepting `stream_id`, with no headers.
    pub(crate) fn reply(&mut self, stream_id: u32) -> Vec<u8> {
        let block = self.deflate_block(&0u32.to_be_bytes());
        let mut payload = stream_id.to_be_bytes().to_vec();
        payload.extend_from_slice(&block);
        control(SYN_REPLY, 0, &payload)
    }

    /// Compresses one header block, continuing the connection's zlib stream.
    fn deflate_block(&mut self, block: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(block.len() + 64);
        let mut rest = block;
        loop {
            let before = self.deflate.total_in();
            self.deflate
                .compress_vec(rest, &mut out, FlushCompress::Sync)
                .expect("compressing into memory does not fail");
            rest = &rest[(self.deflate.total_in() - before) as usize..];
            // Done once the input is taken and the flush did not fill the buffer.
            if rest.is_empty() && out.len() < out.capacity() {
                return out;
            }
            out.reserve(out.capacity().max(64));
        }
    }
}

/// A `DATA` frame.
pub(crate) fn data(stream_id: u32, data: &[u8], fin: bool) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + data.len());
    frame.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
    frame.push(if fin { FLAG_FIN } else { 0 });
    frame.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(data);
    frame
}

/// A `RST_STREAM` frame with `status`.
pub(crate) fn reset(stream_id: u32, status: u32) -> Vec<u8> {
    let mut payload = stream_id.to_be_bytes().to_vec();
    payload.extend_from_slice(&status.to_be_bytes());
    control(RST_STREAM, 0, &payload)
}

/// The answer to a `PING`.
pub(crate) fn pong(id: u32) -> Vec<u8> {
    control(PING, 0, &id.to_be_bytes())
}

/// A control frame.
fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.push(flags);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `SYN_STREAM` as a client writes it, compressed with `encoder`'s stream.
    fn syn_stream(encoder: &mut Encoder, stream_id: u32, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut block = (headers.len() as u32).to_be_bytes().to_vec();
        for (name, value) in headers {
            for text in [name, value] {
                block.extend_from_slice(&(text.len() as u32).to_be_bytes());
                block.extend_from_slice(text.as_bytes());
            }
        }
        let mut payload = stream_id.to_be_bytes().to_vec();
        payload.extend_from_slice(&[0; 6]);
        payload.extend_from_slice(&encoder.deflate_block(&block));
        control(SYN_STREAM, 0, &payload)
    }

    #[test]
    fn the_dictionary_is_spdy_3s() {
        // Its size and Adler-32, which a zlib stream primed with it names in its header.
        let dictionary = dictionary();
        assert_eq!(dictionary.len(), 1423);
        let (mut a, mut b) = (1u32, 0u32);
        for byte in dictionary {
            a = (a + u32::from(*byte)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!((b << 16) | a, 0xe3c6_a7c2);
    }

    #[test]
    fn header_blocks_share_one_zlib_stream_per_direction() {
        let mut client = Encoder::default();
        let mut bytes = syn_stream(&mut client, 1, &[("streamType", "error"), ("port", "80")]);
        bytes.extend(syn_stream(&mut client, 3, &[("streamType", "data"), ("port", "80")]));
        bytes.extend(data(3, b"GET / HTTP/1.0\r\n\r\n", true));
        let mut decoder = Decoder::default();
        // Split anywhere, as a WebSocket tunnel may split the bytes.
        let (first, second) = bytes.split_at(13);
        decoder.push(first);
        assert_eq!(decoder.next_frame(), Ok(None));
        decoder.push(second);
        let headers =
            |kind: &str| vec![("streamtype".into(), kind.into()), ("port".into(), "80".into())];
        assert_eq!(
            decoder.next_frame(),
            Ok(Some(Frame::SynStream { stream_id: 1, headers: headers("error"), fin: false }))
        );
        assert_eq!(
            decoder.next_frame(),
            Ok(Some(Frame::SynStream { stream_id: 3, headers: headers("data"), fin: false }))
        );
        assert_eq!(
            decoder.next_frame(),
            Ok(Some(Frame::Data {
                stream_id: 3,
                data: Bytes::from_static(b"GET / HTTP/1.0\r\n\r\n"),
                fin: true
            }))
        );
        assert_eq!(decoder.next_frame(), Ok(None));
    }

    #[test]
    fn control_frames_are_laid_out_as_spdy_3_has_them() {
        assert_eq!(pong(7), [0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7]);
        assert_eq!(reset(5, REFUSED_STREAM), [0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 3]);
        assert_eq!(data(1, b"hi", true), [0, 0, 0, 1, 1, 0, 0, 2, b'h', b'i']);
        let reply = Encoder::default().reply(1);
        assert_eq!(&reply[..4], [0x80, 3, 0, 2]);
        assert_eq!(&reply[8..12], [0, 0, 0, 1]);
        let mut decoder = Decoder::default();
        decoder.push(&pong(9));
        assert_eq!(decoder.next_frame(), Ok(Some(Frame::Ping { id: 9 })));
        decoder.push(&[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
        assert_eq!(decoder.next_frame(), Err(SpdyError::Version(2)));
    }
}
