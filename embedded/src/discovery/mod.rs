//! API discovery documents (`/api`, `/api/v1`, `/apis`, `/apis/<g>`,
//! `/apis/<g>/<v>`), legacy and aggregated (`apidiscovery.k8s.io` v2 and
//! v2beta1), built from the catalog.
//!
//! Ordering: the core group first, then built-in groups in catalog order, then
//! CRD groups alphabetically; versions by Kubernetes version priority (the
//! first is preferred); resources by name.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::discovery::v2::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APISubresourceDiscovery,
    APIVersionDiscovery, GroupVersionKind,
};
use serde_json::{Map, Value, json};

use crate::catalog::{ResourceInfo, compare_kube_versions};

#[cfg(test)]
mod tests;

/// Which discovery document format to serve on `/api` and `/apis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscoveryFormat {
    /// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` (client-go 1.30+).
    AggregatedV2,
    /// `apidiscovery.k8s.io/v2beta1` `APIGroupDiscoveryList` (client-go 1.26-1.29).
    AggregatedV2Beta1,
    /// `APIVersions` / `APIGroupList`; clients then fetch each group-version.
    Legacy,
}

/// One media range of an Accept header.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MediaRange {
    /// Lowercased `type/subtype`.
    pub(crate) mime: String,
    params: Vec<(String, String)>,
    q: f32,
}

impl MediaRange {
    /// A parameter other than `q` (names are case-insensitive).
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Parses an Accept header into media ranges ordered by `q` (stable), without
/// `q=0` ones.
pub(crate) fn media_ranges(accept: &str) -> Vec<MediaRange> {
    let mut ranges: Vec<MediaRange> = accept
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let mime = pieces.next()?.trim().to_ascii_lowercase();
            if mime.is_empty() {
                return None;
            }
            let mut q = 1.0;
            let mut params = Vec::new();
            for piece in pieces {
                let Some((k, v)) = piece.split_once('=') else { continue };
                let (k, v) = (k.trim(), v.trim().trim_matches('"'));
                if k.eq_ignore_ascii_case("q") {
                    q = v.parse().unwrap_or(1.0);
                } else {
                    params.push((k.to_owned(), v.to_owned()));
                }
            }
            Some(MediaRange { mime, params, q })
        })
        .filter(|r| r.q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.q.total_cmp(&a.q));
    ranges
}

/// Chooses the format for `/api` and `/apis` from the Accept header, taking
/// the client's first acceptable range (kubectl 1.32 sends v2, then v2beta1,
/// then `application/json`). Anything unrecognised gets the legacy format.
pub fn negotiate(accept: &str) -> DiscoveryFormat {
    for range in media_ranges(accept) {
        if !matches!(range.mime.as_str(), "application/json" | "application/*" | "*/*") {
            continue;
        }
        match (range.param("as"), range.param("g"), range.param("v")) {
            (None, _, _) => return DiscoveryFormat::Legacy,
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) => {
                return DiscoveryFormat::AggregatedV2;
            }
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2beta1")) => {
                return DiscoveryFormat::AggregatedV2Beta1;
            }
            _ => {}
        }
    }
    DiscoveryFormat::Legacy
}

/// The exact Content-Type client-go matches to recognise the format.
pub fn content_type(format: DiscoveryFormat) -> &'static str {
    match format {
        DiscoveryFormat::AggregatedV2 => {
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        }
        DiscoveryFormat::AggregatedV2Beta1 => {
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        }
        DiscoveryFormat::Legacy => "application/json",
    }
}

/// One API group with its versions (preferred first).
pub(crate) struct Group<'a> {
    pub(crate) name: &'a str,
    pub(crate) versions: Vec<(&'a str, Vec<&'a ResourceInfo>)>,
}

/// Groups of the catalog in discovery order (core first if present).
pub(crate) fn groups(infos: &[Arc<ResourceInfo>]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for info in infos {
        let index = match groups.iter().position(|g| g.name == info.group) {
            Some(i) => i,
            None => {
                groups.push(Group { name: &info.group, versions: Vec::new() });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        match group.versions.iter_mut().find(|(v, _)| *v == info.version) {
            Some((_, resources)) => resources.push(info),
            None => group.versions.push((&info.version, vec![info])),
        }
    }
    let is_builtin = |g: &Group<'_>| g.versions.iter().flat_map(|(_, r)| r).any(|r| r.builtin);
    // Stable sort: core, then built-in groups (catalog order), then the rest by name.
    let rank = |g: &Group<'_>| match (g.name.is_empty(), is_builtin(g)) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => 2,
    };
    groups.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| if rank(a) == 2 { a.name.cmp(b.name) } else { std::cmp::Ordering::Equal })
    });
    for group in &mut groups {
        group.versions.sort_by(|a, b| compare_kube_versions(a.0, b.0));
        for (_, resources) in &mut group.versions {
            resources.sort_by(|a, b| a.resource.cmp(&b.resource));
        }
    }
    groups
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

