//! Defaults the API server fills into new built-in objects where clients depend on them, as the
//! Kubernetes API server does: a Job's selector and pod labels; a pod's restart policy,
//! grace period, scheduler, ServiceAccount and security context, its containers' pull policy,
//! termination message and port protocols, and a gated pod's `SchedulingGated` condition. And [`normalize`], which every write of a
//! built-in object goes through: a Secret's `stringData` is folded into `data` and its type
//! defaults to `Opaque`, workloads get their strategies' defaults, pods their spec's.

use serde_json::{Map, Value, json};

use crate::catalog::ResourceInfo;

/// Fills the defaults of a new built-in object (after its uid is set).
pub fn on_create(info: &ResourceInfo, object: &mut Value) {
    if !info.builtin {
        return;
    }
    match (info.group.as_str(), info.resource.as_str()) {
        ("batch", "jobs") => job(object),
        ("", "pods") => {
            let qos = qos_class(object.get("spec").unwrap_or(&Value::Null));
            object["status"] = json!({ "phase": "Pending", "qosClass": qos });
            let gates = object.pointer("/spec/schedulingGates").and_then(Value::as_array);
            if gates.is_some_and(|gates| !gates.is_empty()) {
                object["status"]["conditions"] = json!([{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": null,
                    "lastTransitionTime": super::objects::now_rfc3339(),
                }]);
            }
        }
        _ => {}
    }
}

