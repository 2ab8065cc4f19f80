//! The reconcilers: list an object's children (strongly consistent reads, so no expectations are
//! needed), ask the pure planner what to do, apply it, write the status, record events. Those
//! of the workloads are in `workloads`, of Services' endpoints in `services`, of volumes and
//! their claims in `volumes`, of disruption budgets in `budgets`, of autoscalers in
//! `autoscalers`; the adoption and release of children in `claims`; what they share is here.

mod autoscalers;
mod budgets;
mod claims;
mod services;
mod volumes;
mod workloads;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    Endpoints, EventSource, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    ReplicationController, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
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

use super::plan::merge_patch;
use super::{
    autoscaler, cronjob, daemonset, deployment, disruption, endpoints, history, job, pvc,
    replicaset, replication, statefulset,
};
use crate::node::events::{EventLog, EventNote};
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
    /// Each autoscaler's recent recommendations and rescales (by uid), for its stabilization
    /// windows and scaling policies.
    pub autoscaler_histories:
        std::sync::Mutex<std::collections::HashMap<String, autoscaler::History>>,
    /// The resources autoscalers' target kinds resolved to through discovery, and when.
    pub scale_targets: std::sync::Mutex<
        std::collections::HashMap<kube::core::GroupVersionKind, (kube::core::ApiResource, Instant)>,
    >,
    /// Children seen leaving their controllers' selectors, for the controllers to release.
    pub strays: Arc<super::claim::Strays>,
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

    let rs = claiming::<ReplicaSet, Pod>(&ctx)
        .run(workloads::reconcile_replicaset, retry, ctx.clone())
        .for_each(run("replicaset"));
    tasks.push(tokio::spawn(rs));

    let rc = claiming::<ReplicationController, Pod>(&ctx)
        .run(workloads::reconcile_replication_controller, retry, ctx.clone())
        .for_each(run("replicationcontroller"));
    tasks.push(tokio::spawn(rc));

    let sets = claiming::<StatefulSet, Pod>(&ctx)
        .run(workloads::reconcile_statefulset, retry, ctx.clone())
        .for_each(run("statefulset"));
    tasks.push(tokio::spawn(sets));

    let deploy = claiming::<Deployment, ReplicaSet>(&ctx)
        .run(workloads::reconcile_deployment, retry, ctx.clone())
        .for_each(run("deployment"));
    tasks.push(tokio::spawn(deploy));

    let jobs = claiming::<Job, Pod>(&ctx)
        .run(workloads::reconcile_job, retry, ctx.clone())
        .for_each(run("job"));
    tasks.push(tokio::spawn(jobs));

    let cron_jobs = Controller::new(Api::<CronJob>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone())
        .run(workloads::reconcile_cronjob, retry, ctx.clone())
        .for_each(run("cronjob"));
    tasks.push(tokio::spawn(cron_jobs));

    let ds = claiming::<DaemonSet, Pod>(&ctx);
    let sets = ds.store();
    let ds = ds
        .watches(Api::<Node>::all(client.clone()), all.clone(), move |_| {
            sets.state().into_iter().map(|d| ObjectRef::from_obj(&*d)).collect::<Vec<_>>()
        })
        .run(workloads::reconcile_daemonset, retry, ctx.clone())
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
        .run(services::reconcile_service, retry, ctx.clone())
        .for_each(run("endpoints"));
    tasks.push(tokio::spawn(services));

    let autoscalers = Controller::new(
        Api::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>::all(client.clone()),
        all.clone(),
    )
    .run(autoscalers::reconcile_autoscaler, retry, ctx.clone())
    .for_each(run("horizontalpodautoscaler"));
    tasks.push(tokio::spawn(autoscalers));

    // A pod's change wakes the budgets of its namespace that select it.
    let budgets = Controller::new(Api::<PodDisruptionBudget>::all(client.clone()), all.clone());
    let selecting = budgets.store();
    let budgets = budgets
        .watches(Api::<Pod>::all(client.clone()), all.clone(), move |pod| {
            selecting
                .state()
                .into_iter()
                .filter(|budget| disruption::selects(budget, &pod))
                .map(|budget| ObjectRef::from_obj(&*budget))
                .collect::<Vec<_>>()
        })
        .run(budgets::reconcile_budget, retry, ctx.clone())
        .for_each(run("disruption"));
    tasks.push(tokio::spawn(budgets));

    let claims = Controller::new(Api::<PersistentVolumeClaim>::all(client.clone()), all.clone())
        .run(volumes::reconcile_claim, retry, ctx.clone())
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
        .run(volumes::reconcile_volume, retry, ctx)
        .for_each(run("persistentvolume"));
    tasks.push(tokio::spawn(volumes));
    tasks
}

/// A controller of `K` woken by changes of its children of kind `C`: those it owns, and orphans
/// it may adopt (see `claims::wakes`).
fn claiming<K, C>(ctx: &Context) -> Controller<K>
where
    K: claims::Selecting,
    C: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let config = watcher::Config::default();
    let controller = Controller::new(Api::<K>::all(ctx.client.clone()), config.clone());
    let wakes = claims::wakes(controller.store(), ctx.strays.clone());
    controller.watches(Api::<C>::all(ctx.client.clone()), config, wakes)
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

/// The children of `owner_uid` in `namespace`, for a controller that adopts none.
async fn controlled<K>(client: &Client, namespace: &str, owner_uid: &str) -> Result<Vec<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let list = api.list(&ListParams::default()).await?;
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
                record(ctx, owner, &EventNote::warning("FailedCreate", note));
                return Err(error.into());
            }
        };
        let note = format!("Created pod: {}", created.name_any());
        record(ctx, owner, &EventNote::normal("SuccessfulCreate", note));
    }
    for name in delete {
        match pods.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                let note = format!("Deleted pod: {name}");
                record(ctx, owner, &EventNote::normal("SuccessfulDelete", note));
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

/// A delete whose object is gone already (`404`) did what it was for.
fn done_if_gone<T>(result: kube::Result<T>) -> Result<()> {
    tolerate(result, 404)
}

/// A create whose object exists already (`409`), made by an earlier reconcile, did what it was
/// for.
fn done_if_exists<T>(result: kube::Result<T>) -> Result<()> {
    tolerate(result, 409)
}

fn tolerate<T>(result: kube::Result<T>, code: u16) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == code => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What the API server said, for an event: a refusal's message, else the error.
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

fn record<K: Resource<DynamicType = ()>>(ctx: &Context, owner: &K, event: &EventNote) {
    // Named as upstream's controllers are: `replicaset-controller`, `deployment-controller`...
    let component = match K::kind(&()).to_ascii_lowercase().as_str() {
        "replicationcontroller" => "replication-controller".to_owned(),
        "horizontalpodautoscaler" => "horizontal-pod-autoscaler".to_owned(),
        kind => format!("{kind}-controller"),
    };
    let source = EventSource { component: Some(component), host: None };
    ctx.events.record(&source, &owner.object_ref(&()), event);
}

fn uid<K: Resource>(object: &K) -> String {
    object.meta().uid.clone().unwrap_or_default()
}
