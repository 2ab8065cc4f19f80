//! The pod `exec` subresource for pods the local node runs as processes: `kubectl exec` (and
//! `kubectl cp`, which runs `tar` through it) over WebSocket with Kubernetes' channel protocol
//! (`v5.channel.k8s.io`, or `v4`), as kubectl 1.30 and later speak it by default.
//!
//! The command runs as a local process the way the container runs: with the container process's
//! environment (read from `/proc/<pid>/environ`) in the pod's working directory. Every binary
//! message carries one stream, named by its first byte: 0 stdin, 1 stdout, 2 stderr, 3 the
//! outcome as a `Status`, 4 terminal resizes; under v5, `[255, n]` closes stream `n` (kubectl
//! closes stdin so). With `tty` (`kubectl exec -it`) the command runs on a terminal of its own
//! (a pseudo-terminal it leads a session on), so shells and editors work as in a container.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Extension, Path, RawQuery, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use crate::node::runtime::attach::{Input, Writer, pty_error};
use crate::node::runtime::{logs, process};

use super::ApiState;
use super::errors::{ApiError, ApiResult};
use super::pod_log::{PROCESS_SCHEME, container_name, container_status};
use super::rbac;
use super::read::stored_core;
use super::users::User;

/// The channel protocols served, preferred first.
pub(crate) const PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

pub(crate) const STDIN: u8 = 0;
pub(crate) const STDOUT: u8 = 1;
pub(crate) const STDERR: u8 = 2;
pub(crate) const ERROR: u8 = 3;
pub(crate) const RESIZE: u8 = 4;
/// v5's close signal: `[CLOSE, stream]`.
pub(crate) const CLOSE: u8 = 255;

/// What an `exec` or `attach` request asks for (its query).
#[derive(Debug, PartialEq)]
pub(crate) struct StreamOptions {
    /// The command to run (`exec` only).
    pub(crate) command: Vec<String>,
    pub(crate) container: Option<String>,
    pub(crate) stdin: bool,
    pub(crate) stdout: bool,
    pub(crate) stderr: bool,
    pub(crate) tty: bool,
}

impl StreamOptions {
    /// Parses an `exec` query (`command` repeats, one per argument), refusing what upstream
    /// refuses.
    pub(crate) fn exec(query: &str) -> ApiResult<Self> {
        let options = Self::parse(query)?;
        if options.command.is_empty() {
            return Err(ApiError::bad_request("you must specify at least 1 command"));
        }
        options.with_a_stream()
    }

    /// Parses an `attach` query, refusing what upstream refuses.
    pub(crate) fn attach(query: &str) -> ApiResult<Self> {
        Self { command: Vec::new(), ..Self::parse(query)? }.with_a_stream()
    }

    fn parse(query: &str) -> ApiResult<Self> {
        let mut command = Vec::new();
        let mut flags: HashMap<String, String> = HashMap::new();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "command" => command.push(value.into_owned()),
                _ => {
                    flags.insert(key.into_owned(), value.into_owned());
                }
            }
        }
        let flag = |name: &str| super::pod_log::flag(&flags, name);
        Ok(StreamOptions {
            container: flags.get("container").filter(|c| !c.is_empty()).cloned(),
            stdin: flag("stdin")?,
            stdout: flag("stdout")?,
            stderr: flag("stderr")?,
            tty: flag("tty")?,
            command,
        })
    }

    fn with_a_stream(self) -> ApiResult<Self> {
        if !(self.stdin || self.stdout || self.stderr) {
            return Err(ApiError::bad_request(
                "you must specify at least one of stdin, stdout, stderr",
            ));
        }
        Ok(self)
    }
}

/// The `Status` sent on the error stream when the command has ended, as a kubelet sends it:
/// success, or `NonZeroExitCode` with the code as the cause kubectl exits with.
pub(crate) fn outcome(command: &[String], status: ExitStatus) -> Value {
    if status.success() {
        return success();
    }
    let code = status.code().unwrap_or_else(|| 128 + signal_of(status));
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command {command:?}, exit code {code}"
        ),
        "reason": "NonZeroExitCode",
        "details": { "causes": [{ "reason": "ExitCode", "message": code.to_string() }] },
    })
}

