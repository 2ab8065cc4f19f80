//! Workflow orchestration (`workflows.keelson.dev`): [`spawn`] starts the reconcilers of
//! Flow, Run, Agent, Schedule and Webhook, which carry out what these pure parts decide:
//!
//! - [`plan`]: what a run executes (its flow's plan, a clone's, its own) and its parameters;
//! - [`engine`]: a run's state machine, from its status and its attempts' Jobs;
//! - [`job`]: the Job of one attempt of an agent step, and what a Job says of itself;
//! - [`agent_output`]: the agent protocol, JSON lines on stdout;
//! - [`schedule`]: when a schedule starts, cancels and prunes runs;
//! - [`names`]: names and labels within Kubernetes' limits;
//! - [`settings`]: limits, retention and the clock.
//!
//! Every agent step attempt of a Run is a Kubernetes Job; all of a run's state lives in its
//! status, so a restarted controller resumes exactly where it was.

pub mod agent_output;
pub mod engine;
pub mod job;
pub mod names;
pub mod plan;
mod reconcile;
mod run_controller;
pub mod schedule;
mod schedule_controller;
pub mod settings;

pub use reconcile::{spawn, trigger_path};
