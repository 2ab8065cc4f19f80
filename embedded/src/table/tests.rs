use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::jsonpath::to_rfc9535;
use super::*;
use crate::catalog::{ResourceInfo, builtin_resources, tests::widget_crd};

fn now() -> Timestamp {
    "2025-06-01T12:00:00Z".parse().unwrap()
}

fn ago(seconds: i64) -> String {
    (now() - SignedDuration::from_secs(seconds)).to_string()
}

fn builtin(group: &str, resource: &str) -> ResourceInfo {
    builtin_resources().into_iter().find(|i| i.group == group && i.resource == resource).unwrap()
}

fn header_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn cells(table: &Value, row: usize) -> &Vec<Value> {
    table["rows"][row]["cells"].as_array().unwrap()
}

#[test]
fn crd_printer_columns() {
    let info = &ResourceInfo::from_crd(&widget_crd())[0];
    let ready = json!({
        "apiVersion": "serving.keelson.dev/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "w1", "namespace": "default", "creationTimestamp": ago(300), "resourceVersion": "7"},
        "spec": {"replicas": 3, "model": "llama"},
        "status": {"conditions": [
            {"type": "Progressing", "status": "False"},
            {"type": "Ready", "status": "True"}
        ]}
    });
    let empty = json!({"metadata": {"name": "w2", "creationTimestamp": "not a time"}});
    let t = table(info, &[&ready, &empty], IncludeObject::Metadata, now(), true);
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(header_names(&t), ["Name", "Replicas", "Ready", "Model", "Age"]);
    let defs = &t["columnDefinitions"];
    assert_eq!(defs[0]["format"], "name");
    assert_eq!(defs[1]["type"], "integer");
    assert_eq!(defs[3]["priority"], 1);
    assert_eq!(defs[3]["description"], "Model name");
    assert_eq!(
        *cells(&t, 0),
        vec![json!("w1"), json!(3), json!("True"), json!("llama"), json!("5m")]
    );
    assert_eq!(
        *cells(&t, 1),
        vec![json!("w2"), Value::Null, Value::Null, Value::Null, json!("<invalid>")]
    );
    // PartialObjectMetadata rows.
    let object = &t["rows"][0]["object"];
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(object["metadata"]["resourceVersion"], "7");
    assert!(object.get("spec").is_none());
}

