//! End to end: `keelson up` started as a process, driven by the real `kubectl`.

mod crash;
mod kubectl;
mod node;
mod serving;
mod support;
mod workflows;
