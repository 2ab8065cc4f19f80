//! One attempt of a probe, as a kubelet makes it. Process pods share the machine's network, so
//! an `httpGet`, `tcpSocket` or `grpc` probe goes to its `host` or else to loopback.
//!
//! - `exec`: the command runs as `kubectl exec` runs one beside the container, with the
//!   container process's environment, in the pod's working directory; exit code 0 passes.
//! - `httpGet`: a GET over HTTP/1.1, or over TLS for `scheme: HTTPS` without checking the
//!   certificate (as upstream, since a container's certificate is rarely one the node trusts);
//!   a status from 200 to 399 passes.
//! - `tcpSocket`: connecting passes.
//! - `grpc`: a `grpc.health.v1.Health/Check` call over HTTP/2 without TLS; `SERVING` passes.
//!
//! A failure says what went wrong, in the words upstream's events use where they are clear.

use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::{Container, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::container_http::{self, HttpError};
use crate::node::runtime::process;

/// How much of an exec probe's output a failure keeps (upstream's limit).
const OUTPUT_LIMIT: usize = 10 * 1024;

/// What one attempt does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Runs a command with the environment of process `pid`.
    Exec { command: Vec<String>, pid: u32, dir: PathBuf },
    /// Sends a GET, over TLS when `tls`.
    Http { tls: bool, host: String, port: u16, path: String, headers: Vec<(String, String)> },
    /// Opens a connection.
    Tcp { host: String, port: u16 },
    /// Asks the gRPC health service about `service` (empty: the whole server).
    Grpc { host: String, port: u16, service: String },
}

impl Action {
    /// What `probe` of `container`, whose process is `pid` in a pod working in `dir`, does;
    /// `None` when it names a port the container does not declare, or no action.
    pub fn of(container: &Container, probe: &Probe, pid: u32, dir: &Path) -> Option<Self> {
        let host = |host: &Option<String>| {
            host.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| "127.0.0.1".to_owned())
        };
        if let Some(exec) = &probe.exec {
            Some(Action::Exec { command: exec.command.clone()?, pid, dir: dir.to_owned() })
        } else if let Some(get) = &probe.http_get {
            http(container, get, host(&get.host))
        } else if let Some(tcp) = &probe.tcp_socket {
            Some(Action::Tcp { host: host(&tcp.host), port: port(container, &tcp.port)? })
        } else if let Some(grpc) = &probe.grpc {
            Some(Action::Grpc {
                host: "127.0.0.1".to_owned(),
                port: u16::try_from(grpc.port).ok()?,
                service: grpc.service.clone().unwrap_or_default(),
            })
        } else {
            None
        }
    }

    /// One attempt: `Ok` when it passed, else what went wrong.
    pub async fn attempt(&self) -> Result<(), String> {
        match self {
            Action::Exec { command, pid, dir } => exec(command, *pid, dir).await,
            Action::Tcp { host, port } => match TcpStream::connect((host.as_str(), *port)).await {
                Ok(_) => Ok(()),
                Err(error) => Err(format!("dial tcp {host}:{port}: {error}")),
            },
            Action::Http { tls, host, port, path, headers } => {
                let scheme = if *tls { "https" } else { "http" };
                let code = get(*tls, host, *port, path, headers)
                    .await
                    .map_err(|error| format!("Get \"{scheme}://{host}:{port}{path}\": {error}"))?;
                match code {
                    200..400 => Ok(()),
                    code => Err(format!("HTTP probe failed with statuscode: {code}")),
                }
            }
            Action::Grpc { host, port, service } => {
                match health_check(host, *port, service).await {
                    Ok(1) => Ok(()),
                    Ok(status) => Err(format!(
                        "service unhealthy (responded with \"{}\")",
                        serving_name(status)
                    )),
                    Err(error) => {
                        Err(format!("gRPC health check of {host}:{port} failed: {error}"))
                    }
                }
            }
        }
    }
}

