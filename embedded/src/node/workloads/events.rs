//! The workload controllers' events, recorded as kube-controller-manager records them: one core/v1
//! Event per object, reason and message, whose `count` and `lastTimestamp` move when it repeats.
//!
//! kube-runtime's `Recorder` is not used here: it keys an event series by reason without the
//! message, so a ReplicaSet's "Created pod: b" would only count up an earlier "Created pod: a",
//! and `kubectl describe` would never show pod b or any scaling step after the first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::plan::PlanEvent;

/// How long a recorded event is remembered for counting repeats (upstream: 10 minutes).
const REMEMBER: Duration = Duration::from_secs(600);

/// Records events, counting repeats of the same one.
pub struct EventLog {
    client: Client,
    recorded: Mutex<HashMap<Key, Recorded>>,
}

/// What makes two events the same one.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    uid: String,
    component: String,
    warning: bool,
    reason: String,
    note: String,
}

/// An event already written.
struct Recorded {
    name: String,
    count: i32,
    last: Instant,
}

impl EventLog {
    /// An event log writing through `client`.
    pub fn new(client: Client) -> Self {
        Self { client, recorded: Mutex::new(HashMap::new()) }
    }

    /// Records `event` on `object` as `component` (e.g. `replicaset-controller`): a new Event, or
    /// a count added to the same event recorded before.
    pub async fn record(
        &self,
        component: &str,
        object: &ObjectReference,
        event: &PlanEvent,
    ) -> Result<(), kube::Error> {
        let key = Key {
            uid: object.uid.clone().unwrap_or_default(),
            component: component.to_owned(),
            warning: event.warning,
            reason: event.reason.clone(),
            note: event.note.clone(),
        };
        let now = Time(Timestamp::now());
        let events: Api<Event> =
            Api::namespaced(self.client.clone(), object.namespace.as_deref().unwrap_or("default"));
        if let Some((name, count)) = self.repeat(&key) {
            let counted = json!({ "count": count, "lastTimestamp": now });
            match events.patch(&name, &PatchParams::default(), &Patch::Merge(counted)).await {
                Err(kube::Error::Api(e)) if e.code == 404 => {} // deleted meanwhile: record anew
                other => return other.map(drop),
            }
        }
        let created = events
            .create(&PostParams::default(), &new_event(component, object, event, now))
            .await?;
        let recorded = Recorded { name: created.name_any(), count: 1, last: Instant::now() };
        self.recorded.lock().expect("event log lock").insert(key, recorded);
        Ok(())
    }

    /// The name and new count of an event recorded before, counted up; forgets old events.
    fn repeat(&self, key: &Key) -> Option<(String, i32)> {
        let mut recorded = self.recorded.lock().expect("event log lock");
        recorded.retain(|_, r| r.last.elapsed() < REMEMBER);
        let seen = recorded.get_mut(key)?;
        seen.count += 1;
        seen.last = Instant::now();
        Some((seen.name.clone(), seen.count))
    }
}

/// A new core/v1 Event, named as upstream names them (`<object>.<nanoseconds in hex>`).
fn new_event(component: &str, object: &ObjectReference, event: &PlanEvent, now: Time) -> Event {
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
        source: Some(EventSource { component: Some(component.to_owned()), host: None }),
        reporting_component: Some(component.to_owned()),
        reporting_instance: Some(String::new()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "replicaset-controller",
            &object,
            &PlanEvent::normal("SuccessfulCreate", "Created pod: web-1-a"),
            now.clone(),
        );
        let name = event.metadata.name.as_deref().unwrap();
        assert!(name.starts_with("web-1.") && name.len() > 10, "{name}");
        assert_eq!(event.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(event.involved_object, object);
        assert_eq!(event.source.unwrap().component.as_deref(), Some("replicaset-controller"));
        assert_eq!(
            (event.count, event.first_timestamp, event.last_timestamp),
            (Some(1), Some(now.clone()), Some(now))
        );
        assert_eq!(
            (event.type_.as_deref(), event.message.as_deref()),
            (Some("Normal"), Some("Created pod: web-1-a"))
        );
    }
}
