//! Built-in objects: create, get, list with pagination and selectors, update conflicts, patches,
//! delete, eviction, restart.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{
    Api, DeleteParams, EvictParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
    VersionMatch,
};
use serde_json::json;

use crate::support::{api_error, config, eventually, start, start_with};

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
    // Without a version, a built-in object is replaced whatever is stored, as upstream.
    changed.metadata.resource_version = None;
    changed.data = Some(BTreeMap::from([("k".to_owned(), "v2".to_owned())]));
    let unconditional = api.replace("a", &PostParams::default(), &changed).await.unwrap();
    assert_eq!(unconditional.data.unwrap()["k"], "v2");

    // An exported object created again must leave its version behind.
    let mut copy = created.clone();
    copy.metadata.name = Some("copy".into());
    let (code, reason, message) =
        api_error(api.create(&PostParams::default(), &copy).await.unwrap_err());
    assert_eq!(
        (code, reason.as_str(), message.as_str()),
        (400, "BadRequest", "resourceVersion should not be set on objects to be created")
    );

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
async fn a_delete_without_preconditions_is_not_refused_for_writes_in_between() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    for round in 0..100 {
        let name = format!("busy-{round}");
        let mut held = config_map(&name, &[]);
        // Half are held by a finalizer, so that the deletion is a write that marks them.
        if round % 2 == 0 {
            held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        }
        api.create(&PostParams::default(), &held).await.unwrap();
        let writer = {
            let (api, name) = (api.clone(), name.clone());
            tokio::spawn(async move {
                for i in 0..20 {
                    let patch = Patch::Merge(json!({"data": {"i": i.to_string()}}));
                    if api.patch(&name, &PatchParams::default(), &patch).await.is_err() {
                        break;
                    }
                }
            })
        };
        tokio::task::yield_now().await;
        api.delete(&name, &DeleteParams::default()).await.unwrap();
        writer.await.unwrap();
    }
    // A precondition is still the caller's: a stale one is refused.
    let created = api.create(&PostParams::default(), &config_map("stale", &[])).await.unwrap();
    let patch = Patch::Merge(json!({"data": {"k": "changed"}}));
    api.patch("stale", &PatchParams::default(), &patch).await.unwrap();
    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: created.metadata.resource_version,
            uid: None,
        }),
        ..Default::default()
    };
    let (code, reason, message) = api_error(api.delete("stale", &stale).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(message.contains("Precondition failed: ResourceVersion in precondition"), "{message}");
}

#[tokio::test]
async fn dry_runs_answer_as_the_write_would_and_change_nothing() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    let would = api.create(&dry, &config_map("a", &[])).await.unwrap();
    assert!(would.metadata.uid.is_some(), "the answer is the object as it would be stored");
    assert_eq!(api_error(api.get("a").await.unwrap_err()).0, 404);

    let created = api.create(&PostParams::default(), &config_map("a", &[])).await.unwrap();
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "w".to_owned())]));
    let replaced = api.replace("a", &dry, &changed).await.unwrap();
    assert_eq!(replaced.data.unwrap()["k"], "w");
    let merge = Patch::Merge(json!({"data": {"x": "1"}}));
    let patched = api.patch("a", &PatchParams::default().dry_run(), &merge).await.unwrap();
    assert_eq!(patched.data.unwrap()["x"], "1");
    // kube sends a delete's dryRun in its DeleteOptions body, as kubectl does.
    let dry_delete = DeleteParams { dry_run: true, ..DeleteParams::default() };
    api.delete("a", &dry_delete).await.unwrap();
    api.delete_collection(&dry_delete, &ListParams::default()).await.unwrap();
    assert_eq!(api.get("a").await.unwrap(), created, "nothing changed");
}

