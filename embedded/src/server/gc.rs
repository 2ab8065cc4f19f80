//! The garbage collector: owner references for all three propagation policies, and namespaces
//! and CRDs that delete what they hold.
//!
//! A pass reads one snapshot of the objects that concern it (those with owners, those being
//! deleted and their owners, found through the store's indexes), [`plan`]s what to do (a pure
//! function) and carries the actions out; anything that changed meanwhile is simply redone by
//! the next pass.
//! Passes run after changes that can give the collector work, and again while the last pass
//! found work (its actions may have made more, as removing owners lets an `orphan` finalizer go,
//! or failed), sooner at first and then less often. A pass that finds nothing leaves nothing to
//! do until the next such change.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};

use crate::catalog::ResourceInfo;
use crate::storage::{Entry, Event, EventType, Snapshot, Store, StoreError, WriteOp};

use super::admission::CRD_CLEANUP_FINALIZER;
use super::namespace_conditions::{Condition, conditions, render, shown};
use super::objects::{finalizers, meta_str, now_rfc3339, ready_to_remove};
use super::paths::resource_prefix;
use super::registry::{CRD_PREFIX, Registry, instances_prefix};
use super::write::{Propagation, delete_entry};

/// The longest wait before another pass while passes keep finding work (the wait doubles from
/// [`MIN_INTERVAL`] up to this).
const RECHECK_MAX: Duration = Duration::from_secs(5);
/// The shortest time between two passes.
const MIN_INTERVAL: Duration = Duration::from_millis(50);
/// How long a change is given for related writes to land before a pass.
const SETTLE: Duration = Duration::from_millis(5);

/// Something the collector does to one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Delete the object with this propagation.
    Delete { key: String, propagation: Propagation },
    /// Remove the owner reference with this uid.
    RemoveOwner { key: String, uid: String },
    /// Remove a finalizer the collector is responsible for.
    RemoveFinalizer { key: String, finalizer: &'static str },
    /// The namespace is empty: let it go.
    FinalizeNamespace { key: String },
    /// Show what still holds the namespace in its conditions.
    NamespaceConditions { key: String, conditions: Vec<Condition> },
}

impl Action {
    /// The storage key of the object the action changes.
    fn key(&self) -> &str {
        match self {
            Action::Delete { key, .. }
            | Action::RemoveOwner { key, .. }
            | Action::RemoveFinalizer { key, .. }
            | Action::FinalizeNamespace { key }
            | Action::NamespaceConditions { key, .. } => key,
        }
    }
}

/// One stored object as the planner sees it.
pub(crate) struct Item<'a> {
    pub(crate) key: &'a str,
    pub(crate) object: &'a Value,
}

fn deleting(object: &Value) -> bool {
    meta_str(object, "deletionTimestamp").is_some()
}

fn owner_refs(object: &Value) -> impl Iterator<Item = &Value> {
    // Not `Value::pointer`, which allocates for every path segment: this runs on many objects.
    let refs = object.get("metadata").and_then(|m| m.get("ownerReferences"));
    refs.and_then(Value::as_array).into_iter().flatten()
}

/// The namespace segment of a storage key (`/<group>/<resource>/<namespace>/<name>`).
pub(super) fn key_namespace(key: &str) -> &str {
    key.split('/').nth(3).unwrap_or("")
}

const NAMESPACES_PREFIX: &str = "/core/namespaces/";

