//! Keelson's embedded control plane.
pub mod validation;
