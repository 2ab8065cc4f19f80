//! The reconciler of Services' Endpoints and EndpointSlices.

use super::*;

/// Keeps a selecting Service's Endpoints and EndpointSlices in step with its pods. They are
/// owned by the Service, so that they go with it (upstream's controllers delete them
/// themselves).
pub(super) async fn reconcile_service(service: Arc<Service>, ctx: Arc<Context>) -> Result<Action> {
    if service.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = service.namespace().unwrap_or_default();
    let Some(selector) = service.spec.as_ref().and_then(|s| s.selector.clone()) else {
        return Ok(Action::await_change());
    };
    let selector = MetaSelector { match_labels: Some(selector), match_expressions: None };
    let selector =
        LabelSelector::from_metav1(&selector).map_err(|e| Error::Selector(e.to_string()))?;
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &namespace)
        .list(&ListParams::default().labels(&selector.to_string()))
        .await?
        .items;
    let (Some(endpoints), Some(slices)) = (
        endpoints::plan_endpoints(&service, &pods),
        endpoints::plan_endpoint_slices(&service, &pods),
    ) else {
        return Ok(Action::await_change());
    };
    let owner = crate::node::pods::controller_reference("v1", "Service", &service.metadata);
    let same = |a: &Endpoints, b: &Endpoints| a.subsets == b.subsets;
    put(&ctx.client, &namespace, endpoints, &owner, same).await?;
    let slices_api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), &namespace);
    let label = format!("{}={}", endpoints::SERVICE_NAME_LABEL, service.name_any());
    let existing = slices_api.list(&ListParams::default().labels(&label)).await?.items;
    let names: Vec<String> = slices.iter().map(|s| s.name_any()).collect();
    for stale in existing.iter().filter(|s| !names.contains(&s.name_any())) {
        done_if_gone(slices_api.delete(&stale.name_any(), &DeleteParams::default()).await)?;
    }
    for slice in slices {
        let same =
            |a: &EndpointSlice, b: &EndpointSlice| a.endpoints == b.endpoints && a.ports == b.ports;
        put(&ctx.client, &namespace, slice, &owner, same).await?;
    }
    Ok(Action::await_change())
}

/// Creates `wanted` owned by `owner`, or replaces the stored object when it differs from it in
/// its labels or as `same` compares them.
async fn put<K>(
    client: &Client,
    namespace: &str,
    mut wanted: K,
    owner: &OwnerReference,
    same: impl Fn(&K, &K) -> bool,
) -> Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    wanted.meta_mut().owner_references = Some(vec![owner.clone()]);
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let name = wanted.name_any();
    match api.get_opt(&name).await? {
        Some(current)
            if same(&current, &wanted) && current.meta().labels == wanted.meta().labels => {}
        Some(current) => {
            wanted.meta_mut().resource_version = current.meta().resource_version.clone();
            api.replace(&name, &PostParams::default(), &wanted).await?;
        }
        None => {
            api.create(&PostParams::default(), &wanted).await?;
        }
    }
    Ok(())
}
