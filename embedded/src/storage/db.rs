//! SQLite layout of the revision log: ownership, schema, loading at open, group commit,
//! compaction.
//!
//! `log` holds one row per revision. `prev_revision` points at the key's previous live row (0
//! after a creation), so compaction can find superseded rows without an index on `key`.
//! `meta.compacted` records the compaction point: every row above it is kept.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::{Contents, Entry, Event, EventType, HistoryEvent, StoreError};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS log (
    revision        INTEGER PRIMARY KEY,
    key             TEXT    NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision   INTEGER NOT NULL,
    deleted         INTEGER NOT NULL,
    created_ms      INTEGER NOT NULL,
    value           TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// A row to append.
pub(crate) struct Row {
    pub(crate) revision: u64,
    pub(crate) key: String,
    pub(crate) create_revision: u64,
    pub(crate) prev_revision: u64,
    pub(crate) deleted: bool,
    pub(crate) at_ms: u64,
    pub(crate) value: String,
}

/// What `open` rebuilds from the file.
pub(crate) struct Loaded {
    pub(crate) revision: u64,
    pub(crate) compacted: u64,
    pub(crate) contents: Contents,
    pub(crate) history: VecDeque<HistoryEvent>,
}

/// How long a second opener waits for the owner's lock (a previous owner may still be closing).
const CLAIM_PATIENCE: Duration = Duration::from_secs(1);

/// Claims the database at `path` for this process: an exclusive lock on `<path>.lock`, held
/// while the returned file is open. One process owns the database, as a second store on it
/// would reuse revisions; the lock is a file of its own so that the checkpointer can open a
/// second connection, which SQLite's exclusive locking mode would refuse.
pub(crate) fn claim(path: &Path) -> Result<File, StoreError> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(lock_path)?;
    let deadline = Instant::now() + CLAIM_PATIENCE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::InUse { path: path.to_owned() });
            }
            Err(TryLockError::Error(error)) => return Err(error.into()),
        }
    }
}

/// How long a statement waits for a lock the process's other connection holds. Other processes
/// never get this far (see [`claim`]), and the write gate pauses the writer while the
/// checkpointer restarts the WAL, so this is a safeguard rather than an expected wait.
const BUSY_PATIENCE: Duration = Duration::from_secs(1);

/// Opens a connection to the database at `path` (claimed by this process) in WAL mode.
pub(crate) fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_PATIENCE)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // Durability: in WAL mode with synchronous=NORMAL, a commit has written its frames to the
    // WAL file (into the OS page cache) before it returns, and only checkpoints fsync. A write
    // acknowledged to a client therefore survives `kill -9` of this process; only an OS crash or
    // power loss can lose the latest commits, and the database stays consistent even then.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// Opens the writer's connection to the database (claimed by this process) and rebuilds the
/// current state and the history above the compaction point.
pub(crate) fn open(path: &Path) -> Result<(Connection, Loaded), StoreError> {
    let conn = connect(path)?;
    // Commits never checkpoint: the checkpointer does, on its own thread and connection.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.execute_batch(SCHEMA)?;

    let compacted = conn
        .query_row("SELECT value FROM meta WHERE name = 'compacted'", [], |row| row.get(0))
        .optional()?
        .map_or(0, uint);

    struct Latest {
        revision: u64,
        create_revision: u64,
        deleted: bool,
        object: Arc<Value>,
    }
    let mut latest: HashMap<String, Latest> = HashMap::new();
    let mut history = VecDeque::new();
    let mut revision = compacted;
    let mut history_start = compacted;

    let mut stmt = conn.prepare(
        "SELECT revision, key, create_revision, prev_revision, deleted, created_ms, value
         FROM log ORDER BY revision",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let rev = uint(row.get(0)?);
        let key: String = row.get(1)?;
        let create_revision = uint(row.get(2)?);
        let prev_revision = uint(row.get(3)?);
        let deleted: bool = row.get(4)?;
        let at_ms = uint(row.get(5)?);
        let text: String = row.get(6)?;
        let object = Arc::new(serde_json::from_str::<Value>(&text)?);
        revision = revision.max(rev);

        if rev > compacted {
            if rev != history_start + history.len() as u64 + 1 {
                // Rows above the compaction point are never deleted, so this means damage;
                // keep what is contiguous and make older watches relist.
                tracing::warn!(revision = rev, "gap in the revision log; history restarts here");
                history.clear();
                history_start = rev - 1;
            }
            let previous = latest
                .get(&key)
                .filter(|l| l.revision == prev_revision && !l.deleted && prev_revision != 0)
                .map(|l| l.object.clone());
            let event_type = if deleted {
                EventType::Deleted
            } else if create_revision == rev {
                EventType::Added
            } else {
                EventType::Modified
            };
            let event = Event {
                event_type,
                key: key.clone(),
                revision: rev,
                object: object.clone(),
                previous,
            };
            history.push_back(HistoryEvent { event: Arc::new(event), at_ms });
        }
        latest.insert(key, Latest { revision: rev, create_revision, deleted, object });
    }

    let contents = latest
        .into_iter()
        .filter(|(_, l)| !l.deleted)
        .map(|(key, l)| Entry {
            key,
            revision: l.revision,
            create_revision: l.create_revision,
            object: l.object,
        })
        .collect();
    drop(rows);
    drop(stmt);
    Ok((conn, Loaded { revision, compacted: history_start, contents, history }))
}

/// Appends `rows` in one transaction.
pub(crate) fn commit<'a>(
    conn: &mut Connection,
    rows: impl IntoIterator<Item = &'a Row>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO log (revision, key, create_revision, prev_revision, deleted, created_ms, value)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for row in rows {
            insert.execute(params![
                int(row.revision),
                row.key,
                int(row.create_revision),
                int(row.prev_revision),
                row.deleted,
                int(row.at_ms),
                row.value
            ])?;
        }
    }
    tx.commit()
}

/// Moves the compaction point from `old` to `new`: deletes rows superseded by a row at or below
/// `new`, and tombstones at or below `new`. The latest row at or below the point stays for each
/// live key, so events above the point keep their `previous` object across a restart.
/// Returns the number of rows deleted.
pub(crate) fn compact(conn: &mut Connection, old: u64, new: u64) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let superseded = tx.execute(
        "DELETE FROM log WHERE revision IN (
             SELECT prev_revision FROM log
             WHERE revision > ?1 AND revision <= ?2 AND prev_revision > 0)",
        params![int(old), int(new)],
    )?;
    let tombstones = tx.execute(
        "DELETE FROM log WHERE revision > ?1 AND revision <= ?2 AND deleted = 1",
        params![int(old), int(new)],
    )?;
    tx.execute(
        "INSERT INTO meta (name, value) VALUES ('compacted', ?1)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        params![int(new)],
    )?;
    tx.commit()?;
    Ok(superseded + tombstones)
}

/// SQLite integers are signed; revisions and times stay far below `i64::MAX`.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
