//! Built-in objects: create, get, list with pagination and selectors, update conflicts, patches,
//! delete, restart.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{api_error, config, start, start_with};

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..Default::default()
    }
}

#[tokio::test]
async fn create_get_update_with_conflicts_and_delete() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let created = api.create(&PostParams::default(), &config_map("a", &[])).await.unwrap();
    let rv: u64 = created.metadata.resource_version.clone().unwrap().parse().unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    let (code, reason, _) =
        api_error(api.create(&PostParams::default(), &config_map("a", &[])).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));

    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "w".to_owned())]));
    let replaced = api.replace("a", &PostParams::default(), &changed).await.unwrap();
    assert!(replaced.metadata.resource_version.unwrap().parse::<u64>().unwrap() > rv);
    let (code, reason, _) =
        api_error(api.replace("a", &PostParams::default(), &changed).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"), "a stale resourceVersion is refused");

    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1"}})))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap().get("x").map(String::as_str), Some("1"));

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let (code, reason, message) = api_error(api.get("a").await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (404, "NotFound", "configmaps \"a\" not found")
    );
}

#[tokio::test]
async fn lists_page_at_one_revision_and_filter_by_labels() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    for i in 0..7 {
        let tier = if i % 2 == 0 { "even" } else { "odd" };
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}"), &[("tier", tier)]))
            .await
            .unwrap();
    }
    let mut names = BTreeSet::new();
    let mut params = ListParams::default().limit(3);
    let mut pages = 0;
    let mut revision = None;
    loop {
        let page = api.list(&params).await.unwrap();
        pages += 1;
        let rv = page.metadata.resource_version.clone();
        assert!(
            revision.is_none() || revision == rv,
            "every page is read at the first page's revision"
        );
        revision = rv;
        names.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
        // A write between pages does not show up in later pages.
        api.create(&PostParams::default(), &config_map(&format!("late-{pages}"), &[]))
            .await
            .unwrap();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    assert_eq!((pages, names.len()), (3, 7));
    let odd = api.list(&ListParams::default().labels("tier=odd")).await.unwrap();
    assert_eq!(odd.items.len(), 3);
    let not_even = api.list(&ListParams::default().labels("tier notin (even),tier")).await.unwrap();
    assert_eq!(not_even.items.len(), 3);
    let by_name = api.list(&ListParams::default().fields("metadata.name=cm-4")).await.unwrap();
    assert_eq!(by_name.items.len(), 1);
    let (code, _, _) =
        api_error(api.list(&ListParams::default().fields("data.k=v")).await.unwrap_err());
    assert_eq!(code, 400, "an unsupported field selector is a bad request");
}

#[tokio::test]
async fn a_restart_keeps_every_object_and_continues_resource_versions() {
    let mut test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let mut last = 0;
    for i in 0..20 {
        let cm = api
            .create(&PostParams::default(), &config_map(&format!("keep-{i}"), &[]))
            .await
            .unwrap();
        last = cm.metadata.resource_version.unwrap().parse().unwrap();
    }
    test.server.take().unwrap().shutdown(std::time::Duration::from_secs(1)).await;

    let dir = test.dir;
    let cfg = config(dir.path());
    let again = start_with(dir, cfg).await;
    let api: Api<ConfigMap> = Api::namespaced(again.client.clone(), "default");
    let kept = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        kept.items
            .iter()
            .filter(|c| c.metadata.name.as_deref().unwrap().starts_with("keep-"))
            .count(),
        20
    );
    let next = api.create(&PostParams::default(), &config_map("after", &[])).await.unwrap();
    assert!(next.metadata.resource_version.unwrap().parse::<u64>().unwrap() > last);
}

#[tokio::test]
async fn a_request_without_the_token_is_unauthorized() {
    let test = start().await;
    let server = test.server.as_ref().unwrap();
    let mut config = kube::Config::new(server.url().parse().unwrap());
    config.root_cert = Some(vec![pem_to_der(&server.credentials.ca_pem)]);
    let anonymous = kube::Client::try_from(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(anonymous, "default");
    let (code, reason, _) = api_error(api.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).unwrap()
}
