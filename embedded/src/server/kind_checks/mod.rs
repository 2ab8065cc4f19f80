//! What the Kubernetes API server validates per built-in kind, beyond what `object_checks`
//! checks on every object: workloads' selectors and pod templates, pods' containers, the keys
//! and immutability of ConfigMaps and Secrets, Secret types, Service ports, CronJob schedules,
//! ResourceQuotas' limits and scopes and CertificateSigningRequests, with upstream's causes; and, in [`updates`], what an
//! update may not change.
//!
//! On an update, a cause the stored object already had is not the update's doing and is
//! dropped: an object stored before a check existed can still be changed (its finalizers
//! removed, its replicas scaled), as long as the change adds no problem.

pub(super) mod certificates;
mod resource_quota;
mod updates;

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::catalog::ResourceInfo;
use crate::node::workloads::cronjob::schedule_problem;
use crate::selectors::LabelSelector;
use crate::validation::{self, Bad};

use super::errors::Cause;
use super::objects::{DNS_LABEL_RULE, is_dns_label};
use resource_quota::resource_quota;
use updates::{claim_update, job_update, pod_update, service_update, stateful_set_update};

/// Upstream's detail for a change to an immutable ConfigMap or Secret.
const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// Upstream's detail for a change to a field that never changes.
const IMMUTABLE: &str = "field is immutable";

/// Upstream's rule for the data keys of ConfigMaps and Secrets.
const CONFIG_KEY_RULE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// The causes for refusing `object` as an `info`, on an update of `old` (less those `old` had
/// already); empty when it is fine.
pub fn problems(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let causes = kind_problems(info, object, old);
    match old {
        Some(old) if !causes.is_empty() => {
            let had = kind_problems(info, old, None);
            causes.into_iter().filter(|cause| !had.contains(cause)).collect()
        }
        _ => causes,
    }
}

/// The causes upstream's validation of `info`'s kind gives `object`, written over `old`.
fn kind_problems(info: &ResourceInfo, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !info.builtin {
        return Vec::new();
    }
    match (info.group.as_str(), info.resource.as_str()) {
        ("apps", "deployments") => {
            let mut causes = workload(object, old, "deployment");
            causes.extend(deployment_strategy(object));
            causes
        }
        // Upstream's ReplicaSet message names deployments too.
        ("apps", "replicasets") => workload(object, old, "deployment"),
        ("apps", "daemonsets") => workload(object, old, "daemonset"),
        // A new selector is refused with the rest of the spec, as upstream refuses it.
        ("apps", "statefulsets") => {
            with_update(workload(object, None, "statefulset"), old, |old| {
                stateful_set_update(info, object, old)
            })
        }
        ("", "replicationcontrollers") => replication_controller(object),
        ("", "pods") => {
            let mut causes = pod_spec(object.get("spec"), "spec");
            causes.extend(scheduling_gates(object));
            with_update(causes, old, |old| pod_update(info, object, old))
        }
        ("batch", "jobs") => {
            let template = pod_template(object.pointer("/spec/template"), "spec.template");
            with_update(template, old, |old| job_update(info, object, old))
        }
        ("batch", "cronjobs") => cron_job(object),
        ("", "configmaps") => config_map(object, old),
        ("", "secrets") => secret(object, old),
        ("", "services") => {
            with_update(service_ports(object), old, |old| service_update(object, old))
        }
        ("", "persistentvolumeclaims") => {
            with_update(Vec::new(), old, |old| claim_update(info, object, old))
        }
        ("", "resourcequotas") => resource_quota(object),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            certificates::certificate_signing_request(object, old)
        }
        _ => Vec::new(),
    }
}

/// `causes`, and on an update those `check` finds in the change from the stored object.
fn with_update(
    mut causes: Vec<Cause>,
    old: Option<&Value>,
    check: impl FnOnce(&Value) -> Vec<Cause>,
) -> Vec<Cause> {
    causes.extend(old.map(check).unwrap_or_default());
    causes
}

