//! The pod `portforward` subresource for pods the local node runs as processes: `kubectl
//! port-forward` over WebSocket, which tunnels SPDY/3.1 (`SPDY/3.1+portforward.k8s.io`), as
//! kubectl 1.31 and later speak it by default.
//!
//! Process pods share this machine's network, so a pod's port is the local port: each forwarded
//! connection is a TCP connection to `127.0.0.1:<port>`. kubectl opens two SPDY streams per
//! connection, paired by their `requestID` header: `error` (the server writes why forwarding
//! failed, then closes it) and `data` (the bytes, both ways).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::ApiState;
use super::errors::ApiResult;
use super::pod_exec::{running_process, websocket};
use super::rbac;
use super::spdy::{self, Decoder, Encoder, Frame};
use super::users::User;

/// The WebSocket protocol kubectl tunnels port-forward's SPDY in.
const PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";

/// What a forwarded connection receives from kubectl.
enum Inbound {
    Data(Bytes),
    /// kubectl closed its half.
    Fin,
}

/// `GET /api/v1/namespaces/{namespace}/pods/{name}/portforward`.
pub(crate) async fn port_forward(
    State(state): State<ApiState>,
    Path((namespace, name)): Path<(String, String)>,
    Extension(user): Extension<User>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    rbac::check_pod_stream(&state.store, &user, &namespace, &name, "portforward")?;
    let pod = running_process(&state, &namespace, &name, None, "forward ports of")?.pod;
    let (upgrade, _) = websocket(upgrade, "port-forward", &[PROTOCOL], "1.31")?;
    let pod = PodName { name, uid: pod.metadata.uid.unwrap_or_default() };
    Ok(upgrade.on_upgrade(move |socket| session(socket, pod)))
}

/// The pod, as errors name it.
#[derive(Clone)]
struct PodName {
    name: String,
    uid: String,
}

/// The streams of one forwarded connection, as they arrive.
#[derive(Clone, Copy, Default)]
struct Pair {
    error: Option<u32>,
    data: Option<u32>,
    port: Option<u16>,
}

/// Serves kubectl's SPDY streams until it goes.
async fn session(socket: WebSocket, pod: PodName) {
    let (mut sink, mut incoming) = socket.split();
    let (out_tx, mut out_rx) = mpsc::channel::<Vec<u8>>(64);
    let mut decoder = Decoder::default();
    let mut encoder = Encoder::default();
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut connections: HashMap<u32, mpsc::UnboundedSender<Inbound>> = HashMap::new();
    loop {
        let bytes = tokio::select! {
            out = out_rx.recv() => {
                // The session holds a sender, so the channel never runs dry.
                let Some(frame) = out else { return };
                if sink.send(Message::Binary(frame.into())).await.is_err() {
                    return;
                }
                continue;
            }
            message = incoming.next() => match message {
                Some(Ok(Message::Binary(bytes))) => bytes,
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => continue,
            },
        };
        decoder.push(&bytes);
        loop {
            let frame = match decoder.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                // Not SPDY: nothing more can be read from this connection.
                Err(_) => return,
            };
            let reply = match frame {
                Frame::SynStream { stream_id, headers, .. } => {
                    match pair_stream(&mut pairs, stream_id, &headers) {
                        None => spdy::reset(stream_id, spdy::REFUSED_STREAM),
                        Some(None) => encoder.reply(stream_id),
                        Some(Some(paired)) => {
                            let (tx, rx) = mpsc::unbounded_channel();
                            connections.insert(paired.data, tx);
                            tokio::spawn(forward(paired, out_tx.clone(), rx, pod.clone()));
                            // Sent before anything the connection sends: that goes through
                            // `out_tx`, which this loop empties only after this frame.
                            encoder.reply(stream_id)
                        }
                    }
                }
                Frame::Data { stream_id, data, fin } => {
                    if let Some(connection) = connections.get(&stream_id) {
                        if !data.is_empty() {
                            let _ = connection.send(Inbound::Data(data));
                        }
                        if fin {
                            let _ = connection.send(Inbound::Fin);
                            connections.remove(&stream_id);
                        }
                    }
                    continue;
                }
                Frame::RstStream { stream_id } => {
                    // Dropping the sender stops the connection.
                    connections.remove(&stream_id);
                    continue;
                }
                Frame::Ping { id } => spdy::pong(id),
                Frame::GoAway => return,
                Frame::Ignored => continue,
            };
            if sink.send(Message::Binary(reply.into())).await.is_err() {
                return;
            }
        }
    }
}