/// Decides what the collector does, from one consistent view of the objects that concern it
/// (see [`concerned`]).
pub(crate) fn plan(items: &[Item<'_>]) -> Vec<Action> {
    // Only the objects some owner reference names need to be found by uid.
    let referenced: HashSet<&str> = items
        .iter()
        .flat_map(|i| owner_refs(i.object))
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .collect();
    let by_uid: HashMap<&str, &Value> = if referenced.is_empty() {
        HashMap::new()
    } else {
        items
            .iter()
            .filter_map(|i| Some((meta_str(i.object, "uid")?, i.object)))
            .filter(|(uid, _)| referenced.contains(uid))
            .collect()
    };
    let mut dependents: HashMap<&str, Vec<&Item<'_>>> = HashMap::new();
    for item in items {
        for owner in owner_refs(item.object) {
            if let Some(uid) = owner.get("uid").and_then(Value::as_str) {
                dependents.entry(uid).or_default().push(item);
            }
        }
    }
    let mut actions = Vec::new();
    let mut deleted: HashSet<String> = HashSet::new();
    let mut delete = |actions: &mut Vec<Action>, item: &Item<'_>, propagation| {
        if !deleting(item.object) && deleted.insert(item.key.to_owned()) {
            actions.push(Action::Delete { key: item.key.to_owned(), propagation });
        }
    };

    // Dependents of missing owners, and of owners being deleted with a policy.
    for item in items {
        let refs: Vec<&Value> = owner_refs(item.object).collect();
        if refs.is_empty() {
            continue;
        }
        let missing: Vec<&str> = refs
            .iter()
            .filter_map(|r| r.get("uid").and_then(Value::as_str))
            .filter(|uid| !by_uid.contains_key(uid))
            .collect();
        if missing.len() == refs.len() {
            delete(&mut actions, item, Propagation::Background);
            continue;
        }
        for uid in missing {
            actions.push(Action::RemoveOwner { key: item.key.to_owned(), uid: uid.to_owned() });
        }
        for owner_ref in &refs {
            let Some(uid) = owner_ref.get("uid").and_then(Value::as_str) else { continue };
            let Some(owner) = by_uid.get(uid) else { continue };
            if !deleting(owner) {
                continue;
            }
            let owner_finalizers = finalizers(owner);
            if owner_finalizers.iter().any(|f| f == "orphan") {
                actions.push(Action::RemoveOwner { key: item.key.to_owned(), uid: uid.to_owned() });
            } else if owner_finalizers.iter().any(|f| f == "foregroundDeletion") {
                delete(&mut actions, item, Propagation::Foreground);
            }
        }
    }

    // Owners whose policy finalizer has done its work.
    for item in items.iter().filter(|i| deleting(i.object)) {
        let uid = meta_str(item.object, "uid").unwrap_or_default();
        let deps = dependents.get(uid).map(Vec::as_slice).unwrap_or_default();
        let held = finalizers(item.object);
        if held.iter().any(|f| f == "orphan") && deps.is_empty() {
            actions.push(Action::RemoveFinalizer { key: item.key.to_owned(), finalizer: "orphan" });
        }
        let blocking = deps.iter().any(|d| {
            owner_refs(d.object).any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(uid)
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool).unwrap_or(false)
            })
        });
        if held.iter().any(|f| f == "foregroundDeletion") && !blocking {
            actions.push(Action::RemoveFinalizer {
                key: item.key.to_owned(),
                finalizer: "foregroundDeletion",
            });
        }
    }

    // Namespaces being deleted: empty them, then let them go.
    for namespace in
        items.iter().filter(|i| i.key.starts_with(NAMESPACES_PREFIX) && deleting(i.object))
    {
        let name = meta_str(namespace.object, "name").unwrap_or_default();
        let contents: Vec<&Item<'_>> = items
            .iter()
            .filter(|i| !i.key.starts_with(NAMESPACES_PREFIX) && key_namespace(i.key) == name)
            .collect();
        if contents.is_empty() {
            actions.push(Action::FinalizeNamespace { key: namespace.key.to_owned() });
        } else {
            let conditions = conditions(contents.iter().map(|i| (i.key, i.object)));
            if !shown(namespace.object, &conditions) {
                let key = namespace.key.to_owned();
                actions.push(Action::NamespaceConditions { key, conditions });
            }
        }
        for item in contents {
            delete(&mut actions, item, Propagation::Background);
        }
    }

    // CRDs being deleted: delete their custom resources (whose own finalizers may hold them a
    // while), then let the CRD go.
    for crd in items.iter().filter(|i| {
        i.key.starts_with(CRD_PREFIX)
            && deleting(i.object)
            && finalizers(i.object).iter().any(|f| f == CRD_CLEANUP_FINALIZER)
    }) {
        let instances: Vec<&Item<'_>> = match instances_prefix(crd.object) {
            Some(prefix) => items.iter().filter(|i| i.key.starts_with(&prefix)).collect(),
            None => Vec::new(),
        };
        if instances.is_empty() {
            actions.push(Action::RemoveFinalizer {
                key: crd.key.to_owned(),
                finalizer: CRD_CLEANUP_FINALIZER,
            });
        }
        for item in instances {
            delete(&mut actions, item, Propagation::Background);
        }
    }
    actions
}

