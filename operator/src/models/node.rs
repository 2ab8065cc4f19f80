//! `keelson node check <node>` and `keelson node drain <node>`: the spec's cleanup and recovery
//! rules as commands.
//!
//! `check` lists what targets a node (rule 1): the Memory and NodeLocal ModelCaches whose node
//! selector picks it, the ModelDeployments with pods on it (or pinned to it), the cache syncer
//! pods on it, and its stuck pods (Terminating, Pending or not Ready for longer than
//! `--stuck-after`, or crash-looping). `drain` clears it in the documented order (rule 4):
//! delete the Memory caches targeting it, set `spec.replicas` to 0 on those ModelDeployments
//! (never on their Deployments, rule 2), force-delete the stuck pods (grace period 0); then the
//! node can be rebooted. Both look at every namespace: a node is shared by all of them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, Pod};
use keelson_api_crds::serving::{ModelCache, ModelDeployment, StorageStrategy};
use keelson_controllers::serving::preflight::{
    HOSTNAME_LABEL, cache_targets, crash_looping, is_syncer,
};
use keelson_controllers::serving::workload::DEPLOYMENT_LABEL;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};

use super::{Error, output, scale};

/// The `keelson node` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct NodeArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: NodeCommand,
}

/// The `keelson node` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum NodeCommand {
    /// List what targets a GPU node: Memory and NodeLocal caches, ModelDeployments with pods
    /// on it, cache syncers and stuck pods (every namespace).
    Check(NodeCheckArgs),
    /// Clear a GPU node in the documented order: delete the Memory caches targeting it, scale
    /// the ModelDeployments on it to 0, force-delete its stuck pods. Asks first.
    Drain(NodeDrainArgs),
}

/// The node and cluster of `keelson node check` and `drain`.
#[derive(Debug, Clone, clap::Args)]
pub struct NodeCheckArgs {
    /// The node.
    pub node: String,
    /// A pod Terminating, Pending or not Ready for longer than this is stuck, e.g. `2m`.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::bench::args::duration)]
    pub stuck_after: Duration,
    /// The kubeconfig of the cluster; `.keelson/kubeconfig` (of `keelson up`) when it exists,
    /// else the usual `KUBECONFIG`, `~/.kube/config` or in-cluster configuration.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
}

/// Settings of `keelson node drain`.
#[derive(Debug, Clone, clap::Args)]
pub struct NodeDrainArgs {
    /// The node, the age of a stuck pod, the cluster.
    #[command(flatten)]
    pub check: NodeCheckArgs,
    /// Print what would be done and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask.
    #[arg(short = 'y', long, visible_alias = "force")]
    pub yes: bool,
}

/// A ModelCache that targets the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheOnNode {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `Memory` (deleted by drain) or `NodeLocal` (kept: its copy is on disk).
    pub strategy: StorageStrategy,
}

/// A ModelDeployment that runs on, or is pinned to, the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOnNode {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its `spec.replicas`.
    pub replicas: i32,
    /// Why it counts, e.g. `2 pods on the node`.
    pub why: String,
    /// Its GPUGroup, which may wake it again.
    pub gpu_group: Option<String>,
}

/// A pod on the node that is stuck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StuckPod {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// How it is stuck, e.g. `Terminating for 12m`.
    pub why: String,
}

/// What targets a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePlan {
    /// The node.
    pub node: String,
    /// Memory and NodeLocal caches whose selector picks the node.
    pub caches: Vec<CacheOnNode>,
    /// ModelDeployments with pods on the node or pinned to it.
    pub models: Vec<ModelOnNode>,
    /// Cache syncer pods on the node (`namespace/name`); they go with their cache.
    pub syncers: Vec<String>,
    /// Stuck pods on the node.
    pub stuck: Vec<StuckPod>,
}

/// What `drain` does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Delete a Memory ModelCache (its syncer DaemonSet goes with it).
    DeleteCache {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Set a ModelDeployment's `spec.replicas` to 0.
    ScaleToZero {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its replicas before.
        from: i32,
    },
    /// Delete a pod with grace period 0.
    ForceDelete {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::DeleteCache { namespace, name } => {
                write!(f, "delete modelcache {namespace}/{name}")
            }
            Action::ScaleToZero { namespace, name, from } => {
                write!(f, "scale modeldeployment {namespace}/{name} to 0 (from {from})")
            }
            Action::ForceDelete { namespace, name } => {
                write!(f, "force-delete pod {namespace}/{name} (grace period 0)")
            }
        }
    }
}

