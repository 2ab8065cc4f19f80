//! What a write must get past before anything is stored, and how it is told when it does not:
//! values that do not decode into a built-in kind's types, bodies in other formats than JSON or
//! YAML, JSON patches whose test fails, the deletion of namespaces the cluster needs; and
//! patches that change nothing once unknown fields are pruned, which store nothing.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use keelson_api_crds::workflows::{Agent, AgentSpec};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams,
};
use serde_json::json;

use crate::support::{api_error, install_crds, start};

fn deployment(replicas: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    })
}

fn agent(name: &str) -> Agent {
    Agent {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: AgentSpec { image: "runner:1".into(), ..Default::default() },
        status: None,
    }
}

#[tokio::test]
async fn a_value_of_the_wrong_type_is_a_400_and_nothing_is_stored() {
    let test = start().await;
    let resource = ApiResource::erase::<Deployment>(&());
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(test.client.clone(), "default", &resource);
    let wrong: DynamicObject = serde_json::from_value(deployment(json!("three"))).unwrap();
    let (code, reason, message) =
        api_error(dynamic.create(&PostParams::default(), &wrong).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal \
         string into field spec.replicas of type int32"
    );
    let deployments: Api<Deployment> = Api::namespaced(test.client.clone(), "default");
    assert_eq!(api_error(deployments.get("web").await.unwrap_err()).0, 404);

    // A wrong type that also breaks a rule of the kind (a label `true`, as YAML's `yes` gives
    // it, no longer matches the selector) is still the decoding's 400, as upstream.
    let mut label = deployment(json!(1));
    label["spec"]["template"]["metadata"]["labels"]["app"] = json!(true);
    let label: DynamicObject = serde_json::from_value(label).unwrap();
    let (code, _, message) =
        api_error(dynamic.create(&PostParams::default(), &label).await.unwrap_err());
    assert_eq!(code, 400, "{message}");
    assert!(
        message.ends_with(
            "cannot unmarshal bool into field spec.template.metadata.labels[app] of type string"
        ),
        "{message}"
    );

    let right: DynamicObject = serde_json::from_value(deployment(json!(2))).unwrap();
    dynamic.create(&PostParams::default(), &right).await.unwrap();
    let patch = Patch::Merge(json!({"spec": {"replicas": "x"}}));
    let (code, _, message) =
        api_error(deployments.patch("web", &PatchParams::default(), &patch).await.unwrap_err());
    assert_eq!(code, 400);
    assert!(message.contains("spec.replicas of type int32"), "{message}");
    // The stored object still decodes as a Deployment: typed clients keep reading it.
    assert_eq!(deployments.get("web").await.unwrap().spec.unwrap().replicas, Some(2));

    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some("settings".into()), ..Default::default() },
        ..Default::default()
    };
    config_maps.create(&PostParams::default(), &config_map).await.unwrap();
    let patch = Patch::Merge(json!({"data": {"port": 8080}}));
    let (code, _, message) = api_error(
        config_maps.patch("settings", &PatchParams::default(), &patch).await.unwrap_err(),
    );
    assert_eq!(code, 400);
    assert!(message.ends_with("cannot unmarshal number 8080 into field data[port] of type string"));
}

#[tokio::test]
async fn the_namespaces_the_cluster_needs_cannot_be_deleted() {
    let test = start().await;
    let namespaces: Api<Namespace> = Api::all(test.client.clone());
    for name in ["default", "kube-system", "kube-public"] {
        let (code, reason, message) =
            api_error(namespaces.delete(name, &DeleteParams::default()).await.unwrap_err());
        assert_eq!(
            (code, reason.as_str(), message),
            (
                403,
                "Forbidden",
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            )
        );
    }
    let team = Namespace {
        metadata: ObjectMeta { name: Some("team".into()), ..Default::default() },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &team).await.unwrap();
    let all = ListParams::default();
    let (code, reason, _) =
        api_error(namespaces.delete_collection(&DeleteParams::default(), &all).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (405, "MethodNotAllowed"), "as upstream, not served");
    for name in ["default", "team"] {
        let namespace = namespaces.get(name).await.unwrap();
        assert!(namespace.metadata.deletion_timestamp.is_none(), "{name} was left alone");
    }
}

#[tokio::test]
async fn a_custom_resource_is_replaced_only_at_a_version() {
    let test = start().await;
    install_crds(&test.client).await;
    let agents: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    let agent = agent("a");
    let mut created = agents.create(&PostParams::default(), &agent).await.unwrap();
    created.metadata.resource_version = None;
    let (code, _, message) =
        api_error(agents.replace("a", &PostParams::default(), &created).await.unwrap_err());
    assert_eq!(code, 422);
    assert!(message.ends_with("must be specified for an update"), "{message}");
}

