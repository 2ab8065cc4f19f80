//! The conditions of a namespace being deleted, as upstream's namespace controller reports them
//! (what `kubectl describe namespace` shows): what content remains, by resource, and which
//! finalizers hold it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::objects::finalizers;

/// One condition: type, status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) type_: &'static str,
    pub(crate) status: &'static str,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

fn condition(
    type_: &'static str,
    status: &'static str,
    reason: &'static str,
    message: &str,
) -> Condition {
    Condition { type_, status, reason, message: message.to_owned() }
}

/// The conditions of a namespace still holding `contents` (storage key and object of each).
pub(crate) fn conditions<'a>(
    contents: impl Iterator<Item = (&'a str, &'a Value)>,
) -> Vec<Condition> {
    let mut resources: BTreeMap<String, usize> = BTreeMap::new();
    let mut held: BTreeMap<String, usize> = BTreeMap::new();
    for (key, object) in contents {
        // Keys are `/<group>/<resource>/<namespace>/<name>`, the core group written `core`.
        let mut parts = key.split('/').skip(1);
        let group = parts.next().filter(|g| *g != "core").unwrap_or_default();
        let resource = parts.next().unwrap_or_default();
        *resources.entry(format!("{resource}.{group}")).or_default() += 1;
        for finalizer in finalizers(object) {
            *held.entry(finalizer).or_default() += 1;
        }
    }
    let remaining = if resources.is_empty() {
        condition(
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
        )
    } else {
        let list: Vec<String> =
            resources.iter().map(|(r, n)| format!("{r} has {n} resource instances")).collect();
        let message = format!("Some resources are remaining: {}", list.join(", "));
        condition("NamespaceContentRemaining", "True", "SomeResourcesRemain", &message)
    };
    let finalizing = if held.is_empty() {
        condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        )
    } else {
        let list: Vec<String> =
            held.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
        let message =
            format!("Some content in the namespace has finalizers remaining: {}", list.join(", "));
        condition("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", &message)
    };
    vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        remaining,
        finalizing,
    ]
}

/// Whether `namespace` already shows `wanted` (times aside).
pub(crate) fn shown(namespace: &Value, wanted: &[Condition]) -> bool {
    let stored = namespace.pointer("/status/conditions").and_then(Value::as_array);
    let stored = stored.map(Vec::as_slice).unwrap_or_default();
    stored.len() == wanted.len()
        && stored.iter().zip(wanted).all(|(s, w)| {
            let text = |field: &str| s.get(field).and_then(Value::as_str).unwrap_or_default();
            text("type") == w.type_
                && text("status") == w.status
                && text("reason") == w.reason
                && text("message") == w.message
        })
}

/// `wanted` as the namespace's `status.conditions`, each keeping its transition time from
/// `namespace` while its status stays the same.
pub(crate) fn render(namespace: &Value, wanted: &[Condition], now: &str) -> Value {
    let stored = namespace.pointer("/status/conditions").and_then(Value::as_array);
    let since = |c: &Condition| {
        stored.into_iter().flatten().find_map(|s| {
            let same = s.get("type").and_then(Value::as_str) == Some(c.type_)
                && s.get("status").and_then(Value::as_str) == Some(c.status);
            same.then(|| s.get("lastTransitionTime").cloned()).flatten()
        })
    };
    let rendered: Vec<Value> = wanted
        .iter()
        .map(|c| {
            json!({
                "type": c.type_,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": since(c).unwrap_or_else(|| json!(now)),
            })
        })
        .collect();
    Value::Array(rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_content_and_finalizers_are_counted_by_resource_and_name() {
        let held = json!({"metadata": {"finalizers": ["example.com/x"]}});
        let plain = json!({"metadata": {}});
        let contents = [
            ("/core/configmaps/team/a", &held),
            ("/core/configmaps/team/b", &plain),
            ("/apps/deployments/team/web", &held),
        ];
        let found = conditions(contents.into_iter());
        let by_type = |t: &str| found.iter().find(|c| c.type_ == t).unwrap().clone();
        assert_eq!(
            by_type("NamespaceContentRemaining").message,
            "Some resources are remaining: configmaps. has 2 resource instances, \
             deployments.apps has 1 resource instances"
        );
        assert_eq!(
            by_type("NamespaceFinalizersRemaining").message,
            "Some content in the namespace has finalizers remaining: example.com/x in 2 resource \
             instances"
        );
        let empty = conditions(std::iter::empty());
        assert!(empty.iter().all(|c| c.status == "False"));
    }

    #[test]
    fn a_condition_keeps_its_time_while_its_status_holds() {
        let wanted = conditions([("/core/configmaps/team/a", &json!({}))].into_iter());
        let namespace = json!({"status": {"conditions": render(&json!({}), &wanted, "t1")}});
        assert!(shown(&namespace, &wanted));
        let emptied = conditions(std::iter::empty());
        assert!(!shown(&namespace, &emptied));
        let later = render(&namespace, &emptied, "t2");
        let time = |t: &str| {
            later.as_array().unwrap().iter().find(|c| c["type"] == t).unwrap()["lastTransitionTime"]
                .clone()
        };
        assert_eq!(time("NamespaceDeletionDiscoveryFailure"), "t1");
        assert_eq!(time("NamespaceContentRemaining"), "t2");
    }
}
