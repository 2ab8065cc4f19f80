//! Storage for the embedded API server: a kine-like append-only revision log in SQLite.
//!
//! Every write gets the next global revision (starting at 1), which becomes the object's
//! `metadata.resourceVersion`. One writer thread owns the SQLite connection and commits queued
//! writes in groups (one transaction per batch); a checkpointer thread copies the WAL into the
//! database beside it. Reads never touch SQLite: `get` and `list` are served from a persistent
//! ordered map published through an [`arc_swap::ArcSwap`], so a list is an O(1) snapshot at one
//! revision. Watches replay an in-memory history of recent events and then follow live writes;
//! compaction bounds that history and the log.

mod checkpoint;
mod contents;
mod db;
mod live;
mod watch;
mod writer;

#[cfg(test)]
mod tests;

pub use watch::Watch;

use contents::Contents;
use live::Live;

use std::collections::VecDeque;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Capacity of each live event channel; a watcher further behind re-reads the history.
pub(crate) const LIVE_CAPACITY: usize = 1024;

/// Configuration of a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Path of the SQLite database file (created with its parent directories if missing).
    pub path: PathBuf,
    /// Keep at least this many recent revisions in the history (default 10,000).
    pub retain_revisions: u64,
    /// Keep at least this much recent history (default 15 minutes); whichever of the two
    /// retention rules keeps more wins.
    pub retain_for: Duration,
    /// Most writes committed in one SQLite transaction (default 256).
    pub max_batch: usize,
}

impl StoreConfig {
    /// Configuration with the default retention and batch size for the database at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            retain_revisions: 10_000,
            retain_for: Duration::from_secs(15 * 60),
            max_batch: 256,
        }
    }
}

/// The current state of one key.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The key, e.g. `/apis/serving.keelson.dev/modeldeployments/default/qwen`.
    pub key: String,
    /// Revision of the last write to the key (its `resourceVersion`).
    pub revision: u64,
    /// Revision at which the key was created.
    pub create_revision: u64,
    /// The stored object, `metadata.resourceVersion` stamped.
    pub object: Arc<Value>,
}

/// A write request.
#[derive(Clone, Debug)]
pub enum WriteOp {
    /// Create `key`; fails with [`StoreError::AlreadyExists`] if it exists.
    Create {
        /// Key to create.
        key: String,
        /// Object to store (must be a JSON object).
        object: Value,
    },
    /// Replace `key`; fails with [`StoreError::NotFound`] or [`StoreError::Conflict`].
    Update {
        /// Key to replace.
        key: String,
        /// Revision the caller last saw; `0` means unconditional.
        expected_revision: u64,
        /// New object (must be a JSON object).
        object: Value,
    },
    /// Delete `key`; fails with [`StoreError::NotFound`] or [`StoreError::Conflict`].
    Delete {
        /// Key to delete.
        key: String,
        /// Revision the caller last saw; `0` means unconditional.
        expected_revision: u64,
    },
}

/// The result of a successful write.
#[derive(Clone, Debug)]
pub struct Written {
    /// The revision of the write.
    pub revision: u64,
    /// The object as stored, `resourceVersion` stamped; for a delete, the last object stamped
    /// with the deletion's revision.
    pub object: Arc<Value>,
    /// `object` as the JSON text the store wrote, for replies that show it unchanged.
    pub json: String,
}

/// Kind of change carried by an [`Event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The key was created.
    Added,
    /// The key was replaced.
    Modified,
    /// The key was deleted.
    Deleted,
}

