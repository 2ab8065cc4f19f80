//! Schema fragments shared by several kinds, for `#[schemars(schema_with = …)]`.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// `status.conditions`: a list-map keyed by `type`, as Kubernetes conventions ask.
pub(crate) fn conditions(generator: &mut SchemaGenerator) -> Schema {
    let mut schema =
        Vec::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>::json_schema(generator);
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert("x-kubernetes-list-map-keys".into(), serde_json::json!(["type"]));
    schema
}

/// A decimal fraction in a string, such as `"0.90"` (the spec's form for memory utilisation).
pub(crate) fn fraction(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^(0(\.[0-9]+)?|1(\.0+)?)$",
        "description": "A decimal fraction between 0 and 1 in a string, e.g. \"0.90\".",
    })
}

/// An optional [`fraction`].
pub(crate) fn optional_fraction(generator: &mut SchemaGenerator) -> Schema {
    fraction(generator)
}

/// A Go-style duration such as `30s`, `5m` or `1h30m`.
pub(crate) fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$",
        "description": "A duration such as 30s, 5m or 1h30m.",
    })
}

/// A Kubernetes object name (RFC 1123 subdomain) used as a reference to another object.
pub(crate) fn object_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "minLength": 1,
        "maxLength": 253,
        "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    })
}

/// An optional [`object_name`].
pub(crate) fn optional_object_name(generator: &mut SchemaGenerator) -> Schema {
    object_name(generator)
}

/// For `skip_serializing_if`: a zero count is left out (and gets no schema default).
pub(crate) fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// For `skip_serializing_if`: a zero counter is left out.
pub(crate) fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}
