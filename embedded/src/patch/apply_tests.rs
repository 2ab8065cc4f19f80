//! Tests of server-side apply and managed-fields tracking.

use serde_json::{Value, json};

use super::{
    ApplyError, ApplyRequest, BuiltinLists, Conflict, PatchError, apply, merge_patch,
    parse_apply_body, track_update,
};

const T1: &str = "2025-01-01T00:00:01Z";
const T2: &str = "2025-01-01T00:00:02Z";
const T3: &str = "2025-01-01T00:00:03Z";

fn deploy_lists() -> BuiltinLists {
    BuiltinLists::for_kind("apps", "Deployment")
}

fn do_apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    let lists = deploy_lists();
    apply(ApplyRequest {
        live,
        applied,
        manager,
        force,
        lists: &lists,
        api_version: "apps/v1",
        subresource: None,
        now,
    })
}

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
}

fn managed(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"]
}

/// The fieldsV1 of `manager`'s entry with `operation`.
fn fields_of<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    managed(obj)
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| &e["fieldsV1"])
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image})
}

fn containers_spec(items: Value) -> Value {
    json!({"template": {"spec": {"containers": items}}})
}

fn conflicts(r: Result<Value, ApplyError>) -> Vec<Conflict> {
    match r {
        Err(ApplyError::Conflicts(c)) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

#[test]
fn create_by_apply_records_the_apply_set() {
    let mut applied = deployment(
        json!({"replicas": 2, "template": {"spec": {"containers": [container("nginx", "nginx:1")]}}}),
    );
    applied["metadata"]["labels"] = json!({"app": "web"});
    applied["metadata"]["creationTimestamp"] = Value::Null;
    let out = do_apply(None, &applied, "kubectl", false, T1).unwrap();

    let mut expected = applied.clone();
    expected["metadata"].as_object_mut().unwrap().remove("creationTimestamp");
    expected["metadata"]["managedFields"] = json!([{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}}
            }
        }
    }]);
    assert_eq!(out, expected);
}

#[test]
fn same_value_is_shared_and_removal_waits_for_the_last_owner() {
    let a_cfg = deployment(json!({"replicas": 2, "paused": false}));
    let live = do_apply(None, &a_cfg, "a", false, T1).unwrap();
    let live = do_apply(Some(&live), &deployment(json!({"replicas": 2})), "b", false, T2).unwrap();
    assert_eq!(
        fields_of(&live, "a", "Apply"),
        Some(&json!({"f:spec": {"f:paused": {}, "f:replicas": {}}}))
    );
    assert_eq!(fields_of(&live, "b", "Apply"), Some(&json!({"f:spec": {"f:replicas": {}}})));

    // a stops applying replicas: b still owns it, so it stays; paused goes with a.
    let live =
        do_apply(Some(&live), &deployment(json!({"paused": false})), "a", false, T3).unwrap();
    assert_eq!(live["spec"], json!({"replicas": 2, "paused": false}));
    assert_eq!(fields_of(&live, "a", "Apply"), Some(&json!({"f:spec": {"f:paused": {}}})));

    // b stops applying it too: it is removed.
    let mut b_cfg = deployment(json!({}));
    b_cfg.as_object_mut().unwrap().remove("spec");
    b_cfg["metadata"]["labels"] = json!({"owner": "b"});
    let live = do_apply(Some(&live), &b_cfg, "b", false, T3).unwrap();
    assert_eq!(live["spec"], json!({"paused": false}));
    assert_eq!(
        fields_of(&live, "b", "Apply"),
        Some(&json!({"f:metadata": {"f:labels": {"f:owner": {}}}}))
    );

    // a drops everything it applied: paused (and the now unowned spec) is removed, and a's
    // entry disappears.
    let mut empty = deployment(json!({}));
    empty.as_object_mut().unwrap().remove("spec");
    let live = do_apply(Some(&live), &empty, "a", false, T3).unwrap();
    assert_eq!(live.get("spec"), None);
    assert_eq!(fields_of(&live, "a", "Apply"), None);
}

#[test]
fn conflict_names_the_manager_and_the_field() {
    let live = do_apply(None, &deployment(json!({"replicas": 2})), "a", false, T1).unwrap();
    let c = conflicts(do_apply(Some(&live), &deployment(json!({"replicas": 3})), "b", false, T2));
    assert_eq!(
        c,
        vec![Conflict {
            manager: "a".into(),
            field: ".spec.replicas".into(),
            operation: "Apply".into(),
            api_version: "apps/v1".into(),
            subresource: None,
        }]
    );
    let err =
        do_apply(Some(&live), &deployment(json!({"replicas": 3})), "b", false, T2).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#
    );
}

