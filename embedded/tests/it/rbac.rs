//! RBAC: service accounts may do what their bindings grant, roles cannot grant more than their
//! writer holds, and impersonation acts as another user once RBAC allows it.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use keelson_embedded::server::RunningServer;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::support::{api_error, eventually, start};
use crate::tokens::{account, client_with, token};

/// A client acting as the service account `default/<name>`, made for the occasion.
async fn as_account(server: &RunningServer, admin: &kube::Client, name: &str) -> kube::Client {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    accounts.create(&PostParams::default(), &account(name)).await.unwrap();
    let issued = token(&accounts, name, &[]).await.status.unwrap().token;
    client_with(server, &issued).await
}

/// Binds the ClusterRole `role` to the account `default/<account>` in `default`.
async fn bind(
    client: &kube::Client,
    account: &str,
    role: &str,
) -> Result<RoleBinding, kube::Error> {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": format!("{account}-{role}") },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "kind": "ServiceAccount", "name": account, "namespace": "default" }],
    }))
    .unwrap();
    Api::namespaced(client.clone(), "default").create(&PostParams::default(), &binding).await
}

/// A client with `token` that acts as `user` in `groups`.
async fn impersonating(
    server: &RunningServer,
    token: &str,
    user: &str,
    groups: &[&str],
) -> kube::Client {
    let mut kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let auth = kubeconfig.auth_infos[0].auth_info.as_mut().unwrap();
    auth.token = Some(token.to_owned().into());
    auth.impersonate = Some(user.to_owned());
    if !groups.is_empty() {
        auth.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    }
    let options = KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Waits until the aggregated ClusterRole `name` has rules.
async fn aggregated(client: &kube::Client, name: &str) -> ClusterRole {
    let roles: Api<ClusterRole> = Api::all(client.clone());
    eventually(&format!("{name} is aggregated"), || async {
        let role = roles.get(name).await.unwrap();
        role.rules.as_ref().is_some_and(|r| !r.is_empty()).then_some(role)
    })
    .await
}

async fn may(client: &kube::Client, verb: &str, resource: &str, namespace: &str) -> (bool, String) {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let status = reviews.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    (status.allowed, status.reason.unwrap_or_default())
}

#[tokio::test]
async fn a_service_account_may_do_what_its_bindings_grant() {
    let test = start().await;
    let admin = &test.client;
    let ci = as_account(test.server.as_ref().unwrap(), admin, "ci").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(ci.clone(), "default");

    let (code, reason, message) =
        api_error(config_maps.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps is forbidden: User \"system:serviceaccount:default:ci\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert!(!may(&ci, "list", "configmaps", "default").await.0);
    // Every authenticated user may discover the API.
    assert!(ci.list_core_api_versions().await.is_ok());

    let view = aggregated(admin, "view").await;
    assert!(view.aggregation_rule.is_some());
    bind(admin, "ci", "view").await.unwrap();
    config_maps.list(&ListParams::default()).await.unwrap();
    let (allowed, reason) = may(&ci, "watch", "configmaps", "default").await;
    assert!(allowed);
    assert_eq!(
        reason,
        "RBAC: allowed by RoleBinding \"ci-view\" of ClusterRole \"view\" to ServiceAccount \"default/ci\""
    );
    // `view` reads, but neither writes nor reads secrets, and the binding holds in `default` only.
    let refused = config_maps.create(&PostParams::default(), &ConfigMap::default()).await;
    assert_eq!(api_error(refused.unwrap_err()).0, 403);
    let secrets: Api<Secret> = Api::namespaced(ci.clone(), "default");
    assert_eq!(api_error(secrets.list(&ListParams::default()).await.unwrap_err()).0, 403);
    let elsewhere: Api<ConfigMap> = Api::namespaced(ci.clone(), "kube-system");
    assert_eq!(api_error(elsewhere.list(&ListParams::default()).await.unwrap_err()).0, 403);

    let rules: Api<SelfSubjectRulesReview> = Api::all(ci.clone());
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec { namespace: Some("default".into()) },
        ..Default::default()
    };
    let status = rules.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    let reads_config_maps = status.resource_rules.iter().any(|r| {
        r.resources.iter().flatten().any(|r| r == "configmaps") && r.verbs.contains(&"list".into())
    });
    assert!(reads_config_maps, "{:?}", status.resource_rules);
    assert!(!status.non_resource_rules.is_empty(), "discovery paths");

    // A role labelled to aggregate into `view` adds to it, and so to every binding of it.
    let extra: ClusterRole = serde_json::from_value(json!({
        "metadata": {
            "name": "secret-reader",
            "labels": { "rbac.authorization.k8s.io/aggregate-to-view": "true" },
        },
        "rules": [{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["list"] }],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &extra).await.unwrap();
    eventually("the aggregated rule reaches `view`", || async {
        secrets.list(&ListParams::default()).await.ok()
    })
    .await;
}

#[tokio::test]
async fn roles_and_bindings_grant_no_more_than_their_writer_holds() {
    let test = start().await;
    let admin = &test.client;
    aggregated(admin, "admin").await;
    let lead = as_account(test.server.as_ref().unwrap(), admin, "lead").await;
    bind(admin, "lead", "admin").await.unwrap();
    let roles: Api<Role> = Api::namespaced(lead.clone(), "default");

    let pod_reader: Role = serde_json::from_value(json!({
        "metadata": { "name": "pod-reader" },
        "rules": [{ "apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"] }],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &pod_reader).await.unwrap();

    let node_reader: Role = serde_json::from_value(json!({
        "metadata": { "name": "node-reader" },
        "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list"] }],
    }))
    .unwrap();
    let (code, _, message) =
        api_error(roles.create(&PostParams::default(), &node_reader).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(
        message.contains("is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"list\"]}"),
        "{message}"
    );

    // Binding a role is granting what it grants.
    let refused = bind(&lead, "lead", "cluster-admin").await.unwrap_err();
    assert_eq!(api_error(refused).0, 403);
    bind(&lead, "lead", "view").await.unwrap();
}

#[tokio::test]
async fn impersonation_acts_as_the_user_once_rbac_allows_it() {
    let test = start().await;
    let server = test.server.as_ref().unwrap();
    let admin = &test.client;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    accounts.create(&PostParams::default(), &account("ci")).await.unwrap();
    bind(admin, "ci", "edit").await.unwrap();
    aggregated(admin, "edit").await;

    // The admin may impersonate the account, and then may do only what it may.
    let as_ci =
        impersonating(server, &server.credentials.token, "system:serviceaccount:default:ci", &[])
            .await;
    let (allowed, _) = may(&as_ci, "create", "configmaps", "default").await;
    assert!(allowed);
    assert!(!may(&as_ci, "list", "nodes", "").await.0);
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(as_ci.clone());
    assert_eq!(api_error(nodes.list(&ListParams::default()).await.unwrap_err()).0, 403);

    // `edit` may impersonate service accounts in its namespace, not users.
    let ci_token = token(&accounts, "ci", &[]).await.status.unwrap().token;
    let as_alice = impersonating(server, &ci_token, "alice", &[]).await;
    let config_maps = Api::<ConfigMap>::namespaced(as_alice, "default");
    let (code, _, message) = api_error(config_maps.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "users.authentication.k8s.io \"alice\" is forbidden: User \"system:serviceaccount:default:ci\" cannot impersonate resource \"users\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
}

#[tokio::test]
async fn servers_that_delegate_ask_token_and_subject_access_reviews() {
    use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
    use k8s_openapi::api::authorization::v1::{
        LocalSubjectAccessReview, NonResourceAttributes, SubjectAccessReview,
        SubjectAccessReviewSpec,
    };

    let test = start().await;
    let admin = &test.client;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    accounts.create(&PostParams::default(), &account("scraper")).await.unwrap();
    bind(admin, "scraper", "view").await.unwrap();
    aggregated(admin, "view").await;

    let reviews: Api<TokenReview> = Api::all(admin.clone());
    let review = |token: &str, audiences: Option<Vec<String>>| TokenReview {
        spec: TokenReviewSpec { token: Some(token.to_owned()), audiences },
        ..Default::default()
    };
    let issued = token(&accounts, "scraper", &[]).await.status.unwrap().token;
    let status = reviews.create(&PostParams::default(), &review(&issued, None)).await.unwrap();
    let status = status.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:serviceaccount:default:scraper"));
    assert_eq!(status.audiences.unwrap(), ["https://kubernetes.default.svc.cluster.local"]);
    let for_vault = review(&issued, Some(vec!["vault".into()]));
    let status = reviews.create(&PostParams::default(), &for_vault).await.unwrap().status.unwrap();
    assert_eq!(status.authenticated, Some(false), "a token for the API server only");
    let forged = reviews.create(&PostParams::default(), &review("forged", None)).await.unwrap();
    assert_eq!(forged.status.unwrap().authenticated, Some(false));

    let spec = |namespace: Option<&str>| SubjectAccessReviewSpec {
        user: Some(user.username.clone().unwrap()),
        groups: user.groups.clone(),
        resource_attributes: Some(ResourceAttributes {
            verb: Some("list".into()),
            resource: Some("pods".into()),
            namespace: namespace.map(Into::into),
            ..Default::default()
        }),
        ..Default::default()
    };
    let access: Api<SubjectAccessReview> = Api::all(admin.clone());
    let asked = SubjectAccessReview { spec: spec(Some("default")), ..Default::default() };
    let answer = access.create(&PostParams::default(), &asked).await.unwrap().status.unwrap();
    assert!(answer.allowed, "{answer:?}");
    let metrics = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = access.create(&PostParams::default(), &metrics).await.unwrap().status.unwrap();
    assert!(!answer.allowed);

    let local: Api<LocalSubjectAccessReview> = Api::namespaced(admin.clone(), "default");
    let asked = LocalSubjectAccessReview { spec: spec(None), ..Default::default() };
    let answer = local.create(&PostParams::default(), &asked).await.unwrap();
    assert!(answer.status.unwrap().allowed, "the review's own namespace");
    let elsewhere =
        LocalSubjectAccessReview { spec: spec(Some("kube-system")), ..Default::default() };
    let refused = local.create(&PostParams::default(), &elsewhere).await.unwrap_err();
    assert_eq!(api_error(refused).0, 422);
}

#[tokio::test]
async fn the_servers_metrics_count_what_it_stores_for_admins_and_the_monitoring_group() {
    let test = start().await;
    let server = test.server.as_ref().unwrap();
    let metrics = |client: kube::Client| async move {
        let get = axum::http::Request::get("/metrics").body(Vec::new()).unwrap();
        client.request_text(get).await
    };
    // The figure of a series, e.g. `keelson_store_writes_total`.
    let figure = |text: &str, series: &str| -> u64 {
        let line = text.lines().find(|line| line.starts_with(&format!("{series} ")));
        let line = line.unwrap_or_else(|| panic!("{series} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let configmaps = r#"apiserver_storage_objects{resource="configmaps"}"#;
    let deployments = r#"apiserver_storage_objects{resource="deployments.apps"}"#;

    let before = metrics(test.client.clone()).await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let map: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "counted"}})).unwrap();
    config_maps.create(&PostParams::default(), &map).await.unwrap();
    let after = metrics(test.client.clone()).await.unwrap();
    assert_eq!(figure(&after, configmaps), figure(&before, configmaps) + 1, "{after}");
    assert_eq!(figure(&after, deployments), 0);
    assert!(
        figure(&after, "keelson_store_writes_total")
            > figure(&before, "keelson_store_writes_total")
    );
    assert!(figure(&after, "keelson_store_revision") > figure(&before, "keelson_store_revision"));
    assert!(after.contains("# TYPE keelson_store_transactions counter"), "{after}");
    // Stored views of one kind count once; reviews, never stored, not at all.
    assert_eq!(after.matches("resource=\"events").count(), 1, "{after}");
    assert!(!after.contains("selfsubjectreviews"), "{after}");

    // The `system:monitoring` group may read them, as upstream's role allows; anyone else not.
    let token = &server.credentials.token;
    let monitoring = impersonating(server, token, "prometheus", &["system:monitoring"]).await;
    assert!(metrics(monitoring).await.unwrap().contains(configmaps));
    let someone = impersonating(server, token, "someone", &[]).await;
    assert_eq!(api_error(metrics(someone).await.unwrap_err()).0, 403);
}
