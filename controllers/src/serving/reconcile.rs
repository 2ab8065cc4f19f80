//! The serving reconcilers: each reads its resource and what it owns, applies the children the
//! pure builders describe (server-side apply, so a child changed by hand is put back), and
//! writes the status when it changed. [`spawn`] also starts the autotune controller.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Service};
use keelson_api_crds::conditions::{Update, transitions};
use keelson_api_crds::serving::{
    GPUGroup, ModelCache, ModelCachePhase, ModelDeployment, ModelDeploymentStatus,
};
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde_json::json;
use tokio::task::JoinHandle;

use super::settings::Settings;
use super::status::{CacheState, Observed};
use super::{benchmark, cache, gpu_group, preflight, status, workload};
use crate::api::{self, Namespaced, log};

/// Field manager of everything the serving controllers apply.
pub const MANAGER: &str = "keelson-serving";

/// What every reconciler needs.
struct Context {
    client: Client,
    recorder: Recorder,
    settings: Settings,
}

/// Why a reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// Starts the ModelDeployment, ModelCache and GPUGroup controllers; they run until their tasks
/// are aborted.
pub fn spawn(client: Client, settings: Settings) -> Vec<JoinHandle<()>> {
    let reporter = Reporter { controller: "keelson-serving".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let ctx = Arc::new(Context { client: client.clone(), recorder, settings });
    let all = watcher::Config::default();

    let deployments = Controller::new(Api::<ModelDeployment>::all(client.clone()), all.clone())
        .owns(Api::<Deployment>::all(client.clone()), all.clone())
        .owns(Api::<Service>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone());
    let models = deployments.store();
    let deployments = deployments
        // The benchmark client writes its results ConfigMap; it is adopted on the next reconcile.
        .watches(Api::<ConfigMap>::all(client.clone()), all.clone(), |cm| {
            let name = cm.name_any();
            let model = name.strip_suffix(benchmark::RESULTS_SUFFIX)?;
            Some(ObjectRef::new(model).within(&cm.namespace()?))
        })
        // A cache becoming Ready lets the models that use it go on.
        .watches(Api::<ModelCache>::all(client.clone()), all.clone(), move |mc| {
            let (name, namespace) = (mc.name_any(), mc.namespace());
            models
                .state()
                .into_iter()
                .filter(|md| md.namespace() == namespace)
                .filter(|md| md.spec.model_cache_ref.as_deref() == Some(name.as_str()))
                .map(|md| ObjectRef::from_obj(&*md))
                .collect::<Vec<_>>()
        })
        .run(reconcile_model, retry, ctx.clone())
        .for_each(log("modeldeployment"));

    let caches = Controller::new(Api::<ModelCache>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone())
        .owns(Api::<DaemonSet>::all(client.clone()), all.clone())
        .owns(Api::<PersistentVolumeClaim>::all(client.clone()), all.clone())
        .run(reconcile_cache, retry, ctx.clone())
        .for_each(log("modelcache"));

    let autotune = super::autotune::spawn(client.clone(), ctx.settings.clone());
    let groups = Controller::new(Api::<GPUGroup>::all(client.clone()), all.clone());
    let group_store = groups.store();
    let groups = groups
        .watches(Api::<ModelDeployment>::all(client), all, move |md| {
            let (name, namespace) = (md.name_any(), md.namespace());
            group_store
                .state()
                .into_iter()
                .filter(|g| g.namespace() == namespace)
                .filter(|g| g.spec.models.iter().any(|m| m.name == name))
                .map(|g| ObjectRef::from_obj(&*g))
                .collect::<Vec<_>>()
        })
        .run(reconcile_group, retry, ctx)
        .for_each(log("gpugroup"));

    vec![tokio::spawn(deployments), tokio::spawn(caches), tokio::spawn(groups), autotune]
}

fn retry<K>(_: Arc<K>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(2))
}

/// Server-side applies `child` as the serving field manager.
async fn apply<K: Namespaced + Serialize>(
    client: &Client,
    namespace: &str,
    child: &K,
) -> Result<K> {
    Ok(api::apply(client, MANAGER, namespace, child).await?)
}

async fn write_status<K: Namespaced, S: Serialize>(
    client: &Client,
    owner: &K,
    current: Option<&S>,
    status: &S,
) -> Result<()> {
    api::write_status(client, owner, current, status).await?;
    Ok(())
}

