//! Circuit breakers, one per destination (`scheme://host:port`), shared by every workflow.
//!
//! Closed: calls go through; `failure_threshold` consecutive failed attempts open the circuit
//! (a success resets the count). Open: calls are refused without being made; once `open_for` has
//! passed, the next call becomes the single half-open probe (other calls are still refused while
//! it runs). Probe success closes the circuit; probe failure opens it again for `open_for`.
//!
//! What counts: every HTTP attempt (not every action), since the breaker protects the
//! destination from calls. A failure is a transport error, a timeout, 408, 429 or a 5xx; any
//! other answer (2xx, 3xx, other 4xx) shows the destination is up and counts as healthy.
//! Results of calls admitted before the circuit opened do not change an open or half-open
//! circuit; only the probe decides. The policy (threshold, open time) is the calling workflow's.
//! The state gauge changes lazily: an open circuit reads 2 until the next call probes it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde::Serialize;

use super::definition::CircuitBreakerPolicy;
use super::metrics::DestinationLabels;

/// State of one circuit, as the gauge encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    /// Calls go through (gauge 0).
    Closed,
    /// One probe is allowed (gauge 1).
    HalfOpen,
    /// Calls are refused (gauge 2).
    Open,
}

impl CircuitState {
    fn gauge(self) -> i64 {
        match self {
            Self::Closed => 0,
            Self::HalfOpen => 1,
            Self::Open => 2,
        }
    }
}

/// A destination's circuit, for inspection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CircuitStatus {
    /// `scheme://host:port`.
    pub destination: String,
    /// Current state.
    pub state: CircuitState,
    /// Consecutive failed attempts counted while closed.
    pub consecutive_failures: u32,
    /// When an open circuit admits its probe (RFC 3339); absent unless open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_until: Option<String>,
}

#[derive(Clone, Copy, Debug)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

impl State {
    fn kind(self) -> CircuitState {
        match self {
            Self::Closed { .. } => CircuitState::Closed,
            Self::Open { .. } => CircuitState::Open,
            Self::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }
}

/// What an attempt showed about the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// The destination answered (success or a request-level refusal).
    Healthy,
    /// Transport error, timeout, 408, 429 or 5xx.
    Unhealthy,
}

/// Every destination's circuit.
pub(crate) struct Circuits {
    states: Mutex<HashMap<String, State>>,
    gauge: Family<DestinationLabels, Gauge>,
}

/// Leave to make one call; report its result with [`Permit::record`]. A permit dropped
/// unrecorded (the call never happened) frees the probe slot without changing the state.
pub(crate) struct Permit<'a> {
    circuits: &'a Circuits,
    destination: String,
    probe: bool,
    recorded: bool,
}

impl Circuits {
    pub fn new(gauge: Family<DestinationLabels, Gauge>) -> Self {
        Self { states: Mutex::new(HashMap::new()), gauge }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, State>> {
        self.states.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, destination: &str, state: State) {
        let labels = DestinationLabels { destination: destination.to_owned() };
        self.gauge.get_or_create(&labels).set(state.kind().gauge());
    }

    /// Asks to call `destination` at `now`; `None` when the circuit refuses.
    pub fn acquire(&self, destination: &str, now: Instant) -> Option<Permit<'_>> {
        let mut states = self.lock();
        let state = states.entry(destination.to_owned()).or_insert_with(|| {
            self.publish(destination, State::Closed { failures: 0 });
            State::Closed { failures: 0 }
        });
        let probe = match *state {
            State::Closed { .. } => false,
            State::Open { until } if now < until => return None,
            State::Open { .. } | State::HalfOpen { probing: false } => {
                *state = State::HalfOpen { probing: true };
                self.publish(destination, *state);
                tracing::info!(destination, "circuit half-open: probing");
                true
            }
            State::HalfOpen { probing: true } => return None,
        };
        Some(Permit { circuits: self, destination: destination.to_owned(), probe, recorded: false })
    }

    fn record(
        &self,
        destination: &str,
        probe: bool,
        health: Health,
        policy: &CircuitBreakerPolicy,
        now: Instant,
    ) {
        let mut states = self.lock();
        let Some(state) = states.get_mut(destination) else { return };
        let before = state.kind();
        let open = State::Open { until: now + policy.open_for };
        *state = match (*state, probe, health) {
            (State::HalfOpen { .. }, true, Health::Healthy) => State::Closed { failures: 0 },
            (State::HalfOpen { .. }, true, Health::Unhealthy) => open,
            (State::Closed { .. }, _, Health::Healthy) => State::Closed { failures: 0 },
            (State::Closed { failures }, _, Health::Unhealthy) => {
                let failures = failures.saturating_add(1);
                if failures >= policy.failure_threshold.max(1) {
                    open
                } else {
                    State::Closed { failures }
                }
            }
            // Late results of calls admitted before the circuit opened.
            (unchanged, _, _) => unchanged,
        };
        let after = state.kind();
        if before != after {
            self.publish(destination, *state);
            match after {
                CircuitState::Open => tracing::warn!(
                    destination,
                    open_for_ms = policy.open_for.as_millis() as u64,
                    "circuit opened"
                ),
                CircuitState::Closed => tracing::info!(destination, "circuit closed"),
                CircuitState::HalfOpen => {}
            }
        }
    }