/// A pod's quality of service class, from its containers' CPU and memory: `BestEffort` when
/// none asks for or limits either, `Guaranteed` when every container limits both and asks for
/// no less or more (a request left out is the limit), else `Burstable`.
pub(super) fn qos_class(spec: &Value) -> &'static str {
    let containers = ["initContainers", "containers"]
        .iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten();
    let (mut any, mut guaranteed) = (false, true);
    for container in containers {
        let amount = |kind: &str, resource: &str| {
            let text = container.pointer(&format!("/resources/{kind}/{resource}"))?.as_str()?;
            crate::node::quantity::parse(text).ok()
        };
        for resource in ["cpu", "memory"] {
            let (request, limit) = (amount("requests", resource), amount("limits", resource));
            any |= request.is_some() || limit.is_some();
            guaranteed &= limit.is_some() && request.is_none_or(|r| Some(r) == limit);
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Normalizes every write of a built-in object as the Kubernetes API server's decoding does: a
/// Secret's write-only `stringData` is folded into `data` (base64, replacing a key of the same
/// name) and its `type` defaults to `Opaque`; workloads (Deployments, ReplicaSets,
/// ReplicationControllers, DaemonSets, StatefulSets, Jobs, CronJobs) get upstream's defaults for
/// what their controllers and `kubectl rollout` read (replicas, selectors, update strategy,
/// revision history, progress deadline, a Job's counts and policies, concurrency and history
/// limits) and their pod templates those of a pod spec and its containers (as `kubectl
/// describe` shows them); Services get their type, policies and target ports; PersistentVolumes
/// their reclaim policy and volume mode, claims their volume mode; autoscalers their fewest
/// replicas and, without metrics, a CPU target. Other objects are left alone.
pub fn normalize(info: &ResourceInfo, object: &mut Value) {
    if !info.builtin {
        return;
    }
    let Some(map) = object.as_object_mut() else { return };
    match (info.group.as_str(), info.resource.as_str()) {
        // Upstream labels every namespace with its name, for selectors of namespaces.
        ("", "namespaces") => {
            let name = map.get("metadata").and_then(|m| m.get("name")).cloned();
            if let Some(name) = name {
                let metadata = map.entry("metadata").or_insert_with(|| json!({}));
                let labels = &mut metadata["labels"];
                if !labels.is_object() {
                    *labels = json!({});
                }
                labels["kubernetes.io/metadata.name"] = name;
            }
        }
        // On every write, as decoding defaults it upstream: an update that leaves the defaults
        // out (`kubectl replace` of a manifest) keeps them.
        ("", "pods") => {
            if let Some(spec) = map.get_mut("spec") {
                pod_spec(spec);
            }
        }
        ("", "secrets") => {
            fold_string_data(map);
            if map.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
                map.insert("type".into(), json!("Opaque"));
            }
        }
        ("batch", "jobs") => {
            let spec = spec_of(map);
            if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
                spec.insert("completions".into(), json!(1));
            }
            spec.entry("parallelism").or_insert(json!(1));
            spec.entry("backoffLimit").or_insert(json!(6));
            spec.entry("completionMode").or_insert(json!("NonIndexed"));
            spec.entry("suspend").or_insert(json!(false));
            let replacement = match spec.contains_key("podFailurePolicy") {
                true => "Failed",
                false => "TerminatingOrFailed",
            };
            spec.entry("podReplacementPolicy").or_insert(json!(replacement));
            workload_template(spec);
        }
        ("apps", "deployments") => {
            let spec = spec_of(map);
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            spec.entry("progressDeadlineSeconds").or_insert(json!(600));
            rolling_update(spec, "strategy", json!("25%"), json!("25%"));
            workload_template(spec);
        }
        ("apps", "daemonsets") => {
            let spec = spec_of(map);
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            rolling_update(spec, "updateStrategy", json!(1), json!(0));
            workload_template(spec);
        }
        ("apps", "replicasets") => {
            let spec = spec_of(map);
            spec.entry("replicas").or_insert(json!(1));
            workload_template(spec);
        }
        ("", "replicationcontrollers") => replication_controller(map),
        ("autoscaling", "horizontalpodautoscalers") => {
            let spec = spec_of(map);
            spec.entry("minReplicas").or_insert(json!(1));
            // v1 has one CPU target, defaulted when its object is converted to v2.
            let no_metrics =
                spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty);
            if info.version == "v2" && no_metrics {
                spec.insert("metrics".into(), super::convert::default_metrics());
            }
            if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
                scaling_rules(behavior, "scaleUp");
                scaling_rules(behavior, "scaleDown");
            }
        }
        ("apps", "statefulsets") => {
            let spec = spec_of(map);
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("podManagementPolicy").or_insert(json!("OrderedReady"));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            spec.entry("persistentVolumeClaimRetentionPolicy")
                .or_insert(json!({ "whenDeleted": "Retain", "whenScaled": "Retain" }));
            let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
            if let Some(strategy) = strategy.as_object_mut() {
                let kind = strategy.entry("type").or_insert(json!("RollingUpdate"));
                if kind == "RollingUpdate" {
                    strategy.entry("rollingUpdate").or_insert(json!({ "partition": 0 }));
                }
            }
            workload_template(spec);
        }
        ("batch", "cronjobs") => {
            let spec = spec_of(map);
            spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
            spec.entry("suspend").or_insert(json!(false));
            spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
            spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
            if let Some(pod) =
                spec.get_mut("jobTemplate").and_then(|t| t.pointer_mut("/spec/template/spec"))
            {
                template_spec(pod);
            }
        }
        ("", "services") => service(spec_of(map)),
        ("", "persistentvolumes") => {
            let spec = spec_of(map);
            spec.entry("persistentVolumeReclaimPolicy").or_insert(json!("Retain"));
            spec.entry("volumeMode").or_insert(json!("Filesystem"));
        }
        ("", "persistentvolumeclaims") => {
            spec_of(map).entry("volumeMode").or_insert(json!("Filesystem"));
        }
        _ => {}
    }
}

