//! The real `kubectl`, default flags (strict validation), against `keelson up`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Keelson, eventually};

#[test]
fn crds_and_examples_apply_then_get_scale_and_refuse_invalid() {
    let k = Keelson::up();
    // `keelson up` installed the CRDs by server-side apply; the first client-side apply adds
    // kubectl's last-applied annotation, as on any cluster, and the next one changes nothing.
    k.ok(&["apply", "-f", "crds/"]);
    let again = k.ok(&["apply", "-f", "crds/"]);
    assert_eq!(
        again.matches("unchanged").count(),
        12,
        "re-applying the CRDs changes nothing:\n{again}"
    );
    k.ok(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=30s"]);

    let created = k.ok(&["apply", "-R", "-f", "examples/"]);
    assert!(
        created.contains("modeldeployment.serving.keelson.dev/qwen2-5-7b created"),
        "{created}"
    );
    // A second apply changes nothing, except the replicas the GPUGroup controller set on the
    // members it scaled to zero (swaps go through the ModelDeployments, as the spec says).
    let unchanged = k.ok(&["apply", "-R", "-f", "examples/"]);
    let members = [
        "modeldeployment.serving.keelson.dev/llama-3-1-8b",
        "modeldeployment.serving.keelson.dev/qwen2-5-7b",
    ];
    let changed: Vec<&str> = unchanged
        .lines()
        .filter(|l| l.ends_with("configured") && !members.iter().any(|m| l.starts_with(m)))
        .collect();
    assert!(changed.is_empty(), "a second apply changes nothing:\n{unchanged}");

    // A changed manifest goes through kubectl's client-side apply patch.
    let flow =
        std::fs::read_to_string(crate::support::workspace().join("examples/workflows/flow.yaml"))
            .unwrap();
    let changed = k.manifest(
        "flow.yaml",
        &flow
            .replace("Fetch, approve and summarise the weekly report.", "Weekly report, reviewed."),
    );
    assert!(
        k.ok(&["apply", "-f", &changed])
            .contains("flow.workflows.keelson.dev/weekly-report configured")
    );
    assert_eq!(
        k.jsonpath("flow", "weekly-report", "{.spec.description}"),
        "Weekly report, reviewed."
    );

    let ssa = k.ok(&["apply", "--server-side", "-f", "examples/serving/gpugroup.yaml"]);
    assert!(ssa.contains("serverside-applied"), "{ssa}");

    let table = k.ok(&["get", "modeldeployments"]);
    let header = table.lines().next().unwrap();
    for column in ["NAME", "BACKEND", "MODEL", "REPLICAS", "PHASE", "AGE"] {
        assert!(header.contains(column), "printer column {column} missing: {header}");
    }
    assert!(table.lines().any(|l| l.starts_with("qwen2-5-7b") && l.contains("vllm")), "{table}");
    assert!(k.ok(&["get", "md", "qwen2-5-7b", "-o", "yaml"]).contains("backend: vllm"));
    let everything = k.ok(&["get", "keelson"]);
    for kind in [
        "modeldeployment.serving.keelson.dev",
        "flow.workflows.keelson.dev",
        "integration.integration.keelson.dev",
    ] {
        assert!(everything.contains(kind), "the keelson category lists {kind}:\n{everything}");
    }

    // The example models share a GPUGroup, whose controller decides their replicas: scale one
    // of its own.
    k.apply(
        "solo.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: solo\nspec:\n  backend: tei\n  model: BAAI/bge-small-en-v1.5\n",
    );
    assert!(k.ok(&["scale", "md", "solo", "--replicas=2"]).contains("scaled"));
    assert_eq!(k.jsonpath("md", "solo", "{.spec.replicas}"), "2");

    let invalid = k.manifest(
        "bad.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: bad\nspec:\n  backend: vllm\n  model: m\n  replicas: -1\n",
    );
    let refused = k.fails(&["apply", "-f", &invalid]);
    assert!(
        refused.contains("spec.replicas") && refused.contains("greater than or equal to 0"),
        "{refused}"
    );
    let unknown = k.manifest(
        "unknown.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: typo\nspec:\n  backend: vllm\n  model: m\n  replicaz: 2\n",
    );
    let strict = k.fails(&["apply", "-f", &unknown]);
    assert!(
        strict.contains("unknown field \"spec.replicaz\""),
        "strict field validation: {strict}"
    );
}

const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.25\n        env:\n        - name: MODE\n          value: prod\n";

fn config_map(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  a: \"1\"\n"
    )
}

