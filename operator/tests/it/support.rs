//! Helpers shared by the test modules: the workspace's folders and Keelson's CRD validators.

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use keelson_embedded::validation::SchemaValidator;

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The CRD serving `apiVersion` and `kind`, if it is one of Keelson's.
pub fn crd_for(api_version: &str, kind: &str) -> Option<CustomResourceDefinition> {
    let (group, version) = api_version.split_once('/')?;
    keelson_api_crds::all_crds().into_iter().find(|crd| {
        crd.spec.group == group
            && crd.spec.names.kind == kind
            && crd.spec.versions.iter().any(|v| v.name == version)
    })
}

/// Admits `object` the way the API server does for Keelson kinds: schema and CEL rules
/// (against `old` on update), then Keelson's own checks. Returns every problem as `field: message`.
pub fn admit(
    object: &serde_json::Value,
    old: Option<&serde_json::Value>,
) -> Result<(), Vec<String>> {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let crd =
        crd_for(api_version, kind).unwrap_or_else(|| panic!("no CRD for {api_version} {kind}"));
    let version = api_version.split_once('/').unwrap().1;
    let validator = SchemaValidator::for_crd(&crd, version).unwrap();
    let admitted = validator.validate(object.clone(), old).map_err(|errors| {
        errors.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>()
    })?;
    let problems = keelson_webhooks::check(&crd.spec.group, kind, &admitted.object, old);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.iter().map(ToString::to_string).collect())
    }
}
