//! Settings of the workflow controllers, and the clock they read.

use std::sync::Arc;

use jiff::Timestamp;

/// Where the controllers read the time: the system clock, or a test's.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;
const DEFAULT_RUN_TTL_SECONDS: i64 = 7 * 24 * 3600;

/// Settings of the workflow controllers; `Default` is the built-in values and the system clock.
#[derive(Clone)]
pub struct Settings {
    /// Bytes of outputs (keys and values) one node may report (`KEELSON_AGENT_OUTPUT_LIMIT`,
    /// default 64 KiB); more fails the node.
    pub output_limit: usize,
    /// Seconds a finished run is kept when neither it nor its flow says
    /// (`KEELSON_RUN_TTL_SECONDS`, default 7 days).
    pub run_ttl_seconds: i64,
    /// The clock schedules and timeouts are evaluated against.
    pub clock: Clock,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("output_limit", &self.output_limit)
            .field("run_ttl_seconds", &self.run_ttl_seconds)
            .finish_non_exhaustive()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            output_limit: DEFAULT_OUTPUT_LIMIT,
            run_ttl_seconds: DEFAULT_RUN_TTL_SECONDS,
            clock: Arc::new(Timestamp::now),
        }
    }
}

impl Settings {
    /// Settings from a variable lookup with the system clock; every problem is one line of
    /// the error (an unset or blank variable keeps the built-in value).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut settings = Self::default();
        let mut number = |key: &str, min: i64| -> Option<i64> {
            let value = lookup(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())?;
            match value.parse::<i64>() {
                Ok(n) if n >= min => Some(n),
                _ => {
                    problems.push(format!("{key}={value:?}: expected a whole number ≥ {min}"));
                    None
                }
            }
        };
        if let Some(n) = number("KEELSON_AGENT_OUTPUT_LIMIT", 1) {
            settings.output_limit = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number("KEELSON_RUN_TTL_SECONDS", 0) {
            settings.run_ttl_seconds = n;
        }
        if problems.is_empty() { Ok(settings) } else { Err(problems) }
    }

    /// The current time by [`Settings::clock`].
    pub fn now(&self) -> Timestamp {
        (self.clock)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_override_the_defaults_and_bad_ones_are_each_reported() {
        let settings = Settings::from_lookup(|key| match key {
            "KEELSON_AGENT_OUTPUT_LIMIT" => Some("1024".into()),
            "KEELSON_RUN_TTL_SECONDS" => Some(" 60 ".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((settings.output_limit, settings.run_ttl_seconds), (1024, 60));
        let defaults = Settings::from_lookup(|_| None).unwrap();
        assert_eq!((defaults.output_limit, defaults.run_ttl_seconds), (65536, 604800));
        let problems = Settings::from_lookup(|key| match key {
            "KEELSON_AGENT_OUTPUT_LIMIT" => Some("0".into()),
            "KEELSON_RUN_TTL_SECONDS" => Some("a week".into()),
            _ => None,
        })
        .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[1].starts_with("KEELSON_RUN_TTL_SECONDS=\"a week\""), "{problems:?}");
    }
}
