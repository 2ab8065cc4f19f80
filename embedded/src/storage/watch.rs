//! Watches: replay the history above a revision, then follow the live channel.
//!
//! A watch subscribes to the live channel of its prefix's collection before it reads any history
//! (under the history lock the writer publishes with), and tracks a cursor: every event of its
//! prefix up to it has been taken (the revisions in between, read from the history or skipped by
//! the channel, concern other keys). Events at or below the cursor are dropped, so replay and
//! live never leave a gap or deliver twice. A watch that falls behind the live channel re-reads
//! the history from its cursor; if that history is compacted it ends with
//! [`StoreError::Compacted`].

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::BoxStream;
use tokio::sync::broadcast::{self, error::RecvError};

use super::{Event, Shared, StoreError};

/// Most history events examined per lock acquisition while replaying.
const REPLAY_CHUNK: usize = 512;

/// A stream of [`Event`]s for keys under a prefix, in revision order.
pub struct Watch {
    shared: Arc<Shared>,
    prefix: String,
    /// Every event of the prefix up to here has been taken.
    cursor: u64,
    buffer: VecDeque<Arc<Event>>,
    live: broadcast::Receiver<Arc<Event>>,
    replaying: bool,
    finished: bool,
}

impl Watch {
    pub(crate) fn new(
        shared: Arc<Shared>,
        prefix: &str,
        after_revision: u64,
    ) -> Result<Watch, StoreError> {
        let history = shared.history();
        let live = history.live.as_ref().ok_or(StoreError::Closed)?.subscribe(prefix);
        if after_revision < history.compacted {
            return Err(StoreError::Compacted {
                requested: after_revision,
                oldest: history.compacted,
            });
        }
        drop(history);
        Ok(Watch {
            shared,
            prefix: prefix.to_owned(),
            cursor: after_revision,
            buffer: VecDeque::new(),
            live,
            replaying: true,
            finished: false,
        })
    }

    /// The next event; `Some(Err(Compacted))` (then `None`) if this watch fell behind the
    /// retained history; `None` once the store has shut down. Cancel-safe.
    pub async fn next(&mut self) -> Option<Result<Event, StoreError>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                return Some(Ok(Event::clone(&event)));
            }
            if self.finished {
                return None;
            }
            if self.replaying {
                match self.replay_chunk() {
                    Ok(caught_up) => self.replaying = !caught_up,
                    Err(error) => {
                        self.finished = true;
                        return Some(Err(error));
                    }
                }
                if self.buffer.is_empty() {
                    // Long stretches of other prefixes: let other tasks run.
                    tokio::task::yield_now().await;
                }
                continue;
            }
            match self.live.recv().await {
                Ok(event) if event.revision <= self.cursor => {}
                Ok(event) => {
                    self.cursor = event.revision;
                    if event.key.starts_with(&self.prefix) {
                        return Some(Ok(Event::clone(&event)));
                    }
                }
                Err(RecvError::Lagged(skipped)) => {
                    tracing::debug!(
                        cursor = self.cursor,
                        skipped,
                        "watch lagged; replaying history"
                    );
                    self.replaying = true;
                }
                Err(RecvError::Closed) => {
                    self.finished = true;
                    return None;
                }
            }
        }
    }

    /// Turns the watch into a `Stream`.
    pub fn into_stream(self) -> BoxStream<'static, Result<Event, StoreError>> {
        Box::pin(futures::stream::unfold(self, |mut watch| async move {
            watch.next().await.map(|item| (item, watch))
        }))
    }

    /// Every event for this prefix up to this revision has been returned (for bookmarks).
    pub fn revision(&self) -> u64 {
        if let Some(event) = self.buffer.front() {
            return event.revision - 1;
        }
        // The writer publishes under the history lock: while it is held, the channel has every
        // event of this collection that the history has and this watch has not taken. If it has
        // none, every revision published is returned or concerns another collection.
        let history = self.shared.history();
        let published = history.compacted + history.events.len() as u64;
        match self.replaying || !self.live.is_empty() {
            true => self.cursor,
            false => self.cursor.max(published),
        }
    }

    /// Copies matching history events above the cursor into the buffer, one chunk at a time.
    /// Returns whether the history is exhausted.
    fn replay_chunk(&mut self) -> Result<bool, StoreError> {
        let history = self.shared.history();
        if self.cursor < history.compacted {
            return Err(StoreError::Compacted {
                requested: self.cursor,
                oldest: history.compacted,
            });
        }
        let start = usize::try_from(self.cursor - history.compacted).unwrap_or(usize::MAX);
        if start >= history.events.len() {
            return Ok(true);
        }
        let end = history.events.len().min(start + REPLAY_CHUNK);
        for item in history.events.range(start..end) {
            self.cursor = item.event.revision;
            if item.event.key.starts_with(&self.prefix) {
                self.buffer.push_back(item.event.clone());
            }
        }
        Ok(end == history.events.len())
    }
}
