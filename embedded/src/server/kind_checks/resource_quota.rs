//! A ResourceQuota's spec as upstream validates it: the resources it limits (standard names or
//! qualified ones, amounts not negative, whole numbers for counts), and its scopes (known, not
//! in conflict, each allowing every standard resource the quota limits, selector operators that
//! suit the scope).

use serde_json::Value;

use crate::node::quantity;
use crate::server::errors::Cause;
use crate::server::quota::scopes::{CONFLICTING, SCOPES, allows};

use super::{go_slice, go_strings, invalid};

/// The resource names a quota may limit without qualifying them.
const STANDARD: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// The standard names that count objects.
const COUNTS: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// The causes for refusing a ResourceQuota, each once, in upstream's words.
pub(super) fn resource_quota(quota: &Value) -> Vec<Cause> {
    let hard = quota.pointer("/spec/hard").and_then(Value::as_object);
    let names: Vec<&str> = hard.into_iter().flat_map(|h| h.keys()).map(String::as_str).collect();
    let mut causes = Vec::new();
    for (name, amount) in hard.into_iter().flatten() {
        causes.extend(hard_problem(name, amount.as_str().unwrap_or_default()));
    }
    let scopes = quota.pointer("/spec/scopes");
    let listed: Vec<&str> =
        scopes.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let (path, shown) = ("spec.scopes", go_strings("core.ResourceQuotaScope", scopes));
    for scope in &listed {
        if !SCOPES.contains(scope) {
            causes.push(invalid(path, &shown, "unsupported scope"));
        }
        causes.extend(limits_problem(scope, &names, path, &shown));
    }
    causes.extend(conflict(&listed, path, &shown));

    if let Some(selector) = quota.pointer("/spec/scopeSelector").filter(|s| !s.is_null()) {
        let (path, shown) = ("spec.scopeSelector.matchExpressions", go_scope_selector(selector));
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        let expressions = expressions.map(Vec::as_slice).unwrap_or_default();
        for expression in expressions {
            let scope = text(expression, "scopeName");
            if !SCOPES.contains(&scope) {
                let at = [path, ".scopeName"].concat();
                causes.push(invalid(&at, &format!("{scope:?}"), "unsupported scope"));
            }
            causes.extend(limits_problem(scope, &names, path, &shown));
            causes.extend(expression_problems(expression, path));
        }
        let selected: Vec<&str> = expressions.iter().map(|e| text(e, "scopeName")).collect();
        causes.extend(conflict(&selected, path, &shown));
    }
    let mut unique = Vec::new();
    for cause in causes {
        if !unique.contains(&cause) {
            unique.push(cause);
        }
    }
    unique
}

/// What is wrong with limiting `name` to `amount`.
fn hard_problem(name: &str, amount: &str) -> Option<Cause> {
    let path = format!("spec.hard[{name}]");
    let hugepages = name.starts_with("hugepages-") || name.starts_with("requests.hugepages-");
    if !name.contains('/') && !STANDARD.contains(&name) && !hugepages {
        return Some(invalid(&path, &format!("{name:?}"), "must be a standard resource for quota"));
    }
    let milli = quantity::parse(amount).ok()?;
    if milli < 0 {
        return Some(invalid(&path, &format!("{amount:?}"), "must be greater than or equal to 0"));
    }
    // Counts, and extended resources (qualified, outside kubernetes.io, not `requests.`), are
    // whole numbers.
    let extended =
        name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.");
    if (COUNTS.contains(&name) || extended) && milli % 1000 != 0 {
        return Some(invalid(&path, &format!("{amount:?}"), "must be an integer"));
    }
    None
}

/// A quota scoped by `scope` that limits a standard resource among `names` the scope does not
/// allow; `shown` is how the cause at `path` prints the scopes.
fn limits_problem(scope: &str, names: &[&str], path: &str, shown: &str) -> Option<Cause> {
    let standard = |name: &&&str| STANDARD.contains(name) || name.starts_with("hugepages-");
    let refused = names.iter().filter(standard).any(|name| !allows(scope, name));
    refused.then(|| invalid(path, shown, "unsupported scope applied to resource"))
}

/// Scopes no pod could meet together.
fn conflict(scopes: &[&str], path: &str, shown: &str) -> Option<Cause> {
    let conflicting = CONFLICTING.iter().any(|pair| pair.iter().all(|s| scopes.contains(s)));
    conflicting.then(|| invalid(path, shown, "conflicting scopes"))
}

/// What is wrong with one expression of a quota's scope selector at `path`.
fn expression_problems(expression: &Value, path: &str) -> Vec<Cause> {
    let (scope, operator) = (text(expression, "scopeName"), text(expression, "operator"));
    let values = expression.get("values").and_then(Value::as_array).map_or(0, Vec::len);
    let mut causes = Vec::new();
    let at = |field: &str| [path, ".", field].concat();
    let pod_kind = ["BestEffort", "NotBestEffort", "Terminating", "NotTerminating"];
    if pod_kind.contains(&scope) && operator != "Exists" {
        causes.push(invalid(
            &at("operator"),
            &format!("{operator:?}"),
            "must be 'Exist' only operator when scope is any of ResourceQuotaScopeTerminating, \
             ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and \
             ResourceQuotaScopeNotBestEffort",
        ));
    }
    match operator {
        "In" | "NotIn" if values == 0 => causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: must be at least one value when `operator` is 'In' or \
                      'NotIn' for scope selector"
                .into(),
            field: at("values"),
        }),
        "In" | "NotIn" => {}
        "Exists" | "DoesNotExist" if values > 0 => causes.push(invalid(
            &at("values"),
            &go_strings("string", expression.get("values")),
            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
        )),
        "Exists" | "DoesNotExist" => {}
        _ => causes.push(invalid(
            &at("operator"),
            &format!("{operator:?}"),
            "not a valid selector operator",
        )),
    }
    causes
}

