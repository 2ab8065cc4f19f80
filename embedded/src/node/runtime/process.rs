//! One container run as a local process: the image is ignored, `command` + `args` run on the
//! host in their own process group, with their output captured into the container's log file.
//!
//! When the main process exits, whatever it left running in its process group is killed, as a
//! container's processes die with its PID namespace. A pid file records each running process
//! (layout chosen by the kubelet: `<pod_dir>/pids/<container>.pid`) so that [`reap_orphans`] can
//! kill the processes of a previous run that ended without cleaning up.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::attach::Console;
use super::logs::{LogStream, LogWriter};
use super::supervisor::{self, ExitRecord};

/// Reason reported when a container's process could not be started.
pub(crate) const CANNOT_RUN: &str = "ContainerCannotRun";

/// How long output may keep arriving after the process group is gone (from processes that
/// left the group) before the log is closed without it.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an exit is looked for when no SIGCHLD arrives.
const EXIT_POLL: Duration = Duration::from_secs(1);

/// What to run for one container attempt, with everything already resolved by the kubelet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The executable: a path, or a name looked up in the `PATH` of `env`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The process's whole environment: nothing is inherited from Keelson's own, so the
    /// kubelet supplies `PATH`, `HOME` and the like.
    pub env: Vec<(String, String)>,
    /// The working directory, created if missing.
    pub work_dir: PathBuf,
    /// The log file of this attempt (see [`super::logs::log_path`]).
    pub log_path: PathBuf,
    /// Where the process id is recorded while it runs (`<pod_dir>/pids/<container>.pid`).
    pub pid_file: PathBuf,
    /// The `keelson` executable to run the process under (see [`super::supervisor`]), so it
    /// outlives this process; run directly when `None`.
    pub supervisor: Option<PathBuf>,
    /// Its input and terminal for attaching clients; only a supervised process has them.
    pub console: Console,
}

/// Why a process could not be started, as the container's terminated state reports it. The
/// message is also written to the container's log (stderr).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct StartFailure {
    /// The terminated reason, `ContainerCannotRun`.
    pub reason: String,
    /// What went wrong.
    pub message: String,
    /// 127 when the executable does not exist, 126 when it cannot be executed, else 128.
    pub exit_code: i32,
}

impl StartFailure {
    fn new(message: String, exit_code: i32) -> Self {
        Self { reason: CANNOT_RUN.to_owned(), message, exit_code }
    }
}

/// How a process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// Its exit code, or 128 + the signal number when a signal killed it.
    pub exit_code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// When its end was noticed.
    pub finished_at: Timestamp,
    /// `Completed` for exit code 0, `Error` otherwise, as the kubelet reports;
    /// `ContainerCannotRun` when a supervised program could not be started.
    pub reason: &'static str,
    /// Why a supervised program could not be started.
    pub message: Option<String>,
}

impl Exit {
    fn new(exit_code: i32, signal: Option<i32>, finished_at: Timestamp) -> Self {
        let reason = if exit_code == 0 { "Completed" } else { "Error" };
        Self { exit_code, signal, finished_at, reason, message: None }
    }

    /// How a supervised program ended, from its record.
    fn from_record(record: ExitRecord) -> Self {
        let mut exit = Self::new(record.exit_code, record.signal, record.finished_at);
        if record.reason == CANNOT_RUN {
            exit.reason = CANNOT_RUN;
        }
        exit.message = record.message;
        exit
    }

    pub(crate) fn from_status(status: io::Result<ExitStatus>, finished_at: Timestamp) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match status {
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => Self::new(code, None, finished_at),
                (None, Some(signal)) => Self::new(128 + signal, Some(signal), finished_at),
                (None, None) => Self::new(128, None, finished_at),
            },
            // The status was lost (not expected for our own child): report a failure.
            Err(_) => Self::new(128, None, finished_at),
        }
    }
}

/// A started container process. Dropping it leaves the process running (and still watched):
/// stop it with a [`Terminator`].
#[derive(Debug)]
pub struct RunningProcess {
    pid: u32,
    started_at: Timestamp,
    terminator: Terminator,
    monitor: Option<JoinHandle<Exit>>,
    exit: Option<Exit>,
}

