//! End-to-end tests of Keelson live in `tests/`; this library only locates the built binary.

use std::path::PathBuf;

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
