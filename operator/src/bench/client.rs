//! The requests `keelson bench` sends, the server-sent events it reads back, and one timed
//! request.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::BenchError;
use super::args::Backend;
use super::measure::Sample;

/// The prompt of every text request.
pub const DEFAULT_PROMPT: &str = "Write a long story about a space adventure to Mars.";
/// The prompt of an image request.
pub const IMAGE_PROMPT: &str = "A solid blue square";
/// Longest a single request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// Where requests go and what they ask for.
#[derive(Debug, Clone)]
pub struct Target {
    /// The HTTP client.
    pub http: reqwest::Client,
    /// Base URL of the server, without a trailing slash.
    pub endpoint: String,
    /// Model name sent in requests.
    pub model: String,
    /// The backend: which request is sent.
    pub backend: Backend,
    /// `max_tokens` of text requests.
    pub max_tokens: u32,
    /// The prompt of text requests.
    pub prompt: String,
    /// Sampling temperature of text requests; the server's default when `None`.
    pub temperature: Option<f64>,
    /// Bearer token, if any.
    pub api_key: Option<String>,
}

/// The path and body of the request `target` sends.
pub fn request(target: &Target) -> (&'static str, Value) {
    match target.backend {
        Backend::Tei => ("/embed", json!({ "inputs": DEFAULT_PROMPT })),
        Backend::Diffusers => (
            "/v1/images/generations",
            json!({ "model": target.model, "prompt": IMAGE_PROMPT, "n": 1, "size": "512x512" }),
        ),
        Backend::Vllm | Backend::MlcLlm | Backend::Llamacpp => {
            let mut body = json!({
                "model": target.model,
                "messages": [{ "role": "user", "content": target.prompt }],
                "max_tokens": target.max_tokens,
                "stream": true,
                "stream_options": { "include_usage": true },
            });
            if let Some(temperature) = target.temperature {
                body["temperature"] = json!(temperature);
            }
            ("/v1/chat/completions", body)
        }
    }
}

/// One event of a server-sent event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseEvent {
    /// The `data` of an event (lines joined with `\n`).
    Data(String),
    /// `data: [DONE]`: the OpenAI end of stream.
    Done,
}

/// Splits a byte stream into server-sent events, whatever the chunking of the bytes.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.line_done(&String::from_utf8_lossy(&line), &mut events);
            } else {
                self.line.push(byte);
            }
        }
        events
    }

    /// Ends the stream: an event not followed by a blank line still counts.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&String::from_utf8_lossy(&line), &mut events);
        }
        self.dispatch(&mut events);
        events
    }

    fn line_done(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(events);
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        // Comments (`:`), `event:`, `id:` and `retry:` lines say nothing about tokens.
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        if let Some(data) = self.data.take() {
            events.push(if data.trim() == "[DONE]" {
                SseEvent::Done
            } else {
                SseEvent::Data(data)
            });
        }
    }
}

/// What one streamed chunk (or a whole unstreamed answer) of a completion says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Chunk {
    /// Non-empty pieces of generated text in it (`delta.content`, `delta.reasoning_content`,
    /// `message.content` or `text`): one token each when the server streams token by token.
    pub pieces: u64,
    /// `usage.completion_tokens`, when the chunk carries usage.
    pub completion_tokens: Option<u64>,
}

/// Reads a chat or text completion chunk (or a whole answer).
pub fn parse_chunk(data: &str) -> Result<Chunk, String> {
    let value: Value =
        serde_json::from_str(data).map_err(|e| format!("not JSON ({e}): {}", excerpt(data)))?;
    if let Some(error) = value.get("error") {
        return Err(format!("the server answered an error: {}", excerpt(&error.to_string())));
    }
    let text = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    let pieces = value
        .get("choices")
        .and_then(Value::as_array)
        .map(|choices| {
            choices
                .iter()
                .map(|choice| {
                    let delta = choice.get("delta").or_else(|| choice.get("message"));
                    let content = text(delta.and_then(|d| d.get("content")))
                        || text(delta.and_then(|d| d.get("reasoning_content")))
                        || text(choice.get("text"));
                    u64::from(content)
                })
                .sum()
        })
        .unwrap_or(0);
    let completion_tokens = value.pointer("/usage/completion_tokens").and_then(Value::as_u64);
    Ok(Chunk { pieces, completion_tokens })
}