impl RunningProcess {
    /// The process id, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// When the process was started.
    pub fn started_at(&self) -> Timestamp {
        self.started_at
    }

    /// Waits until the process has exited and all its output is in the log (output from
    /// processes that left its group is waited for at most a few seconds). Can be called again.
    pub async fn wait(&mut self) -> Exit {
        if let Some(exit) = &self.exit {
            return exit.clone();
        }
        let exit = match self.monitor.take() {
            Some(monitor) => {
                monitor.await.unwrap_or_else(|_| Exit::new(128, None, Timestamp::now()))
            }
            None => Exit::new(128, None, Timestamp::now()),
        };
        self.exit = Some(exit.clone());
        exit
    }

    /// A handle that stops the process from another task.
    pub fn terminator(&self) -> Terminator {
        self.terminator.clone()
    }
}

/// Stops a container process: cheap to clone and usable from any task.
#[derive(Clone, Debug)]
pub struct Terminator {
    group: Arc<Group>,
}

impl Terminator {
    /// Sends SIGTERM to the process group (once, however often this is called), then SIGKILL
    /// after `grace` if its main process has not exited by then. Returns once the main process
    /// has exited; whatever it left in its group is killed at that point.
    pub async fn terminate(&self, grace: Duration) {
        let mut exited = self.group.exited.subscribe();
        if *exited.borrow() {
            return;
        }
        let leader = self.group.leader.as_raw_nonzero();
        if !self.group.term_sent.swap(true, Ordering::SeqCst) {
            tracing::debug!(group = leader, ?grace, "stopping a container process: SIGTERM");
            self.group.signal(Signal::TERM);
        }
        let in_grace = tokio::time::timeout(grace, exited.wait_for(|&done| done)).await.is_ok();
        if !in_grace {
            tracing::debug!(group = leader, "grace period over: SIGKILL");
            self.group.signal(Signal::KILL);
            // The monitor always reports the exit of a killed process; an error here would mean
            // it is gone, and then nothing is left to wait for.
            let _ = exited.wait_for(|&done| done).await;
        }
    }
}

/// The process group of one container process, shared by its monitor and terminators.
#[derive(Debug)]
struct Group {
    /// The main process, leader of the group.
    leader: Pid,
    /// Whether the leader has been reaped: from then on its id may belong to someone else, so
    /// no signal is sent. Held while signalling so reaping cannot happen in between.
    reaped: Mutex<bool>,
    term_sent: AtomicBool,
    /// Becomes true once the leader has exited and been reaped.
    exited: watch::Sender<bool>,
    /// For a process adopted from an earlier `keelson up` (not our child, so never reaped by
    /// us): its recorded start time, checked before every signal.
    adopted_start: Option<u64>,
}

impl Group {
    /// The group led by `leader`, started here (`adopted_start` none) or adopted.
    fn new(leader: Pid, adopted_start: Option<u64>) -> Arc<Self> {
        let (exited, _) = watch::channel(false);
        Arc::new(Self {
            leader,
            reaped: Mutex::new(false),
            term_sent: AtomicBool::new(false),
            exited,
            adopted_start,
        })
    }

    fn lock_reaped(&self) -> MutexGuard<'_, bool> {
        self.reaped.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `signal` to every process of the group, unless the leader is already reaped.
    fn signal(&self, signal: Signal) {
        let reaped = self.lock_reaped();
        let still_there = self.adopted_start.is_none_or(|start| {
            u32::try_from(self.leader.as_raw_nonzero().get())
                .is_ok_and(|pid| still_ours(pid, start).is_some())
        });
        if !*reaped && still_there {
            // ESRCH only means nobody is left; our own children cannot refuse (EPERM).
            let _ = rustix::process::kill_process_group(self.leader, signal);
        }
    }
}

