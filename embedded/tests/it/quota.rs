//! Resource quotas: creates past a quota's limits are refused as upstream refuses them, and
//! each quota's status shows what its namespace uses.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ResourceQuota};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use serde_json::json;

use crate::support::{api_error, eventually, start};

fn quota(name: &str, hard: &[(&str, &str)]) -> ResourceQuota {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"hard": hard.iter().map(|(k, v)| (*k, *v)).collect::<BTreeMap<_, _>>()},
    }))
    .unwrap()
}

fn pod(name: &str, resources: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "resources": resources}]},
    }))
    .unwrap()
}

/// The quota's `status.used`, once it shows `resource` at `amount`.
async fn used_becomes(quotas: &Api<ResourceQuota>, name: &str, resource: &str, amount: &str) {
    eventually(&format!("{resource} used is {amount}"), || async {
        let status = quotas.get(name).await.ok()?.status?;
        (status.used?.get(resource) == Some(&Quantity(amount.into()))).then_some(())
    })
    .await
}

#[tokio::test]
async fn creates_past_a_quota_are_refused_and_its_status_shows_the_usage() {
    let test = start().await;
    let namespace = Namespace {
        metadata: ObjectMeta { name: Some("q".into()), ..Default::default() },
        ..Default::default()
    };
    let post = PostParams::default();
    Api::<Namespace>::all(test.client.clone()).create(&post, &namespace).await.unwrap();
    let quotas: Api<ResourceQuota> = Api::namespaced(test.client.clone(), "q");
    quotas.create(&post, &quota("counts", &[("pods", "1"), ("configmaps", "2")])).await.unwrap();
    // The namespace's root CA ConfigMap counts, as upstream.
    used_becomes(&quotas, "counts", "configmaps", "1").await;
    let status = quotas.get("counts").await.unwrap().status.unwrap();
    assert_eq!(status.hard.unwrap()["pods"], Quantity("1".into()));

    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "q");
    pods.create(&post, &pod("one", json!({}))).await.unwrap();
    used_becomes(&quotas, "counts", "pods", "1").await;
    let (code, reason, message) =
        api_error(pods.create(&post, &pod("two", json!({}))).await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (
            403,
            "Forbidden",
            "pods \"two\" is forbidden: exceeded quota: counts, requested: pods=1, used: pods=1, \
             limited: pods=1"
        )
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(test.client.clone(), "q");
    let config_map = |name: &str| ConfigMap {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    };
    config_maps.create(&post, &config_map("a")).await.unwrap();
    let (code, _, _) = api_error(config_maps.create(&post, &config_map("b")).await.unwrap_err());
    assert_eq!(code, 403);

    // Deleting the pod gives its place back.
    pods.delete("one", &DeleteParams::default()).await.unwrap();
    used_becomes(&quotas, "counts", "pods", "0").await;
    pods.create(&post, &pod("two", json!({}))).await.unwrap();
}

#[tokio::test]
async fn a_compute_quota_wants_requests_and_adds_them_up() {
    let test = start().await;
    let quotas: Api<ResourceQuota> = Api::namespaced(test.client.clone(), "default");
    let post = PostParams::default();
    let hard = [("requests.cpu", "1"), ("limits.memory", "1Gi")];
    quotas.create(&post, &quota("compute", &hard)).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let (code, _, message) =
        api_error(pods.create(&post, &pod("bare", json!({}))).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: web; \
         requests.cpu for: web"
    );
    let sized = json!({"requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}});
    pods.create(&post, &pod("a", sized.clone())).await.unwrap();
    used_becomes(&quotas, "compute", "requests.cpu", "600m").await;
    used_becomes(&quotas, "compute", "limits.memory", "512Mi").await;
    let (code, _, message) = api_error(pods.create(&post, &pod("b", sized)).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(
        message.ends_with(
            "requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_scoped_quota_counts_only_the_pods_its_scopes_select() {
    let test = start().await;
    let quotas: Api<ResourceQuota> = Api::namespaced(test.client.clone(), "default");
    let post = PostParams::default();
    let scoped = |name: &str, spec: serde_json::Value| -> ResourceQuota {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
    };
    let best_effort = json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]});
    quotas.create(&post, &scoped("best-effort", best_effort)).await.unwrap();
    let high = json!({"hard": {"requests.cpu": "1"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
    ]}});
    quotas.create(&post, &scoped("high", high)).await.unwrap();

    // A pod that asks for CPU is not best effort: the first quota lets any number in, and the
    // second does not count a pod of another class, nor ask it for requests.
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let sized = json!({"requests": {"cpu": "2"}});
    for name in ["sized-1", "sized-2"] {
        pods.create(&post, &pod(name, sized.clone())).await.unwrap();
    }
    pods.create(&post, &pod("bare-1", json!({}))).await.unwrap();
    used_becomes(&quotas, "best-effort", "pods", "1").await;
    let (code, _, message) =
        api_error(pods.create(&post, &pod("bare-2", json!({}))).await.unwrap_err());
    assert_eq!((code, message.contains("exceeded quota: best-effort")), (403, true), "{message}");

    let classes: Api<PriorityClass> = Api::all(test.client.clone());
    let class = json!({"metadata": {"name": "high"}, "value": 1000});
    classes.create(&post, &serde_json::from_value(class).unwrap()).await.unwrap();
    let mut urgent = pod("urgent", json!({"requests": {"cpu": "2"}}));
    urgent.spec.as_mut().unwrap().priority_class_name = Some("high".into());
    let (code, _, message) = api_error(pods.create(&post, &urgent).await.unwrap_err());
    assert_eq!(
        (code, message.as_str()),
        (
            403,
            "pods \"urgent\" is forbidden: exceeded quota: high, requested: requests.cpu=2, \
             used: requests.cpu=0, limited: requests.cpu=1"
        )
    );
    used_becomes(&quotas, "high", "requests.cpu", "0").await;

    // A scope that cannot apply to what the quota limits is refused as upstream refuses it.
    let wrong = json!({"hard": {"services": "1"}, "scopes": ["NotTerminating"]});
    let (code, reason, message) =
        api_error(quotas.create(&post, &scoped("wrong", wrong)).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.ends_with(
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"NotTerminating\"}: \
             unsupported scope applied to resource"
        ),
        "{message}"
    );
}