/// Whether a change can give the collector work: a deletion, an object being deleted, or an
/// object with owners (which may be gone). Other writes give it none.
fn interesting(event: &Event) -> bool {
    event.event_type == EventType::Deleted
        || deleting(&event.object)
        || owner_refs(&event.object).next().is_some()
}

/// Runs the collector until the store shuts down. Changes are coalesced: a burst of writes
/// (a Job controller making pods, a kubelet reporting their statuses) costs one pass, and passes
/// run at most every [`MIN_INTERVAL`], since each reads every object with owners.
pub(crate) fn spawn(store: Store, registry: Registry) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Ok(mut watch) = store.watch("/", store.revision()) else { return };
        let mut recheck = next_recheck(pass(&store, &registry).await, None);
        let mut last_pass = tokio::time::Instant::now();
        loop {
            tokio::select! {
                next = watch.next() => match next {
                    None => return,
                    Some(Err(StoreError::Compacted { .. })) => match store.watch("/", store.revision()) {
                        Ok(w) => watch = w,
                        Err(_) => return,
                    },
                    Some(Err(_)) => return,
                    Some(Ok(event)) if interesting(&event) => {}
                    Some(Ok(_)) => continue,
                },
                _ = tokio::time::sleep(recheck.unwrap_or_default()), if recheck.is_some() => {}
            }
            // Let a burst of related writes land, then take everything that queued meanwhile.
            tokio::time::sleep_until(
                (last_pass + MIN_INTERVAL).max(tokio::time::Instant::now() + SETTLE),
            )
            .await;
            loop {
                match watch.next().now_or_never() {
                    Some(Some(Ok(_))) => {}
                    Some(Some(Err(StoreError::Compacted { .. }))) => {
                        match store.watch("/", store.revision()) {
                            Ok(w) => watch = w,
                            Err(_) => return,
                        }
                    }
                    Some(None | Some(Err(_))) => return,
                    None => break,
                }
            }
            last_pass = tokio::time::Instant::now();
            recheck = next_recheck(pass(&store, &registry).await, recheck);
            // A pass reads every object with owners: with many, space passes out so that they
            // take at most a quarter of the time.
            let took = last_pass.elapsed();
            last_pass += took.saturating_mul(4).saturating_sub(MIN_INTERVAL);
        }
    })
}

/// The wait before the next pass without a triggering change: none after a pass that found no
/// work, [`MIN_INTERVAL`] after the first that did, then doubling up to [`RECHECK_MAX`].
fn next_recheck(found_work: bool, previous: Option<Duration>) -> Option<Duration> {
    found_work.then(|| previous.map_or(MIN_INTERVAL, |wait| (wait * 2).min(RECHECK_MAX)))
}

