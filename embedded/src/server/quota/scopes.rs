//! Quota scopes: a quota with `spec.scopes` or `spec.scopeSelector` counts only the pods that
//! meet every scope, as upstream's pod evaluator decides; no object of another kind falls under
//! it. Which limits each scope allows is here too, for the validation of quotas.

use serde_json::Value;

use crate::server::defaults::qos_class;

/// Every scope a quota may name.
pub(crate) const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Pairs of scopes no pod meets together.
pub(crate) const CONFLICTING: [[&str; 2]; 2] =
    [["BestEffort", "NotBestEffort"], ["Terminating", "NotTerminating"]];

/// Whether a quota scoped by `scope` may limit the standard quota resource `name`: the scopes
/// of best-effort pods only their number, the others their number and CPU and memory.
pub(crate) fn allows(scope: &str, name: &str) -> bool {
    let compute =
        ["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];
    match scope {
        "BestEffort" => name == "pods",
        _ if SCOPES.contains(&scope) => name == "pods" || compute.contains(&name),
        _ => true,
    }
}

/// One condition a counted pod must meet: a scope, and for `PriorityClass` how the pod's class
/// compares with `values`.
#[derive(Debug, PartialEq)]
pub(super) struct Requirement<'a> {
    scope: &'a str,
    operator: &'a str,
    values: Vec<&'a str>,
}

/// A quota's requirements: each of `spec.scopes` (as `Exists`) and each expression of
/// `spec.scopeSelector`. None for a quota that counts everything.
pub(super) fn requirements(quota: &Value) -> Vec<Requirement<'_>> {
    fn strings(value: Option<&Value>) -> Vec<&str> {
        let items = value.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        items.iter().filter_map(Value::as_str).collect()
    }
    let listed = strings(quota.pointer("/spec/scopes")).into_iter().map(|scope| Requirement {
        scope,
        operator: "Exists",
        values: Vec::new(),
    });
    let expressions = quota.pointer("/spec/scopeSelector/matchExpressions");
    let selected = expressions.and_then(Value::as_array).into_iter().flatten().map(|e| {
        let text = |field: &str| e.get(field).and_then(Value::as_str).unwrap_or_default();
        Requirement {
            scope: text("scopeName"),
            operator: text("operator"),
            values: strings(e.get("values")),
        }
    });
    listed.chain(selected).collect()
}

/// Whether an object of `group`/`resource` falls under a quota with `requirements`: every
/// object when there are none, else a pod that meets them all.
pub(super) fn matches(
    requirements: &[Requirement],
    group: &str,
    resource: &str,
    object: &Value,
) -> bool {
    if requirements.is_empty() {
        return true;
    }
    let pod = group.is_empty() && resource == "pods";
    pod && requirements.iter().all(|requirement| meets(requirement, object))
}