/// The two streams of a forwarded connection and the pod port it goes to.
#[derive(Debug, PartialEq)]
struct Paired {
    error: u32,
    data: u32,
    port: Option<u16>,
}

/// Records a new stream by its `requestID`: `None` if it is neither an `error` nor a `data`
/// stream (it is refused), the pair once both of a request's streams have come.
fn pair_stream(
    pairs: &mut HashMap<String, Pair>,
    stream_id: u32,
    headers: &[(String, String)],
) -> Option<Option<Paired>> {
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let kind = header("streamtype").filter(|k| matches!(*k, "error" | "data"))?;
    let request = header("requestid").unwrap_or_default();
    let pair = pairs.entry(request.to_owned()).or_default();
    match kind {
        "error" => pair.error = Some(stream_id),
        _ => pair.data = Some(stream_id),
    }
    pair.port = header("port").and_then(|p| p.parse().ok()).or(pair.port);
    let Pair { error: Some(error), data: Some(data), port } = *pair else { return Some(None) };
    pairs.remove(request);
    Some(Some(Paired { error, data, port }))
}

/// Carries one connection between kubectl's data stream and the local port; a failure to
/// connect is written to the error stream, as a kubelet writes it.
///
/// What kubectl sends arrives through an unbounded channel: the session must never wait for a
/// connection, which may itself be waiting for the session to carry its answer (SPDY as kubectl
/// speaks it has no flow control to slow kubectl down instead).
async fn forward(
    paired: Paired,
    out: mpsc::Sender<Vec<u8>>,
    mut inbound: mpsc::UnboundedReceiver<Inbound>,
    pod: PodName,
) {
    let Paired { error, data, port } = paired;
    let connected = match port {
        Some(port) => TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| (port, e)),
        None => Err((0, std::io::Error::other("no valid port in the stream headers"))),
    };
    let tcp = match connected {
        Ok(tcp) => tcp,
        Err((port, e)) => {
            let message = format!(
                "error forwarding port {port} to pod {}, uid {}: failed to connect to localhost:{port}: {e}",
                pod.name, pod.uid
            );
            let _ = out.send(spdy::data(error, message.as_bytes(), true)).await;
            let _ = out.send(spdy::data(data, &[], true)).await;
            return;
        }
    };
    let (mut from_port, mut to_port) = tcp.into_split();
    let to_kubectl = async {
        let mut buffer = vec![0u8; 32 * 1024];
        loop {
            match from_port.read(&mut buffer).await {
                Ok(0) | Err(_) => {
                    let _ = out.send(spdy::data(data, &[], true)).await;
                    return;
                }
                Ok(read) => {
                    if out.send(spdy::data(data, &buffer[..read], false)).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let from_kubectl = async {
        while let Some(message) = inbound.recv().await {
            match message {
                Inbound::Data(bytes) => {
                    if to_port.write_all(&bytes).await.is_err() {
                        return false;
                    }
                }
                Inbound::Fin => {
                    let _ = to_port.shutdown().await;
                    return true;
                }
            }
        }
        // Reset, or the session ended.
        false
    };
    let to_kubectl = std::pin::pin!(to_kubectl);
    let from_kubectl = std::pin::pin!(from_kubectl);
    match futures::future::select(to_kubectl, from_kubectl).await {
        // kubectl closed its half: the port's answer still goes back.
        futures::future::Either::Right((true, to_kubectl)) => to_kubectl.await,
        // The port closed first: what kubectl still sends is dropped.
        futures::future::Either::Left(_) => {}
        futures::future::Either::Right((false, _)) => return,
    }
    let _ = out.send(spdy::data(error, &[], true)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(kind: &str, request: &str) -> Vec<(String, String)> {
        [("streamtype", kind), ("port", "8080"), ("requestid", request)]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .to_vec()
    }

    #[test]
    fn streams_pair_by_request_id_in_either_order() {
        let mut pairs = HashMap::new();
        assert_eq!(pair_stream(&mut pairs, 1, &headers("error", "0")), Some(None));
        assert_eq!(pair_stream(&mut pairs, 3, &headers("data", "1")), Some(None));
        let paired = Paired { error: 1, data: 5, port: Some(8080) };
        assert_eq!(pair_stream(&mut pairs, 5, &headers("data", "0")), Some(Some(paired)));
        let paired = Paired { error: 7, data: 3, port: Some(8080) };
        assert_eq!(pair_stream(&mut pairs, 7, &headers("error", "1")), Some(Some(paired)));
        assert!(pairs.is_empty(), "paired requests are forgotten");
        assert_eq!(pair_stream(&mut pairs, 9, &headers("other", "2")), None);
    }
}
