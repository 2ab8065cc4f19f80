//! Claiming children (see `claim`): a controller lists the objects of its namespace, adopts the
//! orphans that fit it and releases the children that no longer do; and a change of an orphan
//! wakes the controllers that may adopt it.

use kube::runtime::reflector::Store;

use super::*;
use crate::node::pods;
use crate::node::workloads::claim::{self, Claims, Strays};

/// A workload controller that claims its children by label selector.
pub(super) trait Selecting:
    Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Its selector, when it has one.
    fn selector(&self) -> Option<MetaSelector>;
}

impl Selecting for ReplicaSet {
    fn selector(&self) -> Option<MetaSelector> {
        self.spec.as_ref().map(|s| s.selector.clone())
    }
}

impl Selecting for ReplicationController {
    fn selector(&self) -> Option<MetaSelector> {
        let labels = self.spec.as_ref()?.selector.clone()?;
        Some(MetaSelector { match_labels: Some(labels), match_expressions: None })
    }
}

impl Selecting for Deployment {
    fn selector(&self) -> Option<MetaSelector> {
        self.spec.as_ref().map(|s| s.selector.clone())
    }
}

impl Selecting for StatefulSet {
    fn selector(&self) -> Option<MetaSelector> {
        self.spec.as_ref().map(|s| s.selector.clone())
    }
}

impl Selecting for DaemonSet {
    fn selector(&self) -> Option<MetaSelector> {
        self.spec.as_ref().map(|s| s.selector.clone())
    }
}

impl Selecting for Job {
    fn selector(&self) -> Option<MetaSelector> {
        self.spec.as_ref()?.selector.clone()
    }
}

/// The selector `owner` claims by: none when it has none or it selects everything, since
/// upstream refuses to sync a Deployment selecting everything and validation keeps the other
/// kinds from it.
fn claiming_selector<O: Selecting>(owner: &O) -> Result<Option<LabelSelector>> {
    let Some(selector) = owner.selector() else { return Ok(None) };
    let selector =
        LabelSelector::from_metav1(&selector).map_err(|e| Error::Selector(e.to_string()))?;
    Ok((!selector.is_empty()).then_some(selector))
}

/// The children of kind `K` that `owner` controls once it has claimed those of its namespace:
/// orphans matching its selector that `fits` accepts adopted, children that no longer match or
/// fit released (those its selector lists, and those the watch saw leave it: `strays`). Without
/// a selector to claim by, the children it controls. In name order.
pub(super) async fn claimed<O, K>(
    ctx: &Context,
    owner: &O,
    fits: impl Fn(&K) -> bool,
) -> Result<Vec<K>>
where
    O: Selecting,
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let client = &ctx.client;
    let namespace = owner.namespace().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    let selector = claiming_selector(owner)?;
    // By selector, which the store answers from its label index: listing the whole namespace
    // on every reconcile made a namespace of many workloads quadratic.
    let params = match &selector {
        Some(selector) => ListParams::default().labels(&selector.to_string()),
        None => ListParams::default(),
    };
    let mut candidates = api.list(&params).await?.items;
    for name in ctx.strays.take(&uid(owner)) {
        if !candidates.iter().any(|c| c.meta().name.as_deref() == Some(name.as_str()))
            && let Some(child) = api.get_opt(&name).await?
        {
            candidates.push(child);
        }
    }
    let Some(selector) = selector else {
        let uid = uid(owner);
        return Ok(candidates.into_iter().filter(|c| is_controlled_by(c.meta(), &uid)).collect());
    };
    let fits = |child: &K| selector.matches(child.labels()) && fits(child);
    let Claims { mut owned, adopt, release } = claim::claim(owner.meta(), candidates, fits);
    if !adopt.is_empty() && can_adopt(client, owner).await? {
        let reference =
            pods::controller_reference(&O::api_version(&()), &O::kind(&()), owner.meta());
        for child in &adopt {
            let patch = claim::adoption_patch(child.meta(), &reference);
            owned.extend(patch_owners(&api, child, patch).await?);
        }
        owned.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
    }
    for child in &release {
        patch_owners(&api, child, claim::release_patch(child.meta(), &uid(owner))).await?;
    }
    Ok(owned)
}

/// Whether `owner` may adopt, read again from the API server: it is still there, the same
/// object, and not being deleted (upstream's `RecheckDeletionTimestamp`).
async fn can_adopt<O: Selecting>(client: &Client, owner: &O) -> Result<bool> {
    let api: Api<O> = Api::namespaced(client.clone(), &owner.namespace().unwrap_or_default());
    let fresh = api.get_opt(&owner.name_any()).await?;
    Ok(fresh.is_some_and(|fresh| {
        fresh.meta().uid == owner.meta().uid && fresh.meta().deletion_timestamp.is_none()
    }))
}

/// Applies an owner-reference patch to `child`: the patched child, or none when it is gone.
/// One that changed since it was read is refused (`409`) and the reconcile retried.
async fn patch_owners<K>(api: &Api<K>, child: &K, patch: serde_json::Value) -> Result<Option<K>>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.patch(&child.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await {
        Ok(patched) => Ok(Some(patched)),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What a change of `child` wakes among the controllers of kind `K` in `store`: the ones it
/// names as owners, and, when it has no controller and is not being deleted, each of its
/// namespace that selects it and so may adopt it (upstream's `addPod`/`updatePod`).
/// A child its controller no longer selects is noted in `strays`, for that controller to
/// release it.
pub(super) fn wakes<K, C>(
    store: Store<K>,
    strays: Arc<Strays>,
) -> impl Fn(C) -> Vec<ObjectRef<K>> + Send + Sync
where
    K: Selecting,
    C: Resource,
{
    move |child| {
        let meta = child.meta();
        let namespace = meta.namespace.as_deref();
        let mut owners: Vec<ObjectRef<K>> = meta
            .owner_references
            .iter()
            .flatten()
            .filter_map(|owner| ObjectRef::from_owner_ref(namespace, owner, ()))
            .collect();
        for owner in meta.owner_references.iter().flatten().filter(|o| o.controller == Some(true)) {
            let Some(reference) = ObjectRef::from_owner_ref(namespace, owner, ()) else { continue };
            let left = store.get(&reference).is_some_and(|controller| {
                claiming_selector(&*controller)
                    .is_ok_and(|s| s.is_some_and(|s| !s.matches(child.labels())))
            });
            if left {
                strays.note(&owner.uid, meta.name.as_deref().unwrap_or_default());
            }
        }
        if pods::controller_uid(meta).is_none() && meta.deletion_timestamp.is_none() {
            let selecting = store.state().into_iter().filter(|controller| {
                controller.meta().namespace.as_deref() == namespace
                    && claiming_selector(&**controller)
                        .is_ok_and(|s| s.is_some_and(|s| s.matches(child.labels())))
            });
            owners.extend(selecting.map(|controller| ObjectRef::from_obj(&*controller)));
        }
        owners
    }
}
