//! Tests of strategic merge patch.

use serde_json::{Value, json};

use super::{BuiltinLists, PatchError, strategic_merge_patch};

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": ["a", "b"], "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {
                "containers": [
                    {"name": "nginx", "image": "nginx:1.0",
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                    {"name": "sidecar", "image": "busybox"}
                ],
                "tolerations": [{"key": "x", "operator": "Exists"}]
            }}
        }
    })
}

fn smp(doc: &Value, patch: Value) -> Result<Value, PatchError> {
    strategic_merge_patch(doc, &patch, &BuiltinLists::for_kind("apps", "Deployment"))
}

fn containers(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]["containers"]
}

#[test]
fn set_image_keeps_other_containers_and_env() {
    let doc = deployment();
    let out = smp(&doc, json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}}))
        .unwrap();
    let mut expected = deployment();
    expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.25");
    assert_eq!(out, expected);
}

#[test]
fn env_merges_by_name() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx",
            "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}}}),
    )
    .unwrap();
    assert_eq!(
        containers(&out)[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
    );
    assert_eq!(containers(&out)[1], json!({"name": "sidecar", "image": "busybox"}));
}

#[test]
fn new_items_without_order_directive_go_first_as_upstream() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx", "env": [{"name": "D", "value": "4"}]}]}}}}),
    )
    .unwrap();
    let names: Vec<&str> = containers(&out)[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["D", "A", "B"]);
}

#[test]
fn patch_delete_removes_a_container() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}),
    )
    .unwrap();
    assert_eq!(containers(&out).as_array().unwrap().len(), 1);
    assert_eq!(containers(&out)[0]["name"], json!("nginx"));
    assert_eq!(
        containers(&out)[0]["env"],
        deployment()["spec"]["template"]["spec"]["containers"][0]["env"]
    );
}

#[test]
fn patch_replace_on_list_and_map() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}}}}),
    )
    .unwrap();
    assert_eq!(*containers(&out), json!([{"name": "only", "image": "x"}]));

    let out =
        smp(&deployment(), json!({"metadata": {"labels": {"$patch": "replace", "tier": "web"}}}))
            .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"tier": "web"}));
}

#[test]
fn set_element_order_reorders_and_places_new_items() {
    let doc = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]}]}}}});
    let reorder = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
        "$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "B"}]}]}}}});
    let out = smp(&doc, reorder).unwrap();
    assert_eq!(
        containers(&out)[0]["env"],
        json!([{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );

    let insert = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "c"}],
        "containers": [{"name": "c",
            "$setElementOrder/env": [{"name": "A"}, {"name": "D"}, {"name": "B"}],
            "env": [{"name": "D", "value": "4"}]}]}}}});
    let out = smp(&doc, insert).unwrap();
    let names: Vec<&str> = containers(&out)[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["A", "D", "B", "C"]);
    assert_eq!(containers(&out)[0]["env"][1], json!({"name": "D", "value": "4"}));

    let mismatched = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
        "$setElementOrder/env": [{"name": "A"}],
        "env": [{"name": "Z", "value": "9"}]}]}}}});
    assert!(matches!(smp(&doc, mismatched), Err(PatchError::Invalid(_))));
}

#[test]
fn retain_keys_drops_unlisted_fields() {
    let out = smp(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    )
    .unwrap();
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));

    let bad =
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}});
    assert!(matches!(smp(&deployment(), bad), Err(PatchError::Invalid(_))));
}

#[test]
fn delete_from_primitive_list() {
    let out =
        smp(&deployment(), json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}))
            .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    // kubectl's form: order, deletion and addition together.
    let out = smp(
        &deployment(),
        json!({"metadata": {"$setElementOrder/finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "c"]));
}

#[test]
fn finalizers_are_unioned() {
    let out = smp(&deployment(), json!({"metadata": {"finalizers": ["b", "c"]}})).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
}

#[test]
fn tolerations_are_replaced() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"tolerations": [{"key": "y", "operator": "Exists"}]}}}}),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["tolerations"],
        json!([{"key": "y", "operator": "Exists"}])
    );
}

#[test]
fn null_deletes_and_maps_merge() {
    let out = smp(
        &deployment(),
        json!({"metadata": {"labels": {"app": null, "tier": "web"}}, "spec": {"replicas": null, "paused": true}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"tier": "web"}));
    assert_eq!(out["spec"].get("replicas"), None);
    assert_eq!(out["spec"]["paused"], json!(true));
    assert_eq!(out["spec"]["strategy"], deployment()["spec"]["strategy"]);
}

#[test]
fn container_ports_merge_by_container_port() {
    let out = smp(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "nginx",
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]}}}}),
    )
    .unwrap();
    assert_eq!(
        containers(&out)[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}])
    );
}

#[test]
fn service_ports_merge_by_port() {
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let out = strategic_merge_patch(
        &svc,
        &json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
        &BuiltinLists::for_kind("", "Service"),
    )
    .unwrap();
    assert_eq!(out, json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}}));
}

#[test]
fn config_map_client_side_apply_patch() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
    let patch = json!({"data": {"a": null, "c": "3"},
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}});
    let out = strategic_merge_patch(&cm, &patch, &BuiltinLists::for_kind("", "ConfigMap")).unwrap();
    assert_eq!(
        out,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "data": {"b": "2", "c": "3"}})
    );
}

#[test]
fn new_values_have_their_directives_resolved() {
    let doc = json!({"spec": {"template": {"spec": {}}}});
    let out = smp(
        &doc,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "x", "command": null},
            {"name": "gone", "$patch": "delete"}
        ]}}}}),
    )
    .unwrap();
    assert_eq!(*containers(&out), json!([{"name": "a", "image": "x"}]));
}

#[test]
fn invalid_patches() {
    let doc = deployment();
    assert!(matches!(smp(&doc, json!([1])), Err(PatchError::Invalid(_))));
    assert!(matches!(smp(&json!([]), json!({})), Err(PatchError::Invalid(_))));
    let missing_key = json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}});
    assert!(matches!(smp(&doc, missing_key), Err(PatchError::Invalid(_))));
    let bad_directive = json!({"metadata": {"labels": {"$patch": "explode"}}});
    assert!(matches!(smp(&doc, bad_directive), Err(PatchError::Invalid(_))));
}
