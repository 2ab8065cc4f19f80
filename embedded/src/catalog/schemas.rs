//! OpenAPI v3 schemas of built-in kinds, from k8s-openapi's schemars impls.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// [`schema_for`] of `T`, generated once per process and shared: the generator of a built-in
/// kind's [`super::Schema::Builtin`].
pub(crate) fn builtin_schema<T: JsonSchema + 'static>() -> Arc<Value> {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let key = TypeId::of::<T>();
    if let Some(schema) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return schema.clone();
    }
    // Generated outside the lock: two first uses at once both generate, and one is kept.
    let schema = Arc::new(schema_for::<T>());
    cache.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_insert(schema).clone()
}

/// A self-contained OpenAPI v3 schema of `T`: subschemas inlined, no
/// `$schema`, recursive references (only `JSONSchemaProps` has them) and objects
/// that declare no fields marked `x-kubernetes-preserve-unknown-fields`, and kubectl's
/// strategic-merge metadata (`x-kubernetes-patch-strategy`,
/// `x-kubernetes-patch-merge-key`) added on the well-known lists.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut value = settings.into_generator().into_root_schema_for::<T>().to_value();
    let definitions = match value.as_object_mut().and_then(|o| o.remove("components")) {
        Some(Value::Object(mut components)) => match components.remove("schemas") {
            Some(Value::Object(defs)) => defs,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    replace_refs(&mut value, &definitions);
    preserve_open_objects(&mut value);
    annotate_patch_strategies(&mut value);
    // A kind's `metadata` is a plain field in Rust, so schemars requires it; upstream's schemas
    // do not (`kubectl explain` marks it `-required-` otherwise).
    if let Some(required) = value.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            value.as_object_mut().map(|o| o.remove("required"));
        }
    }
    value
}

/// Marks objects that declare no fields (`RawExtension`, `FieldsV1`) as keeping whatever they
/// hold, so that pruning unknown fields leaves them whole, as decoding does upstream.
fn preserve_open_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let open = map.get("type").and_then(Value::as_str) == Some("object")
                && !map.contains_key("properties")
                && !map.contains_key("additionalProperties");
            if open {
                map.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
            }
            map.values_mut().for_each(preserve_open_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(preserve_open_objects),
        _ => {}
    }
}

/// Schema of `metav1.ObjectMeta` (cached).
pub(crate) fn object_meta_schema() -> Value {
    static CACHE: OnceLock<Value> = OnceLock::new();
    CACHE.get_or_init(schema_for::<ObjectMeta>).clone()
}

fn replace_refs(value: &mut Value, definitions: &Map<String, Value>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                let name = reference.rsplit('/').next().unwrap_or_default();
                let mut stub = Map::new();
                if let Some(def) = definitions.get(name) {
                    if let Some(description) = def.get("description") {
                        stub.insert("description".into(), description.clone());
                    }
                    if let Some(Value::String(t)) = def.get("type") {
                        stub.insert("type".into(), Value::String(t.clone()));
                    }
                }
                stub.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
                *map = stub;
                return;
            }
            map.values_mut().for_each(|v| replace_refs(v, definitions));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_refs(v, definitions)),
        _ => {}
    }
}

/// Patch strategy of a list property, recognised by its name and item shape
/// (mirrors the `patchStrategy`/`patchMergeKey` tags of k8s.io/api).
fn list_strategy(name: &str, items: &Value) -> Option<(&'static str, Option<&'static str>)> {
    let has = |field: &str| items.get("properties").and_then(|p| p.get(field)).is_some();
    let strategy = match name {
        "containers" | "initContainers" | "ephemeralContainers" if has("image") => {
            ("merge", Some("name"))
        }
        "env" if has("valueFrom") => ("merge", Some("name")),
        "ports" if has("containerPort") => ("merge", Some("containerPort")),
        "ports" if has("targetPort") => ("merge", Some("port")),
        "volumeMounts" => ("merge", Some("mountPath")),
        "volumeDevices" => ("merge", Some("devicePath")),
        "volumes" if has("name") => ("merge,retainKeys", Some("name")),
        "resourceClaims" if has("name") => ("merge,retainKeys", Some("name")),
        "imagePullSecrets" | "schedulingGates" => ("merge", Some("name")),
        "conditions" if has("type") && has("status") => ("merge", Some("type")),
        "addresses" if has("address") && has("type") => ("merge", Some("type")),
        "ownerReferences" => ("merge", Some("uid")),
        "hostAliases" => ("merge", Some("ip")),
        "topologySpreadConstraints" => ("merge", Some("topologyKey")),
        "webhooks" if has("clientConfig") => ("merge", Some("name")),
        "drivers" if has("nodeID") => ("merge", Some("name")),
        "finalizers" => ("merge", None),
        _ => return None,
    };
    Some(strategy)
}

fn annotate_patch_strategies(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    let Some(obj) = prop.as_object_mut() else { continue };
                    let is_array = obj.get("type").and_then(Value::as_str) == Some("array");
                    let strategy = match obj.get("items") {
                        Some(items) if is_array => list_strategy(name, items),
                        _ if name == "strategy"
                            && obj
                                .get("properties")
                                .and_then(|p| p.get("rollingUpdate"))
                                .is_some() =>
                        {
                            Some(("retainKeys", None))
                        }
                        _ => None,
                    };
                    if let Some((strategy, key)) = strategy {
                        obj.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
                        if let Some(key) = key {
                            obj.insert("x-kubernetes-patch-merge-key".into(), json!(key));
                        }
                    }
                }
            }
            map.values_mut().for_each(annotate_patch_strategies);
        }
        Value::Array(items) => items.iter_mut().for_each(annotate_patch_strategies),
        _ => {}
    }
}
