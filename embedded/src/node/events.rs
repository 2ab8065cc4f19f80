//! Events as kube-controller-manager and the kubelet record them: one core/v1 Event per object,
//! source, reason and message, whose `count` and `lastTimestamp` move when it repeats, and
//! upstream's spam filter, which lets a source record 25 events about one object at once and
//! then one every 5 minutes.
//!
//! kube-runtime's `Recorder` is not used here: it keys an event series by reason without the
//! message, so a ReplicaSet's "Created pod: b" would only count up an earlier "Created pod: a",
//! and `kubectl describe` would never show pod b or any scaling step after the first.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc::{self, error::TrySendError};

/// How many events may wait for one writer; more are dropped (upstream's queue holds 1,000).
const QUEUE: usize = 1000;

/// How many writers write a log's events, each those about its share of the objects: one
/// writer at a time falls behind a busy API server.
const WRITERS: usize = 8;

/// How long a recorded event is remembered for counting repeats (upstream: 10 minutes).
const REMEMBER: Duration = Duration::from_secs(600);

/// How many events a source may record about one object at once (upstream's burst).
const BURST: u32 = 25;

/// How often a source that used its burst may record another event about the object.
const REFILL: Duration = Duration::from_secs(300);

/// An event to record: its type, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventNote {
    /// `Warning` rather than `Normal`.
    pub warning: bool,
    /// Short CamelCase reason, e.g. `BackoffLimitExceeded`.
    pub reason: String,
    /// Human-readable message.
    pub note: String,
}

impl EventNote {
    /// A `Normal` event.
    pub fn normal(reason: &str, note: impl Into<String>) -> Self {
        Self { warning: false, reason: reason.to_owned(), note: note.into() }
    }

    /// A `Warning` event.
    pub fn warning(reason: &str, note: impl Into<String>) -> Self {
        Self { warning: true, reason: reason.to_owned(), note: note.into() }
    }
}

/// Records events without waiting for them to be written: queues in front of writer tasks,
/// which count repeats of the same event and drop floods, as client-go's event broadcaster
/// does. Recording never slows its caller down; when the API server falls too far behind,
/// events are dropped rather than queued without bound.
pub struct EventLog {
    /// One queue per writer.
    queues: Vec<mpsc::Sender<Queued>>,
    /// Picks the writer of an object's events.
    writer_of: RandomState,
}

/// An event waiting to be written, with the time it was recorded.
struct Queued {
    key: Key,
    event: Event,
    at: Instant,
}

impl EventLog {
    /// An event log writing through `client`, from tasks of its own that end once the log is
    /// dropped and what it queued is written.
    pub fn start(client: Client) -> Self {
        let queues = (0..WRITERS)
            .map(|_| {
                let (queue, pending) = mpsc::channel(QUEUE);
                tokio::spawn(write_all(client.clone(), pending));
                queue
            })
            .collect();
        Self { queues, writer_of: RandomState::new() }
    }

    /// Records `event` on `object` as `source` (a component such as `replicaset-controller`,
    /// and the node for the kubelet): a new Event, or a count added to the same event recorded
    /// before; nothing when the source recorded too many events about the object lately.
    /// Events about one object are written in the order they are recorded.
    pub fn record(&self, source: &EventSource, object: &ObjectReference, event: &EventNote) {
        let key = Key {
            object: [&object.kind, &object.namespace, &object.name, &object.uid]
                .map(|part| part.clone().unwrap_or_default()),
            field: object.field_path.clone().unwrap_or_default(),
            component: source.component.clone().unwrap_or_default(),
            host: source.host.clone().unwrap_or_default(),
            warning: event.warning,
            reason: event.reason.clone(),
            note: event.note.clone(),
        };
        let event = new_event(source, object, event, Time(Timestamp::now()));
        // Repeats and floods are counted per object, so one writer sees all of an object's.
        let writer = self.writer_of.hash_one(&key.object) as usize % WRITERS;
        match self.queues[writer].try_send(Queued { key, event, at: Instant::now() }) {
            Ok(()) | Err(TrySendError::Closed(_)) => {}
            // The message is left out: it may quote what a container printed.
            Err(TrySendError::Full(dropped)) => tracing::warn!(
                reason = %dropped.key.reason,
                kind = %dropped.key.object[0],
                name = %dropped.key.object[2],
                "too many events waiting to be written; dropped one"
            ),
        }
    }
}

