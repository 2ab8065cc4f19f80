//! Custom resources of Keelson's CRDs: admission, status subresource, generation, server-side
//! apply ownership, scale, and what deleting their CRD does.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use keelson_api_crds::serving::ModelDeployment;
use keelson_api_crds::workflows::{Agent, AgentSpec};
use kube::api::{
    Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

use crate::support::{api_error, eventually, install_crds, start};

fn agent(name: &str, image: &str) -> Agent {
    Agent {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
        spec: AgentSpec { image: image.to_owned(), ..Default::default() },
        status: None,
    }
}

#[tokio::test]
async fn invalid_custom_resources_are_refused_with_the_field_at_fault() {
    let test = start().await;
    install_crds(&test.client).await;
    let api: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    api.create(&PostParams::default(), &agent("ok", "busybox:1.36")).await.unwrap();
    let mut bad = agent("bad", "busybox");
    bad.spec.version = Some("one".into());
    let (code, reason, message) =
        api_error(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(message.contains("spec.version"), "{message}");
}

#[tokio::test]
async fn status_goes_through_its_subresource_and_generation_counts_spec_changes() {
    let test = start().await;
    install_crds(&test.client).await;
    let api: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    let created = api.create(&PostParams::default(), &agent("a", "busybox:1")).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let status = json!({"status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2026-11-21T00:00:00Z"}]}});
    let with_status =
        api.patch_status("a", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert_eq!(with_status.metadata.generation, Some(1), "status writes do not move generation");
    assert!(with_status.status.unwrap().observed.is_true("Ready"));

    let ignored = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": null, "metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert!(ignored.status.is_some(), "the main resource cannot change status");
    assert_eq!(ignored.metadata.generation, Some(1));

    let respec = api
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"image": "busybox:2"}})))
        .await
        .unwrap();
    assert_eq!(respec.metadata.generation, Some(2));

    let same = api
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"image": "busybox:2"}})))
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version, respec.metadata.resource_version,
        "a no-op patch writes nothing"
    );
}

#[tokio::test]
async fn server_side_apply_owns_fields_and_reports_conflicts() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let cm = |value: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"key": value}});
    api.patch("shared", &PatchParams::apply("alice"), &Patch::Apply(cm("1"))).await.unwrap();
    api.patch("shared", &PatchParams::apply("bob"), &Patch::Apply(cm("1"))).await.unwrap();
    let (code, reason, message) = api_error(
        api.patch("shared", &PatchParams::apply("bob"), &Patch::Apply(cm("2"))).await.unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(message.contains("alice") && message.contains(".data.key"), "{message}");
    let forced = api
        .patch("shared", &PatchParams::apply("bob").force(), &Patch::Apply(cm("2")))
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["key"], "2");
    let managers: Vec<String> =
        forced.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
    assert!(managers.contains(&"bob".to_owned()), "{managers:?}");

    // Without a field manager an apply is invalid, as upstream says it.
    let request = axum::http::Request::patch("/api/v1/namespaces/default/configmaps/shared")
        .header("Content-Type", "application/apply-patch+yaml")
        .body(serde_json::to_vec(&cm("3")).unwrap())
        .unwrap();
    let (code, reason, message) =
        api_error(test.client.request::<ConfigMap>(request).await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required \
             for apply patch"
        )
    );
}

#[tokio::test]
async fn the_scale_subresource_speaks_autoscaling_v1() {
    let test = start().await;
    install_crds(&test.client).await;
    let api: Api<ModelDeployment> = Api::namespaced(test.client.clone(), "default");
    let md: ModelDeployment = serde_json::from_value(json!({
        "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "m"}, "spec": {"backend": "vllm", "model": "org/model"}
    }))
    .unwrap();
    api.create(&PostParams::default(), &md).await.unwrap();
    let scale = api.get_scale("m").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1), "the default replicas is applied");
    let scaled = api
        .patch_scale("m", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(3));
    assert_eq!(api.get("m").await.unwrap().spec.replicas, 3);
}

#[tokio::test]
async fn a_deleted_crd_waits_until_its_custom_resources_are_gone() {
    let test = start().await;
    install_crds(&test.client).await;
    let agents: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    agents.create(&PostParams::default(), &agent("free", "busybox:1")).await.unwrap();
    let mut held = agent("held", "busybox:1");
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    agents.create(&PostParams::default(), &held).await.unwrap();
    let watch = agents.watch(&WatchParams::default(), "0").await.unwrap();

    let crds: Api<CustomResourceDefinition> = Api::all(test.client.clone());
    let name = "agents.workflows.keelson.dev";
    let marked = crds.delete(name, &DeleteParams::default()).await.unwrap().left().unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.metadata.finalizers,
        Some(vec!["customresourcecleanup.apiextensions.k8s.io".to_owned()])
    );
    let conditions = marked.status.unwrap().conditions.unwrap();
    let terminating = conditions.iter().find(|c| c.type_ == "Terminating").unwrap();
    assert_eq!(
        (terminating.status.as_str(), terminating.reason.as_deref()),
        ("True", Some("InstanceDeletionInProgress"))
    );

    // The free Agent goes; the held one is marked and waits for its finalizer.
    eventually("the free Agent is gone", || async {
        agents.get_opt("free").await.unwrap().is_none().then_some(())
    })
    .await;
    // The collector deletes them one after another, in no set order.
    eventually("the held Agent is marked", || async {
        agents.get("held").await.unwrap().metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    assert!(crds.get(name).await.is_ok(), "the CRD waits for the held Agent");

    // Meanwhile no Agent can be created, and discovery says so.
    let (code, reason, message) = api_error(
        agents.create(&PostParams::default(), &agent("late", "busybox:1")).await.unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (405, "MethodNotAllowed"));
    assert_eq!(message, "create not allowed while custom resource definition is terminating");
    let discovered =
        test.client.list_api_group_resources("workflows.keelson.dev/v1alpha1").await.unwrap();
    let verbs = &discovered.resources.iter().find(|r| r.name == "agents").unwrap().verbs;
    assert_eq!(verbs, &["delete", "deletecollection", "get", "list", "watch"]);

    // The finalizer's owner lets go: the Agent, then the CRD and its resource disappear.
    agents
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the CRD is gone", || async {
        crds.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
    let (code, _, _) = api_error(agents.list(&Default::default()).await.unwrap_err());
    assert_eq!(code, 404, "Agents are no longer served");
    // A watch opened before saw both go, then ended with the CRD.
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(10), watch.collect())
        .await
        .expect("the watch ends when its CRD goes");
    let deleted: Vec<String> = events
        .into_iter()
        .filter_map(|event| match event.unwrap() {
            WatchEvent::Deleted(agent) => Some(agent.metadata.name.unwrap()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["free", "held"]);

    // Created again, the CRD starts empty.
    install_crds(&test.client).await;
    assert!(agents.list(&Default::default()).await.unwrap().items.is_empty());
}