/// Starts the process described by `spec`: creates its working directory and log file, spawns
/// it in its own process group with stdin closed, records its pid file and captures its output.
/// A process that cannot be started is reported (and its message logged), never waited on.
pub async fn start(spec: ProcessSpec) -> Result<RunningProcess, StartFailure> {
    let log = LogWriter::create(&spec.log_path).await.map_err(|error| {
        StartFailure::new(
            format!("cannot create the log file {}: {error}", spec.log_path.display()),
            128,
        )
    })?;
    if let Err(error) = tokio::fs::create_dir_all(&spec.work_dir).await {
        let message =
            format!("cannot create the working directory {}: {error}", spec.work_dir.display());
        return Err(logged(&log, StartFailure::new(message, 128)).await);
    }

    let record = spec.supervisor.as_ref().map(|_| supervisor::record_path(&spec.pid_file));
    let mut command = match (&spec.supervisor, &record) {
        // The supervisor starts the program and writes its log.
        (Some(exe), Some(record)) => {
            // The record goes next to the pid file; a quick program's supervisor writes it
            // before the pid file is.
            if let Some(parent) = record.parent() {
                let _ = tokio::fs::create_dir_all(parent).await;
            }
            let _ = tokio::fs::remove_file(record).await;
            let mut command = Command::new(exe);
            let args = supervisor::arguments(
                &spec.log_path,
                record,
                spec.console,
                &spec.program,
                &spec.args,
            );
            command.args(args).stdout(Stdio::null()).stderr(Stdio::null());
            command
        }
        _ => {
            let mut command = Command::new(&spec.program);
            command.args(&spec.args).stdout(Stdio::piped()).stderr(Stdio::piped());
            command
        }
    };
    command
        .env_clear()
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&spec.work_dir)
        .stdin(Stdio::null())
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Err(logged(&log, spawn_failure(&spec, &error)).await),
    };
    let started_at = Timestamp::now();
    let Some((pid, leader)) = child.id().and_then(|pid| Some((pid, as_pid(pid)?))) else {
        let message = "the process ended before its id could be read".to_owned();
        return Err(logged(&log, StartFailure::new(message, 128)).await);
    };

    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let capture_log = log.clone();
    let capture = tokio::spawn(async move {
        match (stdout, stderr) {
            (Some(stdout), Some(stderr)) => capture_log.capture(stdout, stderr).await,
            _ => Ok(()),
        }
    });
    let group = Group::new(leader, None);

    if let Err(error) = write_pid_file(&spec.pid_file, pid).await {
        group.signal(Signal::KILL);
        let _ = child.wait().await;
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, capture).await;
        let message =
            format!("cannot record the process id in {}: {error}", spec.pid_file.display());
        return Err(logged(&log, StartFailure::new(message, 128)).await);
    }

    let monitor = tokio::spawn(monitor(child, group.clone(), capture, spec.pid_file, record));
    Ok(RunningProcess {
        pid,
        started_at,
        terminator: Terminator { group },
        monitor: Some(monitor),
        exit: None,
    })
}

/// Writes the failure's message to the log as a stderr line, so `kubectl logs` shows it.
async fn logged(log: &LogWriter, failure: StartFailure) -> StartFailure {
    // The failure is reported through the container status even if the log cannot take it.
    let _ = log.write_line(LogStream::Stderr, failure.message.as_bytes()).await;
    failure
}

/// The failure for an executable that could not be run, worded like the container runtimes.
fn spawn_failure(spec: &ProcessSpec, error: &io::Error) -> StartFailure {
    let path = spec.env.iter().rev().find(|(name, _)| name == "PATH").map(|(_, p)| p.as_str());
    let (message, exit_code) = failure_message(&spec.program, path, error);
    StartFailure::new(message, exit_code)
}

/// [`spawn_failure`]'s message and exit code for a supervised program, which runs with the
/// container's `PATH` as its own.
pub(crate) fn spawn_failure_message(program: &str, error: &io::Error) -> (String, i32) {
    failure_message(program, std::env::var("PATH").ok().as_deref(), error)
}

