//! The kinds of the resource metrics API (`metrics.k8s.io/v1beta1`), which `k8s-openapi` does
//! not carry: what `kubectl top` reads, in metrics-server's shape.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `apiVersion` of both kinds.
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";

/// A pod's usage: one entry per container.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodMetrics {
    /// `metrics.k8s.io/v1beta1`.
    pub api_version: String,
    /// `PodMetrics`.
    pub kind: String,
    /// The pod's name, namespace, labels and creation time.
    pub metadata: ObjectMeta,
    /// When the window ended.
    pub timestamp: Time,
    /// How long the window was, as a Go duration (`1.002s`).
    pub window: String,
    /// Each container's usage.
    pub containers: Vec<ContainerMetrics>,
}

/// One container's usage.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
pub struct ContainerMetrics {
    /// The container's name.
    pub name: String,
    /// `cpu` and `memory`.
    pub usage: BTreeMap<String, Quantity>,
}

/// A node's usage.
#[derive(Serialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetrics {
    /// `metrics.k8s.io/v1beta1`.
    pub api_version: String,
    /// `NodeMetrics`.
    pub kind: String,
    /// The node's name, labels and creation time.
    pub metadata: ObjectMeta,
    /// When the window ended.
    pub timestamp: Time,
    /// How long the window was, as a Go duration.
    pub window: String,
    /// `cpu` and `memory`.
    pub usage: BTreeMap<String, Quantity>,
}
