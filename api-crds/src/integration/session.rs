//! IntegrationSession: a durable workspace of one tenant; its records live in the store.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// A durable Integration Session. Archiving hides it from default lists; it stays readable.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "integration.keelson.dev",
    version = "v1alpha1",
    kind = "IntegrationSession",
    doc = "A durable Integration Session workspace of one tenant; its records live in the integration store.",
    namespaced,
    status = "IntegrationSessionStatus",
    shortname = "isess",
    category = "keelson",
    printcolumn(name = "Tenant", type_ = "string", json_path = ".spec.tenant"),
    printcolumn(name = "Title", type_ = "string", json_path = ".spec.title"),
    printcolumn(name = "Archived", type_ = "boolean", json_path = ".spec.archived"),
    printcolumn(name = "Runs", type_ = "integer", json_path = ".status.runs"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("self.tenant == oldSelf.tenant").message("a session cannot move to another tenant").field_path(".tenant"))]
#[serde(rename_all = "camelCase")]
pub struct IntegrationSessionSpec {
    /// The tenant that owns the session.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"), length(min = 1, max = 128))]
    pub tenant: String,
    /// A title for people.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// Hidden from default lists; reopen by setting it back to false.
    #[serde(default)]
    pub archived: bool,
}

/// Observed state of a session: counts of its records in the store.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IntegrationSessionStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Redacted samples.
    #[serde(default)]
    pub samples: i64,
    /// Artifacts (each with one or more revisions).
    #[serde(default)]
    pub artifacts: i64,
    /// Runs.
    #[serde(default)]
    pub runs: i64,
    /// Workflow draft simulations.
    #[serde(default)]
    pub simulations: i64,
    /// Signed publications.
    #[serde(default)]
    pub publications: i64,
    /// When anything in the session last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity_time: Option<Time>,
}
