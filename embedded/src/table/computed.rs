//! Cells computed like kubectl's built-in printers (k8s.io/kubernetes
//! `pkg/printers/internalversion/printers.go`), for printer columns whose
//! `json_path` is `computed:<name>`:
//!
//! | name | cell |
//! |---|---|
//! | `age` | human duration since `metadata.creationTimestamp` (`<unknown>`) |
//! | `created-at` | `metadata.creationTimestamp` as RFC 3339 (default table) |
//! | `or-none:<path>` / `or-unset:<path>` / `or-na:<path>` | string (or number) at `<path>`, or `<none>` / `<unset>` / `N/A` |
//! | `bool:<path>` | the boolean at `<path>`, `false` when unset |
//! | `count:<path>` | the number of entries of the list or map at `<path>` |
//! | `pod-ready`, `pod-status`, `pod-restarts`, `pod-readiness-gates` | pod READY `1/2`, STATUS (`Running`, `Init:0/1`, `CrashLoopBackOff`, `Terminating`...), RESTARTS `3 (5m ago)`, gates `1/2` |
//! | `replicas-ready` | `ready/desired` |
//! | `containers`, `images`, `selector`, `node-selector` | workload template containers/images, `spec.selector`, template node selector |
//! | `selector-map` | an equality-only `spec.selector` map (Services, ReplicationControllers) |
//! | `job-status`, `job-completions`, `job-duration` | `Complete`/`Failed`/`Running`..., `1/3`, duration |
//! | `cronjob-suspend`, `cronjob-active`, `cronjob-last-schedule` | `True`/`False`, running jobs, time since the last schedule |
//! | `job-template-containers`, `job-template-images`, `job-template-selector` | a CronJob's job template cells |
//! | `service-cluster-ip`, `service-external-ip`, `service-ports` | service cells |
//! | `endpoints` | up to three `ip:port` pairs, then `+ N more...` |
//! | `controller` | the controller owner as `kind.group/name` (`statefulset.apps/db`), or `<none>` |
//! | `binding-role`, `binding-subjects:<Kind>` | a role binding's `Kind/name` role, and its subjects of a kind |
//! | `pod-selector`, `ingressclass-parameters` | a NetworkPolicy's pod selector, an IngressClass's parameters |
//! | `podtemplate-containers`, `podtemplate-images`, `podtemplate-labels` | a PodTemplate's containers, images and pod labels |
//! | `csidriver-attach-required`, `csidriver-token-requests`, `csidriver-modes` | a CSIDriver's `attachRequired` (`true` when unset), token audiences (`<unset>`), lifecycle modes (`<none>`) |
//! | `csr-requested-duration`, `csr-condition` | a CertificateSigningRequest's `expirationSeconds` as a duration (`<none>`), and `Approved`/`Denied`/`Pending` with `,Failed` and `,Issued` |
//! | `policy-param-kind`, `binding-param-ref` | a ValidatingAdmissionPolicy's `apiVersion/Kind` of parameters, its binding's `namespace/name` (`*/name`) or selector of them (`<unset>`) |
//! | `apiservice-service`, `apiservice-available` | an APIService's `namespace/name` service (`Local`), and its `Available` condition (`False (Reason)`, `Unknown`) |
//! | `hpa-reference`, `hpa-targets` | an autoscaler's `Kind/name` target, and its metrics `cpu: <unknown>/80%` |
//! | `quota-request`, `quota-limit` | a ResourceQuota's `used/hard` per resource, from its status |
//! | `slice-ports`, `slice-endpoints` | an EndpointSlice's port numbers, and up to three addresses, then `+ N more...` |
//! | `ingress-hosts`, `ingress-address`, `ingress-ports` | ingress cells |
//! | `configmap-data`, `secret-data`, `serviceaccount-secrets` | entry counts |
//! | `node-status`, `node-roles`, `node-address:<Type>` | `Ready,SchedulingDisabled`, roles, first address of a type |
//! | `volume-status`, `pvc-capacity`, `pvc-access-modes`, `pv-access-modes`, `pv-claim` | claim and volume cells |
//! | `event-last-seen`, `event-first-seen`, `event-object`, `event-subobject`, `event-source`, `event-message`, `event-count` | event cells, for both core/v1 and events.k8s.io/v1 shapes |

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};