/// An `httpGet` action to `host`.
fn http(container: &Container, get: &HTTPGetAction, host: String) -> Option<Action> {
    let tls = get.scheme.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("HTTPS"));
    let path = get.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
    let path = if path.starts_with('/') { path } else { format!("/{path}") };
    let headers = get.http_headers.iter().flatten();
    let headers = headers.map(|h| (h.name.clone(), h.value.clone())).collect();
    Some(Action::Http { tls, host, port: port(container, &get.port)?, path, headers })
}

/// A probe's port: a number, or the name of one of the container's ports.
fn port(container: &Container, port: &IntOrString) -> Option<u16> {
    match port {
        IntOrString::Int(number) => u16::try_from(*number).ok(),
        IntOrString::String(name) => {
            let ports = container.ports.iter().flatten();
            let found = ports.into_iter().find(|p| p.name.as_deref() == Some(name.as_str()))?;
            u16::try_from(found.container_port).ok()
        }
    }
}

/// Runs an exec probe's command; a failure is its output, or its exit status when it said
/// nothing.
async fn exec(command: &[String], pid: u32, dir: &Path) -> Result<(), String> {
    let Some((program, args)) = command.split_first() else {
        return Err("the probe's command is empty".into());
    };
    // Read at each attempt, as `kubectl exec` reads it: gone with the process.
    let env = process::environment(pid).ok_or("the container's process is gone")?;
    let mut child = tokio::process::Command::new(program);
    child.args(args).env_clear().envs(env).current_dir(dir);
    child.stdin(std::process::Stdio::null());
    // An attempt past its timeout is dropped, and its process with it.
    child.kill_on_drop(true);
    let output = child.output().await.map_err(|error| format!("{program}: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    let mut said = output.stdout;
    said.extend_from_slice(&output.stderr);
    said.truncate(OUTPUT_LIMIT);
    let said = String::from_utf8_lossy(&said).trim().to_owned();
    if !said.is_empty() {
        return Err(said);
    }
    Err(match output.status.code() {
        Some(code) => format!("command {command:?} exited with code {code}"),
        None => format!("command {command:?} was killed"),
    })
}

/// The status code of a GET of `path` from `host:port` over HTTP/1.1, over TLS when `tls`.
async fn get(
    tls: bool,
    host: &str,
    port: u16,
    path: &str,
    headers: &[(String, String)],
) -> Result<u16, HttpError> {
    let stream = TcpStream::connect((host, port)).await?;
    let mut request = hyper::Request::get(path)
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::USER_AGENT, "kube-probe/1.32");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request.body(Empty::<Bytes>::new())?;
    let name = tls.then(|| ServerName::try_from(host.to_owned())).transpose()?;
    Ok(container_http::send(stream, name, request).await?.status().as_u16())
}

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckResponse {
    /// `UNKNOWN` 0, `SERVING` 1, `NOT_SERVING` 2, `SERVICE_UNKNOWN` 3.
    #[prost(int32, tag = "1")]
    status: i32,
}

/// The name of a health status, as the gRPC health protocol names it.
fn serving_name(status: i32) -> &'static str {
    match status {
        1 => "SERVING",
        2 => "NOT_SERVING",
        3 => "SERVICE_UNKNOWN",
        _ => "UNKNOWN",
    }
}

