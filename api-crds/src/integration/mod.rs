//! `integration.keelson.dev/v1alpha1`: the integration registry and durable Integration Sessions.
//!
//! Clinical payloads never live in these resources: they stay in the integration store, and
//! the resources are handles that show status.

mod registry;
mod session;

pub use registry::*;
pub use session::*;

/// The API group of this module's kinds.
pub const GROUP: &str = "integration.keelson.dev";
