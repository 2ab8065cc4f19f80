//! The supervisor a container process runs under, so that it outlives `keelson up`.
//!
//! Run as `<keelson> supervise [--stdin] [--stdin-once] [--tty] <log> <exit record> -- <program>
//! <args…>` by the kubelet (in the container's process group, with its environment and working
//! directory), the supervisor starts the program, copies its output into the container's log,
//! serves it and the program's input to attaching clients (see [`super::attach`]) and, when it
//! ends, writes an [`ExitRecord`] next to the pid file. If `keelson up` is killed meanwhile,
//! the program keeps running and logging; the next `keelson up` adopts it and reads how it
//! ended from the record, so a Job's attempt is neither lost nor run twice.
//!
//! SIGTERM, SIGINT and SIGHUP do not end the supervisor (see [`Stops`]): the kubelet signals
//! the whole process group, and the supervisor must outlive the program to record its end. A
//! program on a terminal leads a session (and so a process group) of its own: the supervisor
//! passes those signals on to it. After the program exits and its output is drained, the
//! supervisor kills what is left of its groups, itself included.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::unistd::{Pid, getpgrp};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncRead;
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

use super::attach::{self, Chunk, Console, Tee, Writer};
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
pub fn arguments(
    log: &Path,
    record: &Path,
    console: Console,
    program: &str,
    args: &[String],
) -> Vec<String> {
    let mut all = vec![SUBCOMMAND.to_owned()];
    let flags =
        [(console.stdin, "--stdin"), (console.stdin_once, "--stdin-once"), (console.tty, "--tty")];
    all.extend(flags.iter().filter(|(on, _)| *on).map(|(_, flag)| (*flag).to_owned()));
    all.extend([log.display().to_string(), record.display().to_string(), "--".to_owned()]);
    all.push(program.to_owned());
    all.extend(args.iter().cloned());
    all
}

/// Splits the console flags off the front of `args`.
fn console_flags(mut args: &[String]) -> (Console, &[String]) {
    let mut console = Console::default();
    while let Some((first, rest)) = args.split_first() {
        match first.as_str() {
            "--stdin" => console.stdin = true,
            "--stdin-once" => console.stdin_once = true,
            "--tty" => console.tty = true,
            _ => break,
        }
        args = rest;
    }
    (console, args)
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
pub fn main(args: &[String]) -> i32 {
    const USAGE: &str =
        "[--stdin] [--stdin-once] [--tty] <log> <exit record> -- <program> [args...]";
    let (console, args) = console_flags(args);
    let [log, record_file, separator, program, rest @ ..] = args else {
        eprintln!("usage: keelson {SUBCOMMAND} {USAGE}");
        return 2;
    };
    if separator != "--" {
        eprintln!("usage: keelson {SUBCOMMAND} {USAGE}");
        return 2;
    }
    // Before the runtime starts a thread, so that every thread inherits the blocked signals.
    let stops = Stops::block().unwrap_or_else(|error| {
        eprintln!("keelson {SUBCOMMAND}: cannot handle the stop signals: {error}");
        Stops::default()
    });
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("keelson {SUBCOMMAND}: cannot start: {error}");
            return 1;
        }
    };
    let record = runtime.block_on(supervise(Path::new(log), console, program, rest, &stops));
    if let Err(error) = write_record(Path::new(record_file), &record) {
        eprintln!("keelson {SUBCOMMAND}: cannot write the exit record: {error}");
    }
    // What the program left in its group goes with it, as in a container, and so does this
    // supervisor now that the record is written.
    let _ = killpg(getpgrp(), Signal::SIGKILL);
    record.exit_code
}

/// The signals the kubelet and a terminal stop a program with.
const STOP_SIGNALS: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// The stop signals the supervisor has received, each noted by its handler. They are blocked
/// in the supervisor's threads except in the one starting the program, while it does: one sent
/// while they are blocked waits for the unblocking, one sent then can only go to that thread,
/// and either way its handler runs on that thread before it goes on. So once the program has
/// started, every stop signal sent before the program joined the process group the kubelet
/// signals has been noted. (With the signals unblocked in other threads too, a handler could
/// run on one of them after the check, and the signal would reach neither the program nor the
/// check: the program would run until the kubelet's grace period ran out.) Handled rather than
/// ignored, so the program starts with their default dispositions.
#[derive(Default)]
pub struct Stops(Vec<(Signal, Arc<AtomicBool>)>);

