//! The custom resource types of Keelson's three API groups, all `v1alpha1` and namespaced:
//!
//! - [`serving`] (`serving.keelson.dev`): model deployments, caches, GPU groups, autotune, routing;
//! - [`workflows`] (`workflows.keelson.dev`): flows, runs, agents, schedules, webhooks;
//! - [`integration`] (`integration.keelson.dev`): integrations and integration sessions.
//!
//! Pure data: types, their OpenAPI schemas (with CEL rules), condition helpers and the
//! ClusterRoles that add the kinds to `view` and `edit` ([`roles`]); no I/O.

// kube's `printcolumn(...)` attributes repeat keys such as `type_ = "string"` by design;
// clippy reads the repeats as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

pub mod conditions;
pub mod integration;
pub mod roles;
mod schema;
pub mod serving;
pub mod workflows;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The category every Keelson kind belongs to: `kubectl get keelson` lists them all.
pub const CATEGORY: &str = "keelson";

/// Every CRD of Keelson, in a stable order (by group, then kind).
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    vec![
        integration::Integration::crd(),
        integration::IntegrationSession::crd(),
        serving::GPUGroup::crd(),
        serving::ModelAutotune::crd(),
        serving::ModelCache::crd(),
        serving::ModelDeployment::crd(),
        serving::ModelRouting::crd(),
        workflows::Agent::crd(),
        workflows::Flow::crd(),
        workflows::Run::crd(),
        workflows::Schedule::crd(),
        workflows::Webhook::crd(),
    ]
}
