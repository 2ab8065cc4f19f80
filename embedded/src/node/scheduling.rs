//! The scheduler's loop: watches pods and nodes, places each pending pod with the pure
//! [`scheduler::place`](super::scheduler::place), binds it, or marks it unschedulable with a
//! `FailedScheduling` event.

use std::collections::HashMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt, stream};
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use super::pods::{is_deleting, is_terminal};
use super::scheduler;

/// The scheduler name pods get by default; pods naming another scheduler are left alone.
const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// Runs the scheduler until the task is aborted.
pub async fn run(client: Client, recorder: Recorder) {
    let (pods, pod_writer) = reflector::store::<Pod>();
    let (nodes, node_writer) = reflector::store::<Node>();
    let pod_events = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(pod_writer)
        .map(|_| ());
    let node_events = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(node_writer)
        .map(|_| ());
    let mut events = stream::select(pod_events, node_events).boxed();
    let mut scheduler = Scheduler { client, recorder, assumed: HashMap::new() };
    while events.next().await.is_some() {
        // Let a burst of changes land, then place everything pending in one pass.
        tokio::time::sleep(Duration::from_millis(10)).await;
        while let Some(Some(())) = events.next().now_or_never() {}
        scheduler.pass(&pods, &nodes).await;
    }
}

struct Scheduler {
    client: Client,
    recorder: Recorder,
    /// Pods bound by this scheduler that the pod watch has not shown bound yet (uid → node), so
    /// that their resources count at once.
    assumed: HashMap<String, String>,
}

impl Scheduler {
    async fn pass(&mut self, pods: &Store<Pod>, nodes: &Store<Node>) {
        let nodes: Vec<Node> = nodes.state().iter().map(|n| Node::clone(n)).collect();
        let mut view: Vec<Pod> = pods.state().iter().map(|p| Pod::clone(p)).collect();
        self.assumed.retain(|uid, _| {
            view.iter().any(|p| p.uid().as_deref() == Some(uid) && node_name(p).is_none())
        });
        for pod in &mut view {
            if let Some(node) = pod.uid().and_then(|uid| self.assumed.get(&uid)) {
                pod.spec.get_or_insert_default().node_name = Some(node.clone());
            }
        }
        let mut pending: Vec<Pod> = view
            .iter()
            .filter(|p| node_name(p).is_none() && !is_terminal(p) && !is_deleting(p))
            .filter(|p| {
                let name = p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref());
                name.is_none_or(|n| n == DEFAULT_SCHEDULER)
            })
            .cloned()
            .collect();
        pending.sort_by(|a, b| {
            (&a.metadata.creation_timestamp, a.name_any())
                .cmp(&(&b.metadata.creation_timestamp, b.name_any()))
        });
        for pod in pending {
            match scheduler::place(&pod, &nodes, &view) {
                Ok(node) => {
                    if self.bind(&pod, &node).await {
                        self.assumed.insert(pod.uid().unwrap_or_default(), node.clone());
                        let mut bound = pod.clone();
                        bound.spec.get_or_insert_default().node_name = Some(node);
                        view.push(bound);
                    }
                }
                Err(unschedulable) => self.unschedulable(&pod, &unschedulable.message).await,
            }
        }
    }

    /// Binds the pod to `node` (only the version placed, so a changed pod is placed again) and
    /// marks it scheduled.
    async fn bind(&self, pod: &Pod, node: &str) -> bool {
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
        let name = pod.name_any();
        let patch = json!({
            "metadata": { "resourceVersion": pod.resource_version() },
            "spec": { "nodeName": node },
        });
        if let Err(error) = api.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await {
            tracing::debug!(pod = %name, %error, "binding a pod failed; it is placed again");
            return false;
        }
        self.set_scheduled(&api, &name, "True", None, None).await;
        let note = format!(
            "Successfully assigned {}/{name} to {node}",
            pod.namespace().unwrap_or_default()
        );
        self.record(pod, EventType::Normal, "Scheduled", note).await;
        true
    }

    /// Marks the pod `PodScheduled=False` (`Unschedulable`) and says why in an event, once per
    /// distinct reason.
    async fn unschedulable(&self, pod: &Pod, message: &str) {
        let current = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        if current.is_some_and(|c| c.status == "False" && c.message.as_deref() == Some(message)) {
            return;
        }
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
        self.set_scheduled(&api, &pod.name_any(), "False", Some("Unschedulable"), Some(message))
            .await;
        self.record(pod, EventType::Warning, "FailedScheduling", message.to_owned()).await;
    }

    /// Sets the `PodScheduled` condition, keeping the pod's other conditions.
    async fn set_scheduled(
        &self,
        api: &Api<Pod>,
        name: &str,
        status: &str,
        reason: Option<&str>,
        message: Option<&str>,
    ) {
        for _ in 0..5 {
            let Ok(Some(pod)) = api.get_opt(name).await else { return };
            let mut conditions: Vec<PodCondition> =
                pod.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
            conditions.retain(|c| c.type_ != "PodScheduled");
            conditions.push(PodCondition {
                type_: "PodScheduled".into(),
                status: status.into(),
                reason: reason.map(str::to_owned),
                message: message.map(str::to_owned),
                last_transition_time: Some(Time(jiff::Timestamp::now())),
                ..PodCondition::default()
            });
            let mut patch = json!({
                "metadata": { "resourceVersion": pod.resource_version() },
                "status": { "conditions": conditions },
            });
            if pod.status.as_ref().and_then(|s| s.phase.as_ref()).is_none() {
                patch["status"]["phase"] = json!("Pending");
            }
            match api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await {
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                _ => return,
            }
        }
    }

    async fn record(&self, pod: &Pod, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: if reason == "Scheduled" { "Binding" } else { "Scheduling" }.into(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &pod.object_ref(&())).await {
            tracing::debug!(%error, "recording a scheduling event failed");
        }
    }
}

fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}