impl Stops {
    /// Blocks the stop signals in the calling thread, and so in every thread it starts (call it
    /// before any other thread starts), then handles them from now on.
    ///
    /// Blocked first: signal-hook installs a signal's handler before it publishes what the
    /// handler is to do, and a signal that arrives in between is dropped, neither noted nor
    /// ending the process. The kubelet's SIGTERM for a pod deleted as it starts arrives about
    /// when a supervisor gets here; so delivered, it let the program start and run until the
    /// grace period ran out (7 of 3,000 supervisors signalled within 30 ms of their start).
    /// Blocked, it waits for the handler.
    pub fn block() -> std::io::Result<Self> {
        stop_signals().thread_block()?;
        let noted = STOP_SIGNALS
            .into_iter()
            .map(|sent| {
                let flag = Arc::new(AtomicBool::new(false));
                signal_hook::flag::register(sent as i32, flag.clone())?;
                Ok((sent, flag))
            })
            .collect::<std::io::Result<Vec<_>>>();
        if noted.is_err() {
            // Without handlers the signals are not held back: the program must get them.
            let _ = stop_signals().thread_unblock();
        }
        Ok(Self(noted?))
    }

    /// Runs `start` with the stop signals unblocked in this thread, so that a program it starts
    /// has none blocked; one that was pending is noted as they are unblocked.
    fn unblocked<T>(&self, start: impl FnOnce() -> T) -> T {
        if self.0.is_empty() {
            return start();
        }
        let _ = stop_signals().thread_unblock();
        let started = start();
        let _ = stop_signals().thread_block();
        started
    }

    /// The first stop signal received so far, if any.
    fn received(&self) -> Option<Signal> {
        self.0.iter().find(|(_, flag)| flag.load(Ordering::SeqCst)).map(|(sent, _)| *sent)
    }

    /// Passes a stop received by now on to the just started `child`. One sent before the child
    /// joined the group reached only the supervisor: without this, the program would run until
    /// the kubelet's grace period ran out. One sent just after reaches the program twice, which
    /// stops it all the same.
    fn pass_on(&self, child: &Child) {
        if let (Some(sent), Some(pid)) = (self.received(), pid_of(child)) {
            let _ = kill(pid, sent);
        }
    }

    /// Passes every stop signal received from now on to `group`: a program on a terminal leads
    /// a group of its own, which the kubelet's signals miss. Called after [`Stops::pass_on`], on
    /// the thread that started the program, which unblocks the signals for good.
    async fn forward(&self, group: Pid) -> std::convert::Infallible {
        let streams: Vec<_> = STOP_SIGNALS
            .into_iter()
            .filter_map(|sent| Some((sent, signal(SignalKind::from_raw(sent as i32)).ok()?)))
            .collect();
        if !self.0.is_empty() {
            let _ = stop_signals().thread_unblock();
        }
        let forwards = streams.into_iter().map(|(sent, mut stream)| async move {
            while stream.recv().await.is_some() {
                let _ = killpg(group, sent);
            }
        });
        futures::future::join_all(forwards).await;
        std::future::pending().await
    }
}

/// The process id of `child`, unless it has been reaped.
fn pid_of(child: &Child) -> Option<Pid> {
    child.id().and_then(|pid| i32::try_from(pid).ok()).map(Pid::from_raw)
}

/// [`STOP_SIGNALS`] as a signal set.
fn stop_signals() -> SigSet {
    STOP_SIGNALS.into_iter().collect()
}

