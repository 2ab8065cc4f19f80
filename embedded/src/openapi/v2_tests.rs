//! Tests of the OpenAPI v2 document and its protobuf encoding.

use prost::Message;
use serde_json::{Map, Value, json};

use super::gnostic::{self, AdditionalProperties};
use super::tests::catalog;
use super::v2::{json, protobuf, schema_v2};

const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
const WIDGET: &str = "dev.keelson.serving.v1alpha1.ModelDeployment";

fn document() -> Value {
    serde_json::from_str(&json(&catalog())).unwrap()
}

/// What kube-openapi's `proto.NewOpenAPIData` refuses, which would fail every kubectl command
/// that validates on the client: a reference to a missing definition, several types, an array
/// without exactly one item schema, a primitive type it does not know.
fn check_parses(schema: &Value, definitions: &Map<String, Value>, path: &str) {
    if let Some(reference) = schema.get("$ref") {
        let name = reference.as_str().unwrap().strip_prefix("#/definitions/").unwrap();
        assert!(definitions.contains_key(name), "{path}: dangling reference {name}");
        return;
    }
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "array" => {
            let items =
                schema.get("items").unwrap_or_else(|| panic!("{path}: array without items"));
            assert!(items.is_object(), "{path}: items is not one schema");
            check_parses(items, definitions, &format!("{path}[]"));
        }
        Some(Value::String(t)) => assert!(
            ["object", "string", "number", "integer", "boolean"].contains(&t.as_str()),
            "{path}: unknown type {t}"
        ),
        Some(other) => panic!("{path}: type {other} is not one type"),
    }
    for (name, property) in
        schema.get("properties").and_then(Value::as_object).into_iter().flatten()
    {
        check_parses(property, definitions, &format!("{path}.{name}"));
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        check_parses(extra, definitions, &format!("{path}.*"));
    }
}

#[test]
fn every_definition_parses_as_kubectl_parses_it() {
    let doc = document();
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().unwrap();
    for (name, schema) in definitions {
        check_parses(schema, definitions, name);
    }
    assert!(!doc.to_string().contains("#/components/"), "a v3 reference is left");
}

#[test]
fn kinds_carry_their_group_version_kind_and_list_kinds_their_items() {
    let doc = document();
    let gvk = |name: &str| doc["definitions"][name]["x-kubernetes-group-version-kind"].clone();
    assert_eq!(gvk(DEPLOYMENT), json!([{"group": "apps", "version": "v1", "kind": "Deployment"}]));
    assert_eq!(gvk("io.k8s.api.core.v1.ConfigMap")[0]["kind"], "ConfigMap");
    assert_eq!(gvk(WIDGET)[0]["group"], "serving.keelson.dev");
    assert_eq!(
        doc["definitions"][format!("{DEPLOYMENT}List")]["properties"]["items"]["items"],
        json!({"$ref": format!("#/definitions/{DEPLOYMENT}")})
    );
    let widget = &doc["definitions"][WIDGET];
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(widget["properties"]["metadata"].get("allOf").is_none());
    // The status keeps unknown fields, so kubectl must not check them against properties.
    assert_eq!(
        widget["properties"]["status"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    );
    // Strategic merge patch keys survive as vendor extensions.
    let containers = &doc["definitions"][DEPLOYMENT]["properties"]["spec"]["properties"]["template"]
        ["properties"]["spec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
}

#[test]
fn schemas_v2_cannot_express_are_loosened_as_kube_apiserver_loosens_them() {
    let v3 = json!({
        "type": "object",
        "required": ["name", "note"],
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "note": {"type": "string", "nullable": true},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
            "anything": {"type": "array", "items": {"type": "object", "nullable": true, "properties": {"b": {"type": "string"}}}},
            "loose": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "nullable": true}},
            "either": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "type": "object", "properties": {"a": {"type": "string"}}}
        }
    });
    let v2 = schema_v2(&v3);
    let p = &v2["properties"];
    assert_eq!(v2["required"], json!(["name"]), "a nullable property is not required");
    assert_eq!(p["name"], json!({"type": "string", "minLength": 1}));
    assert_eq!(p["note"], json!({}));
    assert_eq!(p["port"], json!({"x-kubernetes-int-or-string": true}));
    assert_eq!(p["raw"], json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    assert_eq!(p["anything"], json!({"type": "array", "items": {}}));
    assert_eq!(p["loose"], json!({"x-kubernetes-preserve-unknown-fields": true}));
    assert_eq!(p["labels"], json!({"type": "object", "additionalProperties": true}));
    assert_eq!(p["either"], json!({"type": "object", "properties": {"a": {"type": "string"}}}));
}

