//! The roles and bindings every cluster starts with, under upstream's names, so that manifests
//! and `kubectl create rolebinding --clusterrole=view` mean here what they mean there:
//! `cluster-admin` (bound to `system:masters`), the user-facing `admin`, `edit` and `view`
//! (aggregated from the `system:aggregate-to-*` roles, so that a CRD's own roles can add to them),
//! and what every authenticated user may do: discovery, health, version, and reviews of itself.
//! They are created when missing, never overwritten: changes made to them are kept.

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};

use crate::catalog::builtin_resource;
use crate::storage::{Store, StoreError};

use super::super::users::{AUTHENTICATED, MASTERS};
use super::super::write::create_missing;
use super::GROUP;

/// Verbs that read.
const READ: [&str; 3] = ["get", "list", "watch"];
/// Verbs that write.
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

/// The label selecting roles aggregated into `admin`, `edit` or `view`.
fn aggregate_label(into: &str) -> String {
    format!("{GROUP}/aggregate-to-{into}")
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({ "apiGroups": groups, "resources": resources, "verbs": verbs })
}

fn paths(urls: &[&str], verbs: &[&str]) -> Value {
    json!({ "nonResourceURLs": urls, "verbs": verbs })
}

/// Every permission there is: what `cluster-admin` holds.
fn everything_json() -> Vec<Value> {
    vec![rule(&["*"], &["*"], &["*"]), paths(&["*"], &["*"])]
}

/// Every permission there is, as rules.
pub(super) fn everything() -> Vec<PolicyRule> {
    everything_json().into_iter().filter_map(|r| serde_json::from_value(r).ok()).collect()
}

/// Resources and their `status` subresources.
fn with_status(resources: &[&str]) -> Vec<String> {
    resources.iter().flat_map(|r| [r.to_string(), format!("{r}/status")]).collect()
}

fn view_rules() -> Vec<Value> {
    let core = [
        "configmaps",
        "endpoints",
        "events",
        "limitranges",
        "namespaces",
        "persistentvolumeclaims",
        "pods",
        "pods/log",
        "replicationcontrollers",
        "replicationcontrollers/scale",
        "resourcequotas",
        "serviceaccounts",
        "services",
    ];
    let mut core: Vec<String> = core.iter().map(|r| r.to_string()).collect();
    core.extend(with_status(&["namespaces", "persistentvolumeclaims", "pods", "services"]));
    let apps = ["daemonsets", "deployments", "replicasets", "statefulsets"];
    let mut apps = with_status(&apps);
    apps.extend(
        ["controllerrevisions", "deployments/scale", "replicasets/scale", "statefulsets/scale"]
            .map(String::from),
    );
    vec![
        json!({ "apiGroups": [""], "resources": core, "verbs": READ }),
        json!({ "apiGroups": ["apps"], "resources": apps, "verbs": READ }),
        json!({ "apiGroups": ["autoscaling"], "resources": with_status(&["horizontalpodautoscalers"]), "verbs": READ }),
        json!({ "apiGroups": ["batch"], "resources": with_status(&["cronjobs", "jobs"]), "verbs": READ }),
        json!({ "apiGroups": ["policy"], "resources": with_status(&["poddisruptionbudgets"]), "verbs": READ }),
        json!({ "apiGroups": ["networking.k8s.io"], "resources": with_status(&["ingresses", "networkpolicies"]), "verbs": READ }),
        rule(&["discovery.k8s.io"], &["endpointslices"], &READ),
        rule(&["events.k8s.io"], &["events"], &READ),
    ]
}

fn edit_rules() -> Vec<Value> {
    vec![
        rule(
            &[""],
            &[
                "secrets",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "services/proxy",
            ],
            &READ,
        ),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
            &WRITE,
        ),
        rule(&[""], &["pods/eviction", "serviceaccounts/token"], &["create"]),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
            &WRITE,
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], &WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], &WRITE),
        rule(&["networking.k8s.io"], &["ingresses", "networkpolicies"], &WRITE),
        rule(&["policy"], &["poddisruptionbudgets"], &WRITE),
        rule(&["discovery.k8s.io"], &["endpointslices"], &WRITE),
        rule(&["events.k8s.io"], &["events"], &WRITE),
    ]
}

