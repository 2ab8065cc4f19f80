//! The `keelson` binary's commands, as a library so tests can call them.

pub mod cli;
pub mod crds;
pub mod telemetry;
pub mod up;
