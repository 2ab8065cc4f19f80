//! Workload controllers adopt orphans and release what no longer matches, as on a cluster: a
//! StatefulSet or Deployment deleted with `--cascade=orphan` and applied again takes its pods or
//! ReplicaSet back, a bare pod with a ReplicaSet's labels is adopted, and a pod relabelled out
//! of a Deployment is let go.

use crate::support::{Keelson, eventually};

/// Fast readiness, so the tests take seconds.
const FAST: [&str; 2] = ["--pod-ready-delay", "200ms"];

const STATEFUL_SET: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:16
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

/// `kubectl get <what> -o jsonpath=<path>`, split on whitespace.
fn words(k: &Keelson, what: &[&str], path: &str) -> Vec<String> {
    let jsonpath = format!("jsonpath={path}");
    let mut args = vec!["get"];
    args.extend(what);
    args.extend(["-o", &jsonpath]);
    k.ok(&args).split_whitespace().map(str::to_owned).collect()
}

/// The names of the pods selected by `selector` that are not being deleted.
fn live_pods(k: &Keelson, selector: &str) -> Vec<String> {
    let path = "{range .items[*]}{.metadata.name}={.metadata.deletionTimestamp} {end}";
    words(k, &["pods", "-l", selector], path)
        .into_iter()
        .filter_map(|entry| entry.strip_suffix('=').map(str::to_owned))
        .collect()
}

#[test]
fn a_statefulset_applied_again_after_an_orphaning_delete_adopts_its_pods() {
    let k = Keelson::up_with(&FAST);
    k.apply("db.yaml", STATEFUL_SET);
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    let old_uid = k.jsonpath("statefulset", "db", "{.metadata.uid}");
    let pod_uids = words(&k, &["pods", "db-0", "db-1"], "{.items[*].metadata.uid}");

    k.ok(&["delete", "statefulset", "db", "--cascade=orphan"]);
    let owners = words(&k, &["pods", "db-0", "db-1"], "{.items[*].metadata.ownerReferences}");
    assert!(owners.is_empty(), "orphans keep no owner: {owners:?}");

    k.apply("db.yaml", STATEFUL_SET);
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    let new_uid = k.jsonpath("statefulset", "db", "{.metadata.uid}");
    assert_ne!(new_uid, old_uid);
    let path = "{range .items[*]}{.metadata.ownerReferences[?(@.controller==true)].uid} {end}";
    assert_eq!(words(&k, &["pods", "db-0", "db-1"], path), [new_uid.as_str(), new_uid.as_str()]);
    // The very pods: adopted, not made again.
    assert_eq!(words(&k, &["pods", "db-0", "db-1"], "{.items[*].metadata.uid}"), pod_uids);
    assert_eq!(k.jsonpath("statefulset", "db", "{.status.readyReplicas}"), "2");
    // Its revision was adopted too: the history still lists it.
    assert_eq!(words(&k, &["controllerrevisions"], path), [new_uid.as_str()]);
    let history = k.ok(&["rollout", "history", "statefulset/db"]);
    assert!(history.contains("\n1 "), "{history}");
    let events = k.ok(&["get", "events", "--field-selector=reason=FailedCreate"]);
    assert!(!events.contains("db-"), "{events}");
}

#[test]
fn a_pod_relabelled_out_of_a_deployment_is_released_and_replaced() {
    let k = Keelson::up_with(&FAST);
    k.apply("web.yaml", DEPLOYMENT);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let pods = live_pods(&k, "app=web");
    assert_eq!(pods.len(), 2);
    let relabelled = &pods[0];

    k.ok(&["label", "pod", relabelled, "app=quarantine", "--overwrite"]);
    eventually(30, "the relabelled pod to lose its owner", || {
        k.jsonpath("pod", relabelled, "{.metadata.ownerReferences}").is_empty()
    });
    eventually(30, "a replacement", || {
        let now = live_pods(&k, "app=web");
        now.len() == 2 && !now.contains(relabelled)
    });
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);

    // Deleting the Deployment takes its pods, not the one released.
    k.ok(&["delete", "deployment", "web"]);
    eventually(30, "the Deployment's pods to go", || live_pods(&k, "app=web").is_empty());
    assert_eq!(live_pods(&k, "app=quarantine"), [relabelled.as_str()]);
}

#[test]
fn a_deployment_applied_again_adopts_its_replicaset_which_adopts_a_bare_pod() {
    let k = Keelson::up_with(&FAST);
    k.apply("web.yaml", DEPLOYMENT);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let sets = words(&k, &["replicasets"], "{.items[*].metadata.name}");
    assert_eq!(sets.len(), 1);
    let set = &sets[0];
    let pods = live_pods(&k, "app=web");

    k.ok(&["delete", "deployment", "web", "--cascade=orphan"]);
    k.apply("web.yaml", DEPLOYMENT);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let uid = k.jsonpath("deployment", "web", "{.metadata.uid}");
    let path = "{range .items[*]}{.metadata.name}:{.metadata.ownerReferences[0].uid} {end}";
    assert_eq!(words(&k, &["replicasets"], path), [format!("{set}:{uid}")]);
    assert_eq!(live_pods(&k, "app=web"), pods, "the ReplicaSet kept its pods");

    // A bare pod with the ReplicaSet's labels is adopted, and one pod too many goes.
    let hash = k.jsonpath("replicaset", set, "{.metadata.labels.pod-template-hash}");
    k.apply(
        "bare.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\n  labels: {{app: web, pod-template-hash: {hash}}}\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n"
        ),
    );
    let rs_uid = k.jsonpath("replicaset", set, "{.metadata.uid}");
    eventually(30, "the bare pod to be adopted", || {
        k.kubectl(&["get", "pod", "bare", "-o", "jsonpath={.metadata.ownerReferences[0].uid}"])
            .stdout
            == rs_uid.as_bytes()
            || !k.kubectl(&["get", "pod", "bare"]).status.success()
    });
    eventually(30, "two pods again", || live_pods(&k, "app=web").len() == 2);
    k.ok_showing(&["describe", "replicaset", set], &["Deleted pod: "]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
}

#[test]
fn a_daemonset_applied_again_adopts_its_pods_and_history() {
    let k = Keelson::up_with(&["--pod-ready-delay", "200ms", "--node", "a", "--node", "b"]);
    let agent = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n    spec:\n      containers:\n      - name: agent\n        image: agent:1\n";
    k.apply("agent.yaml", agent);
    k.ok(&["rollout", "status", "daemonset/agent", "--timeout=60s"]);
    let pods = live_pods(&k, "app=agent");
    assert_eq!(pods.len(), 2);

    k.ok(&["delete", "daemonset", "agent", "--cascade=orphan"]);
    k.apply("agent.yaml", agent);
    k.ok(&["rollout", "status", "daemonset/agent", "--timeout=60s"]);
    let uid = k.jsonpath("daemonset", "agent", "{.metadata.uid}");
    let path = "{range .items[*]}{.metadata.ownerReferences[?(@.controller==true)].uid} {end}";
    assert_eq!(words(&k, &["pods", "-l", "app=agent"], path), [uid.as_str(), uid.as_str()]);
    assert_eq!(live_pods(&k, "app=agent"), pods, "one pod a node, the same ones");
    assert_eq!(words(&k, &["controllerrevisions"], path), [uid.as_str()]);
    let history = k.ok(&["rollout", "history", "daemonset/agent"]);
    assert!(history.contains("\n1 "), "{history}");
}