#[tokio::test]
async fn objects_a_cluster_would_refuse_are_refused_with_its_reasons() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let (code, reason, message) = api_error(
        api.create(&PostParams::default(), &config_map("a", &[("Bad_Key!", "x")]))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(message.contains("metadata.labels: Invalid value: \"Bad_Key!\""), "{message}");

    let sized = |name: &str, bytes: usize| {
        let mut object = config_map(name, &[]);
        object.data = Some(BTreeMap::from([("k".to_owned(), "x".repeat(bytes))]));
        object
    };
    let (code, _, message) =
        api_error(api.create(&PostParams::default(), &sized("big", 1_500_000)).await.unwrap_err());
    assert_eq!(code, 422);
    assert!(message.contains("data: Too long: must have at most 1048576 bytes"), "{message}");
    let (code, reason, message) =
        api_error(api.create(&PostParams::default(), &sized("huge", 4 << 20)).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (413, "RequestEntityTooLarge"), "{message}");

    let created = api.create(&PostParams::default(), &config_map("a", &[])).await.unwrap();
    let patch = Patch::Merge(json!({"metadata": {"annotations": {"n": "x".repeat(300_000)}}}));
    let (code, _, message) =
        api_error(api.patch("a", &PatchParams::default(), &patch).await.unwrap_err());
    assert_eq!(code, 422);
    assert!(message.contains("metadata.annotations: Too long"), "{message}");
    assert_eq!(api.get("a").await.unwrap(), created, "a refused write changes nothing");
}

#[tokio::test]
async fn fields_a_built_in_kind_does_not_have_are_dropped_or_refused_as_asked() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "colour": "red"},
            "datta": {"a": "1"}, "data": {"b": "2"}})
    };
    let strict = PatchParams::apply("test").validation_strict();
    let (code, _, message) =
        api_error(api.patch("strict", &strict, &Patch::Apply(body("strict"))).await.unwrap_err());
    assert_eq!(code, 400, "{message}");
    assert!(message.contains("strict decoding error: unknown field \"datta\""), "{message}");
    assert!(message.contains("unknown field \"metadata.colour\""), "{message}");

    let warn = PatchParams::apply("test").validation_warn();
    let stored = api.patch("warned", &warn, &Patch::Apply(body("warned"))).await.unwrap();
    assert_eq!(stored.data.unwrap()["b"], "2");
    let resource = kube::api::ApiResource::erase::<ConfigMap>(&());
    let raw: Api<kube::api::DynamicObject> =
        Api::namespaced_with(test.client.clone(), "default", &resource);
    let raw = raw.get("warned").await.unwrap();
    assert!(raw.data.get("datta").is_none(), "the unknown field is not stored: {:?}", raw.data);
    assert_eq!(raw.data["data"]["b"], "2");
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
    // Seven made here, and the namespace's own `kube-root-ca.crt`.
    assert_eq!((pages, names.len()), (3, 8));
    let odd = api.list(&ListParams::default().labels("tier=odd")).await.unwrap();
    assert_eq!(odd.items.len(), 3);
    let not_even = api.list(&ListParams::default().labels("tier notin (even),tier")).await.unwrap();
    assert_eq!(not_even.items.len(), 3);

    // Pages of a selected list, then the same list after one object is relabelled.
    let even_names = |params: ListParams| {
        let api = api.clone();
        async move {
            let (mut names, mut params) = (Vec::new(), params.limit(2));
            loop {
                let page = api.list(&params).await.unwrap();
                names.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
                match page.metadata.continue_ {
                    Some(token) if !token.is_empty() => params = params.continue_token(&token),
                    _ => return names,
                }
            }
        }
    };
    let even = ListParams::default().labels("tier=even,!gone");
    assert_eq!(even_names(even.clone()).await, ["cm-0", "cm-2", "cm-4", "cm-6"]);
    let relabel = json!({"metadata": {"labels": {"tier": "even"}}});
    api.patch("cm-1", &PatchParams::default(), &Patch::Merge(&relabel)).await.unwrap();
    let gone = json!({"metadata": {"labels": {"gone": "yes"}}});
    api.patch("cm-2", &PatchParams::default(), &Patch::Merge(&gone)).await.unwrap();
    assert_eq!(even_names(even).await, ["cm-0", "cm-1", "cm-4", "cm-6"]);
    let by_name = api.list(&ListParams::default().fields("metadata.name=cm-4")).await.unwrap();
    assert_eq!(by_name.items.len(), 1);
    let (code, _, _) =
        api_error(api.list(&ListParams::default().fields("data.k=v")).await.unwrap_err());
    assert_eq!(code, 400, "an unsupported field selector is a bad request");
}

