//! ControllerRevisions: the pod templates a StatefulSet or DaemonSet has rolled out, numbered
//! in the order they were last rolled out, so that `kubectl rollout history` lists them and
//! `kubectl rollout undo` patches one back. As upstream, a revision's data is the strategic
//! merge patch `{"spec":{"template":{…,"$patch":"replace"}}}`, and rolling back to a template
//! gives its revision the next number instead of making a new one.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

use super::daemonset::REVISION_HASH_LABEL;
use crate::node::pods;

/// The workload whose history this is.
pub struct Owner<'a> {
    /// `apps/v1`.
    pub api_version: &'a str,
    /// `StatefulSet` or `DaemonSet`.
    pub kind: &'a str,
    /// The workload's metadata (name, namespace, uid, annotations).
    pub meta: &'a ObjectMeta,
    /// Its pod template, as it is now.
    pub template: &'a PodTemplateSpec,
    /// `spec.revisionHistoryLimit`: how many revisions no pod runs are kept.
    pub limit: i32,
}

/// What to change in a workload's history.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryPlan {
    /// The revision of the current template, when there is none yet.
    pub create: Option<ControllerRevision>,
    /// A revision to give a new number: the current template's, rolled back to.
    pub renumber: Option<(String, i64)>,
    /// Old revisions beyond the history limit, oldest first.
    pub delete: Vec<String>,
}

/// The name of the revision of `hash` (the template hash) of `owner`: `<owner>-<hash>`.
pub fn revision_name(owner: &ObjectMeta, hash: &str) -> String {
    format!("{}-{hash}", owner.name.as_deref().unwrap_or_default())
}

/// Plans the history of `owner` given the revisions it controls; `live` names the revisions
/// that are still in use (by pods or the status), which are never deleted.
pub fn plan_history(
    owner: &Owner<'_>,
    existing: &[ControllerRevision],
    live: &[String],
) -> HistoryPlan {
    let hash = pods::template_hash(owner.template);
    let name = revision_name(owner.meta, &hash);
    let newest = existing.iter().map(|r| r.revision).max().unwrap_or(0);
    let mut plan = HistoryPlan::default();
    match existing.iter().find(|r| r.metadata.name.as_deref() == Some(name.as_str())) {
        Some(current) if current.revision < newest => {
            plan.renumber = Some((name.clone(), newest + 1));
        }
        Some(_) => {}
        None => plan.create = Some(revision(owner, &name, &hash, newest + 1)),
    }
    let mut old: Vec<&ControllerRevision> = existing
        .iter()
        .filter(|r| {
            let n = r.metadata.name.as_deref().unwrap_or_default();
            n != name && !live.iter().any(|l| l == n)
        })
        .collect();
    old.sort_by_key(|r| r.revision);
    let surplus = old.len().saturating_sub(usize::try_from(owner.limit.max(0)).unwrap_or(0));
    plan.delete = old.into_iter().take(surplus).filter_map(|r| r.metadata.name.clone()).collect();
    plan
}

/// The pod template a revision holds (without the empty `resources` `go_encoded` wrote).
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision.data.as_ref()?.0.pointer("/spec/template")?.clone();
    template.as_object_mut()?.remove("$patch");
    let mut template: PodTemplateSpec = serde_json::from_value(template).ok()?;
    pods::drop_empty_resources(&mut template);
    Some(template)
}

/// A pod template as Go's encoding writes it, which also writes the fields its types never
/// leave out: the template's `creationTimestamp` (`null`) and each container's `resources`.
/// `kubectl rollout undo` compares a revision's data with the live template so encoded, byte
/// for byte, to tell a rollback to the current template from a real one.
fn go_encoded(template: &PodTemplateSpec) -> serde_json::Value {
    let mut template = serde_json::to_value(template).unwrap_or_default();
    let Some(map) = template.as_object_mut() else { return template };
    let metadata = map.entry("metadata").or_insert_with(|| serde_json::json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.entry("creationTimestamp").or_insert(serde_json::Value::Null);
    }
    for list in ["containers", "initContainers"] {
        let containers = map.get_mut("spec").and_then(|s| s.get_mut(list));
        for container in containers.and_then(|c| c.as_array_mut()).into_iter().flatten() {
            if let Some(container) = container.as_object_mut() {
                container.entry("resources").or_insert_with(|| serde_json::json!({}));
            }
        }
    }
    template
}