/// The `Status` sent on the error stream when a stream has ended well.
pub(crate) fn success() -> Value {
    json!({ "metadata": {}, "status": "Success" })
}

fn signal_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.signal().unwrap_or(0)
}

/// The `Status` sent on the error stream when the command could not start.
fn not_started(command: &str, error: &std::io::Error) -> Value {
    let why = match error.kind() {
        std::io::ErrorKind::NotFound => "executable file not found in $PATH".to_owned(),
        _ => error.to_string(),
    };
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("exec: {command:?}: {why}"),
        "reason": "InternalError",
    })
}

/// A process of the pod to exec beside: its environment and working directory.
struct Target {
    env: Vec<(String, String)>,
    work_dir: PathBuf,
}

/// `GET|POST /api/v1/namespaces/{namespace}/pods/{name}/exec`.
pub(crate) async fn exec(
    State(state): State<ApiState>,
    Path((namespace, name)): Path<(String, String)>,
    Extension(user): Extension<User>,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    rbac::check_pod_stream(&state.store, &user, &namespace, &name, "exec")?;
    let options = StreamOptions::exec(query.as_deref().unwrap_or_default())?;
    let target = find(&state, &namespace, &name, options.container.as_deref())?;
    let (upgrade, protocol) = websocket(upgrade, "exec", &PROTOCOLS, "1.30")?;
    let v5 = protocol == PROTOCOLS[0];
    Ok(upgrade.on_upgrade(move |socket| session(socket, options, target, v5)))
}

/// The WebSocket a pod stream (`what`: `exec`, `port-forward`) is served over, and which of
/// `protocols` (kubectl's since version `since`) it speaks; SPDY upgrades are refused.
pub(crate) fn websocket(
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    what: &str,
    protocols: &[&'static str],
    since: &str,
) -> ApiResult<(WebSocketUpgrade, &'static str)> {
    let Ok(upgrade) = upgrade else {
        return Err(ApiError::bad_request(format!(
            "keelson serves {what} over WebSocket only (kubectl {since} or later; SPDY is not served)"
        )));
    };
    let upgrade = upgrade.protocols(protocols.iter().copied());
    let selected = upgrade.selected_protocol().and_then(|p| p.to_str().ok());
    let Some(protocol) = protocols.iter().copied().find(|p| Some(*p) == selected) else {
        return Err(ApiError::bad_request(format!(
            "{what} needs one of the WebSocket protocols {protocols:?} (kubectl {since} or later)"
        )));
    };
    Ok((upgrade, protocol))
}

/// The running container process of the pod, or why there is none.
fn find(
    state: &ApiState,
    namespace: &str,
    name: &str,
    container: Option<&str>,
) -> ApiResult<Target> {
    let RunningContainer { pod, env, .. } =
        running_process(state, namespace, name, container, "exec into")?;
    let uid = pod.metadata.uid.unwrap_or_default();
    let work_dir = logs::pod_dir(&state.data_dir, namespace, name, &uid).join("work");
    Ok(Target { env, work_dir })
}

/// A pod's container that runs as a process.
pub(crate) struct RunningContainer {
    pub(crate) pod: Pod,
    /// The container's name.
    pub(crate) name: String,
    /// The environment of its process.
    pub(crate) env: Vec<(String, String)>,
}

/// The container of a pod (`container`, else the default one) if it runs as a process, or why
/// it does not; `doing` names the refused action (`exec into`).
pub(crate) fn running_process(
    state: &ApiState,
    namespace: &str,
    name: &str,
    container: Option<&str>,
    doing: &str,
) -> ApiResult<RunningContainer> {
    let pod: Pod = stored_core(state, "pods", namespace, name)?;
    let container = container_name(&pod, name, container)?;
    let status = container_status(&pod, &container);
    let id = status.and_then(|s| s.container_id.as_deref()).unwrap_or_default();
    let running = status.and_then(|s| s.state.as_ref()).is_some_and(|s| s.running.is_some());
    let Some(pid) = id.strip_prefix(PROCESS_SCHEME).and_then(|pid| pid.parse::<u32>().ok()) else {
        if running {
            return Err(ApiError::bad_request(format!(
                "keelson's local node cannot {doing} pod \"{name}\": its containers are simulated (only Job pods and pods annotated keelson.dev/run-as-process=\"true\" run as processes, as kubectl run --annotations=keelson.dev/run-as-process=true makes one)"
            )));
        }
        return Err(not_running(&container, name));
    };
    if !running {
        return Err(not_running(&container, name));
    }
    let env = process::environment(pid).ok_or_else(|| not_running(&container, name))?;
    // The pid is the container's while its HOSTNAME is the pod's (a pid reused by another
    // process has another environment).
    let hostname = pod.spec.as_ref().and_then(|s| s.hostname.clone()).unwrap_or(name.to_owned());
    if !env.iter().any(|(k, v)| k == "HOSTNAME" && *v == hostname) {
        return Err(not_running(&container, name));
    }
    Ok(RunningContainer { pod, name: container, env })
}

fn not_running(container: &str, pod: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to upgrade connection: container \"{container}\" in pod \"{pod}\" is not running"
    ))
}

