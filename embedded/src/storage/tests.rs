use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::*;

/// Test access to the internals.
impl Store {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    pub(crate) fn queued(&self) -> usize {
        let requests = self.inner.requests.lock().unwrap_or_else(PoisonError::into_inner);
        requests.as_ref().map_or(0, |r| r.max_capacity() - r.capacity())
    }

    pub(crate) fn accepting(&self) -> bool {
        self.inner.requests.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn object(name: &str, value: u64) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})
}

fn rv(object: &Value) -> &str {
    object["metadata"]["resourceVersion"].as_str().unwrap()
}

fn config(dir: &TempDir) -> StoreConfig {
    StoreConfig::new(dir.path().join("db").join("store.sqlite"))
}

async fn open(dir: &TempDir) -> Store {
    Store::open(config(dir)).await.unwrap()
}

async fn create(store: &Store, key: &str, value: u64) -> Written {
    let name = key.rsplit('/').next().unwrap();
    store.write(WriteOp::Create { key: key.into(), object: object(name, value) }).await.unwrap()
}

async fn update(store: &Store, key: &str, expected_revision: u64, value: u64) -> Written {
    let name = key.rsplit('/').next().unwrap();
    let op = WriteOp::Update { key: key.into(), expected_revision, object: object(name, value) };
    store.write(op).await.unwrap()
}

async fn delete(store: &Store, key: &str, expected_revision: u64) -> Written {
    store.write(WriteOp::Delete { key: key.into(), expected_revision }).await.unwrap()
}

async fn next(watch: &mut Watch) -> Event {
    tokio::time::timeout(WAIT, watch.next()).await.expect("watch timed out").unwrap().unwrap()
}

async fn collect(watch: &mut Watch, count: usize) -> Vec<Event> {
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        events.push(next(watch).await);
    }
    events
}

fn revisions(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.revision).collect()
}

/// Waits until `condition` holds, polling.
async fn until(mut condition: impl FnMut() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("condition not reached");
}

#[tokio::test]
async fn revisions_increase_by_one_across_keys_and_are_stamped() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    assert_eq!(store.revision(), 0);

    let a = create(&store, "/r/ns/a", 1).await;
    let b = create(&store, "/r/ns/b", 2).await;
    assert_eq!((a.revision, b.revision), (1, 2));
    assert_eq!(rv(&a.object), "1");
    assert_eq!(rv(&b.object), "2");

    let a2 = update(&store, "/r/ns/a", 1, 3).await;
    assert_eq!(a2.revision, 3);
    assert_eq!(rv(&a2.object), "3");
    assert_eq!(a2.object["data"]["v"], 3);

    let entry = store.get("/r/ns/a").unwrap();
    assert_eq!((entry.revision, entry.create_revision), (3, 1));
    assert_eq!(rv(&entry.object), "3");

    let gone = delete(&store, "/r/ns/b", 2).await;
    assert_eq!(gone.revision, 4);
    assert_eq!(rv(&gone.object), "4", "a deletion carries its own revision");
    assert_eq!(gone.object["data"]["v"], 2, "a deletion returns the last object");
    assert!(store.get("/r/ns/b").is_none());
    assert_eq!(store.revision(), 4);

    // A stale resourceVersion in the body is overwritten.
    let mut stale = object("c", 5);
    stale["metadata"]["resourceVersion"] = json!("999");
    let c = store.write(WriteOp::Create { key: "/r/ns/c".into(), object: stale }).await.unwrap();
    assert_eq!(rv(&c.object), "5");
}

#[tokio::test]
async fn preconditions_are_enforced_and_failures_use_no_revision() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    create(&store, "/k/a", 1).await;

    let again = store.write(WriteOp::Create { key: "/k/a".into(), object: object("a", 2) }).await;
    assert!(matches!(again, Err(StoreError::AlreadyExists { key }) if key == "/k/a"));

    let op = WriteOp::Update { key: "/k/a".into(), expected_revision: 7, object: object("a", 2) };
    let conflict = store.write(op).await;
    assert!(matches!(conflict, Err(StoreError::Conflict { current_revision: 1, .. })));

    let op = WriteOp::Update { key: "/k/x".into(), expected_revision: 1, object: object("x", 2) };
    assert!(matches!(store.write(op).await, Err(StoreError::NotFound { key }) if key == "/k/x"));

    let op = WriteOp::Delete { key: "/k/x".into(), expected_revision: 0 };
    assert!(matches!(store.write(op).await, Err(StoreError::NotFound { .. })));

    let op = WriteOp::Delete { key: "/k/a".into(), expected_revision: 5 };
    assert!(matches!(store.write(op).await, Err(StoreError::Conflict { current_revision: 1, .. })));

    let op = WriteOp::Create { key: "/k/bad".into(), object: json!(["not", "an", "object"]) };
    assert!(matches!(store.write(op).await, Err(StoreError::Invalid { .. })));
    let op = WriteOp::Create { key: "/k/bad".into(), object: json!({"metadata": 3}) };
    assert!(matches!(store.write(op).await, Err(StoreError::Invalid { .. })));

    assert_eq!(store.revision(), 1, "rejected writes take no revision");

    // expected_revision 0 is unconditional.
    assert_eq!(update(&store, "/k/a", 0, 3).await.revision, 2);
    assert_eq!(delete(&store, "/k/a", 0).await.revision, 3);
    let op = WriteOp::Update { key: "/k/a".into(), expected_revision: 2, object: object("a", 4) };
    assert!(matches!(store.write(op).await, Err(StoreError::NotFound { .. })));

    // Re-creating after a delete starts a new life.
    let again = create(&store, "/k/a", 5).await;
    assert_eq!(again.revision, 4);
    assert_eq!(store.get("/k/a").unwrap().create_revision, 4);
}

