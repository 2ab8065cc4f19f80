//! What the benchmarks share: a release `keelson up` in a temporary directory, and percentiles.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `keelson up` process, killed when dropped.
pub struct Up {
    /// The process.
    pub child: Child,
    /// Its data directory.
    pub dir: tempfile::TempDir,
    /// When it was spawned.
    pub started: Instant,
    /// Port of its REST API.
    pub api_port: u16,
}

impl Up {
    /// Kills the process and hands back its data directory, for a restart on it.
    pub fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The next start writes a new one; waiting for it must not read this one.
        let _ = std::fs::remove_file(self.dir.path().join("kubeconfig"));
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    /// A client of its REST API with the write token it made (there once the kubeconfig is).
    pub fn rest(&self) -> crate::rest::Rest {
        let token = std::fs::read_to_string(self.dir.path().join("api-token")).unwrap();
        crate::rest::Rest::new(
            format!("http://127.0.0.1:{}", self.api_port),
            Some(token.trim().into()),
        )
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now, for a server the caller starts next.
///
/// Chosen below Linux's ephemeral range (32768 and up), from which outgoing connections take
/// their local ports: a port the kernel handed out by `bind(0)` could be taken by any client's
/// connection before the server binds it. Random, so that tests running in parallel do not
/// pick the same one.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const FIRST: u16 = 20_000;
    const COUNT: u64 = 12_000;
    loop {
        // `RandomState` is randomly keyed per process and re-keyed on every `new()`.
        let port = FIRST + (RandomState::new().hash_one(0u8) % COUNT) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// `keelson up` in a new temporary directory.
pub fn spawn_up() -> Up {
    spawn_up_in(tempfile::tempdir().unwrap(), &[], &[])
}

/// `keelson up` on `dir` with extra arguments and environment.
pub fn spawn_up_in(dir: tempfile::TempDir, args: &[&str], env: &[(&str, &str)]) -> Up {
    let port = free_port();
    let api_port = free_port();
    let started = Instant::now();
    let child = Command::new(crate::keelson_binary())
        .args(["up", "--data-dir"])
        .arg(dir.path())
        .args(["--bind", &format!("127.0.0.1:{port}")])
        .args(["--api-bind", &format!("127.0.0.1:{api_port}")])
        .args(["--metrics-bind", "127.0.0.1:0"])
        .args(args)
        .env("KEELSON_LOG", "error")
        // The benchmark Jobs of ready models run `true`: this measures the controllers.
        .env("KEELSON_BENCH_COMMAND", "true")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Up { child, dir, started, api_port }
}

/// Time until `/readyz` answers 200, and a client.
pub async fn until_ready(up: &Up) -> (Duration, kube::Client) {
    loop {
        if up.dir.path().join("kubeconfig").exists() {
            let client = crate::client(up.dir.path()).await;
            let request = http::Request::get("/readyz").body(Vec::new()).unwrap();
            if client.request_text(request).await.is_ok() {
                return (up.started.elapsed(), client);
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The `p` quantile (0 to 1) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1).min(sorted.len() - 1)]
}

/// Latency percentiles and throughput wrk reports.
pub struct Wrk {
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Requests per second.
    pub per_second: f64,
    /// Requests completed.
    pub requests: u64,
}

/// Runs wrk (Debian package `wrk`) with two threads and `connections` connections for `seconds`
/// against `url`, with a bearer token and an optional Lua script; every answer must be a success.
pub fn wrk(connections: usize, url: &str, token: &str, seconds: u32, script: Option<&str>) -> Wrk {
    let mut command = Command::new("wrk");
    command.args(["-t2", &format!("-c{connections}"), &format!("-d{seconds}s"), "--latency"]);
    command.args(["-H", &format!("Authorization: Bearer {token}")]);
    let script_file = script.map(|lua| {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), lua).unwrap();
        file
    });
    if let Some(file) = &script_file {
        command.arg("-s").arg(file.path());
    }
    let output = command.arg(url).output().expect("wrk runs (apt-get install wrk)");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success() && !text.contains("Non-2xx"), "wrk: {text}");
    let quantile = |label: &str| {
        let line = text.lines().find(|l| l.trim_start().starts_with(label)).unwrap();
        duration(line.split_whitespace().nth(1).unwrap())
    };
    let per_second = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let requests = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap();
    Wrk { p50: quantile("50%"), p99: quantile("99%"), per_second, requests }
}

/// A wrk duration such as `512.00us`, `1.23ms` or `2.01s`.
fn duration(text: &str) -> Duration {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap();
    let (value, unit) = text.split_at(split);
    let value: f64 = value.parse().unwrap();
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        other => panic!("unit {other}"),
    };
    Duration::from_secs_f64(value * scale)
}
