//! Keelson's clinical integration runtime.
//!
//! [`engine`] is the legacy in-process workflow engine of the clinical integration spec: workflow
//! definitions (routes with filters, transforms and actions), `log`, `webhook` and `fhir` actions,
//! retries with backoff, a circuit breaker per destination, a token-bucket rate limiter, a bounded
//! dead letter queue, and the `workflow_*` Prometheus metrics.

pub mod engine;