#[test]
fn a_deployment_image_is_patched_by_strategic_merge() {
    let k = Keelson::up();
    k.apply("web.yaml", WEB);
    k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    k.ok(&["patch", "deployment", "web", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.36"}]}}}}"#]);
    let images = k.jsonpath(
        "deployment",
        "web",
        "{range .spec.template.spec.containers[*]}{.name}={.image} {end}",
    );
    let mut images: Vec<&str> = images.split_whitespace().collect();
    images.sort();
    assert_eq!(images, ["nginx=nginx:1.27", "sidecar=busybox:1.36"], "containers merge by name");
    assert_eq!(
        k.jsonpath(
            "deployment",
            "web",
            "{.spec.template.spec.containers[?(@.name==\"nginx\")].env[0].value}"
        ),
        "prod"
    );
    assert!(k.ok(&["scale", "deployment", "web", "--replicas=3"]).contains("scaled"));
    assert_eq!(k.jsonpath("deployment", "web", "{.spec.replicas}"), "3");
    let scaled_by = "{.metadata.managedFields[?(@.subresource==\"scale\")].manager}";
    let scaler = k.ok(&[
        "get",
        "deployment",
        "web",
        "--show-managed-fields",
        "-o",
        &format!("jsonpath={scaled_by}"),
    ]);
    assert_eq!(scaler, "kubectl", "the scale's managed-fields entry names its subresource");
}

#[test]
fn an_object_moved_to_server_side_apply_loses_what_its_manifest_drops() {
    let k = Keelson::up();
    let sidecar = "      - name: sidecar\n        image: busybox:1.36\n";
    let with_sidecar =
        WEB.replace("      - name: nginx\n", &format!("{sidecar}      - name: nginx\n"));
    k.apply("web.yaml", &with_sidecar);
    // kubectl hands the client-side apply's fields to its server-side manager by rewriting
    // managedFields with a JSON patch; the server must store that rewrite.
    let manifest = k.manifest("web.yaml", &with_sidecar);
    k.ok(&["apply", "--server-side", "-f", &manifest]);
    let manifest = k.manifest("web.yaml", WEB);
    k.ok(&["apply", "--server-side", "-f", &manifest]);
    let names = k.jsonpath("deployment", "web", "{.spec.template.spec.containers[*].name}");
    assert_eq!(names, "nginx", "the dropped container is removed");
}

#[test]
fn get_watch_shows_a_change_made_by_another_client() {
    let k = Keelson::up();
    k.apply("watched.yaml", &config_map("watched", "default"));
    let mut child = k
        .kubectl_cmd(&[
            "get",
            "configmap",
            "watched",
            "-w",
            "-o",
            "jsonpath={.metadata.labels.stage}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    k.ok(&["label", "configmap", "watched", "stage=two"]);
    let seen =
        (0..20).any(|_| rx.recv_timeout(Duration::from_millis(500)).is_ok_and(|l| l == "two"));
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen, "kubectl get -w printed the new label");
}

/// A kind no Keelson controller writes, so the test alone decides its status.
const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.keelson.dev
spec:
  group: e2e.keelson.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
            status: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

#[test]
fn the_served_group_versions_have_local_apiservices() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let row = |name: &str| {
        let output = k.kubectl(&["get", "apiservice", name, "--no-headers"]);
        String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    eventually(10, "the built-in groups' and Keelson's", || {
        row("v1.apps") == "v1.apps Local True"
            && row("v1.") == "v1. Local True"
            && row("v1alpha1.workflows.keelson.dev") == "v1alpha1.workflows.keelson.dev Local True"
    });
    // Deleted, one comes back, as kube-aggregator's auto-registration brings it back.
    k.ok(&["delete", "apiservice", "v1.apps"]);
    eventually(10, "v1.apps again", || row("v1.apps") == "v1.apps Local True");
    // Its status taken away, it is given it again.
    let no_status = r#"[{"op":"remove","path":"/status"}]"#;
    k.ok(&[
        "patch",
        "apiservice",
        "v1.apps",
        "--subresource=status",
        "--type=json",
        "-p",
        no_status,
    ]);
    eventually(10, "v1.apps available again", || row("v1.apps") == "v1.apps Local True");
    // A CRD's group version has one while it is served.
    k.apply("crd.yaml", WIDGET_CRD);
    eventually(10, "the CRD's", || row("v1.e2e.keelson.dev") == "v1.e2e.keelson.dev Local True");
    let label = "{.metadata.labels.kube-aggregator\\.kubernetes\\.io/automanaged}";
    assert_eq!(k.jsonpath("apiservice", "v1.e2e.keelson.dev", label), "true");
    assert_eq!(k.jsonpath("apiservice", "v1.apps", label), "onstart");
    k.ok(&["delete", "crd", "widgets.e2e.keelson.dev"]);
    eventually(10, "the CRD's gone", || row("v1.e2e.keelson.dev").is_empty());
}

#[test]
fn describe_shows_events_and_wait_honours_observed_generation() {
    let k = Keelson::up();
    k.apply("crd.yaml", WIDGET_CRD);
    k.ok(&["wait", "--for=condition=Established", "crd/widgets.e2e.keelson.dev", "--timeout=30s"]);
    k.apply(
        "widget.yaml",
        "apiVersion: e2e.keelson.dev/v1\nkind: Widget\nmetadata:\n  name: gear\nspec:\n  size: 1\n",
    );
    let uid = k.jsonpath("widget", "gear", "{.metadata.uid}");
    let event = k.manifest(
        "event.yaml",
        &format!(
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: gear.1\ninvolvedObject:\n  apiVersion: e2e.keelson.dev/v1\n  kind: Widget\n  name: gear\n  namespace: default\n  uid: {uid}\nreason: Registered\nmessage: widget registered\ntype: Normal\nfirstTimestamp: \"2026-11-21T00:00:00Z\"\nlastTimestamp: \"2026-11-21T00:00:00Z\"\ncount: 1\nsource:\n  component: keelson\n"
        ),
    );
    k.ok(&["apply", "-f", &event]);
    let described = k.ok(&["describe", "widget", "gear"]);
    assert!(
        described.contains("Events:")
            && described.contains("Registered")
            && described.contains("widget registered"),
        "{described}"
    );
    // An events.k8s.io Event has no lastTimestamp, yet kubectl sorts by it (null, as upstream):
    // in a namespace holding only such events, kubectl found nothing to list when it was missing.
    k.ok(&["create", "namespace", "audit"]);
    let new_event = k.manifest(
        "new-event.yaml",
        &format!(
            "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n  name: gear.2\n  namespace: audit\nregarding:\n  apiVersion: e2e.keelson.dev/v1\n  kind: Widget\n  name: gear\n  namespace: default\n  uid: {uid}\nreason: Checked\naction: Check\nnote: widget checked\ntype: Normal\neventTime: \"2026-11-21T00:00:01.000000Z\"\nreportingController: keelson\nreportingInstance: e2e\n"
        ),
    );
    k.ok(&["apply", "-f", &new_event]);
    let sorted = k.ok(&["get", "events", "-n", "audit", "--sort-by=.lastTimestamp", "-o", "name"]);
    assert_eq!(sorted.trim(), "event/gear.2");

    let ready = |generation: u32| {
        format!(
            r#"{{"status":{{"observedGeneration":{generation},"conditions":[{{"type":"Ready","status":"True","reason":"Ok","message":"","observedGeneration":{generation},"lastTransitionTime":"2026-11-21T00:00:00Z"}}]}}}}"#
        )
    };
    k.ok(&["patch", "widget", "gear", "--subresource=status", "--type=merge", "-p", &ready(1)]);
    k.ok(&["wait", "--for=condition=Ready", "widget/gear", "--timeout=10s"]);
    k.ok(&["patch", "widget", "gear", "--type=merge", "-p", r#"{"spec":{"size":2}}"#]);
    k.fails(&["wait", "--for=condition=Ready", "widget/gear", "--timeout=2s"]);
    k.ok(&["patch", "widget", "gear", "--subresource=status", "--type=merge", "-p", &ready(2)]);
    k.ok(&["wait", "--for=condition=Ready", "widget/gear", "--timeout=10s"]);
}

#[test]
fn deleting_an_owner_removes_its_children_and_a_namespace_its_contents() {
    let k = Keelson::up();
    k.apply("parent.yaml", &config_map("parent", "default"));
    let uid = k.jsonpath("configmap", "parent", "{.metadata.uid}");
    let child = k.manifest(
        "child.yaml",
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: parent\n    uid: {uid}\n"),
    );
    k.ok(&["apply", "-f", &child]);
    k.ok(&["delete", "configmap", "parent"]);
    eventually(10, "the child to be collected", || {
        !k.kubectl(&["get", "configmap", "child"]).status.success()
    });

    k.apply("team.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n");
    k.apply("inside.yaml", &config_map("inside", "team"));
    k.ok(&["delete", "namespace", "team", "--timeout=30s"]);
    assert!(!k.kubectl(&["get", "namespace", "team"]).status.success());
    assert!(!k.kubectl(&["get", "configmap", "inside", "-n", "team"]).status.success());
}

#[test]
fn apply_prune_with_its_default_allowlist_removes_what_the_manifests_drop() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let labelled = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{set: demo}}\ndata:\n  a: \"1\"\n"
        )
    };
    let both = k.manifest("both.yaml", &format!("{}---\n{}", labelled("keep"), labelled("drop")));
    k.ok(&["apply", "-f", &both]);
    // kubectl maps every kind of its default prune list (Endpoints, ReplicationControllers,
    // StatefulSets, CronJobs, Ingresses, PersistentVolumes...) before it prunes anything.
    let one = k.manifest("one.yaml", &labelled("keep"));
    let pruned = k.ok(&["apply", "--prune", "-l", "set=demo", "-f", &one]);
    assert!(pruned.contains("configmap/drop pruned"), "{pruned}");
    assert_eq!(
        k.ok(&["get", "configmaps", "-l", "set=demo", "-o", "name"]).trim(),
        "configmap/keep"
    );
}

/// What an operator's install manifest typically carries beside its workload.
const INSTALL: &str = "apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}
subjects:
- {kind: ServiceAccount, name: op, namespace: default}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: op, namespace: default}
spec:
  podSelector: {matchLabels: {app: op}}
  policyTypes: [Ingress]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: op, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: op}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: keelson.dev/local-node
