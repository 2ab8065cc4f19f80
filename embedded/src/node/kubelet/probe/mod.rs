//! The probes of process pods' containers, run as a kubelet runs them: after
//! `initialDelaySeconds`, every `periodSeconds`, each attempt failing after `timeoutSeconds`.
//! A startup probe runs first, until `successThreshold` successes in a row (the container has
//! started) or `failureThreshold` failures in a row (it is unhealthy); only then do the
//! readiness and liveness probes run. A container becomes ready after `successThreshold`
//! successes in a row and unready after `failureThreshold` failures in a row; a liveness probe
//! finds it unhealthy after `failureThreshold` failures in a row. An unhealthy container is
//! killed and restarted as its restart policy says. Every failed attempt is reported with what
//! went wrong, for the pod's `Unhealthy` events.
//!
//! What one attempt does is in [`action`].

mod action;

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};

use action::Action;

/// The probes of one container that the node runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Probes {
    startup: Option<Prober>,
    readiness: Option<Prober>,
    liveness: Option<Prober>,
}

/// What the probes found out about a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// An attempt of a probe failed, saying why.
    Failed { kind: Kind, message: String },
    /// The startup probe passed (followed by `Ready(true)` when there is no readiness probe).
    Started,
    /// The readiness probe changed its mind.
    Ready(bool),
    /// The startup or liveness probe failed too often: the container is to be killed.
    Unhealthy(Kind),
}

/// Which probe found something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The startup probe.
    Startup,
    /// The readiness probe.
    Readiness,
    /// The liveness probe.
    Liveness,
}

impl Kind {
    /// The probe's name in events: `Startup`, `Readiness` or `Liveness`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Startup => "Startup",
            Kind::Readiness => "Readiness",
            Kind::Liveness => "Liveness",
        }
    }
}

/// One probe the node can run.
#[derive(Clone, Debug, PartialEq)]
struct Prober {
    kind: Kind,
    action: Action,
    initial_delay: Duration,
    period: Duration,
    timeout: Duration,
    success_threshold: u32,
    failure_threshold: u32,
}

/// Nobody listens to the findings any more: probing ends.
struct Unheard;

impl Probes {
    /// The probes of `container`, whose process is `pid`, in a pod working in `dir`; `None`
    /// when it has none the node runs (a probe naming a port the container does not declare is
    /// left out).
    pub fn of(container: &Container, pid: u32, dir: &Path) -> Option<Self> {
        let prober = |kind, probe: &Option<Probe>| {
            let probe = probe.as_ref()?;
            Some(timing(kind, probe, Action::of(container, probe, pid, dir)?))
        };
        let probes = Probes {
            startup: prober(Kind::Startup, &container.startup_probe),
            readiness: prober(Kind::Readiness, &container.readiness_probe),
            liveness: prober(Kind::Liveness, &container.liveness_probe),
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
        let _ = self.probe(&Heard(&report)).await;
    }

    async fn probe<F: Future<Output = bool>>(
        &self,
        report: &Heard<'_, impl Fn(Finding) -> F>,
    ) -> Result<(), Unheard> {
        if let Some(startup) = &self.startup {
            if !startup.until_started(report).await? {
                return report.tell(Finding::Unhealthy(Kind::Startup)).await;
            }
            report.tell(Finding::Started).await?;
            if self.readiness.is_none() {
                report.tell(Finding::Ready(true)).await?;
            }
        }
        if self.readiness.is_none() && self.liveness.is_none() {
            return Ok(());
        }
        let readiness = async {
            match &self.readiness {
                Some(readiness) => readiness.readiness(report).await,
                None => std::future::pending().await,
            }
        };
        let liveness = async {
            match &self.liveness {
                Some(liveness) => {
                    liveness.until_unhealthy(report).await?;
                    report.tell(Finding::Unhealthy(Kind::Liveness)).await
                }
                None => std::future::pending().await,
            }
        };
        // Either ends the probing: an unhealthy container is killed, and a report refused
        // means nobody listens.
        tokio::select! {
            result = readiness => result,
            result = liveness => result,
        }
    }
}

/// The report function, answering [`Unheard`] once it refuses a finding.
struct Heard<'a, R>(&'a R);

