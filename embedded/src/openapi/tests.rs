use serde_json::{Value, json};

use super::*;
use crate::catalog::{builtin_resources, tests::widget_crd};

pub(super) fn catalog() -> Vec<std::sync::Arc<ResourceInfo>> {
    let mut infos = builtin_resources();
    infos.extend(ResourceInfo::from_crd(&widget_crd()));
    infos.into_iter().map(std::sync::Arc::new).collect()
}

fn gvk_matches(ext: &Value, group: &str, version: &str, kind: &str) -> bool {
    ext["group"] == group && ext["version"] == version && ext["kind"] == kind
}

/// cli-runtime's `supportsQueryParamV3`: the first PATCH operation for the GVK
/// decides.
fn supports_field_validation(
    doc: &Value,
    group: &str,
    version: &str,
    kind: &str,
) -> Result<(), String> {
    for item in doc["paths"].as_object().unwrap().values() {
        let Some(patch) = item.get("patch") else { continue };
        if !gvk_matches(&patch["x-kubernetes-group-version-kind"], group, version, kind) {
            continue;
        }
        let params = patch["parameters"].as_array().unwrap();
        if params.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query") {
            return Ok(());
        }
        return Err("ParamUnsupported".into());
    }
    Err(format!("Path not found for GVK {group}/{version} {kind}"))
}

/// kubectl apply's `gvkSupportsPatchOpenAPIV3`.
fn supports_smp(doc: &Value, group: &str, version: &str, kind: &str) -> bool {
    doc["paths"].as_object().unwrap().values().filter_map(|item| item.get("patch")).any(|patch| {
        gvk_matches(&patch["x-kubernetes-group-version-kind"], group, version, kind)
            && patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
    })
}

fn collect_refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r);
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[test]
fn index_lists_every_group_version() {
    let infos = catalog();
    let index = index(&infos);
    let paths = index["paths"].as_object().unwrap();
    let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "api/v1",
            "apis/admissionregistration.k8s.io/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apiregistration.k8s.io/v1",
            "apis/apps/v1",
            "apis/authentication.k8s.io/v1",
            "apis/authorization.k8s.io/v1",
            "apis/autoscaling/v1",
            "apis/autoscaling/v2",
            "apis/batch/v1",
            "apis/certificates.k8s.io/v1",
            "apis/coordination.k8s.io/v1",
            "apis/discovery.k8s.io/v1",
            "apis/events.k8s.io/v1",
            "apis/metrics.k8s.io/v1beta1",
            "apis/networking.k8s.io/v1",
            "apis/node.k8s.io/v1",
            "apis/policy/v1",
            "apis/rbac.authorization.k8s.io/v1",
            "apis/scheduling.k8s.io/v1",
            "apis/serving.keelson.dev/v1alpha1",
            "apis/storage.k8s.io/v1",
        ]
    );
    let doc = document(&infos, "apps", "v1").unwrap();
    assert_eq!(
        paths["apis/apps/v1"]["serverRelativeURL"],
        format!("/openapi/v3/apis/apps/v1?hash={}", hash(&doc))
    );
    // Stable, and content-sensitive.
    assert_eq!(hash(&doc), hash(&document(&infos, "apps", "v1").unwrap()));
    assert_ne!(hash(&doc), hash(&document(&infos, "batch", "v1").unwrap()));
    assert!(document(&infos, "apps", "v2").is_none());
    assert!(document(&infos, "nope", "v1").is_none());
}