#[expect(clippy::await_holding_lock, reason = "holds the gate of the writer thread on purpose")]
#[tokio::test]
async fn mixed_batch_checks_each_write_against_the_ones_before() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let gate = store.shared().gate();
    let ops = vec![
        WriteOp::Create { key: "/b/x".into(), object: object("x", 1) },
        WriteOp::Create { key: "/b/x".into(), object: object("x", 2) },
        WriteOp::Update { key: "/b/x".into(), expected_revision: 1, object: object("x", 3) },
        WriteOp::Update { key: "/b/x".into(), expected_revision: 1, object: object("x", 4) },
        WriteOp::Delete { key: "/b/x".into(), expected_revision: 2 },
    ];
    let mut tasks = Vec::new();
    for op in ops {
        let writer = store.clone();
        tasks.push(tokio::spawn(async move { writer.write(op).await }));
        // Queue them in this order.
        let queued = tasks.len();
        until(|| store_queued_or_held(&store, queued)).await;
    }
    drop(gate);
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap());
    }
    assert_eq!(results[0].as_ref().unwrap().revision, 1);
    assert!(matches!(results[1], Err(StoreError::AlreadyExists { .. })));
    assert_eq!(results[2].as_ref().unwrap().revision, 2);
    assert!(matches!(results[3], Err(StoreError::Conflict { current_revision: 2, .. })));
    assert_eq!(results[4].as_ref().unwrap().revision, 3);
    assert!(store.get("/b/x").is_none());
    assert_eq!(store.counts().transactions, 1);
}

/// Whether `count` requests have reached the writer's queue (or the writer).
fn store_queued_or_held(store: &Store, count: usize) -> bool {
    let received = store.shared().metrics.received.load(Ordering::Relaxed) as usize;
    store.queued() + received >= count
}

#[tokio::test]
async fn list_is_a_consistent_snapshot_while_writes_continue() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    for i in 0..50 {
        create(&store, &format!("/l/a/k{i:03}"), i).await;
    }
    for i in 0..5 {
        create(&store, &format!("/l/b/k{i:03}"), i).await;
    }
    let snapshot = store.list("/l/a/");
    assert_eq!(snapshot.revision(), 55);
    assert_eq!(snapshot.len(), 50);

    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 0..50 {
                let key = format!("/l/a/k{i:03}");
                let current = store.get(&key).unwrap().revision;
                update(&store, &key, current, 1000 + i).await;
            }
            for i in 50..60 {
                create(&store, &format!("/l/a/k{i:03}"), i).await;
            }
            delete(&store, "/l/a/k000", 0).await;
        })
    };
    // Read the snapshot while the writer runs, and again after.
    for _ in 0..2 {
        let keys: Vec<&str> = snapshot.entries().map(|e| e.key.as_str()).collect();
        assert_eq!(keys.len(), 50);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order");
        for entry in snapshot.entries() {
            assert!(entry.revision <= 55);
            assert!(entry.object["data"]["v"].as_u64().unwrap() < 50);
        }
        writer_yield().await;
    }
    writer.await.unwrap();
    assert_eq!(snapshot.len(), 50);
    assert!(snapshot.get("/l/a/k000").is_some());
    assert!(snapshot.get("/l/b/k000").is_none(), "outside the prefix");

    let now = store.list("/l/a/");
    assert_eq!(now.revision(), 116);
    assert_eq!(now.len(), 59);
    assert!(now.entries().all(|e| e.key.starts_with("/l/a/")));

    // Continue tokens.
    let rest: Vec<_> = snapshot.after("/l/a/k044").map(|e| e.key.clone()).collect();
    assert_eq!(rest, (45..50).map(|i| format!("/l/a/k{i:03}")).collect::<Vec<_>>());
    assert_eq!(snapshot.after("/l/").count(), 50, "a key before the prefix starts at the prefix");
    assert_eq!(snapshot.after("/l/a/k049").count(), 0);
    assert_eq!(store.list("/l/b/").len(), 5);
    assert!(store.list("/nothing/").is_empty());
}

