//! `keelson`: Keelson's one binary.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    keelson::telemetry::init();
    keelson::cli::Cli::parse().run()
}