#[test]
fn patch_operations_support_field_validation() {
    let infos = catalog();
    let core = document(&infos, "", "v1").unwrap();
    assert_eq!(core["openapi"], "3.0.0");
    for kind in ["ConfigMap", "Namespace", "Pod", "Event", "Secret"] {
        supports_field_validation(&core, "", "v1", kind).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    assert!(supports_field_validation(&core, "", "v1", "Widget").is_err());
    let apps = document(&infos, "apps", "v1").unwrap();
    supports_field_validation(&apps, "apps", "v1", "Deployment").unwrap();
    supports_field_validation(&apps, "autoscaling", "v1", "Scale").unwrap();
    let serving = document(&infos, "serving.keelson.dev", "v1alpha1").unwrap();
    supports_field_validation(&serving, "serving.keelson.dev", "v1alpha1", "ModelDeployment")
        .unwrap();
    let crds = document(&infos, "apiextensions.k8s.io", "v1").unwrap();
    supports_field_validation(&crds, "apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        .unwrap();

    let patch = &serving["paths"]["/apis/serving.keelson.dev/v1alpha1/namespaces/{namespace}/modeldeployments/{name}"]
        ["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "serving.keelson.dev", "version": "v1alpha1", "kind": "ModelDeployment"})
    );
    assert_eq!(patch["operationId"], "patchServingKeelsonDevV1alpha1NamespacedModelDeployment");
    let cm_patch = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert_eq!(cm_patch["operationId"], "patchCoreV1NamespacedConfigMap");
    assert!(core["paths"].get("/api/v1/namespaces/{name}").is_some());
    assert!(core["paths"].get("/api/v1/configmaps").is_some(), "list for all namespaces");
    assert!(core["paths"].get("/api/v1/namespaces/{namespace}/pods/{name}/log").is_some());
    assert!(serving["paths"].get("/apis/serving.keelson.dev/v1alpha1/namespaces/{namespace}/modeldeployments/{name}/scale").is_some());
}

#[test]
fn strategic_merge_patch_only_for_builtins() {
    let infos = catalog();
    let core = document(&infos, "", "v1").unwrap();
    assert!(supports_smp(&core, "", "v1", "ConfigMap"));
    assert!(supports_smp(&core, "", "v1", "Pod"));
    let apps = document(&infos, "apps", "v1").unwrap();
    assert!(supports_smp(&apps, "apps", "v1", "Deployment"));
    let serving = document(&infos, "serving.keelson.dev", "v1alpha1").unwrap();
    assert!(!supports_smp(&serving, "serving.keelson.dev", "v1alpha1", "ModelDeployment"));
    let patch = &serving["paths"]["/apis/serving.keelson.dev/v1alpha1/namespaces/{namespace}/modeldeployments/{name}"]
        ["patch"];
    let mut types: Vec<&str> =
        patch["requestBody"]["content"].as_object().unwrap().keys().map(String::as_str).collect();
    types.sort();
    assert_eq!(
        types,
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
}

#[test]
fn component_schemas_are_named_like_upstream_and_refs_resolve() {
    let infos = catalog();
    let core = document(&infos, "", "v1").unwrap();
    let schemas = core["components"]["schemas"].as_object().unwrap();
    let cm = &schemas["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    assert_eq!(cm["properties"]["data"]["type"], "object");
    assert_eq!(
        schemas["io.k8s.api.core.v1.ConfigMapList"]["x-kubernetes-group-version-kind"][0]["kind"],
        "ConfigMapList"
    );
    assert!(schemas.contains_key("io.k8s.api.core.v1.Pod"));

    let serving = document(&infos, "serving.keelson.dev", "v1alpha1").unwrap();
    let schemas = serving["components"]["schemas"].as_object().unwrap();
    let md = &schemas["dev.keelson.serving.v1alpha1.ModelDeployment"];
    assert_eq!(
        md["x-kubernetes-group-version-kind"],
        json!([{"group": "serving.keelson.dev", "version": "v1alpha1", "kind": "ModelDeployment"}])
    );
    assert_eq!(
        md["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(md["properties"]["spec"]["properties"]["replicas"]["type"], "integer");
    assert!(md["properties"]["kind"].is_object());
    assert!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["name"]
            .is_object()
    );
    assert_eq!(schemas[SCALE]["x-kubernetes-group-version-kind"][0]["kind"], "Scale");

    let apiext = document(&infos, "apiextensions.k8s.io", "v1").unwrap();
    assert!(
        apiext["components"]["schemas"]
            .get(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
            )
            .is_some()
    );
    assert!(
        document(&infos, "events.k8s.io", "v1").unwrap()["components"]["schemas"]
            .get("io.k8s.api.events.v1.Event")
            .is_some()
    );
    for (group, name) in [
        ("apiregistration.k8s.io", "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"),
        (
            "admissionregistration.k8s.io",
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        ),
        ("certificates.k8s.io", "io.k8s.api.certificates.v1.CertificateSigningRequest"),
        ("node.k8s.io", "io.k8s.api.node.v1.RuntimeClass"),
    ] {
        let doc = document(&infos, group, "v1").unwrap();
        assert!(doc["components"]["schemas"].get(name).is_some(), "{name}");
    }

    for doc in [&core, &serving, &apiext] {
        let mut refs = Vec::new();
        collect_refs(doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
            assert!(doc["components"]["schemas"].get(name).is_some(), "dangling {r}");
        }
    }
}

#[test]
fn crd_without_schema_still_documents_metadata() {
    let mut info = ResourceInfo::from_crd(&widget_crd()).remove(0);
    info.schema = crate::catalog::Schema::None;
    let doc = document(&[std::sync::Arc::new(info)], "serving.keelson.dev", "v1alpha1").unwrap();
    let md = &doc["components"]["schemas"]["dev.keelson.serving.v1alpha1.ModelDeployment"];
    assert_eq!(md["x-kubernetes-preserve-unknown-fields"], true);
    assert!(md["properties"]["metadata"]["allOf"].is_array());
}

/// The component a property refers to, as upstream writes it (`allOf: [{$ref}]` beside the
/// property's description) or bare.
fn referenced_name(property: &Value) -> &str {
    let reference = property["allOf"][0]["$ref"].as_str().or(property["$ref"].as_str());
    reference.and_then(|r| r.strip_prefix("#/components/schemas/")).unwrap_or_default()
}

#[test]
fn builtin_kinds_refer_to_named_schemas_like_upstream() {
    let infos = catalog();
    let core = document(&infos, "", "v1").unwrap();
    let schemas = core["components"]["schemas"].as_object().unwrap();
    let pod = &schemas["io.k8s.api.core.v1.Pod"];
    assert_eq!(referenced_name(&pod["properties"]["spec"]), "io.k8s.api.core.v1.PodSpec");
    assert!(pod["properties"]["spec"]["description"].is_string());
    assert_eq!(referenced_name(&pod["properties"]["metadata"]), format!("{META}.ObjectMeta"));
    assert!(pod.get("required").is_none(), "metadata is not required");
    assert_eq!(pod["x-kubernetes-group-version-kind"][0]["kind"], "Pod");
    let pod_spec = &schemas["io.k8s.api.core.v1.PodSpec"];
    let containers = &pod_spec["properties"]["containers"];
    assert_eq!(containers["items"]["$ref"], "#/components/schemas/io.k8s.api.core.v1.Container");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(
        pod_spec["properties"]["volumes"]["x-kubernetes-patch-strategy"],
        "merge,retainKeys"
    );
    let resources = &schemas["io.k8s.api.core.v1.Container"]["properties"]["resources"];
    assert_eq!(referenced_name(resources), "io.k8s.api.core.v1.ResourceRequirements");
    let limits = &schemas["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["limits"];
    assert_eq!(
        referenced_name(&limits["additionalProperties"]),
        "io.k8s.apimachinery.pkg.api.resource.Quantity"
    );
    let created = &schemas[&format!("{META}.ObjectMeta")]["properties"]["creationTimestamp"];
    assert_eq!(referenced_name(created), format!("{META}.Time"));
    assert_eq!(schemas[&format!("{META}.Time")]["format"], "date-time");
    assert_eq!(schemas[&format!("{META}.FieldsV1")]["x-kubernetes-preserve-unknown-fields"], true);
    let quantity = &schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"];
    assert_eq!(quantity["x-kubernetes-int-or-string"], true);

    let apps = document(&infos, "apps", "v1").unwrap();
    let schemas = apps["components"]["schemas"].as_object().unwrap();
    let strategy = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
    assert_eq!(referenced_name(strategy), "io.k8s.api.apps.v1.DeploymentStrategy");
    assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
    let max_surge =
        &schemas["io.k8s.api.apps.v1.RollingUpdateDeployment"]["properties"]["maxSurge"];
    assert_eq!(referenced_name(max_surge), "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["x-kubernetes-int-or-string"],
        true
    );
    assert_eq!(
        schemas["io.k8s.apimachinery.pkg.runtime.RawExtension"]["x-kubernetes-preserve-unknown-fields"],
        true
    );

    // The catalog's schemas, which validation reads, stay self-contained.
    let pod = infos.iter().find(|i| i.kind == "Pod").unwrap().schema.get().unwrap();
    assert_eq!(pod["properties"]["spec"]["type"], "object");
}

#[test]
fn every_reference_resolves_in_its_own_document() {
    let infos = catalog();
    for group in groups(&infos) {
        for (version, _) in &group.versions {
            let doc = document(&infos, group.name, version).unwrap();
            let mut refs = Vec::new();
            collect_refs(&doc, &mut refs);
            for r in refs {
                let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
                assert!(
                    doc["components"]["schemas"].get(name).is_some(),
                    "{}/{version}: dangling {r}",
                    group.name
                );
            }
        }
    }
}