#[test]
fn crd_without_columns_gets_age() {
    let mut crd = widget_crd();
    crd.spec.versions[0].additional_printer_columns = None;
    let info = &ResourceInfo::from_crd(&crd)[0];
    let obj = json!({"metadata": {"name": "w1", "creationTimestamp": ago(3 * 86400 + 4 * 3600)}});
    let t = table(info, &[&obj], IncludeObject::Metadata, now(), true);
    assert_eq!(header_names(&t), ["Name", "Age"]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    assert_eq!(*cells(&t, 0), vec![json!("w1"), json!("3d4h")]);
}

#[test]
fn include_object_variants_and_headers() {
    let info = builtin("", "configmaps");
    let cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": ""}});
    let t = table(&info, &[&cm], IncludeObject::None, now(), false);
    assert!(t["rows"][0].get("object").is_none());
    assert_eq!(t["columnDefinitions"], json!([]));
    assert_eq!(*cells(&t, 0), vec![json!("c"), json!(3), json!("<unknown>")]);
    let t = table(&info, &[&cm], IncludeObject::Object, now(), true);
    assert_eq!(t["rows"][0]["object"], cm);
    assert_eq!(header_names(&t), ["Name", "Data", "Age"]);

    let mut t = table(&info, &[&cm], IncludeObject::Metadata, now(), true);
    set_table_version(&mut t, TableRequest { v1beta1: true });
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

    assert_eq!(IncludeObject::from_query(None), Some(IncludeObject::Metadata));
    assert_eq!(IncludeObject::from_query(Some("Object")), Some(IncludeObject::Object));
    assert_eq!(IncludeObject::from_query(Some("None")), Some(IncludeObject::None));
    assert_eq!(IncludeObject::from_query(Some("bogus")), None);
}

fn pod_row(pod: &Value) -> Vec<Value> {
    let info = builtin("", "pods");
    let t = table(&info, &[pod], IncludeObject::None, now(), true);
    assert_eq!(
        header_names(&t),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    cells(&t, 0)[..7].to_vec()
}

#[test]
fn pod_ready_status_restarts() {
    let crashing = json!({
        "metadata": {"name": "p1", "creationTimestamp": ago(3600)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": ago(3600)}}},
                {"name": "b", "ready": false, "restartCount": 3,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(130)}}}
            ]
        }
    });
    assert_eq!(
        pod_row(&crashing),
        [
            json!("p1"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!("3 (2m10s ago)"),
            json!("60m"),
            json!("10.0.0.5"),
            json!("n1")
        ]
    );

    let running = json!({
        "metadata": {"name": "p2", "creationTimestamp": ago(30)},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}
        ]}
    });
    assert_eq!(
        pod_row(&running),
        [
            json!("p2"),
            json!("1/1"),
            json!("Running"),
            json!("0"),
            json!("30s"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    let initializing = json!({
        "metadata": {"name": "p3"},
        "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "init", "ready": false, "restartCount": 0, "state": {"running": {}}}
        ], "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
        ]}
    });
    assert_eq!(pod_row(&initializing)[1..4], [json!("0/1"), json!("Init:0/1"), json!("0")]);

    let completed = json!({
        "metadata": {"name": "p4"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ]}
    });
    assert_eq!(pod_row(&completed)[2], json!("Completed"));

    let oom = json!({
        "metadata": {"name": "p5"},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "restartCount": 0, "state": {"terminated": {"exitCode": 137}}}
        ]}
    });
    assert_eq!(pod_row(&oom)[2], json!("ExitCode:137"));

    let terminating = json!({
        "metadata": {"name": "p6", "deletionTimestamp": ago(1)},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running"}
    });
    assert_eq!(pod_row(&terminating)[2], json!("Terminating"));

    let pending = json!({"metadata": {"name": "p7"}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
    assert_eq!(pod_row(&pending)[1..4], [json!("0/1"), json!("Pending"), json!("0")]);
}

#[test]
fn workload_and_service_rows() {
    let deploy = json!({
        "metadata": {"name": "web", "creationTimestamp": ago(120)},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "c1", "image": "nginx:1"}, {"name": "c2", "image": "busybox"}]}}
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3}
    });
    let t = table(&builtin("apps", "deployments"), &[&deploy], IncludeObject::None, now(), true);
    assert_eq!(
        header_names(&t),
        ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    );
    assert_eq!(
        *cells(&t, 0),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(0),
            json!("2m"),
            json!("c1,c2"),
            json!("nginx:1,busybox"),
            json!("app=web")
        ]
    );

    let svc = json!({
        "metadata": {"name": "s", "creationTimestamp": ago(8 * 86400)},
        "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web"},
                 "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}
    });
    let t = table(&builtin("", "services"), &[&svc], IncludeObject::None, now(), true);
    assert_eq!(
        *cells(&t, 0),
        vec![
            json!("s"),
            json!("NodePort"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP"),
            json!("8d"),
            json!("app=web")
        ]
    );

    let job = json!({
        "metadata": {"name": "j"},
        "spec": {"completions": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"succeeded": 2, "startTime": ago(100), "completionTime": ago(40),
                   "conditions": [{"type": "Complete", "status": "True"}]}
    });
    let t = table(&builtin("batch", "jobs"), &[&job], IncludeObject::None, now(), true);
    assert_eq!(cells(&t, 0)[1..4], [json!("Complete"), json!("2/2"), json!("60s")]);
}