async fn writer_yield() {
    tokio::time::sleep(Duration::from_millis(2)).await;
}

#[tokio::test]
async fn watch_replays_history_then_follows_live_writes() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    for (i, key) in ["/w/a", "/w/b", "/w/c"].into_iter().enumerate() {
        create(&store, key, i as u64).await;
    }
    let mut from_zero = store.watch("/w/", 0).unwrap();
    let mut from_two = store.watch("/w/", 2).unwrap();

    let replayed = collect(&mut from_zero, 3).await;
    assert_eq!(revisions(&replayed), [1, 2, 3]);
    assert!(replayed.iter().all(|e| e.event_type == EventType::Added && e.previous.is_none()));
    assert_eq!(replayed[1].key, "/w/b");
    assert_eq!(rv(&replayed[1].object), "2");

    let later = next(&mut from_two).await;
    assert_eq!((later.revision, later.key.as_str()), (3, "/w/c"));

    update(&store, "/w/a", 1, 10).await;
    delete(&store, "/w/b", 2).await;
    for watch in [&mut from_zero, &mut from_two] {
        let modified = next(watch).await;
        assert_eq!((modified.event_type, modified.revision), (EventType::Modified, 4));
        assert_eq!(rv(modified.previous.as_ref().unwrap()), "1");
        assert_eq!(modified.object["data"]["v"], 10);
        let deleted = next(watch).await;
        assert_eq!((deleted.event_type, deleted.revision), (EventType::Deleted, 5));
        assert_eq!(rv(&deleted.object), "5", "DELETED carries the deletion revision");
        assert_eq!(rv(deleted.previous.as_ref().unwrap()), "2");
        assert_eq!(watch.revision(), 5);
    }
    // Nothing more is pending.
    assert!(tokio::time::timeout(Duration::from_millis(50), from_two.next()).await.is_err());

    // A watch from the current revision sees only what comes next.
    let mut from_now = store.watch("/w/", store.revision()).unwrap();
    create(&store, "/w/d", 4).await;
    assert_eq!(next(&mut from_now).await.revision, 6);
}

#[tokio::test]
async fn watch_filters_by_prefix() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    create(&store, "/p/ns-a/x", 1).await;
    create(&store, "/p/ns-ab/y", 2).await;
    create(&store, "/p/ns-b/z", 3).await;
    let mut watch = store.watch("/p/ns-a/", 0).unwrap();
    create(&store, "/p/ns-a/w", 4).await;
    create(&store, "/p/ns-b/v", 5).await;
    update(&store, "/p/ns-a/x", 1, 6).await;
    let events = collect(&mut watch, 3).await;
    let keys: Vec<_> = events.iter().map(|e| (e.key.as_str(), e.revision)).collect();
    assert_eq!(keys, [("/p/ns-a/x", 1), ("/p/ns-a/w", 4), ("/p/ns-a/x", 6)]);
    assert!(tokio::time::timeout(Duration::from_millis(50), watch.next()).await.is_err());
    assert_eq!(watch.revision(), 6);
    // Another prefix skips ahead with its cursor even without matching events.
    create(&store, "/p/ns-b/u", 7).await;
    assert!(tokio::time::timeout(Duration::from_millis(50), watch.next()).await.is_err());
    assert_eq!(watch.revision(), 7);
}