/// What targets `node` (whose labels are `node_labels`), from every cache, ModelDeployment
/// and pod of the cluster (pods on other nodes are ignored).
pub fn plan(
    node: &str,
    node_labels: &BTreeMap<String, String>,
    caches: &[ModelCache],
    models: &[ModelDeployment],
    pods: &[Pod],
    stuck_after: Duration,
    now: jiff::Timestamp,
) -> NodePlan {
    let mut plan = NodePlan { node: node.to_owned(), ..NodePlan::default() };
    for cache in caches {
        let strategy = cache.spec.storage_strategy;
        if strategy != StorageStrategy::SharedPVC && cache_targets(cache, node_labels) {
            plan.caches.push(CacheOnNode {
                namespace: cache.namespace().unwrap_or_default(),
                name: cache.name_any(),
                strategy,
            });
        }
    }
    let on_node: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        .collect();
    for md in models {
        let namespace = md.namespace().unwrap_or_default();
        let name = md.name_any();
        let own = on_node
            .iter()
            .filter(|p| {
                p.namespace().as_deref() == Some(namespace.as_str())
                    && p.labels().get(DEPLOYMENT_LABEL) == Some(&name)
                    && !finished(p)
            })
            .count();
        let selector = &md.spec.node_selector;
        let pinned =
            !selector.is_empty() && selector.iter().all(|(k, v)| node_labels.get(k) == Some(v));
        let allocated = md.status.as_ref().and_then(|s| s.allocated_gpu.as_ref());
        let why = if own > 0 {
            format!("{own} pod{} on the node", if own == 1 { "" } else { "s" })
        } else if pinned {
            "pinned to the node by its nodeSelector".to_owned()
        } else if allocated.is_some_and(|g| g.node == node) && md.spec.replicas > 0 {
            "its GPU is allocated on the node".to_owned()
        } else {
            continue;
        };
        plan.models.push(ModelOnNode {
            namespace,
            name,
            replicas: md.spec.replicas,
            why,
            gpu_group: md.spec.gpu_group_ref.clone(),
        });
    }
    for pod in on_node {
        let id = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
        if let Some(why) = stuck(pod, stuck_after, now) {
            let namespace = pod.namespace().unwrap_or_default();
            plan.stuck.push(StuckPod { namespace, name: pod.name_any(), why });
        } else if is_syncer(pod) {
            plan.syncers.push(id);
        }
    }
    plan
}

/// Whether `pod` ran to its end (`Succeeded` or `Failed`) and is not being deleted.
fn finished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && matches!(phase, Some("Succeeded" | "Failed"))
}

/// How `pod` is stuck, if it is: Terminating, Pending or not Ready for longer than
/// `stuck_after`, or crash-looping.
pub fn stuck(pod: &Pod, stuck_after: Duration, now: jiff::Timestamp) -> Option<String> {
    let longer = |since: Option<jiff::Timestamp>| -> Option<String> {
        let since = since?;
        let elapsed = now.duration_since(since);
        (elapsed.as_secs() >= 0 && elapsed.unsigned_abs() >= stuck_after)
            .then(|| output::age(since, now))
    };
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        return longer(Some(deleted.0)).map(|age| format!("Terminating for {age}"));
    }
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.as_deref().unwrap_or("Pending");
    if matches!(phase, "Succeeded" | "Failed") {
        return None;
    }
    if crash_looping(pod) {
        return Some("crash-looping (CrashLoopBackOff)".to_owned());
    }
    if phase == "Pending" {
        return longer(created).map(|age| format!("Pending for {age}"));
    }
    let ready = status.conditions.iter().flatten().find(|c| c.type_ == "Ready");
    match ready {
        Some(c) if c.status == "True" => None,
        Some(c) => longer(c.last_transition_time.as_ref().map(|t| t.0).or(created))
            .map(|age| format!("not Ready for {age}")),
        None => longer(created).map(|age| format!("not Ready for {age}")),
    }
}