fn revision(owner: &Owner<'_>, name: &str, hash: &str, number: i64) -> ControllerRevision {
    let mut template = go_encoded(owner.template);
    if let Some(map) = template.as_object_mut() {
        map.insert("$patch".into(), "replace".into());
    }
    let mut labels =
        owner.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(REVISION_HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: owner.meta.namespace.clone(),
            labels: Some(labels),
            // As upstream: the workload's annotations, so `kubernetes.io/change-cause` shows.
            annotations: owner.meta.annotations.clone(),
            owner_references: Some(vec![pods::controller_reference(
                owner.api_version,
                owner.kind,
                owner.meta,
            )]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(serde_json::json!({ "spec": { "template": template } }))),
        revision: number,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use serde_json::{Value, json};

    use super::*;

    fn template(image: &str) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("app".to_owned(), "db".to_owned())].into()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "db".into(),
                    image: Some(image.into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }
    }

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("db".into()),
            namespace: Some("ns".into()),
            uid: Some("set-uid".into()),
            annotations: Some([("kubernetes.io/change-cause".to_owned(), "v2".to_owned())].into()),
            ..ObjectMeta::default()
        }
    }

    fn owner<'a>(meta: &'a ObjectMeta, template: &'a PodTemplateSpec, limit: i32) -> Owner<'a> {
        Owner { api_version: "apps/v1", kind: "StatefulSet", meta, template, limit }
    }

    fn stored(image: &str, number: i64) -> ControllerRevision {
        let meta = meta();
        let template = template(image);
        plan_history(&owner(&meta, &template, 10), &[], &[])
            .create
            .map(|mut r| {
                r.revision = number;
                r
            })
            .unwrap()
    }

    #[test]
    fn a_new_template_gets_the_next_revision_with_a_replacing_patch() {
        let (meta, template) = (meta(), template("postgres:17"));
        let existing = [stored("postgres:16", 1)];
        let plan = plan_history(&owner(&meta, &template, 10), &existing, &[]);
        let created = plan.create.expect("a revision for the new template");
        assert_eq!(created.revision, 2);
        let hash = pods::template_hash(&template);
        assert_eq!(created.metadata.name, Some(format!("db-{hash}")));
        assert_eq!(created.metadata.labels.as_ref().unwrap()[REVISION_HASH_LABEL], hash);
        assert_eq!(
            created.metadata.annotations.as_ref().unwrap()["kubernetes.io/change-cause"],
            "v2"
        );
        let owner = &created.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("StatefulSet", "set-uid"));
        let data = created.data.unwrap().0;
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        // As Go writes a template: kubectl compares the bytes.
        assert_eq!(data["spec"]["template"]["metadata"]["creationTimestamp"], Value::Null);
        assert!(data["spec"]["template"]["metadata"].get("creationTimestamp").is_some());
        assert_eq!(data["spec"]["template"]["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(data["spec"]["template"]["spec"]["containers"][0]["image"], "postgres:17");
        assert!(plan.renumber.is_none() && plan.delete.is_empty());
    }

    #[test]
    fn a_revision_gives_back_the_template_it_holds() {
        assert_eq!(template_of(&stored("postgres:16", 1)), Some(template("postgres:16")));
        let empty = ControllerRevision { data: None, ..stored("postgres:16", 1) };
        assert_eq!(template_of(&empty), None);
    }

    #[test]
    fn rolling_back_renumbers_the_old_revision_and_nothing_changes_after() {
        let (meta, template) = (meta(), template("postgres:16"));
        let existing = [stored("postgres:16", 1), stored("postgres:17", 2)];
        let plan = plan_history(&owner(&meta, &template, 10), &existing, &[]);
        assert!(plan.create.is_none());
        let name = existing[0].metadata.name.clone().unwrap();
        assert_eq!(plan.renumber, Some((name, 3)));
        let steady = [stored("postgres:16", 3), stored("postgres:17", 2)];
        assert_eq!(
            plan_history(&owner(&meta, &template, 10), &steady, &[]),
            HistoryPlan::default()
        );
    }

    #[test]
    fn the_oldest_unused_revisions_beyond_the_limit_go() {
        let (meta, template) = (meta(), template("v4"));
        let existing = [stored("v1", 1), stored("v2", 2), stored("v3", 3), stored("v4", 4)];
        let in_use = existing[1].metadata.name.clone().unwrap();
        let plan = plan_history(&owner(&meta, &template, 1), &existing, &[in_use]);
        // v4 is current, v2 in use, one of the rest kept: v1 goes.
        assert_eq!(plan.delete, [existing[0].metadata.name.clone().unwrap()]);
    }
}