reclaimPolicy: Delete
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: op, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: op}}
";

#[test]
fn install_manifests_with_access_and_policy_kinds_apply_under_strict_validation() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let applied = k.apply("install.yaml", INSTALL);
    assert_eq!(applied.matches(" created").count(), 7, "{applied}");
    let unchanged = k.apply("install.yaml", INSTALL);
    assert_eq!(unchanged.matches(" unchanged").count(), 7, "{unchanged}");
    let binding = k.ok(&["get", "clusterrolebinding", "op", "-o", "wide"]);
    assert!(binding.contains("ClusterRole/op") && binding.contains("default/op"), "{binding}");
    let hpa = k.ok(&["get", "hpa", "op"]);
    assert!(hpa.contains("Deployment/op") && hpa.contains("cpu: <unknown>/80%"), "{hpa}");
    let typo = k.manifest(
        "typo.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules:\n- verbz: [get]\n",
    );
    let refused = k.fails(&["apply", "-f", &typo]);
    assert!(refused.contains("verbz"), "strict validation names the unknown field: {refused}");
}

#[test]
fn a_list_from_get_applies_back_and_is_checked_against_openapi_v2() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "configmap", "settings", "--from-literal=mode=fast"]);
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    // A `kind: List` is validated on the client against /openapi/v2 (kubectl's protobuf form).
    let listed = k.ok(&["get", "service,configmap,deployment", "-o", "yaml"]);
    assert!(listed.contains("kind: List"), "{listed}");
    // Without their versions, which the local node's Deployment controller moves meanwhile (a
    // stale one is a 409 Conflict, as on a cluster).
    let listed: String = listed
        .lines()
        .filter(|line| !line.trim_start().starts_with("resourceVersion:"))
        .map(|line| format!("{line}\n"))
        .collect();
    let list = k.manifest("list.yaml", &listed);
    let applied = k.ok(&["apply", "-f", &list]);
    for object in ["service/kubernetes", "configmap/settings", "deployment.apps/web"] {
        assert!(applied.contains(&format!("{object} configured")), "{object}:\n{applied}");
    }
    let typo = k.manifest("typo.yaml", &listed.replace("\n  data:\n", "\n  datta:\n"));
    let refused = k.fails(&["apply", "-f", &typo]);
    assert!(
        refused.contains(r#"unknown field "datta" in io.k8s.api.core.v1.ConfigMap"#),
        "{refused}"
    );
    let explained = k.ok(&["explain", "deployment.spec.replicas", "--output=plaintext-openapiv2"]);
    assert!(explained.contains("FIELD:    replicas <integer>"), "{explained}");
}