/// An apps/v1 workload: a selector that is set, not empty, selects the pod template and never
/// changes; a valid pod template. `kind` is the word upstream's empty-selector message uses.
fn workload(object: &Value, old: Option<&Value>, kind: &str) -> Vec<Cause> {
    let selector = object.pointer("/spec/selector").filter(|s| !s.is_null());
    let template = object.pointer("/spec/template");
    let mut causes = match selector {
        None => vec![required("spec.selector")],
        Some(selector) if terms(Some(selector)) == [None, None] => {
            let detail = format!("empty selector is invalid for {kind}");
            vec![invalid("spec.selector", &go_selector(selector), &detail)]
        }
        Some(selector) => selects_template(selector, &go_selector(selector), template),
    };
    let old_selector = old.and_then(|old| old.pointer("/spec/selector")).filter(|s| !s.is_null());
    if old_selector.is_some() && terms(old_selector) != terms(selector) {
        let shown = selector.map_or_else(|| "null".to_owned(), go_selector);
        causes.push(invalid("spec.selector", &shown, IMMUTABLE));
    }
    causes.extend(pod_template(template, "spec.template"));
    causes
}

/// A Deployment's strategy: `Recreate` takes no `rollingUpdate` (a patch that only changes the
/// type keeps it, the classic mistake upstream refuses).
fn deployment_strategy(deployment: &Value) -> Option<Cause> {
    let strategy = deployment.pointer("/spec/strategy")?;
    let recreate = strategy.get("type").and_then(Value::as_str) == Some("Recreate");
    let rolling = strategy.get("rollingUpdate").is_some_and(|r| !r.is_null());
    (recreate && rolling).then(|| {
        let detail = "may not be specified when strategy `type` is 'Recreate'";
        Cause::from(&validation::forbidden("spec.strategy.rollingUpdate", detail))
    })
}

/// A ReplicationController: a selector (a label map) that selects the pod template, and a valid
/// pod template.
fn replication_controller(object: &Value) -> Vec<Cause> {
    let template = object.pointer("/spec/template");
    let mut causes = match object.pointer("/spec/selector").filter(|s| present(s)) {
        None => vec![required("spec.selector")],
        Some(labels) => {
            let selector = json!({ "matchLabels": labels });
            selects_template(&selector, &go_labels(Some(labels)), template)
        }
    };
    causes.extend(pod_template(template, "spec.template"));
    causes
}

/// Whether a label selector (`matchLabels`, `matchExpressions`) is valid and selects the labels
/// of `template`; `shown` is the selector as a cause shows it.
fn selects_template(selector: &Value, shown: &str, template: Option<&Value>) -> Vec<Cause> {
    match LabelSelector::from_label_selector(selector) {
        Err(error) => {
            vec![invalid("spec.selector", shown, &format!("invalid label selector: {error}"))]
        }
        Ok(parsed) if !parsed.matches_object(template.unwrap_or(&Value::Null)) => {
            let labels = go_labels(template.and_then(|t| t.pointer("/metadata/labels")));
            let detail = "`selector` does not match template `labels`";
            vec![invalid("spec.template.metadata.labels", &labels, detail)]
        }
        Ok(_) => Vec::new(),
    }
}

/// A selector's `matchLabels` and `matchExpressions`, each `None` when empty, so that a missing
/// term and an empty one compare equal.
fn terms(selector: Option<&Value>) -> [Option<&Value>; 2] {
    ["matchLabels", "matchExpressions"].map(|term| set_field(selector?, term))
}

/// `object`'s `field` when it is set (see [`present`]).
fn set_field<'a>(object: &'a Value, field: &str) -> Option<&'a Value> {
    object.get(field).filter(|value| present(value))
}

