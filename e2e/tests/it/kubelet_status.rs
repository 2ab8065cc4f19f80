//! What the local node's kubelet reports, seen with kubectl as on a cluster: restarts counted
//! when a container runs again, a deleted pod's containers shown stopped before it goes,
//! completed init containers ready, conditions in the kubelet's order, a container (simulated
//! or a process) restarted when its image changes, and no process outliving its pod.

use crate::support::{Keelson, eventually};

/// Fast readiness, and simulated containers that take 2 s to stop.
const FLAGS: [&str; 4] = ["--pod-ready-delay", "200ms", "--pod-stop-delay", "2s"];

/// A pod `name` held by a finalizer, with `annotations`, `spec` lines and one container running
/// `script`.
fn held_pod(name: &str, annotations: &str, spec: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  finalizers: [example.com/hold]\n  annotations: {{{annotations}}}\nspec:\n{spec}  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, {script:?}]\n"
    )
}

/// `kubectl get pod <name>`'s READY, STATUS and RESTARTS columns.
fn columns(k: &Keelson, name: &str) -> (String, String, String) {
    let row = k.ok(&["get", "pod", name, "--no-headers"]);
    let fields: Vec<&str> = row.split_whitespace().collect();
    (fields[1].to_owned(), fields[2].to_owned(), fields[3].to_owned())
}

fn container(k: &Keelson, pod: &str, field: &str) -> String {
    k.jsonpath("pod", pod, &format!("{{.status.containerStatuses[0].{field}}}"))
}

/// Lets a pod held by a finalizer go, and waits until it is gone.
fn release(k: &Keelson, name: &str) {
    let remove = r#"[{"op":"remove","path":"/metadata/finalizers"}]"#;
    k.ok(&["patch", "pod", name, "--type=json", "-p", remove]);
    k.ok(&["wait", "--for=delete", &format!("pod/{name}"), "--timeout=30s"]);
}

#[test]
fn a_crash_looping_container_counts_a_restart_when_it_runs_again() {
    let k = Keelson::up_with(&FLAGS);
    let script = "n=$(cat runs 2>/dev/null || echo 0); echo run $n; echo $((n+1)) > runs; exit 1";
    let annotation = "--annotations=keelson.dev/run-as-process=true";
    k.ok(&["run", "cl", "--image=busybox", annotation, "--", "sh", "-c", script]);
    let waiting = "state.waiting.reason";
    eventually(30, "the back-off", || container(&k, "cl", waiting) == "CrashLoopBackOff");
    // Two runs (the first crash restarted it at once), so one restart, while it waits 10 s.
    assert_eq!(k.ok(&["logs", "cl"]), "run 1\n", "it shows its last run");
    assert_eq!(container(&k, "cl", "restartCount"), "1");
    let (ready, status, restarts) = columns(&k, "cl");
    assert_eq!((ready.as_str(), status.as_str()), ("0/1", "CrashLoopBackOff"));
    assert_eq!(restarts, "1", "RESTARTS, then how long ago the last run ended");
    assert_eq!(container(&k, "cl", "lastState.terminated.exitCode"), "1");

    // The third run counts when it starts; it ends and waits again, twice as long.
    eventually(30, "the third run", || k.ok(&["logs", "cl"]) == "run 2\n");
    assert_eq!(container(&k, "cl", "restartCount"), "2");
    eventually(10, "the next back-off", || {
        container(&k, "cl", "state.waiting.message").starts_with("back-off 20s")
    });
    assert_eq!(container(&k, "cl", "restartCount"), "2");
}