/// Writes one writer's queued events one after another, so that a repeat counts up the event
/// it repeats.
async fn write_all(client: Client, mut pending: mpsc::Receiver<Queued>) {
    let mut memory = Memory::default();
    while let Some(queued) = pending.recv().await {
        if let Err(error) = write(&client, &mut memory, queued).await {
            tracing::debug!(%error, "recording an event failed");
        }
    }
}

/// Writes one event: a new Event, a new count on the one it repeats, or nothing.
async fn write(client: &Client, memory: &mut Memory, queued: Queued) -> Result<(), kube::Error> {
    let Queued { key, event, at } = queued;
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    match memory.decide(&key, at) {
        Write::Nothing => return Ok(()),
        Write::Count { name, count } => {
            let counted = json!({ "count": count, "lastTimestamp": event.last_timestamp });
            match events.patch(&name, &PatchParams::default(), &Patch::Merge(counted)).await {
                Err(kube::Error::Api(e)) if e.code == 404 => {} // deleted meanwhile: record anew
                other => return other.map(drop),
            }
        }
        Write::New => {}
    }
    let created = events.create(&PostParams::default(), &event).await?;
    memory.created(key, created.name_any(), at);
    Ok(())
}

/// What makes two events the same one.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    /// The object's kind, namespace, name and uid.
    object: [String; 4],
    /// The part of the object (a container).
    field: String,
    component: String,
    host: String,
    warning: bool,
    reason: String,
    note: String,
}

impl Key {
    /// What the spam filter counts by: the source and the object.
    fn spam(&self) -> (String, String, [String; 4]) {
        (self.component.clone(), self.host.clone(), self.object.clone())
    }
}

/// What the log remembers of earlier events.
#[derive(Default)]
struct Memory {
    recorded: HashMap<Key, Recorded>,
    buckets: HashMap<(String, String, [String; 4]), Bucket>,
    pruned: Option<Instant>,
}

/// An event already written.
struct Recorded {
    name: String,
    count: i32,
    last: Instant,
}

/// What recording an event writes.
#[derive(Debug, PartialEq, Eq)]
enum Write {
    /// Nothing: the source recorded too many events about the object.
    Nothing,
    /// A new count on the event of that name.
    Count { name: String, count: i32 },
    /// A new event.
    New,
}

impl Memory {
    /// What recording the event of `key` at `now` writes; a repeat is counted here.
    fn decide(&mut self, key: &Key, now: Instant) -> Write {
        self.prune(now);
        let bucket = self.buckets.entry(key.spam()).or_insert(Bucket { tokens: BURST, at: now });
        if !bucket.take(now) {
            return Write::Nothing;
        }
        let Some(seen) = self.recorded.get_mut(key) else { return Write::New };
        seen.count += 1;
        seen.last = now;
        Write::Count { name: seen.name.clone(), count: seen.count }
    }

    /// Remembers a new event, written under `name` at `now`.
    fn created(&mut self, key: Key, name: String, now: Instant) {
        self.recorded.insert(key, Recorded { name, count: 1, last: now });
    }

    /// Forgets, at most once a minute, events not seen for 10 minutes and full buckets.
    fn prune(&mut self, now: Instant) {
        if self.pruned.is_some_and(|at| now.duration_since(at) < Duration::from_secs(60)) {
            return;
        }
        self.pruned = Some(now);
        self.recorded.retain(|_, r| now.duration_since(r.last) < REMEMBER);
        self.buckets.retain(|_, b| now.duration_since(b.at) < REFILL * BURST);
    }
}

