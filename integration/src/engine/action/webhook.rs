//! The `webhook` action: POST the route's copy of the event as JSON.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use super::Request;
use crate::engine::definition::WebhookAction;

/// The request for `event`; `extra` are engine headers (idempotency key).
pub(crate) fn request(
    action: &WebhookAction,
    event: &Value,
    default_timeout: Duration,
    extra: Option<(HeaderName, HeaderValue)>,
) -> Request {
    let mut headers = action.headers.clone();
    headers.extend(extra);
    Request {
        url: action.url.clone(),
        body: serde_json::to_vec(event).unwrap_or_default(),
        content_type: "application/json",
        headers,
        timeout: action.timeout.unwrap_or(default_timeout),
    }
}
