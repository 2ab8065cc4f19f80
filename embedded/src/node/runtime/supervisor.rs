//! The supervisor a container process runs under, so that it outlives `keelson up`.
//!
//! Run as `<keelson> supervise <log> <exit record> -- <program> <args…>` by the kubelet (in the
//! container's process group, with its environment and working directory), the supervisor
//! starts the program, copies its output into the container's log and, when it ends, writes
//! an [`ExitRecord`] next to the pid file. If `keelson up` is killed meanwhile, the program
//! keeps running and logging; the next `keelson up` adopts it and reads how it ended from the
//! record, so a Job's attempt is neither lost nor run twice.
//!
//! The supervisor ignores SIGTERM, SIGINT and SIGHUP (handled, not ignored, so the program
//! keeps their default dispositions): the kubelet signals the whole process group, and the
//! supervisor must outlive the program to record its end. After the program exits and its
//! output is drained, the supervisor kills what is left of the group, itself included.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jiff::Timestamp;
use rustix::process::{Signal, getpgrp, kill_process_group};
use serde::{Deserialize, Serialize};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};

use super::logs::{LogStream, LogWriter};

/// The `keelson` subcommand that runs a supervisor.
pub const SUBCOMMAND: &str = "supervise";

/// How long output may keep arriving after the program exits (from processes it left behind).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How a supervised program ended, as written next to its pid file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitRecord {
    /// The exit code, or 128 + the signal number.
    pub exit_code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// When it ended.
    pub finished_at: Timestamp,
    /// `Completed`, `Error` or `ContainerCannotRun`.
    pub reason: String,
    /// Why it could not run, if it could not.
    pub message: Option<String>,
}

/// The arguments after the supervisor's executable for supervising `program`.
pub fn arguments(log: &Path, record: &Path, program: &str, args: &[String]) -> Vec<String> {
    let mut all = vec![
        SUBCOMMAND.to_owned(),
        log.display().to_string(),
        record.display().to_string(),
        "--".to_owned(),
        program.to_owned(),
    ];
    all.extend(args.iter().cloned());
    all
}

/// The exit record of the process whose pid file is `pid_file`.
pub fn record_path(pid_file: &Path) -> PathBuf {
    pid_file.with_extension("exit")
}

/// Reads an exit record, if one was written.
pub fn read_record(path: &Path) -> Option<ExitRecord> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Runs the supervisor with the arguments after [`SUBCOMMAND`]; returns the exit code to end
/// with if the final group kill did not end it first.
pub async fn main(args: &[String]) -> i32 {
    let [log, record_file, separator, program, rest @ ..] = args else {
        eprintln!("usage: keelson {SUBCOMMAND} <log> <exit record> -- <program> [args...]");
        return 2;
    };
    if separator != "--" {
        eprintln!("usage: keelson {SUBCOMMAND} <log> <exit record> -- <program> [args...]");
        return 2;
    }
    // Handled rather than ignored, so the program starts with the default dispositions.
    let mut signals = Vec::new();
    for kind in [SignalKind::terminate(), SignalKind::interrupt(), SignalKind::hangup()] {
        match signal(kind) {
            Ok(stream) => signals.push(stream),
            Err(error) => eprintln!("keelson {SUBCOMMAND}: cannot handle signals: {error}"),
        }
    }
    let record = supervise(Path::new(log), program, rest).await;
    if let Err(error) = write_record(Path::new(record_file), &record) {
        eprintln!("keelson {SUBCOMMAND}: cannot write the exit record: {error}");
    }
    // What the program left in its group goes with it, as in a container, and so does this
    // supervisor now that the record is written.
    let _ = kill_process_group(getpgrp(), Signal::KILL);
    drop(signals);
    record.exit_code
}

/// Runs `program` with `args`, copying its output into a new log at `log`, and says how it
/// ended. A program that cannot be started ends `ContainerCannotRun`, its message logged.
pub async fn supervise(log: &Path, program: &str, args: &[String]) -> ExitRecord {
    let writer = match LogWriter::create(log).await {
        Ok(writer) => writer,
        Err(error) => {
            let message = format!("cannot create the log file {}: {error}", log.display());
            return cannot_run(message, 128);
        }
    };
    let spawned = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            let (message, code) = super::process::spawn_failure_message(program, &error);
            // The failure is recorded even if the log cannot take it.
            let _ = writer.write_line(LogStream::Stderr, message.as_bytes()).await;
            return cannot_run(message, code);
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut capture = tokio::spawn(async move {
        match (stdout, stderr) {
            (Some(stdout), Some(stderr)) => writer.capture(stdout, stderr).await,
            _ => Ok(()),
        }
    });
    let status = child.wait().await;
    let finished_at = Timestamp::now();
    if tokio::time::timeout(DRAIN_TIMEOUT, &mut capture).await.is_err() {
        capture.abort();
    }
    let exit = super::process::Exit::from_status(status, finished_at);
    ExitRecord {
        exit_code: exit.exit_code,
        signal: exit.signal,
        finished_at,
        reason: exit.reason.to_owned(),
        message: None,
    }
}

fn cannot_run(message: String, exit_code: i32) -> ExitRecord {
    ExitRecord {
        exit_code,
        signal: None,
        finished_at: Timestamp::now(),
        reason: super::process::CANNOT_RUN.to_owned(),
        message: Some(message),
    }
}

/// Writes the record whole (a temporary file renamed into place), so a reader never sees half.
fn write_record(path: &Path, record: &ExitRecord) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let partial = path.with_extension("exit.partial");
    std::fs::write(&partial, serde_json::to_vec(record).unwrap_or_default())?;
    std::fs::rename(partial, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::runtime::logs::{self, LogOptions};

    #[tokio::test]
    async fn the_program_s_output_and_end_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        let args = ["-c".to_owned(), "echo out; echo err >&2; exit 3".to_owned()];
        let record = supervise(&log, "sh", &args).await;
        assert_eq!((record.exit_code, record.reason.as_str()), (3, "Error"));
        let text = String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines, ["err", "out"], "both streams are in the log");

        // The directory may not exist yet: a quick program ends before the pid file is written.
        let file = record_path(&dir.path().join("pids/main.pid"));
        assert_eq!(file, dir.path().join("pids/main.exit"));
        write_record(&file, &record).unwrap();
        assert_eq!(read_record(&file), Some(record));
    }

    #[tokio::test]
    async fn a_missing_program_cannot_run_and_says_why_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        let record = supervise(&log, "/no/such/program", &[]).await;
        assert_eq!((record.exit_code, record.reason.as_str()), (127, "ContainerCannotRun"));
        let text = String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
        assert!(text.contains("no such file or directory"), "{text}");
    }

    #[test]
    fn the_command_line_puts_the_program_after_the_separator() {
        let args = arguments(Path::new("/l"), Path::new("/r"), "sh", &["-c".into(), "true".into()]);
        assert_eq!(args, ["supervise", "/l", "/r", "--", "sh", "-c", "true"]);
    }
}