#[tokio::test]
async fn a_watch_of_one_collection_follows_it_through_any_number_of_writes_to_others() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let mut pods = store.watch("/core/pods/", 0).unwrap();
    create(&store, "/core/pods/a/web", 0).await;
    assert_eq!(next(&mut pods).await.revision, 1);
    // More writes to another collection than a live channel holds.
    let others = 2 * LIVE_CAPACITY as u64;
    for i in 0..others {
        create(&store, &format!("/core/configmaps/a/{i}"), i).await;
    }
    assert!(tokio::time::timeout(Duration::from_millis(50), pods.next()).await.is_err());
    assert_eq!(pods.revision(), others + 1, "its cursor is past the others' writes");
    create(&store, "/core/pods/a/db", 0).await;
    let event = next(&mut pods).await;
    assert_eq!((event.key.as_str(), event.revision), ("/core/pods/a/db", others + 2));
    assert_eq!(pods.revision(), others + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_started_mid_way_sees_a_contiguous_sequence() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    create(&store, "/c/one", 0).await;

    // One sequential writer of 1,000 updates; it waits at update 600 until the watcher exists,
    // so the watcher starts mid-way and then runs alongside the rest of the writes.
    let (started_tx, started) = tokio::sync::watch::channel(false);
    let writer = {
        let store = store.clone();
        let mut started = started.clone();
        tokio::spawn(async move {
            let mut revision = 1;
            for i in 0..1000 {
                if i == 600 {
                    started.wait_for(|s| *s).await.unwrap();
                }
                revision = update(&store, "/c/one", revision, i).await.revision;
            }
        })
    };
    until(|| store.revision() >= 300).await;
    let start = store.revision();
    let mut watch = store.watch("/c/", start).unwrap();
    started_tx.send(true).unwrap();
    let events = collect(&mut watch, (1001 - start) as usize).await;
    writer.await.unwrap();
    assert_eq!(revisions(&events), (start + 1..=1001).collect::<Vec<_>>());
    for pair in events.windows(2) {
        assert_eq!(rv(pair[1].previous.as_ref().unwrap()), rv(&pair[0].object));
    }

    // Eight concurrent writers on their own keys, a watcher joining mid-way.
    let (started_tx, started) = tokio::sync::watch::channel(false);
    let mut writers = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        let mut started = started.clone();
        writers.push(tokio::spawn(async move {
            let key = format!("/c/many/{w}");
            let mut revision = create(&store, &key, 0).await.revision;
            for i in 1..125 {
                if i == 60 {
                    started.wait_for(|s| *s).await.unwrap();
                }
                revision = update(&store, &key, revision, i).await.revision;
            }
        }));
    }
    until(|| store.revision() >= 1001 + 200).await;
    let start = store.revision();
    let mut watch = store.watch("/c/many/", start).unwrap();
    started_tx.send(true).unwrap();
    let last = 1001 + 8 * 125;
    let events = collect(&mut watch, (last - start) as usize).await;
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(revisions(&events), (start + 1..=last).collect::<Vec<_>>());
}

#[tokio::test]
async fn compaction_makes_old_revisions_unwatchable() {
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 5, retain_for: Duration::ZERO, ..config(&dir) };
    let path = config.path.clone();
    let store = Store::open(config).await.unwrap();
    for i in 0..10 {
        create(&store, &format!("/x/k{i}"), i).await; // revisions 1..=10
    }
    for i in 0..20 {
        update(&store, "/x/k0", 0, 100 + i).await; // 11..=30
    }
    delete(&store, "/x/k1", 0).await; // 31
    assert_eq!(store.oldest_revision(), 0);
    assert!(store.watch("/x/", 0).is_ok());

    assert_eq!(store.compact().await.unwrap(), 26);
    assert_eq!(store.oldest_revision(), 26);
    match store.watch("/x/", 10) {
        Err(StoreError::Compacted { requested: 10, oldest: 26 }) => {}
        other => panic!("expected Compacted, got {:?}", other.map(|_| ())),
    }
    let mut watch = store.watch("/x/", 26).unwrap();
    assert_eq!(revisions(&collect(&mut watch, 5).await), [27, 28, 29, 30, 31]);
    // The current state is untouched.
    assert_eq!(store.list("/x/").len(), 9);
    assert_eq!(store.get("/x/k0").unwrap().revision, 30);
    store.shutdown().await;

    // Rows left: k2..k9 (8), k0 at 26 plus 27..=30 (5), k1 at 2 and its tombstone 31 (2).
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<i64> = conn
        .prepare("SELECT revision FROM log ORDER BY revision")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, [2, 3, 4, 5, 6, 7, 8, 9, 10, 26, 27, 28, 29, 30, 31]);
    let point: i64 = conn
        .query_row("SELECT value FROM meta WHERE name = 'compacted'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(point, 26);
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn time_retention_keeps_more_when_it_covers_more() {
    let dir = TempDir::new().unwrap();
    let config =
        StoreConfig { retain_revisions: 2, retain_for: Duration::from_secs(3600), ..config(&dir) };
    let store = Store::open(config).await.unwrap();
    for i in 0..20 {
        create(&store, &format!("/t/{i}"), i).await;
    }
    assert_eq!(store.compact().await.unwrap(), 0, "all of it is younger than an hour");
    assert_eq!(revisions(&collect(&mut store.watch("/t/", 0).unwrap(), 20).await).len(), 20);

    // And the count rule keeps more when the time rule would drop everything.
    let dir = TempDir::new().unwrap();
    let config = StoreConfig {
        retain_revisions: 15,
        retain_for: Duration::ZERO,
        ..StoreConfig::new(dir.path().join("s"))
    };
    let store = Store::open(config).await.unwrap();
    for i in 0..20 {
        create(&store, &format!("/t/{i}"), i).await;
    }
    assert_eq!(store.compact().await.unwrap(), 5);
}

#[tokio::test]
async fn the_writer_compacts_on_its_own() {
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 10, retain_for: Duration::ZERO, ..config(&dir) };
    let store = Store::open(config).await.unwrap();
    create(&store, "/a/k", 0).await;
    for i in 0..200 {
        update(&store, "/a/k", 0, i).await;
    }
    assert!(store.counts().compactions >= 1);
    assert!(store.oldest_revision() > 0);
    assert!(store.oldest_revision() <= store.revision() - 10);
    assert!(store.shared().history().events.len() < 200);
}