/// What `drain` does for `plan`, in the documented order.
pub fn actions(plan: &NodePlan) -> Vec<Action> {
    let caches = plan
        .caches
        .iter()
        .filter(|c| c.strategy == StorageStrategy::Memory)
        .map(|c| Action::DeleteCache { namespace: c.namespace.clone(), name: c.name.clone() });
    let models = plan.models.iter().filter(|m| m.replicas > 0).map(|m| Action::ScaleToZero {
        namespace: m.namespace.clone(),
        name: m.name.clone(),
        from: m.replicas,
    });
    let pods = plan
        .stuck
        .iter()
        .map(|p| Action::ForceDelete { namespace: p.namespace.clone(), name: p.name.clone() });
    caches.chain(models).chain(pods).collect()
}

/// The plan for people, section by section.
pub fn render(plan: &NodePlan) -> String {
    let mut out = format!("Node {}\n", plan.node);
    let mut section = |title: &str, lines: Vec<String>| {
        out.push_str(title);
        out.push_str(":\n");
        if lines.is_empty() {
            out.push_str("  none\n");
        }
        for line in lines {
            out.push_str(&format!("  {line}\n"));
        }
    };
    let caches = |strategy| {
        plan.caches
            .iter()
            .filter(|c| c.strategy == strategy)
            .map(|c| format!("{}/{}", c.namespace, c.name))
            .collect()
    };
    section("Memory caches targeting the node (deleted by drain)", caches(StorageStrategy::Memory));
    section("NodeLocal caches targeting the node (kept)", caches(StorageStrategy::NodeLocal));
    section(
        "ModelDeployments on the node (scaled to 0 by drain)",
        plan.models
            .iter()
            .map(|m| {
                let group = m.gpu_group.as_ref().map(|g| format!(", GPUGroup {g}"));
                format!(
                    "{}/{}: replicas {}, {}{}",
                    m.namespace,
                    m.name,
                    m.replicas,
                    m.why,
                    group.unwrap_or_default()
                )
            })
            .collect(),
    );
    section("Stuck pods on the node (force-deleted by drain)", {
        plan.stuck.iter().map(|p| format!("{}/{}: {}", p.namespace, p.name, p.why)).collect()
    });
    section("Cache syncer pods on the node (go with their cache)", plan.syncers.clone());
    if actions(plan).is_empty() {
        out.push_str(&format!("Node {} is clear: drain has nothing to do.\n", plan.node));
    }
    out
}

/// Runs `keelson node check` or `drain`.
pub async fn run(args: NodeArgs) -> Result<(), Error> {
    match args.command {
        NodeCommand::Check(args) => {
            let (_, plan) = look(&args).await?;
            output::print(&render(&plan))?;
            Ok(())
        }
        NodeCommand::Drain(args) => drain(args).await,
    }
}

/// Reads what targets the node.
async fn look(args: &NodeCheckArgs) -> Result<(kube::Client, NodePlan), Error> {
    let client = crate::kube_args::client(args.kubeconfig.as_deref()).await?;
    let node = Api::<Node>::all(client.clone())
        .get_opt(&args.node)
        .await
        .context("reading the node")?
        .ok_or_else(|| anyhow::anyhow!("node {:?} not found", args.node))?;
    let mut labels = node.metadata.labels.unwrap_or_default();
    labels.entry(HOSTNAME_LABEL.to_owned()).or_insert_with(|| args.node.clone());
    let all = ListParams::default();
    let caches =
        Api::<ModelCache>::all(client.clone()).list(&all).await.context("listing ModelCaches")?;
    let models = Api::<ModelDeployment>::all(client.clone())
        .list(&all)
        .await
        .context("listing ModelDeployments")?;
    let on_node = ListParams::default().fields(&format!("spec.nodeName={}", args.node));
    let pods = Api::<Pod>::all(client.clone()).list(&on_node).await.context("listing pods")?;
    let plan = plan(
        &args.node,
        &labels,
        &caches.items,
        &models.items,
        &pods.items,
        args.stuck_after,
        jiff::Timestamp::now(),
    );
    Ok((client, plan))
}

