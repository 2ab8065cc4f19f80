//! ModelRouting: the models the weaver's roles and domains use, and whether they are served.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// Which models the weaver's roles and domains are configured to use.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "serving.keelson.dev",
    version = "v1alpha1",
    kind = "ModelRouting",
    doc = "The models the weaver's roles and domains use, and whether the catalog serves them.",
    namespaced,
    status = "ModelRoutingStatus",
    shortname = "mr",
    category = "keelson",
    printcolumn(name = "Degraded", type_ = "boolean", json_path = ".status.degraded"),
    printcolumn(name = "Missing", type_ = "string", json_path = ".status.missingModels"),
    printcolumn(name = "Checked", type_ = "date", json_path = ".status.checkedAt"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ModelRoutingSpec {
    /// Base URL of the model catalog (`GET {catalogUrl}/v1/models`); Keelson's own catalog when
    /// absent. `SERVING_URL` overrides it for the weaver daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^https?://[^\s]+$"))]
    pub catalog_url: Option<String>,
    /// Seconds between preflight checks.
    #[serde(default = "default_interval")]
    #[schemars(range(min = 10, max = 86400))]
    pub preflight_interval_seconds: i32,
    /// Model per weaver role, with fallbacks in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub roles: Vec<RoleModels>,
    /// Per-domain models; each is checked at preflight even if nothing routes to the domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub domains: Vec<DomainModel>,
}

fn default_interval() -> i32 {
    60
}

/// The models of one weaver role.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleModels {
    /// Role name, e.g. `weaver-router` or `weaver-subagent`.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(max = 63))]
    pub name: String,
    /// Model tried first.
    #[schemars(length(min = 1, max = 253))]
    pub primary: String,
    /// Models tried next, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 253)))]
    pub fallbacks: Vec<String>,
}

/// The model of one weaver domain.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainModel {
    /// Domain name.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(max = 63))]
    pub name: String,
    /// Model used by the domain.
    #[schemars(length(min = 1, max = 253))]
    pub model: String,
    /// Backend serving the model; only models served through Keelson (no backend, or
    /// `keelson`) are checked against the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-z0-9][-a-z0-9]*$"), length(max = 63))]
    pub backend: Option<String>,
}

/// Result of the last preflight check.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelRoutingStatus {
    /// True when the catalog could not be read or a configured model is missing.
    #[serde(default)]
    pub degraded: bool,
    /// Configured models the catalog does not advertise, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_models: Vec<String>,
    /// Configured models the catalog advertises, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_models: Vec<String>,
    /// Why the catalog could not be read; empty when it could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_error: Option<String>,
    /// Models the catalog advertised.
    #[serde(default)]
    pub catalog_size: i32,
    /// When the preflight ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<Time>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
}
