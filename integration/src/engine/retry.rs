//! Retry rules: which failures are retried and how long to wait between attempts.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::definition::RetryPolicy;

/// Whether an HTTP status is worth retrying: 408, 429 and every 5xx. Other 4xx (and 3xx, since
/// redirects are not followed) say the request itself is wrong, so repeating it cannot help.
pub(crate) fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// The wait before retry number `retry` (1 = the wait after the first attempt): the initial
/// backoff doubled per retry, capped at the maximum, with "equal jitter" (half fixed, half
/// random) so that many failing events do not retry in lockstep. A server's `Retry-After` is
/// honoured up to the maximum backoff.
pub(crate) fn backoff(policy: &RetryPolicy, retry: u32, retry_after: Option<Duration>) -> Duration {
    let doubled =
        policy.initial_backoff.saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)));
    let capped = doubled.min(policy.max_backoff);
    let half = capped / 2;
    let jittered = half + half.mul_f64(random_unit());
    match retry_after {
        Some(asked) => jittered.max(asked.min(policy.max_backoff)),
        None => jittered,
    }
}

/// A number in `[0, 1)` from the standard library's randomly keyed hasher (no RNG crate needed
/// for jitter).
fn random_unit() -> f64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses a `Retry-After` header given in seconds (HTTP dates are ignored).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [200, 301, 400, 401, 403, 404, 409, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered() {
        let policy = RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        };
        for _ in 0..50 {
            let first = backoff(&policy, 1, None);
            assert!((Duration::from_millis(50)..=Duration::from_millis(100)).contains(&first));
            let second = backoff(&policy, 2, None);
            assert!((Duration::from_millis(100)..=Duration::from_millis(200)).contains(&second));
            let capped = backoff(&policy, 10, None);
            assert!((Duration::from_millis(150)..=Duration::from_millis(300)).contains(&capped));
            let asked = backoff(&policy, 1, Some(Duration::from_secs(60)));
            assert_eq!(asked, Duration::from_millis(300), "Retry-After is capped");
        }
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
