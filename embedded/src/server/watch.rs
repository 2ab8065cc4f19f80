//! Watches: newline-delimited `{"type", "object"}` events over a chunked response.
//!
//! `resourceVersion` unset or `0` (or `sendInitialEvents=true`) starts with synthetic `ADDED`
//! events for the current objects; `sendInitialEvents` ends them with the
//! `k8s.io/initial-events-end` bookmark. A version older than the kept history gets one `ERROR`
//! event with a 410 `Status`, which is what clients relist on. Selectors see transitions: an
//! object that stops matching is sent as `DELETED`, one that starts matching as `ADDED`.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::catalog::ResourceInfo;
use crate::storage::{EventType, StoreError};
use crate::table;

use super::convert::from_stored;
use super::errors::{ApiError, ApiResult};
use super::read::{check_field_selector, include_object, selected, wants_table};
use super::{ApiState, ResourceRequest};

/// A watch without `timeoutSeconds` ends after this long, as upstream's request timeout does.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(30);

/// One watch event as sent: `{"type": …, "object": …}`.
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: &'a Value,
}

/// How one watch renders its events.
struct Renderer {
    info: std::sync::Arc<ResourceInfo>,
    table: bool,
    include: table::IncludeObject,
    headers_sent: bool,
}

impl Renderer {
    fn line(&mut self, event_type: &str, object: &Value) -> Bytes {
        let table;
        let object = if self.table && event_type != "BOOKMARK" && event_type != "ERROR" {
            let with_headers = !self.headers_sent;
            self.headers_sent = true;
            table = table::table(
                &self.info,
                &[object],
                self.include,
                jiff::Timestamp::now(),
                with_headers,
            );
            &table
        } else {
            object
        };
        let mut line = serde_json::to_vec(&Line { event_type, object }).unwrap_or_default();
        line.push(b'\n');
        Bytes::from(line)
    }

    fn bookmark(&mut self, revision: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({ "resourceVersion": revision.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let object = json!({ "apiVersion": self.info.api_version(), "kind": self.info.kind, "metadata": metadata });
        self.line("BOOKMARK", &object)
    }
}

fn expired(requested: u64, oldest: u64) -> Value {
    ApiError::gone(format!("too old resource version: {requested} ({oldest})")).status()
}

/// `GET …?watch=true`.
pub(crate) async fn watch(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let info = request.target.info.clone();
    check_field_selector(&info, &request.query)?;
    let query = request.query;
    let prefix = request.target.prefix();
    let initial_wanted = query.send_initial_events == Some(true);
    let from_now = matches!(query.resource_version.as_deref(), None | Some("") | Some("0"));
    // The current objects are sent from the snapshot itself (taken before the watch starts).
    let (initial, after) = if from_now || initial_wanted {
        let snapshot = state.store.list(&prefix);
        let revision = snapshot.revision();
        (Some(snapshot), revision)
    } else {
        let rv = query.resource_version.as_deref().unwrap_or_default();
        let revision = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?;
        (None, revision)
    };
    let mut renderer = Renderer {
        info: info.clone(),
        table: wants_table(&request.headers),
        include: include_object(&query),
        headers_sent: false,
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    let timeout = query.timeout_seconds.map(Duration::from_secs).unwrap_or(DEFAULT_TIMEOUT);
    let store = state.store.clone();
    let registry = state.registry.clone();
    let mut replacements = registry.replacements();
    tokio::spawn(async move {
        let mut watch = match store.watch(&prefix, after) {
            Ok(watch) => watch,
            Err(StoreError::Compacted { requested, oldest }) => {
                let _ = tx.send(Ok(renderer.line("ERROR", &expired(requested, oldest)))).await;
                return;
            }
            Err(_) => return,
        };
        for entry in initial.iter().flat_map(|s| s.entries()).filter(|e| e.key.starts_with(&prefix))
        {
            let object = from_stored(&info, &entry.object);
            if !selected(&query, &object) {
                continue;
            }
            let line = renderer.line("ADDED", &object);
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
        if initial_wanted && tx.send(Ok(renderer.bookmark(after, true))).await.is_err() {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut bookmarks =
            tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        let mut last_revision = after;
        loop {
            let line = tokio::select! {
                // In this order: events already committed are sent before a replaced view ends
                // the watch.
                biased;
                _ = &mut deadline => return,
                next = watch.next() => match next {
                    None => return,
                    Some(Err(StoreError::Compacted { requested, oldest })) => {
                        let _ = tx.send(Ok(renderer.line("ERROR", &expired(requested, oldest)))).await;
                        return;
                    }
                    Some(Err(_)) => return,
                    Some(Ok(event)) => {
                        last_revision = event.revision;
                        let object = from_stored(&info, &event.object);
                        let now = selected(&query, &object);
                        let before = event.previous.as_ref().map(|p| selected(&query, &from_stored(&info, p)));
                        let kind = match (event.event_type, before, now) {
                            (EventType::Added, _, true) => Some("ADDED"),
                            (EventType::Modified, Some(true), true) => Some("MODIFIED"),
                            (EventType::Modified, _, true) => Some("ADDED"),
                            (EventType::Modified, Some(true), false) => Some("DELETED"),
                            (EventType::Deleted, _, true) => Some("DELETED"),
                            _ => None,
                        };
                        kind.map(|kind| renderer.line(kind, &object))
                    }
                },
                // Its CRD is gone: the watch ends, as upstream tears down a CRD's storage.
                Ok(()) = replacements.changed() => {
                    if registry.served().find(&info.group, &info.version, &info.resource).is_none() {
                        return;
                    }
                    None
                }
                _ = bookmarks.tick(), if query.allow_bookmarks => Some(renderer.bookmark(last_revision, false)),
            };
            if let Some(line) = line
                && tx.send(Ok(line)).await.is_err()
            {
                return;
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}
