//! The scheduler's loop: watches pods and nodes, places each pending pod with the pure
//! [`scheduler::Cluster`](super::scheduler::Cluster), binds it, or marks it unschedulable with a
//! `FailedScheduling` event and, where evicting pods of lower priority makes room, preempts them.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::Store;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use super::pod_status;
use super::pods::{cache_all, is_deleting, is_terminal, node_name};
use super::scheduler::{self, NamespaceLabels};

/// The scheduler name pods get by default; pods naming another scheduler are left alone.
const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// Runs the scheduler until the task is aborted.
pub async fn run(client: Client, recorder: Recorder) {
    let (pods, pod_events) = cache_all::<Pod>(&client);
    let (nodes, node_events) = cache_all::<Node>(&client);
    // Namespaces' labels, for pod-affinity terms' namespace selectors.
    let (namespaces, namespace_events) = cache_all::<Namespace>(&client);
    let mut events =
        stream::select(stream::select(pod_events, node_events), namespace_events).boxed();
    let mut scheduler = Scheduler { client, recorder, assumed: HashMap::new() };
    let mut retry: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            event = events.next() => if event.is_none() { return },
            _ = sleep_until(retry) => {}
        }
        // Let a burst of changes land, then place everything pending in one pass.
        tokio::time::sleep(Duration::from_millis(10)).await;
        while let Some(Some(())) = events.next().now_or_never() {}
        let now = tokio::time::Instant::now();
        retry = match scheduler.pass(&pods, &nodes, &namespaces).await {
            Outcome::Done => None,
            Outcome::BindFailed => Some(now + BIND_RETRY),
            Outcome::Unschedulable => Some(now + UNSCHEDULABLE_RETRY),
        };
    }
}

/// How many bindings and refusals a pass writes at once.
const CONCURRENT_WRITES: usize = 16;
/// How soon a pass runs again after a bind failed (the pod changed under it).
const BIND_RETRY: Duration = Duration::from_millis(200);
/// How often unschedulable pods are tried again without a change that could make room.
const UNSCHEDULABLE_RETRY: Duration = Duration::from_secs(5);

