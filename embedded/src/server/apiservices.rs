//! The `Local` APIServices kube-aggregator keeps for the group versions the API server serves
//! itself, so that `kubectl get apiservices` lists them `Local` and `True` as on a cluster: one
//! per served group version (`v1.` for the core group, `v1.apps`, `v1alpha1.<a CRD's group>`...),
//! labelled as upstream's auto-registration labels them, made again when deleted, and removed
//! when a CRD's group version is no longer served.

use std::collections::BTreeMap;

use futures::FutureExt;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::catalog::{ResourceInfo, builtin_resource, builtins};
use crate::storage::{Store, StoreError, WriteOp};

use super::objects::{meta_str, now_rfc3339};
use super::paths::{object_key, resource_prefix};
use super::registry::CRD_PREFIX;
use super::write::create_missing;

/// The label upstream's auto-registration marks its APIServices with: `onstart` for built-in
/// groups, `true` for those of CRDs.
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// Upstream's group priorities of the built-in groups (kube-aggregator's table); a CRD's
/// group gets 1000.
const GROUP_PRIORITIES: [(&str, i64); 20] = [
    ("", 18000),
    ("apiregistration.k8s.io", 18000),
    ("apps", 17800),
    ("events.k8s.io", 17750),
    ("authentication.k8s.io", 17700),
    ("authorization.k8s.io", 17600),
    ("autoscaling", 17500),
    ("batch", 17400),
    ("certificates.k8s.io", 17300),
    ("networking.k8s.io", 17200),
    ("policy", 17100),
    ("rbac.authorization.k8s.io", 17000),
    ("storage.k8s.io", 16800),
    ("apiextensions.k8s.io", 16700),
    ("admissionregistration.k8s.io", 16700),
    ("scheduling.k8s.io", 16600),
    ("coordination.k8s.io", 16500),
    ("node.k8s.io", 16300),
    ("discovery.k8s.io", 16200),
    ("metrics.k8s.io", 100),
];

/// The built-in `apiservices` resource.
fn apiservices() -> &'static ResourceInfo {
    builtin_resource("apiregistration.k8s.io", "apiservices").expect("apiservices are built in")
}

/// A served group version: its group, its version, and whether it is built in.
type GroupVersion<'a> = (&'a str, &'a str, bool);

/// The group versions served: the built-in ones, and those CRDs in `store` serve.
fn served(store: &Store) -> Vec<(String, String, bool)> {
    let mut served: Vec<(String, String, bool)> =
        builtins().iter().map(|r| (r.group.clone(), r.version.clone(), true)).collect();
    for entry in store.list(CRD_PREFIX).entries() {
        let group = entry.object.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
        let versions = entry.object.pointer("/spec/versions").and_then(Value::as_array);
        for version in versions.into_iter().flatten() {
            let name = version.get("name").and_then(Value::as_str).unwrap_or_default();
            if version.get("served").and_then(Value::as_bool) == Some(true) && !name.is_empty() {
                served.push((group.to_owned(), name.to_owned(), false));
            }
        }
    }
    served
}

/// The Local APIServices of the `served` group versions, by name.
fn local_apiservices<'a>(
    served: impl IntoIterator<Item = GroupVersion<'a>>,
) -> BTreeMap<String, Value> {
    let mut wanted = BTreeMap::new();
    for (group, version, builtin) in served {
        let name = [version, ".", group].concat();
        if wanted.contains_key(&name) {
            continue;
        }
        let (group_priority, version_priority) =
            match GROUP_PRIORITIES.iter().find(|(g, _)| *g == group) {
                // The core group's one version is 1; built-in versions are 15, newer ones
                // (`autoscaling/v2`) above the older.
                Some((_, priority)) if group.is_empty() => (*priority, 1),
                Some((_, priority)) if version == "v2" => (*priority, 30),
                Some((_, priority)) => (*priority, 15),
                None => (1000, 100),
            };
        let automanaged = if builtin { "onstart" } else { "true" };
        let mut spec = json!({"version": version, "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority});
        if !group.is_empty() {
            spec["group"] = json!(group);
        }
        let apiservice = json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": name, "labels": {AUTOMANAGED: automanaged}},
            "spec": spec,
        });
        wanted.insert(name, apiservice);
    }
    wanted
}