/// Sends one request to `target` and times it.
pub async fn timed_request(target: &Target) -> Result<Sample, BenchError> {
    let (path, body) = request(target);
    let url = format!("{}{path}", target.endpoint);
    let mut builder = target.http.post(&url).json(&body).timeout(REQUEST_TIMEOUT);
    if let Some(key) = &target.api_key {
        builder = builder.bearer_auth(key);
    }
    let started = Instant::now();
    let failed = |reason: String| BenchError::Request { url: url.clone(), reason };
    let mut response = builder.send().await.map_err(|e| failed(error_chain(&e)))?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(failed(format!("HTTP {}: {}", status.as_u16(), excerpt(&body))));
    }
    if !target.backend.generates_text() {
        // One embedding or one image per request, timed by the whole request.
        response.bytes().await.map_err(|e| failed(error_chain(&e)))?;
        return Ok(Sample::timed(1, 0, None, None, started.elapsed()));
    }
    let streamed = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streamed {
        let body = response.text().await.map_err(|e| failed(error_chain(&e)))?;
        let chunk = parse_chunk(&body).map_err(failed)?;
        let tokens = chunk.completion_tokens.unwrap_or(chunk.pieces);
        return Ok(Sample::timed(tokens, 0, None, None, started.elapsed()));
    }
    let mut decoder = SseDecoder::default();
    let (mut pieces, mut usage, mut first, mut last) = (0u64, None, None, None);
    let mut done = false;
    while !done {
        let bytes = response.chunk().await.map_err(|e| failed(error_chain(&e)))?;
        let at = started.elapsed();
        let events = match &bytes {
            Some(bytes) => decoder.push(bytes),
            None => {
                done = true;
                decoder.finish()
            }
        };
        for event in events {
            match event {
                SseEvent::Done => done = true,
                SseEvent::Data(data) => {
                    let chunk = parse_chunk(&data).map_err(failed)?;
                    if chunk.pieces > 0 {
                        first.get_or_insert(at);
                        last = Some(at);
                        pieces += chunk.pieces;
                    }
                    usage = chunk.completion_tokens.or(usage);
                }
            }
        }
    }
    let tokens = usage.unwrap_or(pieces);
    if tokens == 0 {
        return Err(failed("the answer held no generated tokens".to_owned()));
    }
    Ok(Sample::timed(tokens, pieces, first, last, started.elapsed()))
}

/// An error with its causes, e.g. `error sending request: connection refused`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The start of a response body, for messages.
pub fn excerpt(body: &str) -> String {
    const MAX: usize = 200;
    let body = body.trim();
    match body.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(backend: Backend) -> Target {
        Target {
            http: reqwest::Client::new(),
            endpoint: "http://m:8000".into(),
            model: "qwen".into(),
            backend,
            max_tokens: 64,
            prompt: DEFAULT_PROMPT.into(),
            temperature: None,
            api_key: None,
        }
    }

    #[test]
    fn a_chat_request_streams_with_usage_and_asks_for_the_batch_size() {
        let (path, body) = request(&target(Backend::Vllm));
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(
            body,
            json!({
                "model": "qwen",
                "messages": [{"role": "user", "content": DEFAULT_PROMPT}],
                "max_tokens": 64,
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
        assert_eq!(request(&target(Backend::Tei)).0, "/embed");
        let (path, body) = request(&target(Backend::Diffusers));
        assert_eq!((path, &body["size"]), ("/v1/images/generations", &json!("512x512")));
    }

    #[test]
    fn events_are_split_whatever_the_chunking() {
        let stream = "data: {\"a\":1}\n\n: keep-alive\n\nevent: x\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\ndata: [DONE]\n\n";
        let whole = SseDecoder::default().push(stream.as_bytes());
        assert_eq!(
            whole,
            [
                SseEvent::Data("{\"a\":1}".into()),
                SseEvent::Data("{\"b\":\n2}".into()),
                SseEvent::Done
            ]
        );
        let mut decoder = SseDecoder::default();
        let bytewise: Vec<SseEvent> =
            stream.as_bytes().chunks(1).flat_map(|b| decoder.push(b)).collect();
        assert_eq!(bytewise, whole);
        // A last event without its blank line still counts.
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(b"data: [DONE]").is_empty());
        assert_eq!(decoder.finish(), [SseEvent::Done]);
    }

    #[test]
    fn chunks_count_text_pieces_and_read_usage() {
        let chat = r#"{"choices":[{"index":0,"delta":{"content":" Mars"}}]}"#;
        assert_eq!(parse_chunk(chat), Ok(Chunk { pieces: 1, completion_tokens: None }));
        let role_only = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(parse_chunk(role_only).unwrap().pieces, 0);
        let reasoning = r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#;
        assert_eq!(parse_chunk(reasoning).unwrap().pieces, 1);
        let text = r#"{"choices":[{"text":"x"},{"text":"y"}]}"#;
        assert_eq!(parse_chunk(text).unwrap().pieces, 2);
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":64}}"#;
        assert_eq!(parse_chunk(usage), Ok(Chunk { pieces: 0, completion_tokens: Some(64) }));
        let whole =
            r#"{"choices":[{"message":{"content":"a story"}}],"usage":{"completion_tokens":2}}"#;
        assert_eq!(parse_chunk(whole), Ok(Chunk { pieces: 1, completion_tokens: Some(2) }));
        assert!(parse_chunk("nope").unwrap_err().starts_with("not JSON"));
        let error = r#"{"error":{"message":"model not found"}}"#;
        assert!(parse_chunk(error).unwrap_err().contains("model not found"));
    }

    #[test]
    fn excerpts_are_short() {
        assert_eq!(excerpt("  short \n"), "short");
        assert_eq!(excerpt(&"é".repeat(300)).chars().count(), 201);
    }
}
