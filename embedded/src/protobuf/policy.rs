//! Conversion of the access and policy kinds kubectl creates over protobuf: `RoleBinding` and
//! `ClusterRoleBinding` (`kubectl create rolebinding|clusterrolebinding`), `PriorityClass`
//! (`kubectl create priorityclass`), `PodDisruptionBudget` (`kubectl create pdb`) and the
//! `Eviction`s of `kubectl drain`.
//!
//! `kubectl create role|clusterrole` checks its resources against discovery first and sends
//! the same kinds of message; their rules and a ClusterRole's aggregation rule are read too.

use k8s_pb::api::policy::v1::{
    Eviction, PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_pb::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject,
};
use k8s_pb::api::scheduling::v1::PriorityClass;
use serde_json::{Map, Value};

use super::fields::{Ctx, Object};
use super::meta::{delete_options, int_or_string, label_selector, object_meta};

/// A `Role`.
pub(crate) fn role(role: Role, ctx: &mut Ctx) -> Map<String, Value> {
    let Role { metadata, rules } = role;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("rules", policy_rules(rules));
    out.into()
}

/// A `ClusterRole`, with its aggregation rule (`kubectl create clusterrole --aggregation-rule`).
pub(crate) fn cluster_role(role: ClusterRole, ctx: &mut Ctx) -> Map<String, Value> {
    let ClusterRole { metadata, rules, aggregation_rule } = role;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("rules", policy_rules(rules));
    if let Some(AggregationRule { cluster_role_selectors }) = aggregation_rule {
        let selectors: Vec<Value> =
            cluster_role_selectors.into_iter().map(label_selector).collect();
        out.put("aggregationRule", serde_json::json!({ "clusterRoleSelectors": selectors }));
    }
    out.into()
}

/// Rules: a slice without `omitempty`, so `null` when there are none.
fn policy_rules(rules: Vec<PolicyRule>) -> Value {
    if rules.is_empty() {
        return Value::Null;
    }
    let rules = rules.into_iter().map(|rule| {
        let PolicyRule { verbs, api_groups, resources, resource_names, non_resource_ur_ls } = rule;
        let mut out = Object::default();
        out.put("verbs", if verbs.is_empty() { Value::Null } else { verbs.into() });
        out.items("apiGroups", api_groups);
        out.items("resources", resources);
        out.items("resourceNames", resource_names);
        out.items("nonResourceURLs", non_resource_ur_ls);
        Value::from(out)
    });
    rules.collect()
}

/// A `RoleBinding`.
pub(crate) fn role_binding(binding: RoleBinding, ctx: &mut Ctx) -> Map<String, Value> {
    let RoleBinding { metadata, subjects, role_ref } = binding;
    binding_object(object_meta(metadata, ctx, "metadata"), subjects, role_ref)
}

/// A `ClusterRoleBinding`.
pub(crate) fn cluster_role_binding(
    binding: ClusterRoleBinding,
    ctx: &mut Ctx,
) -> Map<String, Value> {
    let ClusterRoleBinding { metadata, subjects, role_ref } = binding;
    binding_object(object_meta(metadata, ctx, "metadata"), subjects, role_ref)
}

fn binding_object(
    metadata: Value,
    subjects: Vec<Subject>,
    role_ref: Option<RoleRef>,
) -> Map<String, Value> {
    let mut out = Object::default();
    out.put("metadata", metadata);
    let subjects: Vec<Value> = subjects
        .into_iter()
        .map(|subject| {
            let Subject { kind, api_group, name, namespace } = subject;
            let mut out = Object::default();
            out.always("kind", kind);
            out.omitempty("apiGroup", api_group);
            out.always("name", name);
            out.omitempty("namespace", namespace);
            Value::from(out)
        })
        .collect();
    out.items("subjects", subjects);
    let RoleRef { api_group, kind, name } = role_ref.unwrap_or_default();
    let mut reference = Object::default();
    reference.always("apiGroup", api_group);
    reference.always("kind", kind);
    reference.always("name", name);
    out.put("roleRef", reference);
    out.into()
}

/// A `PriorityClass`.
pub(crate) fn priority_class(class: PriorityClass, ctx: &mut Ctx) -> Map<String, Value> {
    let PriorityClass { metadata, value, global_default, description, preemption_policy } = class;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.always("value", value);
    out.omitempty("globalDefault", global_default);
    out.omitempty("description", description);
    out.pointer("preemptionPolicy", preemption_policy);
    out.into()
}

/// A `PodDisruptionBudget`; its status must hold only zeros, written as Go writes them.
pub(crate) fn pod_disruption_budget(
    budget: PodDisruptionBudget,
    ctx: &mut Ctx,
) -> Map<String, Value> {
    let PodDisruptionBudget { metadata, spec, status } = budget;
    let PodDisruptionBudgetSpec {
        min_available,
        selector,
        max_unavailable,
        unhealthy_pod_eviction_policy,
    } = spec.unwrap_or_default();
    let mut spec = Object::default();
    if let Some(value) = min_available {
        spec.put("minAvailable", int_or_string(value, ctx, "spec.minAvailable"));
    }
    if let Some(selector) = selector {
        spec.put("selector", label_selector(selector));
    }
    if let Some(value) = max_unavailable {
        spec.put("maxUnavailable", int_or_string(value, ctx, "spec.maxUnavailable"));
    }
    spec.pointer("unhealthyPodEvictionPolicy", unhealthy_pod_eviction_policy);
    let PodDisruptionBudgetStatus {
        observed_generation,
        disrupted_pods,
        disruptions_allowed,
        current_healthy,
        desired_healthy,
        expected_pods,
        conditions,
    } = status.unwrap_or_default();
    ctx.unmapped_value("status", "observedGeneration", &observed_generation);
    ctx.unmapped_entries("status", "disruptedPods", &disrupted_pods);
    ctx.unmapped_value("status", "disruptionsAllowed", &disruptions_allowed);
    ctx.unmapped_value("status", "currentHealthy", &current_healthy);
    ctx.unmapped_value("status", "desiredHealthy", &desired_healthy);
    ctx.unmapped_value("status", "expectedPods", &expected_pods);
    ctx.unmapped_entries("status", "conditions", &conditions);
    let mut status = Object::default();
    for field in ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"] {
        status.put(field, 0);
    }
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.put("status", status);
    out.into()
}

/// An `Eviction`: the pod it names and the options of the pod's deletion.
pub(crate) fn eviction(eviction: Eviction, ctx: &mut Ctx) -> Map<String, Value> {
    let Eviction { metadata, delete_options: options } = eviction;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    if let Some(options) = options {
        out.put("deleteOptions", delete_options(options, ctx));
    }
    out.into()
}
