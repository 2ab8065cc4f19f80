//! End to end: `keelson up` started as a process, driven by the real `kubectl`.

mod adoption;
mod api;
mod api_events;
mod autotune;
mod bench;
mod builtin_kinds;
mod certificates;
mod cli;
mod clinical;
mod crash;
mod explain;
mod kubectl;
mod kubelet_status;
mod node;
mod serving;
mod support;
mod weaver;
mod workflows;
