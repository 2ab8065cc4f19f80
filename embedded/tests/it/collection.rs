//! Garbage collection through the API: the three propagation policies, `blockOwnerDeletion`,
//! and namespaces that say what holds them.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use serde_json::json;

use crate::support::start;

fn config_map(name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let owner_references = owner.map(|owner| {
        vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.metadata.name.clone().unwrap(),
            uid: owner.metadata.uid.clone().unwrap(),
            block_owner_deletion: Some(true),
            ..Default::default()
        }]
    });
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.into()), owner_references, ..Default::default() },
        ..Default::default()
    }
}

/// Waits (at most 10 s) until `name` meets `condition`.
async fn until(api: &Api<ConfigMap>, name: &str, condition: impl Condition<ConfigMap>) {
    tokio::time::timeout(Duration::from_secs(10), await_condition(api.clone(), name, condition))
        .await
        .unwrap_or_else(|_| panic!("{name} did not get there in 10 s"))
        .unwrap();
}

async fn until_gone(api: &Api<ConfigMap>, object: &ConfigMap) {
    let uid = object.metadata.uid.clone().unwrap();
    until(api, object.metadata.name.as_deref().unwrap(), conditions::is_deleted(&uid)).await;
}

#[tokio::test]
async fn each_propagation_policy_does_what_it_says() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let create = |object: ConfigMap| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &object).await.unwrap() }
    };

    // Orphan: the owner goes; its dependents stay, without the reference.
    let owner = create(config_map("orphaning", None)).await;
    for i in 0..3 {
        create(config_map(&format!("kept-{i}"), Some(&owner))).await;
    }
    api.delete("orphaning", &DeleteParams::orphan()).await.unwrap();
    until_gone(&api, &owner).await;
    for i in 0..3 {
        let kept = api.get(&format!("kept-{i}")).await.unwrap();
        assert_eq!(kept.metadata.owner_references, None, "kept-{i} is orphaned");
    }

    // Foreground: the owner stays, marked, while a dependent that blocks it is there.
    let owner = create(config_map("foreground", None)).await;
    let blocker = create(config_map("blocker", Some(&owner))).await;
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    api.patch("blocker", &PatchParams::default(), &Patch::Merge(&hold)).await.unwrap();
    api.delete("foreground", &DeleteParams::foreground()).await.unwrap();
    until(&api, "blocker", |o: Option<&ConfigMap>| {
        o.is_some_and(|o| o.metadata.deletion_timestamp.is_some())
    })
    .await;
    let waiting = api.get("foreground").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(waiting.metadata.finalizers, Some(vec!["foregroundDeletion".to_owned()]));
    let release = json!({"metadata": {"finalizers": null}});
    api.patch("blocker", &PatchParams::default(), &Patch::Merge(&release)).await.unwrap();
    until_gone(&api, &blocker).await;
    until_gone(&api, &owner).await;

    // Background: the owner goes at once, its dependents after it.
    let owner = create(config_map("background", None)).await;
    let dependents = [
        create(config_map("child-0", Some(&owner))).await,
        create(config_map("child-1", Some(&owner))).await,
    ];
    api.delete("background", &DeleteParams::background()).await.unwrap();
    until_gone(&api, &owner).await;
    for dependent in &dependents {
        until_gone(&api, dependent).await;
    }
}

#[tokio::test]
async fn a_namespace_held_by_finalizers_says_what_holds_it() {
    let test = start().await;
    let namespaces: Api<Namespace> = Api::all(test.client.clone());
    let post = PostParams::default();
    let team = Namespace {
        metadata: ObjectMeta { name: Some("team".into()), ..Default::default() },
        ..Default::default()
    };
    namespaces.create(&post, &team).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "team");
    let mut held = config_map("held", None);
    held.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    api.create(&post, &held).await.unwrap();
    namespaces.delete("team", &DeleteParams::default()).await.unwrap();

    let message = |namespace: &Namespace, type_: &str| {
        let conditions = namespace.status.as_ref()?.conditions.as_ref()?;
        conditions.iter().find(|c| c.type_ == type_)?.message.clone()
    };
    let finalizers = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let namespace = namespaces.get("team").await.unwrap();
            // The rest of its content (the root CA, the default account) goes first.
            let remaining = message(&namespace, "NamespaceContentRemaining");
            if remaining.as_deref()
                == Some("Some resources are remaining: configmaps. has 1 resource instances")
            {
                return (message(&namespace, "NamespaceFinalizersRemaining"), remaining);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the namespace's conditions to name what is left");
    assert_eq!(
        finalizers,
        (
            Some(
                "Some content in the namespace has finalizers remaining: example.com/keep in 1 \
                 resource instances"
                    .to_owned()
            ),
            Some("Some resources are remaining: configmaps. has 1 resource instances".to_owned())
        )
    );

    // A change to it while it is held does not let it go.
    let label = Patch::Merge(json!({"metadata": {"labels": {"state": "stuck"}}}));
    namespaces.patch("team", &PatchParams::default(), &label).await.unwrap();
    let uid = namespaces.get("team").await.unwrap().metadata.uid.unwrap();

    // Upstream's way out of a stuck namespace: finalize it, leaving what it held behind.
    let mut stuck = namespaces.get("team").await.unwrap();
    stuck.spec.as_mut().unwrap().finalizers = Some(Vec::new());
    let request = axum::http::Request::put("/api/v1/namespaces/team/finalize")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&stuck).unwrap())
        .unwrap();
    test.client.request::<Namespace>(request).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(namespaces.clone(), "team", conditions::is_deleted(&uid)),
    )
    .await
    .expect("the namespace to go")
    .unwrap();
}