#[tokio::test]
async fn a_patch_of_fields_the_schema_prunes_changes_nothing() {
    let test = start().await;
    install_crds(&test.client).await;
    let agents: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    let agent = agent("a");
    let created = agents.create(&PostParams::default(), &agent).await.unwrap();
    let patch = Patch::Merge(json!({"spec": {"bogus": 1}}));
    let patched = agents.patch("a", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(patched.metadata.generation, created.metadata.generation);
    assert_eq!(patched.metadata.resource_version, created.metadata.resource_version);

    let patch = Patch::Merge(json!({"spec": {"image": "runner:2", "bogus": 1}}));
    let patched = agents.patch("a", &PatchParams::default(), &patch).await.unwrap();
    assert_eq!(patched.metadata.generation, created.metadata.generation.map(|g| g + 1));
}

#[tokio::test]
async fn a_body_in_another_format_than_json_or_yaml_is_a_415() {
    let test = start().await;
    let body = br#"{"metadata": {"name": "plain"}}"#.to_vec();
    let request = axum::http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "text/plain")
        .body(body.clone())
        .unwrap();
    let (code, reason, message) =
        api_error(test.client.request::<ConfigMap>(request).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
    assert!(message.contains("application/json, application/yaml"), "{message}");

    let request = axum::http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/json; charset=utf-8")
        .body(body)
        .unwrap();
    let created = test.client.request::<ConfigMap>(request).await.unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("plain"));
}

#[tokio::test]
async fn a_body_that_is_not_utf8_is_a_400_and_stores_nothing() {
    let test = start().await;
    let mut body = br#"{"metadata": {"name": "bytes"}, "data": {"k": "caf"#.to_vec();
    body.extend_from_slice(b"\xe9\"}}");
    let request = axum::http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/json")
        .body(body)
        .unwrap();
    let (code, reason, message) =
        api_error(test.client.request::<ConfigMap>(request).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert!(message.contains("not UTF-8"), "{message}");
    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    assert!(config_maps.get_opt("bytes").await.unwrap().is_none());
}

#[tokio::test]
async fn a_json_patch_whose_test_fails_names_the_patch() {
    let test = start().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some("settings".into()), ..Default::default() },
        data: Some([("mode".to_owned(), "fast".to_owned())].into()),
        ..Default::default()
    };
    config_maps.create(&PostParams::default(), &config_map).await.unwrap();
    let operations = json!([
        {"op": "test", "path": "/data/mode", "value": "slow"},
        {"op": "replace", "path": "/data/mode", "value": "safe"}
    ]);
    let patch = Patch::Json::<()>(serde_json::from_value(operations).unwrap());
    let (code, reason, message) = api_error(
        config_maps.patch("settings", &PatchParams::default(), &patch).await.unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with("ConfigMap \"settings\" is invalid: patch: testing value /data/mode"),
        "{message}"
    );
    assert_eq!(config_maps.get("settings").await.unwrap().data.unwrap()["mode"], "fast");
}

#[tokio::test]
async fn responses_are_yaml_when_asked_and_406_when_nothing_asked_for_is_served() {
    let test = start().await;
    let path = "/api/v1/namespaces/default/configmaps/kube-root-ca.crt";
    let get = |accept: &str| {
        axum::http::Request::get(path).header("Accept", accept).body(Vec::new()).unwrap()
    };
    let yaml = test.client.request_text(get("application/yaml")).await.unwrap();
    assert!(yaml.contains("kind: ConfigMap"), "{yaml}");
    let read: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    let config_map = test.client.request::<ConfigMap>(get("application/json")).await.unwrap();
    assert_eq!(read, serde_json::to_value(&config_map).unwrap());
    // Errors too.
    let missing = axum::http::Request::get("/api/v1/namespaces/default/configmaps/absent")
        .header("Accept", "application/yaml")
        .body(Vec::new())
        .unwrap();
    let error = test.client.request_text(missing).await.unwrap_err();
    assert!(matches!(error, kube::Error::Api(ref e) if e.code == 404), "{error:?}");

    let (code, reason, message) =
        api_error(test.client.request::<ConfigMap>(get("text/html")).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (406, "NotAcceptable"));
    assert_eq!(
        message,
        "only the following media types are accepted: application/json, application/yaml, \
         application/vnd.kubernetes.protobuf"
    );
}