fn legacy_group(group: &Group<'_>) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|(v, _)| json!({"groupVersion": group_version(group.name, v), "version": v}))
        .collect();
    json!({
        "name": group.name,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// Legacy `/api`: `APIVersions` listing `v1`.
pub fn api_versions(infos: &[Arc<ResourceInfo>]) -> Value {
    let versions: Vec<&str> = groups(infos)
        .into_iter()
        .filter(|g| g.name.is_empty())
        .flat_map(|g| g.versions)
        .map(|(v, _)| v)
        .collect();
    json!({"kind": "APIVersions", "versions": versions, "serverAddressByClientCIDRs": []})
}

/// Legacy `/apis`: `APIGroupList` of every non-core group.
pub fn group_list(infos: &[Arc<ResourceInfo>]) -> Value {
    let groups: Vec<Value> =
        groups(infos).iter().filter(|g| !g.name.is_empty()).map(legacy_group).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`: `APIGroup`, or `None` if not served.
pub fn group(infos: &[Arc<ResourceInfo>], group: &str) -> Option<Value> {
    let groups = groups(infos);
    let found = groups.iter().find(|g| g.name == group && !group.is_empty())?;
    let mut value = legacy_group(found);
    value["kind"] = json!("APIGroup");
    value["apiVersion"] = json!("v1");
    Some(value)
}

fn legacy_resource(info: &ResourceInfo) -> Vec<Value> {
    let mut main = Map::new();
    main.insert("name".into(), json!(info.resource));
    main.insert("singularName".into(), json!(info.singular));
    main.insert("namespaced".into(), json!(info.namespaced));
    main.insert("kind".into(), json!(info.kind));
    main.insert("verbs".into(), json!(info.verbs));
    if !info.short_names.is_empty() {
        main.insert("shortNames".into(), json!(info.short_names));
    }
    if !info.categories.is_empty() {
        main.insert("categories".into(), json!(info.categories));
    }
    let mut out = vec![Value::Object(main)];
    for sub in &info.subresources {
        let mut entry = json!({
            "name": format!("{}/{}", info.resource, sub.name()),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": sub.verbs(),
        });
        if let Some((group, version, kind)) = sub.other_kind() {
            // Group and version are written only where they differ from the resource's.
            if (group, version) != (info.group.as_str(), info.version.as_str()) {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
            }
            entry["kind"] = json!(kind);
        }
        out.push(entry);
    }
    out
}

/// `/api/v1` (group `""`) or `/apis/<group>/<version>`: `APIResourceList`
/// including subresource entries (`pods/log`, `deployments/scale`, ...), or
/// `None` if not served.
pub fn resource_list(infos: &[Arc<ResourceInfo>], group: &str, version: &str) -> Option<Value> {
    let mut resources: Vec<&ResourceInfo> =
        infos.iter().filter(|i| i.group == group && i.version == version).map(|i| &**i).collect();
    if resources.is_empty() {
        return None;
    }
    resources.sort_by(|a, b| a.resource.cmp(&b.resource));
    let mut entries: Vec<Value> = resources.into_iter().flat_map(legacy_resource).collect();
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": entries,
    }))
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind {
        group: Some(group.to_owned()),
        version: Some(version.to_owned()),
        kind: Some(kind.to_owned()),
    }
}

fn aggregated_resource(info: &ResourceInfo) -> APIResourceDiscovery {
    APIResourceDiscovery {
        resource: Some(info.resource.clone()),
        response_kind: Some(gvk(&info.group, &info.version, &info.kind)),
        scope: Some(info.scope().to_owned()),
        singular_resource: Some(info.singular.clone()),
        verbs: info.verbs.clone(),
        short_names: info.short_names.clone(),
        categories: info.categories.clone(),
        subresources: info
            .subresources
            .iter()
            .map(|sub| APISubresourceDiscovery {
                subresource: Some(sub.name().to_owned()),
                response_kind: Some(match sub.other_kind() {
                    Some((group, version, kind)) => gvk(group, version, kind),
                    None => gvk(&info.group, &info.version, &info.kind),
                }),
                accepted_types: Vec::new(),
                verbs: sub.verbs().iter().map(|v| (*v).to_owned()).collect(),
            })
            .collect(),
    }
}

/// Aggregated `APIGroupDiscoveryList` for `/api` (`core == true`) or `/apis`,
/// as `apidiscovery.k8s.io/v2beta1` for [`DiscoveryFormat::AggregatedV2Beta1`]
/// and `v2` otherwise.
pub fn aggregated(infos: &[Arc<ResourceInfo>], core: bool, format: DiscoveryFormat) -> Value {
    let items = groups(infos)
        .into_iter()
        .filter(|g| g.name.is_empty() == core)
        .map(|g| APIGroupDiscovery {
            metadata: Some(ObjectMeta {
                name: (!g.name.is_empty()).then(|| g.name.to_owned()),
                ..ObjectMeta::default()
            }),
            versions: g
                .versions
                .into_iter()
                .map(|(version, resources)| APIVersionDiscovery {
                    version: Some(version.to_owned()),
                    resources: resources.into_iter().map(aggregated_resource).collect(),
                    freshness: Some("Current".to_owned()),
                })
                .collect(),
        })
        .collect();
    let list = APIGroupDiscoveryList { metadata: None, items };
    let mut value = serde_json::to_value(list).unwrap_or_else(|_| json!({"items": []}));
    let version = if format == DiscoveryFormat::AggregatedV2Beta1 { "v2beta1" } else { "v2" };
    value["apiVersion"] = json!(format!("apidiscovery.k8s.io/{version}"));
    value["kind"] = json!("APIGroupDiscoveryList");
    value["metadata"] = json!({});
    value
}

/// The `/api` document in the negotiated format.
pub fn api_root(infos: &[Arc<ResourceInfo>], format: DiscoveryFormat) -> Value {
    match format {
        DiscoveryFormat::Legacy => api_versions(infos),
        aggregated_format => aggregated(infos, true, aggregated_format),
    }
}

/// The `/apis` document in the negotiated format.
pub fn apis_root(infos: &[Arc<ResourceInfo>], format: DiscoveryFormat) -> Value {
    match format {
        DiscoveryFormat::Legacy => group_list(infos),
        aggregated_format => aggregated(infos, false, aggregated_format),
    }
}