/// An autoscaler's scaling rules in one direction (`scaleUp` or `scaleDown`) of a `behavior`
/// it sets, completed as upstream completes them: scale up with no stabilization window by the
/// larger of 4 pods and 100 % per 15 s, scale down by up to 100 % per 15 s (its window left to
/// the controller, 5 minutes).
fn scaling_rules(behavior: &mut Map<String, Value>, direction: &str) {
    let up = direction == "scaleUp";
    let Some(rules) = behavior.entry(direction).or_insert_with(|| json!({})).as_object_mut() else {
        return;
    };
    if up {
        rules.entry("stabilizationWindowSeconds").or_insert(json!(0));
    }
    rules.entry("selectPolicy").or_insert(json!("Max"));
    rules.entry("policies").or_insert_with(|| {
        let percent = json!({ "type": "Percent", "value": 100, "periodSeconds": 15 });
        let pods = json!({ "type": "Pods", "value": 4, "periodSeconds": 15 });
        if up { json!([pods, percent]) } else { json!([percent]) }
    });
}

/// A ReplicationController's selector and labels default to its template's labels, as
/// upstream's defaulting does; replicas to 1; its pod template gets a template's defaults.
fn replication_controller(map: &mut Map<String, Value>) {
    let template_labels = map
        .get("spec")
        .and_then(|spec| spec.pointer("/template/metadata/labels"))
        .filter(|labels| labels.as_object().is_some_and(|l| !l.is_empty()))
        .cloned();
    if let Some(labels) = template_labels {
        let metadata = map.entry("metadata").or_insert_with(|| json!({}));
        if metadata.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty) {
            metadata["labels"] = labels.clone();
        }
        let spec = spec_of(map);
        if spec.get("selector").and_then(Value::as_object).is_none_or(Map::is_empty) {
            spec.insert("selector".into(), labels);
        }
    }
    let spec = spec_of(map);
    spec.entry("replicas").or_insert(json!(1));
    workload_template(spec);
}

/// A Service's type, session affinity and traffic policies, and each port's protocol and target
/// port (the port itself). Its cluster IP and node ports are allocated by `services`.
fn service(spec: &mut Map<String, Value>) {
    let kind =
        spec.entry("type").or_insert(json!("ClusterIP")).as_str().unwrap_or_default().to_owned();
    spec.entry("sessionAffinity").or_insert(json!("None"));
    if kind == "ExternalName" {
        return;
    }
    spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
    if kind == "NodePort" || kind == "LoadBalancer" {
        spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
    }
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(port) = port.as_object_mut() else { continue };
        port.entry("protocol").or_insert(json!("TCP"));
        if let Some(number) = port.get("port").cloned() {
            port.entry("targetPort").or_insert(number);
        }
    }
}

/// The object's `spec`, made an object if it is missing.
fn spec_of(map: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    spec.as_object_mut().expect("an object")
}

/// A `RollingUpdate` strategy unless another type is given, with the limits it leaves unset.
fn rolling_update(spec: &mut Map<String, Value>, field: &str, unavailable: Value, surge: Value) {
    let strategy = spec.entry(field).or_insert_with(|| json!({}));
    let Some(strategy) = strategy.as_object_mut() else { return };
    let kind = strategy.entry("type").or_insert(json!("RollingUpdate"));
    if kind != "RollingUpdate" {
        return;
    }
    let limits = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
    if let Some(limits) = limits.as_object_mut() {
        limits.entry("maxUnavailable").or_insert(unavailable);
        limits.entry("maxSurge").or_insert(surge);
    }
}

fn fold_string_data(map: &mut Map<String, Value>) {
    use base64::Engine as _;
    let Some(Value::Object(strings)) = map.remove("stringData") else { return };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
}

