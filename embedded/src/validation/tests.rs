//! End-to-end tests of [`SchemaValidator`] on small hand-written schemas.

use super::*;
use serde_json::json;

use FieldErrorKind::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["backend"],
                "properties": {
                    "backend": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                    "storageStrategy": {"type": "string", "enum": ["SharedPVC", "Memory", "NodeLocal"],
                                        "default": "Memory"},
                    "clusterName": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "clusterName is immutable"}]},
                    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "id": {"type": "integer"}}}}
                },
                "x-kubernetes-validations": [
                    {"rule": "self.replicas <= 5 || self.storageStrategy != 'Memory'",
                     "message": "at most 5 replicas with Memory storage", "fieldPath": ".replicas"}
                ]
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    })
}

fn validator() -> SchemaValidator {
    SchemaValidator::new(&schema(), "keelson.dev", "v1alpha1", "Cluster").unwrap()
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "keelson.dev/v1alpha1", "kind": "Cluster", "metadata": {"name": "c"}, "spec": spec})
}

fn failures(result: Result<Admitted, FieldErrors>) -> Vec<(String, FieldErrorKind)> {
    result.unwrap_err().0.into_iter().map(|e| (e.field, e.kind)).collect()
}

fn f(field: &str, kind: FieldErrorKind) -> (String, FieldErrorKind) {
    (field.to_string(), kind)
}

#[test]
fn a_valid_object_is_pruned_and_defaulted() {
    let input = object(json!({"backend": "b", "foo": 1, "config": {"any": {"thing": 1}},
                              "items": [{"id": 1, "bar": 2}]}));
    let admitted = validator().validate(input, None).unwrap();
    assert_eq!(admitted.pruned_fields, vec!["spec.foo", "spec.items[0].bar"]);
    assert_eq!(
        admitted.object,
        object(json!({"backend": "b", "replicas": 1, "storageStrategy": "Memory",
                      "config": {"any": {"thing": 1}}, "items": [{"id": 1}]}))
    );
}

#[test]
fn schema_errors_use_api_server_texts() {
    let err = validator()
        .validate(object(json!({"replicas": -1, "storageStrategy": "Foo"})), None)
        .unwrap_err();
    let texts: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        vec![
            "spec.backend: Required value",
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
            r#"spec.storageStrategy: Unsupported value: "Foo": supported values: "SharedPVC", "Memory", "NodeLocal""#,
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; \
             correct the existing errors to complete validation",
        ]
    );
    assert_eq!(err.to_string(), texts.join(", "));
    assert_eq!(err.0[1].kind.cause_type(), "FieldValueInvalid");
}

#[test]
fn wrong_type_is_type_invalid_and_skips_cel() {
    let err = validator()
        .validate(object(json!({"backend": "b", "replicas": "string"})), None)
        .unwrap_err();
    assert_eq!(
        err.0[0].to_string(),
        r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
    );
    assert_eq!(failures(Err(err)), vec![f("spec.replicas", TypeInvalid), f("", Invalid)]);
}

#[test]
fn cel_rule_refuses_with_its_message_and_field_path() {
    let bad = object(json!({"backend": "b", "replicas": 6}));
    let err = validator().validate(bad, None).unwrap_err();
    assert_eq!(err.0.len(), 1);
    assert_eq!(err.0[0].field, "spec.replicas");
    assert_eq!(err.0[0].kind, Invalid);
    assert_eq!(
        err.0[0].to_string(),
        r#"spec.replicas: Invalid value: "object": at most 5 replicas with Memory storage"#
    );
    let good = object(json!({"backend": "b", "replicas": 6, "storageStrategy": "NodeLocal"}));
    assert!(validator().validate(good, None).is_ok());
}

