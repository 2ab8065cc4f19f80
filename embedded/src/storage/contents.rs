//! The store's contents at one revision: every live key, and indexes over them.
//!
//! All are persistent ordered collections, so a snapshot is an O(1) clone and a write copies
//! only the paths it changes. The label index holds one `(label, value, key)` triple per label
//! of each object, which turns a list by `label=value` into a range scan over the objects that
//! carry it instead of a scan of every object under the prefix (controllers list their children
//! by label selector on every reconcile). The garbage collector's indexes (objects with owners,
//! objects being deleted, keys by uid) let its passes read the objects that can concern it
//! instead of every object. No crate offers persistent secondary indexes, so these are kept
//! beside the map by hand.
//!
//! A write copies the nodes on its path, and with them every key and entry they hold. Keys,
//! uids, labels and entries are therefore shared (`Arc`), so that a copy counts references
//! instead of allocating each string again: with plain strings, copying the uid index's nodes
//! took about 7 % of the API server's CPU under a stream of creates. The server's uids are
//! ordered by creation (`new_uid`), so a new one lands in the last node, not a random one.

use std::ops::Bound;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use serde_json::Value;

use super::Entry;

/// One label of one object, ordered so that the objects carrying a `label=value` pair are
/// contiguous and sorted by key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Labelled {
    label: Arc<str>,
    value: Arc<str>,
    key: Arc<str>,
}

/// Every live key with its entry, and the indexes over them.
#[derive(Clone, Default)]
pub(crate) struct Contents {
    entries: OrdMap<Arc<str>, Arc<Entry>>,
    labels: OrdSet<Labelled>,
    /// Keys of the objects with owner references.
    owned: OrdSet<Arc<str>>,
    /// Keys of the objects being deleted (with a `deletionTimestamp`).
    deleting: OrdSet<Arc<str>>,
    /// Keys by `metadata.uid`.
    uids: OrdMap<Arc<str>, Arc<str>>,
}

/// What the indexes record of one object.
#[derive(Default, PartialEq)]
struct Facts<'a> {
    labels: Vec<(&'a str, &'a str)>,
    owned: bool,
    deleting: bool,
    uid: Option<&'a str>,
}

impl<'a> Facts<'a> {
    fn of(object: &'a Value) -> Self {
        let metadata = object.get("metadata");
        let field = |name: &str| metadata.and_then(|m| m.get(name));
        let owners = field("ownerReferences").and_then(Value::as_array);
        Facts {
            labels: labels(field("labels")),
            owned: owners.is_some_and(|owners| !owners.is_empty()),
            deleting: field("deletionTimestamp").is_some_and(|t| !t.is_null()),
            uid: field("uid").and_then(Value::as_str),
        }
    }
}

impl Contents {
    /// The entry for `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key).map(Arc::as_ref)
    }

    /// Whether `key` is live.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Number of live keys.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Stores `entry` under its key, replacing what was there, and re-indexes it.
    pub(crate) fn insert(&mut self, entry: Entry) {
        let key: Arc<str> = entry.key.as_str().into();
        let entry = Arc::new(entry);
        let old = self.entries.insert(key.clone(), entry.clone());
        let old = old.as_ref().map(|old| Facts::of(&old.object)).unwrap_or_default();
        self.reindex(&key, &old, &Facts::of(&entry.object));
    }

    /// Removes `key` and what the indexes hold of it.
    pub(crate) fn remove(&mut self, key: &str) {
        let Some((key, old)) = self.entries.remove_with_key(key) else { return };
        self.reindex(&key, &Facts::of(&old.object), &Facts::default());
    }

    /// The objects with owner references, in key order.
    pub(crate) fn owned(&self) -> impl Iterator<Item = &Entry> {
        self.owned.iter().filter_map(|key| self.get(key))
    }

    /// The objects being deleted, in key order.
    pub(crate) fn deleting(&self) -> impl Iterator<Item = &Entry> {
        self.deleting.iter().filter_map(|key| self.get(key))
    }

    /// The object with `uid`.
    pub(crate) fn by_uid(&self, uid: &str) -> Option<&Entry> {
        self.uids.get(uid).and_then(|key| self.get(key))
    }

    /// The entries with keys from `start` on, in key order.
    pub(crate) fn from<'a>(
        &'a self,
        start: Bound<&str>,
    ) -> impl Iterator<Item = &'a Entry> + use<'a> {
        self.entries.range::<_, str>((start, Bound::Unbounded)).map(|(_, entry)| entry.as_ref())
    }

    /// The entries labelled `label=value` with keys under `prefix` and after `after` (if given),
    /// in key order.
    pub(crate) fn labelled<'a>(
        &'a self,
        label: &'a str,
        value: &'a str,
        prefix: &'a str,
        after: Option<&str>,
    ) -> impl Iterator<Item = &'a Entry> + use<'a> {
        let start = match after.filter(|after| *after >= prefix) {
            Some(after) => Bound::Excluded(triple(label, value, after.into())),
            None => Bound::Included(triple(label, value, prefix.into())),
        };
        self.labels
            .range((start, Bound::Unbounded))
            .take_while(move |l| {
                *l.label == *label && *l.value == *value && l.key.starts_with(prefix)
            })
            .filter_map(|l| self.get(&l.key))
    }

    fn reindex(&mut self, key: &Arc<str>, old: &Facts<'_>, new: &Facts<'_>) {
        if old == new {
            return;
        }
        if old.labels != new.labels {
            for (label, value) in &old.labels {
                self.labels.remove(&triple(label, value, key.clone()));
            }
            for (label, value) in &new.labels {
                self.labels.insert(triple(label, value, key.clone()));
            }
        }
        for (set, was, is) in [
            (&mut self.owned, old.owned, new.owned),
            (&mut self.deleting, old.deleting, new.deleting),
        ] {
            match (was, is) {
                (false, true) => {
                    set.insert(key.clone());
                }
                (true, false) => {
                    set.remove(key);
                }
                _ => {}
            }
        }
        if old.uid != new.uid {
            if let Some(uid) = old.uid.filter(|uid| self.uids.get(*uid).is_some_and(|k| k == key)) {
                self.uids.remove(uid);
            }
            if let Some(uid) = new.uid {
                self.uids.insert(uid.into(), key.clone());
            }
        }
    }
}

impl FromIterator<Entry> for Contents {
    fn from_iter<I: IntoIterator<Item = Entry>>(entries: I) -> Self {
        let mut contents = Contents::default();
        for entry in entries {
            contents.insert(entry);
        }
        contents
    }
}

fn triple(label: &str, value: &str, key: Arc<str>) -> Labelled {
    Labelled { label: label.into(), value: value.into(), key }
}

/// The labels with string values of an object's `metadata.labels`, in label order.
fn labels(labels: Option<&Value>) -> Vec<(&str, &str)> {
    let mut labels: Vec<_> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(label, value)| Some((label.as_str(), value.as_str()?)))
        .collect();
    labels.sort_unstable();
    labels
}