#[test]
fn force_takes_ownership() {
    let a_cfg = deployment(json!({"replicas": 2, "paused": false}));
    let live = do_apply(None, &a_cfg, "a", false, T1).unwrap();
    let live = do_apply(Some(&live), &deployment(json!({"replicas": 3})), "b", true, T2).unwrap();
    assert_eq!(live["spec"]["replicas"], json!(3));
    assert_eq!(fields_of(&live, "a", "Apply"), Some(&json!({"f:spec": {"f:paused": {}}})));
    assert_eq!(fields_of(&live, "b", "Apply"), Some(&json!({"f:spec": {"f:replicas": {}}})));
    // a applying its old value now conflicts with b.
    let c = conflicts(do_apply(Some(&live), &a_cfg, "a", false, T3));
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].manager.as_str(), c[0].field.as_str()), ("b", ".spec.replicas"));
}

#[test]
fn map_list_items_are_owned_per_item() {
    let live = do_apply(
        None,
        &deployment(containers_spec(json!([container("nginx", "nginx:1")]))),
        "a",
        false,
        T1,
    )
    .unwrap();
    let live = do_apply(
        Some(&live),
        &deployment(containers_spec(json!([container("sidecar", "busybox")]))),
        "b",
        false,
        T2,
    )
    .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([container("nginx", "nginx:1"), container("sidecar", "busybox")])
    );
    assert_eq!(
        fields_of(&live, "b", "Apply"),
        Some(
            &json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        )
    );

    // b changing nginx's image conflicts with a, on that item's field only.
    let c = conflicts(do_apply(
        Some(&live),
        &deployment(containers_spec(json!([
            container("sidecar", "busybox"),
            container("nginx", "nginx:2")
        ]))),
        "b",
        false,
        T3,
    ));
    assert_eq!(
        c.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(),
        [r#".spec.template.spec.containers[name="nginx"].image"#]
    );

    // a dropping nginx removes only that item.
    let mut a_cfg = deployment(json!({}));
    a_cfg["metadata"]["labels"] = json!({"x": "y"});
    let live = do_apply(Some(&live), &a_cfg, "a", false, T3).unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([container("sidecar", "busybox")])
    );
}

#[test]
fn track_update_moves_ownership_and_apply_then_conflicts() {
    let cfg = deployment(json!({"replicas": 2, "paused": false}));
    let live = do_apply(None, &cfg, "kubectl", false, T1).unwrap();
    let scaled = merge_patch(&live, &json!({"spec": {"replicas": 5}})).unwrap();
    let lists = deploy_lists();
    let tracked = track_update(Some(&live), scaled, "kubectl-edit", &lists, "apps/v1", None, T2);
    assert_eq!(tracked["spec"]["replicas"], json!(5));
    assert_eq!(
        *managed(&tracked),
        json!([
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}},
            {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": T2,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ])
    );
    let err = do_apply(Some(&tracked), &cfg, "kubectl", false, T3).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas"#
    );
    // Re-applying the value the updater set is not a conflict.
    let same = deployment(json!({"replicas": 5, "paused": false}));
    let out = do_apply(Some(&tracked), &same, "kubectl", false, T3).unwrap();
    assert_eq!(
        fields_of(&out, "kubectl-edit", "Update"),
        Some(&json!({"f:spec": {"f:replicas": {}}}))
    );
}

#[test]
fn a_create_records_the_fields_an_update_from_nothing_records() {
    // Creates take a path of their own (no comparison with an old object): it must own
    // exactly what comparing with an empty object finds, lists of every kind included.
    let created = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {},
            "template": {"spec": {
                "containers": [
                    {"name": "a", "image": "nginx", "args": ["-v", "-v"],
                     "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
                     "env": []},
                    {"image": "keyless"},
                    {"name": "a", "image": "duplicate"}
                ],
                "tolerations": [{"key": "k", "operator": "Exists"}]
            }}
        }
    });
    let lists = deploy_lists();
    let track = |old: Option<&Value>| {
        track_update(old, created.clone(), "kubectl-create", &lists, "apps/v1", None, T1)
    };
    let on_create = track(None);
    assert_eq!(on_create, track(Some(&json!({}))));
    let fields = fields_of(&on_create, "kubectl-create", "Update").unwrap();
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"]["f:args"],
        json!({})
    );
    assert_eq!(fields["f:metadata"]["f:labels"], json!({".": {}, "f:app": {}}));
}