use super::pod::pod_summary;
use crate::selectors::LabelSelector;

pub(super) fn get<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.').split('.').try_fold(object, |v, segment| v.get(segment))
}

pub(super) fn text<'a>(object: &'a Value, path: &str) -> &'a str {
    get(object, path).and_then(Value::as_str).unwrap_or_default()
}

/// First non-empty string among `paths`.
fn text_any<'a>(object: &'a Value, paths: &[&str]) -> &'a str {
    paths.iter().map(|p| text(object, p)).find(|s| !s.is_empty()).unwrap_or_default()
}

pub(super) fn int(object: &Value, path: &str) -> i64 {
    get(object, path).and_then(Value::as_i64).unwrap_or_default()
}

pub(super) fn list<'a>(object: &'a Value, path: &str) -> &'a [Value] {
    get(object, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn count(object: &Value, path: &str) -> usize {
    match get(object, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

pub(super) fn timestamp(object: &Value, path: &str) -> Option<Timestamp> {
    text(object, path).parse().ok()
}

pub(super) fn or(value: &str, default: &str) -> String {
    if value.is_empty() { default.to_owned() } else { value.to_owned() }
}

/// apimachinery's `duration.HumanDuration` (`45s`, `5m3s`, `2d3h`, `3y20d`).
pub(crate) fn human_duration(nanos: i128) -> String {
    const SEC: i128 = 1_000_000_000;
    let seconds = nanos / SEC;
    if seconds < -1 {
        return "<invalid>".into();
    } else if seconds < 0 {
        return "0s".into();
    } else if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = nanos / (60 * SEC);
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    } else if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = nanos / (3600 * SEC);
    let days = hours / 24;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 { format!("{days}d") } else { format!("{days}d{h}h") }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let (years, d) = (days / 365, days % 365);
        if d == 0 { format!("{years}y") } else { format!("{years}y{d}d") }
    } else {
        format!("{}y", days / 365)
    }
}

/// `translateTimestampSince`: `<unknown>` for a missing timestamp.
pub(crate) fn since(ts: Option<Timestamp>, now: Timestamp) -> String {
    match ts {
        Some(ts) => human_duration(now.as_nanosecond() - ts.as_nanosecond()),
        None => "<unknown>".into(),
    }
}

fn join_labels(map: Option<&Value>) -> String {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect())
        .unwrap_or_default();
    if pairs.is_empty() { "<none>".into() } else { pairs.join(",") }
}

pub(super) fn has_true_condition(object: &Value, type_: &str) -> bool {
    list(object, "status.conditions")
        .iter()
        .any(|c| text(c, "type") == type_ && text(c, "status") == "True")
}

