//! `keelson up`: the whole control plane on one machine, with an embedded Kubernetes API server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use keelson_embedded::node::config::{self, NodeConfig};
use keelson_embedded::node::{self, ApiAccess, LocalNode, NodeOptions};
use keelson_embedded::server::{self, RunningServer, ServerConfig, tls::write_secret};
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Settings of `keelson up`.
#[derive(Debug, Clone, clap::Args)]
pub struct UpArgs {
    /// Where state, credentials and the kubeconfig live.
    #[arg(long, env = "KEELSON_DATA_DIR", default_value = ".keelson")]
    pub data_dir: PathBuf,
    /// Address of the Kubernetes API; loopback unless told otherwise.
    #[arg(long, env = "KEELSON_BIND", default_value = "127.0.0.1:6443")]
    pub bind: SocketAddr,
    /// A node to register, e.g. `gpu-1,nvidia.com/gpu=2,memory=64Gi,label:accelerator=a100,taint:gpu=true:NoSchedule`
    /// (repeatable; without --node or --nodes-file, one node named after this host).
    #[arg(long = "node", value_name = "SPEC")]
    pub nodes: Vec<NodeConfig>,
    /// A YAML file of nodes to register (`nodes: [{name, labels, taints, capacity}]`).
    #[arg(long, value_name = "PATH")]
    pub nodes_file: Option<PathBuf>,
    /// Do not run Job pods as local processes: they fail with a message saying so.
    #[arg(long)]
    pub no_process_pods: bool,
    /// How long a simulated pod takes to become ready.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    pub pod_ready_delay: Duration,
    /// How long a deleted simulated pod takes to stop (at most its grace period).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub pod_stop_delay: Duration,
    /// First retry delay of a failed Job pod; it doubles per failure, up to 6 minutes.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub job_backoff: Duration,
    /// How long the pods of a node that no longer exists (a deleted Node) are kept before the
    /// pod garbage collector deletes them, as kube-controller-manager's does after 40s.
    #[arg(long, value_name = "DURATION", default_value = "40s", value_parser = duration)]
    pub missing_node_grace: Duration,
    /// Address of the HTTP API (`/api/v1`: orchestrator and clinical endpoints).
    #[arg(long, env = "KEELSON_API_BIND", default_value = "127.0.0.1:8080")]
    pub api_bind: SocketAddr,
    /// Address of the Prometheus metrics endpoint (`/metrics`).
    #[arg(long, env = "KEELSON_METRICS_BIND", default_value = "127.0.0.1:9090")]
    pub metrics_bind: SocketAddr,
    /// Run only the Kubernetes API (CRDs installed) and the local node: no Keelson
    /// controllers, HTTP API or metrics endpoint. For running a controller under development
    /// against it, or measuring the API server alone.
    #[arg(long)]
    pub no_controllers: bool,
}

/// A duration such as `2s`, `500ms` or `1m`.
fn duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration =
        text.parse().map_err(|e| format!("{text:?} is not a duration like 2s or 500ms: {e}"))?;
    Duration::try_from(parsed).map_err(|_| format!("{text:?} must not be negative"))
}

impl UpArgs {
    /// The local node's settings: the nodes of `--node` and `--nodes-file`, or the host.
    fn node_options(&self) -> anyhow::Result<NodeOptions> {
        let mut options = NodeOptions::new(&self.data_dir);
        let mut nodes = self.nodes.clone();
        if let Some(path) = &self.nodes_file {
            nodes.extend(config::load_file(path)?);
        }
        if !nodes.is_empty() {
            options.nodes = nodes;
        }
        options.process_pods = !self.no_process_pods;
        options.ready_delay = self.pod_ready_delay;
        options.stop_delay = self.pod_stop_delay;
        options.job_backoff = self.job_backoff;
        options.missing_node_grace = self.missing_node_grace;
        // Process pods run under this very binary's supervisor, so they survive a crash of
        // `keelson up` and the next one adopts them.
        options.supervisor = std::env::current_exe().ok();
        Ok(options)
    }
}

/// The running control plane.
pub struct ControlPlane {
    /// The API server.
    pub server: RunningServer,
    /// The controllers and the HTTP endpoints, unless `--no-controllers`.
    pub services: Option<Services>,
    node: LocalNode,
    controllers: Vec<tokio::task::JoinHandle<()>>,
}

impl ControlPlane {
    /// Stops the controllers, the local node (its processes first), then the API server.
    pub async fn shutdown(self) {
        for task in &self.controllers {
            task.abort();
        }
        self.node.shutdown().await;
        self.server.shutdown(Duration::from_secs(5)).await;
    }
}

/// Where the HTTP endpoints that run beside the controllers listen.
pub struct Services {
    /// Where the HTTP API listens.
    pub api_addr: SocketAddr,
    /// Where the metrics endpoint listens.
    pub metrics_addr: SocketAddr,
}

/// The file name of the kubeconfig inside the data directory.
pub const KUBECONFIG: &str = "kubeconfig";
/// The file name of the REST API's write token inside the data directory.
pub const API_TOKEN: &str = "api-token";
/// The name of that token: who did what through it.
const API_TOKEN_NAME: &str = "local";

