//! `workflows.keelson.dev/v1alpha1`: flows of agent steps and approval gates, their runs,
//! the agents they call, cron schedules and webhooks that start them.

mod agent;
mod flow;
mod run;
mod schedule;
mod webhook;

pub use agent::*;
pub use flow::*;
pub use run::*;
pub use schedule::*;
pub use webhook::*;

/// The API group of this module's kinds.
pub const GROUP: &str = "workflows.keelson.dev";
