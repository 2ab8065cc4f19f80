//! Names and labels of what a Run creates, kept within Kubernetes' length limits.
//!
//! A Job's name is also the value of its pods' `job-name` label, so it must fit a label value
//! (63 characters). Names that would not fit keep a readable prefix and end in a hash of the
//! whole, so two long names never collide by truncation.

use sha2::{Digest, Sha256};

/// The longest label value (and so Job name) Kubernetes accepts.
pub const MAX_LABEL_VALUE: usize = 63;

/// Label on every Job (and so pod) of a run: the run's name, see [`label_value`].
pub const RUN_LABEL: &str = "workflows.keelson.dev/run";
/// Label on every Job of a run: the node id.
pub const NODE_LABEL: &str = "workflows.keelson.dev/node";
/// Label on every Job of a run: the attempt number, from 1.
pub const ATTEMPT_LABEL: &str = "workflows.keelson.dev/attempt";
/// Label on every Run a Schedule starts: the schedule's name, see [`label_value`].
pub const SCHEDULE_LABEL: &str = "workflows.keelson.dev/schedule";

/// The Job of attempt `attempt` (from 1) of node `node` of run `run`: `<run>-<node>-<attempt>`,
/// or, when that is longer than 63 characters, `<prefix>-<hash>-<attempt>` where the hash
/// covers the run and node names.
pub fn job_name(run: &str, node: &str, attempt: i32) -> String {
    let suffix = format!("-{attempt}");
    let base = format!("{run}-{node}");
    if base.len() + suffix.len() <= MAX_LABEL_VALUE {
        return base + &suffix;
    }
    shorten(&base, MAX_LABEL_VALUE - suffix.len()) + &suffix
}

/// `name` as a label value: itself when it fits in 63 characters, else a prefix and a hash.
pub fn label_value(name: &str) -> String {
    if name.len() <= MAX_LABEL_VALUE { name.to_owned() } else { shorten(name, MAX_LABEL_VALUE) }
}

/// `name` cut to at most `max` characters: a prefix, `-`, and 10 hex digits of its SHA-256.
/// The prefix loses trailing `-` and `.` so the result stays a valid DNS label.
fn shorten(name: &str, max: usize) -> String {
    let hash = Sha256::digest(name.as_bytes());
    let hash: String = hash.iter().take(5).map(|b| format!("{b:02x}")).collect();
    let keep = max - hash.len() - 1;
    // Names are ASCII (DNS subdomains), so byte slicing is character slicing.
    let prefix = name[..keep.min(name.len())].trim_end_matches(['-', '.']);
    format!("{prefix}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_run_node_attempt() {
        assert_eq!(
            job_name("weekly-report-2026-w47", "fetch", 1),
            "weekly-report-2026-w47-fetch-1"
        );
    }

    #[test]
    fn long_names_fit_a_label_value_and_stay_distinct() {
        let run = "a-very-long-run-name-that-a-schedule-made-up-from-its-own-name";
        let one = job_name(run, "summarize-the-report", 10);
        let other = job_name(run, "summarize-the-reports", 10);
        assert!(one.len() <= MAX_LABEL_VALUE, "{one}");
        assert!(one.starts_with("a-very-long-run-name"), "{one}");
        assert!(one.ends_with("-10"), "{one}");
        assert_ne!(one, other);
        assert_eq!(one, job_name(run, "summarize-the-report", 10), "the name is stable");
    }

    #[test]
    fn label_values_are_cut_only_when_too_long() {
        assert_eq!(label_value("nightly"), "nightly");
        let long = "x".repeat(100);
        let value = label_value(&long);
        assert_eq!(value.len(), MAX_LABEL_VALUE);
        assert_ne!(value, label_value(&"x".repeat(101)));
    }

    #[test]
    fn a_cut_never_ends_the_prefix_with_a_dash() {
        let run = format!("{}-{}", "r".repeat(45), "s".repeat(30));
        let name = job_name(&run, "n", 1);
        assert!(!name.contains("--"), "{name}");
    }
}
