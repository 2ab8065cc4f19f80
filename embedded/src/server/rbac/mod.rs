//! Authorization by RBAC, as kube-apiserver's RBAC authorizer does it. A request is allowed
//! when a ClusterRoleBinding, or a RoleBinding in the request's namespace, names its user (or
//! one of the user's groups, or its service account) and the role it refers to has a rule for
//! the request. Members of `system:masters` (the admin token) may do everything. Roles and
//! bindings are read from the store's current state on each request, so a change applies at
//! once. A user may write a role or binding only if it grants nothing the user may not do
//! themselves (or the user may `escalate` or `bind`), as upstream prevents escalation.

mod aggregation;
mod bootstrap;
mod policy;

use std::borrow::Cow;

use axum::http::Method;
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef, Subject};
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::ResourceInfo;
use crate::storage::{Snapshot, Store};

use super::ResourceRequest;
use super::errors::{ApiError, ApiResult};
use super::objects::{is_namespace, meta_str};
use super::users::User;

pub(crate) use aggregation::{converge as converge_aggregation, spawn as spawn_aggregation};
pub(crate) use bootstrap::ensure_defaults;
pub(crate) use policy::{Attributes, ResourceAttributes};

/// The API group of roles and bindings.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";
/// Storage prefixes of the four RBAC kinds (`paths::resource_prefix` of each).
const PREFIX: &str = "/rbac.authorization.k8s.io/";
const CLUSTER_ROLES: &str = "/rbac.authorization.k8s.io/clusterroles/";
const CLUSTER_ROLE_BINDINGS: &str = "/rbac.authorization.k8s.io/clusterrolebindings/";
const ROLES: &str = "/rbac.authorization.k8s.io/roles/";
const ROLE_BINDINGS: &str = "/rbac.authorization.k8s.io/rolebindings/";

/// The rules one binding gives a user.
pub(crate) struct Grant {
    /// The binding, its role and the subject that names the user, for a review's reason.
    by: String,
    /// The role's rules.
    pub(crate) rules: Vec<PolicyRule>,
}

/// Everything bindings give a user in one namespace (or cluster-wide), and what could not be
/// read (a binding to a role that does not exist).
#[derive(Default)]
pub(crate) struct Grants {
    pub(crate) grants: Vec<Grant>,
    pub(crate) errors: Vec<String>,
}

impl Grants {
    /// Every rule granted.
    pub(crate) fn rules(&self) -> impl Iterator<Item = &PolicyRule> {
        self.grants.iter().flat_map(|g| &g.rules)
    }

    /// The errors as upstream words them in a review or a refusal: `RBAC: ...`.
    pub(crate) fn error_text(&self) -> String {
        match self.errors.as_slice() {
            [] => String::new(),
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        }
    }
}

/// What the bindings of the current state give `user` in `namespace` (`""`: cluster-wide only).
pub(crate) fn grants(store: &Store, user: &User, namespace: &str) -> Grants {
    let snapshot = store.list(PREFIX);
    let mut grants = Grants::default();
    let mut scopes = vec![(CLUSTER_ROLE_BINDINGS.to_owned(), "ClusterRoleBinding", "")];
    if !namespace.is_empty() {
        scopes.push((format!("{ROLE_BINDINGS}{namespace}/"), "RoleBinding", namespace));
    }
    for (prefix, binding_kind, binding_namespace) in scopes {
        for entry in snapshot.scoped(&prefix).entries() {
            let Some(subject) = subject_naming(&entry.object, user, binding_namespace) else {
                continue;
            };
            let Some(role) = field::<RoleRef>(&entry.object, "roleRef") else { continue };
            let binding = meta_str(&entry.object, "name").unwrap_or_default();
            match role_rules(&snapshot, &role, binding_namespace) {
                Ok(rules) => grants.grants.push(Grant {
                    by: format!(
                        "{binding_kind} \"{binding}\" of {} \"{}\" to {}",
                        role.kind,
                        role.name,
                        describe(&subject)
                    ),
                    rules,
                }),
                Err(error) => grants.errors.push(error),
            }
        }
    }
    grants
}

/// A field of a stored object, deserialized; `None` if it is missing or malformed.
fn field<T: for<'de> Deserialize<'de>>(object: &Value, name: &str) -> Option<T> {
    T::deserialize(object.get(name)?).ok()
}

/// The first of a binding's subjects that names `user`.
fn subject_naming(binding: &Value, user: &User, namespace: &str) -> Option<Subject> {
    let subjects: Vec<Subject> = field(binding, "subjects")?;
    subjects.into_iter().find(|s| policy::names_user(s, user, namespace))
}

