//! The probes of process pods' containers, run as a kubelet runs them: after
//! `initialDelaySeconds`, every `periodSeconds`, each attempt failing after `timeoutSeconds`.
//! A startup probe runs first, until `successThreshold` successes in a row (the container has
//! started) or `failureThreshold` failures in a row (it is unhealthy); only then do the
//! readiness and liveness probes run. A container becomes ready after `successThreshold`
//! successes in a row and unready after `failureThreshold` failures in a row; a liveness probe
//! finds it unhealthy after `failureThreshold` failures in a row. An unhealthy container is
//! killed and restarted as its restart policy says. Process pods share the machine's network,
//! so an `httpGet` or `tcpSocket` probe goes to its `host` or else to loopback.
//!
//! An `exec` probe runs its command as `kubectl exec` runs one beside the container: with the
//! container process's environment, in the pod's working directory. HTTPS and gRPC probes are
//! not run: such a probe counts as passing, as a missing one does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Container, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::net::TcpStream;

use crate::node::runtime::process;

/// The probes of one container that the node runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Probes {
    startup: Option<Prober>,
    readiness: Option<Prober>,
    liveness: Option<Prober>,
}

/// What the probes found out about a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// The startup probe passed (followed by `Ready(true)` when there is no readiness probe).
    Started,
    /// The readiness probe changed its mind.
    Ready(bool),
    /// The startup or liveness probe failed too often: the container is to be killed.
    Unhealthy(Kind),
}

/// Which probe found a container unhealthy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The startup probe.
    Startup,
    /// The liveness probe.
    Liveness,
}

/// One probe the node can run.
#[derive(Clone, Debug, PartialEq)]
struct Prober {
    action: Action,
    initial_delay: Duration,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
}

/// What one attempt does.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    /// Runs a command with the environment of process `pid`; exit code 0 is success.
    Exec { command: Vec<String>, pid: u32, dir: PathBuf },
    /// Sends a GET; a status from 200 to 399 is success.
    Http { host: String, port: u16, path: String, headers: Vec<(String, String)> },
    /// Opens a connection; connecting is success.
    Tcp { host: String, port: u16 },
}

impl Probes {
    /// The probes of `container`, whose process is `pid`, in a pod working in `dir`; `None`
    /// when it has none the node runs (a probe over HTTPS or gRPC, or naming a port the
    /// container does not declare, is left out).
    pub fn of(container: &Container, pid: u32, dir: &Path) -> Option<Self> {
        let prober = |probe: &Option<Probe>| Prober::of(container, probe.as_ref()?, pid, dir);
        let probes = Probes {
            startup: prober(&container.startup_probe),
            readiness: prober(&container.readiness_probe),
            liveness: prober(&container.liveness_probe),
        };
        let none =
            probes.startup.is_none() && probes.readiness.is_none() && probes.liveness.is_none();
        (!none).then_some(probes)
    }

    /// Whether the container starts unstarted (it has a startup probe to pass).
    pub fn gates_start(&self) -> bool {
        self.startup.is_some()
    }

    /// Whether the container's readiness waits for a readiness probe.
    pub fn gates_readiness(&self) -> bool {
        self.readiness.is_some()
    }

    /// Probes until `report`, called with each finding, answers `false` (or the task is
    /// dropped): the startup probe first, then readiness and liveness side by side. Nothing is
    /// probed after a finding of [`Finding::Unhealthy`].
    pub async fn run<F: Future<Output = bool>>(self, report: impl Fn(Finding) -> F) {
        if let Some(startup) = &self.startup {
            let finding = match startup.until_started().await {
                true => Finding::Started,
                false => Finding::Unhealthy(Kind::Startup),
            };
            if !report(finding).await || finding != Finding::Started {
                return;
            }
            if self.readiness.is_none() && !report(Finding::Ready(true)).await {
                return;
            }
        }
        if self.readiness.is_none() && self.liveness.is_none() {
            return;
        }
        let readiness = async {
            match &self.readiness {
                Some(readiness) => readiness.readiness(&report).await,
                None => std::future::pending().await,
            }
        };
        let liveness = async {
            match &self.liveness {
                Some(liveness) => {
                    liveness.until_unhealthy().await;
                    report(Finding::Unhealthy(Kind::Liveness)).await;
                }
                None => std::future::pending().await,
            }
        };
        // Either ends the probing: an unhealthy container is killed, and a report refused
        // means nobody listens.
        tokio::select! {
            () = readiness => {}
            () = liveness => {}
        }
    }
}