    fn release_probe(&self, destination: &str) {
        if let Some(state @ State::HalfOpen { probing: true }) = self.lock().get_mut(destination) {
            *state = State::HalfOpen { probing: false };
        }
    }

    /// Every known circuit, sorted by destination.
    pub fn statuses(&self, now: Instant) -> Vec<CircuitStatus> {
        let wall = jiff::Timestamp::now();
        let mut out: Vec<CircuitStatus> = self
            .lock()
            .iter()
            .map(|(destination, state)| CircuitStatus {
                destination: destination.clone(),
                state: state.kind(),
                consecutive_failures: match state {
                    State::Closed { failures } => *failures,
                    _ => 0,
                },
                open_until: match state {
                    State::Open { until } => {
                        let left = until.saturating_duration_since(now);
                        wall.checked_add(left).ok().map(|t| t.to_string())
                    }
                    _ => None,
                },
            })
            .collect();
        out.sort_by(|a, b| a.destination.cmp(&b.destination));
        out
    }
}

impl Permit<'_> {
    /// Whether this call is the half-open probe.
    #[cfg(test)]
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Reports the call's result.
    pub fn record(mut self, health: Health, policy: &CircuitBreakerPolicy, now: Instant) {
        self.recorded = true;
        self.circuits.record(&self.destination, self.probe, health, policy, now);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.probe && !self.recorded {
            self.circuits.release_probe(&self.destination);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn circuits() -> Circuits {
        Circuits::new(Family::default())
    }

    fn state(circuits: &Circuits, destination: &str) -> CircuitState {
        circuits
            .statuses(Instant::now())
            .into_iter()
            .find(|s| s.destination == destination)
            .unwrap()
            .state
    }

    #[test]
    fn opens_after_threshold_and_recovers_through_one_probe() {
        let policy = CircuitBreakerPolicy { failure_threshold: 3, open_for: ms(100) };
        let circuits = circuits();
        let d = "http://h:1";
        let t0 = Instant::now();
        for _ in 0..2 {
            circuits.acquire(d, t0).unwrap().record(Health::Unhealthy, &policy, t0);
        }
        circuits.acquire(d, t0).unwrap().record(Health::Healthy, &policy, t0);
        for _ in 0..2 {
            circuits.acquire(d, t0).unwrap().record(Health::Unhealthy, &policy, t0);
        }
        assert_eq!(state(&circuits, d), CircuitState::Closed, "a success reset the count");
        circuits.acquire(d, t0).unwrap().record(Health::Unhealthy, &policy, t0);
        assert_eq!(state(&circuits, d), CircuitState::Open);
        assert!(circuits.acquire(d, t0 + ms(99)).is_none());

        let probe = circuits.acquire(d, t0 + ms(100)).unwrap();
        assert!(probe.is_probe());
        assert_eq!(state(&circuits, d), CircuitState::HalfOpen);
        assert!(circuits.acquire(d, t0 + ms(101)).is_none(), "only one probe");
        probe.record(Health::Unhealthy, &policy, t0 + ms(110));
        assert_eq!(state(&circuits, d), CircuitState::Open);
        assert!(circuits.acquire(d, t0 + ms(150)).is_none(), "re-opened for open_for");

        let probe = circuits.acquire(d, t0 + ms(210)).unwrap();
        probe.record(Health::Healthy, &policy, t0 + ms(211));
        assert_eq!(state(&circuits, d), CircuitState::Closed);
        assert!(!circuits.acquire(d, t0 + ms(212)).unwrap().is_probe());
    }

    #[test]
    fn abandoned_probe_frees_the_slot_and_late_results_are_ignored() {
        let policy = CircuitBreakerPolicy { failure_threshold: 1, open_for: ms(10) };
        let circuits = circuits();
        let d = "http://h:2";
        let t0 = Instant::now();
        let late = circuits.acquire(d, t0).unwrap();
        circuits.acquire(d, t0).unwrap().record(Health::Unhealthy, &policy, t0);
        late.record(Health::Healthy, &policy, t0);
        assert_eq!(state(&circuits, d), CircuitState::Open, "a late success does not close");
        drop(circuits.acquire(d, t0 + ms(10)).unwrap());
        assert!(circuits.acquire(d, t0 + ms(11)).unwrap().is_probe(), "slot freed");
    }
}
