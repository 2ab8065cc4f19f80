//! The local node: what a cluster's kubelet, scheduler and kube-controller-manager do, for
//! `keelson up` on one machine.
//!
//! - [`config`]: the nodes to register (`--node` flags, a nodes file, or the host itself);
//! - node registration and heartbeats (Node status, `kube-node-lease` Leases);
//! - [`scheduler`]: pure pod placement (selectors, affinity, taints, resources), and its loop;
//! - [`workloads`]: Deployment, ReplicaSet, DaemonSet, Job and PVC controllers;
//! - the kubelet: Job pods (and pods annotated `keelson.dev/run-as-process: "true"`) run as
//!   local processes ([`runtime`]); every other pod is simulated and becomes ready after a delay.
//!
//! Everything talks to the API server through a `kube::Client`, as the real components do.

pub mod config;
mod events;
mod kubelet;
mod lifecycle;
mod pod_gc;
mod pod_status;
pub mod pods;
pub mod quantity;
mod registration;
pub mod runtime;
pub mod scheduler;
mod scheduling;
mod taint_eviction;
pub mod workloads;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::http::header::USER_AGENT;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use tokio::task::JoinHandle;

pub use kubelet::{ApiAccess, RUN_AS_PROCESS};

/// How the local node runs.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The nodes to register at start.
    pub nodes: Vec<config::NodeConfig>,
    /// The data directory: pod working directories and logs go under `pods/`.
    pub data_dir: PathBuf,
    /// Whether Job pods run their commands as local processes.
    pub process_pods: bool,
    /// How long a simulated pod takes to become ready.
    pub ready_delay: Duration,
    /// How long a deleted simulated pod takes to stop (at most its grace period).
    pub stop_delay: Duration,
    /// Base of a Job's retry back-off (doubles per failure, at most 6 minutes).
    pub job_backoff: Duration,
    /// How long the pods of a node that no longer exists are kept before they are deleted.
    pub missing_node_grace: Duration,
    /// The `keelson` executable process pods run under (its `supervise` subcommand), so they
    /// outlive a crash of `keelson up` and are adopted by the next one; `None` runs them
    /// directly, and they die with it.
    pub supervisor: Option<PathBuf>,
    /// How process pods reach the API server as their ServiceAccount (see
    /// `kubelet::service_account`); `None` gives them no credentials.
    pub api: Option<ApiAccess>,
}

impl NodeOptions {
    /// One node for the host, process pods on, upstream delays.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            nodes: vec![config::host_node()],
            data_dir: data_dir.into(),
            process_pods: true,
            ready_delay: Duration::from_secs(2),
            stop_delay: Duration::from_secs(1),
            job_backoff: Duration::from_secs(10),
            missing_node_grace: Duration::from_secs(40),
            supervisor: None,
            api: None,
        }
    }
}

/// The running local node.
pub struct LocalNode {
    kubelet: kubelet::Kubelet,
    tasks: Vec<JoinHandle<()>>,
}

/// A client for the API server that names `component` in `User-Agent`, so that the server
/// records the writes it makes without a field manager under upstream's component names
/// (`kubelet`, `kube-scheduler`, `kube-controller-manager`).
fn component_client(config: &kube::Config, component: &str) -> Result<Client, kube::Error> {
    let mut config = config.clone();
    let agent = format!("{component}/keelson-{}", env!("CARGO_PKG_VERSION"));
    let agent = HeaderValue::try_from(agent).expect("a component name is a valid header value");
    config.headers.retain(|(name, _)| name != USER_AGENT);
    config.headers.push((USER_AGENT, agent));
    Client::try_from(config)
}

/// Registers the nodes, then starts their heartbeats, the scheduler, the taint eviction, pod
/// garbage collection and workload controllers and the kubelet, each talking to the API server
/// at `config` as its upstream component.
pub async fn start(config: kube::Config, options: NodeOptions) -> Result<LocalNode, kube::Error> {
    let kubelet_client = component_client(&config, "kubelet")?;
    let scheduler = component_client(&config, "kube-scheduler")?;
    let controllers = component_client(&config, "kube-controller-manager")?;
    registration::register(&kubelet_client, &options.nodes).await?;
    let reporter = |name: &str| Reporter { controller: name.to_owned(), instance: None };
    let mut tasks = vec![
        tokio::spawn(registration::heartbeats(
            kubelet_client.clone(),
            events::EventLog::start(kubelet_client.clone()),
        )),
        tokio::spawn(scheduling::run(
            scheduler.clone(),
            Recorder::new(scheduler, reporter("default-scheduler")),
        )),
    ];
    tasks.push(tokio::spawn(lifecycle::run(
        controllers.clone(),
        events::EventLog::start(controllers.clone()),
        options.missing_node_grace,
    )));
    tasks.extend(workloads::spawn(Arc::new(workloads::Context {
        client: controllers.clone(),
        events: events::EventLog::start(controllers),
        job_backoff: options.job_backoff,
        autoscaler_histories: Default::default(),
        scale_targets: Default::default(),
        strays: Default::default(),
    })));
    let kubelet = kubelet::Kubelet::spawn(
        kubelet_client,
        kubelet::KubeletOptions {
            // Processes run in their pods' work directories: a relative data directory would
            // point somewhere else from there.
            data_dir: std::path::absolute(&options.data_dir).unwrap_or(options.data_dir),
            process_pods: options.process_pods,
            ready_delay: options.ready_delay,
            stop_delay: options.stop_delay,
            supervisor: options.supervisor,
            api: options.api,
        },
    );
    Ok(LocalNode { kubelet, tasks })
}

impl LocalNode {
    /// Stops the controllers and the scheduler, then every container of the node.
    pub async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        self.kubelet.shutdown().await;
    }
}