#[expect(clippy::await_holding_lock, reason = "holds the gate of the writer thread on purpose")]
#[tokio::test]
async fn queued_writes_are_group_committed() {
    for (max_batch, expected) in [(256, 1..=1), (10, 10..=10)] {
        let dir = TempDir::new().unwrap();
        let store = Store::open(StoreConfig { max_batch, ..config(&dir) }).await.unwrap();
        let before = store.counts().transactions;
        let gate = store.shared().gate();
        let mut tasks = Vec::new();
        for i in 0..100 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move { create(&store, &format!("/g/{i}"), i).await }));
        }
        until(|| store_queued_or_held(&store, 100)).await;
        drop(gate);
        let mut written = Vec::new();
        for task in tasks {
            written.push(task.await.unwrap().revision);
        }
        written.sort_unstable();
        assert_eq!(written, (1..=100).collect::<Vec<_>>());
        let transactions = store.counts().transactions - before;
        assert!(
            expected.contains(&transactions),
            "max_batch {max_batch}: {transactions} transactions"
        );
        assert_eq!(store.counts().writes, 100);
    }
}

#[tokio::test]
async fn restart_keeps_objects_revisions_and_history() {
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 5, retain_for: Duration::ZERO, ..config(&dir) };
    let store = Store::open(config.clone()).await.unwrap();
    for i in 0..10 {
        create(&store, &format!("/x/k{i}"), i).await; // 1..=10
    }
    for i in 0..20 {
        update(&store, "/x/k0", 0, 100 + i).await; // 11..=30
    }
    delete(&store, "/x/k1", 0).await; // 31
    store.compact().await.unwrap();
    let before: Vec<Entry> = store.list("/").entries().cloned().collect();
    store.shutdown().await;

    let store = Store::open(config.clone()).await.unwrap();
    assert_eq!(store.revision(), 31);
    assert_eq!(store.oldest_revision(), 26);
    let after: Vec<Entry> = store.list("/").entries().cloned().collect();
    assert_eq!(after.len(), 9);
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (&b.key, b.revision, b.create_revision),
            (&a.key, a.revision, a.create_revision)
        );
        assert_eq!(b.object, a.object);
    }
    assert_eq!(store.get("/x/k0").unwrap().create_revision, 1);

    // History above the compaction point is still watchable, with types and previous objects.
    assert!(matches!(store.watch("/x/", 25), Err(StoreError::Compacted { oldest: 26, .. })));
    let events = collect(&mut store.watch("/x/", 26).unwrap(), 5).await;
    assert_eq!(revisions(&events), [27, 28, 29, 30, 31]);
    assert!(events[..4].iter().all(|e| e.event_type == EventType::Modified));
    assert_eq!(rv(events[0].previous.as_ref().unwrap()), "26");
    assert_eq!(rv(events[3].previous.as_ref().unwrap()), "29");
    assert_eq!(events[4].event_type, EventType::Deleted);
    assert_eq!(rv(&events[4].object), "31");
    assert_eq!(rv(events[4].previous.as_ref().unwrap()), "2");

    // The counter continues after a delete, and new creations are ADDED after a restart too.
    let mut live = store.watch("/x/", 31).unwrap();
    assert_eq!(create(&store, "/x/k1", 7).await.revision, 32);
    store.shutdown().await;
    assert!(live.next().await.is_some());
    assert!(live.next().await.is_none());
    let store = Store::open(config).await.unwrap();
    let added = next(&mut store.watch("/x/k1", 31).unwrap()).await;
    assert_eq!((added.event_type, added.revision), (EventType::Added, 32));
    assert!(added.previous.is_none());
    store.shutdown().await;
}

#[tokio::test]
async fn revisions_never_repeat_when_everything_is_compacted() {
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 0, retain_for: Duration::ZERO, ..config(&dir) };
    let store = Store::open(config.clone()).await.unwrap();
    create(&store, "/z/a", 1).await;
    delete(&store, "/z/a", 1).await;
    assert_eq!(store.compact().await.unwrap(), 2);
    store.shutdown().await;

    let store = Store::open(config).await.unwrap();
    assert_eq!((store.revision(), store.oldest_revision()), (2, 2));
    assert!(store.get("/z/a").is_none());
    assert_eq!(create(&store, "/z/a", 2).await.revision, 3);
}

