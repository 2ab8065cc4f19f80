//! Tests of JSON patch and JSON merge patch.

use serde_json::json;

use super::{PatchError, json_patch, merge_patch};

#[test]
fn test_op_failure_is_test_failed() {
    let doc = json!({"metadata": {"name": "a", "finalizers": ["x"]}});
    let patch = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "y"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]);
    let err = json_patch(&doc, &patch).unwrap_err();
    assert!(matches!(err, PatchError::TestFailed(_)), "{err:?}");
}

#[test]
fn test_op_on_missing_path_with_value_fails() {
    let doc = json!({"metadata": {"name": "a"}});
    let patch = json!([{"op": "test", "path": "/metadata/finalizers", "value": ["f"]}]);
    assert!(matches!(json_patch(&doc, &patch), Err(PatchError::TestFailed(_))));
}

#[test]
fn finalizer_add_when_absent_as_kube_runtime_sends_it() {
    let doc = json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {}});
    let patch = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
    ]);
    let out = json_patch(&doc, &patch).unwrap();
    assert_eq!(
        out,
        json!({"metadata": {"name": "a", "namespace": "ns", "finalizers": ["f"]}, "spec": {}})
    );
    // The same patch again fails: finalizers is no longer null.
    assert!(matches!(json_patch(&out, &patch), Err(PatchError::TestFailed(_))));
}

#[test]
fn finalizer_append_and_remove_as_kube_runtime_sends_them() {
    let doc = json!({"metadata": {"name": "a", "finalizers": ["other"]}});
    let add = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": ["other"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f"}
    ]);
    let out = json_patch(&doc, &add).unwrap();
    assert_eq!(out, json!({"metadata": {"name": "a", "finalizers": ["other", "f"]}}));

    let doc = json!({"metadata": {"name": "a", "finalizers": ["f"]}});
    let remove = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "f"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]);
    let out = json_patch(&doc, &remove).unwrap();
    assert_eq!(out, json!({"metadata": {"name": "a", "finalizers": []}}));
    // Removing again: the test on index 0 finds nothing and fails.
    assert!(matches!(json_patch(&out, &remove), Err(PatchError::TestFailed(_))));
}

#[test]
fn failed_patch_leaves_input_untouched_and_is_atomic() {
    let doc = json!({"a": 1});
    let patch = json!([
        {"op": "add", "path": "/b", "value": 2},
        {"op": "replace", "path": "/missing", "value": 3}
    ]);
    let err = json_patch(&doc, &patch).unwrap_err();
    assert!(matches!(err, PatchError::Invalid(_)), "{err:?}");
    assert_eq!(doc, json!({"a": 1}));
}

#[test]
fn malformed_patch_is_invalid() {
    let doc = json!({"a": 1});
    for patch in
        [json!({"op": "add"}), json!([{"op": "frobnicate", "path": "/a"}]), json!([{"path": "/a"}])]
    {
        let err = json_patch(&doc, &patch).unwrap_err();
        assert!(matches!(err, PatchError::Invalid(_)), "{patch}: {err:?}");
    }
}

#[test]
fn move_copy_replace() {
    let doc = json!({"a": {"b": 1}, "l": [1, 2]});
    let patch = json!([
        {"op": "copy", "from": "/a/b", "path": "/c"},
        {"op": "move", "from": "/l/0", "path": "/l/-"},
        {"op": "replace", "path": "/a", "value": "x"}
    ]);
    assert_eq!(json_patch(&doc, &patch).unwrap(), json!({"a": "x", "c": 1, "l": [2, 1]}));
}

#[test]
fn merge_patch_null_deletes_and_maps_merge() {
    let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1, "list": [1, 2]}});
    let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"list": [3]}});
    assert_eq!(
        merge_patch(&doc, &patch).unwrap(),
        json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"replicas": 1, "list": [3]}})
    );
}

#[test]
fn merge_patch_must_be_an_object() {
    let doc = json!({"a": 1});
    assert!(matches!(merge_patch(&doc, &json!([1])), Err(PatchError::Invalid(_))));
    assert!(matches!(merge_patch(&doc, &json!("x")), Err(PatchError::Invalid(_))));
}

#[test]
fn patch_types_from_content_type() {
    use super::PatchType;
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json; charset=utf-8", Some(PatchType::Merge)),
        ("Application/Strategic-Merge-Patch+JSON", Some(PatchType::Strategic)),
        ("application/apply-patch+yaml", Some(PatchType::Apply)),
        ("application/apply-patch+cbor", None),
        ("application/json", None),
        ("", None),
    ];
    for (ct, expected) in cases {
        assert_eq!(PatchType::from_content_type(ct), expected, "{ct}");
    }
    assert_eq!(PatchType::Apply.content_type(), "application/apply-patch+yaml");
}