impl<R: Fn(Finding) -> F, F: Future<Output = bool>> Heard<'_, R> {
    async fn tell(&self, finding: Finding) -> Result<(), Unheard> {
        if (self.0)(finding).await { Ok(()) } else { Err(Unheard) }
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
    /// Waits for the next attempt and counts its result, reporting a failure.
    async fn next<F: Future<Output = bool>>(
        &mut self,
        report: &Heard<'_, impl Fn(Finding) -> F>,
    ) -> Result<(), Unheard> {
        self.ticks.tick().await;
        let prober = self.prober;
        let result = tokio::time::timeout(prober.timeout, prober.action.attempt()).await;
        match result.unwrap_or_else(|_| Err(format!("timed out after {:?}", prober.timeout))) {
            Ok(()) => {
                (self.successes, self.failures) = (self.successes + 1, 0);
                Ok(())
            }
            Err(message) => {
                (self.successes, self.failures) = (0, self.failures + 1);
                report.tell(Finding::Failed { kind: prober.kind, message }).await
            }
        }
    }
}

impl Prober {
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

    /// Reports each change of readiness; unready at first.
    async fn readiness<F: Future<Output = bool>>(
        &self,
        report: &Heard<'_, impl Fn(Finding) -> F>,
    ) -> Result<(), Unheard> {
        let mut streak = self.streak().await;
        let mut ready = false;
        loop {
            streak.next(report).await?;
            let now = match ready {
                false => streak.successes >= self.success_threshold,
                true => streak.failures < self.failure_threshold,
            };
            if now != ready {
                ready = now;
                report.tell(Finding::Ready(ready)).await?;
            }
        }
    }

    /// Whether the container started (enough successes) before it failed too often.
    async fn until_started<F: Future<Output = bool>>(
        &self,
        report: &Heard<'_, impl Fn(Finding) -> F>,
    ) -> Result<bool, Unheard> {
        let mut streak = self.streak().await;
        loop {
            streak.next(report).await?;
            if streak.successes >= self.success_threshold {
                return Ok(true);
            }
            if streak.failures >= self.failure_threshold {
                return Ok(false);
            }
        }
    }

    /// Returns once the probe has failed too often in a row.
    async fn until_unhealthy<F: Future<Output = bool>>(
        &self,
        report: &Heard<'_, impl Fn(Finding) -> F>,
    ) -> Result<(), Unheard> {
        let mut streak = self.streak().await;
        while streak.failures < self.failure_threshold {
            streak.next(report).await?;
        }
        Ok(())
    }
}

/// The probe's timing with upstream's defaults (10 s period, 1 s timeout, thresholds 1 and 3).
fn timing(kind: Kind, probe: &Probe, action: Action) -> Prober {
    let seconds = |value: Option<i32>, default: u64| {
        Duration::from_secs(value.and_then(|v| u64::try_from(v).ok()).unwrap_or(default))
    };
    let count = |value: Option<i32>, default: u32| {
        value.and_then(|v| u32::try_from(v).ok()).filter(|v| *v > 0).unwrap_or(default)
    };
    Prober {
        kind,
        action,
        initial_delay: seconds(probe.initial_delay_seconds, 0),
        period: seconds(probe.period_seconds, 10).max(Duration::from_secs(1)),
        timeout: seconds(probe.timeout_seconds, 1).max(Duration::from_secs(1)),
        success_threshold: count(probe.success_threshold, 1),
        failure_threshold: count(probe.failure_threshold, 3),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, HTTPGetAction, TCPSocketAction};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
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
    async fn findings(probes: Probes, seconds: u64) -> Vec<Finding> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let run = probes.run(move |finding| {
            record.lock().unwrap().push(finding);
            std::future::ready(true)
        });
        let _ = tokio::time::timeout(Duration::from_secs(seconds), run).await;
        seen.lock().unwrap().clone()
    }

    /// What `probes` found out in `seconds`, failed attempts left out.
    async fn changes(probes: Probes, seconds: u64) -> Vec<Finding> {
        let found = findings(probes, seconds).await;
        found.into_iter().filter(|f| !matches!(f, Finding::Failed { .. })).collect()
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
                tls: false,
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
        let readiness = Probes::of(&container(probe), 0, Path::new("/tmp")).unwrap();
        assert!(matches!(readiness.readiness.unwrap().action, Action::Http { tls: true, .. }));
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
    async fn each_failed_attempt_is_reported_with_what_went_wrong() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let tcp = TCPSocketAction { port: IntOrString::Int(i32::from(port)), host: None };
        let probe =
            fast(Probe { tcp_socket: Some(tcp), failure_threshold: Some(5), ..Probe::default() });
        let live = Container { liveness_probe: Some(probe), ..Container::default() };
        let found = findings(Probes::of(&live, 0, Path::new("/tmp")).unwrap(), 2).await;
        let refused = format!("dial tcp 127.0.0.1:{port}: Connection refused (os error 111)");
        let failed = Finding::Failed { kind: Kind::Liveness, message: refused };
        assert!(matches!(found.len(), 2 | 3), "one a second: {found:?}");
        assert!(found.iter().all(|f| *f == failed), "not yet unhealthy: {found:?}");
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