async fn record<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    owner: &K,
    warning: bool,
    reason: &str,
    note: String,
) {
    api::record(&ctx.recorder, owner, warning, reason, note).await;
}

async fn reconcile_model(md: Arc<ModelDeployment>, ctx: Arc<Context>) -> Result<Action> {
    if md.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &ctx.client;
    let namespace = md.namespace().unwrap_or_default();
    let (cache_state, cache) = match &md.spec.model_cache_ref {
        None => (CacheState::None, None),
        Some(name) => {
            let found =
                Api::<ModelCache>::namespaced(client.clone(), &namespace).get_opt(name).await?;
            let ready = found
                .as_ref()
                .and_then(|c| c.status.as_ref())
                .is_some_and(|s| s.phase == Some(ModelCachePhase::Ready));
            match found {
                Some(c) if ready => (CacheState::Ready, Some(c)),
                Some(_) => (CacheState::Waiting(format!("ModelCache {name:?} is not Ready")), None),
                None => (CacheState::Waiting(format!("ModelCache {name:?} does not exist")), None),
            }
        }
    };
    let mut deployment = None;
    let mut pods = Vec::new();
    if !matches!(cache_state, CacheState::Waiting(_)) {
        apply(client, &namespace, &workload::service(&md, &ctx.settings)).await?;
        let desired = workload::deployment(&md, cache.as_ref(), &ctx.settings);
        deployment = Some(apply(client, &namespace, &desired).await?);
        let selector = ListParams::default().labels(&workload::label_selector(&md));
        pods = Api::<Pod>::namespaced(client.clone(), &namespace).list(&selector).await?.items;
    }
    let results = Api::<ConfigMap>::namespaced(client.clone(), &namespace)
        .get_opt(&benchmark::results_name(&md))
        .await?;
    let measured = results.as_ref().and_then(benchmark::tokens_per_second);
    let known = md.status.as_ref().and_then(|s| s.tokens_per_second);
    let fresh = measured.filter(|tps| Some(*tps) != known);
    let observed = Observed {
        deployment: deployment.as_ref(),
        pods: &pods,
        benchmark: fresh.map(|tps| (tps, jiff::Timestamp::now())),
    };
    let now = jiff::Timestamp::now();
    let mut status = status::status(&md, &cache_state, &observed, now);
    if let Some(node) = preflight::target_node(&md, &pods) {
        let (clear, message) = node_preflight(client, &md, &node).await?;
        let reason = if clear { "NodeClear" } else { "NodeNotClear" };
        let update = Update { type_: NODE_CLEAR, status: clear.into(), reason, message: &message };
        status.observed.set(update, md.metadata.generation, now);
    }
    let ready = status.observed.is_true("Ready");
    if ready && measured.is_none() && known.is_none() {
        // Benchmark once the model serves (never before: it would measure nothing).
        apply(client, &namespace, &benchmark::benchmark_job(&md, &ctx.settings)).await?;
    }
    if let Some(cm) = &results {
        adopt(client, &md, cm).await?;
    }
    write_status(client, &*md, md.status.as_ref(), &status).await?;
    if let Some(tps) = fresh {
        record(&ctx, &*md, false, "BenchmarkComplete", format!("{tps:.1} tokens/s")).await;
    }
    record_transitions(&ctx, &md, &status).await;
    Ok(if ready || md.spec.replicas == 0 {
        Action::await_change()
    } else {
        Action::requeue(Duration::from_secs(10))
    })
}

/// Records an event for each change of a ModelDeployment's phase and conditions: a warning when
/// `Ready`, `CacheReady` or `NodeClear` turns false (except on purpose, scaled to zero).
async fn record_transitions(ctx: &Context, md: &ModelDeployment, new: &ModelDeploymentStatus) {
    let old = md.status.clone().unwrap_or_default();
    if let Some(phase) = new.phase.filter(|p| Some(*p) != old.phase) {
        let from = old.phase.map_or("none".to_owned(), |p| format!("{p:?}"));
        record(ctx, md, false, &format!("{phase:?}"), format!("phase {from} → {phase:?}")).await;
    }
    for condition in transitions(&old.observed.conditions, &new.observed.conditions) {
        let warning = condition.status == "False"
            && ["Ready", "CacheReady", NODE_CLEAR].contains(&condition.type_.as_str())
            && condition.reason != "ScaledToZero";
        let note = format!("{} is {}: {}", condition.type_, condition.status, condition.message);
        record(ctx, md, warning, &condition.reason, note).await;
    }
}