#[test]
fn diff_shows_only_what_the_manifest_changes() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "configmap", "settings", "--from-literal=mode=fast"]);
    let live = k.ok(&["get", "configmap", "settings", "-o", "yaml"]);
    let changed = k.manifest("settings.yaml", &live.replace("mode: fast", "mode: safe"));
    // `kubectl diff` exits 1 when there are differences; its dry-run patch sends
    // `annotations: {}`, which is not stored, as upstream's decoding drops it.
    let output = k.kubectl(&["diff", "-f", &changed]);
    let diff = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{diff}");
    let changes: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    assert_eq!(changes, ["-  mode: fast", "+  mode: safe"], "{diff}");
}

#[test]
fn create_token_issues_a_service_account_token_the_server_accepts() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "serviceaccount", "bot"]);
    let token = k.ok(&["create", "token", "bot"]).trim().to_owned();
    let whoami = k.ok(&["--token", &token, "auth", "whoami"]);
    assert!(whoami.contains("system:serviceaccount:default:bot"), "{whoami}");
    assert!(whoami.contains("system:serviceaccounts:default"), "{whoami}");

    let short = k.fails(&["create", "token", "bot", "--duration=5m"]);
    assert!(short.contains("may not specify a duration less than 10 minutes"), "{short}");
    let missing = k.fails(&["create", "token", "nobody"]);
    assert!(missing.contains(r#"serviceaccounts "nobody" not found"#), "{missing}");

    // A token bound to a pod names it, and ends with it.
    k.ok(&["run", "job", "--image=busybox"]);
    let bound =
        k.ok(&["create", "token", "bot", "--bound-object-kind=Pod", "--bound-object-name=job"]);
    let bound = bound.trim();
    assert!(k.ok(&["--token", bound, "auth", "whoami"]).contains("pod-name"));
    k.ok(&["delete", "pod", "job"]);
    let ended = k.fails(&["--token", bound, "auth", "whoami"]);
    assert!(ended.contains("Unauthorized"), "{ended}");
    let wrong = k.fails(&["--token", "not-a-token", "get", "pods"]);
    assert!(wrong.contains("Unauthorized"), "{wrong}");
}

#[test]
fn rbac_decides_what_a_service_account_may_do() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "serviceaccount", "bot"]);
    let token = k.ok(&["create", "token", "bot"]).trim().to_owned();
    let as_bot = "--as=system:serviceaccount:default:bot";
    let can_i = |args: &[&str]| {
        let output = k.kubectl(&[&["auth", "can-i"], args, &[as_bot]].concat());
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(can_i(&["list", "pods"]), "no");
    let refused = k.fails(&["--token", &token, "get", "pods"]);
    assert!(
        refused.contains(r#"Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:bot" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{refused}"
    );

    k.ok(&[
        "create",
        "rolebinding",
        "bot-view",
        "--clusterrole=view",
        "--serviceaccount=default:bot",
    ]);
    assert_eq!(can_i(&["list", "pods"]), "yes");
    k.ok(&["--token", &token, "get", "pods"]);
    assert_eq!(can_i(&["list", "pods", "-n", "kube-system"]), "no");
    // Keelson's kinds are aggregated into `view` (read) and `edit` (write), as Deployments are.
    assert_eq!(can_i(&["watch", "modeldeployments.serving.keelson.dev"]), "yes");
    assert_eq!(can_i(&["create", "flows.workflows.keelson.dev"]), "no");
    let refused = k.fails(&["--token", &token, "delete", "configmap", "kube-root-ca.crt"]);
    assert!(refused.contains("Forbidden"), "{refused}");

    // Role names may hold colons, as upstream's own do.
    k.ok(&[
        "create",
        "clusterrole",
        "team:deployer",
        "--verb=get,list,create",
        "--resource=deployments.apps",
    ]);
    k.ok(&[
        "create",
        "rolebinding",
        "bot-deploy",
        "--clusterrole=team:deployer",
        "--serviceaccount=default:bot",
    ]);
    k.ok(&["--token", &token, "create", "deployment", "web", "--image=nginx:1.27"]);
    let rules = k.ok(&["auth", "can-i", "--list", as_bot]);
    let deployments =
        rules.lines().find(|l| l.starts_with("deployments.apps ")).unwrap_or_default();
    // kubectl merges the two bindings' rules: `view`'s reads and the deployer's create.
    assert!(deployments.ends_with("[get list create watch]"), "{rules}");

    // An aggregated role (kubectl sends it in protobuf) gets the rules of the roles it selects.
    k.ok(&[
        "create",
        "clusterrole",
        "monitoring",
        "--aggregation-rule=example.com/monitoring=true",
    ]);
    k.ok(&["create", "clusterrole", "pod-metrics", "--verb=get", "--resource=pods"]);
    k.ok(&["label", "clusterrole", "pod-metrics", "example.com/monitoring=true"]);
    eventually(10, "the rules to aggregate", || {
        k.jsonpath("clusterrole", "monitoring", "{.rules[0].resources}") == r#"["pods"]"#
    });

    // The default roles are there, as on a cluster, `view` aggregated from its parts.
    let roles = k.ok(&["get", "clusterroles", "-o", "name"]);
    for role in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")),
            "{roles}"
        );
    }
}