/// The cell for `computed:<name>`, or `None` for an unknown name.
pub(crate) fn cell(name: &str, o: &Value, now: Timestamp) -> Option<Value> {
    for (prefix, absent) in [("or-none:", "<none>"), ("or-unset:", "<unset>"), ("or-na:", "N/A")] {
        if let Some(path) = name.strip_prefix(prefix) {
            let value = match get(o, path) {
                Some(Value::String(text)) if !text.is_empty() => text.clone(),
                Some(Value::Number(number)) => number.to_string(),
                _ => absent.to_owned(),
            };
            return Some(json!(value));
        }
    }
    if let Some(path) = name.strip_prefix("bool:") {
        return Some(json!(get(o, path).and_then(Value::as_bool).unwrap_or(false)));
    }
    if let Some(path) = name.strip_prefix("count:") {
        return Some(json!(count(o, path)));
    }
    if let Some(kind) = name.strip_prefix("binding-subjects:") {
        let subjects: Vec<String> = list(o, "subjects")
            .iter()
            .filter(|s| text(s, "kind") == kind)
            .map(|s| match text(s, "namespace") {
                "" => text(s, "name").to_owned(),
                namespace => format!("{namespace}/{}", text(s, "name")),
            })
            .collect();
        return Some(json!(subjects.join(", ")));
    }
    if let Some(kind) = name.strip_prefix("node-address:") {
        let addr = list(o, "status.addresses").iter().find(|a| text(a, "type") == kind);
        return Some(json!(or(addr.map(|a| text(a, "address")).unwrap_or_default(), "<none>")));
    }
    let template_containers = || list(o, "spec.template.spec.containers");
    let joined = |field: &str| {
        template_containers().iter().map(|c| text(c, field)).collect::<Vec<_>>().join(",")
    };
    let value = match name {
        "age" => json!(since(timestamp(o, "metadata.creationTimestamp"), now)),
        "created-at" => {
            let ts = timestamp(o, "metadata.creationTimestamp");
            json!(ts.map_or_else(|| "0001-01-01T00:00:00Z".into(), crate::server::rfc3339))
        }
        "pod-ready" => {
            let p = pod_summary(o, now);
            json!(format!("{}/{}", p.ready, p.total))
        }
        "pod-status" => json!(pod_summary(o, now).reason),
        "pod-restarts" => json!(pod_summary(o, now).restarts),
        "pod-readiness-gates" => {
            let gates = list(o, "spec.readinessGates");
            if gates.is_empty() {
                json!("<none>")
            } else {
                let conditions = list(o, "status.conditions");
                let ok = gates
                    .iter()
                    .filter(|g| {
                        conditions
                            .iter()
                            .find(|c| text(c, "type") == text(g, "conditionType"))
                            .is_some_and(|c| text(c, "status") == "True")
                    })
                    .count();
                json!(format!("{ok}/{}", gates.len()))
            }
        }
        "replicas-ready" => {
            let desired = get(o, "spec.replicas").and_then(Value::as_i64).unwrap_or(1);
            json!(format!("{}/{desired}", int(o, "status.readyReplicas")))
        }
        "containers" => json!(joined("name")),
        "images" => json!(joined("image")),
        "selector" => json!(selector(o, "spec.selector")),
        "node-selector" => json!(join_labels(get(o, "spec.template.spec.nodeSelector"))),
        "selector-map" => json!(join_labels(get(o, "spec.selector"))),
        "cronjob-suspend" => {
            let suspended = get(o, "spec.suspend").and_then(Value::as_bool) == Some(true);
            json!(if suspended { "True" } else { "False" })
        }
        "cronjob-active" => json!(count(o, "status.active")),
        "cronjob-last-schedule" => match timestamp(o, "status.lastScheduleTime") {
            Some(at) => json!(since(Some(at), now)),
            None => json!("<none>"),
        },
        "job-template-containers" | "job-template-images" => {
            let field = if name.ends_with("containers") { "name" } else { "image" };
            let containers = list(o, "spec.jobTemplate.spec.template.spec.containers");
            json!(containers.iter().map(|c| text(c, field)).collect::<Vec<_>>().join(","))
        }
        "job-template-selector" => json!(selector(o, "spec.jobTemplate.spec.selector")),
        "endpoints" => json!(endpoints(o)),
        "binding-role" => json!(format!("{}/{}", text(o, "roleRef.kind"), text(o, "roleRef.name"))),
        "pod-selector" => json!(selector(o, "spec.podSelector")),
        "podtemplate-containers" | "podtemplate-images" => {
            let field = if name.ends_with("containers") { "name" } else { "image" };
            let containers = list(o, "template.spec.containers");
            json!(containers.iter().map(|c| text(c, field)).collect::<Vec<_>>().join(","))
        }
        "podtemplate-labels" => json!(join_labels(get(o, "template.metadata.labels"))),
        "csidriver-attach-required" => {
            json!(get(o, "spec.attachRequired").and_then(Value::as_bool).unwrap_or(true))
        }
        "csidriver-token-requests" => {
            let requests = get(o, "spec.tokenRequests").and_then(Value::as_array);
            let audiences = requests
                .map(|r| r.iter().map(|r| text(r, "audience")).collect::<Vec<_>>().join(","));
            json!(audiences.unwrap_or_else(|| "<unset>".into()))
        }
        "csidriver-modes" => {
            let modes: Vec<&str> =
                list(o, "spec.volumeLifecycleModes").iter().filter_map(Value::as_str).collect();
            json!(or(&modes.join(","), "<none>"))
        }
        "csr-requested-duration" => {
            match get(o, "spec.expirationSeconds").and_then(Value::as_i64) {
                Some(seconds) => json!(human_duration(i128::from(seconds) * 1_000_000_000)),
                None => json!("<none>"),
            }
        }
        "csr-condition" => json!(csr_condition(o)),
        "policy-param-kind" => match get(o, "spec.paramKind") {
            Some(kind) if kind.is_object() => {
                json!(format!("{}/{}", text(kind, "apiVersion"), text(kind, "kind")))
            }
            _ => json!("<unset>"),
        },
        "binding-param-ref" => json!(param_ref(o)),
        "apiservice-service" => match get(o, "spec.service") {
            Some(service) if service.is_object() => {
                json!(format!("{}/{}", text(service, "namespace"), text(service, "name")))
            }
            _ => json!("Local"),
        },
        "apiservice-available" => {
            let condition =
                list(o, "status.conditions").iter().find(|c| text(c, "type") == "Available");
            let available = match condition.map(|c| (text(c, "status"), text(c, "reason"))) {
                None => "Unknown".to_owned(),
                Some((status, "")) | Some((status @ "True", _)) => status.to_owned(),
                Some((status, reason)) => format!("{status} ({reason})"),
            };
            json!(available)
        }
        "ingressclass-parameters" => match get(o, "spec.parameters") {
            Some(p) if p.is_object() => json!(format!("{}/{}", text(p, "kind"), text(p, "name"))),
            _ => json!("<none>"),
        },
        "hpa-reference" => json!(format!(
            "{}/{}",
            text(o, "spec.scaleTargetRef.kind"),
            text(o, "spec.scaleTargetRef.name")
        )),
        "hpa-targets" => json!(hpa_targets(o)),
        "quota-request" => json!(quota(o, false)),
        "quota-limit" => json!(quota(o, true)),
        "controller" => {
            let owner = list(o, "metadata.ownerReferences")
                .iter()
                .find(|r| get(r, "controller").and_then(Value::as_bool) == Some(true));
            let text = owner.map_or_else(
                || "<none>".to_owned(),
                |r| {
                    let kind = text(r, "kind").to_ascii_lowercase();
                    match text(r, "apiVersion").split_once('/') {
                        Some((group, _)) => format!("{kind}.{group}/{}", text(r, "name")),
                        None => format!("{kind}/{}", text(r, "name")),
                    }
                },
            );
            json!(text)
        }
        "slice-ports" => {
            let ports: Vec<String> =
                list(o, "ports").iter().map(|p| int(p, "port").to_string()).collect();
            json!(or(&ports.join(","), "<unset>"))
        }
        "slice-endpoints" => {
            let addresses: Vec<String> = list(o, "endpoints")
                .iter()
                .flat_map(|e| list(e, "addresses"))
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            json!(or(&first_of(addresses), "<unset>"))
        }
        "ingress-hosts" => {
            let hosts: Vec<&str> = list(o, "spec.rules")
                .iter()
                .map(|rule| text(rule, "host"))
                .filter(|host| !host.is_empty())
                .collect();
            json!(or(&hosts.join(","), "*"))
        }
        "ingress-address" => {
            let addresses: Vec<&str> = list(o, "status.loadBalancer.ingress")
                .iter()
                .map(|i| text_any(i, &["ip", "hostname"]))
                .filter(|s| !s.is_empty())
                .collect();
            json!(addresses.join(","))
        }
        "ingress-ports" => json!(if list(o, "spec.tls").is_empty() { "80" } else { "80, 443" }),
        "job-status" => {
            let status = if has_true_condition(o, "Complete") {
                "Complete"
            } else if has_true_condition(o, "Failed") {
                "Failed"
            } else if get(o, "metadata.deletionTimestamp").is_some_and(|v| !v.is_null()) {
                "Terminating"
            } else if has_true_condition(o, "Suspended") {
                "Suspended"
            } else if has_true_condition(o, "FailureTarget") {
                "FailureTarget"
            } else if has_true_condition(o, "SuccessCriteriaMet") {
                "SuccessCriteriaMet"
            } else {
                "Running"
            };
            json!(status)
        }
        "job-completions" => {
            let succeeded = int(o, "status.succeeded");
            let text = match get(o, "spec.completions").and_then(Value::as_i64) {
                Some(c) => format!("{succeeded}/{c}"),
                None => match int(o, "spec.parallelism") {
                    p if p > 1 => format!("{succeeded}/1 of {p}"),
                    _ => format!("{succeeded}/1"),
                },
            };
            json!(text)
        }
        "job-duration" => {
            let end = timestamp(o, "status.completionTime").unwrap_or(now);
            let text = timestamp(o, "status.startTime")
                .map(|start| human_duration(end.as_nanosecond() - start.as_nanosecond()))
                .unwrap_or_default();
            json!(text)
        }
        "service-cluster-ip" => {
            let ip = list(o, "spec.clusterIPs")
                .first()
                .and_then(Value::as_str)
                .unwrap_or(text(o, "spec.clusterIP"));
            json!(or(ip, "<none>"))
        }
        "service-external-ip" => json!(service_external_ip(o)),
        "service-ports" => {
            let ports: Vec<String> = list(o, "spec.ports")
                .iter()
                .map(|p| {
                    let protocol = or(text(p, "protocol"), "TCP");
                    match int(p, "nodePort") {
                        n if n > 0 => format!("{}:{n}/{protocol}", int(p, "port")),
                        _ => format!("{}/{protocol}", int(p, "port")),
                    }
                })
                .collect();
            json!(or(&ports.join(","), "<none>"))
        }
        "configmap-data" => json!(count(o, "data") + count(o, "binaryData")),
        "secret-data" => json!(count(o, "data")),
        "serviceaccount-secrets" => json!(count(o, "secrets")),
        "node-status" => {
            let mut status: Vec<&str> = list(o, "status.conditions")
                .iter()
                .find(|c| text(c, "type") == "Ready")
                .map(|c| if text(c, "status") == "True" { "Ready" } else { "NotReady" })
                .into_iter()
                .collect();
            if status.is_empty() {
                status.push("Unknown");
            }
            if get(o, "spec.unschedulable").and_then(Value::as_bool) == Some(true) {
                status.push("SchedulingDisabled");
            }
            json!(status.join(","))
        }
        "node-roles" => {
            let mut roles = BTreeSet::new();
            for (k, v) in get(o, "metadata.labels").and_then(Value::as_object).into_iter().flatten()
            {
                if let Some(role) =
                    k.strip_prefix("node-role.kubernetes.io/").filter(|r| !r.is_empty())
                {
                    roles.insert(role.to_owned());
                } else if k == "kubernetes.io/role" && v.as_str().is_some_and(|v| !v.is_empty()) {
                    roles.insert(v.as_str().unwrap_or_default().to_owned());
                }
            }
            json!(or(&roles.into_iter().collect::<Vec<_>>().join(","), "<none>"))
        }
        "volume-status" => {
            let deleting = get(o, "metadata.deletionTimestamp").is_some_and(|v| !v.is_null());
            json!(if deleting { "Terminating" } else { text(o, "status.phase") })
        }
        "pvc-capacity" if text(o, "spec.volumeName").is_empty() => json!(""),
        "pvc-capacity" => json!(text(o, "status.capacity.storage")),
        "pvc-access-modes" if text(o, "spec.volumeName").is_empty() => json!(""),
        "pvc-access-modes" => json!(access_modes(list(o, "status.accessModes"))),
        "pv-access-modes" => json!(access_modes(list(o, "spec.accessModes"))),
        "pv-claim" => {
            let claim = match (text(o, "spec.claimRef.namespace"), text(o, "spec.claimRef.name")) {
                (_, "") => String::new(),
                (namespace, name) => format!("{namespace}/{name}"),
            };
            json!(claim)
        }
        "event-first-seen" => json!(event_first_seen(o, now)),
        "event-last-seen" => {
            let last = if let Some(t) = timestamp(o, "series.lastObservedTime") {
                since(Some(t), now)
            } else {
                match timestamp(o, "lastTimestamp")
                    .or_else(|| timestamp(o, "deprecatedLastTimestamp"))
                {
                    Some(t) => since(Some(t), now),
                    None => event_first_seen(o, now),
                }
            };
            json!(last)
        }
        "event-object" => {
            let target = ["involvedObject", "regarding"]
                .iter()
                .find_map(|f| get(o, f))
                .unwrap_or(&Value::Null);
            let kind = text(target, "kind").to_lowercase();
            let name = text(target, "name");
            json!(if name.is_empty() { kind } else { format!("{kind}/{name}") })
        }
        "event-subobject" => {
            json!(text_any(o, &["involvedObject.fieldPath", "regarding.fieldPath"]))
        }
        "event-source" => {
            let component = text_any(
                o,
                &[
                    "source.component",
                    "deprecatedSource.component",
                    "reportingController",
                    "reportingComponent",
                ],
            );
            let instance =
                text_any(o, &["source.host", "deprecatedSource.host", "reportingInstance"]);
            json!(if instance.is_empty() {
                component.to_owned()
            } else {
                format!("{component}, {instance}")
            })
        }
        "event-message" => json!(text_any(o, &["message", "note"]).trim()),
        "event-count" => {
            let n = match get(o, "series.count").and_then(Value::as_i64) {
                Some(n) => n,
                None => match int(o, "count").max(int(o, "deprecatedCount")) {
                    0 => 1,
                    n => n,
                },
            };
            json!(n)
        }
        _ => return None,
    };
    Some(value)
}

