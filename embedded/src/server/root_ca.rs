//! Every namespace holds the ConfigMap `kube-root-ca.crt` with the certificate of the CA that
//! signed the API server's, as kube-controller-manager's root CA publisher keeps it on a
//! cluster: pods and tools that talk to the API server read it to trust it. The server writes it
//! with each namespace and refreshes it in every namespace at start.

use serde_json::json;

use crate::catalog::builtin_resource;
use crate::storage::{Store, StoreError, WriteOp};

use super::objects::{now_rfc3339, prepare_create};
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
        // Someone else wrote it meanwhile: the next start sets it right.
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