/// `User "alice"`, `Group "devs"`, `ServiceAccount "team/bot"`.
fn describe(subject: &Subject) -> String {
    match &subject.namespace {
        Some(namespace) if subject.kind == "ServiceAccount" => {
            format!("ServiceAccount \"{namespace}/{}\"", subject.name)
        }
        _ => format!("{} \"{}\"", subject.kind, subject.name),
    }
}

/// The rules of the role a binding in `namespace` refers to; upstream's message when it is
/// missing.
fn role_rules(
    snapshot: &Snapshot,
    role: &RoleRef,
    namespace: &str,
) -> Result<Vec<PolicyRule>, String> {
    let (key, resource) = match role.kind.as_str() {
        "ClusterRole" => (format!("{CLUSTER_ROLES}/{}", role.name), "clusterrole"),
        "Role" if !namespace.is_empty() => (format!("{ROLES}{namespace}/{}", role.name), "role"),
        kind => return Err(format!("unsupported role reference kind: \"{kind}\"")),
    };
    match snapshot.get(&key) {
        Some(entry) => Ok(field(&entry.object, "rules").unwrap_or_default()),
        None => Err(format!("{resource}.{GROUP} \"{}\" not found", role.name)),
    }
}

/// An authorization decision and why, as a review shows it.
pub(crate) struct Decision {
    pub(crate) allowed: bool,
    pub(crate) reason: String,
}

/// Whether `user` may do what `attributes` describe.
pub(crate) fn authorize(store: &Store, user: &User, attributes: &Attributes) -> Decision {
    if user.is_master() {
        return Decision { allowed: true, reason: String::new() };
    }
    let namespace = match attributes {
        Attributes::Resource(r) => r.namespace.as_str(),
        Attributes::NonResource { .. } => "",
    };
    let grants = grants(store, user, namespace);
    let allowing =
        grants.grants.iter().find(|g| g.rules.iter().any(|r| policy::allows(r, attributes)));
    match allowing {
        Some(grant) => Decision { allowed: true, reason: format!("RBAC: allowed by {}", grant.by) },
        None => Decision { allowed: false, reason: grants.error_text() },
    }
}

/// What a resource request asks to do, as upstream's request info names it: the verb from the
/// method (`list` or `watch` for a collection's `GET`), the namespace a namespace's own path
/// names, and the name a list selects with `metadata.name=`.
pub(crate) fn request_attributes(request: &ResourceRequest) -> Attributes {
    let target = &request.target;
    let named = target.name.is_some();
    let verb = match request.method {
        Method::GET if !named && request.query.watch => "watch".into(),
        Method::GET if !named => "list".into(),
        Method::DELETE if !named => "deletecollection".into(),
        ref method => object_verb(method),
    };
    verb_attributes(request, &verb)
}

/// The verb of a request with `method` on one object (or a create in a collection): `get` for
/// GET and HEAD, `create` for POST, `update`, `patch`, `delete`; another method's own name.
pub(crate) fn object_verb(method: &Method) -> Cow<'static, str> {
    match *method {
        Method::GET | Method::HEAD => "get".into(),
        Method::POST => "create".into(),
        Method::PUT => "update".into(),
        Method::PATCH => "patch".into(),
        Method::DELETE => "delete".into(),
        ref other => other.as_str().to_lowercase().into(),
    }
}

fn verb_attributes(request: &ResourceRequest, verb: &str) -> Attributes {
    let target = &request.target;
    let selected = request.query.fields.as_ref().and_then(|f| f.exact("metadata.name"));
    let name = target.name.as_deref().or(selected).unwrap_or_default();
    let namespace = match (&target.namespace, is_namespace(&target.info)) {
        (_, true) => name,
        (Some(namespace), false) => namespace.as_str(),
        (None, false) => "",
    };
    Attributes::Resource(ResourceAttributes {
        verb: verb.to_owned(),
        group: target.info.group.clone(),
        resource: target.info.resource.clone(),
        subresource: target.subresource.clone().unwrap_or_default(),
        name: name.to_owned(),
        namespace: namespace.to_owned(),
    })
}

/// Refuses the request unless its user may make it.
pub(crate) fn check(store: &Store, user: &User, attributes: &Attributes) -> ApiResult<()> {
    let decision = authorize(store, user, attributes);
    match decision.allowed {
        true => Ok(()),
        false => Err(forbidden(user, attributes, &decision.reason)),
    }
}

