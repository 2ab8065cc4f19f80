//! List semantics shared by strategic merge patch and server-side apply.
//!
//! A path names a field of the object with list items abstracted as `*`, e.g.
//! `["spec", "template", "spec", "containers", "*", "env"]`.

use std::sync::Arc;

use serde_json::Value;

use crate::validation::{ListType, SchemaValidator};

/// How the items of a list field are merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// The list is replaced as a whole and owned as one field.
    Atomic,
    /// A set of values (usually primitives): merged by union, items owned one by one.
    Set,
    /// An associative list keyed by these fields (the first is the strategic merge key).
    Map(Vec<String>),
}

/// Answers how the list at a path merges.
pub trait ListSemantics {
    /// The kind of the list at `path` (list items abstracted as `*`).
    fn list_kind(&self, path: &[&str]) -> ListKind;

    /// The default of key field `key` for items of the map list at `path`, used when an item
    /// omits it (upstream fills list-map keys from schema defaults, e.g. `protocol: TCP`).
    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        let _ = (path, key);
        None
    }
}

fn map(keys: &[&str]) -> ListKind {
    ListKind::Map(keys.iter().map(|k| (*k).to_owned()).collect())
}

/// Lists of `ObjectMeta`, wherever an object's (or a template's) metadata sits.
fn object_meta_kind(path: &[&str]) -> Option<ListKind> {
    match path {
        [.., "metadata", "finalizers"] => Some(ListKind::Set),
        [.., "metadata", "ownerReferences"] => Some(map(&["uid"])),
        [.., "metadata", "managedFields"] => Some(ListKind::Atomic),
        _ => None,
    }
}

/// `protocol` defaults to `TCP` in container and service ports.
fn ports_default(path: &[&str], key: &str) -> Option<Value> {
    match (path, key) {
        ([.., "ports"], "protocol") => Some(Value::String("TCP".to_owned())),
        _ => None,
    }
}

/// List semantics read from a CRD version's schema (`x-kubernetes-list-type` and
/// `x-kubernetes-list-map-keys`), as its validator has compiled it; lists without annotation
/// are atomic, as upstream. `metadata` always follows `ObjectMeta` (finalizers a set,
/// ownerReferences keyed by uid).
#[derive(Clone, Debug)]
pub struct SchemaLists(Arc<SchemaValidator>);

impl SchemaLists {
    /// The list semantics of the version `validator` validates.
    pub fn new(validator: Arc<SchemaValidator>) -> Self {
        Self(validator)
    }
}

impl ListSemantics for SchemaLists {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        if path.first() == Some(&"metadata") {
            return object_meta_kind(path).unwrap_or(ListKind::Atomic);
        }
        match self.0.list_type(path) {
            Some(ListType::Set) => ListKind::Set,
            Some(ListType::Map(keys)) if !keys.is_empty() => ListKind::Map(keys.clone()),
            _ => ListKind::Atomic,
        }
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        self.0.item_default(path, key).cloned()
    }
}

/// Static list semantics of the built-in kinds Keelson serves (upstream `patchMergeKey` /
/// `listType` tags). Lists not in the table are atomic.
#[derive(Clone, Debug)]
pub struct BuiltinLists {
    group: String,
    kind: String,
}

impl BuiltinLists {
    /// The table for a built-in kind (`group` is `""` for the core group).
    pub fn for_kind(group: &str, kind: &str) -> Self {
        Self { group: group.to_owned(), kind: kind.to_owned() }
    }

    /// Where the kind keeps its `PodSpec`.
    fn pod_spec_prefix(&self) -> Option<&'static [&'static str]> {
        match (self.group.as_str(), self.kind.as_str()) {
            ("", "Pod") => Some(&["spec"]),
            ("", "PodTemplate") => Some(&["template", "spec"]),
            ("", "ReplicationController")
            | ("apps", "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet")
            | ("batch", "Job") => Some(&["spec", "template", "spec"]),
            ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
            _ => None,
        }
    }

    fn kind_specific(&self, path: &[&str]) -> Option<ListKind> {
        match (self.group.as_str(), self.kind.as_str(), path) {
            ("", "Service", ["spec", "ports"]) => Some(map(&["port", "protocol"])),
            ("", "Node", ["status", "addresses"]) => Some(map(&["type"])),
            ("", "Node", ["spec", "podCIDRs"]) => Some(ListKind::Set),
            ("", "ServiceAccount", ["secrets"]) => Some(map(&["name"])),
            (_, _, ["status", "conditions"]) => Some(map(&["type"])),
            _ => None,
        }
    }
}

/// Lists of a `PodSpec`, relative to it.
fn pod_spec_kind(rel: &[&str]) -> Option<ListKind> {
    match rel {
        ["containers" | "initContainers" | "ephemeralContainers"] => Some(map(&["name"])),
        ["containers" | "initContainers" | "ephemeralContainers", "*", field] => match *field {
            "env" => Some(map(&["name"])),
            "ports" => Some(map(&["containerPort", "protocol"])),
            "volumeMounts" => Some(map(&["mountPath"])),
            "volumeDevices" => Some(map(&["devicePath"])),
            _ => None,
        },
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
            Some(map(&["name"]))
        }
        ["hostAliases"] => Some(map(&["ip"])),
        ["topologySpreadConstraints"] => Some(map(&["topologyKey", "whenUnsatisfiable"])),
        _ => None,
    }
}

impl ListSemantics for BuiltinLists {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        if let Some(kind) = object_meta_kind(path) {
            return kind;
        }
        if let Some(prefix) = self.pod_spec_prefix()
            && let Some(rel) = path.strip_prefix(prefix)
            && let Some(kind) = pod_spec_kind(rel)
        {
            return kind;
        }
        self.kind_specific(path).unwrap_or(ListKind::Atomic)
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        ports_default(path, key)
    }
}
