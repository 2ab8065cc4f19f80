//! Differential test: python-hl7 (PyPI `hl7`) parses every corpus file, and every value it
//! reports is the raw value this crate gives for the same path.
//!
//! One known difference is accepted: python-hl7 drops whitespace at the end of a segment, while
//! this crate keeps it as the data it is (so re-encoding gives back the input).
//!
//! Needs `python3` with `hl7` installed (`pip install hl7`). Without it the test says so and
//! passes, unless `KEELSON_REQUIRE_PYTHON_HL7` is set, as `.ci/run` does (it installs `hl7`).

use std::collections::BTreeMap;
use std::process::Command;

use keelson_hl7v2::{Message, Path};

use crate::support::{corpus, corpus_dir};

fn python_hl7_available() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import hl7"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var_os("KEELSON_REQUIRE_PYTHON_HL7").is_none(),
            "python-hl7 is required here: pip install hl7"
        );
        eprintln!("python-hl7 not installed (pip install hl7): differential test not run");
    }
    found
}

#[test]
fn every_value_python_hl7_reports_is_the_same_here() {
    if !python_hl7_available() {
        return;
    }
    let files = corpus();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python_hl7_dump.py");
    let output = Command::new("python3")
        .arg(script)
        .args(files.iter().map(|(name, _)| corpus_dir().join(name)))
        .output()
        .expect("python3 runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let reports: BTreeMap<String, Vec<(String, String)>> = String::from_utf8(output.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(|line| {
            let report: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let leaves = report["leaves"]
                .as_array()
                .expect("leaves")
                .iter()
                .map(|leaf| {
                    (leaf[0].as_str().unwrap().to_owned(), leaf[1].as_str().unwrap().to_owned())
                })
                .collect();
            (report["file"].as_str().unwrap().to_owned(), leaves)
        })
        .collect();
    assert_eq!(reports.len(), files.len(), "python-hl7 reported on every file");

    let mut compared = 0;
    let mut differences = Vec::new();
    for (name, bytes) in &files {
        let message = Message::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (path, value) in &reports[name] {
            compared += 1;
            let ours = message.get(path);
            if ours != Some(value.as_str()) && !trailing_whitespace(&message, path, value) {
                differences.push(format!("{name} {path}: python-hl7 {value:?}, here {ours:?}"));
            }
        }
    }
    assert!(compared > 10_000, "only {compared} values compared");
    assert!(
        differences.is_empty(),
        "{} differences, e.g. {:#?}",
        differences.len(),
        &differences[..differences.len().min(10)]
    );
}

/// Whether `path` is the end of its segment and differs from `value` only by whitespace there.
fn trailing_whitespace(message: &Message<'_>, path: &str, value: &str) -> bool {
    let Ok(parsed) = Path::parse(path) else { return false };
    let Some(segment) = message.segment_at(parsed.segment(), parsed.occurrence().unwrap_or(0))
    else {
        return false;
    };
    let ours = parsed.raw(message).unwrap_or_default();
    ours.trim_end() == value && ours != value && segment.raw().ends_with(ours)
}
