//! Keelson's HTTP facades: thin translations of documented APIs into reads and writes of
//! Keelson's resources and calls of its engines. The orchestrator REST API (`/api/v1`) with
//! server-sent events, the clinical endpoints (`/api/v1/parse`, `/api/v1/workflow`), the
//! model catalog (`/v1/models`) and weaver status (`/api/weaver/status`), the bearer-token
//! authentication they share, and the Prometheus metrics endpoint.

pub mod auth;
pub mod clinical;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod orchestrator;
pub mod server;
pub mod serving;
