//! Pod status as a kubelet reports it, built from what the node knows about each container
//! (pure: no I/O).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Conditions the node owns, in the order a kubelet writes them, after the conditions it does not
/// own (readiness gates, `DisruptionTarget`), which are kept as others wrote them.
const OWNED: [&str; 5] =
    ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];

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

/// A container whose run ended, waiting (`reason`) to run again: that run moves to `lastState`,
/// and the restart count stays that run's until the next one starts, as a kubelet counts.
pub fn waiting_to_restart(
    ended: &ContainerStatus,
    reason: &str,
    message: Option<String>,
) -> ContainerStatus {
    let previous = ContainerStatus { last_state: ended.state.clone(), ..ended.clone() };
    waiting(&ended.name, reason, message, &previous)
}

/// The status of a container whose new run begins (it starts, or fails to): if it ran before,
/// the restart count goes up and the last run stays in `lastState`.
pub fn restarted(status: &ContainerStatus) -> ContainerStatus {
    let ended = status.state.as_ref().is_some_and(|s| s.terminated.is_some());
    ContainerStatus {
        last_state: if ended { status.state.clone() } else { status.last_state.clone() },
        restart_count: next_run(status),
        ..status.clone()
    }
}

/// The restart count of a container's next run: one more than its last run's, if it ran.
pub fn next_run(status: &ContainerStatus) -> i32 {
    status.restart_count + i32::from(last_run(status).is_some())
}

/// How the container's last run ended, if it ran: its state, or else its last state.
fn last_run(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    fn ended(state: &Option<ContainerState>) -> Option<&ContainerStateTerminated> {
        state.as_ref()?.terminated.as_ref()
    }
    ended(&status.state).or_else(|| ended(&status.last_state))
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

/// What the node reports for a pod being deleted once its containers stopped, before it lets
/// the pod go, as a kubelet does: each container shows how its last run ended and none is ready;
/// one still running (its end not seen) or, once the pod was initialized, one that never ran
/// shows `ContainerStatusUnknown`; the pod is `Succeeded` if every container completed, else
/// `Failed`, whatever its restart policy.
pub fn stopped_for_deletion(pod: &Pod, observed: &Observed) -> Observed {
    let initialized = initialized(pod, observed);
    let containers: Vec<ContainerStatus> =
        observed.containers.iter().map(|s| stopped(s, initialized)).collect();
    let completed = containers.iter().all(|s| exit_code(s) == Some(0));
    let phase = match observed.phase {
        Some(phase @ ("Succeeded" | "Failed")) => phase,
        _ if completed => "Succeeded",
        _ => "Failed",
    };
    Observed {
        init: observed.init.iter().map(|s| stopped(s, false)).collect(),
        containers,
        phase: Some(phase),
        ..observed.clone()
    }
}

/// A container of a pod whose containers stopped: its last run's end, not ready. One running,
/// or one that never ran if `never_ran_ended`, ended unseen.
fn stopped(status: &ContainerStatus, never_ran_ended: bool) -> ContainerStatus {
    let state = status.state.clone().unwrap_or_default();
    let shown = |state, last_state| ContainerStatus {
        state: Some(state),
        last_state,
        ready: false,
        started: Some(false),
        ..status.clone()
    };
    let unseen = ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 137,
            reason: Some("ContainerStatusUnknown".to_owned()),
            message: Some("The container could not be located when the pod was terminated".into()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    };
    let last_state = status.last_state.clone();
    match (&state.terminated, &state.running, last_run(status)) {
        (Some(_), _, _) => shown(state, last_state),
        (None, Some(_), _) => shown(unseen, last_state),
        // Waiting to run again: its last run is its end.
        (None, None, Some(_)) => shown(last_state.unwrap_or_default(), None),
        (None, None, None) if never_ran_ended => shown(unseen, last_state),
        (None, None, None) => shown(state, last_state),
    }
}

/// The names of `statuses`, space-separated, as Go prints a list of them.
fn names<'a>(statuses: impl Iterator<Item = &'a ContainerStatus>) -> String {
    statuses.map(|s| s.name.as_str()).collect::<Vec<_>>().join(" ")
}

