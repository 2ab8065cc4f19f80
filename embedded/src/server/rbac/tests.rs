use super::*;

fn pods(verb: &str, name: &str, namespace: &str, subresource: &str) -> Attributes {
    Attributes::Resource(ResourceAttributes {
        verb: verb.into(),
        resource: "pods".into(),
        subresource: subresource.into(),
        name: name.into(),
        namespace: namespace.into(),
        ..ResourceAttributes::default()
    })
}

#[test]
fn refusals_are_worded_as_upstream_words_them() {
    let bot = User::service_account("default", "bot");
    let status = forbidden(&bot, &pods("list", "", "default", ""), "").status();
    assert_eq!(
        status["message"],
        "pods is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"]["kind"], "pods");

    let named = forbidden(&bot, &pods("get", "web", "team", "log"), "").status();
    assert_eq!(
        named["message"],
        "pods \"web\" is forbidden: User \"system:serviceaccount:default:bot\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"team\""
    );
    assert_eq!(named["details"]["name"], "web");

    let nodes = Attributes::Resource(ResourceAttributes {
        verb: "list".into(),
        resource: "nodes".into(),
        ..ResourceAttributes::default()
    });
    let why = "RBAC: clusterrole.rbac.authorization.k8s.io \"reader\" not found";
    let cluster = forbidden(&bot, &nodes, why).status();
    assert!(
        cluster["message"].as_str().unwrap().ends_with(&format!("at the cluster scope: {why}")),
        "{cluster}"
    );

    let path = Attributes::NonResource { verb: "get".into(), path: "/metrics".into() };
    assert_eq!(
        forbidden(&bot, &path, "").status()["message"],
        "forbidden: User \"system:serviceaccount:default:bot\" cannot get path \"/metrics\""
    );
}

#[test]
fn resource_paths_are_told_from_discovery_paths() {
    for path in ["/api/v1/pods", "/api/v1/namespaces/x/pods/y/log", "/apis/apps/v1/deployments"] {
        assert!(is_resource_path(path), "{path}");
    }
    for path in ["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/openapi/v3/api/v1"] {
        assert!(!is_resource_path(path), "{path}");
    }
}

#[test]
fn rules_print_in_one_line_with_what_they_name() {
    let rule = PolicyRule {
        verbs: vec!["get".into()],
        api_groups: Some(vec!["".into()]),
        resources: Some(vec!["secrets".into()]),
        resource_names: Some(vec!["token".into()]),
        ..PolicyRule::default()
    };
    assert_eq!(
        compact(&rule),
        r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["token"], Verbs:["get"]}"#
    );
}

#[test]
fn storage_prefixes_are_the_catalogs() {
    let prefix = |resource: &str| {
        let info = crate::catalog::builtin_resource(GROUP, resource).unwrap();
        super::super::paths::resource_prefix(info)
    };
    assert_eq!(prefix("clusterroles"), CLUSTER_ROLES);
    assert_eq!(prefix("clusterrolebindings"), CLUSTER_ROLE_BINDINGS);
    assert_eq!(prefix("roles"), ROLES);
    assert_eq!(prefix("rolebindings"), ROLE_BINDINGS);
    assert!(CLUSTER_ROLES.starts_with(PREFIX));
}

#[test]
fn role_and_binding_names_are_path_segments() {
    use super::super::objects::name_problems;
    for resource in ["clusterroles", "rolebindings"] {
        let info = crate::catalog::builtin_resource(GROUP, resource).unwrap();
        assert!(name_problems(info, "system:aggregate-to-edit").is_empty());
        assert!(!name_problems(info, "a/b").is_empty());
        assert!(!name_problems(info, "..").is_empty());
    }
}
