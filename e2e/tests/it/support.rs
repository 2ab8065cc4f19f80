//! A `keelson up` process in a temporary directory and a `kubectl` pointed at it.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use keelson_e2e::bench::free_port;

/// A running `keelson up`, stopped (SIGKILL) when dropped.
pub struct Keelson {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// Port of the REST API.
    pub api_port: u16,
    /// Port of the metrics endpoint.
    pub metrics_port: u16,
    /// Extra arguments of `keelson up` (kept for restarts).
    args: Vec<String>,
    /// Extra environment of `keelson up`.
    env: Vec<(String, String)>,
    /// What `keelson up` logs (`KEELSON_LOG`) into [`Keelson::log`] instead of the test's
    /// stderr; `None` for its warnings on the test's stderr.
    log_filter: Option<String>,
    child: Option<Child>,
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

impl Keelson {
    /// Starts `keelson up` and waits until its kubeconfig works.
    pub fn up() -> Self {
        Self::up_with(&[])
    }

    /// Starts `keelson up` with extra arguments.
    pub fn up_with(args: &[&str]) -> Self {
        Self::up_with_env(args, &[])
    }

    /// Starts `keelson up` with extra arguments and environment.
    pub fn up_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut keelson = Self::new(args, env, None);
        keelson.start();
        keelson
    }

    /// Starts `keelson up` with extra arguments, logging what `filter` (`KEELSON_LOG`'s
    /// syntax) lets through into [`Keelson::log`].
    pub fn up_logging(args: &[&str], filter: &str) -> Self {
        let mut keelson = Self::new(args, &[], Some(filter.to_owned()));
        keelson.start();
        keelson
    }

