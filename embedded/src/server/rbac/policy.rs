//! RBAC's matching rules, as pure functions: which request a `PolicyRule` allows, which user a
//! binding's subject names, and whether one set of rules covers another (what a user may grant).

use k8s_openapi::api::rbac::v1::{PolicyRule, Subject};

use super::super::users::{User, service_account_of};

/// What a request asks to do, as RBAC sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attributes {
    /// A verb on a resource (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or another such as `impersonate`).
    Resource(ResourceAttributes),
    /// A verb on a path that is no resource (`/api`, `/healthz`…).
    NonResource {
        /// The lowercase HTTP verb.
        verb: String,
        /// The request path.
        path: String,
    },
}

/// A verb on a resource; empty strings stand for what the request does not name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResourceAttributes {
    pub(crate) verb: String,
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) name: String,
    pub(crate) namespace: String,
}

/// An optional list of a rule, empty when left out.
fn listed(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or_default()
}

/// The first value of an optional list of a rule.
fn first(list: &Option<Vec<String>>) -> Option<&String> {
    listed(list).first()
}

/// Whether `list` holds `value` or the wildcard `*`.
fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// Whether `rule` allows the request `attributes` describes.
pub(crate) fn allows(rule: &PolicyRule, attributes: &Attributes) -> bool {
    match attributes {
        Attributes::Resource(r) => {
            has(&rule.verbs, &r.verb)
                && has(listed(&rule.api_groups), &r.group)
                && resource_matches(listed(&rule.resources), r)
                && name_matches(listed(&rule.resource_names), &r.name)
        }
        Attributes::NonResource { verb, path } => {
            has(&rule.verbs, verb)
                && listed(&rule.non_resource_urls).iter().any(|url| url_matches(url, path))
        }
    }
}

/// `*`, the resource itself (`pods`, or `pods/log` for a subresource), or `*/log` for that
/// subresource of every resource.
fn resource_matches(resources: &[String], r: &ResourceAttributes) -> bool {
    resources.iter().any(|rule| {
        if rule == "*" {
            return true;
        }
        if r.subresource.is_empty() {
            return *rule == r.resource;
        }
        match rule.split_once('/') {
            Some((resource, sub)) => {
                sub == r.subresource && (resource == "*" || resource == r.resource)
            }
            None => false,
        }
    })
}

/// Rules without names allow every name; rules with names only those (so never a list).
fn name_matches(names: &[String], name: &str) -> bool {
    names.is_empty() || names.iter().any(|n| n == name)
}

/// `*`, the path itself, or a prefix ending in `*`.
fn url_matches(rule: &str, path: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => rule == path,
    }
}

/// Whether a binding's `subject` names `user`. A ServiceAccount subject without a namespace is
/// one in the binding's own namespace.
pub(crate) fn names_user(subject: &Subject, user: &User, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.username,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let namespace = subject.namespace.as_deref().filter(|n| !n.is_empty());
            let namespace = namespace.unwrap_or(binding_namespace);
            service_account_of(&user.username) == Some((namespace, subject.name.as_str()))
        }
        _ => false,
    }
}

/// The rules of `wanted` that `held` does not cover: a user may grant (in a role) only what they
/// may do themselves. Each wanted rule is taken apart into single verbs, groups, resources and
/// names; a wildcard wanted is covered only by the same wildcard held.
pub(crate) fn uncovered(held: &[PolicyRule], wanted: &[PolicyRule]) -> Vec<PolicyRule> {
    wanted.iter().flat_map(atoms).filter(|atom| !held.iter().any(|h| covers(h, atom))).collect()
}

/// `rule` as rules of one verb on one resource (or name, or path) each.
fn atoms(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |value: &String| Some(vec![value.clone()]);
    let names: Vec<Option<Vec<String>>> = match rule.resource_names.as_deref() {
        None | Some([]) => vec![None],
        Some(names) => names.iter().map(one).collect(),
    };
    let mut atoms = Vec::new();
    for verb in &rule.verbs {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                atoms.extend(names.iter().map(|names| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: one(group),
                    resources: one(resource),
                    resource_names: names.clone(),
                    ..PolicyRule::default()
                }));
            }
        }
        atoms.extend(rule.non_resource_urls.iter().flatten().map(|url| PolicyRule {
            verbs: vec![verb.clone()],
            non_resource_urls: one(url),
            ..PolicyRule::default()
        }));
    }
    atoms
}

/// Whether `held` covers the single-valued rule `atom`.
fn covers(held: &PolicyRule, atom: &PolicyRule) -> bool {
    if !has(&held.verbs, &atom.verbs[0]) {
        return false;
    }
    if let Some(url) = first(&atom.non_resource_urls) {
        return listed(&held.non_resource_urls).iter().any(|held| url_matches(held, url));
    }
    let (Some(group), Some(resource)) = (first(&atom.api_groups), first(&atom.resources)) else {
        return false;
    };
    has(listed(&held.api_groups), group)
        && covers_resource(listed(&held.resources), resource)
        && covers_name(listed(&held.resource_names), first(&atom.resource_names))
}

/// Whether held resources cover `wanted`, itself possibly `pods/log`, `*/log` or `*`.
fn covers_resource(held: &[String], wanted: &str) -> bool {
    held.iter().any(|h| {
        h == "*"
            || h == wanted
            || h.strip_prefix("*/").is_some_and(|sub| {
                wanted.split_once('/').is_some_and(|(_, wanted_sub)| wanted_sub == sub)
            })
    })
}

