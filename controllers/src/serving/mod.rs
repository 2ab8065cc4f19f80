//! The model-serving controllers (`serving.keelson.dev`): [`spawn`] starts the reconcilers of
//! ModelDeployment, ModelCache and GPUGroup, which apply what these pure builders describe:
//!
//! - [`settings`]: images, the gateway annotation prefix and the benchmark client, from the
//!   environment; labels and owner references every child carries;
//! - [`workload`]: a ModelDeployment's serving Deployment and Service, per backend;
//! - [`benchmark`]: its benchmark Job and the reading of the results ConfigMap;
//! - [`cache`]: a ModelCache's claim, download Job, per-node syncer DaemonSet and status;
//! - [`gpu_group`]: which member of an `Exclusive` GPUGroup holds the GPU;
//! - [`status`]: a ModelDeployment's status from its cache, Deployment, pods and benchmark;
//! - [`preflight`]: what stands in a model's way on its GPU node (the `NodeClear` condition);
//! - [`autotune`]: the ModelAutotune search (started with the others);
//! - [`weaver`]: the weaver model preflight of ModelRoutings (started by [`weaver::spawn`]).

pub mod autotune;
pub mod benchmark;
pub mod cache;
pub mod gpu_group;
pub mod preflight;
mod reconcile;
pub mod settings;
pub mod status;
pub mod weaver;
pub mod workload;

pub use reconcile::{MANAGER, spawn};
