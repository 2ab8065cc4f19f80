//! The pod `log` subresource: a container's output from the local node's log files, as
//! `kubectl logs` reads it (`container`, `follow`, `previous`, `tailLines`, `timestamps`,
//! `sinceSeconds`, `sinceTime`, `limitBytes`).

use std::collections::HashMap;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::node::runtime::logs::{self, LogOptions};
use crate::storage::Store;

use super::errors::{ApiError, ApiResult};
use super::{ApiState, ResourceRequest};

/// The scheme of a container id the local node gives a simulated container: there is no process
/// and so no output.
pub const SIMULATED_SCHEME: &str = "simulated://";
/// The scheme of a container id of a container the local node runs as a process:
/// `process://<pid>`.
pub const PROCESS_SCHEME: &str = "process://";

/// `GET /api/v1/namespaces/{ns}/pods/{name}/log`.
pub(crate) async fn pod_log(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let name = request.target.object_name("get")?.to_owned();
    let key = request.target.key(&name);
    let entry = state.store.get(&key).ok_or_else(|| ApiError::not_found("", "pods", &name))?;
    let pod: Pod = serde_json::from_value(serde_json::Value::clone(&entry.object))
        .map_err(|e| ApiError::internal(format!("stored pod {name:?} is unreadable: {e}")))?;
    let params = &request.query.raw;
    let container = container_name(&pod, &name, params.get("container").map(String::as_str))?;
    container_log(state, key, &pod, container, params)
}

/// The log of `container` of `pod` (stored at `key`) with the options of `params`, as the
/// kubelet of the pod's node serves it.
pub(super) fn container_log(
    state: &ApiState,
    key: String,
    pod: &Pod,
    container: String,
    params: &HashMap<String, String>,
) -> ApiResult<Response> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let previous = flag(params, "previous")?;
    // No node has it yet, so no kubelet to ask: upstream answers with an empty log.
    if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty) {
        return Ok(([(header::CONTENT_TYPE, "text/plain")], Body::empty()).into_response());
    }
    let status = container_status(pod, &container);
    if status
        .and_then(|s| s.container_id.as_deref())
        .is_some_and(|id| id.starts_with(SIMULATED_SCHEME))
    {
        return Err(ApiError::bad_request(format!(
            "pod \"{name}\" is simulated by keelson's local node: its containers do not run, so there are no logs (only Job pods and pods annotated keelson.dev/run-as-process=\"true\" run as processes, as kubectl run --annotations=keelson.dev/run-as-process=true makes one)"
        )));
    }
    let restarts = status.map_or(0, |s| s.restart_count.max(0) as u32);
    let last_run_ended =
        status.and_then(|s| s.last_state.as_ref()).is_some_and(|s| s.terminated.is_some());
    let waiting = status.and_then(|s| s.state.as_ref()).is_some_and(|s| s.waiting.is_some());
    // A container waiting to start again (`CrashLoopBackOff`) shows its last run, as a kubelet
    // shows it, with or without `previous`: its restart count is still that run's.
    let (attempt, ended) = if waiting && last_run_ended {
        (restarts, true)
    } else if previous {
        if !last_run_ended {
            return Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )));
        }
        (restarts.saturating_sub(1), true)
    } else {
        (restarts, false)
    };
    let path = log_file(&state.data_dir, pod, &container, attempt);
    if !path.exists() {
        let waiting = status
            .and_then(|s| s.state.as_ref())
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
            .unwrap_or_else(|| "ContainerCreating".to_owned());
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {waiting}"
        )));
    }
    let options = log_options(params)?;
    let text = |body: Body| ([(header::CONTENT_TYPE, "text/plain")], body).into_response();
    if !flag(params, "follow")? || ended {
        let bytes = logs::read(&path, &options).map_err(|e| {
            ApiError::internal(format!("reading the log of {name}/{container}: {e}"))
        })?;
        return Ok((StatusCode::OK, text(Body::from(bytes))).into_response());
    }
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let store = state.store.clone();
    let finished = move || attempt_finished(&store, &key, &uid, &container, attempt);
    let stream = logs::follow(path, options, finished);
    Ok(text(Body::from_stream(stream)))
}

