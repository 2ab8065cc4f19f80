//! The service account credentials of a process pod, so that a program it runs (kubectl, a
//! kube-rs or client-go client) talks to the API server as the pod's ServiceAccount.
//!
//! On a cluster the kubelet projects a token bound to the pod into
//! `/var/run/secrets/kubernetes.io/serviceaccount/` and clients find it there. A local process
//! shares the host's filesystem, so the same files go into the pod's directory
//! (`<pod_dir>/serviceaccount/{token,ca.crt,namespace}`) with a kubeconfig naming them, and the
//! containers get `KUBECONFIG` pointing at it, which every client reads. As upstream, nothing is
//! mounted when the pod, or else its ServiceAccount, sets `automountServiceAccountToken: false`.
//!
//! The token is requested through the TokenRequest API, bound to the pod, so it ends when the pod
//! is deleted. It is asked for a year, as kube-apiserver by default extends the tokens a kubelet
//! asks for, so it does not need rotating while the pod lives.

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::PostParams;
use kube::{Api, Client, ResourceExt};

use crate::server::tls::write_secret;

/// Where and how process pods reach the API server.
#[derive(Clone, Debug)]
pub struct ApiAccess {
    /// The server's URL (`https://127.0.0.1:6443`).
    pub url: String,
    /// The CA certificate that signs the server's, in PEM.
    pub ca_pem: String,
}

/// The lifetime asked for a pod's token: a year.
const TOKEN_SECONDS: i64 = 365 * 24 * 3600;

/// Whether the pod gets credentials: its own setting, else its account's, else yes.
pub fn mounts_token(pod: &Pod, account: Option<&ServiceAccount>) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.automount_service_account_token)
        .or_else(|| account.and_then(|a| a.automount_service_account_token))
        .unwrap_or(true)
}

/// The pod's ServiceAccount name (`default` when it names none).
fn account_name(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".into())
}

/// A kubeconfig for `url` that reads its CA and token from the files beside it.
pub fn kubeconfig(url: &str, dir: &Path, namespace: &str) -> String {
    // Double-quoted as JSON strings, which YAML reads alike, so any path is safe in it.
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    let ca = quoted(&dir.join("ca.crt").display().to_string());
    let token = quoted(&dir.join("token").display().to_string());
    let (url, namespace) = (quoted(url), quoted(namespace));
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: keelson\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: serviceaccount\n  user:\n    tokenFile: {token}\ncontexts:\n- name: keelson\n  context:\n    cluster: keelson\n    user: serviceaccount\n    namespace: {namespace}\ncurrent-context: keelson\n"
    )
}

/// Writes the pod's credentials under `pod_dir` and returns the kubeconfig's path, or `None` when
/// the pod does not mount a token. Fails (the container waits, and it is retried) when the token
/// cannot be had, e.g. while the ServiceAccount is missing.
pub async fn prepare(
    client: &Client,
    access: &ApiAccess,
    pod: &Pod,
    pod_dir: &Path,
) -> Result<Option<PathBuf>, String> {
    let namespace = pod.namespace().unwrap_or_default();
    let name = account_name(pod);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
    let account = accounts.get_opt(&name).await.map_err(|e| e.to_string())?;
    if !mounts_token(pod, account.as_ref()) {
        return Ok(None);
    }
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(TOKEN_SECONDS),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some(pod.name_any()),
                uid: pod.uid(),
            }),
        },
        ..Default::default()
    };
    let issued = accounts
        .create_token_request(&name, &PostParams::default(), &request)
        .await
        .map_err(|e| format!("requesting the token of serviceaccount \"{name}\": {e}"))?;
    let token = issued.status.map(|s| s.token).unwrap_or_default();
    let dir = pod_dir.join("serviceaccount");
    let failed =
        |e: &dyn std::fmt::Display| format!("writing the service account credentials: {e}");
    std::fs::create_dir_all(&dir).map_err(|e| failed(&e))?;
    let kubeconfig_text = kubeconfig(&access.url, &dir, &namespace);
    let files = [
        ("token", token.as_str()),
        ("ca.crt", access.ca_pem.as_str()),
        ("namespace", namespace.as_str()),
        ("kubeconfig", kubeconfig_text.as_str()),
    ];
    for (file, contents) in files {
        write_secret(&dir.join(file), contents).map_err(|e| failed(&e))?;
    }
    Ok(Some(dir.join("kubeconfig")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(automount: Option<bool>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [], "automountServiceAccountToken": automount},
        }))
        .unwrap()
    }

    fn account(automount: Option<bool>) -> ServiceAccount {
        ServiceAccount { automount_service_account_token: automount, ..Default::default() }
    }

    #[test]
    fn the_pod_decides_then_its_account_then_yes() {
        assert!(mounts_token(&pod(None), None));
        assert!(mounts_token(&pod(None), Some(&account(None))));
        assert!(!mounts_token(&pod(None), Some(&account(Some(false)))));
        assert!(mounts_token(&pod(Some(true)), Some(&account(Some(false)))));
        assert!(!mounts_token(&pod(Some(false)), Some(&account(Some(true)))));
        assert_eq!(account_name(&pod(None)), "default");
    }

    #[test]
    fn the_kubeconfig_names_the_files_beside_it() {
        let text = kubeconfig("https://127.0.0.1:6443", Path::new("/d/my pods: a/sa"), "team");
        let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        assert_eq!(cluster.certificate_authority.as_deref(), Some("/d/my pods: a/sa/ca.crt"));
        let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
        assert_eq!(user.token_file.as_deref(), Some("/d/my pods: a/sa/token"));
        let context = parsed.contexts[0].context.as_ref().unwrap();
        assert_eq!(context.namespace.as_deref(), Some("team"));
    }
}
