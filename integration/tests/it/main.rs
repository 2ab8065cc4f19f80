//! Integration tests of the workflow engine, against real local HTTP destinations.

mod definition;
mod fhir;
mod filters;
mod metrics;
mod rate_limit;
mod resilience;
mod support;
mod webhook;
