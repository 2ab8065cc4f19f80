//! The kubelet's crash-loop back-off of one container. A container that ends restarts at once
//! the first time; each further end waits 10 s, doubling up to 5 minutes. A container that ran
//! for 10 minutes since its last restart starts over: it restarts at once again.

use std::time::Duration;

use tokio::time::Instant;

/// The first wait.
const INITIAL: Duration = Duration::from_secs(10);

/// The longest wait.
const LONGEST: Duration = Duration::from_secs(300);

/// How long after its last restart a container's back-off is forgotten.
const FORGET: Duration = Duration::from_secs(600);

/// The back-off of one container.
#[derive(Clone, Debug, Default)]
pub struct CrashLoop {
    /// The next wait, and when the container last restarted; `None` before the first end.
    last: Option<(Duration, Instant)>,
}

impl CrashLoop {
    /// How long the container, which ended at `ended`, waits before it restarts.
    pub fn wait(&mut self, ended: Instant) -> Duration {
        match &mut self.last {
            Some((next, restarted)) if ended.duration_since(*restarted) <= FORGET => {
                let wait = *next;
                *next = (wait * 2).min(LONGEST);
                *restarted = ended + wait;
                wait
            }
            _ => {
                self.last = Some((INITIAL, ended));
                Duration::ZERO
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crashing_container_restarts_at_once_then_waits_doubling_up_to_five_minutes() {
        let mut back_off = CrashLoop::default();
        let mut now = Instant::now();
        let mut waits = Vec::new();
        for _ in 0..9 {
            let wait = back_off.wait(now);
            waits.push(wait.as_secs());
            // It crashes a second after each restart.
            now += wait + Duration::from_secs(1);
        }
        assert_eq!(waits, [0, 10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn a_container_that_ran_ten_minutes_restarts_at_once() {
        let mut back_off = CrashLoop::default();
        let start = Instant::now();
        assert_eq!(back_off.wait(start), Duration::ZERO);
        assert_eq!(back_off.wait(start + Duration::from_secs(5)), INITIAL);
        // Restarted at 15 s; ran until past 10 minutes later.
        let much_later = start + Duration::from_secs(15) + FORGET + Duration::from_secs(1);
        assert_eq!(back_off.wait(much_later), Duration::ZERO);
        assert_eq!(back_off.wait(much_later + Duration::from_secs(1)), INITIAL);
    }
}