/// Whether a value is set: not null, nor an empty map or list.
fn present(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// The pod spec of a pod template at `path` (`spec.template`).
fn pod_template(template: Option<&Value>, path: &str) -> Vec<Cause> {
    pod_spec(template.and_then(|t| t.get("spec")), &format!("{path}.spec"))
}

/// A pod spec at `path`: at least one container, and every container and init container named
/// by a DNS-1123 label that no other container has.
fn pod_spec(spec: Option<&Value>, path: &str) -> Vec<Cause> {
    let list = |field: &str| {
        spec.and_then(|s| s.get(field)).and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
    };
    let mut causes = Vec::new();
    if list("containers").is_empty() {
        causes.push(required(&format!("{path}.containers")));
    }
    let mut names = HashSet::new();
    for field in ["containers", "initContainers"] {
        for (index, container) in list(field).iter().enumerate() {
            let at = format!("{path}.{field}[{index}].name");
            let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() {
                causes.push(required(&at));
                continue;
            }
            if !is_dns_label(name) {
                let rule = if name.len() > 63 {
                    "must be no more than 63 characters"
                } else {
                    DNS_LABEL_RULE
                };
                causes.push(invalid(&at, &format!("{name:?}"), rule));
            }
            if !names.insert(name) {
                causes.push(Cause::from(&validation::duplicate(&at, Bad::Str(name))));
            }
        }
    }
    causes
}

/// A pod's scheduling gates: unique names, and no node until they are all removed.
fn scheduling_gates(pod: &Value) -> Vec<Cause> {
    let gates = pod.pointer("/spec/schedulingGates").and_then(Value::as_array);
    let gates = gates.map(Vec::as_slice).unwrap_or_default();
    let mut causes = Vec::new();
    let mut names = HashSet::new();
    for (index, gate) in gates.iter().enumerate() {
        let name = gate.get("name").and_then(Value::as_str).unwrap_or_default();
        if !names.insert(name) {
            let at = format!("spec.schedulingGates[{index}].name");
            causes.push(Cause::from(&validation::duplicate(&at, Bad::Str(name))));
        }
    }
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if !gates.is_empty() && !node.is_empty() {
        let detail = "cannot be set until all schedulingGates have been cleared";
        causes.push(Cause::from(&validation::forbidden("spec.nodeName", detail)));
    }
    causes
}

/// A CronJob: a schedule that parses, and a valid pod template.
fn cron_job(object: &Value) -> Vec<Cause> {
    let schedule = object.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or_default();
    let mut causes = Vec::new();
    if schedule.is_empty() {
        causes.push(required("spec.schedule"));
    } else if let Some(problem) = schedule_problem(schedule) {
        causes.push(invalid("spec.schedule", &format!("{schedule:?}"), &problem));
    }
    let template = object.pointer("/spec/jobTemplate/spec/template");
    causes.extend(pod_template(template, "spec.jobTemplate.spec.template"));
    causes
}

/// A ConfigMap: valid keys in `data` and `binaryData`, neither changed once it is immutable.
fn config_map(object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = key_problems(object, "data");
    causes.extend(key_problems(object, "binaryData"));
    causes.extend(immutability(object, old, &["data", "binaryData"]));
    causes
}

/// A Secret: valid data keys, the keys its type requires, a type that never changes, and data
/// that does not change once it is immutable.
fn secret(object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let kind = secret_type(object);
    let mut causes = key_problems(object, "data");
    let needed: &[&str] = match kind {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        _ => &[],
    };
    for key in needed {
        if object.get("data").and_then(|data| data.get(key)).is_none() {
            causes.push(required(&format!("data[{key}]")));
        }
    }
    let account = object.pointer("/metadata/annotations/kubernetes.io~1service-account.name");
    if kind == "kubernetes.io/service-account-token"
        && account.and_then(Value::as_str).is_none_or(str::is_empty)
    {
        causes.push(required("metadata.annotations[kubernetes.io/service-account.name]"));
    }
    if old.is_some_and(|old| secret_type(old) != kind) {
        causes.push(invalid("type", &format!("{kind:?}"), IMMUTABLE));
    }
    causes.extend(immutability(object, old, &["data"]));
    causes
}

/// A Secret's type: `Opaque` when unset, as upstream defaults it.
fn secret_type(secret: &Value) -> &str {
    secret.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()).unwrap_or("Opaque")
}

/// The causes for the keys of the map at `field` that are not valid config keys.
fn key_problems(object: &Value, field: &str) -> Vec<Cause> {
    let keys = object.get(field).and_then(Value::as_object).into_iter().flat_map(Map::keys);
    keys.flat_map(|key| {
        let at = format!("{field}[{key}]");
        config_key_problems(key)
            .into_iter()
            .map(move |rule| invalid(&at, &format!("{key:?}"), rule))
    })
    .collect()
}

