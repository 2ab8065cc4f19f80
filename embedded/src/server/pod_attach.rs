//! The pod `attach` subresource for pods the local node runs as processes: `kubectl attach` and
//! `kubectl run -i`, over WebSocket with the channel protocol `exec` speaks (see `pod_exec`).
//!
//! The container's supervisor serves the program's live output and takes its input (see
//! [`crate::node::runtime::attach`]); a session carries them between kubectl's channels and the
//! supervisor's socket. Output written before the client arrived is not repeated, as with a
//! container runtime: `kubectl logs` has it.

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, RawQuery, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::node::runtime::attach::{self, Frame, read_frame, write_frame};

use super::ApiState;
use super::errors::{ApiError, ApiResult};
use super::pod_exec::{
    CLOSE, ERROR, PROTOCOLS, RESIZE, RunningContainer, STDERR, STDIN, StreamOptions, closing,
    frame, running_process, success, terminal_size, websocket,
};
use super::pod_log::{container_status, log_file};
use super::rbac;
use super::users::User;

/// `GET|POST /api/v1/namespaces/{namespace}/pods/{name}/attach`.
pub(crate) async fn attach(
    State(state): State<ApiState>,
    Path((namespace, name)): Path<(String, String)>,
    Extension(user): Extension<User>,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    rbac::check_pod_stream(&state.store, &user, &namespace, &name, "attach")?;
    let mut options = StreamOptions::attach(query.as_deref().unwrap_or_default())?;
    let container =
        running_process(&state, &namespace, &name, options.container.as_deref(), "attach to")?;
    // Input for a container without stdin goes nowhere, as with a container runtime.
    options.stdin &= takes_input(&container);
    let (log, until) = supervisor(&state, &container);
    let connection = attach::connect_by(&log, until).await.map_err(|error| {
        ApiError::bad_request(format!(
            "cannot attach to container \"{}\" in pod \"{name}\": its supervisor does not answer ({error}); it may have been started by an earlier keelson, and kubectl logs -f shows its output",
            container.name
        ))
    })?;
    let (upgrade, protocol) = websocket(upgrade, "attach", &PROTOCOLS, "1.30")?;
    let v5 = protocol == PROTOCOLS[0];
    Ok(upgrade.on_upgrade(move |socket| session(socket, connection, options, v5)))
}

/// Whether the container's spec (app, init or ephemeral) keeps its input open.
fn takes_input(container: &RunningContainer) -> bool {
    let Some(spec) = container.pod.spec.as_ref() else { return false };
    let stdin = |name: &str, stdin: Option<bool>| name == container.name && stdin == Some(true);
    let init = spec.init_containers.iter().flatten();
    let ephemeral = spec.ephemeral_containers.iter().flatten();
    spec.containers.iter().chain(init).any(|c| stdin(&c.name, c.stdin))
        || ephemeral.into_iter().any(|c| stdin(&c.name, c.stdin))
}

/// How long after its container started a supervisor may take to listen: `kubectl run -i`
/// attaches as soon as the pod runs, and a supervisor is a new process still starting then.
const SUPERVISOR_START: std::time::Duration = std::time::Duration::from_secs(10);

/// The log file of the container's current attempt, which names its supervisor's socket, and
/// until when a supervisor that does not listen yet may still be starting.
fn supervisor(
    state: &ApiState,
    container: &RunningContainer,
) -> (std::path::PathBuf, tokio::time::Instant) {
    let status = container_status(&container.pod, &container.name);
    let attempt = status.map_or(0, |s| s.restart_count.max(0) as u32);
    let log = log_file(&state.data_dir, &container.pod, &container.name, attempt);
    let started = status
        .and_then(|s| s.state.as_ref()?.running.as_ref()?.started_at.as_ref())
        .map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0);
    let since = jiff::Timestamp::now().duration_since(started);
    let left = SUPERVISOR_START.saturating_sub(since.try_into().unwrap_or_default());
    (log, tokio::time::Instant::now() + left)
}

/// Carries the program's output to kubectl and kubectl's input to the program, until the output
/// ends or kubectl leaves.
async fn session(socket: WebSocket, connection: UnixStream, options: StreamOptions, v5: bool) {
    let (mut sink, mut incoming) = socket.split();
    let (mut from, mut to) = connection.into_split();
    // Frames are read by a task of their own: reading one is not cancel-safe.
    let (out_tx, mut out_rx) = mpsc::channel::<Frame>(16);
    tokio::spawn(async move {
        while let Ok(Some(frame)) = read_frame(&mut from).await {
            if out_tx.send(frame).await.is_err() {
                return;
            }
        }
    });
    // A supervisor that is gone ends the output too: writes to it may fail unheeded.
    let _ = write_frame(&mut to, &Frame::Hello { stdin: options.stdin }).await;
    loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                Some(Frame::Output { stream, data }) => {
                    let wanted = if stream == STDERR { options.stderr } else { options.stdout };
                    if wanted && sink.send(frame(stream, &data)).await.is_err() {
                        return;
                    }
                }
                Some(_) => {}
                None => break,
            },
            message = incoming.next() => match message {
                Some(Ok(Message::Binary(data))) => {
                    let forward = match (data.first(), data.get(1)) {
                        (Some(&STDIN), _) if options.stdin => Some(Frame::Stdin(data.slice(1..))),
                        (Some(&RESIZE), _) => terminal_size(&data[1..])
                            .map(|(width, height)| Frame::Resize { width, height }),
                        (Some(&CLOSE), Some(&STDIN)) if v5 => Some(Frame::EndInput),
                        _ => None,
                    };
                    if let Some(forward) = forward {
                        let _ = write_frame(&mut to, &forward).await;
                    }
                }
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = sink.send(frame(ERROR, success().to_string().as_bytes())).await;
    let _ = sink.send(closing()).await;
}
