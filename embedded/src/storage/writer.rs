//! The single writer: owns the SQLite connection, validates and group-commits queued writes,
//! publishes them to the in-memory state and the watchers, and compacts.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use rusqlite::Connection;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::checkpoint::Checkpointer;
use super::db::{self, Row};
use super::{
    Contents, Entry, Event, EventType, History, HistoryEvent, Live, Metrics, Request, Shared,
    State, StoreConfig, StoreError, WriteOp, Written,
};

/// SQLite's page size: a transaction writes at least one page of WAL, more for bigger rows.
pub(super) const PAGE_BYTES: u64 = 4096;

/// Consider compacting after this many committed batches...
const COMPACT_EVERY_BATCHES: u32 = 64;
/// ...or after this much time with commits.
const COMPACT_INTERVAL: Duration = Duration::from_secs(5);

/// Ends the watches and reports the writer stopped, also if it panics.
struct StopGuard {
    shared: Option<Arc<Shared>>,
    stopped: tokio::sync::watch::Sender<bool>,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.history_mut().live = None;
        }
        let _ = self.stopped.send(true);
    }
}

/// Body of the writer thread.
pub(crate) fn run(
    config: StoreConfig,
    requests: mpsc::Receiver<Request>,
    ready: oneshot::Sender<Result<Arc<Shared>, StoreError>>,
    stopped: tokio::sync::watch::Sender<bool>,
) {
    let mut guard = StopGuard { shared: None, stopped };
    let opened = db::claim(&config.path).and_then(|owner| Ok((owner, db::open(&config.path)?)));
    let (_owner, (conn, loaded)) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    tracing::info!(
        path = %config.path.display(),
        revision = loaded.revision,
        keys = loaded.contents.len(),
        history = loaded.history.len(),
        "store opened"
    );
    let state = Arc::new(State { revision: loaded.revision, contents: loaded.contents });
    let shared = Arc::new(Shared {
        state: ArcSwap::new(state.clone()),
        history: std::sync::RwLock::new(History {
            compacted: loaded.compacted,
            events: loaded.history,
            live: Some(Live::new()),
        }),
        metrics: Metrics::default(),
        write_gate: std::sync::Mutex::new(()),
    });
    guard.shared = Some(shared.clone());
    let checkpointer = match Checkpointer::start(&config.path, shared.clone()) {
        Ok(checkpointer) => checkpointer,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    if ready.send(Ok(shared.clone())).is_err() {
        checkpointer.stop();
        return;
    }
    let mut writer = Writer {
        conn,
        shared,
        current: state,
        max_batch: config.max_batch.max(1),
        retain_revisions: config.retain_revisions,
        retain_for: config.retain_for,
        batches_since_compaction: 0,
        last_compaction: Instant::now(),
    };
    writer.run(requests);
    checkpointer.stop();
    // Closing the last connection checkpoints the WAL and removes it; on failure, dropping it
    // closes it anyway. The claim on the file ends after, when `_owner` is dropped.
    if let Err((_, error)) = writer.conn.close() {
        tracing::warn!(%error, "closing the store database failed");
    }
    tracing::info!("store writer stopped");
}

struct Writer {
    conn: Connection,
    shared: Arc<Shared>,
    /// The state last published (the writer is the only one that publishes).
    current: Arc<State>,
    max_batch: usize,
    retain_revisions: u64,
    retain_for: Duration,
    batches_since_compaction: u32,
    last_compaction: Instant,
}

/// A write validated against the batch's working state, not yet committed.
struct Applied {
    row: Row,
    event: Arc<Event>,
}

impl Writer {
    fn run(&mut self, mut requests: mpsc::Receiver<Request>) {
        // Ends when every sender is gone (shutdown or last handle dropped) and the queue is empty.
        while let Some(first) = next_request(&mut requests) {
            let shared = self.shared.clone();
            shared.metrics.received.fetch_add(1, Ordering::Relaxed);
            let _gate = shared.gate();
            let mut batch = vec![first];
            while batch.len() < self.max_batch {
                match requests.try_recv() {
                    Ok(request) => {
                        shared.metrics.received.fetch_add(1, Ordering::Relaxed);
                        batch.push(request);
                    }
                    Err(_) => break,
                }
            }
            self.handle(batch);
        }
    }

    fn handle(&mut self, batch: Vec<Request>) {
        let at_ms = now_ms();
        let mut contents = self.current.contents.clone();
        let mut revision = self.current.revision;
        let mut applied = Vec::new();
        let mut compactions = Vec::new();
        for request in batch {
            match request {
                Request::Write { op, reply } => match apply(&mut contents, revision + 1, op, at_ms)
                {
                    Ok(write) => {
                        revision += 1;
                        applied.push((write, reply));
                    }
                    Err(error) => {
                        let _ = reply.send(Err(error));
                    }
                },
                Request::Compact { reply } => compactions.push(reply),
            }
        }

        if !applied.is_empty() {
            match db::commit(&mut self.conn, applied.iter().map(|(write, _)| &write.row)) {
                Ok(()) => self.publish(revision, contents, applied, at_ms),
                Err(error) => {
                    tracing::error!(%error, writes = applied.len(), "group commit failed");
                    let message = format!("group commit failed: {error}");
                    let mut error = Some(StoreError::Sqlite(error));
                    for (_, reply) in applied {
                        let error = error
                            .take()
                            .unwrap_or_else(|| std::io::Error::other(message.clone()).into());
                        let _ = reply.send(Err(error));
                    }
                }
            }
            self.batches_since_compaction += 1;
        }

        let due = self.batches_since_compaction >= COMPACT_EVERY_BATCHES
            || (self.batches_since_compaction > 0
                && self.last_compaction.elapsed() >= COMPACT_INTERVAL);
        if due || !compactions.is_empty() {
            let result = self.compact(at_ms);
            if let Err(error) = &result {
                tracing::warn!(%error, "compaction failed");
            }
            for reply in compactions {
                let answer = match &result {
                    Ok(point) => Ok(*point),
                    Err(error) => {
                        Err(std::io::Error::other(format!("compaction failed: {error}")).into())
                    }
                };
                let _ = reply.send(answer);
            }
        }
    }

    /// Publishes a committed batch: state first, then history and live channel, then replies.
    fn publish(
        &mut self,
        revision: u64,
        contents: Contents,
        applied: Vec<(Applied, oneshot::Sender<Result<Written, StoreError>>)>,
        at_ms: u64,
    ) {
        let metrics = &self.shared.metrics;
        metrics.transactions.fetch_add(1, Ordering::Relaxed);
        metrics.writes.fetch_add(applied.len() as u64, Ordering::Relaxed);
        let bytes: usize = applied.iter().map(|(write, _)| write.row.value.len()).sum();
        metrics.wal_pages.fetch_add(1 + bytes as u64 / PAGE_BYTES, Ordering::Relaxed);
        let state = Arc::new(State { revision, contents });
        self.shared.state.store(state.clone());
        self.current = state;
        {
            // Pushing to the history and sending live under one lock: a watch subscribes under
            // the same lock, so every event is either in the history it reads or on its channel.
            let mut history = self.shared.history_mut();
            for (write, _) in &applied {
                debug_assert_eq!(
                    write.event.revision,
                    history.compacted + history.events.len() as u64 + 1
                );
                history.events.push_back(HistoryEvent { event: write.event.clone(), at_ms });
            }
            if let Some(live) = &history.live {
                live.send(applied.iter().map(|(write, _)| &write.event));
            }
        }
        for (Applied { row, event }, reply) in applied {
            let written =
                Written { revision: row.revision, object: event.object.clone(), json: row.value };
            let _ = reply.send(Ok(written));
        }
    }

    /// The compaction point the retention rules allow: the lower of the count rule and the time
    /// rule, so whichever keeps more history wins.
    fn compaction_target(&self, now_ms: u64) -> u64 {
        let history = self.shared.history();
        let by_count = self.current.revision.saturating_sub(self.retain_revisions);
        if by_count <= history.compacted {
            return history.compacted;
        }
        let retain_ms = u64::try_from(self.retain_for.as_millis()).unwrap_or(u64::MAX);
        let cutoff = now_ms.saturating_sub(retain_ms);
        let mut target = history.compacted;
        for item in &history.events {
            if item.event.revision > by_count || item.at_ms > cutoff {
                break;
            }
            target = item.event.revision;
        }
        target
    }

    fn compact(&mut self, now_ms: u64) -> Result<u64, StoreError> {
        self.batches_since_compaction = 0;
        self.last_compaction = Instant::now();
        let old = self.shared.history().compacted;
        let target = self.compaction_target(now_ms);
        if target <= old {
            return Ok(old);
        }
        let deleted = db::compact(&mut self.conn, old, target)?;
        {
            let mut history = self.shared.history_mut();
            while history.events.front().is_some_and(|e| e.event.revision <= target) {
                history.events.pop_front();
            }
            history.compacted = target;
        }
        self.shared.metrics.compactions.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(from = old, to = target, rows = deleted, "store compacted");
        Ok(target)
    }
}

/// How many times the writer yields the CPU looking for a next request before it sleeps.
const SPIN_YIELDS: u32 = 32;

/// The next request: under load the next one arrives while the writer yields the CPU, which
/// spares the sender a futex wake-up and the writer a sleep per batch.
fn next_request(requests: &mut mpsc::Receiver<Request>) -> Option<Request> {
    for _ in 0..SPIN_YIELDS {
        match requests.try_recv() {
            Ok(request) => return Some(request),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    requests.blocking_recv()
}

/// Validates `op` against `contents` and applies it there with `revision`.
/// On error `contents` is unchanged.
fn apply(
    contents: &mut Contents,
    revision: u64,
    op: WriteOp,
    at_ms: u64,
) -> Result<Applied, StoreError> {
    match op {
        WriteOp::Create { key, mut object } => {
            if contents.contains_key(&key) {
                return Err(StoreError::AlreadyExists { key });
            }
            stamp(&key, &mut object, revision)?;
            let value = serde_json::to_string(&object)?;
            let object = Arc::new(object);
            let entry = Entry {
                key: key.clone(),
                revision,
                create_revision: revision,
                object: object.clone(),
            };
            contents.insert(entry);
            Ok(Applied {
                row: Row {
                    revision,
                    key: key.clone(),
                    create_revision: revision,
                    prev_revision: 0,
                    deleted: false,
                    at_ms,
                    value,
                },
                event: Arc::new(Event {
                    event_type: EventType::Added,
                    key,
                    revision,
                    object,
                    previous: None,
                }),
            })
        }
        WriteOp::Update { key, expected_revision, mut object } => {
            let current = check(contents, &key, expected_revision)?;
            let (previous, prev_revision, create_revision) =
                (current.object.clone(), current.revision, current.create_revision);
            stamp(&key, &mut object, revision)?;
            let value = serde_json::to_string(&object)?;
            let object = Arc::new(object);
            let entry =
                Entry { key: key.clone(), revision, create_revision, object: object.clone() };
            contents.insert(entry);
            Ok(Applied {
                row: Row {
                    revision,
                    key: key.clone(),
                    create_revision,
                    prev_revision,
                    deleted: false,
                    at_ms,
                    value,
                },
                event: Arc::new(Event {
                    event_type: EventType::Modified,
                    key,
                    revision,
                    object,
                    previous: Some(previous),
                }),
            })
        }
        WriteOp::Delete { key, expected_revision } => {
            let current = check(contents, &key, expected_revision)?;
            let (previous, prev_revision, create_revision) =
                (current.object.clone(), current.revision, current.create_revision);
            let mut object = Value::clone(&previous);
            stamp(&key, &mut object, revision)?;
            let value = serde_json::to_string(&object)?;
            let object = Arc::new(object);
            contents.remove(&key);
            Ok(Applied {
                row: Row {
                    revision,
                    key: key.clone(),
                    create_revision,
                    prev_revision,
                    deleted: true,
                    at_ms,
                    value,
                },
                event: Arc::new(Event {
                    event_type: EventType::Deleted,
                    key,
                    revision,
                    object,
                    previous: Some(previous),
                }),
            })
        }
    }
}

/// The current entry of `key` if `expected_revision` matches it (0 matches any).
fn check<'a>(
    contents: &'a Contents,
    key: &str,
    expected_revision: u64,
) -> Result<&'a Entry, StoreError> {
    let current = contents.get(key).ok_or_else(|| StoreError::NotFound { key: key.to_owned() })?;
    if expected_revision != 0 && expected_revision != current.revision {
        return Err(StoreError::Conflict {
            key: key.to_owned(),
            current_revision: current.revision,
        });
    }
    Ok(current)
}

/// Sets `metadata.resourceVersion` to `revision`.
fn stamp(key: &str, object: &mut Value, revision: u64) -> Result<(), StoreError> {
    let invalid = |reason: &str| StoreError::Invalid { key: key.to_owned(), reason: reason.into() };
    let object = object.as_object_mut().ok_or_else(|| invalid("not a JSON object"))?;
    let metadata = object.entry("metadata").or_insert_with(|| Value::Object(Default::default()));
    let metadata = metadata.as_object_mut().ok_or_else(|| invalid("metadata is not an object"))?;
    metadata.insert("resourceVersion".into(), Value::String(revision.to_string()));
    Ok(())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