/// One committed write, as seen by watchers.
#[derive(Clone, Debug)]
pub struct Event {
    /// Kind of change.
    pub event_type: EventType,
    /// The key written.
    pub key: String,
    /// Revision of the write.
    pub revision: u64,
    /// The object after the write; for a delete, the last object stamped with this revision.
    pub object: Arc<Value>,
    /// The object before the write (`None` for a creation), for selector transitions.
    pub previous: Option<Arc<Value>>,
}

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The key does not exist.
    #[error("{key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The key exists already.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// The expected revision is not the key's current one.
    #[error("conflict on {key}: its current revision is {current_revision}")]
    Conflict {
        /// The key.
        key: String,
        /// The key's current revision.
        current_revision: u64,
    },
    /// The requested revision is older than the retained history.
    #[error("revision {requested} is compacted; the oldest revision to watch from is {oldest}")]
    Compacted {
        /// Revision the caller asked for.
        requested: u64,
        /// Oldest revision a watch can start after.
        oldest: u64,
    },
    /// The object cannot be stored (not a JSON object, or `metadata` not an object).
    #[error("invalid object for {key}: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The store is shut down.
    #[error("the store is closed")]
    Closed,
    /// Another process holds the database file.
    #[error(
        "{} is in use by another process (is another `keelson up` running on this data directory?)",
        path.display()
    )]
    InUse {
        /// The database file.
        path: std::path::PathBuf,
    },
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// JSON (de)serialisation failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// An I/O error, or a failed group commit reported to the batch's other writers.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Current state: every live key at one revision.
pub(crate) struct State {
    pub(crate) revision: u64,
    pub(crate) contents: Contents,
}

/// One history event with its commit time (Unix milliseconds), for time-based retention.
pub(crate) struct HistoryEvent {
    pub(crate) event: Arc<Event>,
    pub(crate) at_ms: u64,
}

/// Recent events, contiguous: `events[i].revision == compacted + 1 + i`.
pub(crate) struct History {
    /// Compaction point: events at or below it may be gone. A watch can start after it.
    pub(crate) compacted: u64,
    pub(crate) events: VecDeque<HistoryEvent>,
    /// Live channels; `None` once the writer has stopped.
    pub(crate) live: Option<Live>,
}

/// What the store has done since it opened, as [`Store::counts`] reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Writes committed.
    pub writes: u64,
    /// SQLite transactions that committed writes (writes queued together share one).
    pub transactions: u64,
    /// Compactions of the history.
    pub compactions: u64,
}

/// Counters for tests and diagnostics.
#[derive(Default)]
pub(crate) struct Metrics {
    /// SQLite transactions that committed writes.
    pub(crate) transactions: AtomicU64,
    /// Writes committed.
    pub(crate) writes: AtomicU64,
    /// WAL pages the committed writes took, estimated from their size (the checkpointer's cue).
    pub(crate) wal_pages: AtomicU64,
    /// Compactions performed.
    pub(crate) compactions: AtomicU64,
    /// Requests the writer has taken off the queue.
    pub(crate) received: AtomicU64,
}

/// State shared by the handles, the writer and the watchers.
pub(crate) struct Shared {
    pub(crate) state: ArcSwap<State>,
    pub(crate) history: RwLock<History>,
    pub(crate) metrics: Metrics,
    /// Held by the writer while it handles a batch; the checkpointer holds it to pause the
    /// writer, tests to queue writes up.
    pub(crate) write_gate: Mutex<()>,
}

impl Shared {
    pub(crate) fn history(&self) -> RwLockReadGuard<'_, History> {
        self.history.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn history_mut(&self) -> RwLockWriteGuard<'_, History> {
        self.history.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn gate(&self) -> MutexGuard<'_, ()> {
        self.write_gate.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request to the writer.
pub(crate) enum Request {
    Write { op: WriteOp, reply: oneshot::Sender<Result<Written, StoreError>> },
    Compact { reply: oneshot::Sender<Result<u64, StoreError>> },
}

struct Handle {
    shared: Arc<Shared>,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    stopped: tokio::sync::watch::Receiver<bool>,
}

/// The revision-log store. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Handle>,
}