/// A token bucket of the spam filter: [`BURST`] tokens, one more every [`REFILL`].
struct Bucket {
    tokens: u32,
    /// When the tokens were last counted.
    at: Instant,
}

impl Bucket {
    /// Takes a token at `now`, if there is one.
    fn take(&mut self, now: Instant) -> bool {
        let refills = now.duration_since(self.at).as_secs() / REFILL.as_secs();
        if refills > 0 {
            let refills = u32::try_from(refills).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(refills).min(BURST);
            self.at += REFILL * refills;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

/// A new core/v1 Event, named as upstream names them (`<object>.<nanoseconds in hex>`).
fn new_event(
    source: &EventSource,
    object: &ObjectReference,
    event: &EventNote,
    now: Time,
) -> Event {
    let nanos = now.0.as_nanosecond();
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{}.{nanos:x}", object.name.as_deref().unwrap_or("object"))),
            namespace: object.namespace.clone(),
            ..ObjectMeta::default()
        },
        involved_object: object.clone(),
        type_: Some(if event.warning { "Warning" } else { "Normal" }.to_owned()),
        reason: Some(event.reason.clone()),
        message: Some(event.note.clone()),
        source: Some(source.clone()),
        reporting_component: source.component.clone(),
        reporting_instance: Some(source.host.clone().unwrap_or_default()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(component: &str) -> EventSource {
        EventSource { component: Some(component.into()), host: None }
    }

    fn key(object: &str, note: &str) -> Key {
        Key {
            object: ["Pod".into(), "team".into(), object.into(), format!("{object}-uid")],
            field: String::new(),
            component: "kubelet".into(),
            host: "node-a".into(),
            warning: false,
            reason: "Started".into(),
            note: note.into(),
        }
    }

    #[test]
    fn an_event_names_its_object_source_and_counts_once() {
        let object = ObjectReference {
            kind: Some("ReplicaSet".into()),
            name: Some("web-1".into()),
            namespace: Some("team".into()),
            uid: Some("u".into()),
            ..ObjectReference::default()
        };
        let now = Time("2026-11-24T12:00:00Z".parse().unwrap());
        let event = new_event(
            &source("replicaset-controller"),
            &object,
            &EventNote::normal("SuccessfulCreate", "Created pod: web-1-a"),
            now.clone(),
        );
        let name = event.metadata.name.as_deref().unwrap();
        assert!(name.starts_with("web-1.") && name.len() > 10, "{name}");
        assert_eq!(event.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(event.involved_object, object);
        assert_eq!(event.source.unwrap().component.as_deref(), Some("replicaset-controller"));
        assert_eq!(event.reporting_component.as_deref(), Some("replicaset-controller"));
        assert_eq!(
            (event.count, event.first_timestamp, event.last_timestamp),
            (Some(1), Some(now.clone()), Some(now))
        );
        assert_eq!(
            (event.type_.as_deref(), event.message.as_deref()),
            (Some("Normal"), Some("Created pod: web-1-a"))
        );
    }

    #[test]
    fn a_repeat_counts_up_the_event_it_repeats_and_a_new_message_is_a_new_event() {
        let mut memory = Memory::default();
        let now = Instant::now();
        assert_eq!(memory.decide(&key("a", "one"), now), Write::New);
        memory.created(key("a", "one"), "a.1".into(), now);
        assert_eq!(
            memory.decide(&key("a", "one"), now),
            Write::Count { name: "a.1".into(), count: 2 }
        );
        assert_eq!(
            memory.decide(&key("a", "one"), now),
            Write::Count { name: "a.1".into(), count: 3 }
        );
        assert_eq!(memory.decide(&key("a", "two"), now), Write::New);
        assert_eq!(memory.decide(&key("b", "one"), now), Write::New, "another object");
        // Forgotten after 10 minutes: recorded anew.
        assert_eq!(memory.decide(&key("a", "one"), now + REMEMBER), Write::New);
    }

    /// A client of a new API server, which lives as long as the returned directory.
    async fn api_server() -> (Client, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::server::ServerConfig::new(dir.path());
        config.bind = "127.0.0.1:0".parse().unwrap();
        let server = crate::server::start(config).await.unwrap();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
        (Client::try_from(config).unwrap(), dir)
    }

    fn config_map(name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("ConfigMap".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    /// Lists the default namespace's events until one says `last`, for at most 10 s.
    async fn events_until(client: &Client, last: &str) -> Vec<Event> {
        let events: Api<Event> = Api::namespaced(client.clone(), "default");
        let mut listed = Vec::new();
        for _ in 0..200 {
            listed = events.list(&Default::default()).await.unwrap().items;
            if listed.iter().any(|e| e.message.as_deref() == Some(last)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        listed
    }

    #[tokio::test]
    async fn recorded_events_are_written_in_order_with_repeats_counted_and_floods_dropped() {
        let (client, _dir) = api_server().await;
        let log = EventLog::start(client.clone());
        let object = config_map("settings");
        let kubelet = source("kubelet");
        let repeated = EventNote::warning("Unhealthy", "Readiness probe failed");
        for _ in 0..3 {
            log.record(&kubelet, &object, &repeated);
        }
        for n in 0..30 {
            log.record(&kubelet, &object, &EventNote::normal("Step", format!("step {n}")));
        }

        // The repeat took 3 of the burst's 25, so steps 0 to 21 are written and the rest
        // dropped; in order, so the repeat's count is final once step 21 is there.
        let listed = events_until(&client, "step 21").await;
        let messages = |e: &Event| (e.message.clone().unwrap_or_default(), e.count);
        let mut written: Vec<_> = listed.iter().map(messages).collect();
        written.sort();
        let mut expected: Vec<_> = (0..22).map(|n| (format!("step {n}"), Some(1))).collect();
        expected.push(("Readiness probe failed".into(), Some(3)));
        expected.sort();
        assert_eq!(written, expected);
    }

    #[tokio::test]
    async fn recording_never_waits_and_drops_what_overflows_the_queue() {
        let (client, _dir) = api_server().await;
        let log = EventLog::start(client.clone());
        // Recording does not yield, so the writers (on this test's one thread) take nothing
        // from their queues meanwhile. One object's events go to one writer, whose queue holds
        // the first 1,000 and drops the rest; each from a source of its own, so that none is
        // a flood.
        for n in 0..QUEUE + 100 {
            let note = EventNote::normal("Step", format!("step {n}"));
            log.record(&source(&format!("controller-{n}")), &config_map("settings"), &note);
        }
        let listed = events_until(&client, &format!("step {}", QUEUE - 1)).await;
        assert_eq!(listed.len(), QUEUE);
        assert!(listed.iter().all(|e| e.message.as_deref() != Some(&format!("step {QUEUE}"))));
    }

    #[test]
    fn a_source_records_25_events_about_an_object_then_one_every_five_minutes() {
        let mut memory = Memory::default();
        let now = Instant::now();
        for n in 0..BURST {
            assert_ne!(memory.decide(&key("a", &n.to_string()), now), Write::Nothing, "event {n}");
        }
        assert_eq!(memory.decide(&key("a", "flood"), now), Write::Nothing);
        assert_eq!(
            memory.decide(&key("a", "flood"), now + REFILL - Duration::from_secs(1)),
            Write::Nothing
        );
        assert_eq!(memory.decide(&key("b", "other object"), now), Write::New);
        assert_eq!(memory.decide(&key("a", "flood"), now + REFILL), Write::New);
        assert_eq!(memory.decide(&key("a", "flood again"), now + REFILL), Write::Nothing);
        // A quiet object gets its whole burst back, no more.
        let later = now + REFILL * (BURST + 10);
        for n in 0..BURST {
            assert_ne!(memory.decide(&key("a", &format!("later {n}")), later), Write::Nothing);
        }
        assert_eq!(memory.decide(&key("a", "one too many"), later), Write::Nothing);
    }
}
