//! Process-wide engine settings (everything else is per workflow).

use std::time::Duration;

/// Settings of the [`super::Engine`]. The defaults suit a single process; the binary maps its
/// command-line/environment settings onto these fields and checks [`EngineSettings::problems`]
/// at startup (the engine refuses invalid settings too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSettings {
    /// Entries the dead letter queue holds before it drops the oldest (default 10 000; at
    /// least 1).
    pub dlq_capacity: usize,
    /// Per-attempt timeout of `webhook` and `fhir` actions that set none (default 10 s).
    pub default_timeout: Duration,
    /// Timeout for establishing a connection, within the attempt's timeout (default 5 s).
    pub connect_timeout: Duration,
    /// `User-Agent` of outbound requests (default `keelson-integration/<version>`).
    pub user_agent: String,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            dlq_capacity: 10_000,
            default_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            user_agent: concat!("keelson-integration/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl EngineSettings {
    /// Every problem with the settings, one line each (empty when valid).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.dlq_capacity == 0 {
            problems.push("dlq_capacity must be at least 1".to_owned());
        }
        if self.default_timeout.is_zero() {
            problems.push("default_timeout must be more than zero".to_owned());
        }
        if self.connect_timeout.is_zero() {
            problems.push("connect_timeout must be more than zero".to_owned());
        }
        if reqwest::header::HeaderValue::from_str(&self.user_agent).is_err() {
            problems.push("user_agent must be a valid header value".to_owned());
        }
        problems
    }
}