#[test]
fn a_create_sending_managed_fields_takes_the_fields_it_sends_from_them() {
    let mut created = deployment(json!({"replicas": 2}));
    created["metadata"]["managedFields"] = json!([{
        "manager": "restorer", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}
    }]);
    let lists = deploy_lists();
    let created = track_update(None, created, "kubectl-create", &lists, "apps/v1", None, T2);
    assert_eq!(
        fields_of(&created, "restorer", "Update"),
        Some(&json!({"f:spec": {"f:paused": {}}}))
    );
    assert_eq!(
        fields_of(&created, "kubectl-create", "Update"),
        Some(&json!({"f:spec": {".": {}, "f:replicas": {}}}))
    );
}

#[test]
fn client_side_apply_create_then_server_side_apply_conflicts_like_upstream() {
    let lists = BuiltinLists::for_kind("", "ConfigMap");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": "x"}}, "data": {"a": "1"}});
    let created = track_update(None, cm, "kubectl-client-side-apply", &lists, "v1", None, T1);
    assert_eq!(
        fields_of(&created, "kubectl-client-side-apply", "Update"),
        Some(
            &json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        )
    );
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}});
    let req = ApplyRequest {
        live: Some(&created),
        applied: &applied,
        manager: "kubectl",
        force: false,
        lists: &lists,
        api_version: "v1",
        subresource: None,
        now: T2,
    };
    let err = apply(req).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a"#
    );
    let ApplyError::Conflicts(c) = err else { unreachable!() };
    assert_eq!(c[0].message(), r#"conflict with "kubectl-client-side-apply" using v1"#);
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let live = do_apply(None, &deployment(json!({"replicas": 2, "paused": false})), "a", false, T1)
        .unwrap();
    let err =
        do_apply(Some(&live), &deployment(json!({"replicas": 3, "paused": true})), "b", false, T2)
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.paused\n- .spec.replicas"
    );
}

#[test]
fn noop_apply_keeps_time_and_object() {
    let cfg = deployment(json!({"replicas": 2}));
    let live = do_apply(None, &cfg, "a", false, T1).unwrap();
    let again = do_apply(Some(&live), &cfg, "a", false, T2).unwrap();
    assert_eq!(again, live);
}

#[test]
fn apply_to_status_subresource_is_its_own_manager() {
    let lists = deploy_lists();
    let live = do_apply(None, &deployment(json!({"replicas": 2})), "ctl", false, T1).unwrap();
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "status": {"conditions": [{"type": "Available", "status": "True"}]}});
    let out = apply(ApplyRequest {
        live: Some(&live),
        applied: &status,
        manager: "ctl",
        force: false,
        lists: &lists,
        api_version: "apps/v1",
        subresource: Some("status"),
        now: T2,
    })
    .unwrap();
    let entries = managed(&out).as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["subresource"], json!("status"));
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
    );
    assert_eq!(out["spec"]["replicas"], json!(2));
}

#[test]
fn invalid_apply_configurations() {
    let live = do_apply(None, &deployment(json!({"replicas": 2})), "a", false, T1).unwrap();
    let mut wrong_version = deployment(json!({}));
    wrong_version["apiVersion"] = json!("apps/v1beta1");
    let mut with_managed = deployment(json!({}));
    with_managed["metadata"]["managedFields"] = json!([]);
    let no_key = deployment(containers_spec(json!([{"image": "x"}])));
    let dup = deployment(containers_spec(json!([container("a", "x"), container("a", "y")])));
    for bad in [wrong_version, with_managed, no_key, dup, json!([1])] {
        assert!(
            matches!(do_apply(Some(&live), &bad, "b", false, T2), Err(ApplyError::Invalid(_))),
            "{bad}"
        );
    }
    let err = do_apply(None, &json!({"apiVersion": "v1", "kind": "Deployment"}), "b", false, T2)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Incorrect version specified in apply patch. Specified patch version: v1, expected: apps/v1"
    );
}

#[test]
fn container_port_keys_use_the_protocol_default() {
    let ports = |p: Value| deployment(containers_spec(json!([{"name": "c", "ports": p}])));
    let live = do_apply(
        None,
        &ports(json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])),
        "a",
        false,
        T1,
    )
    .unwrap();
    let out = do_apply(
        Some(&live),
        &ports(json!([{"containerPort": 80, "name": "http"}])),
        "b",
        false,
        T2,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])
    );
    let fields = fields_of(&out, "b", "Apply").unwrap();
    let port_fields =
        &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:ports"];
    assert_eq!(
        *port_fields,
        json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}}})
    );

    // When a stops applying the port, b still owns the item; a's protocol goes.
    let out =
        do_apply(Some(&out), &deployment(containers_spec(json!([{"name": "c"}]))), "a", false, T3)
            .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "name": "http"}])
    );
}

