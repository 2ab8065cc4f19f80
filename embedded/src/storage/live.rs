//! The live channels watches follow: one per collection, so that a write wakes only the watches
//! it may concern, and one for the watches of wider prefixes.
//!
//! A collection is the keys sharing their first two segments, which for the API server is one
//! resource (`/core/pods/`, `/workflows.keelson.dev/agents/`). With a single channel for all,
//! every watch of the local node's controllers (pods, nodes, jobs, …) was woken by every write of
//! any kind, only to find it concerned another collection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::broadcast;

use super::{Event, LIVE_CAPACITY};

/// The live channels of a running store.
pub(crate) struct Live {
    /// Every event, for the watches of prefixes wider than a collection.
    all: broadcast::Sender<Arc<Event>>,
    /// The events of each collection some watch follows.
    collections: Mutex<HashMap<String, broadcast::Sender<Arc<Event>>>>,
}

impl Live {
    pub(crate) fn new() -> Self {
        Self { all: broadcast::channel(LIVE_CAPACITY).0, collections: Mutex::default() }
    }

    /// A receiver of every event of a key under `prefix`, and maybe of others.
    pub(crate) fn subscribe(&self, prefix: &str) -> broadcast::Receiver<Arc<Event>> {
        let Some(collection) = collection(prefix) else { return self.all.subscribe() };
        let mut collections = self.collections.lock().unwrap_or_else(PoisonError::into_inner);
        collections.retain(|_, sender| sender.receiver_count() > 0);
        match collections.get(collection) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = broadcast::channel(LIVE_CAPACITY);
                collections.insert(collection.to_owned(), sender);
                receiver
            }
        }
    }

    /// Sends each event to the watches it may concern. Having no receiver is not an error.
    pub(crate) fn send<'a>(&self, events: impl IntoIterator<Item = &'a Arc<Event>>) {
        let collections = self.collections.lock().unwrap_or_else(PoisonError::into_inner);
        // Counting receivers takes the channel's lock: once for the batch, not once per event.
        let to_all = self.all.receiver_count() > 0;
        for event in events {
            if to_all {
                let _ = self.all.send(event.clone());
            }
            if let Some(sender) = collection(&event.key).and_then(|c| collections.get(c)) {
                let _ = sender.send(event.clone());
            }
        }
    }
}

/// The collection of a key or prefix: its first two segments with their slashes
/// (`/core/pods/` of `/core/pods/default/web`), if it has both.
fn collection(key: &str) -> Option<&str> {
    let rest = key.strip_prefix('/')?;
    let first = rest.find('/')?;
    let second = rest[first + 1..].find('/')?;
    Some(&key[..first + second + 3])
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Live, collection};
    use crate::storage::{Event, EventType};

    fn event(key: &str, revision: u64) -> Arc<Event> {
        Arc::new(Event {
            event_type: EventType::Added,
            key: key.into(),
            revision,
            object: Arc::new(serde_json::json!({})),
            previous: None,
        })
    }

    #[test]
    fn an_event_reaches_the_watches_of_its_collection_and_of_wider_prefixes_only() {
        let live = Live::new();
        let mut pods = live.subscribe("/core/pods/default/");
        let mut web = live.subscribe("/core/pods/default/web");
        let mut everything = live.subscribe("/");
        let secrets = live.subscribe("/core/secrets/");
        let events = [event("/core/pods/default/web", 1), event("/core/configmaps/default/x", 2)];
        live.send(&events);
        for receiver in [&mut pods, &mut web] {
            assert_eq!(receiver.try_recv().unwrap().revision, 1);
            assert!(receiver.is_empty(), "the ConfigMap is not on the pods' channel");
        }
        assert_eq!(everything.try_recv().unwrap().revision, 1);
        assert_eq!(everything.try_recv().unwrap().revision, 2);
        assert!(secrets.is_empty());

        // A collection no watch follows any more loses its channel when the next watch starts.
        drop(secrets);
        let _nodes = live.subscribe("/core/nodes/");
        let collections = live.collections.lock().unwrap();
        let mut followed: Vec<&str> = collections.keys().map(String::as_str).collect();
        followed.sort_unstable();
        assert_eq!(followed, ["/core/nodes/", "/core/pods/"]);
    }

    #[test]
    fn a_collection_is_the_first_two_segments() {
        assert_eq!(collection("/core/pods/default/web"), Some("/core/pods/"));
        assert_eq!(collection("/core/pods/"), Some("/core/pods/"));
        assert_eq!(collection("/core/nodes/gpu-1"), Some("/core/nodes/"));
        assert_eq!(collection("/core/pods"), None);
        assert_eq!(collection("/w/"), None);
        assert_eq!(collection("/"), None);
        assert_eq!(collection(""), None);
    }
}