#[test]
fn a_deleted_process_pod_shows_its_container_stopped_before_it_goes() {
    let k = Keelson::up_with(&FLAGS);
    let process = "keelson.dev/run-as-process: \"true\"";
    // One that stops on SIGTERM (143), one that handles it and completes.
    k.apply("killed.yaml", &held_pod("killed", process, "", "sleep 300"));
    let graceful = "trap 'exit 0' TERM; while true; do sleep 0.1; done";
    k.apply("graceful.yaml", &held_pod("graceful", process, "", graceful));
    for pod in ["killed", "graceful"] {
        k.ok(&["wait", "--for=condition=Ready", &format!("pod/{pod}"), "--timeout=60s"]);
        assert_eq!(columns(&k, pod).0, "1/1");
        k.ok(&["delete", "pod", pod, "--wait=false"]);
    }
    for (pod, code, reason, phase) in
        [("killed", "143", "Error", "Failed"), ("graceful", "0", "Completed", "Succeeded")]
    {
        // Held by its finalizer, it shows how it ended, as a kubelet reports it.
        eventually(20, "the final status", || k.jsonpath("pod", pod, "{.status.phase}") == phase);
        assert_eq!(container(&k, pod, "state.terminated.exitCode"), code);
        assert_eq!(container(&k, pod, "state.terminated.reason"), reason);
        assert_eq!(container(&k, pod, "ready"), "false");
        let ready = k.jsonpath("pod", pod, "{.status.conditions[?(@.type==\"Ready\")].status}");
        assert_eq!(ready, "False");
        let (ready, status, _) = columns(&k, pod);
        assert_eq!((ready.as_str(), status.as_str()), ("0/1", reason));
        assert!(!k.jsonpath("pod", pod, "{.metadata.deletionTimestamp}").is_empty());
        release(&k, pod);
    }
}

#[test]
fn a_deleted_simulated_pod_shows_its_containers_stopped_before_it_goes() {
    let k = Keelson::up_with(&FLAGS);
    let init = "  initContainers:\n  - name: setup\n    image: busybox\n    command: [\"true\"]\n";
    k.apply("web.yaml", &held_pod("web", "", init, "serve"));
    k.apply("quick.yaml", &held_pod("quick", "", "", "serve"));
    for pod in ["web", "quick"] {
        k.ok(&["wait", "--for=condition=Ready", &format!("pod/{pod}"), "--timeout=60s"]);
    }
    // A completed init container is ready, and the conditions come in the kubelet's order.
    assert_eq!(k.jsonpath("pod", "web", "{.status.initContainerStatuses[0].ready}"), "true");
    assert_eq!(
        k.jsonpath("pod", "web", "{.status.conditions[*].type}"),
        "PodReadyToStartContainers Initialized Ready ContainersReady PodScheduled"
    );

    // Stopped within its grace period, it completes; given 1 s for its 2 s stop, it is killed.
    k.ok(&["delete", "pod", "web", "--wait=false"]);
    assert_eq!(columns(&k, "web").1, "Terminating", "it takes the stop delay to stop");
    k.ok(&["delete", "pod", "quick", "--wait=false", "--grace-period=1"]);
    for (pod, code, reason, phase) in
        [("web", "0", "Completed", "Succeeded"), ("quick", "137", "Error", "Failed")]
    {
        eventually(20, "the final status", || k.jsonpath("pod", pod, "{.status.phase}") == phase);
        assert_eq!(container(&k, pod, "state.terminated.exitCode"), code);
        assert_eq!(container(&k, pod, "state.terminated.reason"), reason);
        let (ready, status, _) = columns(&k, pod);
        assert_eq!((ready.as_str(), status.as_str()), ("0/1", reason));
        release(&k, pod);
    }
}

#[test]
fn a_process_pod_whose_image_changes_runs_its_process_again() {
    let k = Keelson::up_with(&FLAGS);
    let process = r#"keelson.dev/run-as-process: "true""#;
    // Each run logs its shell's pid (`$$` is how a container's command escapes a `$`).
    let script = "echo run $$$$; exec sleep 600";
    k.apply("worker.yaml", &held_pod("worker", process, "", script));
    k.ok(&["wait", "--for=condition=Ready", "pod/worker", "--timeout=60s"]);
    let first = container(&k, "worker", "containerID");
    k.ok(&["set", "image", "pod/worker", "main=busybox:1.37"]);
    eventually(30, "the process to run again", || {
        container(&k, "worker", "restartCount") == "1"
            && !container(&k, "worker", "state.running.startedAt").is_empty()
    });
    assert_eq!(container(&k, "worker", "image"), "busybox:1.37");
    let second = container(&k, "worker", "containerID");
    assert!(second != first && second.starts_with("process://"), "{first} → {second}");
    let previous = k.ok(&["logs", "worker", "--previous"]);
    let current = k.ok(&["logs", "worker"]);
    assert!(previous.starts_with("run ") && current.starts_with("run "), "{previous}{current}");
    assert_ne!(previous, current, "another process");
    let killing = k.ok_showing(
        &["get", "events", "--field-selector", "involvedObject.name=worker,reason=Killing"],
        &["Container main definition changed, will be restarted"],
    );
    assert!(!killing.is_empty());
    k.ok(&["delete", "pod", "worker", "--wait=false"]);
    release(&k, "worker");
}