#[tokio::test]
async fn a_list_is_read_at_the_resource_version_it_asks_for() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let first = api.create(&PostParams::default(), &config_map("first", &[])).await.unwrap();
    let then = first.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &config_map("second", &[])).await.unwrap();
    api.delete("first", &DeleteParams::default()).await.unwrap();

    // The namespace's own `kube-root-ca.crt` left out.
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        let rv = list.metadata.resource_version.clone().unwrap();
        let names = list.items.into_iter().map(|c| c.metadata.name.unwrap());
        (rv, names.filter(|n| n != "kube-root-ca.crt").collect::<Vec<_>>())
    };
    let exact = ListParams::default().at(&then).matching(VersionMatch::Exact);
    assert_eq!(names(api.list(&exact).await.unwrap()), (then.clone(), vec!["first".to_owned()]));
    let recent = ListParams::default().at(&then).matching(VersionMatch::NotOlderThan);
    assert_eq!(names(api.list(&recent).await.unwrap()).1, ["second"]);

    let future = ListParams::default().at("999999").matching(VersionMatch::NotOlderThan);
    let (code, reason, message) = api_error(api.list(&future).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (504, "Timeout"), "{message}");
}

#[tokio::test]
async fn pages_are_not_cut_short_by_other_lists_at_the_same_revision() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    for i in 0..7 {
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}"), &[])).await.unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(test.client.clone());
    let mut names = BTreeSet::new();
    let mut params = ListParams::default().limit(3);
    loop {
        let page = api.list(&params).await.unwrap();
        names.extend(page.items.into_iter().map(|c| c.metadata.name.unwrap()));
        // Another collection listed in pages at the same revision (no write in between), more
        // often than there are kept snapshots, as informers relisting would.
        for _ in 0..40 {
            let other = namespaces.list(&ListParams::default().limit(1)).await.unwrap();
            assert!(other.metadata.continue_.is_some_and(|c| !c.is_empty()));
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    names.remove("kube-root-ca.crt");
    assert_eq!(names.len(), 7, "every page of the list is there: {names:?}");
}

#[tokio::test]
async fn the_root_ca_config_map_comes_back_when_deleted_or_changed() {
    let test = start().await;
    let api: Api<ConfigMap> = Api::namespaced(test.client.clone(), "default");
    let original = api.get("kube-root-ca.crt").await.unwrap().data.unwrap();
    api.delete("kube-root-ca.crt", &DeleteParams::default()).await.unwrap();
    let restored = eventually("the ConfigMap is back", || async {
        api.get("kube-root-ca.crt").await.ok()?.data
    })
    .await;
    assert_eq!(restored, original);
    let change = Patch::Merge(json!({"data": {"ca.crt": "not the CA"}}));
    api.patch("kube-root-ca.crt", &PatchParams::default(), &change).await.unwrap();
    eventually("the CA is put back", || async {
        (api.get("kube-root-ca.crt").await.ok()?.data? == original).then_some(())
    })
    .await;
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

#[tokio::test]
async fn a_method_a_path_does_not_take_is_a_405_status() {
    let test = start().await;
    for path in ["/api", "/healthz"] {
        let request = axum::http::Request::post(path).body(Vec::new()).unwrap();
        let refused = test.client.request::<serde_json::Value>(request).await.unwrap_err();
        let (code, reason, message) = api_error(refused);
        assert_eq!((code, reason.as_str()), (405, "MethodNotAllowed"), "{path}: {message}");
    }
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD.decode(body).unwrap()
}

#[tokio::test]
async fn a_running_pod_on_a_node_is_held_for_its_grace_period_and_a_pending_one_goes_at_once() {
    let test = start().await;
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let pod = |name: &str, node: Option<&str>| {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
        }))
        .unwrap()
    };
    pods.create(&PostParams::default(), &pod("pending", None)).await.unwrap();
    pods.create(&PostParams::default(), &pod("bound", Some("n1"))).await.unwrap();
    let created = pods.get("bound").await.unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().termination_grace_period_seconds,
        Some(30),
        "pods are defaulted as upstream"
    );

    assert!(pods.delete("pending", &DeleteParams::default()).await.unwrap().is_right());
    assert!(pods.get_opt("pending").await.unwrap().is_none(), "an unscheduled pod goes at once");

    let marked = pods.delete("bound", &DeleteParams::default()).await.unwrap().left().unwrap();
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
    assert!(marked.metadata.deletion_timestamp.is_some());
    let shorter = DeleteParams { grace_period_seconds: Some(5), ..DeleteParams::default() };
    let marked = pods.delete("bound", &shorter).await.unwrap().left().unwrap();
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(5), "a delete may shorten it");
    assert!(pods.delete("bound", &DeleteParams::default()).await.unwrap().is_left());
    assert_eq!(
        pods.get("bound").await.unwrap().metadata.deletion_grace_period_seconds,
        Some(5),
        "never lengthen it"
    );
    let now = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
    assert!(pods.delete("bound", &now).await.unwrap().is_right());
    assert!(pods.get_opt("bound").await.unwrap().is_none(), "its node removes it with grace 0");
}

