//! The embedded API server driven by a real `kube::Client` and kube-runtime, in process.

mod collection;
mod crud;
mod custom;
mod decoding;
mod immutable;
mod kind_checks;
mod priority;
mod quota;
mod rbac;
mod runtime;
mod support;
mod tokens;
mod watching;
