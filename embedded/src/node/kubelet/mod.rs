//! The local node's kubelet: one worker per pod bound to a node, fed by a watch of all pods.

mod backoff;
mod env;
mod ephemeral;
mod pod_ips;
mod probe;
mod service_account;
mod status;
mod worker;

pub use service_account::ApiAccess;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use worker::RUN_AS_PROCESS;

use crate::node::pods::node_name;
use crate::node::runtime::process;

/// The running kubelet.
pub struct Kubelet {
    watch: JoinHandle<()>,
    shutdown: watch::Sender<bool>,
    workers: Arc<std::sync::Mutex<HashMap<String, Worker>>>,
}

struct Worker {
    updates: watch::Sender<Option<Arc<Pod>>>,
    task: JoinHandle<()>,
}

/// How the kubelet runs pods.
pub struct KubeletOptions {
    /// The data directory (pod directories go under `pods/`).
    pub data_dir: PathBuf,
    /// The executable process pods run under (see [`crate::node::NodeOptions::supervisor`]).
    pub supervisor: Option<PathBuf>,
    /// Whether Job pods run as local processes.
    pub process_pods: bool,
    /// Delay before a simulated pod is ready.
    pub ready_delay: Duration,
    /// Time a deleted simulated pod takes to stop.
    pub stop_delay: Duration,
    /// How process pods reach the API server with their ServiceAccount's token; without it
    /// they get no credentials.
    pub api: Option<ApiAccess>,
}

impl Kubelet {
    /// Kills what a previous run left behind, then runs every pod bound to a node.
    pub fn spawn(client: Client, options: KubeletOptions) -> Self {
        let pods_root = options.data_dir.join("pods");
        if options.supervisor.is_some() {
            // Supervised processes of pods that still exist are adopted by their workers. Only
            // pod directories from before this start are candidates: the ones made from now on
            // belong to pods this kubelet runs.
            let earlier: HashSet<PathBuf> = std::fs::read_dir(&pods_root)
                .map(|dirs| dirs.flatten().map(|dir| dir.path()).collect())
                .unwrap_or_default();
            tokio::spawn(reap_orphans_of_gone_pods(client.clone(), pods_root, earlier));
        } else {
            report_reaped(process::reap_orphans(&pods_root, |_| false));
        }
        let (shutdown, stop) = watch::channel(false);
        let shared = Arc::new(worker::Shared {
            client: client.clone(),
            data_dir: options.data_dir,
            process_pods: options.process_pods,
            ready_delay: options.ready_delay,
            stop_delay: options.stop_delay,
            supervisor: options.supervisor,
            api: options.api,
            events: crate::node::events::EventLog::start(client.clone()),
            ips: Default::default(),
            shutdown: stop,
        });
        let workers: Arc<std::sync::Mutex<HashMap<String, Worker>>> = Arc::default();
        let watch = tokio::spawn(route(client, shared, workers.clone()));
        Self { watch, shutdown, workers }
    }

    /// Stops every container (SIGTERM, SIGKILL after at most 5 s) and the watch.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        self.watch.abort();
        let tasks: Vec<JoinHandle<()>> = match self.workers.lock() {
            Ok(mut workers) => workers.drain().map(|(_, w)| w.task).collect(),
            Err(_) => Vec::new(),
        };
        let all = futures::future::join_all(tasks);
        let _ = tokio::time::timeout(Duration::from_secs(10), all).await;
    }
}

/// Feeds each bound pod's latest state to its worker, starting workers for new pods.
/// Kills the supervised processes a previous run left, in the `earlier` pod directories, for
/// pods that no longer exist.
async fn reap_orphans_of_gone_pods(client: Client, pods_root: PathBuf, earlier: HashSet<PathBuf>) {
    let pods = match Api::<Pod>::all(client).list(&Default::default()).await {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(%error, "cannot list pods: processes of deleted pods are left running");
            return;
        }
    };
    let uids: HashSet<String> = pods.into_iter().filter_map(|pod| pod.metadata.uid).collect();
    let keep = |pod_dir: &std::path::Path| {
        let name = pod_dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        !earlier.contains(pod_dir) || name.rsplit('_').next().is_some_and(|uid| uids.contains(uid))
    };
    report_reaped(tokio::task::block_in_place(|| process::reap_orphans(&pods_root, keep)));
}

fn report_reaped(killed: Vec<u32>) {
    if !killed.is_empty() {
        tracing::info!(count = killed.len(), "stopped processes left by a previous run");
    }
}

async fn route(
    client: Client,
    shared: Arc<worker::Shared>,
    workers: Arc<std::sync::Mutex<HashMap<String, Worker>>>,
) {
    let pods: Api<Pod> = Api::all(client);
    let mut stream = watcher(pods, watcher::Config::default()).default_backoff().boxed();
    let mut listed: HashSet<String> = HashSet::new();
    while let Some(event) = stream.next().await {
        let Ok(mut workers) = workers.lock() else { return };
        workers.retain(|_, w| !w.task.is_finished());
        match event {
            Ok(watcher::Event::Init) => listed.clear(),
            Ok(watcher::Event::InitApply(pod)) => {
                listed.insert(pod.uid().unwrap_or_default());
                deliver(&shared, &mut workers, pod);
            }
            Ok(watcher::Event::Apply(pod)) => deliver(&shared, &mut workers, pod),
            Ok(watcher::Event::Delete(pod)) => {
                if let Some(worker) = workers.get(&pod.uid().unwrap_or_default()) {
                    let _ = worker.updates.send(None);
                }
            }
            Ok(watcher::Event::InitDone) => {
                for (uid, worker) in workers.iter() {
                    if !listed.contains(uid) {
                        let _ = worker.updates.send(None);
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "the kubelet's pod watch failed; retrying"),
        }
    }
}

fn deliver(shared: &Arc<worker::Shared>, workers: &mut HashMap<String, Worker>, pod: Pod) {
    if node_name(&pod).is_none() {
        return;
    }
    let uid = pod.uid().unwrap_or_default();
    let pod = Arc::new(pod);
    if let Some(worker) = workers.get(&uid) {
        let _ = worker.updates.send(Some(pod));
        return;
    }
    let (updates, receiver) = watch::channel(Some(pod));
    let task = tokio::spawn(worker::run(shared.clone(), receiver));
    workers.insert(uid, Worker { updates, task });
}