#[tokio::test]
async fn a_pod_runs_as_a_service_account_that_exists() {
    let test = start().await;
    let namespaces: Api<Namespace> = Api::all(test.client.clone());
    let team = Namespace {
        metadata: ObjectMeta { name: Some("team".into()), ..Default::default() },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &team).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "team");
    let pod = |name: &str, account: Option<&str>| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"serviceAccountName": account, "containers": [{"name": "c", "image": "busybox"}]}}))
        .unwrap()
    };
    // The namespace's default account exists as soon as the namespace does, and its
    // credentials are mounted in the pod's containers.
    let created = pods.create(&PostParams::default(), &pod("a", None)).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    let volume = &spec.volumes.as_ref().unwrap()[0];
    assert!(volume.name.starts_with("kube-api-access-") && volume.projected.is_some());
    let mounts = spec.containers[0].volume_mounts.as_ref().unwrap();
    assert_eq!(mounts[0].name, volume.name);
    assert_eq!(mounts[0].mount_path, "/var/run/secrets/kubernetes.io/serviceaccount");
    // Not when the account, or the pod over it, says so.
    let quiet = json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false});
    let accounts: Api<ServiceAccount> = Api::namespaced(test.client.clone(), "team");
    accounts.create(&PostParams::default(), &serde_json::from_value(quiet).unwrap()).await.unwrap();
    let spec = pods.create(&PostParams::default(), &pod("q", Some("quiet"))).await.unwrap().spec;
    assert_eq!(spec.unwrap().volumes, None);
    let mut asks = pod("q2", Some("quiet"));
    asks.spec.as_mut().unwrap().automount_service_account_token = Some(true);
    let spec = pods.create(&PostParams::default(), &asks).await.unwrap().spec.unwrap();
    assert_eq!(spec.volumes.map(|v| v.len()), Some(1));
    let (code, reason, message) =
        api_error(pods.create(&PostParams::default(), &pod("b", Some("robot"))).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(message.contains("serviceaccount \"robot\" not found"), "{message}");
    // A deleted default account comes back, as kube-controller-manager brings it back.
    accounts.delete("default", &DeleteParams::default()).await.unwrap();
    pods.create(&PostParams::default(), &pod("c", None)).await.unwrap();
    assert!(accounts.get("default").await.is_ok());
}

