//! Pod priority: the system PriorityClasses exist, a pod takes its class's value, and a pod
//! naming a class that does not exist is refused, as upstream's Priority admission does.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::support::{api_error, start};

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "web", "image": "nginx:1.27"}]);
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

#[tokio::test]
async fn pods_take_the_priority_of_their_class() {
    let test = start().await;
    let classes: Api<PriorityClass> = Api::all(test.client.clone());
    let critical = classes.get("system-cluster-critical").await.unwrap();
    assert_eq!(critical.value, 2_000_000_000);
    assert_eq!(classes.get("system-node-critical").await.unwrap().value, 2_000_001_000);

    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let post = PostParams::default();
    let plain = pods.create(&post, &pod("plain", json!({}))).await.unwrap().spec.unwrap();
    assert_eq!(
        (plain.priority, plain.preemption_policy.as_deref()),
        (Some(0), Some("PreemptLowerPriority"))
    );
    let named = json!({"priorityClassName": "system-cluster-critical"});
    let system = pods.create(&post, &pod("system", named)).await.unwrap().spec.unwrap();
    assert_eq!(system.priority, Some(2_000_000_000));

    let (code, _, message) = api_error(
        pods.create(&post, &pod("lost", json!({"priorityClassName": "nosuch"}))).await.unwrap_err(),
    );
    assert_eq!(
        (code, message.as_str()),
        (403, "pods \"lost\" is forbidden: no PriorityClass with name nosuch was found")
    );

    // A global default class is given to pods that name none.
    let default: PriorityClass = serde_json::from_value(json!({
        "metadata": {"name": "everyday"}, "value": 100, "globalDefault": true,
        "preemptionPolicy": "Never",
    }))
    .unwrap();
    classes.create(&post, &default).await.unwrap();
    let later = pods.create(&post, &pod("later", json!({}))).await.unwrap().spec.unwrap();
    assert_eq!(
        (later.priority_class_name.as_deref(), later.priority, later.preemption_policy.as_deref()),
        (Some("everyday"), Some(100), Some("Never"))
    );
    let (code, _, message) =
        api_error(pods.create(&post, &pod("own", json!({"priority": 7}))).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(
        message.ends_with(
            "priority admission controller computed 100 from the given PriorityClass name"
        ),
        "{message}"
    );
}