#[test]
fn rows_of_the_kinds_served_for_apply_prune() {
    let row = |group: &str, resource: &str, object: &Value| -> Vec<Value> {
        cells(&table(&builtin(group, resource), &[object], IncludeObject::None, now(), true), 0)
            .clone()
    };
    let cron = json!({
        "metadata": {"name": "nightly", "creationTimestamp": ago(3600)},
        "spec": {"schedule": "0 3 * * *", "suspend": false,
                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
        "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(90)}
    });
    assert_eq!(
        row("batch", "cronjobs", &cron),
        [
            json!("nightly"),
            json!("0 3 * * *"),
            json!("<none>"),
            json!("False"),
            json!(1),
            json!("90s"),
            json!("60m"),
            json!("c"),
            json!("busybox"),
            json!("<none>")
        ]
    );
    let never = json!({"metadata": {"name": "n"}, "spec": {"schedule": "@daily", "suspend": true}});
    assert_eq!(row("batch", "cronjobs", &never)[3..6], [json!("True"), json!(0), json!("<none>")]);

    let endpoints = json!({"metadata": {"name": "web"}, "subsets": [{
        "addresses": [{"ip": "10.244.0.1"}, {"ip": "10.244.0.2"}],
        "ports": [{"port": 80}, {"port": 443}]
    }]});
    assert_eq!(
        row("", "endpoints", &endpoints)[1],
        "10.244.0.1:80,10.244.0.1:443,10.244.0.2:80 + 1 more..."
    );
    assert_eq!(row("", "endpoints", &json!({"metadata": {"name": "e"}}))[1], "<none>");
    let slice = json!({"metadata": {"name": "web-0"}, "addressType": "IPv4",
        "ports": [{"port": 80}, {"port": 443}],
        "endpoints": [{"addresses": ["10.244.0.1"]}, {"addresses": ["10.244.0.2"]}]});
    assert_eq!(
        row("discovery.k8s.io", "endpointslices", &slice)[1..4],
        [json!("IPv4"), json!("80,443"), json!("10.244.0.1,10.244.0.2")]
    );
    let empty = json!({"metadata": {"name": "web-0"}, "addressType": "IPv4", "endpoints": []});
    assert_eq!(
        row("discovery.k8s.io", "endpointslices", &empty)[2..4],
        [json!("<unset>"), json!("<unset>")]
    );

    let volume = json!({"metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                 "persistentVolumeReclaimPolicy": "Delete", "claimRef": {"namespace": "ns", "name": "data"},
                 "storageClassName": "local"},
        "status": {"phase": "Bound"}});
    assert_eq!(
        row("", "persistentvolumes", &volume)[1..7],
        [
            json!("1Gi"),
            json!("RWO,ROX"),
            json!("Delete"),
            json!("Bound"),
            json!("ns/data"),
            json!("local")
        ]
    );

    let revision = json!({"metadata": {"name": "db-abc", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": true}]},
        "revision": 2});
    assert_eq!(
        row("apps", "controllerrevisions", &revision)[1..3],
        [json!("statefulset.apps/db"), json!(2)]
    );
    let binding = json!({"metadata": {"name": "read"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "ann"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
                     {"kind": "User", "name": "bob"}]});
    assert_eq!(
        row("rbac.authorization.k8s.io", "rolebindings", &binding)[1..],
        [
            json!("ClusterRole/view"),
            json!("<unknown>"),
            json!("ann, bob"),
            json!(""),
            json!("build/ci")
        ]
    );
    let budget = json!({"metadata": {"name": "b"}, "spec": {"minAvailable": "50%"}});
    assert_eq!(row("policy", "poddisruptionbudgets", &budget)[1..3], [json!("50%"), json!("N/A")]);
    let hpa = json!({"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
    assert_eq!(
        row("autoscaling", "horizontalpodautoscalers", &hpa)[1..5],
        [json!("Deployment/web"), json!("cpu: <unknown>/80%"), json!("<unset>"), json!(5)]
    );
    let mut bounded = hpa.clone();
    bounded["spec"]["minReplicas"] = json!(2);
    assert_eq!(row("autoscaling", "horizontalpodautoscalers", &bounded)[3], "2");
    let v1 = json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
        "status": {"currentCPUUtilizationPercentage": 42}});
    assert_eq!(row("autoscaling", "horizontalpodautoscalers", &v1)[2], "cpu: 42%/60%");
    let policy = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {"matchLabels": {"app": "db"}}}});
    assert_eq!(row("networking.k8s.io", "networkpolicies", &policy)[1], "app=db");
    let class = json!({"metadata": {"name": "local"}, "provisioner": "keelson.dev/local-node", "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate"});
    assert_eq!(
        row("storage.k8s.io", "storageclasses", &class)[1..5],
        [json!("keelson.dev/local-node"), json!("Delete"), json!("Immediate"), json!(false)]
    );
    let quota = json!({"metadata": {"name": "q"}, "status": {"hard": {"cpu": "2", "limits.memory": "1Gi"}, "used": {"cpu": "500m"}}});
    assert_eq!(
        row("", "resourcequotas", &quota)[2..4],
        [json!("cpu: 500m/2"), json!("limits.memory: 0/1Gi")]
    );
    let set = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3}, "status": {"readyReplicas": 1}});
    assert_eq!(row("apps", "statefulsets", &set)[1], "1/3");
    let rc = json!({"metadata": {"name": "old"}, "spec": {"replicas": 2, "selector": {"app": "old"}},
        "status": {"replicas": 2, "readyReplicas": 1}});
    assert_eq!(row("", "replicationcontrollers", &rc)[1..4], [json!(2), json!(2), json!(1)]);
    assert_eq!(row("", "replicationcontrollers", &rc).last(), Some(&json!("app=old")));

    let ingress = json!({"metadata": {"name": "site"}, "spec": {"ingressClassName": "nginx",
        "rules": [{"host": "a.example"}, {"host": "b.example"}], "tls": [{"hosts": ["a.example"]}]}});
    assert_eq!(
        row("networking.k8s.io", "ingresses", &ingress)[1..5],
        [json!("nginx"), json!("a.example,b.example"), json!(""), json!("80, 443")]
    );
}

