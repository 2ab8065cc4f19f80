//! The workloads' reconcilers: ReplicaSets, ReplicationControllers, StatefulSets (and their
//! ControllerRevisions), Deployments, Jobs, CronJobs and DaemonSets.

use super::claims::claimed;
use super::*;
use crate::node::pods;

pub(super) async fn reconcile_replicaset(rs: Arc<ReplicaSet>, ctx: Arc<Context>) -> Result<Action> {
    if rs.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let own_uid = uid(&*rs);
    let pods = claimed(&ctx, &*rs, |pod| active_or_controlled(pod, &own_uid)).await?;
    let plan = replicaset::plan_replicaset(&rs, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*rs, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*rs, event);
    }
    write_status(&ctx.client, &*rs, rs.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

pub(super) async fn reconcile_replication_controller(
    rc: Arc<ReplicationController>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if rc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let own_uid = uid(&*rc);
    let pods = claimed(&ctx, &*rc, |pod| active_or_controlled(pod, &own_uid)).await?;
    let planned = replication::plan_replication_controller(&rc, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*rc, planned.plan.create, &planned.plan.delete).await?;
    write_status(&ctx.client, &*rc, rc.status.as_ref(), &planned.status).await?;
    Ok(after(planned.plan.requeue_after))
}

pub(super) async fn reconcile_statefulset(
    set: Arc<StatefulSet>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = set.namespace().unwrap_or_default();
    let pods = claimed(&ctx, &*set, |pod| statefulset::is_member(&set, pod)).await?;
    let mut revisions = Vec::new();
    if let Some(spec) = &set.spec {
        revisions = claimed(&ctx, &*set, |_| true).await?;
        let status = set.status.as_ref();
        let live: Vec<String> = pods
            .iter()
            .filter_map(|pod| pod.labels().get(daemonset::REVISION_HASH_LABEL).cloned())
            .chain(status.and_then(|s| s.current_revision.clone()))
            .chain(status.and_then(|s| s.update_revision.clone()))
            .collect();
        let owner = history::Owner {
            api_version: "apps/v1",
            kind: "StatefulSet",
            meta: &set.metadata,
            template: &spec.template,
            limit: spec.revision_history_limit.unwrap_or(10),
        };
        record_history(&ctx.client, &owner, &revisions, &live).await?;
    }
    // Pods below a rolling update's partition are made from the current revision's template.
    let current = set.status.as_ref().and_then(|s| s.current_revision.as_deref());
    let current_template = revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == current && current.is_some())
        .and_then(history::template_of);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let claims = claims_api.list(&ListParams::default()).await?.items;
    let now = jiff::Timestamp::now();
    let plan = statefulset::plan_statefulset(&set, &pods, &claims, current_template.as_ref(), now);
    // The plan's events line up with its actions: claims, then creations, then deletions.
    let mut events = plan.events.iter();
    let name = set.name_any();
    let failed = |reason: &str, what: String, error: &kube::Error| {
        let message = api_message(error);
        EventNote::warning(reason, format!("{what} in StatefulSet {name} failed error: {message}"))
    };
    for claim in &plan.create_claims {
        let event = events.next();
        match claims_api.create(&PostParams::default(), claim).await {
            Ok(_) => {
                if let Some(event) = event {
                    record(&ctx, &*set, event);
                }
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(error) => {
                let what = format!("create Claim {}", claim.name_any());
                record(&ctx, &*set, &failed("FailedCreate", what, &error));
                return Err(error.into());
            }
        }
    }
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    for pod in &plan.create {
        let event = events.next();
        if let Err(error) = pods_api.create(&PostParams::default(), pod).await {
            record(
                &ctx,
                &*set,
                &failed("FailedCreate", format!("create Pod {}", pod.name_any()), &error),
            );
            return Err(error.into());
        }
        if let Some(event) = event {
            record(&ctx, &*set, event);
        }
    }
    for (claim, owners) in &plan.claim_owners {
        let patch = Patch::Merge(json!({ "metadata": { "ownerReferences": owners } }));
        done_if_gone(claims_api.patch(claim, &PatchParams::default(), &patch).await)?;
    }
    for pod in &plan.delete {
        let event = events.next();
        match pods_api.delete(pod, &DeleteParams::default()).await {
            Ok(_) => {
                if let Some(event) = event {
                    record(&ctx, &*set, event);
                }
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                record(&ctx, &*set, &failed("FailedDelete", format!("delete Pod {pod}"), &error));
                return Err(error.into());
            }
        }
    }
    write_status(&ctx.client, &*set, set.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

pub(super) async fn reconcile_deployment(d: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action> {
    if d.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = d.namespace().unwrap_or_default();
    let sets = claimed(&ctx, &*d, |_| true).await?;
    let plan = deployment::plan_deployment(&d, &sets, jiff::Timestamp::now());
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Some(new) = &plan.create {
        api.create(&PostParams::default(), new).await?;
    }
    for change in &plan.changes {
        let patch = json!({
            "metadata": { "annotations": change.annotations },
            "spec": { "replicas": change.replicas },
        });
        api.patch(&change.name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    for name in &plan.delete {
        done_if_gone(api.delete(name, &DeleteParams::background()).await)?;
    }
    if let Some(revision) = &plan.revision {
        let patch = json!({ "metadata": { "annotations": { "deployment.kubernetes.io/revision": revision } } });
        Api::<Deployment>::namespaced(ctx.client.clone(), &namespace)
            .patch(&d.name_any(), &PatchParams::default(), &Patch::Merge(patch))
            .await?;
    }
    for event in &plan.events {
        record(&ctx, &*d, event);
    }
    write_status(&ctx.client, &*d, d.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

pub(super) async fn reconcile_job(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = job.namespace().unwrap_or_default();
    let pods = claimed(&ctx, &*job, |_: &Pod| true).await?;
    let plan = job::plan_job(&job, &pods, jiff::Timestamp::now(), ctx.job_backoff);
    apply_pods(&ctx, &*job, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*job, event);
    }
    write_status(&ctx.client, &*job, job.status.as_ref(), &plan.status).await?;
    if plan.delete_job {
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        Api::<Job>::namespaced(ctx.client.clone(), &namespace)
            .delete(&job.name_any(), &params)
            .await?;
        return Ok(Action::await_change());
    }
    Ok(after(plan.requeue_after))
}

pub(super) async fn reconcile_cronjob(cron_job: Arc<CronJob>, ctx: Arc<Context>) -> Result<Action> {
    if cron_job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = cron_job.namespace().unwrap_or_default();
    let jobs = controlled::<Job>(&ctx.client, &namespace, &uid(&*cron_job)).await?;
    let plan = cronjob::plan_cronjob(&cron_job, &jobs, jiff::Timestamp::now());
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    for name in &plan.delete {
        done_if_gone(api.delete(name, &DeleteParams::background()).await)?;
    }
    let mut events = plan.events.clone();
    if let Some(new) = &plan.create {
        match api.create(&PostParams::default(), new).await {
            Ok(_) => {}
            // A Job of that name that this CronJob does not control: that time is taken.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                events.retain(|event| event.reason != "SuccessfulCreate");
            }
            Err(error) => {
                let note = format!("Error creating job: {}", api_message(&error));
                record(&ctx, &*cron_job, &EventNote::warning("FailedCreate", note));
                return Err(error.into());
            }
        }
    }
    write_status(&ctx.client, &*cron_job, cron_job.status.as_ref(), &plan.status).await?;
    for event in &events {
        record(&ctx, &*cron_job, event);
    }
    Ok(after(plan.requeue_after))
}

pub(super) async fn reconcile_daemonset(ds: Arc<DaemonSet>, ctx: Arc<Context>) -> Result<Action> {
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let pods = claimed(&ctx, &*ds, |_: &Pod| true).await?;
    if let Some(spec) = &ds.spec {
        let revisions = claimed(&ctx, &*ds, |_| true).await?;
        let live: Vec<String> = pods
            .iter()
            .filter_map(|pod| pod.labels().get(daemonset::REVISION_HASH_LABEL))
            .map(|hash| history::revision_name(&ds.metadata, hash))
            .collect();
        let owner = history::Owner {
            api_version: "apps/v1",
            kind: "DaemonSet",
            meta: &ds.metadata,
            template: &spec.template,
            limit: spec.revision_history_limit.unwrap_or(10),
        };
        record_history(&ctx.client, &owner, &revisions, &live).await?;
    }
    let nodes = Api::<Node>::all(ctx.client.clone()).list(&ListParams::default()).await?.items;
    let plan = daemonset::plan_daemonset(&ds, &nodes, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*ds, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*ds, event);
    }
    write_status(&ctx.client, &*ds, ds.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

/// Whether a pod counts for a ReplicaSet or ReplicationController that controls it or not: as
/// upstream, they adopt active pods only.
fn active_or_controlled(pod: &Pod, uid: &str) -> bool {
    pods::is_active(pod) || is_controlled_by(&pod.metadata, uid)
}

/// Brings a workload's ControllerRevisions, `existing` (claimed), up to date with its template
/// (see `history`).
async fn record_history(
    client: &Client,
    owner: &history::Owner<'_>,
    existing: &[ControllerRevision],
    live: &[String],
) -> Result<()> {
    let namespace = owner.meta.namespace.clone().unwrap_or_default();
    let plan = history::plan_history(owner, existing, live);
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), &namespace);
    if let Some(revision) = &plan.create {
        done_if_exists(api.create(&PostParams::default(), revision).await)?;
    }
    if let Some((name, number)) = &plan.renumber {
        let patch = Patch::Merge(json!({ "revision": number }));
        api.patch(name, &PatchParams::default(), &patch).await?;
    }
    for name in &plan.delete {
        done_if_gone(api.delete(name, &DeleteParams::default()).await)?;
    }
    Ok(())
}