/// What is wrong with a config key, as upstream's `IsConfigMapKey` words it.
fn config_key_problems(key: &str) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if key.len() > 253 {
        problems.push("must be no more than 253 characters");
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if key.is_empty() || !key.bytes().all(allowed) {
        problems.push(CONFIG_KEY_RULE);
    }
    match key {
        "." => problems.push("must not be '.'"),
        ".." => problems.push("must not be '..'"),
        _ if key.starts_with("..") => problems.push("must not start with '..'"),
        _ => {}
    }
    problems
}

/// Once `old` is immutable, it stays immutable and its `fields` keep their values.
fn immutability(object: &Value, old: Option<&Value>, fields: &[&str]) -> Vec<Cause> {
    let immutable = |o: &Value| o.get("immutable") == Some(&Value::Bool(true));
    let Some(old) = old.filter(|old| immutable(old)) else { return Vec::new() };
    let mut causes = Vec::new();
    if !immutable(object) {
        causes.push(frozen("immutable"));
    }
    for field in fields {
        if set_field(old, field) != set_field(object, field) {
            causes.push(frozen(field));
        }
    }
    causes
}

/// A Service's ports: `port`, and `targetPort` and `nodePort` when they are numbers, from 1 to
/// 65535.
fn service_ports(object: &Value) -> Vec<Cause> {
    let ports = object.pointer("/spec/ports").and_then(Value::as_array);
    let mut causes = Vec::new();
    for (index, port) in ports.into_iter().flatten().enumerate() {
        let number = |field: &str| port.get(field).and_then(Value::as_i64);
        let numbers = [
            ("port", Some(number("port").unwrap_or(0))),
            ("targetPort", number("targetPort")),
            ("nodePort", number("nodePort").filter(|p| *p != 0)),
        ];
        for (field, number) in numbers {
            if let Some(number) = number.filter(|n| !(1..=65535).contains(n)) {
                let at = format!("spec.ports[{index}].{field}");
                let detail = "must be between 1 and 65535, inclusive";
                causes.push(invalid(&at, &number.to_string(), detail));
            }
        }
    }
    causes
}

/// A list of strings as Go's `%#v` prints a slice of `kind`.
fn go_strings(kind: &str, list: Option<&Value>) -> String {
    go_slice(kind, list, |item| format!("{:?}", item.as_str().unwrap_or_default()))
}