impl Store {
    /// Opens (or creates) the database, rebuilds the state and history, and starts the writer.
    pub async fn open(config: StoreConfig) -> Result<Store, StoreError> {
        if let Some(parent) = config.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let capacity = config.max_batch.max(1).saturating_mul(4).max(1024);
        let (requests, receiver) = mpsc::channel(capacity);
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stopped_tx, stopped) = tokio::sync::watch::channel(false);
        std::thread::Builder::new()
            .name("keelson-store-writer".into())
            .spawn(move || writer::run(config, receiver, ready_tx, stopped_tx))?;
        let shared = ready_rx.await.map_err(|_| StoreError::Closed)??;
        Ok(Store {
            inner: Arc::new(Handle { shared, requests: Mutex::new(Some(requests)), stopped }),
        })
    }

    /// Latest committed revision (0 for an empty store).
    pub fn revision(&self) -> u64 {
        self.inner.shared.state.load().revision
    }

    /// Oldest revision a watch can start after (the compaction point).
    pub fn oldest_revision(&self) -> u64 {
        self.inner.shared.history().compacted
    }

    /// What the store has done since it opened.
    pub fn counts(&self) -> StoreCounts {
        let metrics = &self.inner.shared.metrics;
        StoreCounts {
            writes: metrics.writes.load(Ordering::Relaxed),
            transactions: metrics.transactions.load(Ordering::Relaxed),
            compactions: metrics.compactions.load(Ordering::Relaxed),
        }
    }

    /// The current entry for `key`.
    pub fn get(&self, key: &str) -> Option<Entry> {
        self.inner.shared.state.load().contents.get(key).cloned()
    }

    /// A consistent snapshot of the keys starting with `prefix`, taken in O(1).
    pub fn list(&self, prefix: &str) -> Snapshot {
        Snapshot { state: self.inner.shared.state.load_full(), prefix: prefix.to_owned() }
    }

    /// The keys starting with `prefix` as they were at `revision`: the current state with the
    /// history after `revision` undone. The current state for a revision not yet reached;
    /// [`StoreError::Compacted`] when the history no longer reaches back to it.
    pub fn list_at(&self, prefix: &str, revision: u64) -> Result<Snapshot, StoreError> {
        for _ in 0..LIST_AT_ATTEMPTS {
            let history = self.inner.shared.history();
            let latest = self.list(prefix);
            let recorded = history.compacted + history.events.len() as u64;
            if latest.revision() != recorded {
                // The writer publishes the state before the history: let it finish the batch.
                drop(history);
                std::thread::yield_now();
                continue;
            }
            if revision >= latest.revision() {
                return Ok(latest);
            }
            if revision < history.compacted {
                return Err(StoreError::Compacted {
                    requested: revision,
                    oldest: history.compacted,
                });
            }
            let mut contents = latest.state.contents.clone();
            let newer = history.events.iter().rev().take_while(|e| e.event.revision > revision);
            for Event { key, previous, .. } in newer.map(|e| &*e.event) {
                if !key.starts_with(prefix) {
                    continue;
                }
                match previous {
                    None => {
                        contents.remove(key);
                    }
                    Some(object) => {
                        let revision = stamped_revision(object);
                        let create_revision =
                            contents.get(key).map_or(revision, |e| e.create_revision);
                        let entry = Entry {
                            key: key.clone(),
                            revision,
                            create_revision,
                            object: object.clone(),
                        };
                        contents.insert(entry);
                    }
                }
            }
            let state = Arc::new(State { revision, contents });
            return Ok(Snapshot { state, prefix: prefix.to_owned() });
        }
        // Never seen: state and history agree once a batch is published. Answered as history
        // that is gone, so that the client starts over from the current state.
        tracing::warn!(revision, "the state and the history did not agree; list refused");
        Err(StoreError::Compacted {
            requested: revision,
            oldest: self.inner.shared.history().compacted,
        })
    }

    /// Queues a write and waits until it is committed (or rejected).
    pub async fn write(&self, op: WriteOp) -> Result<Written, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Write { op, reply }).await?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Writes `op` for a task that keeps objects in some state from what it read: a conflict or
    /// a missing object (another writer changed it since) is not an error, as the event of that
    /// change brings the task back to look again.
    pub async fn write_if_unchanged(&self, op: WriteOp) -> Result<(), StoreError> {
        match self.write(op).await {
            Ok(_) | Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Compacts the history now by the retention rules; returns the new compaction point.
    /// The writer also compacts on its own every so often.
    pub async fn compact(&self) -> Result<u64, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Compact { reply }).await?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Watches keys under `prefix` for events with revisions above `after_revision`.
    /// Fails with [`StoreError::Compacted`] if that history is gone.
    pub fn watch(&self, prefix: &str, after_revision: u64) -> Result<Watch, StoreError> {
        Watch::new(self.inner.shared.clone(), prefix, after_revision)
    }

    /// Stops accepting writes, lets the writer commit what is queued, waits for it to close
    /// SQLite, and ends every watch. Idempotent.
    pub async fn shutdown(&self) {
        drop(self.inner.requests.lock().unwrap_or_else(PoisonError::into_inner).take());
        let mut stopped = self.inner.stopped.clone();
        // An error means the writer is gone, which is what we wait for anyway.
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }

    async fn send(&self, request: Request) -> Result<(), StoreError> {
        let requests = self.inner.requests.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let requests = requests.ok_or(StoreError::Closed)?;
        requests.send(request).await.map_err(|_| StoreError::Closed)
    }
}

