//! Admission checks of Keelson's custom resources that an OpenAPI schema with CEL rules cannot
//! express: graph shape of flows and plans, cron expressions and time zones, uniqueness inside
//! lists, GPU quantities.
//!
//! Every check is a pure function: no I/O and no clock. The embedded API server runs them in
//! process after schema validation, and a real cluster runs them through the HTTPS admission
//! webhook; both call [`check`], which dispatches on group and kind. The typed functions of each
//! module ([`flow`], [`schedule`], [`serving`], [`integration`], and [`graph`] beneath flows and
//! runs) can be called directly, e.g. by controllers that hold typed objects.
//!
//! Each check returns every [`Problem`] it finds, not just the first, each with the full path of
//! the field at fault from the object root (`spec.edges[2].to`).

pub mod flow;
pub mod graph;
pub mod integration;
pub mod schedule;
pub mod serving;

use keelson_api_crds::{integration as integ, serving as serv, workflows as wf};
use serde_json::Value;

/// One problem with a resource, with the full path of the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Path of the field at fault from the object root, `[i]` for list items, e.g.
    /// `spec.edges[2].to`.
    pub field: String,
    /// What is wrong, for a person to read, e.g. `edge refers to node "c", which does not exist`.
    pub message: String,
}

impl Problem {
    /// A problem at `field` (a path from the object root) with `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for Problem {}

/// The `(group, kind)` pairs [`check`] has checks for. Other Keelson kinds need nothing beyond
/// their schema, so an admission webhook only has to be registered for these.
pub const CHECKED_KINDS: &[(&str, &str)] = &[
    (integ::GROUP, "IntegrationSession"),
    (serv::GROUP, "ModelAutotune"),
    (serv::GROUP, "ModelDeployment"),
    (serv::GROUP, "ModelRouting"),
    (wf::GROUP, "Flow"),
    (wf::GROUP, "Run"),
    (wf::GROUP, "Schedule"),
];

/// Checks an object of any Keelson kind, in its serde_json form as stored, returning every
/// problem found; an empty vec admits it.
///
/// `old` is the stored object on an update and `None` on a create. Updates ratchet: an update
/// that leaves `spec` as it was is admitted whatever the checks say (so metadata-only changes,
/// such as removing a finalizer, always go through), and for kinds whose spec is immutable but
/// for a few fields (Run, Schedule), checks of fields the update leaves unchanged are skipped, so
/// an object admitted under older rules can still be suspended or approved.
///
/// An unknown group or kind, or a kind with no checks, gives an empty vec. An object whose
/// `spec` does not deserialize into its type gives one problem at `spec` (schema validation runs
/// first, so that should not happen).
pub fn check(group: &str, kind: &str, object: &Value, old: Option<&Value>) -> Vec<Problem> {
    if !CHECKED_KINDS.contains(&(group, kind)) {
        return Vec::new();
    }
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.and_then(|old| old.get("spec"));
    if old_spec == Some(spec) {
        return Vec::new();
    }
    match kind {
        "Flow" => typed(kind, spec, |s| flow::check_flow(&s)),
        "Run" => typed(kind, spec, |s| flow::check_run(&s, parse_old(old_spec).as_ref())),
        "Schedule" => {
            typed(kind, spec, |s| schedule::check_schedule(&s, parse_old(old_spec).as_ref()))
        }
        "ModelDeployment" => {
            let name = object.pointer("/metadata/name").and_then(Value::as_str);
            typed(kind, spec, |s| serving::check_model_deployment(name, &s))
        }
        "ModelAutotune" => typed(kind, spec, |s| serving::check_model_autotune(&s)),
        "ModelRouting" => typed(kind, spec, |s| serving::check_model_routing(&s)),
        "IntegrationSession" => typed(kind, spec, |s| integration::check_integration_session(&s)),
        _ => Vec::new(),
    }
}

/// Deserializes `spec` into `S` and runs `run` on it, or reports why it does not deserialize.
fn typed<S: serde::de::DeserializeOwned>(
    kind: &str,
    spec: &Value,
    run: impl FnOnce(S) -> Vec<Problem>,
) -> Vec<Problem> {
    match S::deserialize(spec) {
        Ok(spec) => run(spec),
        Err(error) => {
            vec![Problem::new("spec", format!("spec is not a valid {kind} spec: {error}"))]
        }
    }
}

/// The old spec, typed; `None` when there is none or it does not deserialize.
fn parse_old<S: serde::de::DeserializeOwned>(old_spec: Option<&Value>) -> Option<S> {
    old_spec.and_then(|spec| S::deserialize(spec).ok())
}

/// Whether `name` is a C identifier, `^[A-Za-z_][A-Za-z0-9_]*$`, as parameter names must be.
pub fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Problems with the keys of a parameter map at `path` (e.g. `spec.parameters`): each key must
/// be a C identifier. Keys in `skip` are not checked (ratcheting).
pub(crate) fn check_parameter_keys<'a>(
    path: &str,
    keys: impl IntoIterator<Item = &'a String>,
    skip: impl Fn(&str) -> bool,
) -> Vec<Problem> {
    keys.into_iter()
        .filter(|key| !is_c_identifier(key) && !skip(key))
        .map(|key| {
            Problem::new(
                format!("{path}.{key}"),
                format!(
                    "parameter name \"{key}\" is not a C identifier: use letters, digits and \
                     underscores, not starting with a digit"
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn display_names_the_field_then_the_message() {
        let problem = Problem::new("spec.edges[2].to", "node \"c\" does not exist");
        assert_eq!(problem.to_string(), "spec.edges[2].to: node \"c\" does not exist");
    }

    #[test]
    fn c_identifiers() {
        for good in ["a", "_", "A_1", "region", "_x9"] {
            assert!(is_c_identifier(good), "{good}");
        }
        for bad in ["", "1a", "a-b", "a.b", "é", "a b"] {
            assert!(!is_c_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn every_checked_kind_is_a_keelson_crd() {
        let crds: Vec<(String, String)> = keelson_api_crds::all_crds()
            .into_iter()
            .map(|crd| (crd.spec.group, crd.spec.names.kind))
            .collect();
        for (group, kind) in CHECKED_KINDS {
            assert!(
                crds.contains(&(group.to_string(), kind.to_string())),
                "{group}/{kind} is not a CRD"
            );
        }
    }

    fn flow(edges: Value) -> Value {
        json!({
            "apiVersion": "workflows.keelson.dev/v1alpha1",
            "kind": "Flow",
            "metadata": {"name": "f", "namespace": "default"},
            "spec": {
                "nodes": [
                    {"id": "a", "agent": {"agentRef": "summarizer"}},
                    {"id": "b", "gate": {}},
                ],
                "edges": edges,
            },
        })
    }

    #[test]
    fn dispatches_a_flow_with_a_dangling_edge() {
        let object = flow(json!([{"from": "a", "to": "c"}]));
        assert_eq!(
            check(wf::GROUP, "Flow", &object, None),
            vec![Problem::new(
                "spec.edges[0].to",
                "edge refers to node \"c\", which does not exist"
            )]
        );
    }

    #[test]
    fn dispatches_a_valid_flow_with_no_problem() {
        let object = flow(json!([{"from": "a", "to": "b"}]));
        assert_eq!(check(wf::GROUP, "Flow", &object, None), vec![]);
    }

    #[test]
    fn unknown_or_unchecked_kinds_give_nothing() {
        let object = flow(json!([{"from": "a", "to": "c"}]));
        assert_eq!(check("example.com", "Flow", &object, None), vec![]);
        assert_eq!(check(wf::GROUP, "Widget", &object, None), vec![]);
        assert_eq!(check(wf::GROUP, "Agent", &json!({"spec": 1}), None), vec![]);
    }

    #[test]
    fn a_spec_that_does_not_deserialize_is_one_problem_at_spec() {
        let problems = check(wf::GROUP, "Flow", &json!({"spec": {"nodes": "a"}}), None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].field, "spec");
        assert!(problems[0].message.starts_with("spec is not a valid Flow spec: "), "{problems:?}");

        let problems = check(wf::GROUP, "Schedule", &json!({"metadata": {"name": "s"}}), None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].field, "spec");
    }

    #[test]
    fn an_update_that_leaves_the_spec_alone_is_admitted() {
        let old = flow(json!([{"from": "a", "to": "c"}]));
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!([]);
        assert_eq!(check(wf::GROUP, "Flow", &new, Some(&old)), vec![]);
        // A spec change is checked in full.
        new["spec"]["description"] = json!("changed");
        assert_eq!(check(wf::GROUP, "Flow", &new, Some(&old)).len(), 1);
    }

    #[test]
    fn dispatches_a_run() {
        let object = json!({
            "spec": {
                "plan": {"nodes": [{"id": "a", "agent": {"agentRef": "x"}}, {"id": "g", "gate": {}}]},
                "parameters": {"ok": "1", "not-ok": "2"},
                "decisions": [{"node": "a", "decision": "approve"}],
            },
        });
        assert_eq!(
            check(wf::GROUP, "Run", &object, None),
            vec![
                Problem::new(
                    "spec.decisions[0].node",
                    "node \"a\" is an agent step, not a gate: only gates take decisions"
                ),
                Problem::new(
                    "spec.parameters.not-ok",
                    "parameter name \"not-ok\" is not a C identifier: use letters, digits and \
                     underscores, not starting with a digit"
                ),
            ]
        );
    }

    #[test]
    fn dispatches_a_schedule_and_ratchets_unchanged_fields() {
        let old = json!({
            "spec": {"flowRef": "f", "cron": "0 0 * * * *", "timeZone": "Mars/Olympus"},
        });
        let problems = check(wf::GROUP, "Schedule", &old, None);
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["spec.cron", "spec.timeZone"]);

        let mut suspended = old.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert_eq!(check(wf::GROUP, "Schedule", &suspended, Some(&old)), vec![]);
    }

    #[test]
    fn dispatches_serving_and_integration_kinds() {
        let deployment = json!({
            "metadata": {"name": "llama"},
            "spec": {
                "backend": "vllm",
                "model": "meta/llama",
                "litellm": {"aliases": ["llama"]},
                "resources": {"limits": {"nvidia.com/gpu": 0}},
            },
        });
        assert_eq!(
            check(serv::GROUP, "ModelDeployment", &deployment, None),
            vec![
                Problem::new(
                    "spec.litellm.aliases[0]",
                    "alias \"llama\" is the deployment's own name, which is already its served \
                     model name"
                ),
                Problem::new(
                    "spec.resources.limits[nvidia.com/gpu]",
                    "GPU limit 0 must be a positive whole number of GPUs"
                ),
            ]
        );

        let autotune =
            json!({"spec": {"deploymentRef": "llama", "searchSpace": {"maxNumSeqs": [4, 4]}}});
        let fields: Vec<String> = check(serv::GROUP, "ModelAutotune", &autotune, None)
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(fields, ["spec.searchSpace.maxNumSeqs[1]"]);

        let routing =
            json!({"spec": {"roles": [{"name": "r", "primary": "m", "fallbacks": ["m"]}]}});
        assert_eq!(
            check(serv::GROUP, "ModelRouting", &routing, None),
            vec![Problem::new(
                "spec.roles[0].fallbacks[0]",
                "fallback \"m\" is already the role's primary model"
            )]
        );

        let session = json!({"spec": {"tenant": "t", "title": "  "}});
        assert_eq!(
            check(integ::GROUP, "IntegrationSession", &session, None),
            vec![Problem::new(
                "spec.title",
                "title is blank: give the session a title people can recognize"
            )]
        );
    }
}
