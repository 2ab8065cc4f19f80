//! Token-bucket rate limiting of outbound actions, one bucket per workflow (by name), kept by
//! the engine so every caller of a workflow shares it.
//!
//! Each `webhook` or `fhir` action takes one token before its first attempt (retries of an
//! admitted action do not take more; they are bounded by the retry policy and the circuit
//! breaker). `log` actions never leave the process and are not limited. No token: the action is
//! `rate_limited` at once (no waiting, so one slow destination cannot pile up events) and
//! dead-lettered for replay.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;

use super::definition::RateLimitPolicy;

/// A token bucket: holds up to `capacity` tokens, refilled at `rate` per second.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    capacity: f64,
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(policy: &RateLimitPolicy, now: Instant) -> Self {
        let capacity = f64::from(policy.burst.max(1));
        Self { capacity, rate: policy.per_second, tokens: capacity, last: now }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.last = now;
    }

    /// Takes a token if one is available at `now`.
    pub fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Applies a changed policy, keeping the tokens already earned (up to the new capacity).
    fn reconfigure(&mut self, policy: &RateLimitPolicy, now: Instant) {
        self.refill(now);
        self.capacity = f64::from(policy.burst.max(1));
        self.rate = policy.per_second;
        self.tokens = self.tokens.min(self.capacity);
    }

    fn matches(&self, policy: &RateLimitPolicy) -> bool {
        self.rate == policy.per_second && self.capacity == f64::from(policy.burst.max(1))
    }
}

/// The buckets of every workflow and the rejection counter.
pub(crate) struct RateLimiter {
    buckets: Mutex<HashMap<String, TokenBucket>>,
    rejected: Counter,
}

impl RateLimiter {
    pub fn new(rejected: Counter) -> Self {
        Self { buckets: Mutex::new(HashMap::new()), rejected }
    }

    /// Takes a token from `workflow`'s bucket; `false` (and the rejection counted) when empty.
    pub fn try_acquire(&self, workflow: &str, policy: &RateLimitPolicy, now: Instant) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bucket =
            buckets.entry(workflow.to_owned()).or_insert_with(|| TokenBucket::new(policy, now));
        if !bucket.matches(policy) {
            bucket.reconfigure(policy, now);
        }
        let admitted = bucket.try_take(now);
        if !admitted {
            self.rejected.inc();
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn bucket_allows_burst_then_refills() {
        let policy = RateLimitPolicy { per_second: 10.0, burst: 2 };
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(&policy, t0);
        assert!(bucket.try_take(t0));
        assert!(bucket.try_take(t0));
        assert!(!bucket.try_take(t0));
        assert!(!bucket.try_take(t0 + Duration::from_millis(50)));
        assert!(bucket.try_take(t0 + Duration::from_millis(150)));
        // Refill never exceeds the burst.
        let later = t0 + Duration::from_secs(60);
        assert!(bucket.try_take(later) && bucket.try_take(later) && !bucket.try_take(later));
    }

    #[test]
    fn limiter_counts_rejections_per_workflow() {
        let counter = Counter::default();
        let limiter = RateLimiter::new(counter.clone());
        let policy = RateLimitPolicy { per_second: 0.001, burst: 1 };
        let now = Instant::now();
        assert!(limiter.try_acquire("a", &policy, now));
        assert!(!limiter.try_acquire("a", &policy, now));
        assert!(limiter.try_acquire("b", &policy, now), "separate bucket");
        assert_eq!(counter.get(), 1);
        let wider = RateLimitPolicy { per_second: 0.001, burst: 3 };
        assert!(!limiter.try_acquire("a", &wider, now), "earned tokens kept, not refilled");
    }
}