#[test]
fn autoscale_writes_autoscaling_v1_which_reads_back_through_both_versions() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    let made = k.ok(&["autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=60"]);
    assert!(made.contains("horizontalpodautoscaler.autoscaling/web autoscaled"), "{made}");
    k.ok(&["autoscale", "deployment", "web", "--max=3", "--name=plain"]);
    let listed = k.ok(&["get", "hpa"]);
    let row = |name: &str| listed.lines().find(|l| l.starts_with(name)).unwrap().to_owned();
    let web: Vec<String> = row("web ").split_whitespace().map(str::to_owned).collect();
    // The current reading is `<unknown>` until the local node's autoscaler has read the pods.
    assert_eq!(web[1..3], ["Deployment/web", "cpu:"], "{listed}");
    assert!(web[3].ends_with("/60%"), "{listed}");
    assert_eq!(web[4..6], ["2", "5"], "{listed}");
    assert!(row("plain").contains("/80%"), "no target is upstream's 80%: {listed}");

    let v1 = "horizontalpodautoscalers.v1.autoscaling";
    let cpu = "{.spec.targetCPUUtilizationPercentage}";
    assert_eq!(k.jsonpath(v1, "web", cpu), "60");
    let v2 = "horizontalpodautoscalers.v2.autoscaling";
    let utilization = "{.spec.metrics[0].resource.target.averageUtilization}";
    assert_eq!(k.jsonpath(v2, "web", utilization), "60");

    // A v2 object with a metric v1 has no field for keeps it through a v1 round trip.
    let memory = r#"{"spec":{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"500Mi"}}}]}}"#;
    k.ok(&["patch", v2, "web", "--type=merge", "-p", memory]);
    // The local node's autoscaler writes the status meanwhile: a replace may meet a newer
    // version, and is then made again from a fresh read, as a client would.
    eventually(30, "a replace through v1", || {
        let through_v1 = k.manifest("web-v1.yaml", &k.ok(&["get", v1, "web", "-o", "yaml"]));
        k.kubectl(&["replace", "-f", &through_v1]).status.success()
    });
    assert_eq!(k.jsonpath(v2, "web", "{.spec.metrics[1].resource.name}"), "memory");
    let annotations = k.jsonpath(v2, "web", "{.metadata.annotations}");
    assert!(annotations.is_empty(), "the round trip's annotation is not stored: {annotations}");
}

