//! The data of `kubernetes.io/service-account-token` Secrets, filled as kube-controller-manager's
//! token controller fills them: a Secret of that type naming an account in its
//! `kubernetes.io/service-account.name` annotation gets `token`, `ca.crt` and `namespace`, and
//! the account's uid in `kubernetes.io/service-account.uid`, once the account exists (at once,
//! or when it is created). The token authenticates as the account while the Secret and the
//! account exist (see `tokens::secret_token`): the long-lived token upstream documents for
//! tools that cannot request short-lived ones.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Entry, EventType, Store, StoreError, WriteOp};

use super::objects::meta_str;
use super::paths::{object_key, resource_prefix};
use super::service_accounts::service_accounts;
use super::tokens::{TokenKeys, secret_token};

/// The Secret type whose data this fills.
const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
const ACCOUNT_UID: &str = "kubernetes.io/service-account.uid";

/// The built-in `secrets` resource.
fn secrets() -> &'static ResourceInfo {
    builtin_resource("", "secrets").expect("secrets are built in")
}

/// The account a Secret wants a token of, when it is a token Secret without one.
fn wanted_account(secret: &Value) -> Option<&str> {
    let token_type = secret.get("type").and_then(Value::as_str) == Some(TOKEN_TYPE);
    let filled = secret.pointer("/data/token").is_some();
    let deleting = secret.pointer("/metadata/deletionTimestamp").is_some();
    let account = secret.pointer("/metadata/annotations")?.get(ACCOUNT_NAME)?.as_str()?;
    (token_type && !filled && !deleting && !account.is_empty()).then_some(account)
}

/// The Secret with its token, CA and namespace filled in for `account`.
fn filled(secret: &Value, account: &Value, token: &str, ca_pem: &str) -> Value {
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let namespace = meta_str(secret, "namespace").unwrap_or_default();
    let mut secret = secret.clone();
    let data = &mut secret["data"];
    if !data.is_object() {
        *data = json!({});
    }
    data["token"] = json!(encode(token));
    data["ca.crt"] = json!(encode(ca_pem));
    data["namespace"] = json!(encode(namespace));
    secret["metadata"]["annotations"][ACCOUNT_UID] = json!(meta_str(account, "uid"));
    secret
}

/// Fills `entry`'s Secret if it wants a token and its account exists.
async fn fill(
    store: &Store,
    keys: &TokenKeys,
    ca_pem: &str,
    entry: &Entry,
) -> Result<(), StoreError> {
    let Some(name) = wanted_account(&entry.object) else { return Ok(()) };
    let namespace = meta_str(&entry.object, "namespace").unwrap_or_default();
    let Some(account) = store.get(&object_key(service_accounts(), namespace, name)) else {
        return Ok(());
    };
    let account_uid = meta_str(&account.object, "uid").unwrap_or_default();
    let secret = meta_str(&entry.object, "name").unwrap_or_default();
    let secret_uid = meta_str(&entry.object, "uid").unwrap_or_default();
    let Ok(token) = secret_token(keys, namespace, (name, account_uid), (secret, secret_uid)) else {
        return Ok(());
    };
    let object = filled(&entry.object, &account.object, &token, ca_pem);
    let op = WriteOp::Update { key: entry.key.clone(), expected_revision: entry.revision, object };
    store.write_if_unchanged(op).await
}

/// Fills every token Secret of `namespace` (every namespace when `None`) that wants one.
async fn fill_all(
    store: &Store,
    keys: &TokenKeys,
    ca_pem: &str,
    namespace: Option<&str>,
) -> Result<(), StoreError> {
    let prefix = resource_prefix(secrets());
    let prefix = match namespace {
        Some(namespace) => [prefix.as_str(), namespace, "/"].concat(),
        None => prefix,
    };
    for entry in store.list(&prefix).entries() {
        fill(store, keys, ca_pem, entry).await?;
    }
    Ok(())
}

/// Fills token Secrets as they and their accounts come, until the store shuts down.
pub(crate) fn spawn(store: Store, keys: TokenKeys, ca_pem: Arc<str>) -> JoinHandle<()> {
    let (secrets, accounts) = (resource_prefix(secrets()), resource_prefix(service_accounts()));
    tokio::spawn(async move {
        loop {
            let from = store.revision();
            let (Ok(mut secret_events), Ok(mut account_events)) =
                (store.watch(&secrets, from), store.watch(&accounts, from))
            else {
                return;
            };
            if let Err(error) = fill_all(&store, &keys, &ca_pem, None).await {
                tracing::warn!(%error, "filling service account token Secrets failed");
            }
            loop {
                let (event, account) = tokio::select! {
                    event = secret_events.next() => (event, false),
                    event = account_events.next() => (event, true),
                };
                let event = match event {
                    Some(Ok(event)) => event,
                    // Fell behind the history: watch from now, and fill what was missed.
                    Some(Err(StoreError::Compacted { .. })) => break,
                    None | Some(Err(_)) => return,
                };
                if event.event_type == EventType::Deleted {
                    continue;
                }
                let result = match (account, store.get(&event.key)) {
                    (true, _) => {
                        let namespace = meta_str(&event.object, "namespace");
                        fill_all(&store, &keys, &ca_pem, namespace).await
                    }
                    (false, Some(entry)) => fill(&store, &keys, &ca_pem, &entry).await,
                    (false, None) => Ok(()),
                };
                if let Err(error) = result {
                    tracing::warn!(%error, "filling a service account token Secret failed");
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(extra: Value) -> Value {
        let mut secret = json!({"type": TOKEN_TYPE, "metadata": {"name": "bot-token",
            "namespace": "ci", "annotations": {ACCOUNT_NAME: "bot"}}});
        secret.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        secret
    }

    #[test]
    fn only_token_secrets_without_a_token_want_one() {
        assert_eq!(wanted_account(&secret(json!({}))), Some("bot"));
        assert_eq!(wanted_account(&secret(json!({"data": {"token": "eA=="}}))), None);
        assert_eq!(wanted_account(&secret(json!({"type": "Opaque"}))), None);
    }

    #[test]
    fn a_filled_secret_carries_the_token_the_ca_and_its_namespace() {
        let account = json!({"metadata": {"name": "bot", "uid": "u-1"}});
        let done = filled(&secret(json!({"data": {"extra": "eA=="}})), &account, "jwt", "PEM");
        let decode = |key: &str| {
            let text = done["data"][key].as_str().unwrap();
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(text).unwrap())
                .unwrap()
        };
        assert_eq!(
            (decode("token"), decode("ca.crt"), decode("namespace")),
            ("jwt".into(), "PEM".into(), "ci".into())
        );
        assert_eq!(done["data"]["extra"], "eA==", "other keys stay");
        assert_eq!(done["metadata"]["annotations"][ACCOUNT_UID], "u-1");
        assert_eq!(wanted_account(&done), None);
    }
}
