//! Tests of the list semantics tables.

use serde_json::json;

use super::{BuiltinLists, ListKind, ListSemantics, SchemaLists};
use crate::validation::SchemaValidator;

fn map(keys: &[&str]) -> ListKind {
    ListKind::Map(keys.iter().map(|k| (*k).to_owned()).collect())
}

#[test]
fn builtin_pod_template_lists() {
    let d = BuiltinLists::for_kind("apps", "Deployment");
    fn at(rest: &[&'static str]) -> Vec<&'static str> {
        [&["spec", "template", "spec"][..], rest].concat()
    }
    assert_eq!(d.list_kind(&at(&["containers"])), map(&["name"]));
    assert_eq!(d.list_kind(&at(&["initContainers"])), map(&["name"]));
    assert_eq!(d.list_kind(&at(&["containers", "*", "env"])), map(&["name"]));
    assert_eq!(
        d.list_kind(&at(&["containers", "*", "ports"])),
        map(&["containerPort", "protocol"])
    );
    assert_eq!(d.list_kind(&at(&["containers", "*", "volumeMounts"])), map(&["mountPath"]));
    assert_eq!(d.list_kind(&at(&["containers", "*", "envFrom"])), ListKind::Atomic);
    assert_eq!(d.list_kind(&at(&["volumes"])), map(&["name"]));
    assert_eq!(d.list_kind(&at(&["tolerations"])), ListKind::Atomic);
    assert_eq!(d.list_kind(&at(&["hostAliases"])), map(&["ip"]));
    assert_eq!(d.list_kind(&["spec", "containers"]), ListKind::Atomic);
    assert_eq!(d.list_kind(&["metadata", "finalizers"]), ListKind::Set);
    assert_eq!(d.list_kind(&["metadata", "ownerReferences"]), map(&["uid"]));
    assert_eq!(d.list_kind(&["status", "conditions"]), map(&["type"]));
    assert_eq!(d.key_default(&at(&["containers", "*", "ports"]), "protocol"), Some(json!("TCP")));

    let pod = BuiltinLists::for_kind("", "Pod");
    assert_eq!(pod.list_kind(&["spec", "containers", "*", "volumeDevices"]), map(&["devicePath"]));
    assert_eq!(pod.list_kind(&["spec", "imagePullSecrets"]), map(&["name"]));
    let job = BuiltinLists::for_kind("batch", "Job");
    assert_eq!(job.list_kind(&at(&["ephemeralContainers"])), map(&["name"]));
}

#[test]
fn builtin_kind_specific_lists() {
    assert_eq!(
        BuiltinLists::for_kind("", "Service").list_kind(&["spec", "ports"]),
        map(&["port", "protocol"])
    );
    assert_eq!(
        BuiltinLists::for_kind("", "Node").list_kind(&["status", "addresses"]),
        map(&["type"])
    );
    assert_eq!(
        BuiltinLists::for_kind("", "ServiceAccount").list_kind(&["secrets"]),
        map(&["name"])
    );
    assert_eq!(BuiltinLists::for_kind("", "ConfigMap").list_kind(&["secrets"]), ListKind::Atomic);
    assert_eq!(
        BuiltinLists::for_kind("", "Namespace").list_kind(&["spec", "finalizers"]),
        ListKind::Atomic
    );
}

#[test]
fn schema_lists_read_crd_annotations() {
    let schema = schema_lists(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "hosts": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "plain": {"type": "array", "items": {"type": "string"}},
                "routes": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "port"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer", "default": 80},
                        "rules": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
                    }}},
                "byName": {"type": "object", "additionalProperties": {"type": "array",
                    "x-kubernetes-list-type": "set", "items": {"type": "string"}}}
            }}
        }
    }));
    assert_eq!(schema.list_kind(&["spec", "hosts"]), ListKind::Set);
    assert_eq!(schema.list_kind(&["spec", "plain"]), ListKind::Atomic);
    assert_eq!(schema.list_kind(&["spec", "routes"]), map(&["name", "port"]));
    assert_eq!(schema.list_kind(&["spec", "routes", "*", "rules"]), ListKind::Set);
    assert_eq!(schema.list_kind(&["spec", "byName", "anything"]), ListKind::Set);
    assert_eq!(schema.list_kind(&["spec", "unknown"]), ListKind::Atomic);
    assert_eq!(schema.list_kind(&["metadata", "finalizers"]), ListKind::Set);
    assert_eq!(schema.key_default(&["spec", "routes"], "port"), Some(json!(80)));
    assert_eq!(schema.key_default(&["spec", "routes"], "name"), None);
}

/// The list semantics of a CRD version with `schema`.
pub(super) fn schema_lists(schema: serde_json::Value) -> SchemaLists {
    let validator = SchemaValidator::new(&schema, "example.com", "v1", "Widget").unwrap();
    SchemaLists::new(std::sync::Arc::new(validator))
}