/// Runs `keelson node drain`.
async fn drain(args: NodeDrainArgs) -> Result<(), Error> {
    let (client, plan) = look(&args.check).await?;
    let node = plan.node.as_str();
    let actions = actions(&plan);
    if actions.is_empty() {
        output::print(&format!("Node {node} is clear: nothing to do.\n"))?;
        return Ok(());
    }
    if args.dry_run {
        let mut text = format!("Dry run: draining node {node} would\n");
        for action in &actions {
            text.push_str(&format!("  {action}\n"));
        }
        text.push_str("Nothing was changed.\n");
        output::print(&text)?;
        return Ok(());
    }
    if !args.yes {
        eprint!("{}", render(&plan));
        let question = format!("Drain node {node} ({} actions)?", actions.len());
        if !super::confirm(&question, &mut std::io::stdin().lock())? {
            output::print("Drain cancelled\n")?;
            return Ok(());
        }
    }
    for action in &actions {
        perform(&client, action).await.with_context(|| format!("could not {action}"))?;
        output::print(&format!("done: {action}\n"))?;
    }
    for model in plan.models.iter().filter(|m| m.replicas > 0) {
        if let Some(group) = &model.gpu_group {
            eprintln!(
                "note: {}/{} is a member of GPUGroup {group}, which may scale it up again on demand",
                model.namespace, model.name
            );
        }
    }
    output::print(&format!(
        "Node {node} drained. Next: reboot it and wait for it to rejoin (kubectl get node {node} -w).\n"
    ))?;
    Ok(())
}