/// Checks that `user` may open a pod's stream subresource (`exec`, `portforward`): upstream
/// asks for `create` on it whichever method opens the stream.
pub(crate) fn check_pod_stream(
    store: &Store,
    user: &User,
    namespace: &str,
    name: &str,
    subresource: &str,
) -> ApiResult<()> {
    let asked = Attributes::Resource(ResourceAttributes {
        verb: "create".into(),
        group: String::new(),
        resource: "pods".into(),
        subresource: subresource.into(),
        name: name.into(),
        namespace: namespace.into(),
    });
    check(store, user, &asked)
}

/// Upstream's `403` for a request RBAC does not allow.
pub(crate) fn forbidden(user: &User, attributes: &Attributes, reason: &str) -> ApiError {
    let username = &user.username;
    let mut message = match attributes {
        Attributes::NonResource { verb, path } => {
            format!("forbidden: User \"{username}\" cannot {verb} path \"{path}\"")
        }
        Attributes::Resource(r) => {
            let resource = match r.subresource.as_str() {
                "" => r.resource.clone(),
                sub => format!("{}/{sub}", r.resource),
            };
            let scope = match r.namespace.as_str() {
                "" => "at the cluster scope".to_owned(),
                namespace => format!("in the namespace \"{namespace}\""),
            };
            let why = format!(
                "User \"{username}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
                r.verb, r.group
            );
            return ApiError::forbidden_resource(&r.group, &r.resource, &r.name, &why, reason);
        }
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    ApiError::forbidden(message)
}

/// Refuses a role or binding that would give anyone more than `user` may do, unless `user` may
/// `escalate` (roles) or `bind` (the role a binding names). `object` is the role or binding as
/// it would be stored.
pub(crate) fn check_no_escalation(
    store: &Store,
    user: &User,
    info: &ResourceInfo,
    object: &Value,
) -> ApiResult<()> {
    if user.is_master() || !info.builtin || info.group != GROUP {
        return Ok(());
    }
    let namespace = meta_str(object, "namespace").unwrap_or_default();
    let name = meta_str(object, "name").unwrap_or_default();
    let may = |verb: &str, resource: &str, name: &str| {
        let attributes = Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: GROUP.into(),
            resource: resource.into(),
            name: name.into(),
            namespace: namespace.into(),
            ..ResourceAttributes::default()
        });
        authorize(store, user, &attributes).allowed
    };
    let wanted = match info.resource.as_str() {
        "roles" | "clusterroles" if may("escalate", &info.resource, name) => return Ok(()),
        "clusterroles" if object.get("aggregationRule").is_some_and(|a| !a.is_null()) => {
            bootstrap::everything()
        }
        "roles" | "clusterroles" => field(object, "rules").unwrap_or_default(),
        "rolebindings" | "clusterrolebindings" => {
            let Some(role) = field::<RoleRef>(object, "roleRef") else { return Ok(()) };
            let resource = if role.kind == "Role" { "roles" } else { "clusterroles" };
            if may("bind", resource, &role.name) {
                return Ok(());
            }
            role_rules(&store.list(PREFIX), &role, namespace)
                .map_err(|e| ApiError::forbidden_resource(GROUP, &info.resource, name, &e, ""))?
        }
        _ => return Ok(()),
    };
    let held = grants(store, user, namespace);
    let missing = policy::uncovered(&held.rules().cloned().collect::<Vec<_>>(), &wanted);
    if missing.is_empty() {
        return Ok(());
    }
    let rules: Vec<String> = missing.iter().map(compact).collect();
    let why = format!(
        "user \"{}\" (groups={:?}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.username,
        user.groups,
        rules.join("\n")
    );
    Err(ApiError::forbidden_resource(GROUP, &info.resource, name, &why, &held.error_text()))
}

/// A rule in one line: `{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`.
fn compact(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    let mut part = |label: &str, values: &Option<Vec<String>>| {
        if let Some(values) = values.as_ref().filter(|v| !v.is_empty()) {
            let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
            parts.push(format!("{label}:[{}]", quoted.join(", ")));
        }
    };
    part("APIGroups", &rule.api_groups);
    part("Resources", &rule.resources);
    part("ResourceNames", &rule.resource_names);
    part("NonResourceURLs", &rule.non_resource_urls);
    part("Verbs", &Some(rule.verbs.clone()));
    format!("{{{}}}", parts.join(", "))
}

/// Whether `path` addresses resources (`/api/v1/<resource>…`, `/apis/<group>/<version>/<resource>…`)
/// rather than discovery or OpenAPI.
pub(crate) fn is_resource_path(path: &str) -> bool {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    match segments.next() {
        Some("api") => segments.nth(1).is_some(),
        Some("apis") => segments.nth(2).is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
