//! Keelson's embedded control plane: a Kubernetes-compatible API server for one machine.
//!
//! - [`storage`]: the revision log (SQLite) every object lives in;
//! - [`validation`]: CRD schema and CEL validation, as the Kubernetes API server does it;
//! - [`patch`]: JSON, merge, strategic merge patch and server-side apply;
//! - [`protobuf`]: request bodies of built-ins in Kubernetes' protobuf encoding, as kubectl sends;
//! - [`catalog`], [`selectors`], [`table`], [`discovery`], [`openapi`]: what is served and how;
//! - [`server`]: the HTTPS API server tying them together;
//! - [`node`]: the local node (kubelet, scheduler, workload controllers) for one machine.

pub mod catalog;
pub mod discovery;
pub mod node;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod selectors;
pub mod server;
pub mod storage;
pub mod table;
pub mod validation;

mod container_http;
