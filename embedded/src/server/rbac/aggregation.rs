//! ClusterRole aggregation, as kube-controller-manager's aggregation controller does it: a
//! ClusterRole with an `aggregationRule` gets, as its rules, the rules of every other ClusterRole
//! its selectors match (by name, without repeats). So `edit` grows when a CRD's installer adds a
//! role labelled `rbac.authorization.k8s.io/aggregate-to-edit: "true"`.

use k8s_openapi::api::rbac::v1::{AggregationRule, PolicyRule};
use serde_json::Value;

use crate::selectors::LabelSelector;
use crate::storage::{Store, StoreError, WriteOp};

use super::super::objects::meta_str;
use super::{CLUSTER_ROLES, field};

/// The rules each aggregated role should have, where they differ from what it has: `(key,
/// rules)`. `roles` are every ClusterRole as `(key, object)`, in key (so name) order.
pub(crate) fn plan(roles: &[(&str, &Value)]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut changes = Vec::new();
    for (key, role) in roles {
        let Some(rule) = field::<AggregationRule>(role, "aggregationRule") else { continue };
        let selectors: Vec<LabelSelector> = rule
            .cluster_role_selectors
            .iter()
            .flatten()
            .filter_map(|s| LabelSelector::from_metav1(s).ok())
            .collect();
        let mut rules: Vec<PolicyRule> = Vec::new();
        for (other_key, other) in roles {
            if other_key == key || !selectors.iter().any(|s| s.matches_object(other)) {
                continue;
            }
            for rule in field::<Vec<PolicyRule>>(other, "rules").unwrap_or_default() {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        let current: Vec<PolicyRule> = field(role, "rules").unwrap_or_default();
        if current != rules {
            changes.push((key.to_string(), rules));
        }
    }
    changes
}

/// Writes the rules of aggregated roles whenever a ClusterRole changes, until the store shuts
/// down. One write may make another (`view` is aggregated into `edit`, `edit` into `admin`):
/// each is a change the next pass sees.
pub(crate) fn spawn(store: Store) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            // Watched from before the pass, so that the pass's own writes bring another one.
            let Ok(mut watch) = store.watch(CLUSTER_ROLES, store.revision()) else { return };
            // A failed write is retried by the pass the next change (or a restart) brings.
            let _ = pass(&store).await;
            loop {
                match watch.next().await {
                    Some(Ok(_)) => {
                        let _ = pass(&store).await;
                    }
                    Some(Err(StoreError::Compacted { .. })) => break,
                    Some(Err(_)) | None => return,
                }
            }
        }
    })
}

/// Aggregates until nothing changes (`view` into `edit` into `admin` takes a pass each), so
/// that the roles are whole before the server takes its first request.
pub(crate) async fn converge(store: &Store) -> Result<(), StoreError> {
    // Each pass completes at least one more level; a chain is never this deep.
    for _ in 0..16 {
        if !pass(store).await? {
            break;
        }
    }
    Ok(())
}

/// Plans from the current ClusterRoles and writes what changed; whether anything did.
async fn pass(store: &Store) -> Result<bool, StoreError> {
    let snapshot = store.list(CLUSTER_ROLES);
    let roles: Vec<(&str, &Value)> =
        snapshot.entries().map(|e| (e.key.as_str(), &*e.object)).collect();
    let changes = plan(&roles);
    let changed = !changes.is_empty();
    for (key, rules) in changes {
        let Some(current) = snapshot.get(&key) else { continue };
        if meta_str(&current.object, "deletionTimestamp").is_some() {
            continue;
        }
        let mut object = Value::clone(&current.object);
        object["rules"] = serde_json::to_value(rules).unwrap_or_default();
        store.write(WriteOp::Update { key, expected_revision: current.revision, object }).await?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role(name: &str, labels: Value, rules: Value, aggregate: Option<&str>) -> Value {
        let mut role = json!({ "metadata": { "name": name, "labels": labels }, "rules": rules });
        if let Some(label) = aggregate {
            role["aggregationRule"] =
                json!({ "clusterRoleSelectors": [{ "matchLabels": { label: "true" } }] });
        }
        role
    }

    #[test]
    fn an_aggregated_role_gets_the_rules_of_the_roles_it_selects_once_each() {
        let read = json!({ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] });
        let write = json!({ "apiGroups": [""], "resources": ["pods"], "verbs": ["create"] });
        let roles = [
            role("edit", json!({}), json!([]), Some("to-edit")),
            role("a", json!({ "to-edit": "true" }), json!([read, write]), None),
            role("b", json!({ "to-edit": "true" }), json!([read]), None),
            role(
                "c",
                json!({}),
                json!([{ "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] }]),
                None,
            ),
        ];
        let keys = ["/edit", "/a", "/b", "/c"];
        let listed: Vec<(&str, &Value)> = keys.iter().copied().zip(roles.iter()).collect();
        let changes = plan(&listed);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].0, "/edit");
        let rules = serde_json::to_value(&changes[0].1).unwrap();
        assert_eq!(rules, json!([read, write]));

        // Once written, nothing is left to do.
        let mut edit = roles[0].clone();
        edit["rules"] = rules;
        let listed: Vec<(&str, &Value)> =
            vec![("/edit", &edit), ("/a", &roles[1]), ("/b", &roles[2]), ("/c", &roles[3])];
        assert!(plan(&listed).is_empty());
    }
}
