//! The reconciler of HorizontalPodAutoscalers (upstream's HPA controller): reads the target's
//! `scale` subresource and its pods' readings from `metrics.k8s.io`, asks the planner, writes
//! the new replicas and the status, every [`SYNC`].

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::api::{DynamicObject, ObjectList};
use kube::core::GroupVersionKind;

use super::*;
use crate::catalog::metrics::PodMetrics;
use crate::node::quantity::{add, milli_values};
use crate::node::workloads::autoscaler::{self, PodSample};

/// How often an autoscaler reads its pods again (upstream's default sync period).
const SYNC: Duration = Duration::from_secs(15);

/// How long a target kind's resolution through discovery is used before it is asked again, as
/// clients cache discovery; a failed read of a target's scale asks again at once.
const TARGET_KIND_TTL: Duration = Duration::from_secs(300);

/// One pass of an autoscaler.
pub(super) async fn reconcile_autoscaler(
    hpa: Arc<HorizontalPodAutoscaler>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if hpa.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = hpa.namespace().unwrap_or_default();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(ctx.client.clone(), &namespace);
    let target = hpa.spec.as_ref().map(|s| s.scale_target_ref.clone()).unwrap_or_default();
    let now = Timestamp::now();
    let scales = match target_api(&ctx, &namespace, &target).await {
        Ok(api) => api,
        Err(why) => {
            let status = autoscaler::unable(&hpa, "FailedGetScale", &why, now);
            write_status(&hpas, &hpa, status).await?;
            return Ok(Action::requeue(SYNC));
        }
    };
    let scale = match scales.get_scale(&target.name).await {
        Ok(scale) => scale,
        Err(error) => {
            // The kind may be gone or served otherwise now.
            ctx.scale_targets
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&target_kind(&target));
            let why = format!(
                "the HPA controller was unable to get the target's current scale: {}",
                api_message(&error)
            );
            let status = autoscaler::unable(&hpa, "FailedGetScale", &why, now);
            write_status(&hpas, &hpa, status).await?;
            return Ok(Action::requeue(SYNC));
        }
    };
    let current = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
    let selector = scale.status.and_then(|s| s.selector).unwrap_or_default();
    let samples = samples(&ctx.client, &namespace, &selector).await;
    let decision = {
        let mut histories = ctx.autoscaler_histories.lock().unwrap_or_else(|e| e.into_inner());
        autoscaler::forget_stale(&mut histories, now);
        let history = histories.entry(uid(&*hpa)).or_default();
        autoscaler::decide(&hpa, current, samples, history, now)
    };
    let mut status = decision.status;
    if decision.replicas != current {
        let patch = json!({ "spec": { "replicas": decision.replicas } });
        match scales.patch_scale(&target.name, &PatchParams::default(), &Patch::Merge(patch)).await
        {
            Ok(_) => {
                let histories = &ctx.autoscaler_histories;
                if let Some(history) =
                    histories.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&uid(&*hpa))
                {
                    history.rescaled(current, decision.replicas, now);
                }
                if let Some(event) = &decision.event {
                    record(&ctx, &*hpa, event);
                }
            }
            Err(error) => {
                let why = format!(
                    "the HPA controller was unable to update the target scale: {}",
                    api_message(&error)
                );
                status = autoscaler::unable(&hpa, "FailedUpdateScale", &why, now);
            }
        }
    }
    write_status(&hpas, &hpa, status).await?;
    Ok(Action::requeue(SYNC))
}

/// The kind an autoscaler targets.
fn target_kind(
    target: &k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference,
) -> GroupVersionKind {
    let api_version = target.api_version.as_deref().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, &target.kind)
}

/// The API of the autoscaler's target kind (any kind with a `scale` subresource), or why there
/// is none; the kind is resolved through discovery at most every [`TARGET_KIND_TTL`].
async fn target_api(
    ctx: &Context,
    namespace: &str,
    target: &k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference,
) -> std::result::Result<Api<DynamicObject>, String> {
    let kind = target_kind(target);
    let cached = || {
        let known = ctx.scale_targets.lock().unwrap_or_else(|e| e.into_inner());
        let (resource, at) = known.get(&kind)?;
        (at.elapsed() < TARGET_KIND_TTL).then(|| resource.clone())
    };
    let resource = match cached() {
        Some(resource) => resource,
        None => {
            let (resource, _) =
                kube::discovery::pinned_kind(&ctx.client, &kind).await.map_err(|error| {
                    let api_version = target.api_version.as_deref().unwrap_or("v1");
                    format!("the HPA controller was unable to get the target's current scale: no {api_version} {} is served: {error}", target.kind)
                })?;
            let mut known = ctx.scale_targets.lock().unwrap_or_else(|e| e.into_inner());
            known.insert(kind, (resource.clone(), Instant::now()));
            resource
        }
    };
    Ok(Api::namespaced_with(ctx.client.clone(), namespace, &resource))
}

/// The selected pods that count (neither finished nor being deleted), with what they request
/// and, where `metrics.k8s.io` has a reading, use; `Err` when the readings cannot be had.
async fn samples(
    client: &Client,
    namespace: &str,
    selector: &str,
) -> std::result::Result<Vec<PodSample>, String> {
    let params = ListParams::default().labels(selector);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
        .map_err(|e| format!("unable to get pods: {}", api_message(&e)))?;
    let path = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods");
    let request = kube::core::Request::new(path)
        .list(&params)
        .map_err(|e| format!("unable to ask for pod metrics: {e}"))?;
    let readings: ObjectList<PodMetrics> = client.request(request).await.map_err(|e| {
        format!("unable to get metrics for resources: unable to fetch metrics from resource metrics API: {}", api_message(&e))
    })?;
    let mut usage: BTreeMap<String, BTreeMap<String, i128>> = BTreeMap::new();
    for reading in readings.items {
        let summed = usage.entry(reading.metadata.name.unwrap_or_default()).or_default();
        for container in &reading.containers {
            add(summed, &milli_values(&container.usage));
        }
    }
    Ok(pods
        .items
        .iter()
        .filter(|pod| crate::node::pods::is_active(pod))
        .map(|pod| {
            let mut requests = BTreeMap::new();
            for container in pod.spec.iter().flat_map(|s| &s.containers) {
                let asked = container.resources.as_ref().and_then(|r| r.requests.as_ref());
                add(&mut requests, &asked.map(milli_values).unwrap_or_default());
            }
            let name = pod.name_any();
            PodSample { usage: usage.get(&name).cloned(), name, requests }
        })
        .collect())
}

/// Writes the autoscaler's status when it changed.
async fn write_status(
    api: &Api<HorizontalPodAutoscaler>,
    hpa: &HorizontalPodAutoscaler,
    status: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus,
) -> Result<()> {
    if hpa.status.as_ref() != Some(&status) {
        let patch = json!({ "status": status });
        api.patch_status(&hpa.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    Ok(())
}
