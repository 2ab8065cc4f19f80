//! ClusterRoles that add Keelson's kinds to Kubernetes' user-facing roles by aggregation: whoever
//! is bound to `view` may read them, to `edit` (or `admin`) also write them, as with Deployments.
//! Status stays the controllers' to write.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ObjectMeta;

use crate::all_crds;

/// The label by which Kubernetes' `view`, `edit` and `admin` roles select what they aggregate.
fn aggregate_to(role: &str) -> BTreeMap<String, String> {
    let key = format!("rbac.authorization.k8s.io/aggregate-to-{role}");
    BTreeMap::from([(key, "true".to_owned())])
}

/// Whether any served version of `crd` has the subresource `name` (`status`, `scale`).
fn has_subresource(crd: &CustomResourceDefinition, name: &str) -> bool {
    crd.spec.versions.iter().filter_map(|v| v.subresources.as_ref()).any(|s| match name {
        "status" => s.status.is_some(),
        _ => s.scale.is_some(),
    })
}

/// One rule per Keelson group: `verbs` on each CRD's resource and the `subresources` it has.
fn rules(verbs: &[&str], subresources: &[&str]) -> Vec<PolicyRule> {
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for crd in all_crds() {
        let plural = &crd.spec.names.plural;
        let resources = by_group.entry(crd.spec.group.clone()).or_default();
        resources.push(plural.clone());
        for sub in subresources.iter().filter(|sub| has_subresource(&crd, sub)) {
            resources.push(format!("{plural}/{sub}"));
        }
    }
    by_group
        .into_iter()
        .map(|(group, resources)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(resources),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        })
        .collect()
}

/// `keelson-aggregate-to-view` (read every Keelson kind and its status) and
/// `keelson-aggregate-to-edit` (write every Keelson kind and its scale).
pub fn aggregated_cluster_roles() -> Vec<ClusterRole> {
    let role = |name: &str, into: &str, rules: Vec<PolicyRule>| ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(aggregate_to(into)),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        aggregation_rule: None,
    };
    let write = ["create", "delete", "deletecollection", "patch", "update"];
    vec![
        role(
            "keelson-aggregate-to-view",
            "view",
            rules(&["get", "list", "watch"], &["status", "scale"]),
        ),
        role("keelson-aggregate-to-edit", "edit", rules(&write, &["scale"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_reads_and_edit_writes_every_keelson_kind() {
        let roles = aggregated_cluster_roles();
        let resources = |role: &ClusterRole| -> Vec<String> {
            role.rules
                .iter()
                .flatten()
                .flat_map(|r| r.resources.clone().unwrap_or_default())
                .collect()
        };
        let (view, edit) = (resources(&roles[0]), resources(&roles[1]));
        for crd in all_crds() {
            let plural = &crd.spec.names.plural;
            assert!(view.contains(plural) && edit.contains(plural), "{plural}");
        }
        assert!(view.contains(&"modeldeployments/status".to_owned()));
        assert!(edit.contains(&"modeldeployments/scale".to_owned()));
        assert!(!edit.iter().any(|r| r.ends_with("/status")), "status is the controllers'");
        let groups: Vec<String> =
            roles[0].rules.iter().flatten().flat_map(|r| r.api_groups.clone().unwrap()).collect();
        assert_eq!(
            groups,
            ["integration.keelson.dev", "serving.keelson.dev", "workflows.keelson.dev"]
        );
    }
}