#[test]
fn services_get_cluster_ips_and_node_ports_that_stay_theirs() {
    let k = Keelson::up_with(&["--no-controllers"]);
    assert_eq!(k.jsonpath("service", "kubernetes", "{.spec.clusterIP}"), "10.96.0.1");
    let server = k.ok(&["config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"]);
    let api_port = server.rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        k.jsonpath("endpoints", "kubernetes", "{.subsets[0].ports[0].port}"),
        api_port,
        "the kubernetes Endpoints point at this API server"
    );

    k.ok(&["create", "service", "nodeport", "web", "--tcp=80:8080"]);
    let ip = k.jsonpath("service", "web", "{.spec.clusterIP}");
    assert!(ip.starts_with("10.") && ip != "10.96.0.1", "{ip}");
    let node_port: u16 = k.jsonpath("service", "web", "{.spec.ports[0].nodePort}").parse().unwrap();
    assert!((30000..=32767).contains(&node_port));
    let listed = k.ok(&["get", "service", "web"]);
    assert!(
        listed.contains("NodePort") && listed.contains(&format!("80:{node_port}/TCP")),
        "{listed}"
    );

    // A replaced manifest that leaves the allocations out keeps them.
    let manifest = k.manifest(
        "web.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports:\n  - {port: 80, protocol: TCP, targetPort: 8080}\n",
    );
    k.ok(&["replace", "-f", &manifest]);
    assert_eq!(k.jsonpath("service", "web", "{.spec.clusterIP}"), ip);
    assert_eq!(k.jsonpath("service", "web", "{.spec.ports[0].nodePort}"), node_port.to_string());

    let moved =
        k.fails(&["patch", "service", "web", "-p", "{\"spec\":{\"clusterIP\":\"10.96.9.9\"}}"]);
    assert!(moved.contains("may not change once set"), "{moved}");
    let taken = k.fails(&[
        "create",
        "service",
        "clusterip",
        "other",
        "--tcp=80",
        &format!("--clusterip={ip}"),
    ]);
    assert!(taken.contains("provided IP is already allocated"), "{taken}");
    k.ok(&["patch", "service", "web", "-p", "{\"spec\":{\"type\":\"ClusterIP\"}}"]);
    assert_eq!(
        k.jsonpath("service", "web", "{.spec.ports[0].nodePort}"),
        "",
        "node ports go with the type"
    );
    k.ok(&["create", "service", "clusterip", "headless", "--clusterip=None"]);
    assert_eq!(k.jsonpath("service", "headless", "{.spec.clusterIPs[0]}"), "None");
}

