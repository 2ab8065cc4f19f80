//! Keelson's HTTP facades: thin translations of documented APIs into reads and writes of
//! Keelson's resources. The orchestrator REST API (`/api/v1`) with server-sent events, and
//! the bearer-token authentication it uses.

pub mod auth;
pub mod orchestrator;
