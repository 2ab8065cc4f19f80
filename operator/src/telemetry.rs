//! Logging: `tracing` to stderr, filtered by `KEELSON_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber.
pub fn init() {
    let filter = EnvFilter::try_from_env("KEELSON_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