/// The log file of one attempt of a pod's container on the local node.
pub(super) fn log_file(
    data_dir: &std::path::Path,
    pod: &Pod,
    container: &str,
    attempt: u32,
) -> std::path::PathBuf {
    let meta = &pod.metadata;
    let pod_dir = logs::pod_dir(
        data_dir,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
    );
    logs::log_path(&pod_dir, container, attempt)
}

/// The container (app, init or ephemeral) the request means: the named one, else the pod's
/// only or default one.
pub(super) fn container_name(pod: &Pod, name: &str, requested: Option<&str>) -> ApiResult<String> {
    let spec = pod.spec.as_ref();
    if let Some(requested) = requested {
        return if declared_containers(pod).contains(&requested) {
            Ok(requested.to_owned())
        } else {
            Err(ApiError::bad_request(format!("container {requested} is not valid for pod {name}")))
        };
    }
    let default = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/default-container"))
        .map(String::as_str);
    let main: Vec<&str> =
        spec.map(|s| s.containers.iter().map(|c| c.name.as_str()).collect()).unwrap_or_default();
    match (default, main.as_slice()) {
        (Some(default), _) if main.contains(&default) => Ok(default.to_owned()),
        (_, [only]) => Ok((*only).to_owned()),
        _ => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            main.join(" ")
        ))),
    }
}

/// The names of a pod's containers: app, init and ephemeral.
pub(super) fn declared_containers(pod: &Pod) -> Vec<&str> {
    let Some(spec) = pod.spec.as_ref() else { return Vec::new() };
    let init = spec.init_containers.iter().flatten().map(|c| c.name.as_str());
    let ephemeral = spec.ephemeral_containers.iter().flatten().map(|c| c.name.as_str());
    spec.containers.iter().map(|c| c.name.as_str()).chain(init).chain(ephemeral).collect()
}

pub(super) fn container_status<'a>(pod: &'a Pod, container: &str) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .chain(status.ephemeral_container_statuses.iter().flatten())
        .find(|s| s.name == container)
}

/// Whether the container attempt being followed has ended (or its pod is gone or replaced).
fn attempt_finished(store: &Store, key: &str, uid: &str, container: &str, attempt: u32) -> bool {
    let Some(entry) = store.get(key) else { return true };
    let Ok(pod) = serde_json::from_value::<Pod>(serde_json::Value::clone(&entry.object)) else {
        return true;
    };
    if pod.metadata.uid.as_deref() != Some(uid) {
        return true;
    }
    container_status(&pod, container).is_some_and(|s| {
        let waiting_to_restart = s.state.as_ref().is_some_and(|state| state.waiting.is_some())
            && s.last_state.as_ref().is_some_and(|last| last.terminated.is_some());
        s.restart_count.max(0) as u32 > attempt
            || waiting_to_restart
            || s.state.as_ref().is_some_and(|state| state.terminated.is_some())
    })
}

pub(super) fn flag(params: &HashMap<String, String>, name: &str) -> ApiResult<bool> {
    match params.get(name).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true" | "") => Ok(true),
        Some(other) => {
            Err(ApiError::bad_request(format!("{name} must be true or false, not {other:?}")))
        }
    }
}

fn number(params: &HashMap<String, String>, name: &str) -> ApiResult<Option<u64>> {
    params
        .get(name)
        .map(|raw| {
            raw.parse().map_err(|_| {
                ApiError::bad_request(format!("{name} must be a non-negative integer, not {raw:?}"))
            })
        })
        .transpose()
}

fn log_options(params: &HashMap<String, String>) -> ApiResult<LogOptions> {
    let since_time = params
        .get("sinceTime")
        .map(|raw| {
            raw.parse::<jiff::Timestamp>().map_err(|e| {
                ApiError::bad_request(format!(
                    "sinceTime must be an RFC 3339 time, not {raw:?}: {e}"
                ))
            })
        })
        .transpose()?;
    let since_seconds = number(params, "sinceSeconds")?.map(|s| {
        jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s.min(i64::MAX as u64) as i64)
    });
    Ok(LogOptions {
        tail_lines: number(params, "tailLines")?,
        timestamps: flag(params, "timestamps")?,
        since: since_time.or(since_seconds),
        limit_bytes: number(params, "limitBytes")?,
    })
}