/// Whether `pod` meets `requirement`. A pod without a priority class meets `PriorityClass`
/// `DoesNotExist` (upstream's evaluator, which compares a label that is always set, never
/// matches it) and `NotIn`; an unknown scope is met by no pod.
fn meets(requirement: &Requirement, pod: &Value) -> bool {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    match requirement.scope {
        "Terminating" => terminating(spec),
        "NotTerminating" => !terminating(spec),
        "BestEffort" => qos_class(spec) == "BestEffort",
        "NotBestEffort" => qos_class(spec) != "BestEffort",
        "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
        "PriorityClass" => {
            let class = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or_default();
            match requirement.operator {
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                "In" => requirement.values.contains(&class),
                "NotIn" => !requirement.values.contains(&class),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a pod has a deadline (`activeDeadlineSeconds`), as upstream's `Terminating` scope
/// means it.
fn terminating(spec: &Value) -> bool {
    spec.get("activeDeadlineSeconds").and_then(Value::as_i64).is_some_and(|s| s >= 0)
}

/// Whether a pod's affinity or anti-affinity to other pods, required or preferred, looks at
/// namespaces other than its own (`namespaces` or a `namespaceSelector`).
fn cross_namespace_affinity(spec: &Value) -> bool {
    let crosses = |term: &Value| {
        let namespaces = term.get("namespaces").and_then(Value::as_array);
        namespaces.is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(affinity) = spec.get("affinity").and_then(|a| a.get(kind)) else {
            return false;
        };
        let list =
            |field: &str| affinity.get(field).and_then(Value::as_array).into_iter().flatten();
        list("requiredDuringSchedulingIgnoredDuringExecution").any(crosses)
            || list("preferredDuringSchedulingIgnoredDuringExecution")
                .filter_map(|weighted| weighted.get("podAffinityTerm"))
                .any(crosses)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn quota(spec: Value) -> Value {
        json!({ "spec": spec })
    }

    fn pod(spec: Value) -> Value {
        let mut spec = spec;
        spec["containers"] = json!([{ "name": "web", "image": "nginx" }]);
        json!({ "spec": spec })
    }

    fn counts(quota: &Value, pod: &Value) -> bool {
        matches(&requirements(quota), "", "pods", pod)
    }

    #[test]
    fn an_unscoped_quota_counts_every_object() {
        let quota = quota(json!({ "hard": { "pods": "1" } }));
        assert!(counts(&quota, &pod(json!({}))));
        assert!(matches(&requirements(&quota), "", "services", &json!({})));
    }

    #[test]
    fn a_scoped_quota_counts_only_pods_that_meet_every_scope() {
        let both = quota(json!({ "scopes": ["Terminating", "BestEffort"] }));
        assert!(counts(&both, &pod(json!({ "activeDeadlineSeconds": 30 }))));
        assert!(!counts(&both, &pod(json!({}))), "no deadline");
        let sized = json!({
            "activeDeadlineSeconds": 30,
            "containers": [{ "name": "web", "resources": { "requests": { "cpu": "1" } } }],
        });
        assert!(!counts(&both, &json!({ "spec": sized })), "not best effort");
        assert!(!matches(&requirements(&both), "", "services", &json!({})));
        let opposite = quota(json!({ "scopes": ["NotTerminating", "NotBestEffort"] }));
        assert!(counts(&opposite, &json!({ "spec": { "containers": sized["containers"] } })));
    }

    #[test]
    fn a_priority_class_selector_compares_the_pod_s_class() {
        let selector = |operator: &str, values: Value| {
            quota(json!({ "scopeSelector": { "matchExpressions": [
                { "scopeName": "PriorityClass", "operator": operator, "values": values },
            ] } }))
        };
        let high = pod(json!({ "priorityClassName": "high" }));
        let none = pod(json!({}));
        let cases = [
            ("In", json!(["high", "mid"]), true, false),
            ("NotIn", json!(["high"]), false, true),
            ("Exists", json!(null), true, false),
            ("DoesNotExist", json!(null), false, true),
        ];
        for (operator, values, with_class, without) in cases {
            let quota = selector(operator, values);
            assert_eq!(counts(&quota, &high), with_class, "{operator} with a class");
            assert_eq!(counts(&quota, &none), without, "{operator} without one");
        }
    }

    #[test]
    fn cross_namespace_affinity_looks_at_other_namespaces() {
        let quota = quota(json!({ "scopes": ["CrossNamespacePodAffinity"] }));
        let term = |extra: Value| {
            let mut term = json!({ "topologyKey": "kubernetes.io/hostname" });
            term.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            term
        };
        let required = |term: Value| {
            pod(json!({ "affinity": { "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
            } } }))
        };
        assert!(counts(&quota, &required(term(json!({ "namespaces": ["other"] })))));
        assert!(!counts(&quota, &required(term(json!({})))));
        let preferred = pod(json!({ "affinity": { "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                { "weight": 1, "podAffinityTerm": term(json!({ "namespaceSelector": {} })) },
            ],
        } } }));
        assert!(counts(&quota, &preferred));
    }

    #[test]
    fn scopes_allow_pod_counts_and_compute() {
        assert!(allows("BestEffort", "pods"));
        assert!(!allows("BestEffort", "requests.cpu"));
        assert!(allows("PriorityClass", "limits.memory"));
        assert!(!allows("NotTerminating", "requests.storage"));
        assert!(!allows("Terminating", "services"));
    }
}
