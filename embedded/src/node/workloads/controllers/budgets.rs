//! The reconciler of PodDisruptionBudgets' status (upstream's disruption controller).

use std::collections::HashSet;

use jiff::Timestamp;

use super::*;

/// Works out how many of the budget's pods may be evicted now and writes it into its status;
/// comes back when an eviction's grace in `disruptedPods` runs out.
pub(super) async fn reconcile_budget(
    budget: Arc<PodDisruptionBudget>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if budget.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = budget.namespace().unwrap_or_default();
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?
        .items;
    let selected: Vec<&Pod> = pods.iter().filter(|p| disruption::selects(&budget, p)).collect();
    let scale = if disruption::needs_scale(&budget) {
        replicas(&ctx.client, &namespace, &selected).await?
    } else {
        Ok(0)
    };
    let (status, recheck) = disruption::plan_status(&budget, &selected, scale, Timestamp::now());
    if budget.status.as_ref() != Some(&status) {
        let mut updated = PodDisruptionBudget::clone(&budget);
        updated.status = Some(status);
        let api: Api<PodDisruptionBudget> = Api::namespaced(ctx.client.clone(), &namespace);
        api.replace_status(&budget.name_any(), &PostParams::default(), &updated).await?;
    }
    Ok(after(recheck.and_then(|left| Duration::try_from(left).ok())))
}

/// The replicas the pods' controllers want, summed over each controller once (a ReplicaSet's
/// Deployment stands for it); `Err` names a pod no known controller accounts for.
async fn replicas(
    client: &Client,
    namespace: &str,
    pods: &[&Pod],
) -> Result<std::result::Result<i32, String>> {
    let (mut seen, mut counted) = (HashSet::new(), HashSet::new());
    let mut total = 0;
    for pod in pods {
        let owner = pod.owner_references().iter().find(|r| r.controller == Some(true));
        let Some(owner) = owner else {
            return Ok(Err(format!("found no controller ref for pod {:?}", pod.name_any())));
        };
        if !seen.insert(owner.uid.clone()) {
            continue;
        }
        let Some((uid, replicas)) = controller_replicas(client, namespace, owner).await? else {
            return Ok(Err(format!(
                "pod {:?} is controlled by a {}, whose replicas a disruption budget cannot count",
                pod.name_any(),
                owner.kind
            )));
        };
        if counted.insert(uid) {
            total += replicas;
        }
    }
    Ok(Ok(total))
}

/// The controller that counts for a pod's `owner` (its Deployment, for a ReplicaSet that has
/// one) and the replicas it wants; `None` for a kind without replicas to count.
async fn controller_replicas(
    client: &Client,
    namespace: &str,
    owner: &OwnerReference,
) -> Result<Option<(String, i32)>> {
    let wanted = |replicas: Option<i32>| Some((owner.uid.clone(), replicas.unwrap_or(0)));
    Ok(match (owner.api_version.as_str(), owner.kind.as_str()) {
        ("apps/v1", "ReplicaSet") => {
            let set = Api::<ReplicaSet>::namespaced(client.clone(), namespace)
                .get_opt(&owner.name)
                .await?;
            let deployment = set.as_ref().and_then(|s| {
                s.owner_references()
                    .iter()
                    .find(|r| r.controller == Some(true) && r.kind == "Deployment")
                    .cloned()
            });
            match deployment {
                Some(deployment) => {
                    let replicas = Api::<Deployment>::namespaced(client.clone(), namespace)
                        .get_opt(&deployment.name)
                        .await?
                        .and_then(|d| d.spec?.replicas);
                    Some((deployment.uid, replicas.unwrap_or(0)))
                }
                None => wanted(set.and_then(|s| s.spec?.replicas)),
            }
        }
        ("apps/v1", "StatefulSet") => wanted(
            Api::<StatefulSet>::namespaced(client.clone(), namespace)
                .get_opt(&owner.name)
                .await?
                .and_then(|s| s.spec?.replicas),
        ),
        ("v1", "ReplicationController") => wanted(
            Api::<ReplicationController>::namespaced(client.clone(), namespace)
                .get_opt(&owner.name)
                .await?
                .and_then(|s| s.spec?.replicas),
        ),
        _ => None,
    })
}
