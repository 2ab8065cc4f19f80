//! Integration tests of the `keelson` crate: one binary, one module per area.

mod crds;
mod examples;
mod support;