fn admin_rules() -> Vec<Value> {
    let mut all = READ.to_vec();
    all.extend(WRITE);
    vec![
        rule(&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]),
        rule(&[GROUP], &["rolebindings", "roles"], &all),
    ]
}

/// A ClusterRole with upstream's bootstrap label and annotation.
fn cluster_role(name: &str, labels: Value, rules: Vec<Value>) -> Value {
    let mut labels = labels;
    labels["kubernetes.io/bootstrapping"] = json!("rbac-defaults");
    json!({
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
        },
        "rules": rules,
    })
}

/// A ClusterRole whose rules are those of the roles labelled to aggregate into `into`.
fn aggregated(name: &str, labels: Value) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] =
        json!({ "clusterRoleSelectors": [{ "matchLabels": { aggregate_label(name): "true" } }] });
    role
}

/// The default ClusterRoles.
fn cluster_roles() -> Vec<Value> {
    let labelled = |into: &str| json!({ aggregate_label(into): "true" });
    vec![
        cluster_role("cluster-admin", json!({}), everything_json()),
        aggregated("admin", json!({})),
        aggregated("edit", labelled("admin")),
        aggregated("view", labelled("edit")),
        cluster_role("system:aggregate-to-admin", labelled("admin"), admin_rules()),
        cluster_role("system:aggregate-to-edit", labelled("edit"), edit_rules()),
        cluster_role("system:aggregate-to-view", labelled("view"), view_rules()),
        // Under metrics-server's name: reading resource metrics (`kubectl top`) is viewing.
        cluster_role(
            "system:aggregated-metrics-reader",
            labelled("view"),
            vec![rule(&["metrics.k8s.io"], &["pods", "nodes"], &READ)],
        ),
        cluster_role(
            "system:discovery",
            json!({}),
            vec![paths(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:basic-user",
            json!({}),
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ],
        ),
        cluster_role(
            "system:monitoring",
            json!({}),
            vec![paths(
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/readyz",
                    "/readyz/*",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            json!({}),
            vec![paths(&["/healthz", "/livez", "/readyz", "/version", "/version/"], &["get"])],
        ),
    ]
}

/// The default ClusterRoleBindings: each binds the ClusterRole of its name to groups.
fn cluster_role_bindings() -> Vec<Value> {
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({ "kind": "Group", "apiGroup": GROUP, "name": g }))
            .collect();
        json!({
            "metadata": {
                "name": name,
                "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
                "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" },
            },
            "roleRef": { "apiGroup": GROUP, "kind": "ClusterRole", "name": name },
            "subjects": subjects,
        })
    };
    vec![
        binding("cluster-admin", &[MASTERS]),
        binding("system:discovery", &[AUTHENTICATED]),
        binding("system:basic-user", &[AUTHENTICATED]),
        binding("system:public-info-viewer", &[AUTHENTICATED, "system:unauthenticated"]),
        binding("system:monitoring", &["system:monitoring"]),
    ]
}

/// Creates each default role and binding that is missing.
pub(crate) async fn ensure_defaults(store: &Store) -> Result<(), StoreError> {
    let kinds =
        [("clusterroles", cluster_roles()), ("clusterrolebindings", cluster_role_bindings())];
    for (resource, objects) in kinds {
        let info = builtin_resource(GROUP, resource).expect("RBAC kinds are built in");
        for object in objects {
            create_missing(store, info, None, object, None).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_rule_reads_as_a_policy_rule() {
        for role in cluster_roles() {
            let rules: Vec<PolicyRule> = serde_json::from_value(role["rules"].clone()).unwrap();
            let name = &role["metadata"]["name"];
            let aggregated = role.get("aggregationRule").is_some();
            assert_eq!(rules.is_empty(), aggregated, "{name}: rules come from aggregation");
        }
        assert_eq!(everything().len(), 2);
    }

    #[test]
    fn each_default_binding_names_a_default_role() {
        let roles: Vec<Value> =
            cluster_roles().into_iter().map(|r| r["metadata"]["name"].clone()).collect();
        for binding in cluster_role_bindings() {
            assert!(roles.contains(&binding["roleRef"]["name"]), "{binding}");
        }
    }
}