/// A string field of `value`, empty when unset.
fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// A scope selector as Go's `%#v` prints a `core.ScopeSelector`.
fn go_scope_selector(selector: &Value) -> String {
    let kind = "core.ScopedResourceSelectorRequirement";
    let expressions = go_slice(kind, selector.get("matchExpressions"), |e| {
        format!(
            "{kind}{{ScopeName:{:?}, Operator:{:?}, Values:{}}}",
            text(e, "scopeName"),
            text(e, "operator"),
            go_strings("string", e.get("values"))
        )
    });
    format!("core.ScopeSelector{{MatchExpressions:{expressions}}}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(spec: Value) -> Vec<String> {
        let causes = resource_quota(&json!({ "spec": spec }));
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn limits_are_standard_names_or_qualified_and_not_negative() {
        let spec = json!({ "hard": {
            "pods": "10", "count/deployments.apps": "3", "requests.nvidia.com/gpu": "2",
            "hugepages-2Mi": "1Gi", "requests.cpu": "1500m",
        } });
        assert!(messages(spec).is_empty());
        assert_eq!(
            messages(json!({ "hard": { "widgets": "1", "memory": "-1Gi", "pods": "1500m" } })),
            [
                "spec.hard[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
                "spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource for quota",
            ]
        );
    }

    #[test]
    fn scopes_are_known_compatible_and_allow_what_the_quota_limits() {
        let ok =
            json!({ "hard": { "pods": "5", "requests.cpu": "2" }, "scopes": ["NotBestEffort"] });
        assert!(messages(ok).is_empty());
        assert_eq!(
            messages(json!({ "hard": { "pods": "5" }, "scopes": ["Sometimes"] })),
            [
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Sometimes\"}: unsupported scope"
            ]
        );
        assert_eq!(
            messages(json!({ "hard": { "pods": "5", "requests.cpu": "1", "services": "1" },
                             "scopes": ["BestEffort"] })),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported \
              scope applied to resource"]
        );
        assert_eq!(
            messages(
                json!({ "hard": { "pods": "5" }, "scopes": ["Terminating", "NotTerminating"] })
            ),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Terminating\", \
              \"NotTerminating\"}: conflicting scopes"]
        );
        // Counts of other kinds and extended resources are not refused, as upstream.
        let counts = json!({ "hard": { "count/pods": "5" }, "scopes": ["BestEffort"] });
        assert!(messages(counts).is_empty());
    }

    #[test]
    fn a_scope_selector_s_operators_suit_its_scopes() {
        let selector = |expressions: Value| json!({ "hard": { "pods": "5" }, "scopeSelector": { "matchExpressions": expressions } });
        let ok = selector(json!([
            { "scopeName": "PriorityClass", "operator": "In", "values": ["high"] },
            { "scopeName": "NotTerminating", "operator": "Exists" },
        ]));
        assert!(messages(ok).is_empty());
        let path = "spec.scopeSelector.matchExpressions";
        assert_eq!(
            messages(selector(json!([
                { "scopeName": "BestEffort", "operator": "In" },
                { "scopeName": "PriorityClass", "operator": "Exists", "values": ["x"] },
                { "scopeName": "Weekly", "operator": "Equals" },
            ]))),
            [
                format!(
                    "{path}.operator: Invalid value: \"In\": must be 'Exist' only operator when \
                         scope is any of ResourceQuotaScopeTerminating, \
                         ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and \
                         ResourceQuotaScopeNotBestEffort"
                ),
                format!(
                    "{path}.values: Required value: must be at least one value when \
                         `operator` is 'In' or 'NotIn' for scope selector"
                ),
                format!(
                    "{path}.values: Invalid value: []string{{\"x\"}}: must be no value when \
                         `operator` is 'Exist' or 'DoesNotExist' for scope selector"
                ),
                format!("{path}.scopeName: Invalid value: \"Weekly\": unsupported scope"),
                format!(
                    "{path}.operator: Invalid value: \"Equals\": not a valid selector operator"
                ),
            ]
        );
        let storage = json!({ "hard": { "requests.storage": "1Gi" }, "scopeSelector": {
            "matchExpressions": [{ "scopeName": "PriorityClass", "operator": "Exists" }],
        } });
        assert_eq!(
            messages(storage),
            [format!(
                "{path}: Invalid value: core.ScopeSelector{{MatchExpressions:[]core.\
                 ScopedResourceSelectorRequirement{{core.ScopedResourceSelectorRequirement{{\
                 ScopeName:\"PriorityClass\", Operator:\"Exists\", Values:[]string(nil)}}}}}}: \
                 unsupported scope applied to resource"
            )]
        );
    }
}
