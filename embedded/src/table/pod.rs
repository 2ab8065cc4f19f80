//! kubectl's pod READY / STATUS / RESTARTS computation (`printPod`).

use jiff::Timestamp;
use serde_json::Value;

use super::computed::{get, has_true_condition, int, list, or, since, text, timestamp};

pub(super) struct PodSummary {
    pub(super) ready: usize,
    pub(super) total: usize,
    pub(super) reason: String,
    pub(super) restarts: String,
}

/// kubectl's `printPod` READY / STATUS / RESTARTS logic.
pub(super) fn pod_summary(pod: &Value, now: Timestamp) -> PodSummary {
    let init_specs = list(pod, "spec.initContainers");
    let restartable = |name: &str| {
        init_specs.iter().any(|c| text(c, "name") == name && text(c, "restartPolicy") == "Always")
    };
    let mut total = list(pod, "spec.containers").len();
    total += init_specs.iter().filter(|c| text(c, "restartPolicy") == "Always").count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;
    let phase = text(pod, "status.phase");
    let mut reason = or(text(pod, "status.reason"), phase);
    if list(pod, "status.conditions")
        .iter()
        .any(|c| text(c, "type") == "PodScheduled" && text(c, "reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let finished = |c: &Value| timestamp(c, "lastState.terminated.finishedAt");
    let exit_reason = |t: &Value, prefix: &str| {
        let r = text(t, "reason");
        if !r.is_empty() {
            format!("{prefix}{r}")
        } else if int(t, "signal") != 0 {
            format!("{prefix}Signal:{}", int(t, "signal"))
        } else {
            format!("{prefix}ExitCode:{}", int(t, "exitCode"))
        }
    };

    let mut initializing = false;
    for (i, c) in list(pod, "status.initContainerStatuses").iter().enumerate() {
        restarts += int(c, "restartCount");
        last_restart = last_restart.max(finished(c));
        let is_sidecar = restartable(text(c, "name"));
        if is_sidecar {
            sidecar_restarts += int(c, "restartCount");
            last_sidecar_restart = last_sidecar_restart.max(finished(c));
        }
        let terminated = get(c, "state.terminated").filter(|t| t.is_object());
        let waiting_reason = text(c, "state.waiting.reason");
        if terminated.is_some_and(|t| int(t, "exitCode") == 0) {
            continue;
        }
        if is_sidecar && get(c, "started").and_then(Value::as_bool) == Some(true) {
            if get(c, "ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(t) => exit_reason(t, "Init:"),
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                format!("Init:{waiting_reason}")
            }
            None => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }

    if !initializing || has_true_condition(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in list(pod, "status.containerStatuses").iter().rev() {
            restarts += int(c, "restartCount");
            last_restart = last_restart.max(finished(c));
            let waiting_reason = text(c, "state.waiting.reason");
            let terminated = get(c, "state.terminated").filter(|t| t.is_object());
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_owned();
            } else if let Some(t) = terminated {
                reason = exit_reason(t, "");
            } else if get(c, "ready").and_then(Value::as_bool) == Some(true)
                && get(c, "state.running").is_some_and(Value::is_object)
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if has_true_condition(pod, "Ready") { "Running" } else { "NotReady" }.into();
        }
    }

    if get(pod, "metadata.deletionTimestamp").is_some_and(|v| !v.is_null()) {
        if text(pod, "status.reason") == "NodeLost" {
            reason = "Unknown".into();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".into();
        }
    }

    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(t), now)),
        _ => restarts.to_string(),
    };
    PodSummary { ready, total, reason, restarts }
}
