//! Built-in objects a real API server's per-kind validation refuses are refused with its causes.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::start;

fn deployment(name: &str, selected: &str, labelled: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": selected}},
            "template": {
                "metadata": {"labels": {"app": labelled}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

/// The code of a refused write and its causes' fields, reasons and messages.
fn refusal(error: kube::Error) -> (u16, Vec<(String, String, String)>) {
    let kube::Error::Api(status) = error else { panic!("not an API error: {error:?}") };
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    (status.code, causes.into_iter().map(|c| (c.field, c.reason, c.message)).collect())
}

#[tokio::test]
async fn deployments_config_maps_and_secrets_are_checked_as_upstream_checks_them() {
    let test = start().await;
    let deployments: Api<Deployment> = Api::namespaced(test.client.clone(), "default");
    let post = PostParams::default();
    let error = deployments.create(&post, &deployment("odd", "web", "api")).await.unwrap_err();
    let (code, causes) = refusal(error);
    assert_eq!(code, 422, "{causes:?}");
    assert_eq!(
        causes,
        [(
            "spec.template.metadata.labels".to_owned(),
            "FieldValueInvalid".to_owned(),
            "Invalid value: map[string]string{\"app\":\"api\"}: `selector` does not match template `labels`".to_owned()
        )]
    );

    deployments.create(&post, &deployment("web", "web", "web")).await.unwrap();
    let moved = Patch::Merge(json!({"spec": {
        "selector": {"matchLabels": {"app": "api"}},
        "template": {"metadata": {"labels": {"app": "api"}}},
    }}));
    let error = deployments.patch("web", &PatchParams::default(), &moved).await.unwrap_err();
    let (code, causes) = refusal(error);
    assert_eq!((code, causes.len()), (422, 1), "{causes:?}");
    assert_eq!(causes[0].0, "spec.selector");
    assert!(causes[0].2.ends_with(": field is immutable"), "{causes:?}");

    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let frozen = json!({"metadata": {"name": "frozen"}, "immutable": true, "data": {"a": "1"}});
    config_maps.create(&post, &serde_json::from_value(frozen).unwrap()).await.unwrap();
    let change = Patch::Merge(json!({"data": {"a": "2"}}));
    let error = config_maps.patch("frozen", &PatchParams::default(), &change).await.unwrap_err();
    assert_eq!(
        refusal(error),
        (
            422,
            vec![(
                "data".to_owned(),
                "FieldValueForbidden".to_owned(),
                "Forbidden: field is immutable when `immutable` is set".to_owned()
            )]
        )
    );

    let secrets: Api<Secret> = Api::namespaced(test.client.clone(), "default");
    let secret = json!({"metadata": {"name": "token"}, "stringData": {"token": "t"}});
    secrets.create(&post, &serde_json::from_value(secret).unwrap()).await.unwrap();
    let stored: Value = serde_json::to_value(secrets.get("token").await.unwrap()).unwrap();
    assert_eq!(stored["type"], "Opaque");
}