/// Consecutive results of a probe's attempts, one period apart.
struct Streak<'a> {
    prober: &'a Prober,
    ticks: tokio::time::Interval,
    successes: u32,
    failures: u32,
}

impl Streak<'_> {
    /// Waits for the next attempt and counts its result.
    async fn next(&mut self) {
        self.ticks.tick().await;
        let prober = self.prober;
        let passed =
            tokio::time::timeout(prober.timeout, attempt(&prober.action)).await.unwrap_or(false);
        if passed {
            (self.successes, self.failures) = (self.successes + 1, 0);
        } else {
            (self.successes, self.failures) = (0, self.failures + 1);
        }
    }
}

impl Prober {
    /// `probe` of `container`, if the node can run it.
    fn of(container: &Container, probe: &Probe, pid: u32, dir: &Path) -> Option<Self> {
        let action = if let Some(exec) = &probe.exec {
            Action::Exec { command: exec.command.clone()?, pid, dir: dir.to_owned() }
        } else if let Some(get) = &probe.http_get {
            http(container, get)?
        } else if let Some(tcp) = &probe.tcp_socket {
            let host = tcp.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(loopback);
            Action::Tcp { host, port: port(container, &tcp.port)? }
        } else {
            return None;
        };
        Some(timing(probe, action))
    }

    /// Starts probing after the initial delay.
    async fn streak(&self) -> Streak<'_> {
        tokio::time::sleep(self.initial_delay).await;
        Streak {
            prober: self,
            ticks: tokio::time::interval(self.period),
            successes: 0,
            failures: 0,
        }
    }

    /// Reports each change of readiness until `report` answers `false`; unready at first.
    async fn readiness<F: Future<Output = bool>>(&self, report: &impl Fn(Finding) -> F) {
        let mut streak = self.streak().await;
        let mut ready = false;
        loop {
            streak.next().await;
            let now = match ready {
                false => streak.successes >= self.success_threshold,
                true => streak.failures < self.failure_threshold,
            };
            if now != ready {
                ready = now;
                if !report(Finding::Ready(ready)).await {
                    return;
                }
            }
        }
    }

    /// Whether the container started (enough successes) before it failed too often.
    async fn until_started(&self) -> bool {
        let mut streak = self.streak().await;
        loop {
            streak.next().await;
            if streak.successes >= self.success_threshold {
                return true;
            }
            if streak.failures >= self.failure_threshold {
                return false;
            }
        }
    }

    /// Returns once the probe has failed too often in a row.
    async fn until_unhealthy(&self) {
        let mut streak = self.streak().await;
        while streak.failures < self.failure_threshold {
            streak.next().await;
        }
    }
}

fn loopback() -> String {
    "127.0.0.1".to_owned()
}

/// The probe's timing with upstream's defaults (10 s period, 1 s timeout, thresholds 1 and 3).
fn timing(probe: &Probe, action: Action) -> Prober {
    let seconds = |value: Option<i32>, default: u64| {
        Duration::from_secs(value.and_then(|v| u64::try_from(v).ok()).unwrap_or(default))
    };
    let count = |value: Option<i32>, default: u32| {
        value.and_then(|v| u32::try_from(v).ok()).filter(|v| *v > 0).unwrap_or(default)
    };
    Prober {
        action,
        initial_delay: seconds(probe.initial_delay_seconds, 0),
        period: seconds(probe.period_seconds, 10).max(Duration::from_secs(1)),
        timeout: seconds(probe.timeout_seconds, 1).max(Duration::from_secs(1)),
        success_threshold: count(probe.success_threshold, 1),
        failure_threshold: count(probe.failure_threshold, 3),
    }
}

/// An `httpGet` probe, unless it asks for HTTPS.
fn http(container: &Container, get: &HTTPGetAction) -> Option<Action> {
    if get.scheme.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("HTTPS")) {
        return None;
    }
    let host = get.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(loopback);
    let path = get.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
    let path = if path.starts_with('/') { path } else { format!("/{path}") };
    let headers = get.http_headers.iter().flatten();
    let headers = headers.map(|h| (h.name.clone(), h.value.clone())).collect();
    Some(Action::Http { host, port: port(container, &get.port)?, path, headers })
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

