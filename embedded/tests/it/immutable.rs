//! Updates a real API server refuses because they change what may not change once created:
//! most of a pod's spec, a StatefulSet's Service name, a Job's completions. What clients and
//! Keelson's own controllers write (images, a binding, re-applied manifests) still goes.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::start;

/// The code of a refused write and its causes' fields, reasons and messages.
fn refusal(error: kube::Error) -> (u16, Vec<(String, String, String)>) {
    let kube::Error::Api(status) = error else { panic!("not an API error: {error:?}") };
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    (status.code, causes.into_iter().map(|c| (c.field, c.reason, c.message)).collect())
}

/// A merge patch.
fn merge(patch: Value) -> Patch<Value> {
    Patch::Merge(patch)
}

/// Server-side apply as `kubectl apply --server-side` does it.
fn applied() -> PatchParams {
    PatchParams::apply("kubectl").force()
}

fn pod_manifest(image: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": image,
            "resources": {"requests": {"memory": "64Mi"}}}]}})
}

#[tokio::test]
async fn a_pod_s_spec_changes_only_in_its_images_and_its_binding() {
    let test = start().await;
    let pods: Api<Pod> = Api::namespaced(test.client.clone(), "default");
    let created: Pod = serde_json::from_value(pod_manifest("nginx:1")).unwrap();
    pods.create(&PostParams::default(), &created).await.unwrap();

    let restart = merge(json!({"spec": {"restartPolicy": "Never"}}));
    let (code, causes) =
        refusal(pods.patch("web", &PatchParams::default(), &restart).await.unwrap_err());
    assert_eq!((code, causes.len()), (422, 1), "{causes:?}");
    let (field, reason, message) = &causes[0];
    assert_eq!((field.as_str(), reason.as_str()), ("spec", "FieldValueForbidden"));
    assert!(
        message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        ),
        "{message}"
    );
    assert!(message.ends_with("changed: spec.restartPolicy"), "{message}");

    // `kubectl set image` sends a strategic merge patch.
    let image =
        Patch::Strategic(json!({"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}));
    let patched = pods.patch("web", &PatchParams::default(), &image).await.unwrap();
    assert_eq!(patched.spec.unwrap().containers[0].image.as_deref(), Some("nginx:2"));

    // The same manifest applied twice, then with a new image; and replaced without the
    // defaults the server filled. The token volume it mounted at creation is part of the spec,
    // as on a cluster: a replacement must keep it.
    for image in ["nginx:2", "nginx:2", "nginx:3"] {
        pods.patch("web", &applied(), &Patch::Apply(pod_manifest(image))).await.unwrap();
    }
    let mut manifest = pod_manifest("nginx:3");
    let stored = pods.get("web").await.unwrap();
    manifest["metadata"]["resourceVersion"] = json!(stored.metadata.resource_version);
    let as_written: Pod = serde_json::from_value(manifest.clone()).unwrap();
    let (code, causes) =
        refusal(pods.replace("web", &PostParams::default(), &as_written).await.unwrap_err());
    assert_eq!((code, causes[0].0.as_str()), (422, "spec"), "{causes:?}");
    let stored_spec = stored.spec.as_ref().unwrap();
    let volume = &stored_spec.volumes.as_ref().unwrap()[0];
    assert!(volume.name.starts_with("kube-api-access-"), "{volume:?}");
    manifest["spec"]["volumes"] = json!(stored_spec.volumes);
    manifest["spec"]["containers"][0]["volumeMounts"] =
        json!(stored_spec.containers[0].volume_mounts);
    let replaced = serde_json::from_value(manifest).unwrap();
    let replaced = pods.replace("web", &PostParams::default(), &replaced).await.unwrap();
    let spec = replaced.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"), "the defaults stay");
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));

    // Keelson's scheduler binds a pod by setting its node name, once.
    let bind = |node: &str| merge(json!({"spec": {"nodeName": node}}));
    pods.patch("web", &PatchParams::default(), &bind("node-1")).await.unwrap();
    let error = pods.patch("web", &PatchParams::default(), &bind("node-2")).await.unwrap_err();
    let (code, causes) = refusal(error);
    assert_eq!((code, causes[0].0.as_str()), (422, "spec"), "{causes:?}");
    let stored = pods.get("web").await.unwrap().spec.unwrap();
    assert_eq!(stored.node_name.as_deref(), Some("node-1"));
    assert_eq!(stored.containers[0].image.as_deref(), Some("nginx:3"));
}

#[tokio::test]
async fn a_stateful_set_s_service_name_never_changes() {
    let test = start().await;
    let sets: Api<StatefulSet> = Api::namespaced(test.client.clone(), "default");
    let set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}});
    sets.create(&PostParams::default(), &serde_json::from_value(set.clone()).unwrap())
        .await
        .unwrap();

    let renamed = merge(json!({"spec": {"serviceName": "other"}}));
    let (code, causes) =
        refusal(sets.patch("db", &PatchParams::default(), &renamed).await.unwrap_err());
    assert_eq!(
        (code, causes),
        (
            422,
            vec![(
                "spec".to_owned(),
                "FieldValueForbidden".to_owned(),
                "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden".to_owned()
            )]
        )
    );
    let scaled = merge(json!({"spec": {"replicas": 3, "template": {"metadata": {"annotations":
        {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}}}}}));
    sets.patch("db", &PatchParams::default(), &scaled).await.unwrap();
    sets.patch("db", &applied(), &Patch::Apply(set)).await.unwrap();
    assert_eq!(sets.get("db").await.unwrap().spec.unwrap().service_name.as_deref(), Some("db"));
}

#[tokio::test]
async fn a_job_s_completions_never_change() {
    let test = start().await;
    let jobs: Api<Job> = Api::namespaced(test.client.clone(), "default");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox"}]}}}});
    jobs.patch("work", &applied(), &Patch::Apply(job.clone())).await.unwrap();

    let more = merge(json!({"spec": {"completions": 3}}));
    let (code, causes) =
        refusal(jobs.patch("work", &PatchParams::default(), &more).await.unwrap_err());
    assert_eq!(
        (code, causes),
        (
            422,
            vec![(
                "spec.completions".to_owned(),
                "FieldValueInvalid".to_owned(),
                "Invalid value: 3: field is immutable".to_owned()
            )]
        )
    );
    // Re-applied as a controller re-applies its children; then changed where a Job may change.
    jobs.patch("work", &applied(), &Patch::Apply(job)).await.unwrap();
    let changed = merge(json!({"metadata": {"annotations": {"note": "x"}},
        "spec": {"parallelism": 2, "activeDeadlineSeconds": 600}}));
    let stored = jobs.patch("work", &PatchParams::default(), &changed).await.unwrap();
    assert_eq!(stored.spec.unwrap().completions, Some(1));
}