#[test]
fn managed_fields_can_be_reset_and_are_capped() {
    let lists = BuiltinLists::for_kind("", "ConfigMap");
    let mut obj =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {}}});
    for i in 1..=11 {
        let mut next = obj.clone();
        next["metadata"]["labels"][format!("l{i}")] = json!("v");
        obj = track_update(
            Some(&obj),
            next,
            &format!("m{i:02}"),
            &lists,
            "v1",
            None,
            &format!("2025-01-01T00:00:{i:02}Z"),
        );
    }
    let entries = managed(&obj).as_array().unwrap();
    let managers: Vec<&str> = entries.iter().map(|e| e["manager"].as_str().unwrap()).collect();
    assert_eq!(
        managers,
        ["ancient-changes", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11"]
    );
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:l1": {}, "f:l2": {}}}})
    );
    assert_eq!(entries[0]["time"], json!("2025-01-01T00:00:02Z"));

    let mut reset = obj.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    let out = track_update(Some(&obj), reset, "kubectl-edit", &lists, "v1", None, T3);
    assert_eq!(out["metadata"].get("managedFields"), None);
    assert_eq!(out["metadata"]["labels"], obj["metadata"]["labels"]);
}

#[test]
fn removed_fields_leave_every_set() {
    let lists = deploy_lists();
    let live = do_apply(None, &deployment(json!({"replicas": 2, "paused": false})), "a", false, T1)
        .unwrap();
    let mut next = live.clone();
    next["spec"].as_object_mut().unwrap().remove("paused");
    let out = track_update(Some(&live), next, "editor", &lists, "apps/v1", None, T2);
    assert_eq!(fields_of(&out, "a", "Apply"), Some(&json!({"f:spec": {"f:replicas": {}}})));
    assert_eq!(fields_of(&out, "editor", "Update"), None);
}

#[test]
fn parses_yaml_and_json_bodies() {
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n  n: \"2\"\nbinaryData: {}\n";
    assert_eq!(
        parse_apply_body(yaml).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "n": "2"}, "binaryData": {}})
    );
    let yaml_numbers = b"spec:\n  replicas: 3\n  ratio: 0.5\n  paused: true\n  x: null\n";
    assert_eq!(
        parse_apply_body(yaml_numbers).unwrap(),
        json!({"spec": {"replicas": 3, "ratio": 0.5, "paused": true, "x": null}})
    );
    let body = br#" {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}"#;
    assert_eq!(
        parse_apply_body(body).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    );
    for bad in [
        &b""[..],
        b"  \n",
        b"- a\n- b\n",
        b"a: [1,\n",
        b"\xff\xfe",
        b"{\"a\": [}",
        b"just a string",
    ] {
        assert!(
            matches!(parse_apply_body(bad), Err(PatchError::Invalid(_))),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn crd_set_lists_are_owned_per_value() {
    let lists = super::lists_tests::schema_lists(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}}
        }}}}),
    );
    let widget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": spec});
    let run = |live: Option<&Value>, applied: &Value, manager: &str| {
        apply(ApplyRequest {
            live,
            applied,
            manager,
            force: false,
            lists: &lists,
            api_version: "example.com/v1",
            subresource: None,
            now: T1,
        })
    };
    let live = run(None, &widget(json!({"hosts": ["a", "b"], "args": ["x"]})), "a").unwrap();
    let live = run(Some(&live), &widget(json!({"hosts": ["c"]})), "b").unwrap();
    assert_eq!(live["spec"], json!({"hosts": ["a", "b", "c"], "args": ["x"]}));
    assert_eq!(
        fields_of(&live, "a", "Apply"),
        Some(&json!({"f:spec": {"f:args": {}, "f:hosts": {"v:\"a\"": {}, "v:\"b\"": {}}}}))
    );
    assert_eq!(
        fields_of(&live, "b", "Apply"),
        Some(&json!({"f:spec": {"f:hosts": {"v:\"c\"": {}}}}))
    );
    // Atomic lists conflict as a whole.
    let c = conflicts(run(Some(&live), &widget(json!({"args": ["y"]})), "b"));
    assert_eq!(c.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), [".spec.args"]);
    // a drops "b" from its hosts: only that value goes.
    let live = run(Some(&live), &widget(json!({"hosts": ["a"], "args": ["x"]})), "a").unwrap();
    assert_eq!(live["spec"]["hosts"], json!(["a", "c"]));
}

#[test]
fn flow_style_yaml_body_starting_with_a_brace() {
    assert_eq!(
        parse_apply_body(b"{kind: ConfigMap, data: {a: b}}").unwrap(),
        json!({"kind": "ConfigMap", "data": {"a": "b"}})
    );
}
