//! The reconcilers: list an object's children (strongly consistent reads, so no expectations are
//! needed), ask the pure planner what to do, apply it, write the status, record events.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Endpoints, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector as MetaSelector, OwnerReference,
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::task::JoinHandle;

use super::events::EventLog;
use super::plan::{PlanEvent, merge_patch};
use super::{
    cronjob, daemonset, deployment, endpoints, history, job, pvc, replicaset, replication,
    statefulset,
};
use crate::node::pods::is_controlled_by;
use crate::selectors::LabelSelector;

/// What every reconciler needs.
pub struct Context {
    /// Client of the embedded API server.
    pub client: Client,
    /// Records events as the workload controllers.
    pub events: EventLog,
    /// Base of a Job's retry back-off.
    pub job_backoff: Duration,
}

/// Why a reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("invalid selector: {0}")]
    Selector(String),
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// Starts every workload controller; they run until their tasks are aborted.
pub fn spawn(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let client = ctx.client.clone();
    let all = watcher::Config::default();
    let mut tasks = Vec::new();

    let rs = Controller::new(Api::<ReplicaSet>::all(client.clone()), all.clone())
        .owns(Api::<Pod>::all(client.clone()), all.clone())
        .run(reconcile_replicaset, retry, ctx.clone())
        .for_each(run("replicaset"));
    tasks.push(tokio::spawn(rs));

    let rc = Controller::new(Api::<ReplicationController>::all(client.clone()), all.clone())
        .owns(Api::<Pod>::all(client.clone()), all.clone())
        .run(reconcile_replication_controller, retry, ctx.clone())
        .for_each(run("replicationcontroller"));
    tasks.push(tokio::spawn(rc));

    let sets = Controller::new(Api::<StatefulSet>::all(client.clone()), all.clone())
        .owns(Api::<Pod>::all(client.clone()), all.clone())
        .run(reconcile_statefulset, retry, ctx.clone())
        .for_each(run("statefulset"));
    tasks.push(tokio::spawn(sets));

    let deploy = Controller::new(Api::<Deployment>::all(client.clone()), all.clone())
        .owns(Api::<ReplicaSet>::all(client.clone()), all.clone())
        .run(reconcile_deployment, retry, ctx.clone())
        .for_each(run("deployment"));
    tasks.push(tokio::spawn(deploy));

    let jobs = Controller::new(Api::<Job>::all(client.clone()), all.clone())
        .owns(Api::<Pod>::all(client.clone()), all.clone())
        .run(reconcile_job, retry, ctx.clone())
        .for_each(run("job"));
    tasks.push(tokio::spawn(jobs));

    let cron_jobs = Controller::new(Api::<CronJob>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone())
        .run(reconcile_cronjob, retry, ctx.clone())
        .for_each(run("cronjob"));
    tasks.push(tokio::spawn(cron_jobs));

    let ds = Controller::new(Api::<DaemonSet>::all(client.clone()), all.clone())
        .owns(Api::<Pod>::all(client.clone()), all.clone());
    let sets = ds.store();
    let ds = ds
        .watches(Api::<Node>::all(client.clone()), all.clone(), move |_| {
            sets.state().into_iter().map(|d| ObjectRef::from_obj(&*d)).collect::<Vec<_>>()
        })
        .run(reconcile_daemonset, retry, ctx.clone())
        .for_each(run("daemonset"));
    tasks.push(tokio::spawn(ds));

    let services = Controller::new(Api::<Service>::all(client.clone()), all.clone())
        .owns(Api::<Endpoints>::all(client.clone()), all.clone())
        .owns(Api::<EndpointSlice>::all(client.clone()), all.clone());
    let selecting = services.store();
    let services = services
        .watches(Api::<Pod>::all(client.clone()), all.clone(), move |pod| {
            selecting
                .state()
                .into_iter()
                .filter(|service| service.metadata.namespace == pod.metadata.namespace)
                .filter(|service| {
                    let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
                    selector.is_some_and(|s| !s.is_empty() && endpoints::selects(s, &pod))
                })
                .map(|service| ObjectRef::from_obj(&*service))
                .collect::<Vec<_>>()
        })
        .run(reconcile_service, retry, ctx.clone())
        .for_each(run("endpoints"));
    tasks.push(tokio::spawn(services));

    let claims = Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), all.clone())
        .run(reconcile_claim, retry, ctx.clone())
        .for_each(run("persistentvolumeclaim"));
    tasks.push(tokio::spawn(claims));

    // A volume's phase follows its claim, so a claim's change (its deletion too) wakes it.
    let volumes = Controller::new(Api::<PersistentVolume>::all(client.clone()), all.clone())
        .watches(Api::<PersistentVolumeClaim>::all(client), all, |claim| {
            claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.clone())
                .filter(|name| !name.is_empty())
                .map(|name| ObjectRef::<PersistentVolume>::new(&name))
        })
        .run(reconcile_volume, retry, ctx)
        .for_each(run("persistentvolume"));
    tasks.push(tokio::spawn(volumes));
    tasks
}

