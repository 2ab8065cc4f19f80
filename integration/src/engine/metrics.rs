//! The engine's Prometheus metrics, with the names of the clinical integration spec.
//!
//! | Metric | Type | Labels |
//! |---|---|---|
//! | `workflow_events_processed_total` | counter | `outcome` = `ok` \| `dead_lettered` \| `no_route` |
//! | `workflow_events_in_progress` | gauge | — |
//! | `workflow_action_duration_seconds` | histogram (5 ms … 10 s) | `action_type` = `log` \| `webhook` \| `fhir` |
//! | `workflow_action_errors_total` | counter | `action_type`, `destination` (`scheme://host:port`, `local` for `log`) |
//! | `workflow_dlq_size` | gauge | — |
//! | `workflow_circuit_breaker_state` | gauge: 0 closed, 1 half-open, 2 open | `destination` |
//! | `workflow_rate_limiter_rejected_total` | counter | — |

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Buckets of `workflow_action_duration_seconds`, 5 ms to 10 s.
const DURATION_BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ActionTypeLabels {
    pub action_type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ActionErrorLabels {
    pub action_type: &'static str,
    pub destination: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DestinationLabels {
    pub destination: String,
}

type DurationFamily = Family<ActionTypeLabels, Histogram, fn() -> Histogram>;

/// Handles to every engine metric (cheap clones of shared atomics).
#[derive(Clone)]
pub(crate) struct EngineMetrics {
    pub events_processed: Family<OutcomeLabels, Counter>,
    pub events_in_progress: Gauge,
    pub action_duration: DurationFamily,
    pub action_errors: Family<ActionErrorLabels, Counter>,
    pub dlq_size: Gauge,
    pub circuit_state: Family<DestinationLabels, Gauge>,
    pub rate_limiter_rejected: Counter,
}

impl EngineMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            events_processed: Family::default(),
            events_in_progress: Gauge::default(),
            action_duration: Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)),
            action_errors: Family::default(),
            dlq_size: Gauge::default(),
            circuit_state: Family::default(),
            rate_limiter_rejected: Counter::default(),
        };
        // prometheus-client appends `_total` to counters.
        registry.register(
            "workflow_events_processed",
            "Events processed by the workflow engine, by outcome",
            metrics.events_processed.clone(),
        );
        registry.register(
            "workflow_events_in_progress",
            "Events being processed by the workflow engine",
            metrics.events_in_progress.clone(),
        );
        registry.register(
            "workflow_action_duration_seconds",
            "Duration of workflow actions, retries included",
            metrics.action_duration.clone(),
        );
        registry.register(
            "workflow_action_errors",
            "Workflow actions that did not succeed (failed, circuit open or rate limited)",
            metrics.action_errors.clone(),
        );
        registry.register(
            "workflow_dlq_size",
            "Entries in the workflow dead letter queue",
            metrics.dlq_size.clone(),
        );
        registry.register(
            "workflow_circuit_breaker_state",
            "Circuit breaker state per destination: 0 closed, 1 half-open, 2 open",
            metrics.circuit_state.clone(),
        );
        registry.register(
            "workflow_rate_limiter_rejected",
            "Workflow actions refused by the rate limiter",
            metrics.rate_limiter_rejected.clone(),
        );
        // Series known in advance exist from the start, so rates and alerts see zeros.
        for outcome in ["ok", "dead_lettered", "no_route"] {
            drop(metrics.events_processed.get_or_create(&OutcomeLabels { outcome }));
        }
        for action_type in ["log", "webhook", "fhir"] {
            drop(metrics.action_duration.get_or_create(&ActionTypeLabels { action_type }));
        }
        metrics
    }
}
