//! End-to-end tests of Keelson live in `tests/`, benchmarks in `benches/`; this library holds
//! what both need: the built binary, a client for a running `keelson up`, and an
//! OpenAI-compatible test server.

pub mod bench;
pub mod openai;
pub mod rest;

use std::path::{Path, PathBuf};

/// The `keelson` binary built in the same target directory as the running test.
pub fn keelson_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    // target/<profile>/deps/<test> → target/<profile>/keelson
    let profile_dir =
        exe.parent().and_then(|deps| deps.parent()).expect("tests run from target/<profile>/deps");
    let binary = profile_dir.join("keelson");
    assert!(
        binary.exists(),
        "{} is missing: build it first with `cargo build -p keelson`",
        binary.display()
    );
    binary
}

/// A client for the `keelson up` whose data directory is `data_dir` (its kubeconfig).
pub async fn client(data_dir: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(data_dir.join("kubeconfig")).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    kube::Client::try_from(config).unwrap()
}