#[test]
fn a_simulated_pod_whose_image_changes_restarts_its_container() {
    let k = Keelson::up_with(&FLAGS);
    k.ok(&["run", "web", "--image=nginx:1.27"]);
    k.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    let started = container(&k, "web", "state.running.startedAt");
    k.ok(&["set", "image", "pod/web", "web=nginx:1.28"]);
    eventually(20, "the restart", || container(&k, "web", "restartCount") == "1");
    assert_eq!(container(&k, "web", "image"), "nginx:1.28");
    assert_eq!(container(&k, "web", "lastState.terminated.reason"), "Completed");
    assert_eq!(container(&k, "web", "lastState.terminated.startedAt"), started);
    assert!(!container(&k, "web", "state.running.startedAt").is_empty());
    let (ready, status, restarts) = columns(&k, "web");
    assert_eq!((ready.as_str(), status.as_str(), restarts.as_str()), ("1/1", "Running", "1"));
    let killing = k.ok_showing(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=web,reason=Killing",
            "-o",
            "jsonpath={.items[*].message}",
        ],
        &["definition changed"],
    );
    assert_eq!(killing, "Container web definition changed, will be restarted");
}

/// The processes of this machine whose environment holds `entry` (`NAME=value`).
fn processes_with_env(entry: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
        })
        .collect()
}

/// Kills the processes `pids` a failed test left.
fn kill_all(pids: &[u32]) {
    for &pid in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// A process as a failure report shows it: pid, name, state, parent, group and signals.
fn process_summary(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let fields =
        ["Name", "State", "PPid", "NSpgid", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"];
    let shown: Vec<&str> = status
        .lines()
        .filter(|line| fields.iter().any(|f| line.split(':').next() == Some(f)))
        .collect();
    format!("{pid} {}", shown.join(", "))
}

/// A pod left after its deletion as a failure report shows it: when it was deleted, its
/// phase, its containers' states and what its node's directory for it holds.
fn pod_summary(k: &Keelson, pod: &k8s_openapi::api::core::v1::Pod) -> String {
    let meta = &pod.metadata;
    let status = pod.status.clone().unwrap_or_default();
    let containers: Vec<_> = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| format!("{}: {:?}", c.name, c.state))
        .collect();
    let name = meta.name.clone().unwrap_or_default();
    let uid = meta.uid.clone().unwrap_or_default();
    let dir = k.data_dir().join("pods").join(format!("default_{name}_{uid}"));
    let files: Vec<String> = walkdir(&dir)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let shown = if text.len() < 200 { text.trim().to_owned() } else { "…".into() };
            format!("{}: {shown}", path.strip_prefix(&dir).unwrap_or(&path).display())
        })
        .collect();
    // Its lines in the node's log, those of its processes and the node's failures.
    let log = std::fs::read_to_string(k.log()).unwrap_or_default();
    let pids: Vec<String> = log
        .lines()
        .filter(|line| line.contains(&name))
        .filter_map(|line| line.split("pid=").nth(1)?.split_whitespace().next())
        .flat_map(|pid| [format!("pid={pid}"), format!("group={pid}")])
        .collect();
    let lines: Vec<&str> = log
        .lines()
        .filter(|line| {
            line.contains(&name)
                || line.contains("failed")
                || line.split_whitespace().any(|field| pids.iter().any(|p| p == field))
        })
        .collect();
    format!(
        "{name} deleted at {:?}, phase {:?}, containers {containers:?}, files {files:?}, log:\n{}",
        meta.deletion_timestamp.as_ref().map(|t| t.0),
        status.phase,
        lines.join("\n")
    )
}

/// The files under `dir`, at any depth.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .flat_map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => walkdir(&entry.path()),
            _ => vec![entry.path()],
        })
        .collect()
}