/// Whether the pod's init containers all completed (a pod without any is initialized).
fn initialized(pod: &Pod, observed: &Observed) -> bool {
    let declared = pod.spec.as_ref().and_then(|s| s.init_containers.as_ref()).map_or(0, Vec::len);
    observed.init.len() >= declared && observed.init.iter().all(|s| exit_code(s) == Some(0))
}

/// The full pod status the node reports: `observed` rendered over the current status, keeping
/// conditions the node does not own and moving transition times only on change.
pub fn render(pod: &Pod, observed: &Observed, now: Timestamp) -> PodStatus {
    let current = pod.status.clone().unwrap_or_default();
    let initialized = initialized(pod, observed);
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
    // Why a condition is false, as a kubelet words it (a reason and a message): a completed
    // pod's containers are not ready because it completed; otherwise those at fault are named.
    let completed = observed.phase == Some("Succeeded");
    let unready = || -> (Option<&str>, Option<String>) {
        if completed {
            return (Some("PodCompleted"), None);
        }
        let unready = names(observed.containers.iter().filter(|s| !s.ready));
        (Some("ContainersNotReady"), Some(format!("containers with unready status: [{unready}]")))
    };
    let initialized_why = if completed {
        (Some("PodCompleted"), None)
    } else if initialized {
        (None, None)
    } else {
        let incomplete = names(observed.init.iter().filter(|s| exit_code(s) != Some(0)));
        let message = format!("containers with incomplete status: [{incomplete}]");
        (Some("ContainersNotInitialized"), Some(message))
    };
    let ready_why = match (containers_ready, gates_ready) {
        (false, _) => unready(),
        (true, false) => (Some("ReadinessGatesNotReady"), None),
        (true, true) => (None, None),
    };
    let containers_ready_why = if containers_ready { (None, None) } else { unready() };
    // In `OWNED`'s order; a pod the node runs was scheduled, whoever bound it.
    let flags = [
        ("PodReadyToStartContainers", started, (None, None)),
        ("Initialized", initialized || completed, initialized_why),
        ("Ready", containers_ready && gates_ready, ready_why),
        ("ContainersReady", containers_ready, containers_ready_why),
        ("PodScheduled", true, (None, None)),
    ];
    let mut conditions: Vec<PodCondition> = current
        .conditions
        .iter()
        .flatten()
        .filter(|c| !OWNED.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    for (type_, ok, (reason, message)) in flags {
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
            message,
            last_transition_time: since,
            ..PodCondition::default()
        });
    }
    let ip = observed.pod_ip.clone();
    PodStatus {
        phase: Some(observed.phase.unwrap_or("Pending").to_owned()),
        conditions: Some(conditions),
        init_container_statuses: (!observed.init.is_empty())
            .then(|| with_init_readiness(pod, &observed.init)),
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

/// Init container statuses as a kubelet reports them: an init container is ready once it
/// completed (exit code 0), unless it is restartable (a sidecar), whose readiness is its own.
fn with_init_readiness(pod: &Pod, init: &[ContainerStatus]) -> Vec<ContainerStatus> {
    let restartable = |name: &str| {
        let specs = pod.spec.iter().flat_map(|s| s.init_containers.iter().flatten());
        specs.into_iter().any(|c| c.name == name && c.restart_policy.as_deref() == Some("Always"))
    };
    init.iter()
        .map(|s| ContainerStatus {
            ready: if restartable(&s.name) { s.ready } else { exit_code(s) == Some(0) },
            ..s.clone()
        })
        .collect()
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
    use k8s_openapi::api::core::v1::{Container, PodReadinessGate, PodSpec};

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

    fn named(name: &str) -> ContainerStatus {
        ContainerStatus { name: name.into(), ..ContainerStatus::default() }
    }

    fn run(previous: &ContainerStatus) -> ContainerStatus {
        let started = t("2026-01-01T00:00:00Z");
        running(&previous.name, "process://7".into(), started, &restarted(previous))
    }

    fn crash(previous: &ContainerStatus) -> ContainerStatus {
        terminated(&previous.name, None, &ended(1), previous)
    }

    #[test]
    fn a_crash_looping_container_counts_a_restart_when_it_runs_again_not_while_it_waits() {
        let first = run(&waiting("c", "ContainerCreating", None, &named("c")));
        assert_eq!(first.restart_count, 0, "the first run is no restart");
        let again = waiting_to_restart(&crash(&first), "ContainerCreating", None);
        assert_eq!(again.restart_count, 0);
        let second = run(&again);
        assert_eq!(second.restart_count, 1);
        let backing_off = waiting_to_restart(&crash(&second), "CrashLoopBackOff", None);
        assert_eq!((backing_off.restart_count, next_run(&backing_off)), (1, 2));
        assert_eq!(backing_off.last_state.clone().unwrap().terminated.unwrap().exit_code, 1);
        let third = run(&backing_off);
        assert_eq!(third.restart_count, 2);
        assert_eq!(third.last_state.unwrap().terminated.unwrap().exit_code, 1);
    }

    #[test]
    fn a_run_that_fails_to_start_counts_as_a_restart() {
        let first = waiting_to_restart(&crash(&run(&named("c"))), "ContainerCreating", None);
        let unstartable = terminated("c", None, &ended(128), &restarted(&first));
        assert_eq!(unstartable.restart_count, 1);
        assert_eq!(unstartable.last_state.unwrap().terminated.unwrap().exit_code, 1);
    }

    #[test]
    fn a_completed_init_container_is_ready_unless_it_is_a_sidecar() {
        let init = |name: &str, restart_policy: Option<&str>| Container {
            name: name.into(),
            restart_policy: restart_policy.map(str::to_owned),
            ..Container::default()
        };
        let pod = Pod {
            spec: Some(PodSpec {
                init_containers: Some(vec![
                    init("setup", None),
                    init("sidecar", Some("Always")),
                    init("later", None),
                ]),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let now = t("2026-01-01T00:00:00Z");
        let observed = Observed {
            init: vec![
                terminated("setup", None, &ended(0), &named("setup")),
                terminated("sidecar", None, &ended(0), &named("sidecar")),
                running("later", "process://8".into(), now, &named("later")),
            ],
            ..Observed::default()
        };
        let ready: Vec<bool> = render(&pod, &observed, now)
            .init_container_statuses
            .unwrap()
            .iter()
            .map(|s| s.ready)
            .collect();
        assert_eq!(ready, [true, false, false]);
    }

    #[test]
    fn conditions_come_in_the_kubelets_order_after_the_others() {
        let scheduled_at = t("2026-01-01T00:00:00Z");
        let condition = |type_: &str| PodCondition {
            type_: type_.into(),
            status: "True".into(),
            last_transition_time: Some(Time(scheduled_at)),
            ..PodCondition::default()
        };
        let pod = Pod {
            status: Some(PodStatus {
                conditions: Some(vec![condition("PodScheduled"), condition("DisruptionTarget")]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        };
        let status = render(&pod, &Observed::default(), t("2026-01-01T00:01:00Z"));
        let conditions = status.conditions.unwrap();
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "DisruptionTarget",
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled"
            ]
        );
        let scheduled = &conditions[5];
        assert_eq!(
            (scheduled.status.as_str(), &scheduled.last_transition_time),
            ("True", &Some(Time(scheduled_at)))
        );
    }

    #[test]
    fn false_conditions_say_why_as_a_kubelet_does() {
        let now = t("2026-01-01T00:00:00Z");
        let why = |status: &PodStatus, type_: &str| {
            let found = status.conditions.iter().flatten().find(|c| c.type_ == type_).unwrap();
            (found.status.clone(), found.reason.clone(), found.message.clone())
        };
        let reason = |r: &str| Some(r.to_owned());
        let setup = terminated("setup", None, &ended(1), &named("setup"));
        let waiting = Observed {
            init: vec![setup],
            containers: vec![named("web"), named("sidecar")],
            phase: Some("Pending"),
            ..Observed::default()
        };
        let status = render(&Pod::default(), &waiting, now);
        let message = Some("containers with incomplete status: [setup]".to_owned());
        assert_eq!(
            why(&status, "Initialized"),
            ("False".into(), reason("ContainersNotInitialized"), message)
        );
        let unready = Some("containers with unready status: [web sidecar]".to_owned());
        for type_ in ["Ready", "ContainersReady"] {
            assert_eq!(
                why(&status, type_),
                ("False".into(), reason("ContainersNotReady"), unready.clone())
            );
        }

        // A completed pod is initialized, and not ready because it completed.
        let done = terminated("web", None, &ended(0), &named("web"));
        let completed =
            Observed { containers: vec![done], phase: Some("Succeeded"), ..Observed::default() };
        let status = render(&Pod::default(), &completed, now);
        assert_eq!(why(&status, "Initialized"), ("True".into(), reason("PodCompleted"), None));
        for type_ in ["Ready", "ContainersReady"] {
            assert_eq!(why(&status, type_), ("False".into(), reason("PodCompleted"), None));
        }
    }

    #[test]
    fn a_deleted_pod_shows_its_containers_ended_and_not_ready_and_a_final_phase() {
        let now = t("2026-01-01T00:00:00Z");
        let killed = terminated("web", None, &ended(143), &named("web"));
        let observed = Observed {
            containers: vec![killed, running("lost", "process://9".into(), now, &named("lost"))],
            phase: Some("Running"),
            ..Observed::default()
        };
        let stopped = stopped_for_deletion(&Pod::default(), &observed);
        assert_eq!(stopped.phase, Some("Failed"));
        let state = |i: usize| stopped.containers[i].state.clone().unwrap().terminated.unwrap();
        assert_eq!((state(0).exit_code, state(0).reason.as_deref()), (143, Some("Error")));
        assert_eq!(
            (state(1).exit_code, state(1).reason.as_deref()),
            (137, Some("ContainerStatusUnknown")),
            "a run whose end was not seen"
        );
        assert!(stopped.containers.iter().all(|s| !s.ready && s.started == Some(false)));

        let completed = Observed {
            containers: vec![terminated("web", None, &ended(0), &named("web"))],
            phase: Some("Running"),
            ..Observed::default()
        };
        assert_eq!(stopped_for_deletion(&Pod::default(), &completed).phase, Some("Succeeded"));
    }

    #[test]
    fn a_deleted_pod_shows_a_crash_looping_containers_last_run_and_never_run_ones_as_upstream() {
        let second = run(&waiting_to_restart(&crash(&run(&named("c"))), "ContainerCreating", None));
        let observed = Observed {
            containers: vec![
                waiting_to_restart(&crash(&second), "CrashLoopBackOff", None),
                waiting("new", "ContainerCreating", None, &named("new")),
            ],
            phase: Some("Running"),
            ..Observed::default()
        };
        let stopped = stopped_for_deletion(&Pod::default(), &observed);
        let looping = &stopped.containers[0];
        let end = looping.state.clone().unwrap().terminated.unwrap();
        assert_eq!((end.exit_code, looping.restart_count), (1, 1));
        let never = stopped.containers[1].state.clone().unwrap().terminated.unwrap();
        assert_eq!(never.reason.as_deref(), Some("ContainerStatusUnknown"));

        // Before its init containers completed, its containers just never ran.
        let pod = Pod {
            spec: Some(PodSpec {
                init_containers: Some(vec![Container::default()]),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        let pending = Observed {
            containers: vec![waiting("new", "PodInitializing", None, &named("new"))],
            phase: Some("Pending"),
            ..Observed::default()
        };
        let stopped = stopped_for_deletion(&pod, &pending);
        assert!(stopped.containers[0].state.clone().unwrap().waiting.is_some());
        assert_eq!(stopped.phase, Some("Failed"));
    }
}