/// Calls `grpc.health.v1.Health/Check` on `host:port` over HTTP/2 without TLS; the status it
/// answered. Made by hand on hyper's HTTP/2 client and prost, which the node already uses:
/// `tonic-health` would bring tonic's transport (tower layers, its own channel and server) into
/// the build for one small message each way.
async fn health_check(
    host: &str,
    port: u16,
    service: &str,
) -> Result<i32, Box<dyn std::error::Error + Send + Sync>> {
    let stream = TcpStream::connect((host, port)).await?;
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::post(format!("http://{host}:{port}/grpc.health.v1.Health/Check"))
        .header(hyper::header::CONTENT_TYPE, "application/grpc")
        .header(hyper::header::TE, "trailers")
        .header(hyper::header::USER_AGENT, "kube-probe/1.32")
        .body(Full::new(grpc_frame(&HealthCheckRequest { service: service.to_owned() })))?;
    let response = sender.send_request(request).await?;
    let (parts, body) = response.into_parts();
    let collected = body.collect().await?;
    // The call's outcome is in the trailers, or in the headers of a response without a body.
    let outcome = collected.trailers().unwrap_or(&parts.headers).clone();
    let code = outcome.get("grpc-status").and_then(|v| v.to_str().ok()).unwrap_or("2");
    if code != "0" {
        let message = outcome.get("grpc-message").and_then(|v| v.to_str().ok()).unwrap_or("");
        return Err(format!("rpc error: code = {code} desc = {message}").into());
    }
    let mut body = collected.to_bytes();
    if body.len() < 5 {
        return Err("the health service answered no message".into());
    }
    let _compressed = body.get_u8();
    let length = body.get_u32() as usize;
    let message = body.get(..length).ok_or("the health service's answer is cut short")?;
    Ok(<HealthCheckResponse as prost::Message>::decode(message)?.status)
}