#[test]
fn process_pods_deleted_while_they_start_leave_no_process_behind() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, DeleteParams, PostParams};

    // The node's account of each pod and process, shown for a pod that stays.
    let k = Keelson::up_logging(&FLAGS, "warn,keelson_embedded::node=debug");
    let marker = format!("KEELSON_TEST_RUN={}-{}", std::process::id(), "late-start");
    let (name, value) = marker.split_once('=').unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let left = runtime.block_on(async {
        let pods: Api<Pod> = Api::default_namespaced(keelson_e2e::client(&k.data_dir()).await);
        // Each pod is deleted a little later than the one before, so that some deletions land
        // while the local node starts the pod's process.
        for delay_ms in (0..120).step_by(4) {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {
                    "generateName": "late-",
                    "annotations": {"keelson.dev/run-as-process": "true"},
                },
                "spec": {"containers": [{
                    "name": "main",
                    "image": "busybox",
                    "command": ["sleep", "300"],
                    "env": [{"name": name, "value": value}],
                }]},
            }))
            .unwrap();
            let created = pods.create(&PostParams::default(), &pod).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            let name = created.metadata.name.unwrap();
            pods.delete(&name, &DeleteParams::default()).await.unwrap();
        }
        // Stopped by its SIGTERM, each goes well within its 30 s grace period, even one
        // deleted while its supervisor started.
        let mut left = Vec::new();
        for _ in 0..150 {
            left = pods.list(&Default::default()).await.unwrap().items;
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        left
    });
    // A process that outlived its pod would be running by now.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let pids = processes_with_env(&marker);
    let running: Vec<_> = pids.iter().copied().map(process_summary).collect();
    kill_all(&pids);
    let shown: Vec<_> = left.iter().map(|pod| pod_summary(&k, pod)).collect();
    assert!(
        left.is_empty(),
        "every pod goes within 15 s; left:\n{}\nrunning: {running:#?}",
        shown.join("\n")
    );
    assert!(running.is_empty(), "processes outlived their pods: {running:?}");
}

/// Supervises `sleep 300` as the kubelet does (in a process group of its own, marked by `env`),
/// sends the group SIGTERM `delay` after the start returned, as the kubelet does for a pod
/// deleted as it starts, and says whether the supervisor ended within 5 s; one that did not is
/// killed with its group.
fn supervisor_stops(dir: &std::path::Path, env: (&str, &str), delay: std::time::Duration) -> bool {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    use std::os::unix::process::CommandExt;
    let mut supervisor = std::process::Command::new(keelson_e2e::keelson_binary())
        .arg("supervise")
        .args([dir.join("main.log"), dir.join("main.exit")])
        .args(["--", "sleep", "300"])
        .env(env.0, env.1)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let group = Pid::from_raw(supervisor.id() as i32);
    std::thread::sleep(delay);
    killpg(group, Signal::SIGTERM).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if supervisor.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = killpg(group, Signal::SIGKILL);
    let _ = supervisor.wait();
    false
}

#[test]
fn supervisors_stopped_at_any_moment_of_their_start_end_at_once() {
    // One pod's deletion lands at one moment of its supervisor's start; hundreds of starts,
    // each signalled a little later than the one before, cover the moments one in hundreds hits.
    const THREADS: u32 = 4;
    const STARTS: u32 = 250;
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("{}-supervisor-start", std::process::id());
    let stuck: u32 = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (dir, marker) = (dir.path(), marker.as_str());
                scope.spawn(move || {
                    (0..STARTS)
                        .filter(|start| {
                            let run = dir.join(format!("{thread}-{start}"));
                            // 0 to 30 ms after the start returned, spread evenly over the runs.
                            let delay = (start * THREADS + thread) * 30_000 / (STARTS * THREADS);
                            let delay = std::time::Duration::from_micros(u64::from(delay));
                            !supervisor_stops(&run, ("KEELSON_TEST_RUN", marker), delay)
                        })
                        .count() as u32
                })
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).sum()
    });
    let left = processes_with_env(&format!("KEELSON_TEST_RUN={marker}"));
    kill_all(&left);
    assert_eq!(stuck, 0, "supervisors still running 5 s after their SIGTERM");
    assert!(left.is_empty(), "processes outlived their supervisors: {left:?}");
}