fn failure_message(program: &str, path: Option<&str>, error: &io::Error) -> (String, i32) {
    let prefix = format!("unable to start container process: exec: {program:?}");
    match error.kind() {
        io::ErrorKind::NotFound if program.contains('/') => {
            (format!("{prefix}: no such file or directory"), 127)
        }
        io::ErrorKind::NotFound => {
            let given = match path {
                Some(path) => format!("PATH={path:?}"),
                None => "the container has no PATH".to_owned(),
            };
            (format!("{prefix}: executable file not found in $PATH ({given})"), 127)
        }
        io::ErrorKind::PermissionDenied => (format!("{prefix}: permission denied"), 126),
        _ => (format!("{prefix}: {error}"), 128),
    }
}

fn as_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// Watches the process to its end: notices the exit (before reaping, so the group id is still
/// ours), kills what is left of the group, reaps, removes the pid file and lets the output drain.
async fn monitor(
    mut child: Child,
    group: Arc<Group>,
    mut capture: JoinHandle<io::Result<()>>,
    pid_file: PathBuf,
    record: Option<PathBuf>,
) -> Exit {
    wait_for_exit(group.leader).await;
    let finished_at = Timestamp::now();
    let reaped = {
        let mut reaped = group.lock_reaped();
        // The main process is gone: the rest of its group goes with it, as in a container.
        let _ = rustix::process::kill_process_group(group.leader, Signal::KILL);
        let status = child.try_wait();
        *reaped = matches!(status, Ok(Some(_)));
        status
    };
    let status = match reaped {
        Ok(Some(status)) => Ok(status),
        // Not expected once the exit was seen; wait the ordinary way.
        _ => {
            let status = child.wait().await;
            *group.lock_reaped() = true;
            status
        }
    };
    tracing::debug!(pid = group.leader.as_raw_nonzero(), "container process exited");
    group.exited.send_replace(true);
    remove_pid_file(&pid_file).await;
    // Output may still be in the pipes; a process that escaped the group could hold them open.
    if tokio::time::timeout(DRAIN_TIMEOUT, &mut capture).await.is_err() {
        capture.abort();
    }
    // A supervisor ends killed by its own group kill; its record says how the program ended.
    match record.as_deref().and_then(take_record) {
        Some(record) => Exit::from_record(record),
        None => Exit::from_status(status, finished_at),
    }
}

/// A supervised process that an earlier `keelson up` started, found again by [`adopt`].
#[derive(Debug)]
pub enum Adopted {
    /// Still running: watched and stoppable as if this process had started it.
    Running(RunningProcess),
    /// It ended while nobody watched; this is how.
    Ended(Exit),
}

/// A process's environment, from `/proc/<pid>/environ`.
pub fn environment(pid: u32) -> Option<Vec<(String, String)>> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let pairs = raw.split(|b| *b == 0).filter(|entry| !entry.is_empty()).filter_map(|entry| {
        let text = String::from_utf8_lossy(entry);
        let (key, value) = text.split_once('=')?;
        Some((key.to_owned(), value.to_owned()))
    });
    Some(pairs.collect())
}