/// One pass: plan from a snapshot, then act; returns whether there was anything to do.
async fn pass(store: &Store, registry: &Registry) -> bool {
    let snapshot = store.list("/");
    // Planning may read every object: off the request workers, so that requests do not wait.
    let actions = tokio::task::spawn_blocking(move || {
        let items: Vec<Item<'_>> =
            concerned(&snapshot).map(|e| Item { key: &e.key, object: &e.object }).collect();
        plan(&items)
    })
    .await
    .unwrap_or_default();
    if actions.is_empty() {
        return false;
    }
    let served = registry.served();
    let info_of = |key: &str| -> Option<Arc<ResourceInfo>> {
        served.resources.iter().find(|r| key.starts_with(&resource_prefix(r))).cloned()
    };
    let mut crds_changed = false;
    for action in actions {
        let on_crd = action.key().starts_with(CRD_PREFIX);
        if on_crd {
            // A CRD the collector lets go of has no custom resources left: refreshing first
            // withdraws them before the CRD goes (see `Registry::refresh`).
            registry.refresh(store);
        }
        crds_changed |= on_crd;
        // Failures (a conflict with another writer, an object already gone) are retried by the
        // next pass from fresh state.
        let _ = act(store, &info_of, action).await;
    }
    if crds_changed {
        registry.refresh(store);
    }
    true
}

/// The objects [`plan`] needs to see to decide what it would decide from all of them, in key
/// order: those with owners, those being deleted, and the owners named. Emptying a namespace
/// or a CRD's resources concerns whatever they hold, so while one is being deleted, every
/// object.
fn concerned(snapshot: &Snapshot) -> Box<dyn Iterator<Item = &Entry> + '_> {
    let emptying = |entry: &Entry| {
        entry.key.starts_with(NAMESPACES_PREFIX) || entry.key.starts_with(CRD_PREFIX)
    };
    if snapshot.deleting().any(emptying) {
        return Box::new(snapshot.entries());
    }
    let mut concerned: BTreeMap<&str, &Entry> =
        snapshot.owned().chain(snapshot.deleting()).map(|e| (e.key.as_str(), e)).collect();
    let owners = snapshot
        .owned()
        .flat_map(|e| owner_refs(&e.object))
        .filter_map(|r| snapshot.by_uid(r.get("uid")?.as_str()?));
    concerned.extend(owners.map(|e| (e.key.as_str(), e)));
    Box::new(concerned.into_values())
}