/// How often [`Store::list_at`] looks for state and history to agree before it gives up.
const LIST_AT_ATTEMPTS: usize = 10_000;

/// The `metadata.resourceVersion` a stored object was stamped with (0 if it has none).
fn stamped_revision(object: &Value) -> u64 {
    let stamp = object.get("metadata").and_then(|m| m.get("resourceVersion"));
    stamp.and_then(Value::as_str).and_then(|rv| rv.parse().ok()).unwrap_or(0)
}

/// A consistent view of the keys under one prefix at one revision.
#[derive(Clone)]
pub struct Snapshot {
    state: Arc<State>,
    prefix: String,
}

impl Snapshot {
    /// The revision the snapshot was taken at.
    pub fn revision(&self) -> u64 {
        self.state.revision
    }

    /// The same state, scoped to the keys under `prefix`.
    pub fn scoped(&self, prefix: &str) -> Snapshot {
        Snapshot { state: self.state.clone(), prefix: prefix.to_owned() }
    }

    /// The entries in key order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.from(Bound::Included(self.prefix.as_str()))
    }

    /// The entries with keys greater than `key`, in key order (for continue tokens).
    pub fn after<'a>(&'a self, key: &str) -> impl Iterator<Item = &'a Entry> + use<'a> {
        if key < self.prefix.as_str() {
            self.from(Bound::Included(self.prefix.as_str()))
        } else {
            self.from(Bound::Excluded(key))
        }
    }

    /// The entries labelled `label=value`, in key order; only those with keys greater than
    /// `after` if it is given (for continue tokens).
    pub fn labelled<'a>(
        &'a self,
        label: &'a str,
        value: &'a str,
        after: Option<&str>,
    ) -> impl Iterator<Item = &'a Entry> + use<'a> {
        self.state.contents.labelled(label, value, &self.prefix, after)
    }

    /// The entries of objects with owner references, in key order.
    pub fn owned(&self) -> impl Iterator<Item = &Entry> {
        self.state.contents.owned().filter(|entry| entry.key.starts_with(&self.prefix))
    }

    /// The entries of objects being deleted, in key order.
    pub fn deleting(&self) -> impl Iterator<Item = &Entry> {
        self.state.contents.deleting().filter(|entry| entry.key.starts_with(&self.prefix))
    }

    /// The entry of the object with `uid`, if it is under the prefix.
    pub fn by_uid(&self, uid: &str) -> Option<&Entry> {
        self.state.contents.by_uid(uid).filter(|entry| entry.key.starts_with(&self.prefix))
    }

    /// The entry for `key`, if it is under the prefix.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        if key.starts_with(&self.prefix) { self.state.contents.get(key) } else { None }
    }

    /// Number of entries (counts them).
    pub fn len(&self) -> usize {
        self.entries().count()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries().next().is_none()
    }

    fn from<'a>(&'a self, start: Bound<&str>) -> impl Iterator<Item = &'a Entry> + use<'a> {
        let prefix = self.prefix.as_str();
        self.state.contents.from(start).take_while(move |entry| entry.key.starts_with(prefix))
    }
}