/// Finds the supervised process recorded in `pid_file` by an earlier `keelson up`: its exit
/// record if it has ended, else the process itself if it still runs (the recorded start time
/// proves it is the same one). `None` when neither is there: the process is lost. Only on
/// Linux, where start times can be read.
pub fn adopt(pid_file: &Path) -> Option<Adopted> {
    let record = supervisor::record_path(pid_file);
    if let Some(ended) = take_record(&record) {
        let _ = std::fs::remove_file(pid_file);
        return Some(Adopted::Ended(Exit::from_record(ended)));
    }
    #[cfg(target_os = "linux")]
    {
        let (pid, start) = parse_pid_record(&std::fs::read_to_string(pid_file).ok()?)?;
        let leader = still_ours(pid, start)?;
        let started_at = std::fs::metadata(pid_file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| Timestamp::try_from(t).ok())
            .unwrap_or_else(Timestamp::now);
        let group = Group::new(leader, Some(start));
        let monitor =
            tokio::spawn(watch_adopted(group.clone(), pid, start, pid_file.to_owned(), record));
        Some(Adopted::Running(RunningProcess {
            pid,
            started_at,
            terminator: Terminator { group },
            monitor: Some(monitor),
            exit: None,
        }))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Watches an adopted supervisor until it is gone, then reads how its program ended.
#[cfg(target_os = "linux")]
async fn watch_adopted(
    group: Arc<Group>,
    pid: u32,
    start: u64,
    pid_file: PathBuf,
    record: PathBuf,
) -> Exit {
    while still_ours(pid, start).is_some() {
        tokio::time::sleep(EXIT_POLL / 5).await;
    }
    *group.lock_reaped() = true;
    group.exited.send_replace(true);
    remove_pid_file(&pid_file).await;
    take_record(&record).map_or_else(
        || {
            // Killed before it could record anything (SIGKILL after the grace period).
            Exit::new(137, Some(9), Timestamp::now())
        },
        Exit::from_record,
    )
}

/// Reads and removes an exit record.
fn take_record(path: &Path) -> Option<ExitRecord> {
    let record = supervisor::read_record(path);
    let _ = std::fs::remove_file(path);
    record
}

/// Waits until `pid` (our child) has exited, without reaping it.
async fn wait_for_exit(pid: Pid) {
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), options) {
            Ok(Some(_)) => return,
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            // Not (or no longer) a child we can wait for: nothing will change.
            Err(_) => return,
        }
        match &mut sigchld {
            Some(sigchld) => {
                let _ = tokio::time::timeout(EXIT_POLL, sigchld.recv()).await;
            }
            None => tokio::time::sleep(EXIT_POLL / 10).await,
        }
    }
}

/// Records `<pid> <start time>` (Linux; the start time from `/proc/<pid>/stat`) or `<pid>`.
async fn write_pid_file(path: &Path, pid: u32) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent).await?;
    }
    tokio::fs::write(path, format!("{}\n", pid_record(pid).await?)).await
}

#[cfg(target_os = "linux")]
async fn pid_record(pid: u32) -> io::Result<String> {
    let stat = tokio::fs::read_to_string(format!("/proc/{pid}/stat")).await?;
    let (start, _) = parse_stat(&stat)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable /proc stat"))?;
    Ok(format!("{pid} {start}"))
}

#[cfg(not(target_os = "linux"))]
async fn pid_record(pid: u32) -> io::Result<String> {
    Ok(pid.to_string())
}

async fn remove_pid_file(path: &Path) {
    // Already gone is fine; a file left behind is only a stale record that reap_orphans checks.
    let _ = tokio::fs::remove_file(path).await;
}

/// The start time (field 22, clock ticks since boot) and process group (field 5) from the text
/// of `/proc/<pid>/stat`. The command name (field 2) may hold spaces and parentheses, so
/// fields are counted after its last `)`.
#[cfg(target_os = "linux")]
fn parse_stat(stat: &str) -> Option<(u64, i32)> {
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // `fields[0]` is field 3.
    let group = fields.get(5 - 3)?.parse().ok()?;
    let start = fields.get(22 - 3)?.parse().ok()?;
    Some((start, group))
}

/// Kills the processes a previous run left behind, except in the pod directories `keep`
/// accepts. Scans `pods_root/*/pids/*.pid`; for each record whose process still exists with
/// the recorded start time and still leads its own process group, sends SIGKILL to that group.
/// Removes the pid files (and exit records) and returns the pids killed. Only on Linux, where the start time proves the process is ours; elsewhere it does
/// nothing rather than risk killing an unrelated process that reused the id.
pub fn reap_orphans(pods_root: &Path, keep: impl Fn(&Path) -> bool) -> Vec<u32> {
    #[cfg(target_os = "linux")]
    {
        let mut killed = Vec::new();
        for pid_file in pid_files(pods_root, keep) {
            if let Ok(text) = std::fs::read_to_string(&pid_file)
                && let Some((pid, start)) = parse_pid_record(&text)
                && let Some(leader) = still_ours(pid, start)
                && rustix::process::kill_process_group(leader, Signal::KILL).is_ok()
            {
                killed.push(pid);
            }
            let _ = std::fs::remove_file(&pid_file);
            let _ = std::fs::remove_file(supervisor::record_path(&pid_file));
        }
        killed
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pods_root, keep);
        Vec::new()
    }
}

