//! The controllers of kube-controller-manager that act on pods by the nodes they are bound to,
//! [`taint_eviction`](super::taint_eviction) and [`pod_gc`](super::pod_gc), run together on one
//! cache of the cluster's pods and nodes: after each burst of changes, and again when either
//! asks to be woken.

use std::collections::HashMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt, stream};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::Client;

use super::events::EventLog;
use super::pods::cache_all;
use super::{pod_gc, taint_eviction};

/// Runs both until the task is aborted; the pods of a missing node are collected after
/// `quarantine`.
pub async fn run(client: Client, events: EventLog, quarantine: Duration) {
    let (pods, pod_events) = cache_all::<Pod>(&client);
    let (nodes, node_events) = cache_all::<Node>(&client);
    let mut changes = stream::select(pod_events, node_events);
    let mut taints_since = HashMap::new();
    let mut orphaned = HashMap::new();
    let mut next: Option<Timestamp> = None;
    loop {
        let wait = next.map(|at| at.duration_since(Timestamp::now()).unsigned_abs());
        tokio::select! {
            change = changes.next() => if change.is_none() { return },
            _ = tokio::time::sleep(wait.unwrap_or_default()), if wait.is_some() => {}
        }
        // Let a burst of changes land, then decide once.
        tokio::time::sleep(Duration::from_millis(10)).await;
        while let Some(Some(())) = changes.next().now_or_never() {}
        let evict = taint_eviction::pass(&client, &events, &pods, &nodes, &mut taints_since).await;
        let collect = pod_gc::pass(&client, &pods, &nodes, &mut orphaned, quarantine).await;
        next = evict.into_iter().chain(collect).min();
    }
}
