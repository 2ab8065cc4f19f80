//! Conversion between the stored form of an object and the version a request addresses.
//!
//! Events are stored once, as core/v1 Events, and shown through `events.k8s.io/v1` too (field
//! names differ, as mapped below). HorizontalPodAutoscalers are stored as `autoscaling/v2` and
//! shown through `autoscaling/v1` too ([`hpa`]). Custom resources use the `None` conversion
//! strategy: only `apiVersion` changes between versions.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::catalog::ResourceInfo;

use super::objects::is_core;

mod hpa;

pub(crate) use hpa::default_metrics;

/// core/v1 Event field ↔ events.k8s.io/v1 Event field, where the names differ.
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("count", "deprecatedCount"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("reportingComponent", "reportingController"),
];

fn is_new_event(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.resource == "events"
}

fn is_v1_autoscaler(info: &ResourceInfo) -> bool {
    info.group == "autoscaling"
        && info.version == "v1"
        && info.resource == "horizontalpodautoscalers"
}

fn rename(
    object: Value,
    pairs: impl Iterator<Item = (&'static str, &'static str)>,
    api_version: &str,
) -> Value {
    let Value::Object(mut map) = object else { return object };
    let mut out = Map::new();
    for (from, to) in pairs {
        if let Some(value) = map.remove(from) {
            out.insert(to.to_owned(), value);
        }
    }
    map.extend(out);
    map.insert("apiVersion".into(), Value::String(api_version.to_owned()));
    Value::Object(map)
}

/// The stored object as the addressed resource version shows it; borrowed unless a conversion
/// changes it (an `events.k8s.io` Event, a v1 autoscaler, or a custom resource read through
/// another version).
pub fn from_stored<'a>(info: &ResourceInfo, object: &'a Value) -> Cow<'a, Value> {
    if is_new_event(info) {
        return Cow::Owned(rename(object.clone(), EVENT_FIELDS.into_iter(), "events.k8s.io/v1"));
    }
    if is_v1_autoscaler(info) {
        return Cow::Owned(hpa::to_v1(object));
    }
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(current) if info.is_api_version(current) => Cow::Borrowed(object),
        _ if !object.is_object() => Cow::Borrowed(object),
        _ => {
            let mut converted = object.clone();
            converted["apiVersion"] = Value::String(info.api_version());
            Cow::Owned(converted)
        }
    }
}

/// A request body in the addressed version, in the form it is stored in.
pub fn to_stored(info: &ResourceInfo, object: Value) -> Value {
    if is_new_event(info) {
        let mut event =
            rename(object, EVENT_FIELDS.into_iter().map(|(core, new)| (new, core)), "v1");
        show_unset_event_fields(&mut event);
        event
    } else if is_v1_autoscaler(info) {
        hpa::from_v1(object)
    } else if is_core(info, "events") {
        let mut event = object;
        show_unset_event_fields(&mut event);
        event
    } else {
        object
    }
}

/// Adds the core/v1 Event fields Kubernetes shows even when unset (Go writes them): times as
/// `null`, the reporting fields as `""`, `source` as `{}`. Clients rely on them being there:
/// `kubectl get events --sort-by=.lastTimestamp` lists nothing when the field is missing.
fn show_unset_event_fields(event: &mut Value) {
    let Some(map) = event.as_object_mut() else { return };
    for field in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        map.entry(field).or_insert(Value::Null);
    }
    for field in ["reportingComponent", "reportingInstance"] {
        map.entry(field).or_insert_with(|| Value::String(String::new()));
    }
    map.entry("source").or_insert_with(|| Value::Object(Map::new()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;
    use serde_json::json;

    fn events(group: &str) -> ResourceInfo {
        builtin_resources()
            .into_iter()
            .find(|r| r.resource == "events" && r.group == group)
            .unwrap()
    }

    #[test]
    fn an_event_reads_the_same_through_both_apis() {
        let new = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Run", "name": "r"}, "note": "started", "reason": "Started",
            "reportingController": "keelson", "type": "Normal", "eventTime": "2026-11-21T00:00:00.000000Z"});
        let stored = to_stored(&events("events.k8s.io"), new.clone());
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["involvedObject"]["name"], "r");
        assert_eq!(stored["message"], "started");
        assert_eq!(stored["reportingComponent"], "keelson");
        assert!(
            matches!(from_stored(&events(""), &stored), Cow::Borrowed(_)),
            "no copy when nothing converts"
        );
        assert_eq!(from_stored(&events(""), &stored)["message"], "started");
        assert_eq!(from_stored(&events("events.k8s.io"), &stored)["note"], "started");
    }

    #[test]
    fn a_stored_event_shows_the_fields_core_v1_always_has() {
        let legacy = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m", "count": 2,
            "lastTimestamp": "2026-11-21T00:00:00Z"});
        let stored = to_stored(&events(""), legacy);
        assert_eq!(stored["lastTimestamp"], "2026-11-21T00:00:00Z", "set fields stay");
        assert_eq!((&stored["firstTimestamp"], &stored["eventTime"]), (&Value::Null, &Value::Null));
        assert!(stored.get("firstTimestamp").is_some() && stored.get("eventTime").is_some());
        assert_eq!((&stored["reportingComponent"], &stored["source"]), (&json!(""), &json!({})));

        let new = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Run", "name": "r"}, "eventTime": "2026-11-21T00:00:00.000000Z"});
        let stored = to_stored(&events("events.k8s.io"), new);
        assert!(stored.get("lastTimestamp").is_some_and(Value::is_null), "{stored}");
        let shown = from_stored(&events("events.k8s.io"), &stored);
        assert!(shown.get("deprecatedLastTimestamp").is_some_and(Value::is_null), "{shown}");
    }
}
