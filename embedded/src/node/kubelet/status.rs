//! Pod status as a kubelet reports it, built from what the node knows about each container
//! (pure: no I/O).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Conditions the node owns; any other condition type (readiness gates, `PodScheduled`) is
/// kept as others wrote it.
const OWNED: [&str; 4] = ["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"];

/// What the node knows of a pod: its containers' statuses and, once decided, its phase.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Init containers, in order.
    pub init: Vec<ContainerStatus>,
    /// App containers, in spec order.
    pub containers: Vec<ContainerStatus>,
    /// Ephemeral containers, in spec order; none known keeps what the pod reports.
    pub ephemeral: Vec<ContainerStatus>,
    /// `Running`, `Succeeded`, `Failed`; `Pending` until a container started.
    pub phase: Option<&'static str>,
    /// Why the pod ended, e.g. `DeadlineExceeded`.
    pub reason: Option<String>,
    /// A human-readable reason.
    pub message: Option<String>,
    /// When the node accepted the pod.
    pub start_time: Option<Timestamp>,
    /// The pod's IP.
    pub pod_ip: Option<String>,
}

/// A container that has not started.
pub fn waiting(
    name: &str,
    reason: &str,
    message: Option<String>,
    previous: &ContainerStatus,
) -> ContainerStatus {
    ContainerStatus {
        name: name.to_owned(),
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting { reason: Some(reason.to_owned()), message }),
            ..ContainerState::default()
        }),
        ready: false,
        started: Some(false),
        ..carried(previous)
    }
}

/// A running container.
pub fn running(
    name: &str,
    id: String,
    started_at: Timestamp,
    previous: &ContainerStatus,
) -> ContainerStatus {
    ContainerStatus {
        name: name.to_owned(),
        container_id: Some(id),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning { started_at: Some(Time(started_at)) }),
            ..ContainerState::default()
        }),
        ready: true,
        started: Some(true),
        ..carried(previous)
    }
}

/// How a container ended.
#[derive(Clone, Debug)]
pub struct Ended {
    /// Exit code (128 + signal when killed).
    pub exit_code: i32,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// `Completed`, `Error`, `ContainerCannotRun`…
    pub reason: String,
    /// Details.
    pub message: Option<String>,
    /// When it started, if it did.
    pub started_at: Option<Timestamp>,
    /// When it ended.
    pub finished_at: Timestamp,
}

/// A container that has ended.
pub fn terminated(
    name: &str,
    id: Option<String>,
    ended: &Ended,
    previous: &ContainerStatus,
) -> ContainerStatus {
    ContainerStatus {
        name: name.to_owned(),
        container_id: id.or_else(|| previous.container_id.clone()),
        state: Some(ContainerState {
            terminated: Some(terminated_state(ended, previous.container_id.clone())),
            ..ContainerState::default()
        }),
        ready: false,
        started: Some(false),
        ..carried(previous)
    }
}

fn terminated_state(ended: &Ended, id: Option<String>) -> ContainerStateTerminated {
    ContainerStateTerminated {
        container_id: id,
        exit_code: ended.exit_code,
        signal: ended.signal,
        reason: Some(ended.reason.clone()),
        message: ended.message.clone(),
        started_at: ended.started_at.map(Time),
        finished_at: Some(Time(ended.finished_at)),
    }
}

/// The status of a container about to run again: its last run moves to `lastState` and the
/// restart count goes up.
pub fn restarted(status: &ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        last_state: status.state.clone(),
        restart_count: status.restart_count + 1,
        ..status.clone()
    }
}

/// What a new status keeps from the previous one: image, restart count, last state.
fn carried(previous: &ContainerStatus) -> ContainerStatus {
    ContainerStatus {
        image: previous.image.clone(),
        image_id: previous.image_id.clone(),
        restart_count: previous.restart_count,
        last_state: previous.last_state.clone(),
        container_id: previous.container_id.clone(),
        ..ContainerStatus::default()
    }
}

/// Whether a container status shows it ended, and how.
pub fn exit_code(status: &ContainerStatus) -> Option<i32> {
    status.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code)
}

