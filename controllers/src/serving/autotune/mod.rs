//! The autotune controller: one ModelAutotune is one coordinate-descent search over a vLLM
//! ModelDeployment's settings, run here rather than in a terminal, so it survives the terminal
//! (and the operator: every step is kept in the status).
//!
//! Each experiment applies its candidate by merge-patching the ModelDeployment's `spec.vllm`,
//! waits until the deployment has rolled it out, and runs a benchmark Job (`keelson bench`, with
//! quality probes when the guard is on) whose results ConfigMap decides: faster and not vetoed
//! is kept, anything else is undone by the next experiment, which starts again from the best
//! settings. At the end the best settings are applied; deleting the ModelAutotune before then
//! restores the baseline. The pure parts:
//!
//! - [`space`]: the parameters, their values in order, and configurations as patches;
//! - [`search`]: what an outcome does to the search and which experiment comes next;
//! - [`rollout`]: whether a deployment runs its current settings everywhere;
//! - [`log`]: the `<model>-autotune-log` ConfigMap.

pub mod log;
mod reconcile;
pub mod rollout;
pub mod search;
pub mod space;

pub use reconcile::{FINALIZER, spawn};
