//! `/openapi/v2`: the Swagger 2.0 document kubectl falls back to where OpenAPI v3 has no answer.
//!
//! kubectl 1.32 reads it for the client-side validation of a `kind: List` manifest's items (a
//! List is no served kind, so the server-side check cannot vouch for it; without this document
//! `kubectl apply -f list.yaml` fails under the default `--validate=strict`), for `kubectl explain
//! --output=plaintext-openapiv2`, and when its strategic merge patch cannot be computed from v3.
//! It asks for gnostic's protobuf encoding ([`PROTOBUF_ACCEPTED`], built by [`protobuf`]); other
//! clients get JSON.
//!
//! Only `definitions` are served: every current client reads the operations from OpenAPI v3. They
//! are the v3 documents' kinds, lists and meta types in their self-contained form (the catalog's
//! schemas, without the named types the v3 documents refer to), rewritten into what
//! kube-openapi's v2 parser accepts (a definition it cannot parse fails kubectl's whole
//! validation) and into what kube-apiserver
//! publishes for custom resources in v2:
//!
//! - `$ref`s point into `#/definitions/`, and v3's `allOf: [{$ref}]` wrapper becomes a plain
//!   `$ref` with its siblings;
//! - `anyOf`, `oneOf`, `not` and other `allOf`s, which v2 clients do not check, are dropped;
//! - a `nullable` value or an int-or-string has no type (kubectl checks nothing in it), an
//!   object that keeps unknown fields has no `properties` (kubectl would refuse the fields the
//!   server keeps), and an array left without an item schema has no type;
//! - a nullable property is not `required`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::catalog::ResourceInfo;

/// The media types of gnostic's protobuf encoding a client may ask for; kubectl's discovery
/// client asks for the first.
pub const PROTOBUF_ACCEPTED: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// The media type a protobuf answer is labelled with: the second spelling, because Go's
/// `mime.ParseMediaType`, which client-go runs on every response, refuses the `@` of the first.
pub const PROTOBUF: &str = PROTOBUF_ACCEPTED[1];

/// The definitions of every served kind, in v2 form, each built when it is reached (the whole
/// document as a tree would be several times the size of its encodings).
fn definitions(infos: &[Arc<ResourceInfo>]) -> impl Iterator<Item = (String, Value)> {
    super::named_schemas(infos.iter().map(|i| &**i))
        .map(|(name, schema)| (name, schema_v2(&schema)))
}

/// The `/openapi/v2` document as JSON text.
pub fn json(infos: &[Arc<ResourceInfo>]) -> String {
    let mut text = String::from(
        r#"{"swagger":"2.0","info":{"title":"Kubernetes","version":"unversioned"},"paths":{},"definitions":{"#,
    );
    for (index, (name, schema)) in definitions(infos).enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&Value::String(name).to_string());
        text.push(':');
        text.push_str(&schema.to_string());
    }
    text.push_str("}}");
    text
}

/// The `/openapi/v2` document in gnostic's protobuf encoding.
pub fn protobuf(infos: &[Arc<ResourceInfo>]) -> Vec<u8> {
    super::gnostic::encode("Kubernetes", "unversioned", definitions(infos))
}

/// One v3 schema rewritten for v2 (see the module documentation).
pub(super) fn schema_v2(v3: &Value) -> Value {
    let Value::Object(map) = v3 else { return json!({}) };
    if let Some(reference) = single_ref(map) {
        let mut out = Map::new();
        out.insert("$ref".into(), Value::String(reference));
        for key in ["description", "default"] {
            if let Some(value) = map.get(key) {
                out.insert(key.into(), value.clone());
            }
        }
        return Value::Object(out);
    }
    let flag = |key: &str| map.get(key).and_then(Value::as_bool) == Some(true);
    let untyped = flag("nullable") || flag("x-kubernetes-int-or-string");
    let open = untyped || flag("x-kubernetes-preserve-unknown-fields");
    let nullable_properties: Vec<&String> = match map.get("properties") {
        Some(Value::Object(properties)) => properties
            .iter()
            .filter(|(_, p)| p.get("nullable").and_then(Value::as_bool) == Some(true))
            .map(|(name, _)| name)
            .collect(),
        _ => Vec::new(),
    };
    let mut out = Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "$ref" => Value::String(v2_reference(value.as_str().unwrap_or_default())),
            "type" if untyped => continue,
            "type" => match value {
                Value::String(_) => value.clone(),
                _ => continue,
            },
            "properties" | "items" if open => continue,
            "properties" => match value {
                Value::Object(properties) => Value::Object(
                    properties.iter().map(|(k, v)| (k.clone(), schema_v2(v))).collect(),
                ),
                _ => continue,
            },
            "items" => match value {
                Value::Array(items) if items.len() == 1 => schema_v2(&items[0]),
                Value::Object(_) => schema_v2(value),
                _ => continue,
            },
            "additionalProperties" => match value {
                Value::Bool(_) => value.clone(),
                v if v.get("nullable").and_then(Value::as_bool) == Some(true) => Value::Bool(true),
                v => schema_v2(v),
            },
            "required" => match value {
                Value::Array(names) => Value::Array(
                    names
                        .iter()
                        .filter(|n| !nullable_properties.iter().any(|p| n.as_str() == Some(p)))
                        .cloned()
                        .collect(),
                ),
                _ => continue,
            },
            "nullable" | "anyOf" | "oneOf" | "allOf" | "not" => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.remove("type");
    }
    Value::Object(out)
}

/// The reference of an `allOf` holding nothing but one `$ref`, in v2 form.
fn single_ref(map: &Map<String, Value>) -> Option<String> {
    match map.get("allOf")?.as_array()?.as_slice() {
        [only] if only.as_object()?.len() == 1 => Some(v2_reference(only.get("$ref")?.as_str()?)),
        _ => None,
    }
}

fn v2_reference(reference: &str) -> String {
    match reference.strip_prefix("#/components/schemas/") {
        Some(name) => format!("#/definitions/{name}"),
        None => reference.to_owned(),
    }
}