/// The condition reporting the GPU node preflight.
const NODE_CLEAR: &str = "NodeClear";

/// Looks at what stands in the model's way on `node`: whether it is clear, and what was found.
async fn node_preflight(
    client: &Client,
    md: &ModelDeployment,
    node: &str,
) -> Result<(bool, String)> {
    let labels = Api::<Node>::all(client.clone())
        .get_opt(node)
        .await?
        .and_then(|n| n.metadata.labels)
        .unwrap_or_default();
    let caches = Api::<ModelCache>::all(client.clone()).list(&ListParams::default()).await?.items;
    let on_node = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let pods = Api::<Pod>::all(client.clone()).list(&on_node).await?.items;
    let found = preflight::findings(md, node, &labels, &caches, &pods);
    Ok(if found.is_empty() {
        (true, format!("nothing stands in the way on {node}"))
    } else {
        (false, format!("on {node}: {}", found.join("; ")))
    })
}

/// Makes the benchmark results ConfigMap (written by the benchmark client) a child of the
/// ModelDeployment, so it goes with it.
async fn adopt(client: &Client, md: &ModelDeployment, cm: &ConfigMap) -> Result<()> {
    let uid = md.metadata.uid.clone().unwrap_or_default();
    if cm.owner_references().iter().any(|r| r.uid == uid) {
        return Ok(());
    }
    let owner = super::settings::owner_reference(workload::KIND, &md.metadata);
    let patch = json!({ "metadata": { "ownerReferences": [owner] } });
    Api::<ConfigMap>::namespaced(client.clone(), &md.namespace().unwrap_or_default())
        .patch(&cm.name_any(), &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

async fn reconcile_cache(mc: Arc<ModelCache>, ctx: Arc<Context>) -> Result<Action> {
    if mc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &ctx.client;
    let namespace = mc.namespace().unwrap_or_default();
    if let Some(claim) = cache::claim(&mc) {
        apply(client, &namespace, &claim).await?;
    }
    let job = match cache::download_job(&mc) {
        Some(job) => {
            let api = Api::<Job>::namespaced(client.clone(), &namespace);
            match api.get_opt(&cache::download_job_name(&mc)).await? {
                // A Job's pod template cannot change: the one that exists stands.
                Some(existing) => Some(existing),
                None => Some(apply(client, &namespace, &job).await?),
            }
        }
        None => None,
    };
    let syncer = match cache::syncer(&mc) {
        Some(ds) => Some(apply(client, &namespace, &ds).await?),
        None => None,
    };
    let now = jiff::Timestamp::now();
    let status = cache::status(&mc, job.as_ref(), syncer.as_ref(), now);
    let previous = mc.status.as_ref().and_then(|s| s.phase);
    if let Some((reason, note)) = cache::phase_event(previous, &status) {
        record(&ctx, &*mc, reason == "CacheFailed", reason, note).await;
    }
    write_status(client, &*mc, mc.status.as_ref(), &status).await?;
    let ready = status.phase == Some(ModelCachePhase::Ready);
    Ok(if ready { Action::await_change() } else { Action::requeue(Duration::from_secs(30)) })
}

async fn reconcile_group(group: Arc<GPUGroup>, ctx: Arc<Context>) -> Result<Action> {
    if group.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &ctx.client;
    let namespace = group.namespace().unwrap_or_default();
    let api = Api::<ModelDeployment>::namespaced(client.clone(), &namespace);
    let mut members = Vec::new();
    for entry in &group.spec.models {
        let deployment = api.get_opt(&entry.name).await?;
        members.push(gpu_group::Member::new(entry, deployment.as_ref()));
    }
    let decision = gpu_group::decide(&group, &members, jiff::Timestamp::now());
    // Swaps go through the ModelDeployments, never their Deployments.
    for (name, replicas) in &decision.scale {
        let patch = json!({ "spec": { "replicas": replicas } });
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    for (reason, note) in &decision.events {
        record(&ctx, &*group, false, reason, note.clone()).await;
    }
    write_status(client, &*group, group.status.as_ref(), &decision.status).await?;
    Ok(decision.requeue_after.map_or_else(Action::await_change, Action::requeue))
}
