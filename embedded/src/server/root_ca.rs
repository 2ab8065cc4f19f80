//! Every namespace holds the ConfigMap `kube-root-ca.crt` with the certificate of the CA that
//! signed the API server's, as kube-controller-manager's root CA publisher keeps it on a
//! cluster: pods and tools that talk to the API server read it to trust it. The server writes it
//! with each namespace, refreshes it in every namespace at start, and puts it back when it is
//! deleted or changed.

use std::sync::Arc;

use serde_json::json;

use crate::catalog::builtin_resource;
use crate::storage::{Store, StoreError, WriteOp};

use super::objects::{meta_str, now_rfc3339, prepare_create};
use super::paths::object_key;
use super::service_accounts::namespace_names;

/// The ConfigMap's name, and its key.
pub const NAME: &str = "kube-root-ca.crt";
const KEY: &str = "ca.crt";

/// Writes `ca_pem` into `namespace`'s ConfigMap unless it holds it already.
pub(crate) async fn publish(
    store: &Store,
    namespace: &str,
    ca_pem: &str,
) -> Result<(), StoreError> {
    let info = builtin_resource("", "configmaps").expect("configmaps are built in");
    let key = object_key(info, namespace, NAME);
    let op = match store.get(&key) {
        Some(entry) if entry.object["data"][KEY] == ca_pem => return Ok(()),
        Some(entry) => {
            let mut object = (*entry.object).clone();
            object["data"] = json!({ KEY: ca_pem });
            WriteOp::Update { key, expected_revision: entry.revision, object }
        }
        None => {
            let map = json!({ "metadata": { "name": NAME }, "data": { KEY: ca_pem } });
            let object = prepare_create(info, Some(namespace), map, &now_rfc3339())
                .expect("the root CA ConfigMap is valid");
            WriteOp::Create { key, object }
        }
    };
    match store.write(op).await {
        // Someone else wrote it meanwhile: that write's event brings another look (`spawn`).
        Ok(_) | Err(StoreError::AlreadyExists { .. } | StoreError::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Publishes `ca_pem` in every stored namespace.
pub(crate) async fn publish_everywhere(store: &Store, ca_pem: &str) -> Result<(), StoreError> {
    for namespace in namespace_names(store) {
        publish(store, &namespace, ca_pem).await?;
    }
    Ok(())
}

/// Puts the ConfigMap back whenever it is deleted or changed in a namespace that is not itself
/// being deleted, until the store shuts down.
pub(crate) fn spawn(store: Store, ca_pem: Arc<str>) -> tokio::task::JoinHandle<()> {
    let configmaps = builtin_resource("", "configmaps").expect("configmaps are built in");
    let namespaces = builtin_resource("", "namespaces").expect("namespaces are built in");
    let prefix = super::paths::resource_prefix(configmaps);
    tokio::spawn(async move {
        let Ok(mut watch) = store.watch(&prefix, store.revision()) else { return };
        loop {
            let event = match watch.next().await {
                Some(Ok(event)) => event,
                // Fell behind the history: watch from now, and set right what was missed.
                Some(Err(StoreError::Compacted { .. })) => {
                    let Ok(again) = store.watch(&prefix, store.revision()) else { return };
                    watch = again;
                    if publish_everywhere(&store, &ca_pem).await.is_err() {
                        return;
                    }
                    continue;
                }
                None | Some(Err(_)) => return,
            };
            if meta_str(&event.object, "name") != Some(NAME) {
                continue;
            }
            let namespace = meta_str(&event.object, "namespace").unwrap_or_default();
            let live = store.get(&object_key(namespaces, "", namespace));
            let held =
                live.is_some_and(|n| n.object.pointer("/metadata/deletionTimestamp").is_none());
            if held && let Err(error) = publish(&store, namespace, &ca_pem).await {
                tracing::warn!(%error, namespace, "restoring the root CA ConfigMap failed");
            }
        }
    })
}