/// A gRPC message frame: uncompressed, its length, the message.
fn grpc_frame(message: &impl prost::Message) -> Bytes {
    let encoded = message.encode_to_vec();
    let mut frame = BytesMut::with_capacity(5 + encoded.len());
    frame.put_u8(0);
    frame.put_u32(u32::try_from(encoded.len()).unwrap_or(u32::MAX));
    frame.put_slice(&encoded);
    frame.freeze()
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::Arc;

    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use hyper::server::conn::{http1, http2};
    use hyper::service::service_fn;
    use hyper::{HeaderMap, Request, Response};
    use tokio::net::TcpListener;

    use super::*;

    /// A listener on a free loopback port, and the port.
    async fn free_port() -> (TcpListener, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        (listener, port)
    }

    fn http(tls: bool, port: u16, path: &str) -> Action {
        Action::Http { tls, host: "127.0.0.1".into(), port, path: path.into(), headers: vec![] }
    }

    /// Answers every request on `listener` with the status its path names (`/503`), over TLS
    /// with a self-signed certificate when `tls`.
    async fn serve_statuses(listener: TcpListener, tls: bool) {
        let acceptor = tls.then(|| {
            let key = rcgen::KeyPair::generate().unwrap();
            let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
            let cert = params.self_signed(&key).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![cert.der().clone()],
                    rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
                )
                .unwrap();
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let service = service_fn(|request: Request<hyper::body::Incoming>| async move {
                    let code: u16 = request.uri().path()[1..].parse().unwrap();
                    let mut response = Response::new(Empty::<Bytes>::new());
                    *response.status_mut() = hyper::StatusCode::from_u16(code).unwrap();
                    Ok::<_, Infallible>(response)
                });
                let _ = match acceptor {
                    Some(acceptor) => {
                        let stream = acceptor.accept(stream).await.unwrap();
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service).await
                    }
                    None => {
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service).await
                    }
                };
            });
        }
    }

    #[tokio::test]
    async fn an_http_probe_passes_below_400_and_says_the_status_or_the_error() {
        let (listener, port) = free_port().await;
        tokio::spawn(serve_statuses(listener, false));
        assert_eq!(http(false, port, "/204").attempt().await, Ok(()));
        assert_eq!(http(false, port, "/302").attempt().await, Ok(()));
        assert_eq!(
            http(false, port, "/500").attempt().await,
            Err("HTTP probe failed with statuscode: 500".into())
        );
        let (closed, port) = free_port().await;
        drop(closed);
        let refused = http(false, port, "/healthz").attempt().await.unwrap_err();
        assert!(
            refused.starts_with(&format!("Get \"http://127.0.0.1:{port}/healthz\": "))
                && refused.contains("refused"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn an_https_probe_takes_any_certificate() {
        let (listener, port) = free_port().await;
        tokio::spawn(serve_statuses(listener, true));
        assert_eq!(http(true, port, "/200").attempt().await, Ok(()));
        assert_eq!(
            http(true, port, "/503").attempt().await,
            Err("HTTP probe failed with statuscode: 503".into())
        );
        // Plain HTTP to a TLS port fails.
        assert!(http(false, port, "/200").attempt().await.is_err());
    }

    /// A gRPC health service answering `status` for the service `web`, `SERVICE_UNKNOWN`
    /// (as a `NOT_FOUND` error, as grpc-go does) for any other.
    async fn serve_health(listener: TcpListener, status: i32) {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service =
                    service_fn(move |request: Request<hyper::body::Incoming>| async move {
                        assert_eq!(request.uri().path(), "/grpc.health.v1.Health/Check");
                        let mut body = request.into_body().collect().await.unwrap().to_bytes();
                        body.advance(5);
                        let asked = <HealthCheckRequest as prost::Message>::decode(body).unwrap();
                        let mut trailers = HeaderMap::new();
                        let message = if asked.service == "web" {
                            trailers.insert("grpc-status", "0".parse().unwrap());
                            Some(grpc_frame(&HealthCheckResponse { status }))
                        } else {
                            trailers.insert("grpc-status", "5".parse().unwrap());
                            trailers.insert("grpc-message", "unknown service".parse().unwrap());
                            None
                        };
                        let frames =
                            message.map(Frame::data).into_iter().chain([Frame::trailers(trailers)]);
                        let frames = futures::stream::iter(frames.map(Ok::<_, Infallible>));
                        let response = Response::builder()
                            .header("content-type", "application/grpc")
                            .body(StreamBody::new(frames))
                            .unwrap();
                        Ok::<_, Infallible>(response)
                    });
                let _ = http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    fn grpc(port: u16, service: &str) -> Action {
        Action::Grpc { host: "127.0.0.1".into(), port, service: service.into() }
    }

    #[tokio::test]
    async fn a_grpc_probe_asks_the_health_service() {
        let (serving, port) = free_port().await;
        tokio::spawn(serve_health(serving, 1));
        assert_eq!(grpc(port, "web").attempt().await, Ok(()));
        assert_eq!(
            grpc(port, "db").attempt().await,
            Err(format!(
                "gRPC health check of 127.0.0.1:{port} failed: rpc error: code = 5 desc = unknown service"
            ))
        );
        let (not_serving, port) = free_port().await;
        tokio::spawn(serve_health(not_serving, 2));
        assert_eq!(
            grpc(port, "web").attempt().await,
            Err("service unhealthy (responded with \"NOT_SERVING\")".into())
        );
        let (closed, port) = free_port().await;
        drop(closed);
        assert!(grpc(port, "web").attempt().await.unwrap_err().contains("refused"));
    }

    #[tokio::test]
    async fn a_failed_exec_probe_says_its_output_or_else_its_exit_code() {
        let mut process = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = process.id();
        let exec = |command: &[&str]| Action::Exec {
            command: command.iter().map(|c| c.to_string()).collect(),
            pid,
            dir: std::env::temp_dir(),
        };
        assert_eq!(exec(&["true"]).attempt().await, Ok(()));
        assert_eq!(
            exec(&["sh", "-c", "echo not yet; echo still loading >&2; exit 1"]).attempt().await,
            Err("not yet\nstill loading".into())
        );
        assert_eq!(
            exec(&["test", "-f", "absent"]).attempt().await,
            Err("command [\"test\", \"-f\", \"absent\"] exited with code 1".into())
        );
        let missing = exec(&["no-such-command"]).attempt().await.unwrap_err();
        assert!(missing.starts_with("no-such-command: "), "{missing}");
        process.kill().unwrap();
        process.wait().unwrap();
        assert_eq!(exec(&["true"]).attempt().await, Err("the container's process is gone".into()));
    }
}