/// A started command: the process, its output streams (with the stream each is sent as), and
/// where its input goes.
struct Started {
    child: tokio::process::Child,
    outputs: Vec<(u8, Box<dyn AsyncRead + Unpin + Send>)>,
    input: Option<Writer>,
}

/// Starts the command beside the container: on a new terminal with `tty`, else on pipes.
fn start(options: &StreamOptions, target: Target) -> std::io::Result<Started> {
    let (program, args) = (&options.command[0], &options.command[1..]);
    if options.tty {
        let (pty, pts) = pty_process::open().map_err(pty_error)?;
        let _ = pty.resize(pty_process::Size::new(24, 80));
        let child = pty_process::Command::new(program)
            .args(args)
            .env_clear()
            .envs(target.env)
            .current_dir(&target.work_dir)
            .kill_on_drop(true)
            .spawn(pts)
            .map_err(pty_error)?;
        let (read, write) = pty.into_split();
        let input = options.stdin.then_some(Writer::Terminal(write));
        return Ok(Started { child, outputs: vec![(STDOUT, Box::new(read))], input });
    }
    let piped = |wanted: bool| if wanted { Stdio::piped() } else { Stdio::null() };
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(target.env)
        .current_dir(&target.work_dir)
        .stdin(piped(options.stdin))
        .stdout(piped(options.stdout))
        .stderr(piped(options.stderr))
        .kill_on_drop(true)
        .spawn()?;
    let mut outputs: Vec<(u8, Box<dyn AsyncRead + Unpin + Send>)> = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        outputs.push((STDOUT, Box::new(stdout)));
    }
    if let Some(stderr) = child.stderr.take() {
        outputs.push((STDERR, Box::new(stderr)));
    }
    let input = child.stdin.take().map(Writer::Pipe);
    Ok(Started { child, outputs, input })
}

/// A terminal size (width, height) as kubectl sends it on the resize stream:
/// `{"Width":80,"Height":24}`.
pub(crate) fn terminal_size(data: &[u8]) -> Option<(u16, u16)> {
    let size: Value = serde_json::from_slice(data).ok()?;
    let dimension = |name: &str| size.get(name)?.as_u64().and_then(|v| u16::try_from(v).ok());
    Some((dimension("Width")?, dimension("Height")?))
}

