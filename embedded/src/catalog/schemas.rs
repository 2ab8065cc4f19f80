//! OpenAPI v3 schemas of built-in kinds, from k8s-openapi's schemars impls.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// A built-in kind's schema generators: the [`super::Schema::Builtin`] of its kind.
#[derive(Clone, Copy)]
pub struct BuiltinSchema {
    /// The kind's self-contained schema (`schema_for`), generated once per process and shared.
    pub inlined: fn() -> Arc<Value>,
    /// The kind's schema with references (`referenced_schema_for`), generated on each call.
    pub referenced: fn() -> Referenced,
}

/// A schema that refers to named definitions (`#/components/schemas/<name>`), and every
/// definition it reaches, by name.
pub struct Referenced {
    /// The schema.
    pub schema: Value,
    /// The definitions it reaches.
    pub definitions: Map<String, Value>,
}

/// The schema generators of `T`.
pub(crate) fn builtin_schema<T: JsonSchema + 'static>() -> BuiltinSchema {
    BuiltinSchema { inlined: shared_schema::<T>, referenced: referenced_schema_for::<T> }
}

/// [`schema_for`] of `T`, generated once per process and shared.
fn shared_schema<T: JsonSchema + 'static>() -> Arc<Value> {
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

/// The root schema of `T` and its definitions (k8s-openapi names them as upstream does:
/// `io.k8s.api.core.v1.PodSpec`), without `$schema`.
fn generate<T: JsonSchema>(inline_subschemas: bool) -> (Value, Map<String, Value>) {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = inline_subschemas;
        s.meta_schema = None;
    });
    let mut generator = settings.into_generator();
    let mut value = generator.root_schema_for::<T>().to_value();
    // The root carries a copy of the definitions that the transforms (`allOf` around a `$ref`
    // with siblings, …) did not reach; they are taken transformed instead.
    value.as_object_mut().map(|o| o.remove("components"));
    let definitions = generator.take_definitions(true);
    (value, definitions)
}

/// A self-contained OpenAPI v3 schema of `T`: subschemas inlined, no
/// `$schema`, recursive references (only `JSONSchemaProps` has them) and objects
/// that declare no fields marked `x-kubernetes-preserve-unknown-fields`, and kubectl's
/// strategic-merge metadata (`x-kubernetes-patch-strategy`,
/// `x-kubernetes-patch-merge-key`) added on the well-known lists.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let (mut value, definitions) = generate::<T>(true);
    replace_refs(&mut value, &definitions);
    finish(&mut value, &Map::new());
    value
}

/// `T`'s schema as upstream's OpenAPI documents have it: fields of named types refer to their
/// definitions (`{"allOf": [{"$ref": …}], "description": …}`), each finished as [`schema_for`]
/// finishes its schema.
pub(crate) fn referenced_schema_for<T: JsonSchema>() -> Referenced {
    let (mut schema, mut definitions) = generate::<T>(false);
    // The patch strategies of a definition's fields depend on the definitions they refer to.
    let unfinished = definitions.clone();
    finish(&mut schema, &unfinished);
    definitions.values_mut().for_each(|definition| finish(definition, &unfinished));
    Referenced { schema, definitions }
}

/// What [`schema_for`] and [`referenced_schema_for`] add to a generated schema, `definitions`
/// resolving its references.
fn finish(value: &mut Value, definitions: &Map<String, Value>) {
    preserve_open_objects(value);
    annotate_patch_strategies(value, definitions);
    // A kind's `metadata` is a plain field in Rust, so schemars requires it; upstream's schemas
    // do not (`kubectl explain` marks it `-required-` otherwise).
    if let Some(required) = value.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            value.as_object_mut().map(|o| o.remove("required"));
        }
    }
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

/// `schema`, or the definition it refers to (`{"$ref": …}` or `{"allOf": [{"$ref": …}], …}`).
fn resolve<'a>(schema: &'a Value, definitions: &'a Map<String, Value>) -> &'a Value {
    let reference = schema
        .get("$ref")
        .or_else(|| schema.get("allOf").and_then(|all| all.get(0)).and_then(|s| s.get("$ref")))
        .and_then(Value::as_str);
    reference
        .and_then(|r| definitions.get(r.rsplit('/').next().unwrap_or_default()))
        .unwrap_or(schema)
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

fn annotate_patch_strategies(value: &mut Value, definitions: &Map<String, Value>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    let target = resolve(prop, definitions);
                    let is_array = target.get("type").and_then(Value::as_str) == Some("array");
                    let strategy = match target.get("items") {
                        Some(items) if is_array => list_strategy(name, resolve(items, definitions)),
                        _ if name == "strategy"
                            && target
                                .get("properties")
                                .and_then(|p| p.get("rollingUpdate"))
                                .is_some() =>
                        {
                            Some(("retainKeys", None))
                        }
                        _ => None,
                    };
                    let Some(obj) = prop.as_object_mut() else { continue };
                    if let Some((strategy, key)) = strategy {
                        obj.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
                        if let Some(key) = key {
                            obj.insert("x-kubernetes-patch-merge-key".into(), json!(key));
                        }
                    }
                }
            }
            map.values_mut().for_each(|v| annotate_patch_strategies(v, definitions));
        }
        Value::Array(items) => {
            items.iter_mut().for_each(|v| annotate_patch_strategies(v, definitions))
        }
        _ => {}
    }
}
