//! `keelson`: Keelson's one binary.

use clap::Parser;
use keelson_embedded::node::runtime::supervisor;

/// mimalloc: the API server allocates and frees many small JSON values per request, which
/// glibc's allocator handled at a measurable cost (see docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    // The supervisor of a local process pod (an internal command, not part of the CLI): it
    // must start fast and do nothing else.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(supervisor::SUBCOMMAND) {
        std::process::exit(supervisor::main(&args[1..]));
    }
    let cli = keelson::cli::Cli::parse();
    keelson::telemetry::init(cli.log_format);
    cli.run()
}
