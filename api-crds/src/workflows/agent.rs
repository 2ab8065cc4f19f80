//! Agent: a registered executable that flow steps run as Jobs.

use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// An agent: an image and command, with what it can do.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "workflows.keelson.dev",
    version = "v1alpha1",
    kind = "Agent",
    doc = "A registered executable (image and command) that flow steps run as Jobs.",
    namespaced,
    status = "AgentStatus",
    shortname = "ag",
    category = "keelson",
    printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.version"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// Container image.
    #[schemars(length(min = 1, max = 1024), regex(pattern = r"^[^\s]+$"))]
    pub image: String,
    /// Entrypoint; the image's when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment; use `valueFrom.secretKeyRef` for secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// CPU, memory and other resources each step's container requests and is limited to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// What the agent can do, e.g. `summarize`; runs and the REST API filter on these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(regex(pattern = r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$")))]
    #[x_kube(merge_strategy = ListMerge::Set)]
    pub capabilities: Vec<String>,
    /// Version of the agent, semantic versioning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(
        pattern = r"^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
    ))]
    pub version: Option<String>,
    /// What the agent does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub description: Option<String>,
}

/// Observed state of an agent.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
}