#[test]
fn transition_rule_runs_only_on_update_with_an_old_value() {
    let v = validator();
    let stored = object(json!({"backend": "b", "clusterName": "one"}));
    // Create: no old object, the rule does not run.
    assert!(v.validate(stored.clone(), None).is_ok());
    // Update that changes the field: refused.
    let changed = object(json!({"backend": "b", "clusterName": "two"}));
    assert_eq!(
        v.validate(changed.clone(), Some(&stored)).unwrap_err().0,
        vec![FieldError {
            field: "spec.clusterName".to_string(),
            kind: Invalid,
            message: r#"Invalid value: "string": clusterName is immutable"#.to_string(),
        }]
    );
    // Unchanged update: accepted.
    assert!(v.validate(stored.clone(), Some(&stored)).is_ok());
    // Update that sets the field for the first time: no old value there, the rule does not run.
    let before = object(json!({"backend": "b"}));
    assert!(v.validate(changed, Some(&before)).is_ok());
}

#[test]
fn optional_old_self_runs_on_create() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"x": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "oldSelf == null || self.x == oldSelf.x",
                                      "optionalOldSelf": true, "message": "x is fixed"},
                                     {"rule": "self.x != 'bad'", "messageExpression": "'x must not be ' + self.x"}]}}});
    let v = SchemaValidator::new(&schema, "g", "v1", "K").unwrap();
    assert!(v.validate(json!({"spec": {"x": "a"}}), None).is_ok());
    let err =
        v.validate(json!({"spec": {"x": "bad"}}), Some(&json!({"spec": {"x": "a"}}))).unwrap_err();
    let messages: Vec<&str> = err.0.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        vec![
            r#"Invalid value: "object": x is fixed"#,
            r#"Invalid value: "object": x must not be bad"#
        ]
    );
}

#[test]
fn root_rules_see_the_kind() {
    let schema = json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "kind == 'Cluster' && apiVersion == 'keelson.dev/v1alpha1'", "message": "wrong kind"}]});
    let v = SchemaValidator::new(&schema, "keelson.dev", "v1alpha1", "Cluster").unwrap();
    assert!(v.validate(json!({"kind": "Cluster"}), None).is_ok());
    let v = SchemaValidator::new(&schema, "keelson.dev", "v1alpha1", "Other").unwrap();
    assert_eq!(failures(v.validate(json!({"kind": "Other"}), None)), vec![f("", Invalid)]);
}

#[test]
fn non_object_input_is_refused() {
    assert_eq!(failures(validator().validate(json!([1]), None)), vec![f("", TypeInvalid)]);
}

#[test]
fn a_broken_rule_refuses_every_object() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.a ==="}]}}});
    let v = SchemaValidator::new(&schema, "g", "v1", "K").unwrap();
    assert_eq!(v.rule_compile_errors().len(), 1);
    assert_eq!(failures(v.validate(json!({}), None)), vec![f("spec", Invalid)]);
}

#[test]
fn invalid_pattern_and_non_object_schema_are_schema_errors() {
    assert_eq!(
        SchemaValidator::new(&json!(true), "g", "v1", "K").unwrap_err(),
        SchemaError::NotAnObject
    );
    let schema =
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "[a-"}}});
    assert!(matches!(
        SchemaValidator::new(&schema, "g", "v1", "K"),
        Err(SchemaError::InvalidPattern { .. })
    ));
}

#[test]
fn for_crd_uses_the_named_version() {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusters.keelson.dev"},
        "spec": {
            "group": "keelson.dev",
            "names": {"kind": "Cluster", "plural": "clusters"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema()}
            }]
        }
    }))
    .unwrap();
    let v = SchemaValidator::for_crd(&crd, "v1alpha1").unwrap();
    assert_eq!(
        failures(v.validate(object(json!({"replicas": -1, "backend": "b"})), None)),
        vec![f("spec.replicas", Invalid)]
    );
    assert!(matches!(
        SchemaValidator::for_crd(&crd, "v2"),
        Err(SchemaError::VersionNotFound { .. })
    ));
}

#[test]
fn validator_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SchemaValidator>();
    let v = std::sync::Arc::new(validator());
    let handle = {
        let v = v.clone();
        std::thread::spawn(move || {
            v.validate(object(json!({"backend": "b", "replicas": 9})), None).is_err()
        })
    };
    assert!(handle.join().unwrap());
}
