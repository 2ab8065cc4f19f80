//! Every namespace has a `default` ServiceAccount, and a new pod must name one that exists, as
//! on a cluster: there kube-controller-manager creates the account and the `ServiceAccount`
//! admission plugin refuses a pod whose account is missing. Here the server creates the account
//! with its namespace, so a pod created right after the namespace does not race it.

use serde_json::{Value, json};

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Store, StoreError};

use super::errors::{ApiError, ApiResult};
use super::objects::meta_str;
use super::paths::{object_key, resource_prefix};
use super::write::create_missing;

/// The account a pod runs as when it names none.
pub const DEFAULT: &str = "default";

/// The built-in `serviceaccounts` resource.
pub(super) fn service_accounts() -> &'static ResourceInfo {
    builtin_resource("", "serviceaccounts").expect("serviceaccounts are built in")
}

/// Creates the `default` ServiceAccount of `namespace` unless it exists.
pub(crate) async fn ensure_default(store: &Store, namespace: &str) -> Result<(), StoreError> {
    let account = json!({ "metadata": { "name": DEFAULT } });
    create_missing(store, service_accounts(), Some(namespace), account).await
}

/// The names of the stored namespaces.
pub(crate) fn namespace_names(store: &Store) -> Vec<String> {
    let namespaces = builtin_resource("", "namespaces").expect("namespaces are built in");
    let snapshot = store.list(&resource_prefix(namespaces));
    snapshot.entries().filter_map(|e| meta_str(&e.object, "name").map(str::to_owned)).collect()
}

/// Gives every stored namespace its `default` ServiceAccount (namespaces made before accounts
/// were created with them, and the system namespaces).
pub(crate) async fn ensure_every_default(store: &Store) -> Result<(), StoreError> {
    for name in namespace_names(store) {
        ensure_default(store, &name).await?;
    }
    Ok(())
}

/// Refuses a new pod whose ServiceAccount does not exist, with upstream's `403`. A deleted
/// `default` account is made again instead, as kube-controller-manager remakes it.
pub(crate) async fn check_pod(store: &Store, pod: &Value) -> ApiResult<()> {
    let account =
        pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or(DEFAULT);
    let namespace = meta_str(pod, "namespace").unwrap_or("default");
    if store.get(&object_key(service_accounts(), namespace, account)).is_some() {
        return Ok(());
    }
    if account == DEFAULT {
        return ensure_default(store, namespace)
            .await
            .map_err(|e| ApiError::from_store(e, "", "serviceaccounts", DEFAULT));
    }
    // Upstream admits a pod before it generates its name, so a refusal names the prefix: the
    // same message for every retry of a controller, which its event then counts.
    let name = meta_str(pod, "generateName").or(meta_str(pod, "name")).unwrap_or_default();
    Err(ApiError::forbidden(format!(
        "pods \"{name}\" is forbidden: error looking up service account {namespace}/{account}: serviceaccount \"{account}\" not found"
    )))
}
