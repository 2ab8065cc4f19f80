//! Conversion of the `autoscaling/v1` HorizontalPodAutoscaler `kubectl autoscale` creates over
//! protobuf.

use k8s_pb::api::autoscaling::v1::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
    HorizontalPodAutoscalerStatus,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object};
use super::meta::object_meta;

/// A `HorizontalPodAutoscaler`: its target, replica bounds and CPU target.
pub(crate) fn horizontal_pod_autoscaler(
    autoscaler: HorizontalPodAutoscaler,
    ctx: &mut Ctx,
) -> Map<String, Value> {
    let HorizontalPodAutoscaler { metadata, spec, status } = autoscaler;
    let HorizontalPodAutoscalerSpec {
        scale_target_ref,
        min_replicas,
        max_replicas,
        target_cpu_utilization_percentage,
    } = spec.unwrap_or_default();
    let CrossVersionObjectReference { kind, name, api_version } =
        scale_target_ref.unwrap_or_default();
    let mut target = Object::default();
    target.always("kind", kind);
    target.always("name", name);
    target.omitempty("apiVersion", api_version);
    let mut spec = Object::default();
    spec.put("scaleTargetRef", target);
    spec.pointer("minReplicas", min_replicas);
    spec.always("maxReplicas", max_replicas);
    spec.pointer("targetCPUUtilizationPercentage", target_cpu_utilization_percentage);
    let HorizontalPodAutoscalerStatus {
        observed_generation,
        last_scale_time,
        current_replicas,
        desired_replicas,
        current_cpu_utilization_percentage,
    } = status.unwrap_or_default();
    ctx.unmapped_pointer("status", "observedGeneration", &observed_generation);
    ctx.unmapped_pointer("status", "lastScaleTime", &last_scale_time);
    ctx.unmapped_value("status", "currentReplicas", &current_replicas);
    ctx.unmapped_value("status", "desiredReplicas", &desired_replicas);
    ctx.unmapped_pointer(
        "status",
        "currentCPUUtilizationPercentage",
        &current_cpu_utilization_percentage,
    );
    let mut status = Object::default();
    status.put("currentReplicas", 0);
    status.put("desiredReplicas", 0);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.put("status", status);
    out.into()
}
