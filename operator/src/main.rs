//! `keelson`: Keelson's one binary.

use clap::Parser;

/// mimalloc: the API server allocates and frees many small JSON values per request, which
/// glibc's allocator handled at a measurable cost (see docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = keelson::cli::Cli::parse();
    keelson::telemetry::init(cli.log_format);
    cli.run()
}
