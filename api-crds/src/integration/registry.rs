//! Integration: an immutable registry entry bound to a tenant.

use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// One integration of the registry. Immutable: create a new one to change it.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "integration.keelson.dev",
    version = "v1alpha1",
    kind = "Integration",
    doc = "An immutable integration registry entry bound to a tenant.",
    namespaced,
    status = "IntegrationStatus",
    shortname = "intg",
    category = "keelson",
    printcolumn(name = "Integration", type_ = "string", json_path = ".spec.integrationId"),
    printcolumn(name = "Tenant", type_ = "string", json_path = ".spec.tenant"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("an Integration is immutable; create a new one instead"))]
#[serde(rename_all = "camelCase")]
pub struct IntegrationSpec {
    /// The integration's id, as credentials and ingress bind to it.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"), length(min = 1, max = 128))]
    pub integration_id: String,
    /// The deployment tenant the integration belongs to.
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"), length(min = 1, max = 128))]
    pub tenant: String,
    /// The Source Profile messages are parsed with.
    pub source_profile: ArtifactRef,
    /// The workflow messages are routed through.
    pub workflow: ArtifactRef,
}

/// A reference to a versioned definition (source profile or workflow).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRef {
    /// The definition's id.
    #[schemars(
        regex(pattern = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"),
        length(min = 1, max = 128)
    )]
    pub id: String,
    /// A pinned version; the latest published one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub version: Option<i64>,
}

/// Observed state of an integration.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IntegrationStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
}
