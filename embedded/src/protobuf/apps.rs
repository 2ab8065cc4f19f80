//! Conversion of `apps/v1` `Deployment`, the one `apps` kind kubectl creates over protobuf.

use k8s_pb::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy, RollingUpdateDeployment,
};
use serde_json::{Map, Value};

use super::core::pod_template;
use super::fields::{Ctx, Object, join};
use super::meta::{int_or_string, label_selector, object_meta};

/// A `Deployment`; its status must be empty.
pub(crate) fn deployment(deployment: Deployment, ctx: &mut Ctx) -> Map<String, Value> {
    let Deployment { metadata, spec, status } = deployment;
    deployment_status(status.unwrap_or_default(), ctx, "status");
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", deployment_spec(spec.unwrap_or_default(), ctx, "spec"));
    out.put("status", Object::default());
    out.into()
}

/// A `DeploymentSpec`: replicas, selector, template and strategy.
fn deployment_spec(spec: DeploymentSpec, ctx: &mut Ctx, path: &str) -> Value {
    let DeploymentSpec {
        replicas,
        selector,
        template,
        strategy,
        min_ready_seconds,
        revision_history_limit,
        paused,
        progress_deadline_seconds,
    } = spec;
    ctx.unmapped_value(path, "minReadySeconds", &min_ready_seconds);
    ctx.unmapped_pointer(path, "revisionHistoryLimit", &revision_history_limit);
    ctx.unmapped_value(path, "paused", &paused);
    ctx.unmapped_pointer(path, "progressDeadlineSeconds", &progress_deadline_seconds);
    let mut out = Object::default();
    out.pointer("replicas", replicas);
    // A pointer without `omitempty` in Go: `null` when missing.
    out.put("selector", selector.map_or(Value::Null, label_selector));
    let template = template.unwrap_or_default();
    out.put("template", pod_template(template, ctx, &join(path, "template")));
    let strategy = strategy.unwrap_or_default();
    out.put("strategy", deployment_strategy(strategy, ctx, &join(path, "strategy")));
    out.into()
}

/// A `DeploymentStrategy` (`type`, `rollingUpdate`).
fn deployment_strategy(strategy: DeploymentStrategy, ctx: &mut Ctx, path: &str) -> Value {
    let DeploymentStrategy { r#type, rolling_update } = strategy;
    let mut out = Object::default();
    out.omitempty("type", r#type);
    if let Some(RollingUpdateDeployment { max_unavailable, max_surge }) = rolling_update {
        let path = join(path, "rollingUpdate");
        let mut rolling = Object::default();
        if let Some(value) = max_unavailable {
            let value = int_or_string(value, ctx, &join(&path, "maxUnavailable"));
            rolling.put("maxUnavailable", value);
        }
        if let Some(value) = max_surge {
            rolling.put("maxSurge", int_or_string(value, ctx, &join(&path, "maxSurge")));
        }
        out.put("rollingUpdate", rolling);
    }
    out.into()
}

/// Checks that a Deployment's status is empty: a client has no status to create.
fn deployment_status(status: DeploymentStatus, ctx: &mut Ctx, path: &str) {
    let DeploymentStatus {
        observed_generation,
        replicas,
        updated_replicas,
        ready_replicas,
        available_replicas,
        unavailable_replicas,
        terminating_replicas,
        conditions,
        collision_count,
    } = status;
    ctx.unmapped_value(path, "observedGeneration", &observed_generation);
    ctx.unmapped_value(path, "replicas", &replicas);
    ctx.unmapped_value(path, "updatedReplicas", &updated_replicas);
    ctx.unmapped_value(path, "readyReplicas", &ready_replicas);
    ctx.unmapped_value(path, "availableReplicas", &available_replicas);
    ctx.unmapped_value(path, "unavailableReplicas", &unavailable_replicas);
    ctx.unmapped_pointer(path, "terminatingReplicas", &terminating_replicas);
    ctx.unmapped_entries(path, "conditions", &conditions);
    ctx.unmapped_pointer(path, "collisionCount", &collision_count);
}