/// A label map as Go's `%#v` prints it, as upstream's causes show one.
fn go_labels(labels: Option<&Value>) -> String {
    let Some(labels) = labels.and_then(Value::as_object) else {
        return "map[string]string(nil)".to_owned();
    };
    let pairs: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{key:?}:{:?}", value.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

/// A label selector as Go's `%#v` prints a `metav1.LabelSelector`.
fn go_selector(selector: &Value) -> String {
    let expressions =
        go_slice("v1.LabelSelectorRequirement", selector.get("matchExpressions"), |e| {
            let text = |field: &str| e.get(field).and_then(Value::as_str).unwrap_or_default();
            let values = go_slice("string", e.get("values"), |v| {
                format!("{:?}", v.as_str().unwrap_or_default())
            });
            format!(
                "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{values}}}",
                text("key"),
                text("operator")
            )
        });
    let labels = go_labels(selector.get("matchLabels"));
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

/// A list as Go's `%#v` prints a slice of `kind`, each item printed by `item`.
fn go_slice(kind: &str, list: Option<&Value>, item: impl Fn(&Value) -> String) -> String {
    match list.and_then(Value::as_array) {
        None => format!("[]{kind}(nil)"),
        Some(items) => {
            let items: Vec<String> = items.iter().map(item).collect();
            format!("[]{kind}{{{}}}", items.join(", "))
        }
    }
}

/// A field that must be set.
fn required(field: &str) -> Cause {
    Cause::from(&validation::required(field, ""))
}

/// A change to a field of an immutable ConfigMap or Secret.
fn frozen(field: &str) -> Cause {
    Cause::from(&validation::forbidden(field, IMMUTABLE_SET))
}

/// `shown` is the value as upstream prints it: quoted when it is a string.
fn invalid(field: &str, shown: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: {detail}"),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;

    pub(super) fn info(resource: &str) -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.resource == resource).unwrap()
    }

    /// The `field: message` of each cause, and each cause's reason.
    pub(super) fn found(
        resource: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> Vec<(String, String)> {
        problems(&info(resource), object, old)
            .into_iter()
            .map(|c| (format!("{}: {}", c.field, c.message), c.reason))
            .collect()
    }

    pub(super) fn deployment(selector: Value, labels: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"selector": selector,
            "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
    }

    #[test]
    fn a_workload_s_selector_is_required_not_empty_and_selects_its_template() {
        let labels = json!({"app": "web", "tier": "front"});
        let valid = deployment(json!({"matchLabels": {"app": "web"}}), labels.clone());
        for resource in ["deployments", "replicasets", "daemonsets", "statefulsets"] {
            assert_eq!(found(resource, &valid, None), [], "{resource}");
        }
        let expressions =
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]});
        assert_eq!(found("deployments", &deployment(expressions, labels.clone()), None), []);

        let mut missing = valid.clone();
        missing["spec"].as_object_mut().unwrap().remove("selector");
        assert_eq!(
            found("deployments", &missing, None),
            [("spec.selector: Required value".into(), "FieldValueRequired".into())]
        );
        let empty = deployment(json!({}), labels.clone());
        assert_eq!(
            found("daemonsets", &empty, None),
            [(
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for daemonset".into(),
                "FieldValueInvalid".into()
            )]
        );
        let other = deployment(json!({"matchLabels": {"app": "db"}}), labels);
        assert_eq!(
            found("statefulsets", &other, None),
            [(
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: `selector` does not match template `labels`".into(),
                "FieldValueInvalid".into()
            )]
        );
        let bad = deployment(json!({"matchLabels": {"Bad Key": "x"}}), json!({}));
        let causes = problems(&info("replicasets"), &bad, None);
        assert_eq!((causes.len(), causes[0].field.as_str()), (1, "spec.selector"), "{causes:?}");
        assert!(causes[0].message.contains("invalid label selector"), "{causes:?}");
    }

    #[test]
    fn a_recreate_deployment_takes_no_rolling_update() {
        let mut recreate = deployment(json!({"matchLabels": {"app": "a"}}), json!({"app": "a"}));
        recreate["spec"]["strategy"] =
            json!({"type": "Recreate", "rollingUpdate": {"maxSurge": "25%"}});
        assert_eq!(
            found("deployments", &recreate, None),
            [(
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` \
                 is 'Recreate'"
                    .into(),
                "FieldValueForbidden".into()
            )]
        );
        recreate["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": null});
        assert_eq!(found("deployments", &recreate, None), []);
    }

    #[test]
    fn a_workload_s_selector_never_changes() {
        let old = deployment(json!({"matchLabels": {"app": "web"}}), json!({"app": "web"}));
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(3);
        scaled["spec"]["selector"]["matchExpressions"] = json!([]);
        assert_eq!(found("deployments", &scaled, Some(&old)), [], "an empty term is no change");

        let moved = deployment(json!({"matchLabels": {"app": "api"}}), json!({"app": "api"}));
        assert_eq!(
            found("deployments", &moved, Some(&old)),
            [(
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"api\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable".into(),
                "FieldValueInvalid".into()
            )]
        );
    }

    #[test]
    fn a_replication_controller_s_selector_selects_its_template() {
        let rc = |selector: Value| {
            json!({"spec": {"selector": selector, "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web"}]}}}})
        };
        assert_eq!(found("replicationcontrollers", &rc(json!({"app": "web"})), None), []);
        let fields = |object: &Value| {
            problems(&info("replicationcontrollers"), object, None)
                .into_iter()
                .map(|c| (c.field, c.reason))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            fields(&rc(json!({"app": "db"}))),
            [("spec.template.metadata.labels".into(), "FieldValueInvalid".into())]
        );
        assert_eq!(fields(&rc(json!({}))), [("spec.selector".into(), "FieldValueRequired".into())]);
    }

    #[test]
    fn containers_are_required_and_named_by_unique_dns_labels() {
        let pod = |containers: Value, init: Value| json!({"spec": {"containers": containers, "initContainers": init}});
        let valid = pod(json!([{"name": "web"}, {"name": "sidecar-2"}]), json!([{"name": "init"}]));
        assert_eq!(found("pods", &valid, None), []);

        assert_eq!(
            found("pods", &json!({"metadata": {"name": "p"}}), None),
            [("spec.containers: Required value".into(), "FieldValueRequired".into())]
        );
        let bad = pod(
            json!([{"image": "nginx"}, {"name": "Web"}, {"name": "web"}, {"name": "x".repeat(64)}]),
            json!([{"name": "web"}]),
        );
        let causes = found("pods", &bad, None);
        let fields: Vec<_> =
            causes.iter().map(|(m, r)| (m.split(':').next().unwrap(), r.as_str())).collect();
        assert_eq!(
            fields,
            [
                ("spec.containers[0].name", "FieldValueRequired"),
                ("spec.containers[1].name", "FieldValueInvalid"),
                ("spec.containers[3].name", "FieldValueInvalid"),
                ("spec.initContainers[0].name", "FieldValueDuplicate"),
            ]
        );
        assert!(causes[1].0.ends_with(DNS_LABEL_RULE), "{causes:?}");
        assert!(causes[2].0.ends_with("must be no more than 63 characters"), "{causes:?}");
        assert_eq!(causes[3].0, "spec.initContainers[0].name: Duplicate value: \"web\"");
    }

    #[test]
    fn scheduling_gates_are_unique_and_keep_a_pod_off_nodes() {
        let pod = |gates: Value, node: Option<&str>| {
            json!({"spec": {"containers": [{"name": "web"}], "schedulingGates": gates,
                "nodeName": node}})
        };
        assert_eq!(found("pods", &pod(json!([{"name": "a"}, {"name": "b"}]), None), None), []);
        assert_eq!(found("pods", &pod(json!([]), Some("node-1")), None), []);
        let causes =
            found("pods", &pod(json!([{"name": "a"}, {"name": "a"}]), Some("node-1")), None);
        let messages: Vec<&str> = causes.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "spec.schedulingGates[1].name: Duplicate value: \"a\"",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been \
                 cleared",
            ]
        );
    }

    #[test]
    fn every_pod_template_needs_a_container() {
        let empty = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": []}},
            "schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        for (resource, field) in [
            ("deployments", "spec.template.spec.containers"),
            ("jobs", "spec.template.spec.containers"),
            ("cronjobs", "spec.jobTemplate.spec.template.spec.containers"),
        ] {
            assert_eq!(
                found(resource, &empty, None),
                [(format!("{field}: Required value"), "FieldValueRequired".into())]
            );
        }
    }

    #[test]
    fn a_cron_job_s_schedule_is_required_and_parses() {
        let cron = |schedule: &str| {
            json!({"spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec":
                {"containers": [{"name": "job"}]}}}}}})
        };
        for schedule in ["*/5 * * * *", "@hourly", "@every 1h30m"] {
            assert_eq!(found("cronjobs", &cron(schedule), None), [], "{schedule}");
        }
        assert_eq!(
            found("cronjobs", &cron(""), None),
            [("spec.schedule: Required value".into(), "FieldValueRequired".into())]
        );
        for schedule in ["not a cron", "@every soon", "TZ=UTC 0 * * * *", "61 * * * *"] {
            let causes = found("cronjobs", &cron(schedule), None);
            let start = format!("spec.schedule: Invalid value: {schedule:?}: ");
            assert!(causes.len() == 1 && causes[0].0.starts_with(&start), "{causes:?}");
        }
    }

    #[test]
    fn config_keys_are_checked_in_config_maps_and_secrets() {
        let valid = json!({"data": {"key.name": "", "KEY_NAME": "", "key-name": "", ".hidden": ""},
            "binaryData": {"b": ""}});
        assert_eq!(found("configmaps", &valid, None), []);
        let bad = json!({"data": {"bad key": "", "..": "", "..x": ""}, "binaryData": {"a/b": ""}});
        let causes: Vec<_> = found("configmaps", &bad, None).into_iter().map(|(m, _)| m).collect();
        assert_eq!(causes.len(), 4, "{causes:?}");
        assert!(causes[0].starts_with("data[..]: Invalid value: \"..\": must not be '..'"));
        assert!(causes[1].starts_with("data[..x]: Invalid value: \"..x\": must not start with"));
        assert_eq!(
            causes[2],
            format!("data[bad key]: Invalid value: \"bad key\": {CONFIG_KEY_RULE}")
        );
        assert!(
            causes[3].starts_with("binaryData[a/b]: Invalid value: \"a/b\": a valid config key")
        );
        let secret = found("secrets", &json!({"data": {"x y": ""}}), None);
        assert_eq!(secret.len(), 1, "{secret:?}");
        assert!(secret[0].0.starts_with("data[x y]: Invalid value"));
    }

    #[test]
    fn an_immutable_config_map_or_secret_keeps_its_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}, "binaryData": {"b": "Ag=="}});
        let mut relabeled = old.clone();
        relabeled["metadata"] = json!({"labels": {"x": "y"}});
        assert_eq!(found("configmaps", &relabeled, Some(&old)), []);

        let changed = json!({"immutable": false, "data": {"a": "2"}});
        let forbidden = |field: &str| {
            (
                format!("{field}: Forbidden: field is immutable when `immutable` is set"),
                "FieldValueForbidden".to_owned(),
            )
        };
        assert_eq!(
            found("configmaps", &changed, Some(&old)),
            [forbidden("immutable"), forbidden("data"), forbidden("binaryData")]
        );
        assert_eq!(
            found("secrets", &changed, Some(&old)),
            [forbidden("immutable"), forbidden("data")]
        );
        let mutable = json!({"data": {"a": "1"}});
        assert_eq!(found("configmaps", &changed, Some(&mutable)), [], "only once immutable");
    }

    #[test]
    fn a_secret_s_type_never_changes_and_needs_its_keys() {
        let old = json!({"type": "Opaque", "data": {}});
        let unset = json!({"data": {}});
        assert_eq!(found("secrets", &unset, Some(&old)), [], "unset is Opaque");
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(found("secrets", &tls, None), []);
        assert_eq!(
            found("secrets", &tls, Some(&old)),
            [(
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable".into(),
                "FieldValueInvalid".into()
            )]
        );
        let required =
            |key: &str| (format!("data[{key}]: Required value"), "FieldValueRequired".to_owned());
        let keyless = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}});
        assert_eq!(found("secrets", &keyless, None), [required("tls.key")]);
        let docker = json!({"type": "kubernetes.io/dockerconfigjson"});
        assert_eq!(found("secrets", &docker, None), [required(".dockerconfigjson")]);
        let token = json!({"type": "kubernetes.io/service-account-token"});
        assert_eq!(
            found("secrets", &token, None),
            [(
                "metadata.annotations[kubernetes.io/service-account.name]: Required value".into(),
                "FieldValueRequired".into()
            )]
        );
    }

    #[test]
    fn service_ports_are_in_range() {
        let service = json!({"spec": {"ports": [
            {"port": 80, "targetPort": "http"},
            {"port": 99999, "targetPort": 0, "nodePort": 0},
            {"port": 443, "targetPort": 8443, "nodePort": -1},
        ]}});
        let causes: Vec<_> =
            found("services", &service, None).into_iter().map(|(m, _)| m).collect();
        let rule = "must be between 1 and 65535, inclusive";
        assert_eq!(
            causes,
            [
                format!("spec.ports[1].port: Invalid value: 99999: {rule}"),
                format!("spec.ports[1].targetPort: Invalid value: 0: {rule}"),
                format!("spec.ports[2].nodePort: Invalid value: -1: {rule}"),
            ]
        );
    }

    #[test]
    fn an_update_is_refused_only_for_problems_it_brings() {
        // Stored before the checks existed: no containers.
        let old = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}}}});
        let mut scaled = old.clone();
        scaled["spec"]["replicas"] = json!(2);
        assert_eq!(found("deployments", &scaled, Some(&old)), []);
        assert_eq!(found("deployments", &scaled, None).len(), 1, "a create is checked in full");
        let mut relabeled = scaled.clone();
        relabeled["spec"]["template"]["metadata"]["labels"] = json!({"app": "b"});
        let causes = found("deployments", &relabeled, Some(&old));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert!(causes[0].0.starts_with("spec.template.metadata.labels"), "{causes:?}");
    }

    #[test]
    fn custom_resources_are_not_checked() {
        let mut custom = info("deployments");
        custom.builtin = false;
        assert!(problems(&custom, &json!({}), None).is_empty());
    }
}