async fn act(
    store: &Store,
    info_of: &impl Fn(&str) -> Option<Arc<ResourceInfo>>,
    action: Action,
) -> Result<(), StoreError> {
    let key = action.key().to_owned();
    let Some(current) = store.get(&key) else { return Ok(()) };
    let mut object = Value::clone(&current.object);
    match action {
        Action::Delete { propagation, .. } => {
            let Some(info) = info_of(&key) else { return Ok(()) };
            delete_entry(store, &info, &current, propagation, None, false).await?;
            return Ok(());
        }
        Action::RemoveOwner { uid, .. } => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                let refs = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut);
                if let Some(refs) = refs {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                    // As Kubernetes shows it: no empty list left behind.
                    if refs.is_empty() {
                        metadata.remove("ownerReferences");
                    }
                }
            }
        }
        Action::RemoveFinalizer { finalizer, .. } => {
            let kept: Vec<String> =
                finalizers(&object).into_iter().filter(|f| f != finalizer).collect();
            object["metadata"]["finalizers"] = json!(kept);
        }
        // Its own `kubernetes` finalizer holds it (see `ready_to_remove`): written, not removed.
        Action::NamespaceConditions { conditions, .. } => {
            object["status"]["conditions"] = render(&object, &conditions, &now_rfc3339());
        }
        Action::FinalizeNamespace { .. } => {
            if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("finalizers".into(), json!([]));
            }
            if finalizers(&object).is_empty() {
                store.write(WriteOp::Delete { key, expected_revision: current.revision }).await?;
                return Ok(());
            }
        }
    }
    let op = if ready_to_remove(&object) {
        WriteOp::Delete { key, expected_revision: current.revision }
    } else {
        WriteOp::Update { key, expected_revision: current.revision, object }
    };
    store.write(op).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(uid: &str, owners: &[(&str, bool)], extra: Value) -> Value {
        let mut object = json!({"metadata": {"name": uid, "uid": uid}});
        if !owners.is_empty() {
            object["metadata"]["ownerReferences"] = owners
                .iter()
                .map(|(u, block)| json!({"uid": u, "name": u, "kind": "X", "apiVersion": "v1", "blockOwnerDeletion": block}))
                .collect();
        }
        if let (Some(meta), Some(extra)) = (object["metadata"].as_object_mut(), extra.as_object()) {
            meta.extend(extra.clone());
        }
        object
    }

    fn items<'a>(objects: &'a [(String, Value)]) -> Vec<Item<'a>> {
        objects.iter().map(|(k, o)| Item { key: k, object: o }).collect()
    }

    #[test]
    fn dependents_of_a_deleted_owner_are_deleted_unless_another_owner_remains() {
        let objects = vec![
            ("/core/configmaps/ns/only".to_owned(), obj("only", &[("gone", false)], json!({}))),
            (
                "/core/configmaps/ns/shared".to_owned(),
                obj("shared", &[("gone", false), ("alive", false)], json!({})),
            ),
            ("/core/configmaps/ns/alive".to_owned(), obj("alive", &[], json!({}))),
        ];
        let actions = plan(&items(&objects));
        assert_eq!(
            actions,
            vec![
                Action::Delete {
                    key: "/core/configmaps/ns/only".into(),
                    propagation: Propagation::Background
                },
                Action::RemoveOwner {
                    key: "/core/configmaps/ns/shared".into(),
                    uid: "gone".into()
                },
            ]
        );
    }

    #[test]
    fn foreground_deletes_dependents_first_and_waits_for_blocking_ones() {
        let owner = obj(
            "owner",
            &[],
            json!({"deletionTimestamp": "t", "finalizers": ["foregroundDeletion"]}),
        );
        let blocking = vec![
            ("/a/x/ns/owner".to_owned(), owner.clone()),
            ("/a/x/ns/dep".to_owned(), obj("dep", &[("owner", true)], json!({}))),
        ];
        assert_eq!(
            plan(&items(&blocking)),
            vec![Action::Delete {
                key: "/a/x/ns/dep".into(),
                propagation: Propagation::Foreground
            }]
        );
        let done = vec![("/a/x/ns/owner".to_owned(), owner)];
        assert_eq!(
            plan(&items(&done)),
            vec![Action::RemoveFinalizer {
                key: "/a/x/ns/owner".into(),
                finalizer: "foregroundDeletion"
            }]
        );
    }

    #[test]
    fn orphan_strips_owner_references_then_lets_the_owner_go() {
        let owner = obj("owner", &[], json!({"deletionTimestamp": "t", "finalizers": ["orphan"]}));
        let objects = vec![
            ("/a/x/ns/owner".to_owned(), owner.clone()),
            ("/a/x/ns/dep".to_owned(), obj("dep", &[("owner", true)], json!({}))),
        ];
        assert_eq!(
            plan(&items(&objects)),
            vec![Action::RemoveOwner { key: "/a/x/ns/dep".into(), uid: "owner".into() }]
        );
        assert_eq!(
            plan(&items(&[("/a/x/ns/owner".to_owned(), owner)])),
            vec![Action::RemoveFinalizer { key: "/a/x/ns/owner".into(), finalizer: "orphan" }]
        );
    }

    #[test]
    fn a_terminating_namespace_is_emptied_then_finalized() {
        let ns = obj("team", &[], json!({"deletionTimestamp": "t"}));
        let objects = vec![
            ("/core/namespaces//team".to_owned(), ns.clone()),
            ("/core/configmaps/team/a".to_owned(), obj("a", &[], json!({}))),
            ("/core/configmaps/other/b".to_owned(), obj("b", &[], json!({}))),
        ];
        let planned = plan(&items(&objects));
        assert!(matches!(&planned[0], Action::NamespaceConditions { key, .. }
            if key == "/core/namespaces//team"));
        assert_eq!(
            planned[1..],
            [Action::Delete {
                key: "/core/configmaps/team/a".into(),
                propagation: Propagation::Background
            }]
        );
        assert_eq!(
            plan(&items(&[("/core/namespaces//team".to_owned(), ns)])),
            vec![Action::FinalizeNamespace { key: "/core/namespaces//team".into() }]
        );
    }

    #[test]
    fn a_deleted_crd_waits_for_its_custom_resources() {
        let crd = |group: &str, plural: &str| {
            let mut crd = obj(
                "crd",
                &[],
                json!({"deletionTimestamp": "t", "finalizers": [CRD_CLEANUP_FINALIZER]}),
            );
            crd["spec"] = json!({"group": group, "names": {"plural": plural}});
            crd
        };
        let key = format!("{CRD_PREFIX}widgets.example.com");
        let held = obj("held", &[], json!({"deletionTimestamp": "t", "finalizers": ["x/y"]}));
        let objects = vec![
            (key.clone(), crd("example.com", "widgets")),
            ("/example.com/widgets/ns/a".to_owned(), obj("a", &[], json!({}))),
            ("/example.com/widgets/ns/held".to_owned(), held.clone()),
            ("/example.com/widgetsets/ns/b".to_owned(), obj("b", &[], json!({}))),
        ];
        assert_eq!(
            plan(&items(&objects)),
            vec![Action::Delete {
                key: "/example.com/widgets/ns/a".into(),
                propagation: Propagation::Background
            }],
            "instances are deleted; one held by its finalizer is left to it"
        );
        let waiting = vec![
            (key.clone(), crd("example.com", "widgets")),
            ("/example.com/widgets/ns/held".to_owned(), held),
        ];
        assert_eq!(plan(&items(&waiting)), vec![], "the CRD waits while an instance remains");
        let gone = vec![(key.clone(), crd("example.com", "widgets"))];
        assert_eq!(
            plan(&items(&gone)),
            vec![Action::RemoveFinalizer { key: key.clone(), finalizer: CRD_CLEANUP_FINALIZER }]
        );
        let builtin = vec![
            (key.clone(), crd("coordination.k8s.io", "leases")),
            ("/coordination.k8s.io/leases/ns/l".to_owned(), obj("l", &[], json!({}))),
        ];
        assert_eq!(
            plan(&items(&builtin)),
            vec![Action::RemoveFinalizer { key, finalizer: CRD_CLEANUP_FINALIZER }],
            "a CRD naming a built-in resource never deletes its objects"
        );
    }

    #[test]
    fn passes_that_keep_finding_work_recheck_less_and_less_often() {
        let mut wait = None;
        let mut waits = Vec::new();
        for _ in 0..9 {
            wait = next_recheck(true, wait);
            waits.push(wait.unwrap().as_millis());
        }
        assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(next_recheck(false, wait), None, "a pass that found nothing stops rechecks");
    }

    #[tokio::test]
    async fn a_pass_reads_owned_and_deleted_objects_and_their_owners_only() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Store::open(crate::storage::StoreConfig::new(dir.path().join("db"))).await.unwrap();
        let put =
            |key: &str, object: Value| store.write(WriteOp::Create { key: key.into(), object });
        let deleting = json!({"deletionTimestamp": "2026-11-25T00:00:00Z"});
        put("/apps/replicasets/ns/owner", obj("owner", &[], json!({}))).await.unwrap();
        put("/core/pods/ns/child", obj("child", &[("owner", true)], json!({}))).await.unwrap();
        put("/core/pods/ns/orphan", obj("orphan", &[("gone", false)], json!({}))).await.unwrap();
        put("/core/pods/ns/leaving", obj("leaving", &[], deleting.clone())).await.unwrap();
        put("/core/configmaps/ns/unrelated", obj("unrelated", &[], json!({}))).await.unwrap();
        let keys = |store: &Store| {
            let snapshot = store.list("/");
            concerned(&snapshot).map(|e| e.key.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            keys(&store),
            [
                "/apps/replicasets/ns/owner",
                "/core/pods/ns/child",
                "/core/pods/ns/leaving",
                "/core/pods/ns/orphan"
            ]
        );

        put("/core/namespaces/ns", obj("ns", &[], deleting)).await.unwrap();
        assert_eq!(keys(&store).len(), 6, "emptying a namespace concerns every object");
        store.shutdown().await;
    }
}
