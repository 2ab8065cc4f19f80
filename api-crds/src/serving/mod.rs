//! `serving.keelson.dev/v1alpha1`: deploy model servers, cache weights, share GPUs, tune and route.

mod autotune;
mod cache;
mod deployment;
mod gpu_group;
mod routing;

pub use autotune::*;
pub use cache::*;
pub use deployment::*;
pub use gpu_group::*;
pub use routing::*;

/// The API group of this module's kinds.
pub const GROUP: &str = "serving.keelson.dev";
