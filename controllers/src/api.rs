//! The API calls every controller shares: server-side apply of children, status writes that
//! skip no-ops, events, and logging of failed reconciles.

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// A namespaced kind with static type information.
pub trait Namespaced:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> Namespaced for K where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
{
}

/// Logs the reconciles that failed, and the watch errors that held them up, as warnings:
/// kube-runtime retries them per the error policy, but one that keeps failing is what an
/// operator needs to see. A requeue of an object deleted meanwhile is routine and only debug.
pub fn log<T, R: std::error::Error, Q: std::error::Error>(
    controller: &'static str,
) -> impl FnMut(Result<T, kube::runtime::controller::Error<R, Q>>) -> futures::future::Ready<()> {
    use kube::runtime::controller::Error;
    move |result| {
        match result {
            Ok(_) => {}
            Err(Error::ObjectNotFound(object)) => {
                tracing::debug!(controller, %object, "reconcile of a deleted object skipped");
            }
            Err(Error::ReconcilerFailed(error, object)) => {
                tracing::warn!(controller, %object, %error, "reconcile failed");
            }
            Err(Error::QueueError(error)) => tracing::warn!(controller, %error, "watch failed"),
            Err(error) => tracing::warn!(controller, %error, "reconcile failed"),
        }
        futures::future::ready(())
    }
}

/// Server-side applies `child` as `manager`, forcing: the controller owns these fields.
pub async fn apply<K: Namespaced + Serialize>(
    client: &Client,
    manager: &str,
    namespace: &str,
    child: &K,
) -> kube::Result<K> {
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let name = child.meta().name.clone().unwrap_or_default();
    api.patch(&name, &PatchParams::apply(manager).force(), &Patch::Apply(child)).await
}

/// Writes `status` through `/status` when it differs from `current` (compared as JSON, as
/// stored: times have seconds precision there). Returns whether it wrote.
pub async fn write_status<K: Namespaced, S: Serialize>(
    client: &Client,
    owner: &K,
    current: Option<&S>,
    status: &S,
) -> kube::Result<bool> {
    patch_status(client, owner, current, status, false).await
}

/// [`write_status`], but only onto the resourceVersion `owner` was read at: a write computed
/// from an older read fails with a 409 Conflict instead of undoing a newer one.
pub async fn write_status_at_version<K: Namespaced, S: Serialize>(
    client: &Client,
    owner: &K,
    current: Option<&S>,
    status: &S,
) -> kube::Result<bool> {
    patch_status(client, owner, current, status, true).await
}

async fn patch_status<K: Namespaced, S: Serialize>(
    client: &Client,
    owner: &K,
    current: Option<&S>,
    status: &S,
    at_version: bool,
) -> kube::Result<bool> {
    let new = serde_json::to_value(status).unwrap_or_default();
    if current.map(|c| serde_json::to_value(c).unwrap_or_default()) == Some(new.clone()) {
        return Ok(false);
    }
    let api: Api<K> = Api::namespaced(client.clone(), &owner.namespace().unwrap_or_default());
    let mut patch = json!({ "status": new });
    if at_version {
        patch["metadata"] = json!({ "resourceVersion": owner.resource_version() });
    }
    api.patch_status(&owner.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await?;
    Ok(true)
}

/// Creates `object` unless one of its name exists (a create is idempotent by name).
pub async fn create_if_absent<K: Namespaced + Serialize>(
    api: &Api<K>,
    object: &K,
) -> kube::Result<()> {
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Deletes `name` in the background (its dependents follow), if it still exists.
pub async fn delete_if_present<K: Namespaced>(api: &Api<K>, name: &str) -> kube::Result<()> {
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Records an event about `owner`; a failure to record is logged, never fatal.
pub async fn record<K: Resource<DynamicType = ()>>(
    recorder: &Recorder,
    owner: &K,
    warning: bool,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(error) = recorder.publish(&event, &owner.object_ref(&())).await {
        tracing::debug!(%error, "recording an event failed");
    }
}
