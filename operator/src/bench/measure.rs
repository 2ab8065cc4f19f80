//! What one request measured, and how the measured phase adds up.
//!
//! Decode speed is what a user of one request sees: tokens after the first divided by the time
//! from the first token to the last (the time to the first token is prefill and queueing, not
//! decoding). The benchmark's figure, `tokensPerSecond`, is Σ decode tokens / Σ decode seconds
//! over all measured requests: a per-request speed, whatever the concurrency. The aggregate,
//! Σ completion tokens / wall time of the measured phase, is the server's total output rate
//! and grows with concurrency.

use std::time::Duration;

/// One measured request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Tokens the server generated (its `usage`, else the streamed pieces counted).
    pub completion_tokens: u64,
    /// Tokens generated during `decode_seconds`.
    pub decode_tokens: f64,
    /// Time the decode took: first to last streamed token, or the whole request when the
    /// answer was not streamed.
    pub decode_seconds: f64,
    /// Whether the timing came from streamed tokens.
    pub streamed: bool,
}

impl Sample {
    /// A request's sample from what it saw: `tokens` generated, arriving in `pieces` streamed
    /// pieces, the first after `first` and the last after `last` (from the request's start), the
    /// whole request taking `wall`. Without two pieces at different times the decode cannot be
    /// told apart from the rest, and the wall time is used.
    pub fn timed(
        tokens: u64,
        pieces: u64,
        first: Option<Duration>,
        last: Option<Duration>,
        wall: Duration,
    ) -> Sample {
        match (first, last) {
            (Some(first), Some(last)) if pieces >= 2 && last > first && tokens > 0 => {
                // The first piece arrives at the end of prefill; its tokens are not decode time.
                let first_piece = tokens as f64 / pieces as f64;
                Sample {
                    completion_tokens: tokens,
                    decode_tokens: tokens as f64 - first_piece,
                    decode_seconds: (last - first).as_secs_f64(),
                    streamed: true,
                }
            }
            _ => Sample {
                completion_tokens: tokens,
                decode_tokens: tokens as f64,
                decode_seconds: wall.as_secs_f64(),
                streamed: false,
            },
        }
    }
}

/// The measured phase added up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Per-request decode speed: Σ decode tokens / Σ decode seconds.
    pub tokens_per_second: f64,
    /// Server output rate: Σ completion tokens / wall time of the measured phase.
    pub aggregate_tokens_per_second: f64,
    /// Σ completion tokens.
    pub completion_tokens: u64,
    /// Wall time of the measured phase, in seconds.
    pub duration_seconds: f64,
    /// Measured requests.
    pub samples: usize,
    /// Measured requests whose answer was not streamed (timed by wall time).
    pub unstreamed: usize,
}

/// Adds up `samples` measured in `wall`; `None` when nothing was generated or no time passed.
pub fn summarize(samples: &[Sample], wall: Duration) -> Option<Summary> {
    let decode_tokens: f64 = samples.iter().map(|s| s.decode_tokens).sum();
    let decode_seconds: f64 = samples.iter().map(|s| s.decode_seconds).sum();
    let completion_tokens: u64 = samples.iter().map(|s| s.completion_tokens).sum();
    let wall = wall.as_secs_f64();
    if decode_tokens <= 0.0 || decode_seconds <= 0.0 || wall <= 0.0 {
        return None;
    }
    Some(Summary {
        tokens_per_second: decode_tokens / decode_seconds,
        aggregate_tokens_per_second: completion_tokens as f64 / wall,
        completion_tokens,
        duration_seconds: wall,
        samples: samples.len(),
        unstreamed: samples.iter().filter(|s| !s.streamed).count(),
    })
}

/// Whether to start another measured request, `started` having been started `elapsed` into
/// the phase: until both the iteration count and the minimum duration are reached.
pub fn wants_more(
    started: u64,
    iterations: u32,
    elapsed: Duration,
    min_duration: Duration,
) -> bool {
    started < u64::from(iterations) || elapsed < min_duration
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_streamed_request_is_timed_from_its_first_token_to_its_last() {
        // 65 tokens, one per piece, 400/s after 100 ms to the first: 64 intervals of 2.5 ms.
        let s = Sample::timed(65, 65, Some(ms(100)), Some(ms(260)), ms(265));
        assert!(s.streamed);
        assert_eq!(s.decode_tokens, 64.0);
        assert!((s.decode_tokens / s.decode_seconds - 400.0).abs() < 1e-6);
        // Two tokens per piece: the first piece's two tokens came with prefill.
        let s = Sample::timed(10, 5, Some(ms(50)), Some(ms(90)), ms(90));
        assert_eq!((s.decode_tokens, s.decode_seconds), (8.0, 0.04));
    }

    #[test]
    fn an_unstreamed_request_falls_back_to_wall_time() {
        let s = Sample::timed(64, 0, None, None, ms(500));
        assert!(!s.streamed);
        assert_eq!((s.decode_tokens, s.decode_seconds), (64.0, 0.5));
        // One piece only, or pieces all at once: no decode time to see.
        assert!(!Sample::timed(64, 1, Some(ms(10)), Some(ms(10)), ms(20)).streamed);
        assert!(!Sample::timed(64, 3, Some(ms(10)), Some(ms(10)), ms(20)).streamed);
    }

    #[test]
    fn the_figure_is_per_request_speed_and_the_aggregate_is_total_output() {
        // Four requests in parallel, each 100 tokens decoded in 1 s, the phase taking 1.25 s.
        let one = Sample {
            completion_tokens: 101,
            decode_tokens: 100.0,
            decode_seconds: 1.0,
            streamed: true,
        };
        let summary = summarize(&[one; 4], ms(1250)).unwrap();
        assert_eq!(summary.tokens_per_second, 100.0);
        assert_eq!(summary.aggregate_tokens_per_second, 404.0 / 1.25);
        assert_eq!((summary.completion_tokens, summary.samples, summary.unstreamed), (404, 4, 0));
        // Σ tokens / Σ seconds, not the mean of the rates.
        let slow = Sample { decode_tokens: 100.0, decode_seconds: 4.0, ..one };
        assert_eq!(summarize(&[one, slow], ms(5000)).unwrap().tokens_per_second, 40.0);
    }

    #[test]
    fn nothing_generated_is_no_figure() {
        assert_eq!(summarize(&[], ms(100)), None);
        let empty = Sample::timed(0, 0, None, None, ms(100));
        assert_eq!(summarize(&[empty], ms(100)), None);
    }

    #[test]
    fn requests_continue_until_both_count_and_duration_are_reached() {
        let min = Duration::from_secs(2);
        assert!(wants_more(0, 5, ms(0), min));
        assert!(wants_more(4, 5, ms(3000), min));
        assert!(wants_more(9, 5, ms(1999), min));
        assert!(!wants_more(5, 5, ms(2000), min));
    }
}
