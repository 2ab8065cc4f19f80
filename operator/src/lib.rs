//! The `keelson` binary's commands, as a library so tests can call them.

pub mod api;
pub mod autotune;
pub mod bench;
pub mod benchmark;
pub mod cli;
pub mod crds;
pub mod kube_args;
pub mod models;
pub mod operator;
pub mod telemetry;
pub mod token;
pub mod up;
pub mod weaver;
