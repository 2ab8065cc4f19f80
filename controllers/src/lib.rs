//! Keelson's controllers: what each custom resource becomes in the cluster.
//!
//! - [`serving`]: ModelDeployment, ModelCache and GPUGroup.
//!
//! Each module keeps pure builders and decisions (resource in, desired children or actions
//! out) apart from the reconcilers that read and write the API.

pub mod serving;
