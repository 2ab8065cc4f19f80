//! Conversions of the apimachinery types every kind uses: `ObjectMeta`, `Time`, `LabelSelector`,
//! `IntOrString` and `Quantity`.

use std::collections::BTreeMap;

use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, FieldsV1, LabelSelector, LabelSelectorRequirement, ManagedFieldsEntry,
    ObjectMeta, OwnerReference, Preconditions, Time,
};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value};

use super::fields::{Ctx, Object, item, join};

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds, which Go writes as `null`.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// `metadata`, all of it: server-owned fields (`uid`, `resourceVersion`, `creationTimestamp`...)
/// are passed on as a JSON client would send them, for the server to handle as it does for JSON.
pub(crate) fn object_meta(meta: Option<ObjectMeta>, ctx: &mut Ctx, path: &str) -> Value {
    let ObjectMeta {
        name,
        generate_name,
        namespace,
        self_link,
        uid,
        resource_version,
        generation,
        creation_timestamp,
        deletion_timestamp,
        deletion_grace_period_seconds,
        labels,
        annotations,
        owner_references,
        finalizers,
        managed_fields,
    } = meta.unwrap_or_default();
    let mut out = Object::default();
    out.omitempty("name", name);
    out.omitempty("generateName", generate_name);
    out.omitempty("namespace", namespace);
    out.omitempty("selfLink", self_link);
    out.omitempty("uid", uid);
    out.omitempty("resourceVersion", resource_version);
    out.omitempty("generation", generation);
    // A struct in Go, so always written: `null` when zero, as kubectl's JSON has it.
    out.put(
        "creationTimestamp",
        time(creation_timestamp.unwrap_or_default(), ctx, &join(path, "creationTimestamp")),
    );
    if let Some(deleted) = deletion_timestamp {
        out.put("deletionTimestamp", time(deleted, ctx, &join(path, "deletionTimestamp")));
    }
    out.pointer("deletionGracePeriodSeconds", deletion_grace_period_seconds);
    out.entries("labels", labels);
    out.entries("annotations", annotations);
    out.items("ownerReferences", owner_references.into_iter().map(owner_reference).collect());
    out.items("finalizers", finalizers);
    let managed_fields = managed_fields.into_iter().enumerate();
    out.items(
        "managedFields",
        managed_fields
            .map(|(i, entry)| managed_fields_entry(entry, ctx, &item(path, "managedFields", i)))
            .collect(),
    );
    out.into()
}

/// The `DeleteOptions` of a delete (`kubectl drain` sends them in protobuf). All of it is mapped
/// but the unsafe deletion of corrupt objects, which this server has no use for.
pub(crate) fn delete_options(options: DeleteOptions, ctx: &mut Ctx) -> Map<String, Value> {
    let DeleteOptions {
        grace_period_seconds,
        preconditions,
        orphan_dependents,
        propagation_policy,
        dry_run,
        ignore_store_read_error_with_cluster_breaking_potential: unsafe_delete,
    } = options;
    let mut out = Object::default();
    out.pointer("gracePeriodSeconds", grace_period_seconds);
    if let Some(Preconditions { uid, resource_version }) = preconditions {
        let mut given = Object::default();
        given.pointer("uid", uid);
        given.pointer("resourceVersion", resource_version);
        out.put("preconditions", given);
    }
    out.pointer("orphanDependents", orphan_dependents);
    out.pointer("propagationPolicy", propagation_policy);
    out.items("dryRun", dry_run);
    ctx.unmapped_pointer("", "ignoreStoreReadErrorWithClusterBreakingPotential", &unsafe_delete);
    out.into()
}

/// An item of `metadata.ownerReferences`.
fn owner_reference(reference: OwnerReference) -> Value {
    let OwnerReference { api_version, kind, name, uid, controller, block_owner_deletion } =
        reference;
    let mut out = Object::default();
    out.always("apiVersion", api_version);
    out.always("kind", kind);
    out.always("name", name);
    out.always("uid", uid);
    out.pointer("controller", controller);
    out.pointer("blockOwnerDeletion", block_owner_deletion);
    out.into()
}

/// An item of `metadata.managedFields`; `fieldsV1` holds JSON in protobuf too.
fn managed_fields_entry(entry: ManagedFieldsEntry, ctx: &mut Ctx, path: &str) -> Value {
    let ManagedFieldsEntry {
        manager,
        operation,
        api_version,
        time: at,
        fields_type,
        fields_v1,
        subresource,
    } = entry;
    let mut out = Object::default();
    out.omitempty("manager", manager);
    out.omitempty("operation", operation);
    out.omitempty("apiVersion", api_version);
    if let Some(at) = at {
        out.put("time", time(at, ctx, &join(path, "time")));
    }
    out.omitempty("fieldsType", fields_type);
    if let Some(FieldsV1 { raw }) = fields_v1 {
        let fields = match raw {
            None => Value::Null,
            Some(raw) => serde_json::from_slice(&raw).unwrap_or_else(|error| {
                ctx.invalid(&join(path, "fieldsV1"), format_args!("is not JSON: {error}"));
                Value::Null
            }),
        };
        out.put("fieldsV1", fields);
    }
    out.omitempty("subresource", subresource);
    out.into()
}

/// A `metav1.Time` as Kubernetes writes it: RFC 3339 in UTC with whole seconds, or `null` for the
/// zero time (an empty message: Go's encoder writes nothing for it). Like Go's decoder, this
/// ignores `nanos`.
pub(crate) fn time(time: Time, ctx: &mut Ctx, path: &str) -> Value {
    let Time { seconds, nanos } = time;
    if seconds.is_none() && nanos.is_none() {
        return Value::Null;
    }
    let seconds = seconds.unwrap_or_default();
    if seconds == GO_ZERO_TIME_SECONDS {
        return Value::Null;
    }
    match jiff::Timestamp::from_second(seconds) {
        Ok(at) => Value::String(crate::server::rfc3339(at)),
        Err(error) => {
            ctx.invalid(path, format_args!("time {seconds}s is out of range: {error}"));
            Value::Null
        }
    }
}

/// A `LabelSelector` (`matchLabels`, `matchExpressions`).
pub(crate) fn label_selector(selector: LabelSelector) -> Value {
    let LabelSelector { match_labels, match_expressions } = selector;
    let mut out = Object::default();
    out.entries("matchLabels", match_labels);
    out.items("matchExpressions", match_expressions.into_iter().map(requirement).collect());
    out.into()
}

/// An item of `matchExpressions`.
fn requirement(requirement: LabelSelectorRequirement) -> Value {
    let LabelSelectorRequirement { key, operator, values } = requirement;
    let mut out = Object::default();
    out.always("key", key);
    out.always("operator", operator);
    out.items("values", values);
    out.into()
}

/// An `IntOrString`: a JSON number for type 0 (int), a string for type 1.
pub(crate) fn int_or_string(value: IntOrString, ctx: &mut Ctx, path: &str) -> Value {
    let IntOrString { r#type, int_val, str_val } = value;
    match r#type.unwrap_or_default() {
        0 => Value::from(int_val.unwrap_or_default()),
        1 => Value::from(str_val.unwrap_or_default()),
        other => {
            ctx.invalid(path, format_args!("IntOrString has unknown type {other}"));
            Value::Null
        }
    }
}

/// A map of resource names to `Quantity`, each written as its string form.
pub(crate) fn quantities(quantities: BTreeMap<String, Quantity>) -> BTreeMap<String, Value> {
    quantities
        .into_iter()
        .map(|(name, Quantity { string })| (name, Value::from(string.unwrap_or_default())))
        .collect()
}