/// Logs the reconciles that failed (they are retried).
fn run<T, E: std::fmt::Display>(
    name: &'static str,
) -> impl FnMut(std::result::Result<T, E>) -> futures::future::Ready<()> {
    move |result| {
        if let Err(error) = result {
            tracing::debug!(controller = name, %error, "reconcile failed");
        }
        futures::future::ready(())
    }
}

fn retry<K>(_: Arc<K>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

fn after(requeue: Option<Duration>) -> Action {
    requeue.map_or_else(Action::await_change, Action::requeue)
}

/// The children of `owner_uid` in `namespace` matching `selector`.
async fn controlled<K>(
    client: &Client,
    namespace: &str,
    selector: Option<&MetaSelector>,
    owner_uid: &str,
) -> Result<Vec<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let mut params = ListParams::default();
    if let Some(selector) = selector {
        let selector =
            LabelSelector::from_metav1(selector).map_err(|e| Error::Selector(e.to_string()))?;
        params = params.labels(&selector.to_string());
    }
    let list = api.list(&params).await?;
    Ok(list.items.into_iter().filter(|child| is_controlled_by(child.meta(), owner_uid)).collect())
}

/// Creates pods and deletes pods by name, recording each as upstream controllers do.
async fn apply_pods<K>(ctx: &Context, owner: &K, create: Vec<Pod>, delete: &[String]) -> Result<()>
where
    K: Resource<DynamicType = ()>,
{
    let namespace = owner.meta().namespace.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    for pod in create {
        let created = match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => created,
            Err(error) => {
                // As upstream, the refusal is shown on the owner (a missing ServiceAccount...).
                let note = format!("Error creating: {}", api_message(&error));
                record(ctx, owner, &PlanEvent::warning("FailedCreate", note)).await;
                return Err(error.into());
            }
        };
        let note = format!("Created pod: {}", created.name_any());
        record(ctx, owner, &PlanEvent::normal("SuccessfulCreate", note)).await;
    }
    for name in delete {
        match pods.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                let note = format!("Deleted pod: {name}");
                record(ctx, owner, &PlanEvent::normal("SuccessfulDelete", note)).await;
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes `status` through `/status` when it differs from `current`.
async fn write_status<K, S>(
    client: &Client,
    owner: &K,
    current: Option<&S>,
    status: &S,
) -> Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(());
    }
    let to_value = |status| serde_json::to_value(status).unwrap_or_default();
    let patch = merge_patch(&current.map(to_value).unwrap_or_default(), &to_value(status));
    let api: Api<K> = Api::namespaced(client.clone(), &owner.namespace().unwrap_or_default());
    api.patch_status(
        &owner.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": patch })),
    )
    .await?;
    Ok(())
}

/// What the API server said, for an event: a refusal's message, else the error.
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

async fn record<K: Resource<DynamicType = ()>>(ctx: &Context, owner: &K, event: &PlanEvent) {
    // Named as upstream's controllers are: `replicaset-controller`, `deployment-controller`...
    let component = match K::kind(&()).to_ascii_lowercase().as_str() {
        "replicationcontroller" => "replication-controller".to_owned(),
        kind => format!("{kind}-controller"),
    };
    if let Err(error) = ctx.events.record(&component, &owner.object_ref(&()), event).await {
        tracing::debug!(%error, "recording an event failed");
    }
}

