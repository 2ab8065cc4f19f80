//! Adoption and release of a workload controller's objects, as upstream's
//! `ControllerRefManager` does: an object that fits the controller (matches its selector, and
//! whatever else its kind asks) and has no controller is adopted; an object the controller
//! controls that no longer fits is released; an object another controller controls is left
//! alone. A controller being deleted adopts nothing and releases nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use serde_json::{Value, json};

use crate::node::pods;

/// How a controller's candidate objects divide.
#[derive(Clone, Debug, PartialEq)]
pub struct Claims<T> {
    /// Objects it controls and that still fit it.
    pub owned: Vec<T>,
    /// Orphans that fit it, to adopt.
    pub adopt: Vec<T>,
    /// Objects it controls that no longer fit it, to release.
    pub release: Vec<T>,
}

impl<T> Default for Claims<T> {
    fn default() -> Self {
        Claims { owned: Vec::new(), adopt: Vec::new(), release: Vec::new() }
    }
}

/// Children seen leaving their controller's selector, by the controller's uid: what a
/// controller must look at to release, since it lists its candidates by its selector (which the
/// store serves from its label index) and such a child is no longer among them.
#[derive(Debug, Default)]
pub struct Strays(Mutex<HashMap<String, BTreeSet<String>>>);

impl Strays {
    /// Notes that the child `name` no longer fits its controller `controller_uid`.
    pub fn note(&self, controller_uid: &str, name: &str) {
        let mut strays = self.0.lock().unwrap_or_else(|e| e.into_inner());
        strays.entry(controller_uid.to_owned()).or_default().insert(name.to_owned());
    }

    /// The names noted for `controller_uid`, forgotten once taken.
    pub fn take(&self, controller_uid: &str) -> BTreeSet<String> {
        let mut strays = self.0.lock().unwrap_or_else(|e| e.into_inner());
        strays.remove(controller_uid).unwrap_or_default()
    }
}

/// Divides `candidates` (objects of the controller's namespace) for the controller `controller`;
/// `fits` says whether an object fits it. Orphans being deleted are not adopted.
pub fn claim<T: Resource>(
    controller: &ObjectMeta,
    candidates: Vec<T>,
    fits: impl Fn(&T) -> bool,
) -> Claims<T> {
    let uid = controller.uid.as_deref().unwrap_or_default();
    let deleting = controller.deletion_timestamp.is_some();
    let mut claims = Claims::default();
    for object in candidates {
        let meta = object.meta();
        match pods::controller_uid(meta) {
            Some(owner) if owner != uid => {}
            Some(_) if fits(&object) => claims.owned.push(object),
            Some(_) if deleting => {}
            Some(_) => claims.release.push(object),
            None if deleting
                || meta.deletion_timestamp.is_some()
                || meta.namespace != controller.namespace
                || !fits(&object) => {}
            None => claims.adopt.push(object),
        }
    }
    claims
}

/// The merge patch that makes `controller` (a controller reference) the controller of the
/// object `meta` describes, keeping its other owners.
pub fn adoption_patch(meta: &ObjectMeta, controller: &OwnerReference) -> Value {
    let mut owners = meta.owner_references.clone().unwrap_or_default();
    owners.push(controller.clone());
    owners_patch(meta, &owners)
}

/// The merge patch that removes the reference to the controller `controller_uid` from the object
/// `meta` describes, keeping its other owners.
pub fn release_patch(meta: &ObjectMeta, controller_uid: &str) -> Value {
    let owners: Vec<OwnerReference> = meta
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != controller_uid)
        .cloned()
        .collect();
    owners_patch(meta, &owners)
}