/// The pid files under `pods_root/<pod>/pids/`, except in the pod directories `keep` accepts.
#[cfg(target_os = "linux")]
fn pid_files(pods_root: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(pods) = std::fs::read_dir(pods_root) else { return Vec::new() };
    pods.flatten()
        .filter(|pod| !keep(&pod.path()))
        .filter_map(|pod| std::fs::read_dir(pod.path().join("pids")).ok())
        .flat_map(|files| files.flatten().map(|file| file.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "pid"))
        .collect()
}

/// `<pid> <start time>` from a pid file.
#[cfg(target_os = "linux")]
fn parse_pid_record(text: &str) -> Option<(u32, u64)> {
    let mut fields = text.split_whitespace();
    let pid = fields.next()?.parse().ok()?;
    let start = fields.next()?.parse().ok()?;
    Some((pid, start))
}

/// The process group to kill if `pid` is still the process recorded (same start time) and
/// still leads its group; never init or Keelson itself.
#[cfg(target_os = "linux")]
fn still_ours(pid: u32, start: u64) -> Option<Pid> {
    if pid <= 1 || pid == std::process::id() {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (actual_start, group) = parse_stat(&stat)?;
    let leads_group = u32::try_from(group).is_ok_and(|group| group == pid);
    (actual_start == start && leads_group).then(|| as_pid(pid)).flatten()
}

#[cfg(test)]
mod tests {
    use super::super::logs::{self, LogOptions};
    use super::*;
    use futures::StreamExt;
    use std::time::Instant;

    fn spec(dir: &Path, program: &str, args: &[&str]) -> ProcessSpec {
        ProcessSpec {
            program: program.to_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: vec![("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned())],
            work_dir: dir.join("work"),
            log_path: logs::log_path(dir, "main", 0),
            pid_file: dir.join("pids/main.pid"),
            supervisor: None,
            console: Console::default(),
        }
    }

    fn sh(dir: &Path, script: &str) -> ProcessSpec {
        spec(dir, "sh", &["-c", script])
    }

    fn log_text(spec: &ProcessSpec) -> String {
        String::from_utf8(logs::read(&spec.log_path, &LogOptions::default()).expect("read log"))
            .expect("utf-8")
    }

    fn raw_log(spec: &ProcessSpec) -> String {
        std::fs::read_to_string(&spec.log_path).expect("read log")
    }

    async fn run(spec: ProcessSpec) -> Exit {
        let mut process = start(spec).await.expect("starts");
        tokio::time::timeout(Duration::from_secs(10), process.wait()).await.expect("ends in time")
    }

    /// Whether `pid` is gone (or a zombie about to be reaped by its new parent).
    fn is_gone(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => {
                stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))
            }
        }
    }

    async fn eventually_gone(pid: u32) -> bool {
        for _ in 0..50 {
            if is_gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    #[tokio::test]
    async fn output_goes_to_the_log_with_its_stream() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "echo hi; echo err >&2");
        let exit = run(spec.clone()).await;
        assert_eq!((exit.exit_code, exit.signal, exit.reason), (0, None, "Completed"));
        let raw = raw_log(&spec);
        assert!(raw.lines().any(|l| l.ends_with(" stdout F hi")), "{raw}");
        assert!(raw.lines().any(|l| l.ends_with(" stderr F err")), "{raw}");
        assert!(!spec.pid_file.exists(), "the pid file goes once the process exited");
    }

    #[tokio::test]
    async fn environment_and_working_directory_are_exactly_the_specs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut spec = sh(tmp.path(), "env; pwd");
        spec.env.push(("GREETING".to_owned(), "hello world".to_owned()));
        let work_dir = spec.work_dir.clone();
        assert!(!work_dir.exists());
        let exit = run(spec.clone()).await;
        assert_eq!(exit.exit_code, 0);
        let out = log_text(&spec);
        assert!(out.lines().any(|l| l == "GREETING=hello world"), "{out}");
        // Something every test runner has in its own environment is not passed on.
        assert!(std::env::var_os("HOME").is_none() || !out.contains("HOME="), "{out}");
        assert!(out.lines().any(|l| Path::new(l) == work_dir), "{out}");
    }

    #[tokio::test]
    async fn exit_codes_propagate() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let exit = run(sh(tmp.path(), "echo bye; exit 3")).await;
        assert_eq!((exit.exit_code, exit.signal, exit.reason), (3, None, "Error"));
        assert!(exit.finished_at <= Timestamp::now());
    }

    #[tokio::test]
    async fn terminate_escalates_to_sigkill_after_the_grace_period() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "trap '' TERM; echo ready; sleep 60");
        let mut process = start(spec.clone()).await.expect("starts");
        // Let the shell install its trap before signalling.
        let mut ready =
            Box::pin(logs::follow(spec.log_path.clone(), LogOptions::default(), || false));
        ready.next().await.expect("a line").expect("readable");

        let terminator = process.terminator();
        let begun = Instant::now();
        terminator.terminate(Duration::from_millis(500)).await;
        let took = begun.elapsed();
        assert!(took >= Duration::from_millis(500), "TERM was ignored, so the grace ran out");
        assert!(took < Duration::from_secs(5), "{took:?}");

        let exit = process.wait().await;
        assert_eq!((exit.exit_code, exit.signal, exit.reason), (137, Some(9), "Error"));
        // Terminating again is harmless.
        terminator.terminate(Duration::from_millis(10)).await;
        assert_eq!(process.wait().await, exit);
    }

    #[tokio::test]
    async fn terminate_reaches_the_children_of_the_process() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "sleep 60 & echo $!; wait");
        let mut process = start(spec.clone()).await.expect("starts");
        let mut lines =
            Box::pin(logs::follow(spec.log_path.clone(), LogOptions::default(), || false));
        let first = lines.next().await.expect("a line").expect("readable");
        let child: u32 =
            String::from_utf8(first).expect("utf-8").trim().parse().expect("child pid");
        assert!(!is_gone(child), "the child sleeps");

        let begun = Instant::now();
        process.terminator().terminate(Duration::from_secs(30)).await;
        assert!(begun.elapsed() < Duration::from_secs(5), "SIGTERM was enough");
        let exit = process.wait().await;
        assert_eq!((exit.exit_code, exit.signal), (143, Some(15)));
        assert!(eventually_gone(child).await, "the child sleep was terminated too");
    }

    #[tokio::test]
    async fn leftovers_of_the_main_process_are_killed_when_it_exits() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "sleep 60 & echo $!; exit 0");
        let begun = Instant::now();
        let exit = run(spec.clone()).await;
        assert_eq!(exit.exit_code, 0);
        assert!(begun.elapsed() < Duration::from_secs(4), "the background sleep held nothing up");
        let child: u32 = log_text(&spec).trim().parse().expect("child pid");
        assert!(eventually_gone(child).await);
    }

    #[tokio::test]
    async fn a_missing_executable_fails_fast_with_127_and_a_logged_message() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = spec(tmp.path(), "no-such-command-keelson", &["x"]);
        let begun = Instant::now();
        let failure = start(spec.clone()).await.expect_err("cannot start");
        assert!(begun.elapsed() < Duration::from_secs(2));
        assert_eq!(failure.reason, "ContainerCannotRun");
        assert_eq!(failure.exit_code, 127);
        assert!(failure.message.contains("\"no-such-command-keelson\""), "{}", failure.message);
        assert!(failure.message.contains("not found in $PATH"), "{}", failure.message);
        assert!(failure.message.contains("/usr/local/bin:/usr/bin:/bin"), "{}", failure.message);
        assert_eq!(log_text(&spec), format!("{}\n", failure.message));
        assert!(raw_log(&spec).contains(" stderr F unable to start"));
        assert!(!spec.pid_file.exists());
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_file_that_is_not_executable_fails_with_126() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let script = tmp.path().join("script.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").expect("write");
        let spec = spec(tmp.path(), script.to_str().expect("utf-8 path"), &[]);
        let failure = start(spec).await.expect_err("cannot start");
        assert_eq!((failure.exit_code, failure.reason.as_str()), (126, "ContainerCannotRun"));
        assert!(failure.message.contains("permission denied"), "{}", failure.message);
    }

    #[tokio::test]
    async fn follow_sees_lines_as_they_come_and_ends_after_the_exit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "echo one; sleep 1; echo two");
        let mut process = start(spec.clone()).await.expect("starts");
        let (done_tx, done_rx) = watch::channel(false);
        let mut stream =
            Box::pin(logs::follow(spec.log_path.clone(), LogOptions::default(), move || {
                *done_rx.borrow()
            }));

        let first = stream.next().await.expect("a line").expect("readable");
        assert_eq!(first, b"one\n");
        assert!(!*done_tx.borrow(), "seen while the process still runs");
        let exit = process.wait().await;
        assert_eq!(exit.exit_code, 0);
        done_tx.send_replace(true);

        let mut rest = Vec::new();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(item) = stream.next().await {
                rest.extend(item.expect("readable"));
            }
        })
        .await;
        assert!(ended.is_ok(), "the stream ends once the process is done");
        assert_eq!(rest, b"two\n");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (we (i) rd) S 1 4242 4242 0 -1 4194560 10 0 0 0 0 0 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615";
        assert_eq!(parse_stat(stat), Some((987654, 4242)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn reap_orphans_kills_recorded_processes_and_spares_reused_ids() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let tmp = tempfile::tempdir().expect("tempdir");
        let spawn_sleep = || {
            std::process::Command::new("sleep")
                .arg("60")
                .process_group(0)
                .spawn()
                .expect("sleep starts")
        };
        let mut orphan = spawn_sleep();
        let mut stranger = spawn_sleep();
        let start_time = |pid: u32| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
            parse_stat(&stat).expect("parsable").0
        };
        let pod = logs::pod_dir(tmp.path(), "default", "job-x", "uid-1");
        std::fs::create_dir_all(pod.join("pids")).expect("mkdir");
        let recorded = pod.join("pids/main.pid");
        std::fs::write(&recorded, format!("{} {}\n", orphan.id(), start_time(orphan.id())))
            .expect("write");
        // Same id as a live process but another start time: the id was reused.
        let reused = pod.join("pids/sidecar.pid");
        std::fs::write(&reused, format!("{} {}\n", stranger.id(), start_time(stranger.id()) + 1))
            .expect("write");

        let killed = reap_orphans(&tmp.path().join("pods"), |_| false);

        assert_eq!(killed, [orphan.id()]);
        assert_eq!(orphan.wait().expect("reaped").signal(), Some(9));
        assert!(stranger.try_wait().expect("alive").is_none(), "an unrelated process lives on");
        assert!(!recorded.exists() && !reused.exists(), "pid files are cleaned up");
        stranger.kill().expect("kill");
        stranger.wait().expect("reaped");
        assert!(reap_orphans(&tmp.path().join("nothing-here"), |_| false).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_pid_file_records_the_start_time_while_running() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = sh(tmp.path(), "sleep 60");
        let mut process = start(spec.clone()).await.expect("starts");
        let record = std::fs::read_to_string(&spec.pid_file).expect("pid file");
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", process.pid())).expect("stat");
        let (start_time, group) = parse_stat(&stat).expect("parsable");
        assert_eq!(record, format!("{} {start_time}\n", process.pid()));
        assert_eq!(group, i32::try_from(process.pid()).expect("small"), "its own group");
        process.terminator().terminate(Duration::from_secs(5)).await;
        assert_eq!(process.wait().await.exit_code, 143);
        assert!(!spec.pid_file.exists());
    }
}