/// Held rules without names cover every name; with names, only those.
fn covers_name(held: &[String], wanted: Option<&String>) -> bool {
    held.is_empty() || wanted.is_some_and(|w| held.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let strings = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        PolicyRule {
            verbs: strings(verbs),
            api_groups: Some(strings(groups)),
            resources: Some(strings(resources)),
            resource_names: (!names.is_empty()).then(|| strings(names)),
            ..PolicyRule::default()
        }
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "default".into(),
        })
    }

    #[test]
    fn a_rule_allows_its_verbs_on_its_resources() {
        let read_pods = rule(&["get", "list", "watch"], &[""], &["pods"], &[]);
        assert!(allows(&read_pods, &request("list", "", "pods", "", "")));
        assert!(allows(&read_pods, &request("get", "", "pods", "", "web")));
        assert!(!allows(&read_pods, &request("delete", "", "pods", "", "web")));
        assert!(!allows(&read_pods, &request("get", "apps", "pods", "", "web")));
        assert!(!allows(&read_pods, &request("get", "", "pods", "log", "web")), "not subresources");
        assert!(!allows(&read_pods, &request("get", "", "configmaps", "", "x")));
    }

    #[test]
    fn wildcards_and_subresources_match_as_upstream() {
        let logs = rule(&["get"], &[""], &["pods/log"], &[]);
        assert!(allows(&logs, &request("get", "", "pods", "log", "web")));
        assert!(!allows(&logs, &request("get", "", "pods", "", "web")));
        let every_status = rule(&["*"], &["*"], &["*/status"], &[]);
        assert!(allows(&every_status, &request("update", "apps", "deployments", "status", "d")));
        assert!(!allows(&every_status, &request("update", "apps", "deployments", "", "d")));
        let all = rule(&["*"], &["*"], &["*"], &[]);
        assert!(allows(&all, &request("deletecollection", "batch", "jobs", "", "")));
        assert!(allows(&all, &request("get", "", "pods", "log", "x")));
    }

    #[test]
    fn named_rules_allow_only_those_names() {
        let one = rule(&["get", "list"], &[""], &["configmaps"], &["settings"]);
        assert!(allows(&one, &request("get", "", "configmaps", "", "settings")));
        assert!(!allows(&one, &request("get", "", "configmaps", "", "other")));
        assert!(!allows(&one, &request("list", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let discovery = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: Some(vec!["/api".into(), "/apis/*".into()]),
            ..PolicyRule::default()
        };
        let get = |path: &str| Attributes::NonResource { verb: "get".into(), path: path.into() };
        assert!(allows(&discovery, &get("/api")));
        assert!(allows(&discovery, &get("/apis/apps/v1")));
        assert!(!allows(&discovery, &get("/api/v1")));
        assert!(!allows(&discovery, &request("get", "", "pods", "", "")));
        let resource_rule = rule(&["*"], &["*"], &["*"], &[]);
        assert!(!allows(&resource_rule, &get("/api")), "resource rules allow no paths");
    }

    #[test]
    fn subjects_name_users_groups_and_service_accounts() {
        let bot = User::service_account("team", "bot");
        let subject = |kind: &str, name: &str, namespace: Option<&str>| Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.map(Into::into),
            api_group: None,
        };
        assert!(names_user(&subject("ServiceAccount", "bot", Some("team")), &bot, "other"));
        assert!(names_user(&subject("ServiceAccount", "bot", None), &bot, "team"));
        assert!(!names_user(&subject("ServiceAccount", "bot", None), &bot, "other"));
        assert!(names_user(&subject("Group", "system:serviceaccounts:team", None), &bot, ""));
        assert!(names_user(&subject("User", "system:serviceaccount:team:bot", None), &bot, ""));
        assert!(!names_user(&subject("Group", "system:masters", None), &bot, ""));
    }

    #[test]
    fn only_what_is_held_may_be_granted() {
        let held = [rule(&["get", "list"], &[""], &["pods", "pods/log"], &[])];
        assert!(uncovered(&held, &[rule(&["get"], &[""], &["pods/log"], &[])]).is_empty());
        assert!(uncovered(&held, &[rule(&["get"], &[""], &["pods"], &["web"])]).is_empty());
        let missing = uncovered(&held, &[rule(&["get", "delete"], &[""], &["pods"], &[])]);
        assert_eq!(missing, [rule(&["delete"], &[""], &["pods"], &[])]);
        // A wildcard wanted is not covered by every single thing held.
        assert_eq!(uncovered(&held, &[rule(&["get"], &[""], &["*"], &[])]).len(), 1);
        let named = [rule(&["get"], &[""], &["secrets"], &["token"])];
        assert!(uncovered(&named, &[rule(&["get"], &[""], &["secrets"], &["token"])]).is_empty());
        assert_eq!(uncovered(&named, &[rule(&["get"], &[""], &["secrets"], &[])]).len(), 1);
        let all = [rule(&["*"], &["*"], &["*"], &[])];
        assert!(uncovered(&all, &[rule(&["*"], &["*"], &["*"], &[])]).is_empty());
        assert!(uncovered(&all, &[rule(&["get"], &[""], &["*/status"], &[])]).is_empty());
    }
}