/// The label selector at `path` as kubectl formats it, `<none>` when there is none.
fn selector(o: &Value, path: &str) -> String {
    let formatted = get(o, path)
        .map(|s| {
            LabelSelector::from_label_selector(s)
                .map_or_else(|_| "<error>".into(), |s| s.to_string())
        })
        .unwrap_or_default();
    or(&formatted, "<none>")
}

/// A CertificateSigningRequest's condition as kubectl prints it: `Denied`, else `Approved`, else
/// `Pending`, then `,Failed` and `,Issued` when they apply.
fn csr_condition(o: &Value) -> String {
    let has = |type_: &str| list(o, "status.conditions").iter().any(|c| text(c, "type") == type_);
    let mut condition = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        condition.push_str(",Failed");
    }
    if !text(o, "status.certificate").is_empty() {
        condition.push_str(",Issued");
    }
    condition
}

/// A ValidatingAdmissionPolicyBinding's parameters: `namespace/name`, `*/name` without a
/// namespace, or a selector as Go prints a `LabelSelector`; `<unset>` without either.
fn param_ref(o: &Value) -> String {
    let Some(reference) = get(o, "spec.paramRef").filter(|r| r.is_object()) else {
        return "<unset>".into();
    };
    match (text(reference, "namespace"), text(reference, "name")) {
        (_, "") => get(reference, "selector")
            .filter(|s| s.is_object())
            .map_or_else(|| "<unset>".into(), go_label_selector),
        ("", name) => format!("*/{name}"),
        (namespace, name) => format!("{namespace}/{name}"),
    }
}