async fn reconcile_replicaset(rs: Arc<ReplicaSet>, ctx: Arc<Context>) -> Result<Action> {
    if rs.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = rs.namespace().unwrap_or_default();
    let selector = rs.spec.as_ref().map(|s| &s.selector);
    let pods = controlled::<Pod>(&ctx.client, &namespace, selector, &uid(&*rs)).await?;
    let plan = replicaset::plan_replicaset(&rs, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*rs, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*rs, event).await;
    }
    write_status(&ctx.client, &*rs, rs.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

async fn reconcile_replication_controller(
    rc: Arc<ReplicationController>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if rc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = rc.namespace().unwrap_or_default();
    let selector = MetaSelector {
        match_labels: rc.spec.as_ref().and_then(|s| s.selector.clone()),
        match_expressions: None,
    };
    let pods = controlled::<Pod>(&ctx.client, &namespace, Some(&selector), &uid(&*rc)).await?;
    let planned = replication::plan_replication_controller(&rc, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*rc, planned.plan.create, &planned.plan.delete).await?;
    write_status(&ctx.client, &*rc, rc.status.as_ref(), &planned.status).await?;
    Ok(after(planned.plan.requeue_after))
}

async fn reconcile_statefulset(set: Arc<StatefulSet>, ctx: Arc<Context>) -> Result<Action> {
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = set.namespace().unwrap_or_default();
    let selector = set.spec.as_ref().map(|s| &s.selector);
    let pods = controlled::<Pod>(&ctx.client, &namespace, selector, &uid(&*set)).await?;
    if let Some(spec) = &set.spec {
        let status = set.status.as_ref();
        let live = pods
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
        record_history(&ctx.client, &owner, live).await?;
    }
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let claims = claims_api.list(&ListParams::default()).await?.items;
    let plan = statefulset::plan_statefulset(&set, &pods, &claims, jiff::Timestamp::now());
    // The plan's events line up with its actions: claims, then creations, then deletions.
    let mut events = plan.events.iter();
    let name = set.name_any();
    let failed = |what: String, error: &kube::Error| {
        let message = api_message(error);
        PlanEvent::warning(
            if what.starts_with("delete") { "FailedDelete" } else { "FailedCreate" },
            format!("{what} in StatefulSet {name} failed error: {message}"),
        )
    };
    for claim in &plan.create_claims {
        let event = events.next();
        match claims_api.create(&PostParams::default(), claim).await {
            Ok(_) => {
                if let Some(event) = event {
                    record(&ctx, &*set, event).await;
                }
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(error) => {
                let what = format!("create Claim {}", claim.name_any());
                record(&ctx, &*set, &failed(what, &error)).await;
                return Err(error.into());
            }
        }
    }
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    for pod in &plan.create {
        let event = events.next();
        if let Err(error) = pods_api.create(&PostParams::default(), pod).await {
            record(&ctx, &*set, &failed(format!("create Pod {}", pod.name_any()), &error)).await;
            return Err(error.into());
        }
        if let Some(event) = event {
            record(&ctx, &*set, event).await;
        }
    }
    for pod in &plan.delete {
        let event = events.next();
        match pods_api.delete(pod, &DeleteParams::default()).await {
            Ok(_) => {
                if let Some(event) = event {
                    record(&ctx, &*set, event).await;
                }
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                record(&ctx, &*set, &failed(format!("delete Pod {pod}"), &error)).await;
                return Err(error.into());
            }
        }
    }
    write_status(&ctx.client, &*set, set.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

async fn reconcile_deployment(d: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action> {
    if d.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = d.namespace().unwrap_or_default();
    let selector = d.spec.as_ref().map(|s| &s.selector);
    let sets = controlled::<ReplicaSet>(&ctx.client, &namespace, selector, &uid(&*d)).await?;
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
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(revision) = &plan.revision {
        let patch = json!({ "metadata": { "annotations": { "deployment.kubernetes.io/revision": revision } } });
        Api::<Deployment>::namespaced(ctx.client.clone(), &namespace)
            .patch(&d.name_any(), &PatchParams::default(), &Patch::Merge(patch))
            .await?;
    }
    for event in &plan.events {
        record(&ctx, &*d, event).await;
    }
    write_status(&ctx.client, &*d, d.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

async fn reconcile_job(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action> {
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = job.namespace().unwrap_or_default();
    let selector = job.spec.as_ref().and_then(|s| s.selector.as_ref());
    let pods = controlled::<Pod>(&ctx.client, &namespace, selector, &uid(&*job)).await?;
    let plan = job::plan_job(&job, &pods, jiff::Timestamp::now(), ctx.job_backoff);
    apply_pods(&ctx, &*job, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*job, event).await;
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

async fn reconcile_cronjob(cron_job: Arc<CronJob>, ctx: Arc<Context>) -> Result<Action> {
    if cron_job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = cron_job.namespace().unwrap_or_default();
    let jobs = controlled::<Job>(&ctx.client, &namespace, None, &uid(&*cron_job)).await?;
    let plan = cronjob::plan_cronjob(&cron_job, &jobs, jiff::Timestamp::now());
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    for name in &plan.delete {
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
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
                record(&ctx, &*cron_job, &PlanEvent::warning("FailedCreate", note)).await;
                return Err(error.into());
            }
        }
    }
    write_status(&ctx.client, &*cron_job, cron_job.status.as_ref(), &plan.status).await?;
    for event in &events {
        record(&ctx, &*cron_job, event).await;
    }
    Ok(after(plan.requeue_after))
}

async fn reconcile_daemonset(ds: Arc<DaemonSet>, ctx: Arc<Context>) -> Result<Action> {
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = ds.namespace().unwrap_or_default();
    let selector = ds.spec.as_ref().map(|s| &s.selector);
    let pods = controlled::<Pod>(&ctx.client, &namespace, selector, &uid(&*ds)).await?;
    if let Some(spec) = &ds.spec {
        let live = pods
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
        record_history(&ctx.client, &owner, live).await?;
    }
    let nodes = Api::<Node>::all(ctx.client.clone()).list(&ListParams::default()).await?.items;
    let plan = daemonset::plan_daemonset(&ds, &nodes, &pods, jiff::Timestamp::now());
    apply_pods(&ctx, &*ds, plan.create, &plan.delete).await?;
    for event in &plan.events {
        record(&ctx, &*ds, event).await;
    }
    write_status(&ctx.client, &*ds, ds.status.as_ref(), &plan.status).await?;
    Ok(after(plan.requeue_after))
}

/// Keeps a selecting Service's Endpoints and EndpointSlices in step with its pods. They are
/// owned by the Service, so that they go with it (upstream's controllers delete them
/// themselves).
async fn reconcile_service(service: Arc<Service>, ctx: Arc<Context>) -> Result<Action> {
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
        match slices_api.delete(&stale.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
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

/// Brings a workload's ControllerRevisions up to date with its template (see `history`).
async fn record_history(
    client: &Client,
    owner: &history::Owner<'_>,
    live: Vec<String>,
) -> Result<()> {
    let namespace = owner.meta.namespace.clone().unwrap_or_default();
    let owner_uid = owner.meta.uid.clone().unwrap_or_default();
    let existing = controlled::<ControllerRevision>(client, &namespace, None, &owner_uid).await?;
    let plan = history::plan_history(owner, &existing, &live);
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), &namespace);
    if let Some(revision) = &plan.create {
        match api.create(&PostParams::default(), revision).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    if let Some((name, number)) = &plan.renumber {
        let patch = Patch::Merge(json!({ "revision": number }));
        api.patch(name, &PatchParams::default(), &patch).await?;
    }
    for name in &plan.delete {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

async fn reconcile_claim(claim: Arc<PersistentVolumeClaim>, ctx: Arc<Context>) -> Result<Action> {
    if claim.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    let named = claim.spec.as_ref().and_then(|s| s.volume_name.clone()).filter(|n| !n.is_empty());
    let uid = uid(&*claim);
    let volume = volumes.get_opt(&named.unwrap_or_else(|| format!("pvc-{uid}"))).await?;
    let Some(binding) = pvc::bind(&claim, volume.as_ref()) else {
        return Ok(Action::await_change());
    };
    if let Some(new) = &binding.provision {
        match volumes.create(&PostParams::default(), new).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(reference) = &binding.claim_ref {
        let patch = json!({ "spec": { "claimRef": reference } });
        volumes.patch(&binding.volume_name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    let api: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    let name = claim.name_any();
    let spec = json!({ "spec": { "volumeName": binding.volume_name } });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(spec)).await?;
    let status = json!({ "status": binding.status });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status)).await?;
    Ok(Action::await_change())
}

async fn reconcile_volume(volume: Arc<PersistentVolume>, ctx: Arc<Context>) -> Result<Action> {
    let reference = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let claim = match reference.and_then(|r| Some((r.namespace.as_deref()?, r.name.as_deref()?))) {
        Some((namespace, name)) => {
            Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace)
                .get_opt(name)
                .await?
        }
        None => None,
    };
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match pvc::volume_step(&volume, claim.as_ref()) {
        pvc::VolumeStep::Phase(phase) => {
            let status = json!({ "status": { "phase": phase } });
            api.patch_status(&volume.name_any(), &PatchParams::default(), &Patch::Merge(status))
                .await?;
        }
        pvc::VolumeStep::Delete => {
            match api.delete(&volume.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        pvc::VolumeStep::Nothing => {}
    }
    Ok(Action::await_change())
}

fn uid<K: Resource>(object: &K) -> String {
    object.meta().uid.clone().unwrap_or_default()
}