#[tokio::test]
async fn slow_watchers_do_not_block_writes() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let total = 3 * LIVE_CAPACITY as u64;
    let mut slow = store.watch("/s/", 0).unwrap();
    // Make it live first, so it is subscribed and then falls behind the live channel.
    create(&store, "/s/first", 0).await;
    assert_eq!(next(&mut slow).await.revision, 1);

    let mut fast = store.watch("/s/", 1).unwrap();
    let fast = tokio::spawn(async move { revisions(&collect(&mut fast, total as usize).await) });
    tokio::time::timeout(Duration::from_secs(60), async {
        for i in 0..total {
            create(&store, &format!("/s/{i}"), i).await;
        }
    })
    .await
    .expect("writes blocked by a slow watcher");
    let expected: Vec<u64> = (2..=total + 1).collect();
    assert_eq!(fast.await.unwrap(), expected);
    // The slow one lagged behind the live channel and catches up from the history.
    assert_eq!(revisions(&collect(&mut slow, total as usize).await), expected);

    // With the history compacted past it, the slow watcher ends with Compacted.
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 100, retain_for: Duration::ZERO, ..config(&dir) };
    let store = Store::open(config).await.unwrap();
    create(&store, "/s/first", 0).await;
    let mut slow = store.watch("/s/", 0).unwrap();
    assert_eq!(next(&mut slow).await.revision, 1);
    for i in 0..total {
        create(&store, &format!("/s/{i}"), i).await;
    }
    store.compact().await.unwrap();
    let oldest = store.oldest_revision();
    assert_eq!(oldest, total + 1 - 100);
    match tokio::time::timeout(WAIT, slow.next()).await.unwrap() {
        Some(Err(StoreError::Compacted { requested: 1, oldest: o })) => assert_eq!(o, oldest),
        other => panic!("expected Compacted, got {other:?}"),
    }
    assert!(slow.next().await.is_none());
}

#[expect(clippy::await_holding_lock, reason = "holds the gate of the writer thread on purpose")]
#[tokio::test]
async fn shutdown_drains_queued_writes_and_ends_watches() {
    let dir = TempDir::new().unwrap();
    let config = config(&dir);
    let store = Store::open(config.clone()).await.unwrap();
    let mut watch = store.watch("/", 0).unwrap();

    let gate = store.shared().gate();
    let mut tasks = Vec::new();
    for i in 0..50 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move { create(&store, &format!("/d/{i}"), i).await }));
    }
    until(|| store_queued_or_held(&store, 50)).await;
    let shutdown = {
        let store = store.clone();
        tokio::spawn(async move { store.shutdown().await })
    };
    // Once writes are refused the shutdown has begun; only then let the writer go.
    until(|| !store.accepting()).await;
    let op = WriteOp::Create { key: "/d/refused".into(), object: object("refused", 0) };
    assert!(matches!(store.write(op).await, Err(StoreError::Closed)));
    drop(gate);
    shutdown.await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    // The watch gets everything committed, then ends.
    assert_eq!(revisions(&collect(&mut watch, 50).await), (1..=50).collect::<Vec<_>>());
    assert!(watch.next().await.is_none());
    assert!(matches!(store.watch("/", 0), Err(StoreError::Closed)));
    let op = WriteOp::Create { key: "/d/late".into(), object: object("late", 0) };
    assert!(matches!(store.write(op).await, Err(StoreError::Closed)));
    store.shutdown().await; // idempotent

    let store = Store::open(config).await.unwrap();
    assert_eq!(store.revision(), 50);
    assert_eq!(store.list("/d/").len(), 50);
}

#[tokio::test]
async fn a_second_store_cannot_open_the_same_file() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    create(&store, "/o/a", 1).await;
    let refused = Store::open(config(&dir)).await.err().unwrap();
    assert!(matches!(refused, StoreError::InUse { .. }), "{refused}");
    assert!(refused.to_string().contains("is another `keelson up` running"), "{refused}");
    store.shutdown().await;
    let store = open(&dir).await;
    assert_eq!(store.revision(), 1);
}

#[tokio::test]
async fn the_checkpointer_keeps_the_wal_short_under_a_stream_of_writes() {
    let dir = TempDir::new().unwrap();
    let config = config(&dir);
    let store = Store::open(config.clone()).await.unwrap();
    let mut wal = config.path.clone().into_os_string();
    wal.push("-wal");
    let wal_size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
    // One write per transaction, each at least one page of WAL, for long enough that the
    // checkpointer passes several times.
    let started = std::time::Instant::now();
    let mut writes = 0;
    while started.elapsed() < Duration::from_secs(2) {
        create(&store, &format!("/w/{writes}"), writes).await;
        writes += 1;
    }
    let appended = writes * writer::PAGE_BYTES;
    assert!(wal_size() > 0, "the store is in WAL mode");
    assert!(
        wal_size() < appended / 2,
        "the WAL grew to {} bytes for {writes} writes (restarts every {} pages)",
        wal_size(),
        checkpoint::WAL_RESTART_PAGES
    );
    store.shutdown().await;
    assert_eq!(wal_size(), 0, "closing checkpoints and removes the WAL");
    let store = Store::open(config).await.unwrap();
    assert_eq!(store.list("/w/").len() as u64, writes);
}