#[test]
fn protobuf_holds_every_definition_with_its_fields() {
    let doc = document();
    let decoded = gnostic::Document::decode(protobuf(&catalog()).as_slice()).unwrap();
    assert_eq!(decoded.swagger, "2.0");
    assert_eq!(decoded.info.as_ref().unwrap().title, "Kubernetes");
    let definitions = decoded.definitions.unwrap().additional_properties;
    assert_eq!(definitions.len(), doc["definitions"].as_object().unwrap().len());
    let schema = |name: &str| {
        definitions.iter().find(|d| d.name == name).and_then(|d| d.value.clone()).unwrap()
    };
    let property = |schema: &gnostic::Schema, name: &str| {
        schema
            .properties
            .as_ref()
            .unwrap()
            .additional_properties
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.value.clone())
            .unwrap_or_else(|| panic!("no property {name}"))
    };

    let deployment = schema(DEPLOYMENT);
    assert_eq!(deployment.r#type.as_ref().unwrap().value, ["object"]);
    let gvk =
        deployment.vendor_extension.iter().find(|e| e.name == "x-kubernetes-group-version-kind");
    let yaml = &gvk.unwrap().value.as_ref().unwrap().yaml;
    assert_eq!(serde_json::from_str::<Value>(yaml).unwrap()[0]["kind"], "Deployment");
    assert_eq!(
        property(&schema(WIDGET), "metadata").xref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );

    let spec = property(&deployment, "spec");
    assert_eq!(spec.required, ["selector", "template"]);
    assert_eq!(property(&spec, "replicas").format, "int32");
    let labels = property(&property(&spec, "selector"), "matchLabels");
    match labels.additional_properties.and_then(|a| a.oneof) {
        Some(AdditionalProperties::Schema(values)) => {
            assert_eq!(values.r#type.unwrap().value, ["string"])
        }
        other => panic!("matchLabels values: {other:?}"),
    }
    let expressions = property(&property(&spec, "selector"), "matchExpressions");
    assert_eq!(expressions.items.unwrap().schema.len(), 1);
}

#[test]
fn protobuf_carries_json_values_as_yaml_text() {
    let definitions = [
        (
            "Mode",
            json!({"type": "string", "enum": ["Fast", "Safe"], "default": "Safe", "maxLength": 8}),
        ),
        ("Open", json!({"type": "object", "additionalProperties": false})),
    ];
    let encoded =
        gnostic::encode("t", "v", definitions.into_iter().map(|(n, s)| (n.to_owned(), s)));
    let decoded = gnostic::Document::decode(encoded.as_slice()).unwrap();
    let definitions = decoded.definitions.unwrap().additional_properties;
    let mode = definitions[0].value.clone().unwrap();
    assert_eq!(definitions[0].name, "Mode");
    let yaml: Vec<&str> = mode.r#enum.iter().map(|e| e.yaml.as_str()).collect();
    assert_eq!(yaml, [r#""Fast""#, r#""Safe""#]);
    assert_eq!(mode.default.unwrap().yaml, r#""Safe""#);
    assert_eq!(mode.max_length, 8);
    let open = definitions[1].value.clone().unwrap();
    assert_eq!(
        open.additional_properties.and_then(|a| a.oneof),
        Some(AdditionalProperties::Boolean(false))
    );
}
