//! The workload controllers of the local node (what kube-controller-manager does on a cluster):
//! ReplicaSets, ReplicationControllers, Deployments, DaemonSets, StatefulSets, Jobs and CronJobs
//! make pods (CronJobs make Jobs), Services get the Endpoints of the pods they select, PVCs are
//! bound at once to volumes provisioned for them, PodDisruptionBudgets get the healthy counts
//! evictions are checked against, HorizontalPodAutoscalers scale their targets on their pods'
//! resource use.
//!
//! Each kind has a pure planner (`plan_*`: objects in, actions and status out) and one reconciler
//! in `controllers` that lists the children, claims them (adopting orphans and releasing what no
//! longer matches, see `claim`), calls the planner and applies its plan through the Kubernetes
//! API.

pub mod autoscaler;
pub mod claim;
mod controllers;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod history;
pub mod job;
pub mod plan;
pub mod pvc;
pub mod replicaset;
pub mod replication;
pub mod statefulset;

pub(super) use controllers::{Context, spawn};
