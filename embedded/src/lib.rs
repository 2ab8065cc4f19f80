//! Keelson's embedded control plane: a Kubernetes-compatible API server for one machine.
pub mod storage;
pub mod validation;
