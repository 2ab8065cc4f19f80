//! kube-runtime against the server: finalizers, events, a controller.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use keelson_api_crds::workflows::{Agent, AgentSpec};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalized, finalizer};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use crate::support::{install_crds, start};

fn agent(name: &str) -> Agent {
    Agent {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
        spec: AgentSpec { image: "busybox:1".into(), ..Default::default() },
        status: None,
    }
}

#[tokio::test]
async fn the_finalizer_helper_adds_and_removes_its_finalizer() {
    let test = start().await;
    install_crds(&test.client).await;
    let api: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    api.create(&PostParams::default(), &agent("f")).await.unwrap();
    let run = |object: Agent| {
        let api = api.clone();
        async move {
            finalizer(&api, "keelson.dev/test", Arc::new(object), |event| async move {
                Ok::<_, std::convert::Infallible>(match event {
                    Finalized::Apply(_) | Finalized::Cleanup(_) => Action::await_change(),
                })
            })
            .await
            .unwrap()
        }
    };
    run(api.get("f").await.unwrap()).await;
    assert_eq!(api.get("f").await.unwrap().finalizers(), ["keelson.dev/test"]);

    api.delete("f", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("f").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some(), "the finalizer holds the object");
    run(deleting).await;
    assert!(
        api.get_opt("f").await.unwrap().is_none(),
        "removing the last finalizer deletes the object"
    );
}

#[tokio::test]
async fn recorder_events_are_readable_as_core_v1_events() {
    let test = start().await;
    install_crds(&test.client).await;
    let api: Api<Agent> = Api::namespaced(test.client.clone(), "default");
    let created = api.create(&PostParams::default(), &agent("e")).await.unwrap();
    let recorder = Recorder::new(
        test.client.clone(),
        Reporter { controller: "keelson".into(), instance: None },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Registered".into(),
        note: Some("agent registered".into()),
        action: "Register".into(),
        secondary: None,
    };
    recorder.publish(&event, &created.object_ref(&())).await.unwrap();
    recorder.publish(&event, &created.object_ref(&())).await.unwrap();

    let events: Api<CoreEvent> = Api::namespaced(test.client.clone(), "default");
    let found = events
        .list(&ListParams::default().fields("involvedObject.kind=Agent,involvedObject.name=e"))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1, "a repeat is a series on the same Event");
    let event = &found.items[0];
    assert_eq!(
        (event.reason.as_deref(), event.message.as_deref()),
        (Some("Registered"), Some("agent registered"))
    );
    assert_eq!(event.involved_object.uid, created.metadata.uid);
}

#[tokio::test]
async fn a_controller_reconciles_configmaps() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let reconcile = |cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>| async move {
        if cm.annotations().get("reconciled").is_none() {
            let patch = serde_json::json!({"metadata": {"annotations": {"reconciled": "yes"}}});
            api.patch(
                &cm.name_any(),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await?;
        }
        Ok::<_, kube::Error>(Action::await_change())
    };
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(1)), Arc::new(api.clone()))
        .for_each(|_| async {});
    let handle = tokio::spawn(controller);
    let cm = ConfigMap {
        metadata: ObjectMeta { name: Some("c".into()), ..Default::default() },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm).await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if api.get("c").await.unwrap().annotations().get("reconciled").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    handle.abort();
    assert!(done.is_ok(), "the controller reconciled the ConfigMap");
}
