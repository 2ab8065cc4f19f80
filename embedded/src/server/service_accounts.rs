//! Every namespace has a `default` ServiceAccount, and a new pod must name one that exists and
//! gets its credentials mounted, as on a cluster: there kube-controller-manager creates the
//! account and the `ServiceAccount` admission plugin refuses a pod whose account is missing and
//! adds the `kube-api-access-*` volume. Here the server creates the account with its namespace,
//! so a pod created right after the namespace does not race it.

use serde_json::{Value, json};

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Store, StoreError};

use super::errors::{ApiError, ApiResult};
use super::objects::{meta_str, random_suffix};
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
    create_missing(store, service_accounts(), Some(namespace), account, None).await
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

/// Admits a new pod as upstream's `ServiceAccount` admission plugin does: its account must
/// exist (a `403` otherwise; a deleted `default` account is made again instead, as
/// kube-controller-manager remakes it), and unless the pod, or else its account, sets
/// `automountServiceAccountToken: false`, its containers get the account's credentials mounted
/// (see [`mount_token`]).
pub(crate) async fn admit_pod(store: &Store, pod: &mut Value) -> ApiResult<()> {
    let account =
        pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or(DEFAULT);
    let namespace = meta_str(pod, "namespace").unwrap_or("default");
    let automount_by_account = match store.get(&object_key(service_accounts(), namespace, account))
    {
        Some(entry) => entry.object.get("automountServiceAccountToken").and_then(Value::as_bool),
        None if account == DEFAULT => {
            ensure_default(store, namespace)
                .await
                .map_err(|e| ApiError::from_store(e, "", "serviceaccounts", DEFAULT))?;
            None
        }
        None => {
            // Upstream admits a pod before it generates its name, so a refusal names the
            // prefix: the same message for every retry of a controller, which its event then
            // counts.
            let name = meta_str(pod, "generateName").or(meta_str(pod, "name")).unwrap_or_default();
            return Err(ApiError::forbidden(format!(
                "pods \"{name}\" is forbidden: error looking up service account {namespace}/{account}: serviceaccount \"{account}\" not found"
            )));
        }
    };
    let automount = pod.pointer("/spec/automountServiceAccountToken").and_then(Value::as_bool);
    if automount.or(automount_by_account).unwrap_or(true) {
        mount_token(pod, &random_suffix());
    }
    Ok(())
}

/// Where a container finds its pod's ServiceAccount token, the cluster's CA and its namespace.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The name of the projected volume that holds them, before its random suffix.
const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// Mounts the pod's token volume (`kube-api-access-<suffix>`, or the one the pod has already,
/// as a copy made by `kubectl debug --copy-to` has) read-only at the token path of each init
/// and app container that mounts nothing there, adding the volume if one of them needs it. The
/// volume projects a bound token (3607 s, as upstream asks for), `ca.crt` from the namespace's
/// `kube-root-ca.crt` ConfigMap and the namespace, as on a cluster; the local node gives
/// process pods the same credentials its own way (see its kubelet).
fn mount_token(pod: &mut Value, suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let existing = spec.get("volumes").and_then(Value::as_array).and_then(|volumes| {
        volumes
            .iter()
            .filter_map(|v| v.get("name")?.as_str())
            .find(|name| name.starts_with(TOKEN_VOLUME_PREFIX))
    });
    let volume = existing.map_or_else(|| format!("{TOKEN_VOLUME_PREFIX}{suffix}"), str::to_owned);
    let has_volume = existing.is_some();
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let mounts = &mut container["volumeMounts"];
            let taken = mounts.as_array().is_some_and(|mounts| {
                mounts.iter().any(|m| m["mountPath"].as_str() == Some(TOKEN_MOUNT_PATH))
            });
            if taken {
                continue;
            }
            match mounts.as_array_mut() {
                Some(mounts) => mounts.push(mount.clone()),
                None => *mounts = json!([mount]),
            }
            mounted = true;
        }
    }
    if mounted && !has_volume {
        let projected = json!({
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
            },
        });
        match spec.get_mut("volumes").and_then(Value::as_array_mut) {
            Some(volumes) => volumes.push(projected),
            None => {
                spec.insert("volumes".into(), json!([projected]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_mounts(pod: &Value, list: &str) -> Vec<Value> {
        pod["spec"][list].as_array().unwrap().iter().map(|c| c["volumeMounts"].clone()).collect()
    }

    #[test]
    fn every_container_mounts_the_token_volume_unless_it_mounts_the_path_itself() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "setup"}],
            "containers": [
                {"name": "app", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "own", "volumeMounts": [{"name": "mine", "mountPath": TOKEN_MOUNT_PATH}]},
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        }});
        mount_token(&mut pod, "x7k2p");
        let mount = json!({"name": "kube-api-access-x7k2p", "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(token_mounts(&pod, "initContainers"), [json!([mount])]);
        let app = json!([{"name": "data", "mountPath": "/data"}, mount]);
        let own = json!([{"name": "mine", "mountPath": TOKEN_MOUNT_PATH}]);
        assert_eq!(token_mounts(&pod, "containers"), [app, own]);
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 2);
        assert_eq!(volumes[1]["name"], "kube-api-access-x7k2p");
        let sources = &volumes[1]["projected"]["sources"];
        assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
        assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
        assert_eq!(
            sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
            "metadata.namespace"
        );
    }

    #[test]
    fn a_copy_keeps_its_token_volume_and_a_pod_that_needs_none_gets_none() {
        // As `kubectl debug --copy-to` sends it: the volume and mounts of the original.
        let mount = json!({"name": "kube-api-access-abcde", "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        let volume = json!({"name": "kube-api-access-abcde", "projected": {"sources": []}});
        let copy = json!({"spec": {
            "containers": [{"name": "app", "volumeMounts": [mount]}, {"name": "debugger"}],
            "volumes": [volume],
        }});
        let mut admitted = copy.clone();
        mount_token(&mut admitted, "zzzzz");
        assert_eq!(token_mounts(&admitted, "containers"), [json!([mount]), json!([mount])]);
        assert_eq!(admitted["spec"]["volumes"], json!([volume]));

        let own = json!({"spec": {"containers": [{"name": "app", "volumeMounts": [{"name": "mine", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        let mut admitted = own.clone();
        mount_token(&mut admitted, "zzzzz");
        assert_eq!(admitted, own, "nothing mounts it: no volume");
    }
}