/// The full pod status the node reports: `observed` rendered over the current status, keeping
/// conditions the node does not own and moving transition times only on change.
pub fn render(pod: &Pod, observed: &Observed, now: Timestamp) -> PodStatus {
    let current = pod.status.clone().unwrap_or_default();
    let initialized = observed.init.iter().all(|s| exit_code(s) == Some(0));
    let containers_ready = !observed.containers.is_empty()
        && observed.containers.iter().all(|s| s.ready)
        && observed.phase == Some("Running");
    let gates_ready =
        pod.spec.as_ref().and_then(|s| s.readiness_gates.as_ref()).into_iter().flatten().all(
            |gate| {
                current
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == gate.condition_type && c.status == "True")
            },
        );
    let started = observed.start_time.is_some();
    let flags = [
        ("PodReadyToStartContainers", started, None),
        ("Initialized", initialized, (!initialized).then_some("ContainersNotInitialized")),
        ("ContainersReady", containers_ready, (!containers_ready).then_some("ContainersNotReady")),
        (
            "Ready",
            containers_ready && gates_ready,
            match (containers_ready, gates_ready) {
                (false, _) => Some("ContainersNotReady"),
                (true, false) => Some("ReadinessGatesNotReady"),
                (true, true) => None,
            },
        ),
    ];
    let mut conditions: Vec<PodCondition> = current
        .conditions
        .iter()
        .flatten()
        .filter(|c| !OWNED.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    for (type_, ok, reason) in flags {
        let status = if ok { "True" } else { "False" };
        let previous = current.conditions.iter().flatten().find(|c| c.type_ == type_);
        let since = match previous {
            Some(p) if p.status == status => p.last_transition_time.clone(),
            _ => Some(Time(now)),
        };
        conditions.push(PodCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.map(str::to_owned),
            last_transition_time: since,
            ..PodCondition::default()
        });
    }
    let ip = observed.pod_ip.clone();
    PodStatus {
        phase: Some(observed.phase.unwrap_or("Pending").to_owned()),
        conditions: Some(conditions),
        init_container_statuses: (!observed.init.is_empty()).then(|| observed.init.clone()),
        container_statuses: Some(observed.containers.clone()),
        ephemeral_container_statuses: if observed.ephemeral.is_empty() {
            current.ephemeral_container_statuses.clone()
        } else {
            Some(observed.ephemeral.clone())
        },
        host_ip: Some("127.0.0.1".to_owned()),
        host_ips: Some(vec![k8s_openapi::api::core::v1::HostIP { ip: "127.0.0.1".to_owned() }]),
        pod_ip: ip.clone(),
        pod_ips: ip.map(|ip| vec![PodIP { ip }]),
        start_time: observed.start_time.map(Time),
        reason: observed.reason.clone(),
        message: observed.message.clone(),
        qos_class: current.qos_class.clone().or_else(|| Some("BestEffort".to_owned())),
        ..current
    }
}

/// The phase of a pod whose containers are all in a final state under `restart_policy`, or
/// `None` while something still runs or will run again.
pub fn final_phase(restart_policy: &str, containers: &[ContainerStatus]) -> Option<&'static str> {
    let codes: Vec<Option<i32>> = containers.iter().map(exit_code).collect();
    if codes.iter().any(Option::is_none) {
        return None;
    }
    let all_zero = codes.iter().all(|c| *c == Some(0));
    match restart_policy {
        "Never" if all_zero => Some("Succeeded"),
        "Never" => Some("Failed"),
        "OnFailure" if all_zero => Some("Succeeded"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodReadinessGate, PodSpec};

    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn ended(code: i32) -> Ended {
        Ended {
            exit_code: code,
            signal: None,
            reason: if code == 0 { "Completed" } else { "Error" }.into(),
            message: None,
            started_at: None,
            finished_at: t("2026-01-01T00:00:10Z"),
        }
    }

    #[test]
    fn a_pod_is_ready_only_when_its_containers_and_readiness_gates_are() {
        let mut pod = Pod {
            spec: Some(PodSpec {
                readiness_gates: Some(vec![PodReadinessGate { condition_type: "lb/ready".into() }]),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let now = t("2026-01-01T00:00:00Z");
        let observed = Observed {
            containers: vec![running(
                "c",
                "simulated://x".into(),
                now,
                &ContainerStatus::default(),
            )],
            phase: Some("Running"),
            start_time: Some(now),
            ..Observed::default()
        };
        let ready = |pod: &Pod| {
            let status = render(pod, &observed, now);
            let find = |ty: &str| {
                status.conditions.iter().flatten().find(|c| c.type_ == ty).map(|c| c.status.clone())
            };
            (find("ContainersReady"), find("Ready"))
        };
        assert_eq!(ready(&pod), (Some("True".into()), Some("False".into())));
        pod.status = Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "lb/ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        assert_eq!(ready(&pod), (Some("True".into()), Some("True".into())));
        let kept = render(&pod, &observed, now).conditions.unwrap();
        assert!(kept.iter().any(|c| c.type_ == "lb/ready"), "a gate's condition is kept");
    }

    #[test]
    fn transition_times_move_only_when_a_condition_changes() {
        let start = t("2026-01-01T00:00:00Z");
        let observed = Observed { phase: Some("Pending"), ..Observed::default() };
        let mut pod = Pod::default();
        pod.status = Some(render(&pod, &observed, start));
        let later = render(&pod, &observed, t("2026-01-01T00:01:00Z"));
        let ready = later.conditions.unwrap().into_iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.last_transition_time, Some(Time(start)));
    }

    #[test]
    fn final_phase_follows_the_restart_policy() {
        let done = |code| terminated("c", None, &ended(code), &ContainerStatus::default());
        assert_eq!(final_phase("Never", &[done(0), done(0)]), Some("Succeeded"));
        assert_eq!(final_phase("Never", &[done(0), done(1)]), Some("Failed"));
        assert_eq!(final_phase("OnFailure", &[done(1)]), None, "it restarts");
        assert_eq!(final_phase("OnFailure", &[done(0)]), Some("Succeeded"));
        assert_eq!(final_phase("Always", &[done(0)]), None);
        let run = running(
            "c",
            "process://1".into(),
            t("2026-01-01T00:00:00Z"),
            &ContainerStatus::default(),
        );
        assert_eq!(final_phase("Never", &[done(0), run]), None);
    }

    #[test]
    fn a_restart_keeps_the_last_state_and_counts() {
        let done =
            terminated("c", Some("process://7".into()), &ended(1), &ContainerStatus::default());
        let again = restarted(&done);
        assert_eq!(again.restart_count, 1);
        assert_eq!(again.last_state.unwrap().terminated.unwrap().exit_code, 1);
    }
}