    fn new(args: &[&str], env: &[(&str, &str)], log_filter: Option<String>) -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            api_port: free_port(),
            metrics_port: free_port(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            log_filter,
            child: None,
        }
    }

    /// The log file of a `keelson up` started by [`Keelson::up_logging`].
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("keelson.log")
    }

    /// Starts the process on the same data dir and ports. The data dir is given relative to
    /// the working directory, as `keelson up`'s default `.keelson` is.
    ///
    /// A start that exits at once is tried again on other ports, up to twice: a port found
    /// free can be taken by a test running alongside before keelson binds it.
    pub fn start(&mut self) {
        for attempt in 1..=3 {
            match self.start_once() {
                Ok(()) => return,
                Err(status) if attempt < 3 => {
                    eprintln!("keelson up exited during start ({status}); trying other ports");
                    (self.port, self.api_port, self.metrics_port) =
                        (free_port(), free_port(), free_port());
                }
                Err(status) => panic!("keelson up exited during start: {status}"),
            }
        }
    }

    /// Starts the process and waits until it serves Keelson's CRDs; its exit status if it ends.
    fn start_once(&mut self) -> Result<(), std::process::ExitStatus> {
        let child = Command::new(keelson_e2e::keelson_binary())
            .current_dir(self.dir.path())
            .args(["up", "--data-dir", "data"])
            .args(["--bind", &format!("127.0.0.1:{}", self.port)])
            .args(["--api-bind", &format!("127.0.0.1:{}", self.api_port)])
            .args(["--metrics-bind", &format!("127.0.0.1:{}", self.metrics_port)])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("KEELSON_LOG", self.log_filter.as_deref().unwrap_or("warn"))
            .stdout(Stdio::null())
            .stderr(match self.log_filter {
                Some(_) => {
                    let log = std::fs::File::options().create(true).append(true).open(self.log());
                    Stdio::from(log.unwrap())
                }
                None => Stdio::inherit(),
            })
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(status);
            }
            if self.data_dir().join("kubeconfig").exists()
                && self
                    .kubectl(&["get", "crd", "modeldeployments.serving.keelson.dev"])
                    .status
                    .success()
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("keelson up did not become ready in 30 s");
    }

    /// Kills the process and starts it again on the same data dir with other arguments.
    pub fn restart_with(&mut self, args: &[&str]) {
        self.kill();
        self.args = args.iter().map(|a| (*a).to_owned()).collect();
        self.start();
    }

    /// Kills the process with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The REST API's base URL.
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// A REST client with the write token `keelson up` made.
    pub fn rest(&self) -> keelson_e2e::rest::Rest {
        let token = std::fs::read_to_string(self.data_dir().join("api-token")).unwrap();
        keelson_e2e::rest::Rest::new(self.api_url(), Some(token.trim().to_owned()))
    }

    /// Waits until the REST API answers `/ready`.
    pub fn wait_api_ready(&self) {
        let rest = self.rest();
        eventually(30, "the REST API to be ready", || rest.get("/ready").status == 200);
    }

    /// `keelson token create --scope read --name <name>`: the new token.
    pub fn read_token(&self, name: &str) -> String {
        let output = Command::new(keelson_e2e::keelson_binary())
            .args(["token", "create", "--scope", "read", "--name", name, "--kubeconfig"])
            .arg(self.data_dir().join("kubeconfig"))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// Runs kubectl with this server's kubeconfig and its own HOME (discovery cache).
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_cmd(args).output().unwrap()
    }

    /// A kubectl command ready to run.
    pub fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .args(args)
            .env("KUBECONFIG", self.data_dir().join("kubeconfig"))
            .env("HOME", self.dir.path())
            .current_dir(workspace());
        command
    }

    /// Runs kubectl and returns stdout, failing the test with stderr when it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            output.status.success(),
            "kubectl {} failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs kubectl until its stdout contains every one of `wanted`, for at most 10 s, and
    /// returns that stdout: for events, which are written a moment after what they tell of.
    pub fn ok_showing(&self, args: &[&str], wanted: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.ok(args);
            let missing: Vec<_> = wanted.iter().filter(|w| !out.contains(*w)).collect();
            if missing.is_empty() {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "kubectl {} never showed {missing:?}:\n{out}",
                args.join(" ")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `kubectl get <kind> <name> -o jsonpath=<path>` in the default namespace.
    pub fn jsonpath(&self, kind: &str, name: &str, path: &str) -> String {
        self.ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
    }

    /// `kubectl get <kind> <name> -n <namespace> -o jsonpath=<path>`.
    pub fn jsonpath_in(&self, namespace: &str, kind: &str, name: &str, path: &str) -> String {
        self.ok(&["get", kind, name, "-n", namespace, "-o", &format!("jsonpath={path}")])
    }

    /// Runs kubectl expecting failure and returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(!output.status.success(), "kubectl {} should have failed", args.join(" "));
        String::from_utf8(output.stderr).unwrap()
    }

    /// Applies a manifest given inline.
    pub fn apply(&self, name: &str, yaml: &str) -> String {
        let path = self.manifest(name, yaml);
        self.ok(&["apply", "-f", &path])
    }

    /// Writes a manifest into the temp dir and returns its path.
    pub fn manifest(&self, name: &str, yaml: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).unwrap();
        path.display().to_string()
    }
}

impl Drop for Keelson {
    /// Stops keelson cleanly (SIGTERM), so the processes of its pods stop with it; a crash
    /// (SIGKILL) would leave them running for a next start to adopt.
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.kill();
    }
}

/// `keelson up` flags for a machine with one GPU node and pods ready after 200 ms.
pub const GPU_NODE: [&str; 4] = ["--node", "gpu-0,nvidia.com/gpu=1", "--pod-ready-delay", "200ms"];

/// A vLLM ModelDeployment `qwen` on one GPU, with `extra` (indented lines) added to its spec.
pub fn qwen(extra: &str) -> String {
    format!(
        "apiVersion: serving.keelson.dev/v1alpha1
kind: ModelDeployment
metadata:
  name: qwen
spec:
  backend: vllm
  model: Qwen/Qwen2.5-7B-Instruct
  resources:
    limits: {{nvidia.com/gpu: \"1\"}}
{extra}"
    )
}

/// Polls `check` every 100 ms for up to `secs` seconds.
/// Runs `command` with `input` on its stdin and collects its output.
pub fn output_with_input(mut command: Command, input: &str) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

pub fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}
