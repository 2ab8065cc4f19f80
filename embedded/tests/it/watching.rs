//! Watches: events after a revision, selector transitions, 410 after compaction and the
//! watcher's relist.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::support::{TestServer, config, start, start_with};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn next(
    stream: &mut futures::stream::BoxStream<'_, kube::Result<WatchEvent<ConfigMap>>>,
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap()
}

/// Reads watcher events until `name` is applied, counting the relists (`Init`) on the way.
async fn wait_for(
    events: &mut futures::stream::BoxStream<'_, watcher::Result<watcher::Event<ConfigMap>>>,
    inits: &mut u32,
    name: &str,
) {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            // The 410 surfaces as an error item before the relist; it is expected here.
            match events.next().await.expect("the watcher stream goes on") {
                Ok(watcher::Event::Init) => *inits += 1,
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))
                    if o.metadata.name.as_deref() == Some(name) =>
                {
                    return;
                }
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the watcher never saw {name}"));
}

#[tokio::test]
async fn a_watch_sees_later_changes_and_selector_transitions() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let first = api.create(&PostParams::default(), &cm("w", &[("app", "x")])).await.unwrap();
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = api.watch(&WatchParams::default().labels("app=x"), &rv).await.unwrap().boxed();
    api.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"a": "1"}})))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
    )
    .await
    .unwrap();
    assert!(matches!(next(&mut stream).await, WatchEvent::Modified(_)));
    assert!(
        matches!(next(&mut stream).await, WatchEvent::Deleted(_)),
        "leaving the selector reads as a deletion"
    );
}

/// A server that keeps only five revisions of history, so compaction is easy to reach.
async fn start_with_short_history() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.retain_revisions = 5;
    cfg.retain_for = Duration::ZERO;
    start_with(dir, cfg).await
}

#[tokio::test]
async fn a_compacted_resource_version_gets_a_410_error_event() {
    let test = start_with_short_history().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    for i in 0..30 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), &[])).await.unwrap();
    }
    test.server.as_ref().unwrap().store.compact().await.unwrap();
    let mut stream = api.watch(&WatchParams::default(), "1").await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn the_watcher_relists_after_compaction_and_keeps_up() {
    let test = start_with_short_history().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    api.create(&PostParams::default(), &cm("watched-0", &[("app", "w")])).await.unwrap();
    // Watches last a second, so the watcher resumes from its last revision over and over.
    let mut events =
        watcher(api.clone(), watcher::Config::default().labels("app=w").timeout(1)).boxed();
    let mut inits = 0;
    wait_for(&mut events, &mut inits, "watched-0").await;
    // Writes the watcher does not select move the revision past its resume point; compaction
    // then makes that point too old.
    for i in 0..40 {
        api.create(&PostParams::default(), &cm(&format!("other-{i}"), &[])).await.unwrap();
    }
    test.server.as_ref().unwrap().store.compact().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    api.create(&PostParams::default(), &cm("watched-1", &[("app", "w")])).await.unwrap();
    wait_for(&mut events, &mut inits, "watched-1").await;
    assert!(inits >= 2, "the watcher relisted after the 410 ({inits} inits)");
}
