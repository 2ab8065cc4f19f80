//! Request paths: `/api/v1/…` and `/apis/<group>/<version>/…` resolved to the resource, namespace,
//! name and subresource they address.

use std::sync::Arc;

use crate::catalog::ResourceInfo;

use super::errors::{ApiError, ApiResult};
use super::registry::Served;

/// What a resource path addresses.
#[derive(Clone, Debug)]
pub struct Target {
    /// The resource.
    pub info: Arc<ResourceInfo>,
    /// The namespace in the path; `None` for cluster-scoped resources and all-namespace lists.
    pub namespace: Option<String>,
    /// The object name; `None` for collections.
    pub name: Option<String>,
    /// `status`, `scale`, `log`…
    pub subresource: Option<String>,
}

impl Target {
    /// The object name, or a 405 for a collection path.
    pub fn object_name(&self, verb: &str) -> ApiResult<&str> {
        self.name.as_deref().ok_or_else(|| ApiError::method_not_allowed(verb, &self.info.resource))
    }

    /// The storage key of the object `name` in this target's namespace.
    pub fn key(&self, name: &str) -> String {
        object_key(&self.info, self.namespace.as_deref().unwrap_or(""), name)
    }

    /// The storage prefix of the collection: one namespace, or all of them.
    pub fn prefix(&self) -> String {
        match &self.namespace {
            Some(ns) if self.info.namespaced => format!("{}{ns}/", resource_prefix(&self.info)),
            _ => resource_prefix(&self.info),
        }
    }
}

/// Storage prefix of every object of a resource (all versions share it).
pub fn resource_prefix(info: &ResourceInfo) -> String {
    ["/", key_group(info), "/", &info.resource, "/"].concat()
}

/// Storage key of one object (built on every request: concatenated, not `format!`ted).
pub fn object_key(info: &ResourceInfo, namespace: &str, name: &str) -> String {
    let namespace = if info.namespaced { namespace } else { "" };
    ["/", key_group(info), "/", &info.resource, "/", namespace, "/", name].concat()
}

/// The group segment of storage keys (`core` for the core group).
fn key_group(info: &ResourceInfo) -> &str {
    match storage_group(info) {
        "" => "core",
        group => group,
    }
}

/// The group under which a resource is stored (events of both APIs are core Events).
pub fn storage_group(info: &ResourceInfo) -> &str {
    if info.group == "events.k8s.io" && info.resource == "events" { "" } else { &info.group }
}

/// Resolves the segments after `/api/v1` or `/apis/<g>/<v>`.
pub fn resolve(
    served: &Served,
    group: &str,
    version: &str,
    segments: &[&str],
) -> ApiResult<Target> {
    let path = || {
        let rest = segments.join("/");
        if group.is_empty() {
            format!("/api/{version}/{rest}")
        } else {
            format!("/apis/{group}/{version}/{rest}")
        }
    };
    let find = |resource: &str| served.find(group, version, resource);
    let target = |info, namespace: Option<&str>, name: Option<&str>, sub: Option<&str>| Target {
        info,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        subresource: sub.map(str::to_owned),
    };
    // A namespaced resource under `namespaces/<ns>/`, else a resource at the top (which
    // includes `namespaces/<name>/<subresource>`). Each resource is looked up once.
    let namespaced = match segments {
        ["namespaces", ns, resource, rest @ ..] if rest.len() <= 2 => {
            find(resource).filter(|r| r.namespaced).map(|info| (info, Some(*ns), rest))
        }
        _ => None,
    };
    match (namespaced, segments) {
        (Some((info, ns, rest)), _) => {
            Ok(target(info, ns, rest.first().copied(), rest.get(1).copied()))
        }
        (None, [resource, rest @ ..]) if rest.len() <= 2 => {
            let info = find(resource).ok_or_else(|| ApiError::no_route(&path()))?;
            Ok(target(info, None, rest.first().copied(), rest.get(1).copied()))
        }
        _ => Err(ApiError::no_route(&path())),
    }
    .and_then(|t| {
        if t.info.namespaced && t.namespace.is_none() && t.name.is_some() {
            return Err(ApiError::no_route(&path()));
        }
        if let Some(sub) = &t.subresource
            && !t.info.subresources.iter().any(|s| s.name() == sub)
        {
            return Err(ApiError::no_route(&path()));
        }
        Ok(t)
    })
}