/// Runs `program` with `args` as `console` says, copying its output into a new log at `log`
/// and serving attaching clients, and says how it ended. A program that cannot be started ends
/// `ContainerCannotRun`, its message logged. One of the `stops` received before the program
/// starts means it never starts.
pub async fn supervise(
    log: &Path,
    console: Console,
    program: &str,
    args: &[String],
    stops: &Stops,
) -> ExitRecord {
    let writer = match LogWriter::create(log).await {
        Ok(writer) => writer,
        Err(error) => {
            let message = format!("cannot create the log file {}: {error}", log.display());
            return cannot_run(message, 128);
        }
    };
    // Bound before the program starts, so a client never finds it running but unattachable.
    let listener = attach::listen(log);
    let output = attach::output_channel();
    let started = stops.unblocked(|| match stops.received() {
        Some(sent) => Err(sent),
        None => Ok(start(program, args, console, &output)),
    });
    let Started { mut child, outputs, input } = match started {
        Err(sent) => return stopped_before_start(sent),
        Ok(Ok(started)) => started,
        Ok(Err(error)) => {
            let (message, code) = super::process::spawn_failure_message(program, &error);
            // The failure is recorded even if the log cannot take it.
            let _ = writer.write_line(LogStream::Stderr, message.as_bytes()).await;
            return cannot_run(message, code);
        }
    };
    stops.pass_on(&child);
    let own_group = pid_of(&child).filter(|_| console.tty);
    let (ended, end) = tokio::sync::oneshot::channel::<()>();
    // Without a listener nobody can attach: the input, if any, ends at once.
    let serving = listener.ok().map(|listener| {
        let input = input.map(Writer::spawn);
        tokio::spawn(attach::serve(listener, output.clone(), input, console, async {
            let _ = end.await;
        }))
    });
    drop(output);
    let mut capture = tokio::spawn(async move {
        let copies = outputs.into_iter().map(|(stream, reader)| writer.copy_lines(stream, reader));
        futures::future::join_all(copies).await;
    });
    let status = match own_group {
        Some(group) => tokio::select! {
            status = child.wait() => status,
            never = stops.forward(group) => match never {},
        },
        None => child.wait().await,
    };
    let finished_at = Timestamp::now();
    if tokio::time::timeout(DRAIN_TIMEOUT, &mut capture).await.is_err() {
        capture.abort();
    }
    let _ = ended.send(());
    if let Some(serving) = serving {
        // A client that does not read its output holds the supervisor up only so long.
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, serving).await;
    }
    if let Some(group) = own_group {
        let _ = killpg(group, Signal::SIGKILL);
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

/// One of a program's output streams, read as it comes.
type Output = Box<dyn AsyncRead + Unpin + Send>;

/// A started program: the process, its output streams (each offered to attaching clients as
/// it is read) and where its input goes, if it takes any.
struct Started {
    child: Child,
    outputs: Vec<(LogStream, Output)>,
    input: Option<Writer>,
}

/// Starts the program: on a new terminal with `tty` (its output all stdout, as a container's
/// on a terminal is), else on pipes; its input open only with `stdin`.
fn start(
    program: &str,
    args: &[String],
    console: Console,
    output: &tokio::sync::broadcast::Sender<Chunk>,
) -> std::io::Result<Started> {
    let tee =
        |reader: Output, stream| -> Output { Box::new(Tee::new(reader, stream, output.clone())) };
    if console.tty {
        let (pty, pts) = pty_process::open().map_err(attach::pty_error)?;
        let _ = pty.resize(pty_process::Size::new(24, 80));
        let child =
            pty_process::Command::new(program).args(args).spawn(pts).map_err(attach::pty_error)?;
        let (read, write) = pty.into_split();
        let outputs = vec![(LogStream::Stdout, tee(Box::new(read), attach::STDOUT))];
        let input = console.stdin.then_some(Writer::Terminal(write));
        return Ok(Started { child, outputs, input });
    }
    let mut child = Command::new(program)
        .args(args)
        .stdin(if console.stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut outputs: Vec<(LogStream, Output)> = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        outputs.push((LogStream::Stdout, tee(Box::new(stdout), attach::STDOUT)));
    }
    if let Some(stderr) = child.stderr.take() {
        outputs.push((LogStream::Stderr, tee(Box::new(stderr), attach::STDERR)));
    }
    let input = child.stdin.take().map(Writer::Pipe);
    Ok(Started { child, outputs, input })
}

/// The end of a program stopped by `signal` before it started: as if the signal had killed it.
fn stopped_before_start(signal: Signal) -> ExitRecord {
    let number = signal as i32;
    ExitRecord {
        exit_code: 128 + number,
        signal: Some(number),
        finished_at: Timestamp::now(),
        reason: "Error".to_owned(),
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
    use crate::node::runtime::attach::{Frame, write_frame};
    use crate::node::runtime::logs::{self, LogOptions};
    use tokio::net::UnixStream;

    #[tokio::test]
    async fn the_program_s_output_and_end_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        let args = ["-c".to_owned(), "echo out; echo err >&2; exit 3".to_owned()];
        let record = supervise(&log, Console::default(), "sh", &args, &Stops::default()).await;
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
        let record =
            supervise(&log, Console::default(), "/no/such/program", &[], &Stops::default()).await;
        assert_eq!((record.exit_code, record.reason.as_str()), (127, "ContainerCannotRun"));
        let text = String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
        assert!(text.contains("no such file or directory"), "{text}");
    }

    /// Sends `signal` to this thread, as the kubelet's to the container's group would reach the
    /// supervisor: the test's other threads do not block it, and would take one sent to the
    /// whole process.
    fn send_here(signal: Signal) {
        nix::sys::signal::raise(signal).unwrap();
    }

    #[tokio::test]
    async fn a_stop_signal_received_before_the_program_starts_keeps_it_from_starting() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        let stops = Stops::block().unwrap();
        // The kubelet's SIGTERM, while the supervisor got ready.
        send_here(Signal::SIGTERM);
        let marker = dir.path().join("ran");
        let args = ["-c".to_owned(), format!("touch {}; sleep 300", marker.display())];
        let record = tokio::time::timeout(
            Duration::from_secs(10),
            supervise(&log, Console::default(), "sh", &args, &stops),
        )
        .await
        .expect("the program did not run its 300 s");
        assert_eq!(
            (record.exit_code, record.signal, record.reason.as_str()),
            (143, Some(15), "Error")
        );
        assert!(!marker.exists(), "the program never started");
    }

    #[tokio::test]
    async fn a_stop_signal_sent_while_the_program_starts_is_passed_on_to_it() {
        use std::os::unix::process::ExitStatusExt;
        let stops = Stops::block().unwrap();
        // Sent just before the program joined the group: only the supervisor has it.
        let mut child = stops.unblocked(|| {
            send_here(Signal::SIGTERM);
            Command::new("sleep").arg("300").spawn().unwrap()
        });
        stops.pass_on(&child);
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("the program did not run its 300 s")
            .unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));

        // With nothing received, nothing is sent.
        let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
        Stops::default().pass_on(&child);
        assert!(child.wait().await.unwrap().success());
    }

    #[tokio::test]
    async fn the_program_starts_with_no_signal_blocked_on_pipes_and_on_a_terminal() {
        let stops = Stops::block().unwrap();
        let args = ["SigBlk".to_owned(), "/proc/self/status".to_owned()];
        for tty in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("main.log");
            let console = Console { tty, ..Console::default() };
            let record = supervise(&log, console, "grep", &args, &stops).await;
            assert_eq!(record.exit_code, 0);
            let text =
                String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
            assert_eq!(
                text.split_whitespace().collect::<Vec<_>>(),
                ["SigBlk:", "0000000000000000"]
            );
        }
    }

    #[tokio::test]
    async fn stop_signals_are_passed_on_to_a_program_on_a_terminal() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("main.log");
        let stops = Stops::block().unwrap();
        let console = Console { tty: true, ..Console::default() };
        let script = "trap 'echo stopped; exit 7' TERM; echo ready; while :; do sleep 0.1; done";
        let args = ["-c".to_owned(), script.to_owned()];
        let supervised = supervise(&log, console, "sh", &args, &stops);
        let stop_when_ready = async {
            let read = || logs::read(&log, &LogOptions::default()).unwrap_or_default();
            while !String::from_utf8_lossy(&read()).contains("ready") {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            send_here(Signal::SIGTERM);
        };
        let (record, ()) = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(supervised, stop_when_ready)
        })
        .await
        .expect("the program was not stopped");
        assert_eq!(record.exit_code, 7);
        let text = String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
        assert!(text.contains("stopped"), "{text}");
    }

    #[test]
    fn the_command_line_puts_the_console_first_and_the_program_after_the_separator() {
        let args = ["-c".to_owned(), "true".to_owned()];
        let plain = arguments(Path::new("/l"), Path::new("/r"), Console::default(), "sh", &args);
        assert_eq!(plain, ["supervise", "/l", "/r", "--", "sh", "-c", "true"]);
        let console = Console { stdin: true, stdin_once: false, tty: true };
        let full = arguments(Path::new("/l"), Path::new("/r"), console, "sh", &args);
        assert_eq!(full, ["supervise", "--stdin", "--tty", "/l", "/r", "--", "sh", "-c", "true"]);
        assert_eq!(console_flags(&full[1..]), (console, &plain[1..]));
    }

    /// Supervises `script` (for `sh -c`) as `console` says in the background; returns the log
    /// path, a client attached to it, and the supervisor's task.
    async fn attached(
        dir: &Path,
        console: Console,
        script: &str,
    ) -> (PathBuf, UnixStream, tokio::task::JoinHandle<ExitRecord>) {
        let log = dir.join("main-0.log");
        let args = vec!["-c".to_owned(), script.to_owned()];
        let task = tokio::spawn({
            let log = log.clone();
            async move { supervise(&log, console, "sh", &args, &Stops::default()).await }
        });
        let until = tokio::time::Instant::now() + Duration::from_secs(2);
        let client = attach::connect_by(&log, until).await.expect("the supervisor listens");
        (log, client, task)
    }

    /// Everything the client receives until the supervisor closes the connection.
    async fn output_of(client: &mut UnixStream) -> String {
        let mut text = Vec::new();
        while let Some(frame) = attach::read_frame(client).await.unwrap() {
            if let Frame::Output { data, .. } = frame {
                text.extend_from_slice(&data);
            }
        }
        String::from_utf8(text).unwrap()
    }

    #[tokio::test]
    async fn an_attached_client_feeds_the_program_and_reads_its_output_live() {
        let dir = tempfile::tempdir().unwrap();
        let console = Console { stdin: true, stdin_once: true, tty: false };
        let script = "read line; echo got $line; echo done >&2; cat";
        let (log, mut client, task) = attached(dir.path(), console, script).await;
        write_frame(&mut client, &Frame::Hello { stdin: true }).await.unwrap();
        write_frame(&mut client, &Frame::Stdin("hello\nrest\n".into())).await.unwrap();
        // With stdinOnce, the end of the client's input is the end of the program's.
        write_frame(&mut client, &Frame::EndInput).await.unwrap();
        let mut lines: Vec<String> = output_of(&mut client).await.lines().map(Into::into).collect();
        lines.sort_unstable();
        assert_eq!(lines, ["done", "got hello", "rest"]);
        assert_eq!(task.await.unwrap().exit_code, 0);
        let text = String::from_utf8(logs::read(&log, &LogOptions::default()).unwrap()).unwrap();
        assert!(text.contains("got hello") && text.contains("rest"), "the log has it too: {text}");
    }

    #[tokio::test]
    async fn a_client_that_leaves_ends_the_input_only_with_stdin_once() {
        let dir = tempfile::tempdir().unwrap();
        // Without stdinOnce the input stays open for the next client.
        let kept = Console { stdin: true, stdin_once: false, tty: false };
        let (_, mut first, task) = attached(dir.path(), kept, "read a; read b; echo $a $b").await;
        write_frame(&mut first, &Frame::Hello { stdin: true }).await.unwrap();
        write_frame(&mut first, &Frame::Stdin("one\n".into())).await.unwrap();
        drop(first);
        let mut second = attach::connect(&dir.path().join("main-0.log")).await.unwrap();
        write_frame(&mut second, &Frame::Hello { stdin: true }).await.unwrap();
        write_frame(&mut second, &Frame::Stdin("two\n".into())).await.unwrap();
        assert_eq!(output_of(&mut second).await, "one two\n");
        assert_eq!(task.await.unwrap().exit_code, 0);

        let dir = tempfile::tempdir().unwrap();
        let once = Console { stdin: true, stdin_once: true, tty: false };
        let (_, mut client, task) = attached(dir.path(), once, "cat; echo input ended").await;
        write_frame(&mut client, &Frame::Hello { stdin: true }).await.unwrap();
        drop(client);
        let record = tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap();
        assert_eq!(record.exit_code, 0);
    }

    #[tokio::test]
    async fn a_program_on_a_terminal_is_attached_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let console = Console { stdin: true, stdin_once: true, tty: true };
        // Output before a client arrives is not repeated to it: the program waits for input.
        let script = "read x; tty; echo typed $x";
        let (_, mut client, task) = attached(dir.path(), console, script).await;
        write_frame(&mut client, &Frame::Hello { stdin: true }).await.unwrap();
        write_frame(&mut client, &Frame::Resize { width: 100, height: 30 }).await.unwrap();
        write_frame(&mut client, &Frame::Stdin("abc\n".into())).await.unwrap();
        let text = output_of(&mut client).await;
        assert!(text.contains("/dev/pts/"), "{text}");
        assert!(text.contains("typed abc"), "{text}");
        assert_eq!(task.await.unwrap().exit_code, 0);
    }
}