/// Does one action; what is already gone counts as done.
async fn perform(client: &kube::Client, action: &Action) -> anyhow::Result<()> {
    let gone = |result: kube::Result<()>| match result {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => other,
    };
    match action {
        Action::DeleteCache { namespace, name } => {
            let api: Api<ModelCache> = Api::namespaced(client.clone(), namespace);
            gone(api.delete(name, &DeleteParams::background()).await.map(drop))?;
        }
        Action::ScaleToZero { namespace, name, .. } => {
            let api: Api<ModelDeployment> = Api::namespaced(client.clone(), namespace);
            gone(
                api.patch(name, &PatchParams::default(), &Patch::Merge(scale::patch(0)))
                    .await
                    .map(drop),
            )?;
        }
        Action::ForceDelete { namespace, name } => {
            let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
            let force =
                DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::background() };
            gone(api.delete(name, &force).await.map(drop))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels() -> BTreeMap<String, String> {
        [(HOSTNAME_LABEL.to_owned(), "gpu-0".to_owned())].into()
    }

    fn cache(name: &str, strategy: &str, host: &str) -> ModelCache {
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelCache",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"source": "org/m", "storageStrategy": strategy,
                     "nodeSelector": {HOSTNAME_LABEL: host}},
        }))
        .unwrap()
    }

    fn model(name: &str, replicas: i32, spec: serde_json::Value) -> ModelDeployment {
        let mut full = json!({"backend": "vllm", "model": "org/m", "replicas": replicas});
        full.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": "ml"}, "spec": full,
        }))
        .unwrap()
    }

    fn pod(name: &str, node: &str, labels: serde_json::Value, extra: serde_json::Value) -> Pod {
        let mut value = json!({
            "metadata": {"name": name, "namespace": "ml", "labels": labels,
                         "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"nodeName": node, "containers": []},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        });
        merge(&mut value, extra);
        serde_json::from_value(value).unwrap()
    }

    fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
        match (into, from) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (slot, value) => *slot = value,
        }
    }

    fn now() -> jiff::Timestamp {
        "2025-01-01T00:10:00Z".parse().unwrap()
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn the_plan_finds_caches_models_syncers_and_stuck_pods_on_the_node() {
        let caches = [
            cache("ram", "Memory", "gpu-0"),
            cache("disk", "NodeLocal", "gpu-0"),
            cache("elsewhere", "Memory", "gpu-9"),
            cache("shared", "SharedPVC", "gpu-0"),
        ];
        let models = [
            model("qwen", 1, json!({})),
            model("pinned", 0, json!({"nodeSelector": {HOSTNAME_LABEL: "gpu-0"}})),
            model("away", 1, json!({})),
        ];
        let serving = json!({DEPLOYMENT_LABEL: "qwen"});
        let pods = [
            pod("qwen-a", "gpu-0", serving.clone(), json!({})),
            pod("qwen-b", "gpu-0", serving.clone(), json!({})),
            pod("qwen-benchmark-x", "gpu-0", serving, json!({"status": {"phase": "Succeeded"}})),
            pod("away-a", "gpu-1", json!({DEPLOYMENT_LABEL: "away"}), json!({})),
            pod(
                "ram-ram-syncer-x",
                "gpu-0",
                json!({"app.kubernetes.io/name": "modelcache-ram-syncer"}),
                json!({}),
            ),
            pod(
                "gone",
                "gpu-0",
                json!({}),
                json!({"metadata": {"deletionTimestamp": "2025-01-01T00:01:00Z"}}),
            ),
            pod(
                "leaving",
                "gpu-0",
                json!({}),
                json!({"metadata": {"deletionTimestamp": "2025-01-01T00:09:50Z"}}),
            ),
            pod(
                "waiting",
                "gpu-0",
                json!({}),
                json!({"status": {"phase": "Pending", "conditions": []}}),
            ),
            pod(
                "unready",
                "gpu-0",
                json!({}),
                json!({"status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2025-01-01T00:07:00Z"}]}}),
            ),
            pod("done", "gpu-0", json!({}), json!({"status": {"phase": "Succeeded"}})),
        ];
        let plan = plan("gpu-0", &labels(), &caches, &models, &pods, MINUTE, now());
        let names = |c: &[CacheOnNode]| c.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&plan.caches), ["ram", "disk"]);
        assert_eq!(
            plan.models.iter().map(|m| (m.name.as_str(), m.why.as_str())).collect::<Vec<_>>(),
            [("qwen", "2 pods on the node"), ("pinned", "pinned to the node by its nodeSelector")]
        );
        assert_eq!(plan.syncers, ["ml/ram-ram-syncer-x"]);
        assert_eq!(
            plan.stuck.iter().map(|p| (p.name.as_str(), p.why.as_str())).collect::<Vec<_>>(),
            [
                ("gone", "Terminating for 9m"),
                ("waiting", "Pending for 10m"),
                ("unready", "not Ready for 3m")
            ]
        );

        let actions = actions(&plan);
        let text: Vec<String> = actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "delete modelcache ml/ram",
                "scale modeldeployment ml/qwen to 0 (from 1)",
                "force-delete pod ml/gone (grace period 0)",
                "force-delete pod ml/waiting (grace period 0)",
                "force-delete pod ml/unready (grace period 0)",
            ]
        );
        let rendered = render(&plan);
        assert!(
            rendered.contains("Memory caches targeting the node (deleted by drain):\n  ml/ram\n"),
            "{rendered}"
        );
        assert!(
            rendered.contains("NodeLocal caches targeting the node (kept):\n  ml/disk\n"),
            "{rendered}"
        );
        assert!(rendered.contains("  ml/qwen: replicas 1, 2 pods on the node\n"), "{rendered}");
        assert!(!rendered.contains("is clear"), "{rendered}");
    }

    #[test]
    fn a_clear_node_says_so() {
        let plan = plan("gpu-0", &labels(), &[], &[], &[], MINUTE, now());
        assert!(actions(&plan).is_empty());
        let text = render(&plan);
        assert!(text.ends_with("Node gpu-0 is clear: drain has nothing to do.\n"), "{text}");
        assert!(text.contains("Stuck pods on the node (force-deleted by drain):\n  none\n"));
    }

    #[test]
    fn crash_looping_is_stuck_at_once() {
        let crash = json!({"status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "",
            "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let p = pod("looping", "gpu-0", json!({}), crash);
        assert_eq!(
            stuck(&p, Duration::from_secs(3600), now()).as_deref(),
            Some("crash-looping (CrashLoopBackOff)")
        );
        assert_eq!(stuck(&pod("fine", "gpu-0", json!({}), json!({})), Duration::ZERO, now()), None);
    }
}
