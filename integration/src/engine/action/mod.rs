//! Actions: `log` (a tracing line), `webhook` (POST the event JSON) and `fhir` (POST a FHIR
//! resource built from the event), and the single-attempt HTTP send they share.
//!
//! Outbound requests never follow redirects (a redirected POST would silently become a GET);
//! error texts name the destination (`scheme://host:port`) and the HTTP status or transport
//! failure, never the URL path or query, header values, response bodies or event data.

pub(crate) mod fhir;
pub(crate) mod log;
pub(crate) mod webhook;

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER};

use super::circuit::Health;
use super::retry::{parse_retry_after, retryable_status};

/// One HTTP POST, ready to be sent (and re-sent on retry).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// Full URL.
    pub url: Url,
    /// Body bytes.
    pub body: Vec<u8>,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers from the definition, then engine headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Per-attempt timeout.
    pub timeout: Duration,
}

/// `scheme://host:port` of a URL: the circuit breaker key and the `destination` label.
pub(crate) fn destination(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port_or_known_default() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Why one attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AttemptError {
    /// A non-2xx answer.
    Status {
        /// The HTTP status.
        code: u16,
        /// A `Retry-After` in seconds, when given.
        retry_after: Option<Duration>,
    },
    /// No answer within the timeout.
    Timeout(Duration),
    /// The connection could not be made.
    Connect,
    /// Another transport failure (reset, protocol error, …).
    Transport,
}

impl AttemptError {
    /// Whether another attempt may help.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Status { code, .. } => retryable_status(*code),
            Self::Timeout(_) | Self::Connect | Self::Transport => true,
        }
    }

    /// What the failure says about the destination, for the circuit breaker.
    pub fn health(&self) -> Health {
        if self.retryable() { Health::Unhealthy } else { Health::Healthy }
    }

    /// The server's `Retry-After`, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status, if there was an answer.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// A message naming the destination only.
    pub fn describe(&self, destination: &str) -> String {
        match self {
            Self::Status { code, .. } => format!("HTTP {code} from {destination}"),
            Self::Timeout(after) => {
                format!("no answer from {destination} within {} ms", after.as_millis())
            }
            Self::Connect => format!("could not connect to {destination}"),
            Self::Transport => format!("transport error talking to {destination}"),
        }
    }
}

/// Sends `request` once; `Ok(status)` for a 2xx answer.
pub(crate) async fn send(client: &reqwest::Client, request: &Request) -> Result<u16, AttemptError> {
    let mut builder = client
        .post(request.url.clone())
        .timeout(request.timeout)
        .header(CONTENT_TYPE, request.content_type)
        .body(request.body.clone());
    for (name, value) in &request.headers {
        builder = builder.header(name.clone(), value.clone());
    }
    let response = builder.send().await.map_err(|error| {
        if error.is_timeout() {
            AttemptError::Timeout(request.timeout)
        } else if error.is_connect() {
            AttemptError::Connect
        } else {
            AttemptError::Transport
        }
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(status.as_u16());
    }
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    Err(AttemptError::Status { code: status.as_u16(), retry_after })
}

/// The `Idempotency-Key` header for an action on an event, so receivers can drop the
/// duplicates retries and replays may cause. `None` when the event has no usable id.
pub(crate) fn idempotency_key(
    event_id: Option<&str>,
    route: &str,
    action: &str,
) -> Option<(HeaderName, HeaderValue)> {
    let value = HeaderValue::from_str(&format!("{}:{route}:{action}", event_id?)).ok()?;
    Some((HeaderName::from_static("idempotency-key"), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(destination(&url("http://user:pw@h.example/a?b=c")), "http://h.example:80");
        assert_eq!(destination(&url("https://h.example:8443/r4")), "https://h.example:8443");
        assert_eq!(destination(&url("http://[::1]:9/x")), "http://[::1]:9");
    }

    #[test]
    fn attempt_errors() {
        let status = |code| AttemptError::Status { code, retry_after: None };
        assert!(status(500).retryable());
        assert_eq!(status(500).health(), Health::Unhealthy);
        assert!(!status(400).retryable());
        assert_eq!(status(400).health(), Health::Healthy);
        assert!(AttemptError::Timeout(Duration::from_secs(1)).retryable());
        assert_eq!(status(503).describe("http://h:1"), "HTTP 503 from http://h:1");
        assert!(idempotency_key(None, "r", "a").is_none());
        assert_eq!(idempotency_key(Some("evt_1"), "r", "a").unwrap().1, "evt_1:r:a");
    }
}