fn job(object: &mut Value) {
    let uid =
        object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name =
        object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual {
        spec.entry("selector").or_insert_with(
            || json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": uid } }),
        );
        let labels = &mut spec.entry("template").or_insert_with(|| json!({}))["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            for (key, value) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    // A Job without labels of its own takes its pods', so that `-l job-name=…` finds it.
    let pod_labels = spec.get("template").and_then(|t| t.pointer("/metadata/labels")).cloned();
    let own = object.pointer("/metadata/labels").and_then(Value::as_object);
    if let Some(labels) = pod_labels.filter(|_| own.is_none_or(Map::is_empty)) {
        object["metadata"]["labels"] = labels;
    }
}

/// Upstream's defaults of a pod's spec: those of every pod template, then the link to the
/// namespace's Services and the ServiceAccount (`default` unless named), which upstream gives
/// pods only.
fn pod_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else { return };
    map.entry("enableServiceLinks").or_insert(json!(true));
    map.entry("serviceAccountName").or_insert(json!(super::service_accounts::DEFAULT));
    default_tolerations(map);
    template_spec(spec);
}

/// Upstream's `DefaultTolerationSeconds`: a pod stays 300 s on a node that is not ready or
/// unreachable before it is evicted, unless it says otherwise by tolerating those taints.
fn default_tolerations(spec: &mut Map<String, Value>) {
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tolerations.as_array_mut() else { return };
    for taint in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = list.iter().any(|t| {
            let field = |name: &str| t.get(name).and_then(Value::as_str).unwrap_or_default();
            let key_matches =
                field("key") == taint || (field("key").is_empty() && field("operator") == "Exists");
            key_matches && matches!(field("effect"), "" | "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": taint, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}));
        }
    }
}

/// Upstream's defaults of a pod template's spec and its containers, as a workload stores and
/// `kubectl describe` shows them. Clients read some of them without checking (`kubectl debug`
/// dereferences `securityContext`).
fn template_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    spec.entry("restartPolicy").or_insert(json!("Always"));
    spec.entry("terminationGracePeriodSeconds").or_insert(json!(30));
    spec.entry("dnsPolicy").or_insert(json!("ClusterFirst"));
    spec.entry("schedulerName").or_insert(json!("default-scheduler"));
    spec.entry("securityContext").or_insert(json!({}));
    if let Some(account) = spec.get("serviceAccountName").cloned() {
        spec.entry("serviceAccount").or_insert(account);
    }
    for list in ["initContainers", "containers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten().filter_map(Value::as_object_mut) {
            self::container(container);
        }
    }
}

/// The defaults of the pod template at `spec.template.spec`, when there is one.
fn workload_template(spec: &mut Map<String, Value>) {
    if let Some(pod) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
        template_spec(pod);
    }
}

/// Upstream's defaults of a container (app, init or ephemeral).
pub(crate) fn container(container: &mut Map<String, Value>) {
    container.entry("terminationMessagePath").or_insert(json!("/dev/termination-log"));
    container.entry("terminationMessagePolicy").or_insert(json!("File"));
    if let Some(image) = container.get("image").and_then(Value::as_str) {
        let policy = image_pull_policy(image);
        container.entry("imagePullPolicy").or_insert(json!(policy));
    }
    let ports = container.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten().filter_map(Value::as_object_mut) {
        port.entry("protocol").or_insert(json!("TCP"));
    }
}