#[test]
fn every_namespace_publishes_the_ca_of_the_kubeconfig() {
    let k = Keelson::up_with(&["--no-controllers"]);
    k.ok(&["create", "namespace", "team"]);
    let published = k.ok(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    let trusted = k.ok(&[
        "config",
        "view",
        "--raw",
        "-o",
        "jsonpath={.clusters[0].cluster.certificate-authority-data}",
    ]);
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD.decode(trusted.trim()).unwrap();
    let decoded = String::from_utf8(decoded).unwrap();
    assert!(published.starts_with("-----BEGIN CERTIFICATE-----"), "{published}");
    assert_eq!(published.trim(), decoded.trim());
    let everywhere = k.ok(&[
        "get",
        "configmaps",
        "-A",
        "--field-selector=metadata.name=kube-root-ca.crt",
        "-o",
        "name",
    ]);
    assert_eq!(
        everywhere.lines().count(),
        5,
        "default, kube-system, kube-public, kube-node-lease, team:\n{everywhere}"
    );
}

#[test]
fn a_restart_resumes_on_the_same_data_dir() {
    let mut k = Keelson::up();
    k.apply("kept.yaml", &config_map("kept", "default"));
    let before: u64 =
        k.jsonpath("configmap", "kept", "{.metadata.resourceVersion}").parse().unwrap();
    k.kill();
    k.start();
    assert_eq!(k.jsonpath("configmap", "kept", "{.data.a}"), "1");
    k.apply("later.yaml", &config_map("later", "default"));
    let after: u64 =
        k.jsonpath("configmap", "later", "{.metadata.resourceVersion}").parse().unwrap();
    assert!(after > before);

    // A second `keelson up` on the same data directory is refused, saying why.
    let second = std::process::Command::new(keelson_e2e::keelson_binary())
        .args(["up", "--no-controllers", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(k.data_dir())
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(stderr.contains("is another `keelson up` running on this data directory?"), "{stderr}");
    assert_eq!(k.jsonpath("configmap", "kept", "{.data.a}"), "1", "the first one serves on");
}

#[test]
fn imperative_commands_that_send_protobuf_work() {
    let k = Keelson::up();
    k.ok(&["create", "namespace", "models"]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "hf-token",
        "-n",
        "models",
        "--from-literal=HF_TOKEN=abc",
    ]);
    assert_eq!(k.jsonpath_in("models", "secret", "hf-token", "{.data.HF_TOKEN}"), "YWJj");
    k.ok(&["create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "--port=80"]);
    assert_eq!(
        k.jsonpath(
            "deployment",
            "web",
            "{.spec.template.spec.containers[0].ports[0].containerPort}"
        ),
        "80"
    );
    k.ok(&["create", "job", "once", "--image=busybox", "--", "sh", "-c", "echo hi"]);
    assert_eq!(
        k.jsonpath("job", "once", "{.spec.template.spec.containers[0].command}"),
        r#"["sh","-c","echo hi"]"#
    );
    // A server-side dry run changes nothing (kubectl sends it in the DeleteOptions body).
    k.ok(&["delete", "deployment", "web", "--dry-run=server"]);
    assert_eq!(k.jsonpath("deployment", "web", "{.spec.replicas}"), "2");
    // drain sends the DeleteOptions of its pod deletes in protobuf.
    eventually(30, "the deployment's pods", || {
        k.ok(&["get", "pods", "-l", "app=web", "-o", "name"]).lines().count() == 2
    });
    // The local node's parts write as the upstream components they stand for.
    let managers = |kind: &str| {
        let path = "jsonpath={.items[0].metadata.managedFields[*].manager}";
        k.ok(&["get", kind, "-l", "app=web", "--show-managed-fields", "-o", path])
    };
    eventually(30, "the kubelet's status of a pod", || {
        let pod = managers("pods");
        pod.contains("kube-controller-manager") && pod.contains("kubelet")
    });
    let replica_set = managers("replicasets");
    assert!(
        replica_set.split_whitespace().all(|m| m == "kube-controller-manager"),
        "{replica_set}"
    );
    let node = k.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    k.ok(&["drain", &node, "--ignore-daemonsets", "--force", "--timeout=60s"]);
    assert_eq!(k.jsonpath("node", &node, "{.spec.unschedulable}"), "true");
    let placed = k.ok(&["get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}"]);
    assert!(!placed.contains(&node), "no pod is left on the drained node: {placed}");
    // As its kubelet does, the node says so in its events.
    eventually(30, "a NodeNotSchedulable event", || {
        k.ok(&["describe", "node", &node]).contains("NodeNotSchedulable")
    });
    // kubectl auth sends its reviews in protobuf; the admin token's user is in system:masters.
    assert_eq!(k.ok(&["auth", "can-i", "delete", "nodes"]).trim(), "yes");
    assert!(k.ok(&["auth", "whoami"]).contains("keelson-admin"));
    assert!(k.ok(&["auth", "can-i", "--list"]).contains("*.*"));
    // Access and policy kinds are stored, and kubectl's typed clients create them in protobuf.
    k.ok(&["create", "role", "reader", "--verb=get,list", "--resource=pods"]);
    k.ok(&[
        "create",
        "rolebinding",
        "readers",
        "--role=reader",
        "--user=ann",
        "--serviceaccount=default:ci",
    ]);
    let bindings = k.ok(&["get", "rolebinding", "readers", "-o", "wide"]);
    assert!(bindings.contains("Role/reader") && bindings.contains("default/ci"), "{bindings}");
    assert_eq!(k.jsonpath("role", "reader", "{.rules[0].verbs}"), r#"["get","list"]"#);
    k.ok(&["create", "priorityclass", "high", "--value=1000"]);
    k.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=1"]);
    k.ok(&["create", "quota", "small", "--hard=pods=5"]);
    assert_eq!(k.jsonpath("quota", "small", "{.spec.hard.pods}"), "5");
    k.ok(&["create", "ingress", "site", "--class=nginx", "--rule=a.example/=web:80"]);
    assert_eq!(
        k.jsonpath("ingress", "site", "{.spec.rules[0].http.paths[0].backend.service.name}"),
        "web"
    );
}

#[test]
fn no_controllers_serves_the_kubernetes_api_alone() {
    let mut k = Keelson::up_with(&["--no-controllers"]);
    k.apply(
        "agent.yaml",
        "apiVersion: workflows.keelson.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: echo\n  namespace: default\nspec:\n  image: busybox:1.36\n  command: [sh, -c]\n  args: [echo hi]\n",
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(k.jsonpath("agent", "echo", "{.status}"), "", "no controller marked it");
    assert!(std::net::TcpStream::connect(("127.0.0.1", k.api_port)).is_err(), "no REST API");
    assert!(!k.data_dir().join("api-token").exists(), "no REST API token");

    // The same data dir with the controllers: the Agent controller catches up.
    k.restart_with(&[]);
    eventually(30, "the Agent to be Ready", || {
        k.jsonpath("agent", "echo", "{.status.conditions[?(@.type==\"Ready\")].status}") == "True"
    });
    assert!(k.data_dir().join("api-token").exists());
    // Keelson's client names itself, so its status write has a named field manager.
    let managers = k.jsonpath("agent", "echo", "{.metadata.managedFields[*].manager}");
    assert_eq!(managers, "kubectl-client-side-apply keelson", "{managers}");
}