/// A merge patch setting the owner references (removing the field when there are none) on
/// condition that the object is the one read, unchanged since: with its uid and its
/// `resourceVersion`, which the API server checks (`409 Conflict` when it moved on).
fn owners_patch(meta: &ObjectMeta, owners: &[OwnerReference]) -> Value {
    let owners = if owners.is_empty() { Value::Null } else { json!(owners) };
    json!({
        "metadata": {
            "uid": meta.uid,
            "resourceVersion": meta.resource_version,
            "ownerReferences": owners,
        }
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn controller() -> ObjectMeta {
        ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("rs-uid".into()),
            ..ObjectMeta::default()
        }
    }

    /// A pod in `ns` labelled `app=<app>`, controlled by `owner` when given.
    fn pod(name: &str, app: &str, owner: Option<&str>) -> Pod {
        let controller = |uid: &str| OwnerReference {
            uid: uid.into(),
            ..pods::controller_reference("apps/v1", "ReplicaSet", &controller())
        };
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("{name}-uid")),
                resource_version: Some("7".into()),
                labels: Some([("app".to_owned(), app.to_owned())].into()),
                owner_references: owner.map(|uid| vec![controller(uid)]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn web(pod: &Pod) -> bool {
        pod.metadata.labels.as_ref().and_then(|l| l.get("app")).map(String::as_str) == Some("web")
    }

    fn names(pods: &[Pod]) -> Vec<&str> {
        pods.iter().filter_map(|p| p.metadata.name.as_deref()).collect()
    }

    fn now() -> Option<Time> {
        Some(Time(jiff::Timestamp::UNIX_EPOCH))
    }

    /// A plain (not controller) reference to a ConfigMap.
    fn plain_owner() -> OwnerReference {
        let meta = ObjectMeta {
            name: Some("cm".into()),
            uid: Some("cm-uid".into()),
            ..ObjectMeta::default()
        };
        pods::owner_reference("v1", "ConfigMap", &meta)
    }

    #[test]
    fn orphans_that_fit_are_adopted_and_children_that_no_longer_fit_released() {
        let candidates = vec![
            pod("mine", "web", Some("rs-uid")),
            pod("orphan", "web", None),
            pod("relabelled", "quarantine", Some("rs-uid")),
            pod("unrelated", "db", None),
        ];
        let claims = claim(&controller(), candidates, web);
        assert_eq!(names(&claims.owned), ["mine"]);
        assert_eq!(names(&claims.adopt), ["orphan"]);
        assert_eq!(names(&claims.release), ["relabelled"]);
    }

    #[test]
    fn another_controllers_object_is_left_alone() {
        let candidates =
            vec![pod("theirs", "web", Some("other-uid")), pod("theirs-too", "db", Some("x"))];
        assert_eq!(claim(&controller(), candidates, web), Claims::default());
    }

    #[test]
    fn orphans_being_deleted_or_of_another_namespace_are_not_adopted() {
        let mut elsewhere = pod("elsewhere", "web", None);
        elsewhere.metadata.namespace = Some("other".into());
        let mut going = pod("going", "web", None);
        going.metadata.deletion_timestamp = now();
        assert_eq!(claim(&controller(), vec![elsewhere, going], web), Claims::default());
    }

    #[test]
    fn a_controller_being_deleted_neither_adopts_nor_releases() {
        let controller = ObjectMeta { deletion_timestamp: now(), ..controller() };
        let candidates = vec![
            pod("mine", "web", Some("rs-uid")),
            pod("orphan", "web", None),
            pod("relabelled", "quarantine", Some("rs-uid")),
        ];
        let claims = claim(&controller, candidates, web);
        assert_eq!(names(&claims.owned), ["mine"]);
        assert!(claims.adopt.is_empty() && claims.release.is_empty());
    }

    #[test]
    fn adopting_adds_the_controller_and_keeps_other_owners_on_the_version_read() {
        let mut orphan = pod("orphan", "web", None);
        let plain = plain_owner();
        orphan.metadata.owner_references = Some(vec![plain.clone()]);
        let reference = pods::controller_reference("apps/v1", "ReplicaSet", &controller());
        let patch = adoption_patch(&orphan.metadata, &reference);
        assert_eq!(
            patch,
            json!({"metadata": {
                "uid": "orphan-uid",
                "resourceVersion": "7",
                "ownerReferences": [plain, reference],
            }})
        );
    }

    #[test]
    fn releasing_removes_only_the_controller_and_the_field_when_it_was_the_last() {
        let mine = pod("mine", "quarantine", Some("rs-uid"));
        let patch = release_patch(&mine.metadata, "rs-uid");
        assert_eq!(patch["metadata"]["ownerReferences"], Value::Null);
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
        assert_eq!(patch["metadata"]["uid"], "mine-uid");

        let mut shared = mine.clone();
        let plain = plain_owner();
        shared.metadata.owner_references.as_mut().unwrap().push(plain.clone());
        let patch = release_patch(&shared.metadata, "rs-uid");
        assert_eq!(patch["metadata"]["ownerReferences"], json!([plain]));
    }
}