#[test]
fn rows_of_the_stored_only_extension_storage_and_certificate_kinds() {
    let row = |group: &str, resource: &str, object: &Value| -> Vec<Value> {
        cells(&table(&builtin(group, resource), &[object], IncludeObject::None, now(), true), 0)
            .clone()
    };
    let created = json!({"name": "x", "creationTimestamp": ago(120)});
    let webhooks = json!({"metadata": created, "webhooks": [{"name": "a.example.com"}, {"name": "b.example.com"}]});
    for resource in ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"] {
        assert_eq!(
            row("admissionregistration.k8s.io", resource, &webhooks),
            [json!("x"), json!(2), json!("2m")]
        );
    }
    let policy = json!({"metadata": created, "spec": {"validations": [{"expression": "true"}],
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
    let admission = "admissionregistration.k8s.io";
    assert_eq!(
        row(admission, "validatingadmissionpolicies", &policy)[1..3],
        [json!(1), json!("v1/ConfigMap")]
    );
    assert_eq!(
        row(admission, "validatingadmissionpolicies", &json!({"metadata": created}))[1..3],
        [json!(0), json!("<unset>")]
    );
    let binding = |param_ref: Value| {
        let object =
            json!({"metadata": created, "spec": {"policyName": "p", "paramRef": param_ref}});
        row(admission, "validatingadmissionpolicybindings", &object)[1..3].to_vec()
    };
    assert_eq!(
        binding(json!({"name": "limits", "namespace": "default"})),
        [json!("p"), json!("default/limits")]
    );
    assert_eq!(binding(json!({"name": "limits"}))[1], "*/limits");
    assert_eq!(binding(Value::Null)[1], "<unset>");
    assert_eq!(
        binding(json!({"selector": {"matchLabels": {"team": "a", "env": "prod"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "db"]}]}}))[1],
        "&LabelSelector{MatchLabels:map[string]string{env: prod,team: a,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[web db],},},}"
    );

    let local = json!({"metadata": created, "spec": {"group": "apps", "version": "v1"}});
    assert_eq!(
        row("apiregistration.k8s.io", "apiservices", &local)[1..],
        [json!("Local"), json!("Unknown"), json!("2m")]
    );
    let mut aggregated = local.clone();
    aggregated["spec"]["service"] = json!({"namespace": "kube-system", "name": "metrics-server"});
    aggregated["status"] = json!({"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]});
    assert_eq!(
        row("apiregistration.k8s.io", "apiservices", &aggregated)[1..3],
        [json!("kube-system/metrics-server"), json!("False (MissingEndpoints)")]
    );
    aggregated["status"]["conditions"][0] =
        json!({"type": "Available", "status": "True", "reason": "Passed"});
    assert_eq!(row("apiregistration.k8s.io", "apiservices", &aggregated)[2], "True");

    let csr = json!({"metadata": created, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
        "username": "ann", "expirationSeconds": 86400}});
    assert_eq!(
        row("certificates.k8s.io", "certificatesigningrequests", &csr)[1..],
        [
            json!("2m"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("ann"),
            json!("24h"),
            json!("Pending")
        ]
    );
    let mut issued = csr.clone();
    issued["spec"] = json!({});
    issued["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}],
        "certificate": "Y2VydA=="});
    assert_eq!(
        row("certificates.k8s.io", "certificatesigningrequests", &issued)[2..],
        [json!("<none>"), json!(""), json!("<none>"), json!("Approved,Failed,Issued")]
    );
    issued["status"]["conditions"][1]["type"] = json!("Denied");
    assert_eq!(
        row("certificates.k8s.io", "certificatesigningrequests", &issued)[5],
        "Denied,Issued"
    );

    let runtime = json!({"metadata": created, "handler": "runsc"});
    assert_eq!(
        row("node.k8s.io", "runtimeclasses", &runtime),
        [json!("x"), json!("runsc"), json!("2m")]
    );
    let driver = json!({"metadata": created, "spec": {"podInfoOnMount": true,
        "tokenRequests": [{"audience": "vault"}, {"audience": "sts"}], "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
    assert_eq!(
        row("storage.k8s.io", "csidrivers", &driver)[1..],
        [
            json!(true),
            json!(true),
            json!(false),
            json!("vault,sts"),
            json!(false),
            json!("Persistent,Ephemeral"),
            json!("2m")
        ]
    );
    let bare = json!({"metadata": created, "spec": {"attachRequired": false}});
    assert_eq!(
        row("storage.k8s.io", "csidrivers", &bare)[1..7],
        [json!(false), json!(false), json!(false), json!("<unset>"), json!(false), json!("<none>")]
    );
    let node = json!({"metadata": created, "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1"}]}});
    assert_eq!(row("storage.k8s.io", "csinodes", &node)[1], 1);
    let attachment = json!({"metadata": created, "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1",
        "source": {"persistentVolumeName": "pv-1"}}, "status": {"attached": true}});
    assert_eq!(
        row("storage.k8s.io", "volumeattachments", &attachment)[1..],
        [json!("ebs.csi.aws.com"), json!("pv-1"), json!("n1"), json!(true), json!("2m")]
    );

    let template = json!({"metadata": {"name": "base"}, "template": {"metadata": {"labels": {"app": "web", "tier": "front"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "proxy", "image": "envoy"}]}}});
    assert_eq!(
        row("", "podtemplates", &template),
        [json!("base"), json!("app,proxy"), json!("nginx:1.27,envoy"), json!("app=web,tier=front")]
    );
    assert_eq!(
        row("", "podtemplates", &json!({"metadata": {"name": "empty"}}))[1..],
        [json!(""), json!(""), json!("<none>")]
    );
}