/// A label selector as the `String` method of apimachinery's generated `LabelSelector` writes it.
fn go_label_selector(selector: &Value) -> String {
    let labels: BTreeMap<&str, &str> = get(selector, "matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
        .collect();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = list(selector, "matchExpressions")
        .iter()
        .map(|e| {
            let values: Vec<&str> = list(e, "values").iter().filter_map(Value::as_str).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(e, "key"),
                text(e, "operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// An autoscaler's metrics as `name: current/target`, `<unknown>` for a current value no
/// controller has measured; `<none>` without metrics.
fn hpa_targets(o: &Value) -> String {
    // An `autoscaling/v1` view has one CPU target instead of metrics.
    if let Some(target) = get(o, "spec.targetCPUUtilizationPercentage") {
        let current = get(o, "status.currentCPUUtilizationPercentage")
            .map_or_else(|| "<unknown>".to_owned(), |c| format!("{c}%"));
        return format!("cpu: {current}/{target}%");
    }
    let current = list(o, "status.currentMetrics");
    let metrics: Vec<String> = list(o, "spec.metrics")
        .iter()
        .enumerate()
        .map(|(index, metric)| {
            let kind = text(metric, "type");
            let source = match kind {
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                "Pods" => "pods",
                "Object" => "object",
                _ => "external",
            };
            let spec = get(metric, source).cloned().unwrap_or_default();
            let name = text(&spec, "name").to_owned();
            let name = if name.is_empty() { text(&spec, "metric.name").to_owned() } else { name };
            let (target, unit) = match get(&spec, "target.averageUtilization") {
                Some(value) => (value.to_string(), "%"),
                None => {
                    let value = text_any(&spec, &["target.averageValue", "target.value"]);
                    (value.to_owned(), "")
                }
            };
            let measured =
                current.get(index).and_then(|c| get(c, source)).and_then(|c| match unit {
                    "%" => get(c, "current.averageUtilization").map(Value::to_string),
                    _ => Some(text_any(c, &["current.averageValue", "current.value"]).to_owned())
                        .filter(|v| !v.is_empty()),
                });
            let measured =
                measured.map_or_else(|| "<unknown>".to_owned(), |m| format!("{m}{unit}"));
            format!("{name}: {measured}/{target}{unit}")
        })
        .collect();
    or(&metrics.join(", "), "<none>")
}

/// A ResourceQuota's `resource: used/hard` pairs from its status, for limits (`limits.*`) or
/// for requests (everything else), sorted by resource.
fn quota(o: &Value, limits: bool) -> String {
    let hard = get(o, "status.hard").and_then(Value::as_object);
    let pairs: Vec<String> = hard
        .into_iter()
        .flatten()
        .filter(|(resource, _)| resource.starts_with("limits.") == limits)
        .map(|(resource, hard)| {
            let used = get(o, "status.used").and_then(|u| u.get(resource));
            let used = used.and_then(Value::as_str).unwrap_or("0");
            format!("{resource}: {used}/{}", hard.as_str().unwrap_or_default())
        })
        .collect();
    pairs.join(", ")
}

/// kubectl's short access modes (`RWO,ROX`), in upstream's order.
fn access_modes(modes: &[Value]) -> String {
    let modes: Vec<&str> = modes.iter().filter_map(Value::as_str).collect();
    let short: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .into_iter()
    .filter(|(long, _)| modes.contains(long))
    .map(|(_, s)| s)
    .collect();
    short.join(",")
}

/// kubectl's `formatEndpoints`: `ip:port` for each address and port of each subset, the first
/// three shown, then `+ N more...`; `<none>` when there are none.
fn endpoints(o: &Value) -> String {
    let mut pairs = Vec::new();
    for subset in list(o, "subsets") {
        let ports = list(subset, "ports");
        for address in list(subset, "addresses") {
            let ip = text(address, "ip");
            if ports.is_empty() {
                pairs.push(ip.to_owned());
            }
            pairs.extend(ports.iter().map(|port| format!("{ip}:{}", int(port, "port"))));
        }
    }
    or(&first_of(pairs), "<none>")
}

/// The first three items, then `+ N more...`, as kubectl shortens endpoint lists.
fn first_of(items: Vec<String>) -> String {
    const SHOWN: usize = 3;
    match items.len() {
        n if n > SHOWN => format!("{} + {} more...", items[..SHOWN].join(","), n - SHOWN),
        _ => items.join(","),
    }
}

fn event_first_seen(o: &Value, now: Timestamp) -> String {
    match timestamp(o, "firstTimestamp").or_else(|| timestamp(o, "deprecatedFirstTimestamp")) {
        Some(t) => since(Some(t), now),
        None => since(timestamp(o, "eventTime"), now),
    }
}

fn service_external_ip(o: &Value) -> String {
    let external: Vec<&str> =
        list(o, "spec.externalIPs").iter().filter_map(Value::as_str).collect();
    match text(o, "spec.type") {
        "" | "ClusterIP" | "NodePort" => or(&external.join(","), "<none>"),
        "LoadBalancer" => {
            let mut all: Vec<&str> = list(o, "status.loadBalancer.ingress")
                .iter()
                .map(|i| text_any(i, &["ip", "hostname"]))
                .filter(|s| !s.is_empty())
                .collect();
            all.extend(external);
            or(&all.join(","), "<pending>")
        }
        "ExternalName" => text(o, "spec.externalName").to_owned(),
        _ => "<unknown>".into(),
    }
}