/// Starts the API server, writes the kubeconfig, installs Keelson's CRDs and starts the local
/// node.
pub async fn start(args: &UpArgs) -> anyhow::Result<ControlPlane> {
    let started = Instant::now();
    let mut node_options = args.node_options()?;
    let mut settings = crate::api::Settings::from_env()?;
    // The benchmark Job runs this very binary as a local process unless
    // `KEELSON_BENCH_COMMAND` names another.
    if std::env::var_os("KEELSON_BENCH_COMMAND").is_none()
        && let Ok(exe) = std::env::current_exe()
    {
        settings.serving.bench_command = exe.display().to_string();
    }
    let listeners = if args.no_controllers {
        None
    } else {
        Some(crate::api::Listeners::bind(args.api_bind, args.metrics_bind).await?)
    };
    let mut config = ServerConfig::new(&args.data_dir);
    config.bind = args.bind;
    let server = server::start(config).await.context("starting the embedded API server")?;
    let kubeconfig = server.kubeconfig();
    let kube_config = client_config(&kubeconfig).await?;
    let client = crate::kube_args::from_config(kube_config.clone())?;
    install_crds(&client).await?;
    if listeners.is_some() {
        ensure_api_token(&client, &settings.api.namespace, &args.data_dir.join(API_TOKEN)).await?;
    }
    // Written once every CRD is served and the API token is stored, so a client that finds it
    // finds all of them.
    write_secret(&args.data_dir.join(KUBECONFIG), &kubeconfig).context("writing the kubeconfig")?;
    node_options.api =
        Some(ApiAccess { url: server.url(), ca_pem: server.credentials.ca_pem.clone() });
    let node = node::start(kube_config, node_options).await.context("starting the local node")?;
    let (services, controllers) = match listeners {
        Some(listeners) => {
            let services = Services {
                api_addr: listeners.api.local_addr()?,
                metrics_addr: listeners.metrics.local_addr()?,
            };
            (Some(services), crate::api::spawn(client, settings, listeners).await?)
        }
        None => (None, Vec::new()),
    };
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, url = %server.url(), "control plane up");
    Ok(ControlPlane { server, services, node, controllers })
}

/// Makes sure `path` holds a write token of the REST API: the one there if it is still
/// valid, else a new one (replacing the Secret of an old one).
async fn ensure_api_token(
    client: &kube::Client,
    namespace: &str,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    use keelson_facades::auth::{self, Scope, token};
    if let Ok(existing) = std::fs::read_to_string(path)
        && auth::token_exists(client, namespace, existing.trim()).await?
    {
        return Ok(());
    }
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), namespace);
    let _ = secrets.delete(&token::secret_name(API_TOKEN_NAME), &Default::default()).await;
    let value = auth::create_token(client, namespace, API_TOKEN_NAME, Scope::Write).await?;
    write_secret(path, &value).context("writing the API token")?;
    Ok(())
}

/// The client configuration of a kubeconfig given as YAML.
async fn client_config(kubeconfig: &str) -> anyhow::Result<kube::Config> {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).context("parsing the kubeconfig")?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A client for a kubeconfig given as YAML.
pub(crate) async fn client(kubeconfig: &str) -> anyhow::Result<kube::Client> {
    crate::kube_args::from_config(client_config(kubeconfig).await?)
}

/// Server-side applies every Keelson CRD, and the ClusterRoles that add their kinds to `view`
/// and `edit` (field manager `keelson`, forced).
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("keelson").force();
    for crd in keelson_api_crds::all_crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("installing CRD {name}"))?;
    }
    let roles: Api<ClusterRole> = Api::all(client.clone());
    for role in keelson_api_crds::roles::aggregated_cluster_roles() {
        let name = role.metadata.name.clone().unwrap_or_default();
        roles
            .patch(&name, &params, &Patch::Apply(&role))
            .await
            .with_context(|| format!("installing ClusterRole {name}"))?;
    }
    Ok(())
}

/// Waits for Ctrl-C or SIGTERM (how service managers ask a process to stop).
pub(crate) async fn stop_requested() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("waiting for Ctrl-C"),
        _ = terminate.recv() => Ok(()),
    }
}

/// Runs `keelson up` until Ctrl-C or SIGTERM.
pub async fn run(args: UpArgs) -> anyhow::Result<()> {
    let plane = start(&args).await?;
    let server = &plane.server;
    // Absolute, so the printed `export` works from any directory.
    let data_dir = std::path::absolute(&args.data_dir).unwrap_or_else(|_| args.data_dir.clone());
    let kubeconfig = data_dir.join(KUBECONFIG);
    println!("Keelson is up.");
    println!("  Kubernetes API  {}", server.url());
    println!("  kubeconfig      {}", kubeconfig.display());
    match &plane.services {
        Some(services) => {
            println!("  REST API        http://{}/api/v1", services.api_addr);
            println!("  HL7v2 parsing   http://{}/api/v1/parse", services.api_addr);
            println!("  API token       {} (write scope)", data_dir.join(API_TOKEN).display());
            println!("  metrics         http://{}/metrics", services.metrics_addr);
        }
        None => println!("  controllers     not running (--no-controllers)"),
    }
    println!("  data            {}", data_dir.display());
    println!();
    println!("Try:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl apply -R -f examples/");
    println!("  kubectl get keelson");
    println!(
        "  kubectl create job hello --image=busybox -- sh -c 'echo hello from a local process'"
    );
    if let Some(services) = &plane.services {
        println!(
            "  curl -H \"Authorization: Bearer $(cat {})\" http://{}/api/v1/flows",
            data_dir.join(API_TOKEN).display(),
            services.api_addr
        );
        println!("  keelson token create --scope read   # a token for someone who only reads");
    }
    println!();
    println!("Press Ctrl-C to stop.");
    stop_requested().await?;
    println!("Stopping…");
    plane.shutdown().await;
    Ok(())
}