#[test]
fn event_table_has_no_leading_name_column() {
    let event = json!({
        "kind": "Event",
        "metadata": {"name": "w1.1"},
        "involvedObject": {"kind": "Widget", "name": "w1"},
        "type": "Warning",
        "reason": "Failed",
        "message": " boom \n",
        "source": {"component": "keelson", "host": "h1"},
        "firstTimestamp": ago(600),
        "lastTimestamp": ago(60),
        "count": 4
    });
    let t = table(&builtin("", "events"), &[&event], IncludeObject::None, now(), true);
    assert_eq!(
        header_names(&t),
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(
        *cells(&t, 0),
        vec![
            json!("60s"),
            json!("Warning"),
            json!("Failed"),
            json!("widget/w1"),
            json!(""),
            json!("keelson, h1"),
            json!("boom"),
            json!("10m"),
            json!(4),
            json!("w1.1")
        ]
    );
    // The events.k8s.io shape renders the same way.
    let v1 = json!({
        "kind": "Event",
        "metadata": {"name": "w1.2"},
        "regarding": {"kind": "Widget", "name": "w1"},
        "note": "hi",
        "eventTime": ago(5),
        "reportingController": "keelson",
        "type": "Normal",
        "reason": "Created"
    });
    let t = table(&builtin("events.k8s.io", "events"), &[&v1], IncludeObject::None, now(), true);
    let c = cells(&t, 0);
    assert_eq!(
        (c[0].clone(), c[3].clone(), c[5].clone(), c[6].clone(), c[8].clone()),
        (json!("5s"), json!("widget/w1"), json!("keelson"), json!("hi"), json!(1))
    );
}

#[test]
fn crd_resource_uses_created_at() {
    let crd = json!({"metadata": {"name": "x.y", "creationTimestamp": "2024-01-02T03:04:05Z"}});
    let t = table(
        &builtin("apiextensions.k8s.io", "customresourcedefinitions"),
        &[&crd],
        IncludeObject::None,
        now(),
        true,
    );
    assert_eq!(header_names(&t), ["Name", "Created At"]);
    assert_eq!(*cells(&t, 0), vec![json!("x.y"), json!("2024-01-02T03:04:05Z")]);
}

#[test]
fn human_durations_match_apimachinery() {
    let s = |secs: i128| human_duration(secs * 1_000_000_000);
    let cases = [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60 * 5, "3h5m"),
        (47 * 3600, "47h"),
        (2 * 86400, "2d"),
        (2 * 86400 + 3 * 3600, "2d3h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400 + 20 * 86400, "3y20d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (secs, want) in cases {
        assert_eq!(s(secs), want, "{secs}s");
    }
}

#[test]
fn table_accept_negotiation() {
    let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    assert_eq!(parse_table_accept(kubectl), Some(TableRequest { v1beta1: false }));
    assert_eq!(
        parse_table_accept("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"),
        Some(TableRequest { v1beta1: true })
    );
    assert_eq!(parse_table_accept("application/json"), None);
    assert_eq!(parse_table_accept(""), None);
    assert_eq!(
        parse_table_accept("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"),
        None
    );
    assert_eq!(
        parse_table_accept(
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
        ),
        Some(TableRequest { v1beta1: false })
    );
    assert_eq!(
        parse_table_accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        None
    );
}

#[test]
fn jsonpath_translation_and_evaluation() {
    assert_eq!(to_rfc9535(".spec.replicas"), "$.spec.replicas");
    assert_eq!(to_rfc9535("{.spec.replicas}"), "$.spec.replicas");
    assert_eq!(to_rfc9535(".metadata.labels.app-name"), "$.metadata.labels['app-name']");
    assert_eq!(to_rfc9535(".spec.containers[0].image"), "$.spec.containers[0].image");
    assert_eq!(
        to_rfc9535(r#".status.conditions[?(@.type=="Ready")].status"#),
        r#"$.status.conditions[?(@.type=="Ready")].status"#
    );
    assert_eq!(
        to_rfc9535(".metadata.annotations['example.com/x']"),
        "$.metadata.annotations['example.com/x']"
    );
    let obj =
        json!({"a": {"b-c": [1, {"d": "x"}]}, "l": [{"type": "A", "s": 1}, {"type": "B", "s": 2}]});
    let eval = |p: &str| jsonpath::ColumnPath::new(p).first(&obj).cloned();
    assert_eq!(eval(".a.b-c[1].d"), Some(json!("x")));
    assert_eq!(eval(".l[?(@.type=='B')].s"), Some(json!(2)));
    assert_eq!(eval(".l[-1].type"), Some(json!("B")));
    assert_eq!(eval(".missing"), None);
    assert_eq!(eval("[[["), None);
}
