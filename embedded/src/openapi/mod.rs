//! OpenAPI v3 (`/openapi/v3` and `/openapi/v3/<gv>`) built from the catalog, and the
//! definitions-only OpenAPI v2 document of [`v2`].
//!
//! kubectl uses these documents to (1) decide whether the server supports
//! `fieldValidation` for a GVK (a PATCH operation carrying
//! `x-kubernetes-group-version-kind` and a `fieldValidation` query parameter),
//! (2) choose strategic merge patch (PATCH `requestBody.content` lists
//! `application/strategic-merge-patch+json`, built-ins only) and compute it
//! from the schema's `x-kubernetes-patch-*` extensions, and (3) `kubectl
//! explain`. Both functions are pure and fairly costly: the server should
//! cache their output until the catalog changes.

use std::sync::Arc;

use std::sync::OnceLock;

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ListMeta, ObjectMeta, Status};
use serde_json::{Map, Value, json};

use crate::catalog::{
    Referenced, ResourceInfo, object_meta_schema, referenced_schema_for, schema_for,
};
use crate::discovery::groups;

mod gnostic;
mod paths;
#[cfg(test)]
mod tests;
pub mod v2;
#[cfg(test)]
mod v2_tests;

pub(crate) const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
pub(crate) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

pub(crate) fn ref_to(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `api/v1` or `apis/<group>/<version>` (the key in the index).
pub fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// Upstream's component name: `io.k8s.api.core.v1.ConfigMap`,
/// `io.k8s.api.apps.v1.Deployment`, `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition`,
/// `io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService` for built-ins; reversed
/// group for custom resources (`dev.keelson.serving.v1alpha1.ModelDeployment`).
pub fn schema_name(info: &ResourceInfo) -> String {
    let prefix = if info.builtin {
        match info.group.as_str() {
            "" => "io.k8s.api.core".to_owned(),
            "apiextensions.k8s.io" => {
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".to_owned()
            }
            "apiregistration.k8s.io" => {
                "io.k8s.kube-aggregator.pkg.apis.apiregistration".to_owned()
            }
            g => format!("io.k8s.api.{}", g.split('.').next().unwrap_or(g)),
        }
    } else {
        info.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{prefix}.{}.{}", info.version, info.kind)
}

/// A stable hash of a document (FNV-1a 64 of its JSON text, upper-case hex).
pub fn hash(document: &Value) -> String {
    let text = serde_json::to_string(document).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// The `/openapi/v3` index: `{"paths": {"api/v1": {"serverRelativeURL":
/// "/openapi/v3/api/v1?hash=…"}, …}}`, one entry per served group-version.
pub fn index(infos: &[Arc<ResourceInfo>]) -> Value {
    let mut paths = Map::new();
    for group in groups(infos) {
        for (version, _) in &group.versions {
            let path = gv_path(group.name, version);
            let hash = document(infos, group.name, version).map(|d| hash(&d)).unwrap_or_default();
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

fn gvk_extension(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// The Patch request body's schema.
fn patch_schema() -> Value {
    json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."})
}

/// The self-contained schemas every document refers to, for [`v2`].
fn common_schemas() -> &'static Map<String, Value> {
    static CACHE: OnceLock<Map<String, Value>> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mut map = Map::new();
        map.insert(format!("{META}.ObjectMeta"), object_meta_schema());
        map.insert(format!("{META}.ListMeta"), schema_for::<ListMeta>());
        map.insert(format!("{META}.Status"), schema_for::<Status>());
        map.insert(format!("{META}.DeleteOptions"), schema_for::<DeleteOptions>());
        map.insert(format!("{META}.Patch"), patch_schema());
        let mut scale = schema_for::<Scale>();
        scale["x-kubernetes-group-version-kind"] = gvk_extension("autoscaling", "v1", "Scale");
        map.insert(SCALE.to_owned(), scale);
        map
    })
}

fn type_meta_properties(properties: &mut Map<String, Value>) {
    properties.insert(
        "apiVersion".into(),
        json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
    );
    properties.insert(
        "kind".into(),
        json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}),
    );
}

/// The kind's schema from `schema` (its own, in either form): the built-in one as is, or a CRD's
/// with `apiVersion`/`kind`/`metadata` (an ObjectMeta reference) filled in.
fn kind_schema(info: &ResourceInfo, schema: Option<Value>) -> Value {
    let mut schema = schema
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let (false, Value::Object(map)) = (info.builtin, &mut schema) {
        map.entry("type").or_insert_with(|| json!("object"));
        let properties = map.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            type_meta_properties(properties);
            properties.insert(
                "metadata".into(),
                json!({
                    "allOf": [ref_to(&format!("{META}.ObjectMeta"))],
                    "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                }),
            );
        }
    }
    schema["x-kubernetes-group-version-kind"] =
        gvk_extension(&info.group, &info.version, &info.kind);
    schema
}

fn list_schema(info: &ResourceInfo) -> Value {
    let mut properties = Map::new();
    type_meta_properties(&mut properties);
    properties.insert(
        "items".into(),
        json!({"type": "array", "description": format!("List of {}.", info.resource), "items": ref_to(&schema_name(info))}),
    );
    properties.insert("metadata".into(), json!({"allOf": [ref_to(&format!("{META}.ListMeta"))]}));
    json!({
        "type": "object",
        "description": format!("{} is a list of {}.", info.list_kind, info.kind),
        "required": ["items"],
        "properties": properties,
        "x-kubernetes-group-version-kind": gvk_extension(&info.group, &info.version, &info.list_kind),
    })
}

/// The self-contained definitions of `resources` for [`v2`]: each kind, its list, and the shared
/// meta types they refer to, each built when it is reached.
fn named_schemas<'a>(
    resources: impl Iterator<Item = &'a ResourceInfo>,
) -> impl Iterator<Item = (String, Value)> {
    let common = common_schemas().iter().map(|(name, schema)| (name.clone(), schema.clone()));
    common.chain(resources.flat_map(|info| {
        let schema = info.schema.get().map(|s| Value::clone(&s));
        [
            (schema_name(info), kind_schema(info, schema)),
            (format!("{}List", schema_name(info)), list_schema(info)),
        ]
    }))
}

/// The component schemas of `resources` as upstream has them: each kind, its list, the shared meta
/// types, and every named schema the built-in kinds refer to (custom resources' schemas are
/// self-contained but for their ObjectMeta).
fn components(resources: &[&ResourceInfo]) -> Map<String, Value> {
    let mut components = Map::new();
    // Definitions of the same name are the same; a kind or list replaces one.
    let mut add = |name: String, schema: Value, definitions: Map<String, Value>| {
        for (name, definition) in definitions {
            components.entry(name).or_insert(definition);
        }
        components.insert(name, schema);
    };
    for (name, referenced) in [
        ("ObjectMeta", referenced_schema_for::<ObjectMeta>()),
        ("ListMeta", referenced_schema_for::<ListMeta>()),
        ("Status", referenced_schema_for::<Status>()),
        ("DeleteOptions", referenced_schema_for::<DeleteOptions>()),
    ] {
        add(format!("{META}.{name}"), referenced.schema, referenced.definitions);
    }
    add(format!("{META}.Patch"), patch_schema(), Map::new());
    let Referenced { mut schema, definitions } = referenced_schema_for::<Scale>();
    schema["x-kubernetes-group-version-kind"] = gvk_extension("autoscaling", "v1", "Scale");
    add(SCALE.to_owned(), schema, definitions);
    for info in resources {
        let (schema, definitions) = match info.schema.referenced() {
            Some(Referenced { schema, definitions }) => (Some(schema), definitions),
            None => (info.schema.get().map(|s| Value::clone(&s)), Map::new()),
        };
        add(schema_name(info), kind_schema(info, schema), definitions);
        add(format!("{}List", schema_name(info)), list_schema(info), Map::new());
    }
    components
}

/// The OpenAPI 3.0 document of one group-version (`group` `""` = core), or
/// `None` if nothing is served there.
pub fn document(infos: &[Arc<ResourceInfo>], group: &str, version: &str) -> Option<Value> {
    let mut resources: Vec<&ResourceInfo> =
        infos.iter().filter(|i| i.group == group && i.version == version).map(|i| &**i).collect();
    if resources.is_empty() {
        return None;
    }
    resources.sort_by(|a, b| a.resource.cmp(&b.resource));
    let schemas = components(&resources);
    let mut paths = Map::new();
    for info in resources {
        paths::add_paths(&mut paths, info);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