/// `Always` for an image tagged `latest` or not at all (nor pinned by digest), else
/// `IfNotPresent`.
fn image_pull_policy(image: &str) -> &'static str {
    let (name, pinned) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':').map(|(_, tag)| tag) {
        Some("latest") => "Always",
        None if !pinned => "Always",
        _ => "IfNotPresent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;

    fn info(resource: &str) -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.resource == resource).unwrap()
    }

    /// A new object's defaults, as a create fills them: those of every write, then a new one's.
    fn create(resource: &str, object: &mut Value) {
        normalize(&info(resource), object);
        on_create(&info(resource), object);
    }

    fn create_pod(pod: &mut Value) {
        create("pods", pod);
    }

    #[test]
    fn a_job_gets_a_selector_matching_its_pod_labels_and_upstream_counts() {
        let mut job = json!({"metadata": {"name": "hello", "uid": "u-1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}});
        create("jobs", &mut job);
        assert_eq!(
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u-1"
        );
        let labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(
            (labels["job-name"].as_str(), labels["controller-uid"].as_str()),
            (Some("hello"), Some("u-1"))
        );
        assert_eq!(
            (job["spec"]["completions"].as_i64(), job["spec"]["backoffLimit"].as_i64()),
            (Some(1), Some(6))
        );
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never", "given values stay");
        assert_eq!(job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");

        // A replace that leaves the counts out keeps them, as upstream's decoding fills them.
        let mut replaced = json!({"spec": {"podFailurePolicy": {"rules": []}, "template": {}}});
        normalize(&info("jobs"), &mut replaced);
        assert_eq!(
            (&replaced["spec"]["backoffLimit"], &replaced["spec"]["podReplacementPolicy"]),
            (&json!(6), &json!("Failed"))
        );
    }

    #[test]
    fn a_manual_selector_is_left_alone_and_work_queues_keep_null_completions() {
        let mut job = json!({"metadata": {"name": "q", "uid": "u"},
            "spec": {"manualSelector": true, "parallelism": 3, "template": {"spec": {}}}});
        create("jobs", &mut job);
        assert!(job["spec"].get("selector").is_none());
        assert!(job["spec"].get("completions").is_none());
    }

    #[test]
    fn volumes_and_claims_are_filesystems_unless_they_say_otherwise() {
        let mut claim = json!({"spec": {"accessModes": ["ReadWriteOnce"]}});
        normalize(&info("persistentvolumeclaims"), &mut claim);
        assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
        let mut block = json!({"spec": {"volumeMode": "Block"}});
        normalize(&info("persistentvolumes"), &mut block);
        assert_eq!(
            (&block["spec"]["volumeMode"], &block["spec"]["persistentVolumeReclaimPolicy"]),
            (&json!("Block"), &json!("Retain"))
        );
    }

    #[test]
    fn workloads_get_upstream_strategy_and_history_defaults() {
        let mut deployment = json!({"spec": {"strategy": {}, "template": {}}});
        normalize(&info("deployments"), &mut deployment);
        assert_eq!(
            deployment["spec"],
            json!({"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "template": {}})
        );
        let mut recreate = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
        normalize(&info("deployments"), &mut recreate);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(recreate["spec"]["replicas"], 3, "given values stay");

        let mut daemonset = json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxSurge": 1}}}});
        normalize(&info("daemonsets"), &mut daemonset);
        assert_eq!(
            daemonset["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
        );
        let mut replicaset = json!({"metadata": {"name": "r"}});
        normalize(&info("replicasets"), &mut replicaset);
        assert_eq!(replicaset["spec"]["replicas"], 1);
    }

    #[test]
    fn pod_templates_get_a_templates_defaults_and_only_pods_an_account() {
        let template = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.27",
            "ports": [{"containerPort": 8080}]}]}});
        for resource in ["deployments", "replicasets", "daemonsets", "statefulsets"] {
            let mut workload = json!({"spec": {"template": template.clone()}});
            normalize(&info(resource), &mut workload);
            let pod = &workload["spec"]["template"]["spec"];
            assert_eq!(
                (&pod["dnsPolicy"], &pod["restartPolicy"], &pod["terminationGracePeriodSeconds"]),
                (&json!("ClusterFirst"), &json!("Always"), &json!(30)),
                "{resource}"
            );
            let web = &pod["containers"][0];
            assert_eq!(web["ports"][0]["protocol"], "TCP", "{resource}");
            assert_eq!(web["imagePullPolicy"], "IfNotPresent", "{resource}");
            assert!(pod.get("serviceAccountName").is_none(), "{resource}: pods only");
            assert!(pod.get("enableServiceLinks").is_none(), "{resource}: pods only");
        }
        let mut named = json!({"spec": {"template": {"spec": {"serviceAccountName": "robot"}}}});
        normalize(&info("deployments"), &mut named);
        assert_eq!(named["spec"]["template"]["spec"]["serviceAccount"], "robot");

        let mut pod = template.clone();
        create_pod(&mut pod);
        assert_eq!(
            (&pod["spec"]["serviceAccountName"], &pod["spec"]["serviceAccount"]),
            (&json!("default"), &json!("default"))
        );
    }

    #[test]
    fn services_stateful_sets_cron_jobs_and_replication_controllers_get_upstream_defaults() {
        let mut service = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}});
        normalize(&info("services"), &mut service);
        assert_eq!(
            service["spec"],
            json!({"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                          {"port": 53, "protocol": "UDP", "targetPort": "dns"}]})
        );
        let mut external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        normalize(&info("services"), &mut external);
        assert!(external["spec"].get("internalTrafficPolicy").is_none());

        let mut set = json!({"spec": {"serviceName": "db"}});
        normalize(&info("statefulsets"), &mut set);
        assert_eq!(
            set["spec"],
            json!({"serviceName": "db", "replicas": 1, "podManagementPolicy": "OrderedReady",
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}})
        );

        let mut cron = json!({"spec": {"schedule": "@daily",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}}}});
        normalize(&info("cronjobs"), &mut cron);
        assert_eq!(
            (&cron["spec"]["concurrencyPolicy"], &cron["spec"]["successfulJobsHistoryLimit"]),
            (&json!("Allow"), &json!(3))
        );
        let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(
            (&pod["restartPolicy"], &pod["dnsPolicy"]),
            (&json!("OnFailure"), &json!("ClusterFirst"))
        );
        assert_eq!(pod["securityContext"], json!({}));

        let mut rc = json!({"metadata": {"name": "old"},
            "spec": {"template": {"metadata": {"labels": {"app": "old"}}}}});
        normalize(&info("replicationcontrollers"), &mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "old"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "old"}));
        assert_eq!(rc["spec"]["replicas"], 1);
    }

    #[test]
    fn a_pod_s_containers_get_upstream_defaults() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init", "image": "busybox:1.36"}],
            "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}],
                "imagePullPolicy": "Never", "terminationMessagePolicy": "FallbackToLogsOnError"}]}});
        create_pod(&mut pod);
        let spec = &pod["spec"];
        assert_eq!(
            (&spec["securityContext"], &spec["enableServiceLinks"]),
            (&json!({}), &json!(true))
        );
        let not_ready = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 300});
        assert_eq!(spec["tolerations"][0], not_ready);
        assert_eq!(spec["tolerations"][1]["key"], "node.kubernetes.io/unreachable");
        let mut tolerant = json!({"spec": {"containers": [],
            "tolerations": [{"operator": "Exists"}, {"key": "node.kubernetes.io/not-ready"}]}});
        create_pod(&mut tolerant);
        assert_eq!(tolerant["spec"]["tolerations"].as_array().unwrap().len(), 2, "tolerated");
        assert_eq!(
            spec["initContainers"][0],
            json!({"name": "init", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
        );
        let web = &spec["containers"][0];
        assert_eq!(
            (&web["imagePullPolicy"], &web["terminationMessagePolicy"]),
            (&json!("Never"), &json!("FallbackToLogsOnError")),
            "what is set stays"
        );
        assert_eq!(web["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]));
    }

    #[test]
    fn a_new_pod_is_pending_in_its_quality_of_service_class() {
        let class = |resources: Vec<Value>| {
            let containers: Vec<Value> = resources
                .into_iter()
                .enumerate()
                .map(|(i, r)| json!({"name": format!("c{i}"), "image": "x:1", "resources": r}))
                .collect();
            let mut pod = json!({"spec": {"containers": containers}, "status": {}});
            create_pod(&mut pod);
            assert_eq!(pod["status"]["phase"], "Pending");
            pod["status"]["qosClass"].as_str().unwrap().to_owned()
        };
        let both = json!({"limits": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(class(vec![json!({}), json!({})]), "BestEffort");
        assert_eq!(class(vec![both.clone()]), "Guaranteed");
        let same = json!({"requests": {"cpu": "1000m", "memory": "1Gi"},
            "limits": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(class(vec![both.clone(), same]), "Guaranteed", "equal amounts in any form");
        assert_eq!(class(vec![both.clone(), json!({})]), "Burstable");
        let less = json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(class(vec![less]), "Burstable");
    }

    #[test]
    fn a_gated_pod_starts_out_blocked_from_scheduling() {
        let mut gated = json!({"spec": {"containers": [{"name": "web", "image": "x:1"}],
            "schedulingGates": [{"name": "example.com/quota"}]}});
        create_pod(&mut gated);
        let condition = &gated["status"]["conditions"][0];
        assert_eq!(
            (&condition["type"], &condition["status"], &condition["reason"]),
            (&json!("PodScheduled"), &json!("False"), &json!("SchedulingGated"))
        );
        let mut free = json!({"spec": {"containers": [{"name": "web", "image": "x:1"}],
            "schedulingGates": []}});
        create_pod(&mut free);
        assert!(free["status"].get("conditions").is_none());
    }

    #[test]
    fn namespaces_are_labelled_with_their_name_and_jobs_with_their_pods_labels() {
        let mut namespace = json!({"metadata": {"name": "team", "labels": {"tier": "a"}}});
        normalize(&info("namespaces"), &mut namespace);
        assert_eq!(
            namespace["metadata"]["labels"],
            json!({"tier": "a", "kubernetes.io/metadata.name": "team"})
        );
        let mut job = json!({"metadata": {"name": "pj", "uid": "u"},
            "spec": {"template": {"spec": {"containers": []}}}});
        on_create(&info("jobs"), &mut job);
        assert_eq!(job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]);
        assert_eq!(job["metadata"]["labels"]["job-name"], "pj");
        let mut labelled = json!({"metadata": {"name": "l", "uid": "u", "labels": {"own": "x"}},
            "spec": {"template": {}}});
        on_create(&info("jobs"), &mut labelled);
        assert_eq!(labelled["metadata"]["labels"], json!({"own": "x"}), "its own labels stay");
    }

    #[test]
    fn images_tagged_latest_or_untagged_are_always_pulled() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry:5000/team/app", "Always"),
            ("registry:5000/team/app:1.2", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
            ("nginx:1.27@sha256:abc", "IfNotPresent"),
        ] {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn a_secret_s_string_data_becomes_base64_data_and_its_type_defaults_to_opaque() {
        let mut secret = json!({
            "kind": "Secret",
            "data": { "kept": "a2VwdA==", "token": "b2xk" },
            "stringData": { "token": "new", "hash": "0867fd" }
        });
        normalize(&info("secrets"), &mut secret);
        assert_eq!(
            secret,
            json!({
                "kind": "Secret",
                "data": { "kept": "a2VwdA==", "token": "bmV3", "hash": "MDg2N2Zk" },
                "type": "Opaque"
            })
        );
        let mut tls = json!({ "type": "kubernetes.io/tls" });
        normalize(&info("secrets"), &mut tls);
        assert_eq!(tls["type"], "kubernetes.io/tls", "a given type stays");
        let mut config_map = json!({ "stringData": { "a": "b" } });
        normalize(&info("configmaps"), &mut config_map);
        assert!(config_map.get("stringData").is_some(), "only Secrets are normalised");
    }

    #[test]
    fn an_autoscaler_s_behavior_is_completed_as_upstream_completes_it() {
        let v2 = builtin_resources()
            .into_iter()
            .find(|r| r.resource == "horizontalpodautoscalers" && r.version == "v2")
            .unwrap();
        let down = json!({"stabilizationWindowSeconds": 60, "policies": [
            {"type": "Pods", "value": 1, "periodSeconds": 60},
        ]});
        let mut hpa = json!({"spec": {"maxReplicas": 5, "behavior": {"scaleDown": down}}});
        normalize(&v2, &mut hpa);
        assert_eq!(
            hpa["spec"]["behavior"],
            json!({
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "selectPolicy": "Max",
                    "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15},
                    ],
                },
                "scaleDown": {
                    "stabilizationWindowSeconds": 60,
                    "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                },
            })
        );
        let mut plain = json!({"spec": {"maxReplicas": 5}});
        normalize(&v2, &mut plain);
        assert!(plain["spec"].get("behavior").is_none(), "no behavior is left without one");
    }
}