/// What a pass left to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Every pending pod was bound.
    Done,
    /// Some pods fit nowhere.
    Unschedulable,
    /// A bind failed; the pod is placed again from fresh state.
    BindFailed,
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
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
    async fn pass(
        &mut self,
        pods: &Store<Pod>,
        nodes: &Store<Node>,
        namespaces: &Store<Namespace>,
    ) -> Outcome {
        let state = pods.state();
        let unbound: HashSet<&str> = state
            .iter()
            .filter(|p| node_name(p).is_none())
            .filter_map(|p| p.metadata.uid.as_deref())
            .collect();
        self.assumed.retain(|uid, _| unbound.contains(uid.as_str()));
        let mut pending: Vec<&Arc<Pod>> = state.iter().filter(|p| self.is_pending(p)).collect();
        if pending.is_empty() {
            return Outcome::Done;
        }
        // As kube-scheduler's queue orders them: higher priority first, then older first.
        pending.sort_by(|a, b| {
            (
                Reverse(scheduler::priority(a)),
                &a.metadata.creation_timestamp,
                a.metadata.name.as_deref(),
            )
                .cmp(&(
                    Reverse(scheduler::priority(b)),
                    &b.metadata.creation_timestamp,
                    b.metadata.name.as_deref(),
                ))
        });
        let nodes: Vec<Node> = nodes.state().iter().map(|n| Node::clone(n)).collect();
        let namespaces: NamespaceLabels =
            namespaces.state().iter().map(|n| (n.name_any(), n.labels().clone())).collect();
        let mut cluster = scheduler::Cluster::new(&nodes, &state, &namespaces);
        // Pods this scheduler bound count on their node even before the watch shows it.
        for pod in state.iter().filter(|p| !is_terminal(p)) {
            if let Some(node) = pod.metadata.uid.as_ref().and_then(|uid| self.assumed.get(uid)) {
                cluster.bind(pod, node);
            }
        }
        // Place every pending pod first (each placement counts on the next), then write the
        // bindings and refusals concurrently.
        let mut binds = Vec::new();
        let mut refusals = Vec::new();
        for pod in pending {
            match cluster.place(pod) {
                Ok(node) => {
                    cluster.bind(pod, &node);
                    binds.push((Arc::clone(pod), node));
                }
                Err(unschedulable) => refusals.push((pod, unschedulable.message)),
            }
        }
        let mut outcome = if refusals.is_empty() { Outcome::Done } else { Outcome::Unschedulable };
        // One preemption per pass, for the most important pod that fits nowhere: the next pass
        // sees its victims going.
        let preemption =
            refusals.iter().find_map(|(pod, _)| cluster.preemption(pod).map(|p| (*pod, p)));
        if let Some((pod, preemption)) = preemption {
            self.preempt(pod, preemption).await;
        }
        let this = &*self;
        let bound: Vec<Option<(String, String)>> = stream::iter(binds)
            .map(|(pod, node)| async move {
                this.bind(&pod, &node).await.then(|| (pod.uid().unwrap_or_default(), node))
            })
            .buffer_unordered(CONCURRENT_WRITES)
            .collect()
            .await;
        stream::iter(refusals)
            .for_each_concurrent(CONCURRENT_WRITES, |(pod, message)| async move {
                this.unschedulable(pod, &message).await;
            })
            .await;
        for result in bound {
            match result {
                Some((uid, node)) => {
                    self.assumed.insert(uid, node);
                }
                None => outcome = Outcome::BindFailed,
            }
        }
        outcome
    }

    /// Whether this scheduler should place the pod: not bound (nor assumed bound), not finished,
    /// not being deleted, not held by scheduling gates, and asking for the default scheduler.
    fn is_pending(&self, pod: &Pod) -> bool {
        let spec = pod.spec.as_ref();
        let scheduler = spec.and_then(|s| s.scheduler_name.as_deref());
        let gated = spec.and_then(|s| s.scheduling_gates.as_ref()).is_some_and(|g| !g.is_empty());
        node_name(pod).is_none()
            && !pod.metadata.uid.as_ref().is_some_and(|uid| self.assumed.contains_key(uid))
            && !is_terminal(pod)
            && !is_deleting(pod)
            && !gated
            && scheduler.is_none_or(|n| n == DEFAULT_SCHEDULER)
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

    /// Nominates `pod` for the preemption's node and evicts its victims there, each marked as
    /// upstream marks them (a `DisruptionTarget` condition, a `Preempted` event).
    async fn preempt(&self, pod: &Pod, preemption: scheduler::Preemption<'_>) {
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
        let node = preemption.node.as_str();
        let nominate = |current: &Pod| {
            let nominated = current.status.as_ref().and_then(|s| s.nominated_node_name.as_deref());
            (nominated != Some(node)).then(|| json!({ "nominatedNodeName": node }))
        };
        if let Err(error) =
            pod_status::update(&api, &pod.name_any(), pod.uid().as_deref(), nominate).await
        {
            tracing::debug!(pod = %pod.name_any(), %error, "nominating a pod failed");
        }
        let preemptor = pod.uid().unwrap_or_default();
        for victim in preemption.victims {
            let api: Api<Pod> =
                Api::namespaced(self.client.clone(), &victim.namespace().unwrap_or_default());
            let name = victim.name_any();
            let mark = |current: &Pod| {
                let message =
                    format!("{DEFAULT_SCHEDULER}: preempting to accommodate a higher priority pod");
                let conditions =
                    pod_status::with_disruption_target(current, "PreemptionByScheduler", message);
                Some(json!({ "conditions": conditions }))
            };
            let uid = victim.uid();
            let marked = pod_status::update(&api, &name, uid.as_deref(), mark).await;
            let params = DeleteParams {
                preconditions: Some(Preconditions { uid: uid.clone(), resource_version: None }),
                ..DeleteParams::default()
            };
            match (marked, api.delete(&name, &params).await) {
                (Ok(true), Ok(_)) => {
                    let note = format!("Preempted by pod {preemptor} on node {node}");
                    self.record(victim, EventType::Normal, "Preempted", note).await;
                }
                (marked, deleted) => {
                    tracing::debug!(pod = %name, ?marked, error = ?deleted.err(), "preempting a pod failed")
                }
            }
        }
    }

    /// Marks the pod `PodScheduled=False` (`Unschedulable`) and says why in an event, once per
    /// distinct reason.
    async fn unschedulable(&self, pod: &Pod, message: &str) {
        if scheduled_condition(pod).is_some_and(|c| same(c, "False", Some(message))) {
            return;
        }
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default());
        let name = pod.name_any();
        if self.set_scheduled(&api, &name, "False", Some("Unschedulable"), Some(message)).await {
            self.record(pod, EventType::Warning, "FailedScheduling", message.to_owned()).await;
        }
    }

    /// Sets the `PodScheduled` condition, keeping the pod's other conditions; whether it
    /// changed anything (the pod this scheduler sees may be older than the stored one).
    async fn set_scheduled(
        &self,
        api: &Api<Pod>,
        name: &str,
        status: &str,
        reason: Option<&str>,
        message: Option<&str>,
    ) -> bool {
        let change = |pod: &Pod| {
            if scheduled_condition(pod).is_some_and(|c| same(c, status, message)) {
                return None;
            }
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
            let mut patch = json!({ "conditions": conditions });
            if pod.status.as_ref().and_then(|s| s.phase.as_ref()).is_none() {
                patch["phase"] = json!("Pending");
            }
            Some(patch)
        };
        pod_status::update(api, name, None, change).await.unwrap_or(false)
    }

    async fn record(&self, pod: &Pod, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: match reason {
                "Scheduled" => "Binding",
                "Preempted" => "Preempting",
                _ => "Scheduling",
            }
            .into(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &pod.object_ref(&())).await {
            tracing::debug!(%error, "recording a scheduling event failed");
        }
    }
}

fn scheduled_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "PodScheduled")
}

fn same(condition: &PodCondition, status: &str, message: Option<&str>) -> bool {
    condition.status == status && condition.message.as_deref() == message
}
