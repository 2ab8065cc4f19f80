//! What the server serves: the built-in resources and those of every established CRD, with a
//! compiled schema validator per CRD version. Rebuilt from storage whenever a CRD changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use axum::body::Bytes;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use tokio::sync::watch;

use crate::catalog::{ResourceInfo, builtin_resource, builtin_resources};
use crate::storage::Store;
use crate::validation::SchemaValidator;

/// Storage prefix of CRDs.
pub const CRD_PREFIX: &str = "/apiextensions.k8s.io/customresourcedefinitions/";

/// The served resources; cheap to read, replaced whole when CRDs change.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<RwLock<Arc<Served>>>,
    /// Told each time the view is replaced.
    replaced: watch::Sender<()>,
}

/// `(group, version)`.
type GroupVersion = (String, String);

/// One consistent view of the served resources.
#[derive(Default)]
pub struct Served {
    /// Every served resource, built-ins first.
    pub resources: Vec<Arc<ResourceInfo>>,
    /// The compiled schema of each custom resource version with a valid one. Searched in order,
    /// as `resources` is: a machine serves a few dozen CRD versions, and comparing their names
    /// costs less than the owned key a hash map lookup would build on every write.
    validators: Vec<(Arc<ResourceInfo>, Arc<SchemaValidator>)>,
    openapi_index: OnceLock<Arc<str>>,
    openapi_documents: Mutex<HashMap<GroupVersion, Option<Arc<str>>>>,
    openapi_v2_json: OnceLock<Arc<str>>,
    openapi_v2_protobuf: OnceLock<Bytes>,
}

impl Served {
    /// The resource `group/version/resource`, if served.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.resources.iter().find(|r| r.is(group, version, resource)).cloned()
    }

    /// The schema validator of a custom resource version.
    pub fn validator(&self, info: &ResourceInfo) -> Option<Arc<SchemaValidator>> {
        self.validators
            .iter()
            .find(|(r, _)| r.is(&info.group, &info.version, &info.resource))
            .map(|(_, validator)| validator.clone())
    }

    /// The `/openapi/v3` index as JSON text, built once per view.
    pub fn openapi_index(&self) -> Arc<str> {
        self.openapi_index
            .get_or_init(|| crate::openapi::index(&self.resources).to_string().into())
            .clone()
    }

    /// The OpenAPI v3 document of a group-version as JSON text, built once per view (kept as
    /// text: the documents carry every schema and are far smaller serialized).
    pub fn openapi_document(&self, group: &str, version: &str) -> Option<Arc<str>> {
        let mut cache = self.openapi_documents.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry((group.to_owned(), version.to_owned()))
            .or_insert_with(|| {
                crate::openapi::document(&self.resources, group, version)
                    .map(|d| d.to_string().into())
            })
            .clone()
    }

    /// The `/openapi/v2` document as JSON text, built once per view.
    pub fn openapi_v2_json(&self) -> Arc<str> {
        self.openapi_v2_json
            .get_or_init(|| crate::openapi::v2::json(&self.resources).into())
            .clone()
    }

    /// The `/openapi/v2` document in gnostic's protobuf encoding, built once per view.
    pub fn openapi_v2_protobuf(&self) -> Bytes {
        self.openapi_v2_protobuf
            .get_or_init(|| crate::openapi::v2::protobuf(&self.resources).into())
            .clone()
    }
}

impl Registry {
    /// The current view.
    pub fn served(&self) -> Arc<Served> {
        self.inner.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// Changes each time the view is replaced (a watch of a resource that is no longer served
    /// ends on it).
    pub fn replacements(&self) -> watch::Receiver<()> {
        self.replaced.subscribe()
    }

    /// Rebuilds the view from the built-ins and the CRDs in `store`. CRDs whose names are not
    /// accepted (e.g. a plural another CRD already serves) are left out. A CRD being deleted
    /// stays served without `create`, `update` and `patch` in its discovery verbs, as upstream
    /// shows it, until its last custom resource is gone: from then on nothing can be served
    /// through it, and withdrawing it before the CRD itself goes means that a client who saw the
    /// CRD gone is never served its resources.
    pub fn refresh(&self, store: &Store) {
        let mut resources: Vec<Arc<ResourceInfo>> =
            builtin_resources().into_iter().map(Arc::new).collect();
        let mut validators = Vec::new();
        let everything = store.list("/");
        for entry in everything.scoped(CRD_PREFIX).entries() {
            let Ok(crd) =
                serde_json::from_value::<CustomResourceDefinition>(Value::clone(&entry.object))
            else {
                continue;
            };
            let deleting = crd.metadata.deletion_timestamp.is_some();
            let emptied = || {
                instances_prefix(&entry.object)
                    .is_none_or(|prefix| everything.scoped(&prefix).entries().next().is_none())
            };
            if deleting && emptied() {
                continue;
            }
            for mut info in ResourceInfo::from_crd(&crd) {
                if resources.iter().any(|r| r.is(&info.group, &info.version, &info.resource)) {
                    continue;
                }
                if deleting {
                    info.verbs.retain(|v| !matches!(v.as_str(), "create" | "update" | "patch"));
                }
                let info = Arc::new(info);
                if let Ok(validator) = SchemaValidator::for_crd(&crd, &info.version) {
                    validators.push((info.clone(), Arc::new(validator)));
                }
                resources.push(info);
            }
        }
        let served = Arc::new(Served { resources, validators, ..Default::default() });
        if let Ok(mut inner) = self.inner.write() {
            *inner = served;
        }
        self.replaced.send_replace(());
    }
}

/// The storage prefix of a CRD's custom resources; none for a CRD naming a built-in resource,
/// which the server never serves through it.
pub(crate) fn instances_prefix(crd: &Value) -> Option<String> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str)?;
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str)?;
    if group.is_empty() || plural.is_empty() || builtin_resource(group, plural).is_some() {
        return None;
    }
    Some(format!("/{group}/{plural}/"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::tests::widget_crd;
    use crate::storage::{StoreConfig, WriteOp};

    #[tokio::test]
    async fn a_crd_being_deleted_is_served_without_create_until_its_last_resource_goes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(StoreConfig::new(dir.path().join("db"))).await.unwrap();
        let mut crd = serde_json::to_value(widget_crd()).unwrap();
        crd["metadata"]["deletionTimestamp"] = json!("2026-11-29T00:00:00Z");
        let crd_key = format!("{CRD_PREFIX}modeldeployments.serving.keelson.dev");
        store.write(WriteOp::Create { key: crd_key, object: crd }).await.unwrap();
        let instance = "/serving.keelson.dev/modeldeployments/default/m".to_owned();
        let object = json!({"metadata": {"name": "m", "namespace": "default"}});
        let created = store.write(WriteOp::Create { key: instance.clone(), object }).await.unwrap();
        let registry = Registry::default();
        let verbs = |registry: &Registry| {
            let served = registry.served();
            served
                .find("serving.keelson.dev", "v1alpha1", "modeldeployments")
                .map(|info| info.verbs.clone())
        };

        registry.refresh(&store);
        let left = verbs(&registry).expect("served while a resource is left");
        assert!(!left.iter().any(|v| v == "create"), "{left:?}");

        let expected_revision = created.revision;
        store.write(WriteOp::Delete { key: instance, expected_revision }).await.unwrap();
        registry.refresh(&store);
        assert_eq!(verbs(&registry), None, "withdrawn before the CRD itself goes");
        store.shutdown().await;
    }
}