#[tokio::test]
async fn watch_as_stream() {
    use futures::StreamExt;
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    create(&store, "/st/a", 1).await;
    create(&store, "/st/b", 2).await;
    let mut stream = store.watch("/st/", 0).unwrap().into_stream();
    let first = stream.next().await.unwrap().unwrap();
    let second = stream.next().await.unwrap().unwrap();
    assert_eq!((first.revision, second.revision), (1, 2));
    store.shutdown().await;
    assert!(stream.next().await.is_none());
}

const KILL_CHILD_ENV: &str = "KEELSON_STORE_KILL9_CHILD";

/// Run by `acknowledged_writes_survive_kill_9` in a child process: writes until killed and
/// prints each acknowledged revision.
#[test]
#[ignore = "child process of acknowledged_writes_survive_kill_9"]
fn kill9_child() {
    let Some(path) = std::env::var_os(KILL_CHILD_ENV) else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(StoreConfig::new(path)).await.unwrap();
        for i in 0.. {
            let written = create(&store, &format!("/kill/{i:08}"), i).await;
            println!("ACK {} {i}", written.revision);
        }
    });
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("kill.sqlite");
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([&format!("{module}::kill9_child"), "--exact", "--ignored", "--nocapture"])
        .env(KILL_CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            let (revision, i) = rest.split_once(' ').unwrap();
            acked.push((revision.parse::<u64>().unwrap(), i.parse::<u64>().unwrap()));
            if acked.len() == 500 {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(acked.len(), 500, "the child stopped early");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(StoreConfig::new(&path)).await.unwrap();
        assert!(store.revision() >= 500);
        for (revision, i) in acked {
            let entry = store.get(&format!("/kill/{i:08}")).expect("acknowledged write lost");
            assert_eq!(entry.revision, revision);
        }
        // The counter continues past whatever was committed.
        let next = create(&store, "/kill/after", 0).await.revision;
        assert_eq!(next, store.list("/kill/").len() as u64);
    });
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Store>();
    send_sync::<Snapshot>();
    send_sync::<Event>();
    send::<Watch>();
}

#[tokio::test]
async fn a_list_at_an_earlier_revision_undoes_what_came_after() {
    let dir = TempDir::new().unwrap();
    let config = StoreConfig { retain_revisions: 4, retain_for: Duration::ZERO, ..config(&dir) };
    let store = Store::open(config).await.unwrap();
    create(&store, "/x/a", 1).await; // 1
    create(&store, "/x/b", 2).await; // 2
    create(&store, "/y/other", 0).await; // 3
    update(&store, "/x/a", 1, 10).await; // 4
    delete(&store, "/x/b", 2).await; // 5
    create(&store, "/x/c", 3).await; // 6

    let at = |revision| {
        let snapshot = store.list_at("/x/", revision).unwrap();
        let entries =
            snapshot.entries().map(|e| (e.key.clone(), e.revision, e.object["data"]["v"].clone()));
        (snapshot.revision(), entries.collect::<Vec<_>>())
    };
    assert_eq!(
        at(3),
        (3, vec![("/x/a".into(), 1, json!(1)), ("/x/b".into(), 2, json!(2))]),
        "the update, the delete and the later create are undone"
    );
    assert_eq!(at(4), (4, vec![("/x/a".into(), 4, json!(10)), ("/x/b".into(), 2, json!(2))]));
    assert_eq!(at(6), at(99), "a revision not reached yet reads as the current one");
    assert_eq!(at(6).1.len(), 2);

    assert_eq!(store.compact().await.unwrap(), 2, "the events of revisions 3 to 6 are kept");
    assert_eq!(at(2).0, 2);
    assert!(matches!(store.list_at("/x/", 1), Err(StoreError::Compacted { .. })));
    store.shutdown().await;
}

fn labelled_object(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}})
}

async fn put(store: &Store, key: &str, labels: Value) -> Written {
    let name = key.rsplit('/').next().unwrap();
    let object = labelled_object(name, labels);
    let op = match store.get(key) {
        Some(_) => WriteOp::Update { key: key.into(), expected_revision: 0, object },
        None => WriteOp::Create { key: key.into(), object },
    };
    store.write(op).await.unwrap()
}

fn labelled(snapshot: &Snapshot, label: &str, value: &str, after: Option<&str>) -> Vec<String> {
    snapshot.labelled(label, value, after).map(|e| e.key.clone()).collect()
}

