//! The checkpointer: copies the WAL into the database file on a thread and connection of its
//! own, so that the writer's commits never wait for a checkpoint.
//!
//! A checkpoint `fsync`s the WAL and then the database; run inside a commit, as SQLite does by
//! default, it stalled every write for as long (measured on the build machine's disk: 125 and
//! 39 ms for a WAL of 10,000 pages). Here a passive checkpoint runs beside the writer once
//! about [`CHECKPOINT_PAGES`] have been committed since the last. A WAL is reused from its
//! start only once it has been copied completely, which a stream of writes never allows; so
//! when it has grown past [`WAL_RESTART_PAGES`], the checkpointer flushes the database file,
//! then pauses the writer between two batches (through the write gate) for the few pages
//! written since, after which the next commit starts the WAL over.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::{Shared, StoreError, db};

/// How often the checkpointer looks at the WAL pages committed since its last pass.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// WAL pages (as the writer estimates them) after which the checkpointer copies the WAL into
/// the database: fewer passes copy a page that many transactions change fewer times. Tests
/// pass early.
const CHECKPOINT_PAGES: u64 = if cfg!(test) { 100 } else { 2_000 };

/// WAL pages (4 KiB each) after which the checkpointer has the writer start the WAL over: at
/// most ~40 MiB of WAL, which opening after a crash reads back (~0.1 s). Tests restart early.
pub(crate) const WAL_RESTART_PAGES: i64 = if cfg!(test) { 64 } else { 10_000 };

/// The running checkpointer; [`Checkpointer::stop`] ends it.
pub(crate) struct Checkpointer {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    /// Opens the checkpointer's connection to the database at `path` and starts its thread.
    pub(crate) fn start(path: &Path, shared: Arc<Shared>) -> Result<Self, StoreError> {
        let database = Database { conn: db::connect(path)?, file: File::open(path)? };
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("keelson-store-checkpoint".into())
            .spawn(move || run(&database, &shared, &stopped))?;
        Ok(Checkpointer { stop, thread })
    }

    /// Stops the thread and closes its connection, so that the writer's is the last one and
    /// closing it checkpoints and removes the WAL.
    pub(crate) fn stop(self) {
        drop(self.stop);
        if self.thread.join().is_err() {
            tracing::warn!("the store's checkpointer panicked");
        }
    }
}

/// The checkpointer's connection, and the database file to flush before a restart.
struct Database {
    conn: Connection,
    file: File,
}

fn run(database: &Database, shared: &Shared, stopped: &Receiver<()>) {
    let mut copied_through = shared.metrics.wal_pages.load(Ordering::Relaxed);
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(LOOK_EVERY) {
        let committed = shared.metrics.wal_pages.load(Ordering::Relaxed);
        if committed - copied_through < CHECKPOINT_PAGES {
            continue;
        }
        copied_through = committed;
        if let Err(error) = pass(database, shared) {
            tracing::warn!(%error, "checkpointing the store's WAL failed");
        }
    }
}

/// One pass: a passive checkpoint, then, if the WAL has grown past [`WAL_RESTART_PAGES`], a
/// restarting one with the writer paused. A passive checkpoint flushes the database file only
/// when it copies the whole WAL, which under writes it never does; the restarting one does, so
/// the file is flushed first, with the writer still going, and little is left for the pause.
fn pass(database: &Database, shared: &Shared) -> Result<(), StoreError> {
    let wal_pages = checkpoint(&database.conn, "PASSIVE")?;
    if wal_pages >= WAL_RESTART_PAGES {
        database.file.sync_data()?;
        let _paused = shared.gate();
        checkpoint(&database.conn, "RESTART")?;
    }
    Ok(())
}

/// Runs a checkpoint in `mode`; returns the pages in the WAL.
fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| row.get(1))
}