/// One attempt: whether it succeeded.
async fn attempt(action: &Action) -> bool {
    match action {
        Action::Exec { command, pid, dir } => {
            let Some((program, args)) = command.split_first() else { return false };
            // Read at each attempt, as `kubectl exec` reads it: gone with the process.
            let Some(env) = process::environment(*pid) else { return false };
            let mut child = tokio::process::Command::new(program);
            child.args(args).env_clear().envs(env).current_dir(dir);
            child.stdin(std::process::Stdio::null());
            child.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            // An attempt past its timeout is dropped, and its process with it.
            child.kill_on_drop(true);
            child.status().await.is_ok_and(|status| status.success())
        }
        Action::Tcp { host, port } => TcpStream::connect((host.as_str(), *port)).await.is_ok(),
        Action::Http { host, port, path, headers } => {
            get(host, *port, path, headers).await.is_some_and(|code| (200..400).contains(&code))
        }
    }
}

/// The status code of a GET of `path` from `host:port` over HTTP/1.1.
async fn get(host: &str, port: u16, path: &str, headers: &[(String, String)]) -> Option<u16> {
    let stream = TcpStream::connect((host, port)).await.ok()?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.ok()?;
    tokio::spawn(connection);
    let mut request = hyper::Request::get(path)
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::USER_AGENT, "kube-probe/1.32");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = sender.send_request(request.body(Empty::<Bytes>::new()).ok()?).await.ok()?;
    Some(response.status().as_u16())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, TCPSocketAction};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::Finding::{Ready, Started, Unhealthy};
    use super::*;

    fn container(probe: Probe) -> Container {
        Container {
            name: "web".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..ContainerPort::default()
            }]),
            readiness_probe: Some(probe),
            ..Container::default()
        }
    }

    fn fast(probe: Probe) -> Probe {
        Probe { period_seconds: Some(1), ..probe }
    }

    /// Runs `probes` for `seconds`, returning what they reported.
    async fn changes(probes: Probes, seconds: u64) -> Vec<Finding> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let run = probes.run(move |finding| {
            record.lock().unwrap().push(finding);
            std::future::ready(true)
        });
        let _ = tokio::time::timeout(Duration::from_secs(seconds), run).await;
        seen.lock().unwrap().clone()
    }

    #[test]
    fn named_ports_resolve_and_defaults_are_upstreams() {
        let get = HTTPGetAction {
            port: IntOrString::String("http".into()),
            path: Some("healthz".into()),
            ..HTTPGetAction::default()
        };
        let probe = Probe { http_get: Some(get), ..Probe::default() };
        let readiness = Probes::of(&container(probe), 0, Path::new("/tmp")).unwrap();
        let readiness = readiness.readiness.unwrap();
        assert_eq!(
            readiness.action,
            Action::Http {
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/healthz".into(),
                headers: vec![]
            }
        );
        assert_eq!(
            (readiness.period, readiness.timeout, readiness.failure_threshold),
            (Duration::from_secs(10), Duration::from_secs(1), 3)
        );
        let unknown = TCPSocketAction { port: IntOrString::String("grpc".into()), host: None };
        let probe = Probe { tcp_socket: Some(unknown), ..Probe::default() };
        assert_eq!(Probes::of(&container(probe), 0, Path::new("/tmp")), None);
        let https = HTTPGetAction {
            port: IntOrString::Int(8443),
            scheme: Some("HTTPS".into()),
            ..HTTPGetAction::default()
        };
        let probe = Probe { http_get: Some(https), ..Probe::default() };
        assert_eq!(Probes::of(&container(probe), 0, Path::new("/tmp")), None);
    }

    #[tokio::test]
    async fn an_http_probe_is_ready_while_the_server_answers_below_400() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Answers 200 twice, then 503 for good.
        tokio::spawn(async move {
            let answers = ["200 OK", "200 OK"].into_iter();
            for answer in answers.chain(std::iter::repeat("503 Service Unavailable")) {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 1024];
                let read = stream.read(&mut request).await.unwrap();
                assert!(String::from_utf8_lossy(&request[..read]).starts_with("GET /ready "));
                let response = format!("HTTP/1.1 {answer}\r\ncontent-length: 0\r\n\r\n");
                stream.write_all(response.as_bytes()).await.unwrap();
            }
        });
        let get = HTTPGetAction {
            port: IntOrString::Int(i32::from(port)),
            path: Some("/ready".into()),
            ..HTTPGetAction::default()
        };
        let probe =
            fast(Probe { http_get: Some(get), failure_threshold: Some(1), ..Probe::default() });
        let readiness = Probes::of(&container(probe), 0, Path::new("/tmp")).unwrap();
        assert_eq!(changes(readiness, 4).await, [Ready(true), Ready(false)]);
    }

    #[tokio::test]
    async fn an_exec_probe_follows_its_command_and_needs_its_thresholds() {
        let dir = std::env::temp_dir().join(format!("keelson-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ready"), "").unwrap();
        let command = ["sh", "-c", "test -f ready && test \"$MODE\" = on"].map(String::from);
        let container = container(fast(Probe {
            exec: Some(ExecAction { command: Some(command.to_vec()) }),
            success_threshold: Some(2),
            ..Probe::default()
        }));
        // The container's process, whose environment the probe's command gets.
        let mut process = std::process::Command::new("sleep")
            .arg("30")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .env("MODE", "on")
            .spawn()
            .unwrap();
        let readiness = Probes::of(&container, process.id(), &dir).unwrap();
        // Ready after two successes (the first at once, the second a second later).
        assert_eq!(changes(readiness.clone(), 3).await, [Ready(true)]);
        std::fs::remove_file(dir.join("ready")).unwrap();
        assert_eq!(changes(readiness, 3).await, [], "never ready without the file");
        process.kill().unwrap();
        process.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_tcp_probe_needs_a_listener() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let tcp = TCPSocketAction { port: IntOrString::Int(i32::from(port)), host: None };
        let probe = fast(Probe { tcp_socket: Some(tcp), ..Probe::default() });
        let readiness = Probes::of(&container(probe), 0, Path::new("/tmp")).unwrap();
        assert_eq!(changes(readiness.clone(), 1).await, [Ready(true)]);
        drop(listener);
        assert_eq!(changes(readiness, 1).await, []);
    }

    #[tokio::test]
    async fn a_failing_liveness_probe_finds_the_container_unhealthy_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let tcp = TCPSocketAction { port: IntOrString::Int(i32::from(port)), host: None };
        let probe =
            fast(Probe { tcp_socket: Some(tcp), failure_threshold: Some(2), ..Probe::default() });
        let live = Container { liveness_probe: Some(probe), ..Container::default() };
        let probes = Probes::of(&live, 0, Path::new("/tmp")).unwrap();
        assert!(!probes.gates_readiness() && !probes.gates_start());
        assert_eq!(changes(probes.clone(), 2).await, [], "healthy while it listens");
        drop(listener);
        assert_eq!(changes(probes, 4).await, [Unhealthy(Kind::Liveness)]);
    }

    #[tokio::test]
    async fn readiness_waits_for_the_startup_probe() {
        let dir = std::env::temp_dir().join(format!("keelson-startup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let started = |threshold| {
            let command = ["test", "-f", "started"].map(String::from).to_vec();
            fast(Probe {
                exec: Some(ExecAction { command: Some(command) }),
                failure_threshold: Some(threshold),
                ..Probe::default()
            })
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let tcp = TCPSocketAction { port: IntOrString::Int(i32::from(port)), host: None };
        let mut slow = container(fast(Probe { tcp_socket: Some(tcp), ..Probe::default() }));
        slow.startup_probe = Some(started(100));
        let process = Reaped(std::process::Command::new("sleep").arg("30").spawn().unwrap());
        let probes = Probes::of(&slow, process.0.id(), &dir).unwrap();
        assert!(probes.gates_start() && probes.gates_readiness());
        assert_eq!(changes(probes.clone(), 2).await, [], "not ready before it has started");
        std::fs::write(dir.join("started"), "").unwrap();
        assert_eq!(changes(probes, 2).await, [Started, Ready(true)]);
        let mut unprobed = slow.clone();
        unprobed.readiness_probe = None;
        let probes = Probes::of(&unprobed, process.0.id(), &dir).unwrap();
        assert_eq!(changes(probes, 2).await, [Started, Ready(true)], "ready once started");

        std::fs::remove_file(dir.join("started")).unwrap();
        slow.startup_probe = Some(started(2));
        let probes = Probes::of(&slow, process.0.id(), &dir).unwrap();
        assert_eq!(changes(probes, 3).await, [Unhealthy(Kind::Startup)], "never started");
        drop(process);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Waits for the child when the test ends, however it ends.
    struct Reaped(std::process::Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