/// The status of a Local APIService.
fn available(now: &str) -> Value {
    json!({"conditions": [{"type": "Available", "status": "True", "reason": "Local",
        "message": "Local APIServices are always available", "lastTransitionTime": now}]})
}

/// Creates the missing Local APIServices, available, gives one that lost its status its status
/// again, and deletes the automanaged ones of group versions no longer served.
async fn reconcile(store: &Store) -> Result<(), StoreError> {
    let info = apiservices();
    let served = served(store);
    let wanted = local_apiservices(served.iter().map(|(g, v, b)| (g.as_str(), v.as_str(), *b)));
    for (name, apiservice) in &wanted {
        let status = available(&now_rfc3339());
        create_missing(store, info, None, apiservice.clone(), Some(status)).await?;
        let key = object_key(info, "", name);
        if let Some(entry) = store.get(&key).filter(|e| e.object.get("status").is_none()) {
            let mut object = (*entry.object).clone();
            object["status"] = available(&now_rfc3339());
            let op = WriteOp::Update { key, expected_revision: entry.revision, object };
            store.write_if_unchanged(op).await?;
        }
    }
    for entry in store.list(&resource_prefix(info)).entries() {
        let name = meta_str(&entry.object, "name").unwrap_or_default();
        let automanaged = entry.object.pointer("/metadata/labels").and_then(|l| l.get(AUTOMANAGED));
        if automanaged.is_some() && !wanted.contains_key(name) {
            let op = WriteOp::Delete { key: entry.key.clone(), expected_revision: entry.revision };
            store.write_if_unchanged(op).await?;
        }
    }
    Ok(())
}

/// Keeps the Local APIServices as CRDs and APIServices change, until the store shuts down.
pub(crate) fn spawn(store: Store) -> JoinHandle<()> {
    let own = resource_prefix(apiservices());
    tokio::spawn(async move {
        loop {
            let from = store.revision();
            let (Ok(mut crd_events), Ok(mut own_events)) =
                (store.watch(CRD_PREFIX, from), store.watch(&own, from))
            else {
                return;
            };
            loop {
                if let Err(error) = reconcile(&store).await {
                    tracing::warn!(%error, "keeping the Local APIServices failed");
                }
                // The events already queued, among them those of the pass's own writes (the
                // store sends a write's event before its reply), were seen by the pass.
                let queued = loop {
                    let ready = crd_events.next().now_or_never();
                    match ready.or_else(|| own_events.next().now_or_never()) {
                        Some(Some(Ok(_))) => {}
                        pending_or_end => break pending_or_end,
                    }
                };
                let event = match queued {
                    Some(end) => end,
                    None => tokio::select! {
                        event = crd_events.next() => event,
                        event = own_events.next() => event,
                    },
                };
                match event {
                    Some(Ok(_)) => {}
                    // Fell behind the history: watch from now, and look again.
                    Some(Err(StoreError::Compacted { .. })) => break,
                    None | Some(Err(_)) => return,
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_group_version_has_a_local_apiservice_with_upstreams_priorities() {
        let built_in = builtins().iter().map(|r| (r.group.as_str(), r.version.as_str(), true));
        let crd = [("example.com", "v1alpha1", false)];
        let wanted = local_apiservices(built_in.chain(crd));
        assert_eq!(
            wanted["v1alpha1.example.com"]["spec"],
            json!({"group": "example.com",
            "version": "v1alpha1", "groupPriorityMinimum": 1000, "versionPriority": 100})
        );
        assert_eq!(wanted["v1alpha1.example.com"]["metadata"]["labels"][AUTOMANAGED], "true");
        assert_eq!(
            wanted["v1."]["spec"],
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
        );
        assert_eq!(wanted["v1.apps"]["spec"]["groupPriorityMinimum"], 17800);
        assert_eq!(wanted["v2.autoscaling"]["spec"]["versionPriority"], 30);
        assert_eq!(wanted["v1.autoscaling"]["spec"]["versionPriority"], 15);
        assert_eq!(wanted["v1.apps"]["metadata"]["labels"][AUTOMANAGED], "onstart");
        assert!(wanted.contains_key("v1beta1.metrics.k8s.io"));
        assert_eq!(available("t")["conditions"][0]["reason"], "Local");
    }
}
