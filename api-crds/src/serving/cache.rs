//! ModelCache: model weights fetched once and kept on a shared volume, in RAM or on node disks.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// Desired state of a model cache.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "serving.keelson.dev",
    version = "v1alpha1",
    kind = "ModelCache",
    doc = "Model weights fetched once and kept on a shared volume, in RAM or on node disks.",
    namespaced,
    status = "ModelCacheStatus",
    shortname = "mc",
    category = "keelson",
    printcolumn(name = "Strategy", type_ = "string", json_path = ".spec.storageStrategy"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyNodes"),
    printcolumn(name = "Total", type_ = "integer", json_path = ".status.totalNodes"),
    printcolumn(name = "Path", type_ = "string", json_path = ".status.path"),
    printcolumn(name = "Source", type_ = "string", json_path = ".spec.source", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("has(self.source) || has(self.existingClaimName)").message("set source to download from, or existingClaimName to copy from an existing claim"))]
#[x_kube(validation = Rule::new("self.storageStrategy != 'NodeLocal' || !has(self.existingClaimName)").message("existingClaimName is not used by the NodeLocal strategy").field_path(".existingClaimName"))]
#[serde(rename_all = "camelCase")]
pub struct ModelCacheSpec {
    /// Where the weights come from: `huggingface://org/model`, `hf://…`, `mlc://…`, `oci://…`,
    /// or a bare `org/model` Hugging Face id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(
        pattern = r"^((huggingface|hf|HF|mlc|oci|oras)://)?[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9._\-]+)*(:[A-Za-z0-9._\-]+|@sha256:[a-f0-9]{64})?$"
    ))]
    pub source: Option<String>,
    /// How the cache is stored.
    #[serde(default)]
    pub storage_strategy: StorageStrategy,
    /// An existing shared claim that already holds (SharedPVC) or is copied into (Memory) the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub existing_claim_name: Option<String>,
    /// Model directory inside the cache; defaults to the cache name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._\-]+(/[A-Za-z0-9._\-]+)*$"))]
    pub model_path: Option<String>,
    /// Size of the volume claim created for SharedPVC, e.g. `50Gi`.
    #[serde(default = "default_size")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$"))]
    pub size: String,
    /// Storage class of the created claim; the cluster default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub storage_class_name: Option<String>,
    /// Secret holding `HF_TOKEN` for gated models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::optional_object_name")]
    pub secret_ref: Option<String>,
    /// Nodes the cache targets (Memory and NodeLocal), commonly the hostname label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
}

fn default_size() -> String {
    "50Gi".to_owned()
}

/// Where a cache keeps its files.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum StorageStrategy {
    /// One shared volume claim filled by a download job.
    #[default]
    SharedPVC,
    /// A copy in each targeted node's RAM, kept by a per-node syncer.
    Memory,
    /// A copy on each targeted node's disk, kept by a per-node syncer.
    NodeLocal,
}

/// Observed state of a model cache.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ModelCacheStatus {
    /// Pending, Provisioning, Ready or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ModelCachePhase>,
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Where deployments find the model: `<claim>:<modelPath>` or a node path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Nodes whose copy is in sync.
    #[serde(default)]
    pub ready_nodes: i32,
    /// Nodes the cache targets.
    #[serde(default)]
    pub total_nodes: i32,
}

/// Lifecycle phase of a ModelCache.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub enum ModelCachePhase {
    /// Nothing created yet.
    Pending,
    /// Downloading or syncing.
    Provisioning,
    /// The model is available everywhere the cache targets.
    Ready,
    /// The download failed or the spec is invalid.
    Failed,
}