#[tokio::test]
async fn the_label_index_follows_creates_relabels_and_deletes() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    put(&store, "/pods/a/one", json!({"app": "web", "tier": "front"})).await;
    put(&store, "/pods/a/two", json!({"app": "web"})).await;
    put(&store, "/pods/a/three", json!({"app": "db"})).await;
    put(&store, "/pods/b/four", json!({"app": "web"})).await;
    put(&store, "/pods/a/five", json!({"app": 5})).await;

    let pods_a = store.list("/pods/a/");
    assert_eq!(labelled(&pods_a, "app", "web", None), ["/pods/a/one", "/pods/a/two"]);
    assert_eq!(labelled(&pods_a, "app", "db", None), ["/pods/a/three"]);
    assert_eq!(labelled(&pods_a, "tier", "front", None), ["/pods/a/one"]);
    assert!(labelled(&pods_a, "app", "5", None).is_empty(), "a value that is not a string");
    assert_eq!(labelled(&store.list("/pods/"), "app", "web", None).len(), 3);
    assert_eq!(
        labelled(&pods_a, "app", "web", Some("/pods/a/one")),
        ["/pods/a/two"],
        "after a continue key"
    );
    assert_eq!(labelled(&pods_a, "app", "web", Some("/pods/")), ["/pods/a/one", "/pods/a/two"]);

    put(&store, "/pods/a/one", json!({"app": "db"})).await;
    store.write(WriteOp::Delete { key: "/pods/a/two".into(), expected_revision: 0 }).await.unwrap();
    let now = store.list("/pods/a/");
    assert!(labelled(&now, "app", "web", None).is_empty());
    assert!(labelled(&now, "tier", "front", None).is_empty(), "a removed label");
    assert_eq!(labelled(&now, "app", "db", None), ["/pods/a/one", "/pods/a/three"]);
    assert_eq!(
        labelled(&pods_a, "app", "web", None),
        ["/pods/a/one", "/pods/a/two"],
        "an earlier snapshot keeps its index"
    );

    let before = store.list_at("/pods/a/", pods_a.revision()).unwrap();
    assert_eq!(labelled(&before, "app", "web", None), ["/pods/a/one", "/pods/a/two"]);
    store.shutdown().await;

    let store = open(&dir).await;
    let reopened = store.list("/pods/");
    assert_eq!(labelled(&reopened, "app", "db", None), ["/pods/a/one", "/pods/a/three"]);
    assert_eq!(labelled(&reopened, "app", "web", None), ["/pods/b/four"]);
    store.shutdown().await;
}

#[tokio::test]
async fn owners_deletions_and_uids_are_indexed() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir).await;
    let object = |uid: &str, owner: Option<&str>, deleting: bool| {
        let mut object = json!({"metadata": {"name": uid, "uid": uid}});
        if let Some(owner) = owner {
            object["metadata"]["ownerReferences"] = json!([{"uid": owner}]);
        }
        if deleting {
            object["metadata"]["deletionTimestamp"] = json!("2026-11-25T00:00:00Z");
        }
        object
    };
    let write = |op| store.write(op);
    write(WriteOp::Create { key: "/x/a".into(), object: object("a", None, false) }).await.unwrap();
    write(WriteOp::Create { key: "/x/b".into(), object: object("b", Some("a"), false) })
        .await
        .unwrap();
    let keys = |entries: Vec<&Entry>| entries.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
    let snapshot = store.list("/x/");
    assert_eq!(keys(snapshot.owned().collect()), ["/x/b"]);
    assert!(snapshot.deleting().next().is_none());
    assert_eq!(snapshot.by_uid("a").map(|e| e.key.as_str()), Some("/x/a"));
    assert!(store.list("/y/").by_uid("a").is_none(), "outside the prefix");

    let update =
        |key: &str, object| WriteOp::Update { key: key.into(), expected_revision: 0, object };
    write(update("/x/b", object("b", None, true))).await.unwrap();
    write(WriteOp::Delete { key: "/x/a".into(), expected_revision: 0 }).await.unwrap();
    let now = store.list("/x/");
    assert!(now.owned().next().is_none(), "the owner reference was removed");
    assert_eq!(keys(now.deleting().collect()), ["/x/b"]);
    assert!(now.by_uid("a").is_none());
    assert_eq!(keys(snapshot.owned().collect()), ["/x/b"], "the earlier snapshot is unchanged");
    store.shutdown().await;

    let store = open(&dir).await;
    let reopened = store.list("/");
    assert_eq!(keys(reopened.deleting().collect()), ["/x/b"]);
    assert_eq!(reopened.by_uid("b").map(|e| e.key.as_str()), Some("/x/b"));
    store.shutdown().await;
}
