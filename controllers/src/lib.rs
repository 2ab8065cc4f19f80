//! Keelson's controllers: what each custom resource becomes in the cluster.
//!
//! - [`serving`]: ModelDeployment, ModelCache and GPUGroup.
//! - [`workflows`]: Flow, Run, Agent, Schedule and Webhook.
//!
//! Each module keeps pure builders and decisions (resource in, desired children or actions
//! out) apart from the reconcilers that read and write the API.

pub mod api;
pub mod serving;
pub mod workflows;