/// Runs the command and carries its streams over the socket until it ends.
async fn session(socket: WebSocket, options: StreamOptions, target: Target, v5: bool) {
    let (mut sink, mut incoming) = socket.split();
    let Started { mut child, outputs, input } = match start(&options, target) {
        Ok(started) => started,
        Err(error) => {
            let status = not_started(&options.command[0], &error);
            let _ = sink.send(frame(ERROR, status.to_string().as_bytes())).await;
            let _ = sink.send(closing()).await;
            return;
        }
    };
    let (out_tx, mut out_rx) = mpsc::channel::<Message>(16);
    for (stream, output) in outputs {
        tokio::spawn(pump(output, stream, out_tx.clone()));
    }
    drop(out_tx);
    // Written by a task of its own, so that a command not reading its input never stops its
    // output from being carried.
    let mut input_tx = input.map(Writer::spawn);

    loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                Some(message) => {
                    if sink.send(message).await.is_err() {
                        return;
                    }
                }
                None => break,
            },
            message = incoming.next() => match message {
                Some(Ok(Message::Binary(data))) => {
                    let input = match (data.first(), data.get(1)) {
                        (Some(&STDIN), _) => Some(Input::Data(data.slice(1..))),
                        (Some(&RESIZE), _) => terminal_size(&data[1..])
                            .map(|(width, height)| Input::Resize { width, height }),
                        (Some(&CLOSE), Some(&STDIN)) if v5 => {
                            input_tx = None;
                            None
                        }
                        _ => None,
                    };
                    if let (Some(input), Some(tx)) = (input, &input_tx) {
                        let _ = tx.send(input).await;
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
    drop(input_tx);
    let outcome = match child.wait().await {
        Ok(status) => outcome(&options.command, status),
        Err(error) => not_started(&options.command[0], &error),
    };
    let _ = sink.send(frame(ERROR, outcome.to_string().as_bytes())).await;
    let _ = sink.send(closing()).await;
}

/// Carries one output pipe to the socket, as messages of `stream`.
async fn pump(mut pipe: impl AsyncRead + Unpin, stream: u8, out: mpsc::Sender<Message>) {
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => {
                if out.send(frame(stream, &buffer[..read])).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A binary message of `stream`.
pub(crate) fn frame(stream: u8, data: &[u8]) -> Message {
    let mut bytes = Vec::with_capacity(data.len() + 1);
    bytes.push(stream);
    bytes.extend_from_slice(data);
    Message::Binary(bytes.into())
}

/// The normal end of a stream's socket.
pub(crate) fn closing() -> Message {
    Message::Close(Some(CloseFrame { code: close_code::NORMAL, reason: "".into() }))
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn commands_repeat_and_streams_are_flags() {
        let options = StreamOptions::exec(
            "command=sh&command=-c&command=echo+%24HOME&stdin=true&stdout=true&container=main",
        )
        .unwrap();
        assert_eq!(options.command, ["sh", "-c", "echo $HOME"]);
        assert_eq!(options.container.as_deref(), Some("main"));
        assert!(options.stdin && options.stdout && !options.stderr && !options.tty);
    }

    #[test]
    fn what_upstream_refuses_is_refused() {
        let message = |query: &str| StreamOptions::exec(query).unwrap_err().message;
        assert_eq!(message("stdout=true"), "you must specify at least 1 command");
        assert_eq!(message("command=ls"), "you must specify at least one of stdin, stdout, stderr");
        assert!(message("command=ls&stdout=maybe").contains("true or false"));
    }

    #[test]
    fn the_outcome_carries_the_exit_code_kubectl_exits_with() {
        let command = vec!["sh".to_owned(), "-c".to_owned(), "exit 3".to_owned()];
        assert_eq!(outcome(&command, ExitStatus::from_raw(0))["status"], "Success");
        let failed = outcome(&command, ExitStatus::from_raw(3 << 8));
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0], json!({ "reason": "ExitCode", "message": "3" }));
        let killed = outcome(&command, ExitStatus::from_raw(9));
        assert_eq!(killed["details"]["causes"][0]["message"], "137");
    }

    #[test]
    fn terminal_sizes_read_as_kubectl_sends_them() {
        assert_eq!(terminal_size(br#"{"Width":120,"Height":40}"#), Some((120, 40)));
        assert!(terminal_size(b"{}").is_none());
    }

    #[test]
    fn frames_start_with_their_stream() {
        let Message::Binary(bytes) = frame(STDERR, b"oops") else { panic!() };
        assert_eq!(&bytes[..], b"\x02oops");
    }
}