#[tokio::test]
async fn a_job_gets_a_selector_matching_the_labels_of_its_pods() {
    let test = start().await;
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(test.client.clone(), "default");
    let job = serde_json::from_value(json!({
        "metadata": {"name": "hello"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
    }))
    .unwrap();
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    let uid = job.metadata.uid.clone().unwrap();
    let spec = job.spec.unwrap();
    let selector = spec.selector.unwrap().match_labels.unwrap();
    assert_eq!(selector.get("batch.kubernetes.io/controller-uid"), Some(&uid));
    let labels = spec.template.metadata.unwrap().labels.unwrap();
    assert_eq!(labels.get("job-name").map(String::as_str), Some("hello"));
    assert_eq!(labels.get("batch.kubernetes.io/controller-uid"), Some(&uid));
    assert_eq!(
        (spec.completions, spec.parallelism, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
}

#[tokio::test]
async fn an_eviction_spends_the_disruption_budget_and_is_refused_once_it_is_spent() {
    let test = start().await;
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let running = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    for name in ["web-1", "web-2"] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
        pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&running)).await.unwrap();
    }
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(test.client.clone(), "default");
    let budget = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let budget = budgets
        .create(&PostParams::default(), &serde_json::from_value(budget).unwrap())
        .await
        .unwrap();
    assert_eq!(budget.metadata.generation, Some(1));
    // What the disruption controller would write.
    let counted = json!({"status": {"observedGeneration": 1, "currentHealthy": 2,
        "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1}});
    budgets.patch_status("web", &PatchParams::default(), &Patch::Merge(&counted)).await.unwrap();

    pods.evict("web-1", &EvictParams::default()).await.unwrap();
    assert!(pods.get_opt("web-1").await.unwrap().is_none(), "an unbound pod goes at once");
    let status = budgets.get("web").await.unwrap().status.unwrap();
    assert_eq!(status.disruptions_allowed, 0);
    assert!(status.disrupted_pods.unwrap().contains_key("web-1"));

    let (code, reason, message) =
        api_error(pods.evict("web-2", &EvictParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert!(pods.get_opt("web-2").await.unwrap().is_some(), "the refused pod stays");
    let (code, _, _) = api_error(pods.evict("nope", &EvictParams::default()).await.unwrap_err());
    assert_eq!(code, 404);
}

#[tokio::test]
async fn a_pod_no_node_has_taken_yet_has_an_empty_log() {
    let test = start().await;
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "waiting"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let log = pods.logs("waiting", &Default::default()).await.unwrap();
    assert_eq!(log, "");
}

#[tokio::test]
async fn health_endpoints_answer_as_upstream_s_do() {
    let test = start().await;
    let get = |path: &str| axum::http::Request::get(path).body(Vec::new()).unwrap();
    assert_eq!(test.client.request_text(get("/readyz")).await.unwrap(), "ok");
    assert_eq!(test.client.request_text(get("/livez/ping")).await.unwrap(), "ok");
    let verbose = test.client.request_text(get("/readyz?verbose")).await.unwrap();
    assert!(verbose.starts_with("[+]ping ok\n"), "{verbose}");
    assert!(verbose.ends_with("readyz check passed\n"), "{verbose}");
    let unknown = test.client.request_text(get("/healthz/nothing")).await.unwrap_err();
    assert!(matches!(unknown, kube::Error::Api(ref e) if e.code == 404), "{unknown:?}");
}

#[tokio::test]
async fn a_nodes_proxy_answers_only_while_the_node_is_ready() {
    use k8s_openapi::api::core::v1::Node;
    let test = start().await;
    let nodes: Api<Node> = Api::all(test.client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let get = |path: &str| axum::http::Request::get(path).body(Vec::new()).unwrap();
    let proxied = |path: &str| test.client.request_text(get(&format!("/api/v1/nodes/{path}")));

    // No kubelet registered it, so none answers for it.
    let (code, reason, message) = api_error(proxied("n1/proxy/healthz").await.unwrap_err());
    assert_eq!((code, reason.as_str()), (503, "ServiceUnavailable"));
    assert!(message.contains(r#"node "n1" is not ready"#), "{message}");
    let (code, reason, _) = api_error(proxied("n2/proxy/healthz").await.unwrap_err());
    assert_eq!((code, reason.as_str()), (404, "NotFound"));

    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    nodes.patch_status("n1", &PatchParams::default(), &Patch::Merge(ready)).await.unwrap();
    assert_eq!(proxied("n1/proxy/healthz").await.unwrap(), "ok\n");
    // The URL may name the kubelet's scheme and port, as upstream's does.
    assert_eq!(proxied("https:n1:10250/proxy/healthz").await.unwrap(), "ok\n");
    let pods: serde_json::Value =
        serde_json::from_str(&proxied("n1/proxy/pods").await.unwrap()).unwrap();
    assert_eq!(pods, json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}));
    let (code, _, _) = api_error(proxied("n1/proxy/configz").await.unwrap_err());
    assert_eq!(code, 404, "a path the kubelet does not serve here");
}
