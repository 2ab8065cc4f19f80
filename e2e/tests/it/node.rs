//! The local node, driven with kubectl as a user would: Jobs run as processes with logs,
//! retries and deadlines; Deployments scale and roll; DaemonSets follow nodes; GPUs are never
//! over-committed; deleting a pod stops its process; a crash of keelson leaves processes running
//! for the next start to adopt, and nothing running forever; exec, cp, attach and port-forward
//! reach a running process, and the proxy subresource its web server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Keelson, eventually, output_with_input};

/// Fast retries and readiness, so the tests take seconds.
const FAST: [&str; 4] = ["--job-backoff", "200ms", "--pod-ready-delay", "200ms"];

fn job(name: &str, extra_spec: &str, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n{extra_spec}  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [sh, -c, {script:?}]\n"
    )
}

/// The pid of the first container of `pod`, from its `process://<pid>` container id.
fn pid_of(k: &Keelson, pod: &str) -> Option<u32> {
    let id = k.jsonpath("pod", pod, "{.status.containerStatuses[0].containerID}");
    id.strip_prefix("process://")?.parse().ok()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited: only a live process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// Waits for the first pod of `job` to run its process; its name and pid.
fn running_process(k: &Keelson, job: &str) -> (String, u32) {
    let mut found = None;
    eventually(30, "the job's process", || {
        found = pods_of_job(k, job).first().and_then(|p| Some((p.clone(), pid_of(k, p)?)));
        found.is_some()
    });
    found.unwrap()
}

fn pods_of_job(k: &Keelson, job: &str) -> Vec<String> {
    k.ok(&[
        "get",
        "pods",
        "-l",
        &format!("job-name={job}"),
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

#[test]
fn a_job_runs_its_command_and_kubectl_logs_prints_its_output() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["create", "job", "hello", "--image=busybox", "--", "sh", "-c", "echo hi"]);
    k.ok(&["wait", "--for=condition=complete", "job/hello", "--timeout=60s"]);
    assert_eq!(k.ok(&["logs", "job/hello"]), "hi\n");
    assert_eq!(k.jsonpath("job", "hello", "{.status.succeeded}"), "1");
    let pod = &pods_of_job(&k, "hello")[0];
    assert_eq!(k.jsonpath("pod", pod, "{.status.phase}"), "Succeeded");
    assert_eq!(
        k.jsonpath("pod", pod, "{.status.containerStatuses[0].state.terminated.reason}"),
        "Completed"
    );
}

/// A Job whose pod runs `script` as `account`, its token mounted or not.
fn job_as(name: &str, account: &str, automount: bool, script: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      serviceAccountName: {account}\n      automountServiceAccountToken: {automount}\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: bitnami/kubectl\n        command: [sh, -c, {script:?}]\n"
    )
}

#[test]
fn a_job_calls_the_api_server_as_its_service_account() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["create", "serviceaccount", "reader"]);
    k.ok(&[
        "create",
        "rolebinding",
        "reader",
        "--clusterrole=view",
        "--serviceaccount=default:reader",
    ]);
    let script = "kubectl auth whoami -o jsonpath={.status.userInfo.username}; echo; kubectl get configmap kube-root-ca.crt -o name; kubectl auth can-i list secrets || true";
    k.apply("reader.yaml", &job_as("reader", "reader", true, script));
    k.apply("none.yaml", &job_as("none", "reader", false, "echo ${KUBECONFIG:-no credentials}"));
    for job in ["reader", "none"] {
        k.ok(&["wait", "--for=condition=complete", &format!("job/{job}"), "--timeout=60s"]);
    }
    assert_eq!(
        k.ok(&["logs", "job/reader"]),
        "system:serviceaccount:default:reader\nconfigmap/kube-root-ca.crt\nno\n"
    );
    assert_eq!(k.ok(&["logs", "job/none"]), "no credentials\n");
}

/// Runs kubectl with `input` on its stdin; returns its exit code, stdout and stderr.
fn kubectl_with_input(k: &Keelson, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    let output = output_with_input(k.kubectl_cmd(args), input);
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (output.status.code(), text(output.stdout), text(output.stderr))
}

#[test]
fn kubectl_exec_and_cp_run_beside_a_process_pod() {
    let k = Keelson::up_with(&FAST);
    k.apply("sleeper.yaml", &job("sleeper", "", "sleep 300"));
    eventually(30, "the job's pod to run", || pods_of_job(&k, "sleeper").len() == 1);
    let pod = pods_of_job(&k, "sleeper").remove(0);
    k.ok(&["wait", "--for=condition=Ready", &format!("pod/{pod}"), "--timeout=60s"]);

    // The command sees the container's environment and working directory; its exit code and
    // both output streams come back.
    let script = "echo $HOSTNAME; pwd; echo oops >&2; exit 3";
    let (code, out, err) = kubectl_with_input(&k, &["exec", &pod, "--", "sh", "-c", script], "");
    assert_eq!(code, Some(3), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], pod);
    assert!(lines[1].ends_with("/work") && lines[1].contains(&pod), "{out}");
    assert!(err.contains("oops") && err.contains("command terminated with exit code 3"), "{err}");

    // stdin is carried, and closed when kubectl's input ends.
    let (code, out, _) = kubectl_with_input(&k, &["exec", "-i", &pod, "--", "cat"], "hello\n");
    assert_eq!((code, out.as_str()), (Some(0), "hello\n"));

    // kubectl cp runs tar through exec, in both directions.
    let local = k.manifest("notes.txt", "some notes\n");
    k.ok(&["cp", &local, &format!("{pod}:notes.txt")]);
    assert_eq!(k.ok(&["exec", &pod, "--", "cat", "notes.txt"]), "some notes\n");
    let back = format!("{local}.back");
    k.ok(&["cp", &format!("{pod}:notes.txt"), &back]);
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "some notes\n");

    // With -t the command gets a terminal.
    let (code, out) =
        in_terminal(&k, &format!("kubectl exec -it {pod} -- sh -c 'tty; exit 4'"), "");
    assert!(out.contains("/dev/pts/"), "{out}");
    assert_eq!(code, Some(4), "{out}");

    let missing = k.fails(&["exec", &pod, "--", "no-such-command"]);
    assert!(
        missing.contains(r#"exec: "no-such-command": executable file not found in $PATH"#),
        "{missing}"
    );
    let refused =
        k.fails(&["exec", &pod, "--as=system:serviceaccount:default:default", "--", "ls"]);
    assert!(refused.contains("Forbidden"), "{refused}");
}

/// Runs the shell command `session` (kubectl, with the test's kubeconfig) on a terminal of its
/// own, as kubectl asks for a remote terminal only from one: `script` gives it one, and types
/// `input`. Returns the exit code and what the terminal showed.
fn in_terminal(k: &Keelson, session: &str, input: &str) -> (Option<i32>, String) {
    let kubectl = k.kubectl_cmd(&[]);
    let mut terminal = std::process::Command::new("script");
    terminal.args(["-qec", session, "/dev/null"]);
    terminal.envs(kubectl.get_envs().filter_map(|(key, value)| Some((key, value?))));
    let output = output_with_input(terminal, input);
    (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A pod the local node runs as a process, with `container_fields` added to its container.
fn process_pod(name: &str, container_fields: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations:\n    keelson.dev/run-as-process: \"true\"\nspec:\n  restartPolicy: Never\n  containers:\n  - name: main\n    image: busybox\n{container_fields}    command: [sh, -c, {script:?}]\n"
    )
}

#[test]
fn kubectl_attach_and_run_i_and_it_reach_a_process_pod() {
    let mut k = Keelson::up_with(&FAST);
    // It writes on both streams until told to stop, then says goodbye and ends.
    let script = "while [ ! -e stop ]; do echo tick; echo tock >&2; sleep 0.2; done; echo bye";
    k.apply("ticker.yaml", &process_pod("ticker", "", script));
    k.ok(&["wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s"]);
    // Its supervisor serves attaching clients across a crash of keelson.
    k.kill();
    k.start();
    let mut attach = k
        .kubectl_cmd(&["attach", "ticker"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(attach.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    if line.is_empty() {
        let mut err = String::new();
        attach.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        panic!("kubectl attach printed nothing: {err}");
    }
    assert_eq!(line, "tick\n", "the output arrives live");
    k.ok(&["exec", "ticker", "--", "touch", "stop"]);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(rest.ends_with("bye\n"), "{rest}");
    let mut err = String::new();
    attach.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("tock"), "stderr is carried apart: {err}");
    assert!(attach.wait().unwrap().success(), "attach ends with the program");
    let forbidden = k.fails(&["attach", "ticker", "--as=system:serviceaccount:default:default"]);
    assert!(forbidden.contains("Forbidden"), "{forbidden}");

    // kubectl run -i feeds the new pod's input, and --rm removes the pod afterwards.
    let run = ["run", "-i", "--rm", "echo", "--image=busybox", "--restart=Never"];
    let annotation = "--annotations=keelson.dev/run-as-process=true";
    let command = ["--", "sh", "-c", "read line; echo got $line"];
    let (code, out, err) =
        kubectl_with_input(&k, &[&run[..], &[annotation], &command].concat(), "hello\n");
    assert_eq!((code, out.as_str()), (Some(0), "got hello\npod \"echo\" deleted\n"), "{err}");
    assert!(k.fails(&["get", "pod", "echo"]).contains("NotFound"));

    // kubectl run -it gives it a terminal, and exits with its exit code.
    let session = format!(
        "kubectl run -it --rm shell --image=busybox --restart=Never {annotation} -- sh -c 'read x; tty; echo typed $x; exit 3'"
    );
    let (code, out) = in_terminal(&k, &session, "abc\n");
    assert!(out.contains("/dev/pts/") && out.contains("typed abc"), "{out}");
    assert_eq!(code, Some(3), "{out}");

    // A simulated pod has nothing to attach to, and says so.
    k.ok(&["create", "deployment", "sim", "--image=nginx"]);
    k.ok(&["wait", "--for=condition=Available", "deployment/sim", "--timeout=60s"]);
    let refused = k.fails(&["attach", "deployment/sim"]);
    assert!(refused.contains("cannot attach to pod") && refused.contains("simulated"), "{refused}");
}

#[test]
fn a_process_pod_is_ready_when_its_readiness_probe_passes() {
    let k = Keelson::up_with(&FAST);
    let probe =
        "    readinessProbe:\n      exec: {command: [test, -f, ready]}\n      periodSeconds: 1\n";
    k.apply("prober.yaml", &process_pod("prober", probe, "sleep 300"));
    let ready = "{.status.conditions[?(@.type==\"Ready\")].status}";
    eventually(30, "the pod to run", || {
        k.jsonpath("pod", "prober", "{.status.phase}") == "Running"
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(k.jsonpath("pod", "prober", ready), "False", "the probe has not passed yet");
    // The probe runs in the pod's working directory, where its processes run too.
    k.ok(&["exec", "prober", "--", "touch", "ready"]);
    k.ok(&["wait", "--for=condition=Ready", "pod/prober", "--timeout=30s"]);
    k.ok(&["exec", "prober", "--", "rm", "ready"]);
    eventually(30, "three failures to make it unready", || {
        k.jsonpath("pod", "prober", ready) == "False"
    });
}

#[test]
fn a_process_pod_starts_by_its_startup_probe_and_is_restarted_by_its_liveness_probe() {
    let k = Keelson::up_with(&FAST);
    let check = "exec: {command: [test, -f, alive]}, periodSeconds: 1";
    let probes = format!(
        "    startupProbe: {{{check}, failureThreshold: 60}}\n    livenessProbe: {{{check}, failureThreshold: 2}}\n"
    );
    let pod = process_pod("lively", &probes, "sleep 300")
        .replace("restartPolicy: Never", "restartPolicy: Always");
    k.apply("lively.yaml", &pod);
    let status = |field: &str| {
        k.jsonpath("pod", "lively", &format!("{{.status.containerStatuses[0].{field}}}"))
    };
    eventually(30, "the pod to run", || {
        k.jsonpath("pod", "lively", "{.status.phase}") == "Running"
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        (status("started"), status("ready")),
        ("false".into(), "false".into()),
        "not started yet"
    );
    k.ok(&["exec", "lively", "--", "touch", "alive"]);
    // Without a readiness probe it is ready once started.
    k.ok(&["wait", "--for=condition=Ready", "pod/lively", "--timeout=30s"]);
    assert_eq!((status("started"), status("restartCount")), ("true".into(), "0".into()));
    k.ok(&["exec", "lively", "--", "rm", "alive"]);
    eventually(30, "two failed liveness probes to restart it", || status("restartCount") == "1");
    assert_eq!(status("lastState.terminated.exitCode"), "143", "killed by SIGTERM");
    assert_ne!(k.jsonpath("pod", "lively", "{.status.phase}"), "Failed");

    // The kubelet's events tell the story, as `kubectl describe` shows them.
    k.ok(&["delete", "pod", "lively", "--wait=true"]);
    let events = k.ok_showing(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=lively",
            "-o",
            "jsonpath={range .items[*]}{.reason}|{.message}|{.source.component}{\"\\n\"}{end}",
        ],
        &[
            "Scheduled|Successfully assigned default/lively to ",
            "Created|Created container: main",
            "Started|Started container main",
            "Unhealthy|Startup probe failed: command [\"test\", \"-f\", \"alive\"] exited with code 1",
            "Unhealthy|Liveness probe failed: command [\"test\", \"-f\", \"alive\"] exited with code 1",
            "Killing|Container main failed liveness probe, will be restarted",
            "Killing|Stopping container main",
        ],
    );
    assert!(events.lines().filter(|l| l.starts_with("Started|")).all(|l| l.ends_with("|kubelet")));
}

#[test]
fn kubectl_logs_of_a_crash_looping_container_show_its_last_run() {
    let k = Keelson::up_with(&FAST);
    let pod = process_pod("crasher", "", "echo run at $(date +%s%N); exit 1")
        .replace("restartPolicy: Never", "restartPolicy: Always");
    k.apply("crasher.yaml", &pod);
    let waiting = "{.status.containerStatuses[0].state.waiting.reason}";
    eventually(30, "the back-off", || k.jsonpath("pod", "crasher", waiting) == "CrashLoopBackOff");
    // The first crash restarted it at once (one restart, counted when the second run started);
    // the second waits 10 s.
    let status = |field: &str| {
        k.jsonpath("pod", "crasher", &format!("{{.status.containerStatuses[0].{field}}}"))
    };
    assert_eq!(status("restartCount"), "1");
    assert!(
        status("state.waiting.message")
            .starts_with("back-off 10s restarting failed container=main pod=crasher_default(")
    );
    k.ok_showing(
        &["describe", "pod", "crasher"],
        &["Back-off restarting failed container main in pod crasher_default("],
    );
    let logs = k.ok(&["logs", "crasher"]);
    assert!(logs.starts_with("run at "), "{logs}");
    assert_eq!(k.ok(&["logs", "crasher", "--previous"]), logs, "the last run is the previous one");
    assert_eq!(k.ok(&["logs", "-f", "crasher"]), logs, "following an ended run ends");
}

#[test]
fn kubectl_debug_adds_a_container_that_runs_beside_a_process_pod() {
    let k = Keelson::up_with(&FAST);
    // Its probe and its environment's sources travel with a copy of it, which kubectl creates
    // in protobuf.
    let fields = "    env:\n    - name: POD\n      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n    readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 5}\n";
    k.apply("app.yaml", &process_pod("app", fields, "sleep 300"));
    k.ok(&["wait", "--for=condition=Ready", "pod/app", "--timeout=60s"]);

    // An interactive debugging container: a terminal, and its end recorded.
    let debug = "kubectl debug -it app --image=busybox --target=main -c shell -- sh -c 'read x; echo typed $x on $HOSTNAME; exit 5'";
    let (_, out) = in_terminal(&k, debug, "abc\n");
    assert!(out.contains("typed abc on app"), "it runs as the pod's process does: {out}");
    let ended = "{.status.ephemeralContainerStatuses[0].state.terminated.exitCode}";
    eventually(30, "the debugger's end", || k.jsonpath("pod", "app", ended) == "5");

    // One that runs on its own, with its log; the pod runs on, and the first stays ended.
    k.ok(&["debug", "app", "--image=busybox", "-c", "note", "--", "sh", "-c", "echo noted"]);
    eventually(30, "the second debugger's log", || {
        k.kubectl_cmd(&["logs", "app", "-c", "note"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout) == "noted\n")
    });
    assert_eq!(k.jsonpath("pod", "app", "{.status.phase}"), "Running");
    assert_eq!(k.jsonpath("pod", "app", ended), "5", "an ephemeral container runs once");

    // What an ephemeral container may not have is refused, field by field.
    let ports = r#"{"spec":{"ephemeralContainers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}]}}"#;
    let refused =
        k.fails(&["patch", "pod", "app", "--subresource=ephemeralcontainers", "-p", ports]);
    assert!(
        refused.contains("ports: Forbidden: cannot be set for an Ephemeral Container"),
        "{refused}"
    );

    // A debugging copy of the pod (created in protobuf, as kubectl's typed clients do) keeps
    // its annotations under the legacy profile (the others drop them), so it runs as processes
    // too, the debugger beside the original container.
    let copy = ["debug", "app", "--copy-to=app-copy", "--image=busybox", "--profile=legacy"];
    k.ok(&[&copy[..], &["--", "sleep", "60"]].concat());
    k.ok(&["wait", "--for=condition=Ready", "pod/app-copy", "--timeout=60s"]);
    let ids = k.jsonpath("pod", "app-copy", "{.status.containerStatuses[*].containerID}");
    assert_eq!(ids.matches("process://").count(), 2, "{ids}");
    let probe = "{.spec.containers[0].readinessProbe.periodSeconds}";
    assert_eq!(k.jsonpath("pod", "app-copy", probe), "5");
    // A node debugger pod (host namespaces, the root file system at /host) is made.
    let node = k.ok(&["get", "nodes", "-o", "name"]).lines().next().unwrap().to_owned();
    let made = k.ok(&["debug", &node, "--image=busybox", "--profile=sysadmin", "--", "true"]);
    assert!(made.contains("Creating debugging pod node-debugger-"), "{made}");

    // A simulated pod's debugger is simulated too: it shows running.
    k.ok(&["create", "deployment", "sim", "--image=nginx"]);
    k.ok(&["wait", "--for=condition=Available", "deployment/sim", "--timeout=60s"]);
    let sim = k.ok(&["get", "pods", "-l", "app=sim", "-o", "name"]).trim().to_owned();
    k.ok(&["debug", &sim, "--image=busybox", "-c", "look", "--", "sleep", "60"]);
    let running = "{.status.ephemeralContainerStatuses[0].state.running.startedAt}";
    let sim = sim.trim_start_matches("pod/");
    eventually(30, "the simulated debugger to run", || !k.jsonpath("pod", sim, running).is_empty());

    // A copy keeps every volume of the kinds pods commonly carry, as the original has them.
    k.apply("volumes.yaml", POD_WITH_VOLUMES);
    let copy = ["debug", "mounts", "--copy-to=mounts-copy", "--image=busybox", "--", "true"];
    k.ok(&copy);
    let volumes = "{.spec.volumes}";
    let original: Value = serde_json::from_str(&k.jsonpath("pod", "mounts", volumes)).unwrap();
    let copied: Value = serde_json::from_str(&k.jsonpath("pod", "mounts-copy", volumes)).unwrap();
    // Six of its own and the ServiceAccount's, which the copy keeps rather than gets anew.
    assert_eq!(original.as_array().map(Vec::len), Some(7), "{original}");
    assert!(original[6]["name"].as_str().unwrap().starts_with("kube-api-access-"));
    assert_eq!(copied, original);
    let init = "{.spec.initContainers[0].volumeMounts[0].mountPath}";
    assert_eq!(k.jsonpath("pod", "mounts-copy", init), "/etc/app");
}

/// A simulated pod with a ConfigMap, a Secret, scratch space, a projected token, the downward
/// API and a claim mounted, and an init container.
const POD_WITH_VOLUMES: &str = "apiVersion: v1
kind: Pod
metadata:
  name: mounts
spec:
  initContainers:
  - name: setup
    image: busybox
    volumeMounts: [{name: settings, mountPath: /etc/app}]
  containers:
  - name: web
    image: nginx
    volumeMounts: [{name: settings, mountPath: /etc/app}, {name: scratch, mountPath: /tmp}]
  volumes:
  - name: settings
    configMap: {name: settings, items: [{key: app.yaml, path: app.yaml, mode: 0600}], optional: true}
  - name: tls
    secret: {secretName: web-tls, defaultMode: 0440}
  - name: scratch
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: cpu, resourceFieldRef: {containerName: web, resource: limits.cpu, divisor: 1m}}
  - name: data
    persistentVolumeClaim: {claimName: web-data}
";

/// Binds `view` to the default namespace's default service account.
fn view_as_default_account(k: &Keelson) {
    let binding = ["create", "rolebinding", "viewer", "--clusterrole=view"];
    k.ok(&[&binding[..], &["--serviceaccount=default:default"]].concat());
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A Python server on `port` that answers each connection, once its input ends, with the
/// input reversed.
fn reverser(port: u16) -> String {
    format!(
        "exec python3 -c 'import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind((\"127.0.0.1\", {port}))\ns.listen()\nwhile True:\n c,_=s.accept()\n d=b\"\"\n while True:\n  b=c.recv(65536)\n  if not b: break\n  d+=b\n c.sendall(d[::-1])\n c.close()'"
    )
}

/// Starts `kubectl port-forward` with `args` and waits until it listens.
fn port_forward(k: &Keelson, args: &[&str]) -> std::process::Child {
    let mut forward = k.kubectl_cmd(&[&["port-forward"], args].concat());
    let mut child = forward.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("Forwarding from 127.0.0.1:"), "{first:?}");
    child
}

/// Sends `data` through `port`, closes the sending half, and reads the answer.
fn exchange(port: u16, data: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(data).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    answer
}

#[test]
fn kubectl_port_forward_reaches_a_process_pods_port() {
    let k = Keelson::up_with(&FAST);
    let port = free_port();
    k.apply("reverser.yaml", &job("reverser", "", &reverser(port)));
    let (pod, _) = running_process(&k, "reverser");
    eventually(30, "the server to listen", || TcpStream::connect(("127.0.0.1", port)).is_ok());

    // Several connections at once, a megabyte each way, each closing its sending half first.
    let local = free_port();
    let mut forward = port_forward(&k, &[&pod, &format!("{local}:{port}")]);
    let data: Vec<u8> = (0..1_048_576u32).map(|i| (i % 251) as u8).collect();
    let expected: Vec<u8> = data.iter().rev().copied().collect();
    std::thread::scope(|scope| {
        let connections: Vec<_> = (0..4).map(|_| scope.spawn(|| exchange(local, &data))).collect();
        for connection in connections {
            assert!(connection.join().unwrap() == expected, "the answer came back whole");
        }
    });
    forward.kill().unwrap();
    forward.wait().unwrap();

    // Through a Service: kubectl picks its pod and resolves the target port.
    let service = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: reverser\nspec:\n  selector:\n    job-name: reverser\n  ports:\n  - port: 80\n    targetPort: {port}\n"
    );
    k.apply("service.yaml", &service);
    let local = free_port();
    let mut forward = port_forward(&k, &["svc/reverser", &format!("{local}:80")]);
    assert_eq!(exchange(local, b"stressed"), b"desserts");
    forward.kill().unwrap();
    forward.wait().unwrap();

    // A port nothing listens on: kubectl reports why, as it does against a kubelet.
    let closed = free_port();
    let local = free_port();
    let mut forward = port_forward(&k, &[&format!("pod/{pod}"), &format!("{local}:{closed}")]);
    assert!(exchange(local, b"hello").is_empty());
    let status = forward.wait().unwrap();
    let mut err = String::new();
    forward.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!status.success());
    assert!(
        err.contains(&format!("error forwarding port {closed} to pod {pod}"))
            && err.contains(&format!("failed to connect to localhost:{closed}")),
        "{err}"
    );

    // Reading the pod is not enough: forwarding needs `create` on pods/portforward.
    view_as_default_account(&k);
    let as_default = "--as=system:serviceaccount:default:default";
    let refused = k.fails(&["port-forward", &pod, as_default, &format!("{}:{port}", free_port())]);
    assert!(refused.contains(r#"cannot create resource "pods/portforward""#), "{refused}");
}

/// Sends `method path` to `kubectl proxy` on `port`; the status code, the `Location` header and
/// the body.
fn through_kubectl_proxy(port: u16, method: &str, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let location = head
        .lines()
        .find_map(|line| line.strip_prefix("Location: ").or(line.strip_prefix("location: ")))
        .unwrap_or_default();
    (status, location.to_owned(), body.to_owned())
}

/// `kubectl proxy` on a free port, serving once it says so; and that port.
fn kubectl_proxy(k: &Keelson) -> (std::process::Child, u16) {
    let local = free_port();
    let mut proxy = k
        .kubectl_cmd(&["proxy", &format!("--port={local}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(proxy.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("Starting to serve on"), "{first:?}");
    (proxy, local)
}

/// A server that switches a request asking to upgrade to `echo` to that protocol, then sends
/// back every byte it gets.
const ECHO_SERVER: &str = r#"import socket, sys, threading
def serve(c):
    head = b""
    while b"\r\n\r\n" not in head:
        more = c.recv(1024)
        if not more:
            return c.close()
        head += more
    if b"upgrade: echo" not in head.lower():
        return c.close()
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
    while True:
        data = c.recv(1024)
        if not data:
            return c.close()
        c.sendall(data)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
"#;

#[test]
fn the_proxy_relays_a_connection_upgrade_both_ways() {
    let k = Keelson::up_with(&FAST);
    let port = free_port();
    let script = format!("cat > echo.py <<'EOF'\n{ECHO_SERVER}EOF\nexec python3 echo.py {port}");
    let ports = format!("    ports:\n    - {{containerPort: {port}}}\n");
    k.apply("echo.yaml", &process_pod("echo", &ports, &script));
    k.ok(&["wait", "--for=condition=Ready", "pod/echo", "--timeout=60s"]);
    eventually(30, "the server to listen", || TcpStream::connect(("127.0.0.1", port)).is_ok());

    let (mut proxy, local) = kubectl_proxy(&k);
    let mut stream = TcpStream::connect(("127.0.0.1", local)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let path = "/api/v1/namespaces/default/pods/echo/proxy/";
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the head ended early: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    for word in ["ping\n", "a longer line, twice over\n"] {
        stream.write_all(word.as_bytes()).unwrap();
        let mut echoed = vec![0u8; word.len()];
        stream.read_exact(&mut echoed).unwrap();
        assert_eq!(String::from_utf8_lossy(&echoed), word);
    }
    stream.shutdown(Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the relay ends when the client is done: {rest:?}");
    proxy.kill().unwrap();
    proxy.wait().unwrap();
}

#[test]
fn the_proxy_subresource_reaches_a_process_pod_and_its_service() {
    let k = Keelson::up_with(&FAST);
    let port = free_port();
    // A web server on the pod's declared port, serving a file and a directory.
    let script = format!(
        "mkdir -p site/docs && echo hello > site/greeting.txt && echo spaced > 'site/two words.txt' && echo '<a href=\"/docs/\">docs</a> <img src=\"greeting.txt\">' > site/page.html && cd site && exec python3 -m http.server {port} --bind 127.0.0.1"
    );
    let ports = format!("    ports:\n    - {{containerPort: {port}, name: web}}\n");
    k.apply(
        "site.yaml",
        &process_pod("site", &ports, &script)
            .replace("  name: site\n", "  name: site\n  labels: {app: site}\n"),
    );
    k.ok(&["wait", "--for=condition=Ready", "pod/site", "--timeout=60s"]);
    eventually(30, "the server to listen", || TcpStream::connect(("127.0.0.1", port)).is_ok());

    // The pod's first declared port, or the one named, by number or by name.
    let pods = "/api/v1/namespaces/default/pods";
    for target in ["site", &format!("site:{port}"), "http:site:web"] {
        let raw = format!("{pods}/{target}/proxy/greeting.txt?cache=no");
        assert_eq!(k.ok(&["get", "--raw", &raw]), "hello\n", "{target}");
    }

    // The path goes as sent, escapes and all.
    let spaced = format!("{pods}/site/proxy/two%20words.txt");
    assert_eq!(k.ok(&["get", "--raw", &spaced]), "spaced\n");

    // A Service's port by name or number, on its ready endpoint.
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: site\nspec:\n  selector: {app: site}\n  ports:\n  - {name: http, port: 80, targetPort: web}\n";
    k.apply("service.yaml", service);
    let services = "/api/v1/namespaces/default/services";
    eventually(30, "the service's endpoint", || {
        k.kubectl(&["get", "--raw", &format!("{services}/site:http/proxy/greeting.txt")])
            .status
            .success()
    });
    assert_eq!(
        k.ok(&["get", "--raw", &format!("{services}/site:80/proxy/greeting.txt")]),
        "hello\n"
    );

    // Through `kubectl proxy`, as a browser would: redirects come back through the proxy, other
    // methods and the backend's own statuses pass.
    let (mut proxy, local) = kubectl_proxy(&k);
    let base = format!("{services}/site:http/proxy");
    let (status, location, _) = through_kubectl_proxy(local, "GET", &base);
    assert_eq!((status, location.as_str()), (301, format!("{base}/").as_str()));
    let (status, _, body) = through_kubectl_proxy(local, "GET", &format!("{base}/"));
    assert_eq!(status, 200);
    assert!(body.contains("greeting.txt"), "the directory listing: {body}");
    let (status, location, _) = through_kubectl_proxy(local, "GET", &format!("{base}/docs"));
    assert_eq!((status, location.as_str()), (301, format!("{base}/docs/").as_str()));
    // A page's links to the backend's own paths come back through the proxy too.
    let (status, _, body) = through_kubectl_proxy(local, "GET", &format!("{base}/page.html"));
    assert_eq!(status, 200);
    assert!(body.contains(&format!(r#"<a href="{base}/docs/">"#)), "{body}");
    assert!(
        body.contains(r#"<img src="greeting.txt">"#),
        "a relative link resolves as it is: {body}"
    );
    let (status, _, _) = through_kubectl_proxy(local, "POST", &format!("{base}/greeting.txt"));
    assert_eq!(status, 501, "Python's server takes no POST");
    proxy.kill().unwrap();
    proxy.wait().unwrap();

    // What cannot be reached says why.
    k.ok(&["run", "simulated", "--image=nginx"]);
    k.ok(&["wait", "--for=condition=Ready", "pod/simulated", "--timeout=60s"]);
    let refused = k.fails(&["get", "--raw", &format!("{pods}/simulated/proxy/")]);
    assert!(refused.contains("pod \"simulated\" is simulated"), "{refused}");
    k.ok(&["create", "service", "clusterip", "empty", "--tcp=80:8080"]);
    let refused = k.fails(&["get", "--raw", &format!("{services}/empty:80/proxy/")]);
    assert!(refused.contains("no endpoints available for service \"empty\""), "{refused}");
    let refused = k.fails(&["get", "--raw", &format!("{pods}/missing/proxy/")]);
    assert!(refused.contains("pods \"missing\" not found"), "{refused}");

    // Reading a Service is not enough: the proxy needs a permission of its own.
    view_as_default_account(&k);
    let as_default = "--as=system:serviceaccount:default:default";
    let refused = k.fails(&["get", "--raw", &format!("{base}/greeting.txt"), as_default]);
    assert!(refused.contains(r#"cannot get resource "services/proxy""#), "{refused}");
}

#[test]
fn kubectl_top_shows_what_process_pods_and_the_machine_use() {
    let k = Keelson::up_with(&FAST);
    // 64 MiB written, then a busy loop for at most 30 s.
    let spin = "exec python3 -c 'import time\nx = b\"x\" * (64 << 20)\nend = time.time() + 30\nwhile time.time() < end: pass'";
    k.apply("spin.yaml", &job("spin", "", spin));
    let (pod, _) = running_process(&k, "spin");

    let top = k.ok(&["top", "pod", "--containers", &pod]);
    let row: Vec<&str> = top.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    let (cpu, memory) = (row[2].trim_end_matches('m'), row[3].trim_end_matches("Mi"));
    assert_eq!(row[..2], [pod.as_str(), "main"], "{top}");
    assert!(cpu.parse::<u32>().unwrap() >= 50, "a busy loop uses CPU: {top}");
    assert!(memory.parse::<u32>().unwrap() >= 64, "the 64 MiB are resident: {top}");
    assert!(
        memory.parse::<u32>().unwrap() < 96,
        "python and its 64 MiB, not the supervisor's memory too: {top}"
    );

    let nodes = k.ok(&["top", "node"]);
    assert!(nodes.starts_with("NAME") && nodes.contains("CPU(%)"), "{nodes}");
    assert_eq!(nodes.lines().count(), 2, "the machine's node: {nodes}");

    let missing = k.fails(&["top", "pod", "nope"]);
    assert!(missing.contains(r#"podmetrics.metrics.k8s.io "default/nope" not found"#), "{missing}");
    // Reading metrics is part of `view`, as metrics-server's role makes it.
    view_as_default_account(&k);
    k.ok(&["top", "pod", "--as=system:serviceaccount:default:default"]);
}

#[test]
fn a_nodes_proxy_answers_as_its_kubelet_with_its_pods_and_what_they_use() {
    let k = Keelson::up_with(&FAST);
    let hold = "exec python3 -c 'import time\nx = b\"x\" * (32 << 20)\nprint(\"holding\", flush=True)\ntime.sleep(60)'";
    k.apply("hold.yaml", &job("hold", "", hold));
    let (pod, _) = running_process(&k, "hold");
    let node = k.jsonpath("pod", &pod, "{.spec.nodeName}");
    let raw = |path: &str| k.ok(&["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/{path}")]);

    assert_eq!(raw("healthz").trim(), "ok");
    let pods: serde_json::Value = serde_json::from_str(&raw("pods")).unwrap();
    assert_eq!(pods["kind"], "PodList");
    let names: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&pod.as_str()), "{names:?}");

    let summary: serde_json::Value = serde_json::from_str(&raw("stats/summary")).unwrap();
    assert_eq!(summary["node"]["nodeName"], node.as_str());
    assert!(summary["node"]["cpu"]["usageCoreNanoSeconds"].as_u64().unwrap() > 0, "{summary}");
    let ours =
        summary["pods"].as_array().unwrap().iter().find(|p| p["podRef"]["name"] == pod.as_str());
    let ours = ours.unwrap_or_else(|| panic!("{pod} is measured: {summary}"));
    let memory = ours["containers"][0]["memory"]["workingSetBytes"].as_u64().unwrap();
    assert!(memory >= 32 << 20, "the 32 MiB are resident: {ours}");
    assert_eq!(ours["containers"][0]["name"], "main");

    let metrics = raw("metrics/resource");
    let series = format!(
        r#"container_memory_working_set_bytes{{container="main",namespace="default",pod="{pod}"}}"#
    );
    assert!(metrics.contains(&series), "{metrics}");
    assert!(metrics.contains("node_cpu_usage_seconds_total"), "{metrics}");

    // The container's log, as the kubelet serves it for `kubectl logs`.
    let logs = format!("containerLogs/default/{pod}/main");
    eventually(10, "the container's output", || raw(&logs) == "holding\n");
    let stamped = raw(&format!("{logs}?timestamps=true&tailLines=1"));
    assert!(stamped.starts_with("20") && stamped.ends_with(" holding\n"), "{stamped}");
    for (path, why) in [
        (format!("containerLogs/default/{pod}/nope"), "container \"nope\" not found"),
        ("containerLogs/default/nope/main".to_owned(), "pod \"nope\" does not exist"),
    ] {
        // kubectl shows a body that is not a `Status` only in its log of the response.
        let url = format!("/api/v1/nodes/{node}/proxy/{path}");
        let refused = k.fails(&["get", "--raw", &url, "-v=8"]);
        assert!(refused.contains("404 Not Found") && refused.contains(why), "{refused}");
    }

    let unknown = k.fails(&["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/nope")]);
    assert!(unknown.contains("NotFound"), "{unknown}");
    // `nodes/proxy` is not part of `view`.
    view_as_default_account(&k);
    let as_viewer = "--as=system:serviceaccount:default:default";
    let refused =
        k.fails(&["get", "--raw", &format!("/api/v1/nodes/{node}/proxy/pods"), as_viewer]);
    assert!(refused.contains("Forbidden"), "{refused}");
}

#[test]
fn a_failing_job_retries_to_its_backoff_limit_and_a_deadline_kills_a_slow_one() {
    let k = Keelson::up_with(&FAST);
    k.apply("fails.yaml", &job("fails", "  backoffLimit: 2\n", "echo attempt; exit 1"));
    k.apply("slow.yaml", &job("slow", "  activeDeadlineSeconds: 2\n", "sleep 60"));
    k.ok(&["wait", "--for=condition=failed", "job/fails", "--timeout=60s"]);
    assert_eq!(k.jsonpath("job", "fails", "{.status.failed}"), "3");
    assert_eq!(pods_of_job(&k, "fails").len(), 3, "three attempts");
    assert_eq!(
        k.jsonpath("job", "fails", "{.status.conditions[?(@.type==\"Failed\")].reason}"),
        "BackoffLimitExceeded"
    );
    let started = Instant::now();
    k.ok(&["wait", "--for=condition=failed", "job/slow", "--timeout=60s"]);
    assert!(started.elapsed() < Duration::from_secs(40), "the deadline stopped the 60 s sleep");
    assert_eq!(
        k.jsonpath("job", "slow", "{.status.conditions[?(@.type==\"Failed\")].reason}"),
        "DeadlineExceeded"
    );
}

#[test]
fn kubectl_logs_follow_streams_a_running_job_line_by_line() {
    let k = Keelson::up_with(&FAST);
    k.apply("count.yaml", &job("count", "", "for i in 1 2 3; do echo line-$i; sleep 1; done"));
    running_process(&k, "count");
    let mut follow =
        k.kubectl_cmd(&["logs", "-f", "job/count"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, "line-1");
    assert_eq!(
        k.jsonpath("job", "count", "{.status.active}"),
        "1",
        "the first line arrived while the job still ran"
    );
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert_eq!(rest, ["line-2", "line-3"], "the stream ends when the container does");
    assert!(follow.wait().unwrap().success());
}

#[test]
fn deleting_a_running_jobs_pod_terminates_its_process() {
    let k = Keelson::up_with(&FAST);
    k.apply("sleeper.yaml", &job("sleeper", "", "sleep 300"));
    let (pod, pid) = running_process(&k, "sleeper");
    assert!(alive(pid));
    k.ok(&["delete", "pod", &pod, "--timeout=30s"]);
    eventually(10, "the process to end", || !alive(pid));

    // So does deleting a pod whose init container runs.
    let setup = "  initContainers:\n  - name: setup\n    image: busybox\n    command: [sleep, \"300\"]\n  containers:\n";
    k.apply("initial.yaml", &process_pod("initial", "", "true").replace("  containers:\n", setup));
    let id = "{.status.initContainerStatuses[0].containerID}";
    let mut pid = None;
    eventually(30, "the init container's process", || {
        pid = k
            .jsonpath("pod", "initial", id)
            .strip_prefix("process://")
            .and_then(|p| p.parse().ok());
        pid.is_some()
    });
    let pid = pid.unwrap();
    assert!(alive(pid));
    k.ok(&["delete", "pod", "initial", "--timeout=30s"]);
    eventually(10, "the init container's process to end", || !alive(pid));
    let stopping = k.ok_showing(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=initial,reason=Killing",
            "-o",
            "jsonpath={.items[*].message}",
        ],
        &["Stopping container"],
    );
    assert_eq!(stopping, "Stopping container setup");
}

#[test]
fn a_crash_leaves_processes_running_for_the_next_start_to_adopt() {
    let mut k = Keelson::up_with(&FAST);
    k.apply("long.yaml", &job("long", "  backoffLimit: 1\n", "sleep 300"));
    k.apply("short.yaml", &job("short", "  backoffLimit: 0\n", "sleep 2; echo done"));
    let (long, pid) = running_process(&k, "long");
    let (short, _) = running_process(&k, "short");
    k.kill();
    // While keelson is down, one process is killed and the other finishes.
    assert!(alive(pid), "a crash of keelson does not stop its pods' processes");
    // `--`: without it, procps' kill reads the negative process group id as an option.
    let group = format!("-{pid}");
    let killed = std::process::Command::new("kill").args(["-s", "KILL", "--", &group]).status();
    assert!(killed.unwrap().success());
    std::thread::sleep(std::time::Duration::from_secs(3));
    k.start();
    k.ok(&["wait", "--for=condition=complete", "job/short", "--timeout=30s"]);
    assert_eq!(k.ok(&["logs", &short]), "done\n", "the output written meanwhile is kept");
    eventually(30, "the lost pod to fail", || {
        k.jsonpath("pod", &long, "{.status.phase}") == "Failed"
    });
    assert!(
        k.jsonpath("pod", &long, "{.status.containerStatuses[0].state.terminated.message}")
            .contains("keelson stopped")
    );
    eventually(30, "a second attempt", || pods_of_job(&k, "long").len() == 2);
}

#[test]
fn with_no_process_pods_a_job_fails_saying_why() {
    let k = Keelson::up_with(&["--no-process-pods", "--job-backoff", "100ms"]);
    k.apply("refused.yaml", &job("refused", "  backoffLimit: 0\n", "echo never"));
    k.ok(&["wait", "--for=condition=failed", "job/refused", "--timeout=60s"]);
    let pod = &pods_of_job(&k, "refused")[0];
    let message = k.jsonpath("pod", pod, "{.status.containerStatuses[0].state.terminated.message}");
    assert!(message.contains("--no-process-pods"), "{message}");
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

fn running_pods(k: &Keelson, selector: &str) -> Vec<String> {
    k.ok(&[
        "get",
        "pods",
        "-l",
        selector,
        "--field-selector=status.phase=Running",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.metadata.deletionTimestamp} {end}",
    ])
    .split_whitespace()
    .filter_map(|entry| entry.strip_suffix('=').map(str::to_owned))
    .collect()
}

#[test]
fn a_deployment_scales_and_rolls_to_a_new_image() {
    let k = Keelson::up_with(&FAST);
    k.apply("web.yaml", DEPLOYMENT);
    k.ok(&["scale", "deployment/web", "--replicas=3"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert_eq!(k.jsonpath("deployment", "web", "{.status.readyReplicas}"), "3");
    assert_eq!(running_pods(&k, "app=web").len(), 3);
    k.ok(&["scale", "deployment/web", "--replicas=1"]);
    eventually(30, "one pod left", || running_pods(&k, "app=web").len() == 1);
    eventually(30, "one replica available", || {
        k.jsonpath("deployment", "web", "{.status.availableReplicas}/{.status.replicas}") == "1/1"
    });
    k.ok(&["set", "image", "deployment/web", "web=nginx:1.28"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    eventually(30, "the old pod to go", || running_pods(&k, "app=web").len() == 1);
    let pod = &running_pods(&k, "app=web")[0];
    assert_eq!(k.jsonpath("pod", pod, "{.spec.containers[0].image}"), "nginx:1.28");
    let sets =
        k.ok(&["get", "replicasets", "-l", "app=web", "-o", "jsonpath={.items[*].spec.replicas}"]);
    let mut replicas: Vec<&str> = sets.split_whitespace().collect();
    replicas.sort();
    assert_eq!(replicas, ["0", "1"], "the old ReplicaSet is kept at zero for rollbacks");
    let logs = k.fails(&["logs", pod]);
    assert!(logs.contains("simulated"), "{logs}");
    let exec = k.fails(&["exec", pod, "--", "ls"]);
    assert!(exec.contains("BadRequest") && exec.contains("cannot exec into"), "{exec}");
    k.ok_showing(
        &["describe", "pod", pod],
        &[
            "Scheduled",
            "default-scheduler",
            "Created container: web",
            "Started container web",
            "kubelet",
        ],
    );

    // Each scaling step is an event of its own, from the controller upstream names.
    let described = k.ok_showing(
        &["describe", "deployment", "web"],
        &["to 1 from 3", "from 0 to 1", "to 0 from 1"],
    );
    assert!(described.matches("ScalingReplicaSet").count() >= 4, "{described}");
    assert!(described.contains("deployment-controller"), "{described}");
    // Events written through both APIs sort by their last time (kubectl needs the field there).
    let reasons = k.ok(&["get", "events", "--sort-by=.lastTimestamp", "-o", "name"]);
    assert!(reasons.lines().count() >= 8, "{reasons}");
}

#[test]
fn a_daemonset_lands_on_matching_nodes_and_follows_new_ones() {
    let k = Keelson::up_with(&[
        "--pod-ready-delay",
        "200ms",
        "--node",
        "ssd-1,label:disk=ssd",
        "--node",
        "hdd-1",
    ]);
    k.apply(
        "agent.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {app: agent}\n  template:\n    metadata:\n      labels: {app: agent}\n    spec:\n      nodeSelector: {disk: ssd}\n      containers:\n      - name: agent\n        image: agent:1\n",
    );
    let nodes_of_pods = || {
        let mut nodes: Vec<String> = k
            .ok(&["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.nodeName}"])
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        nodes.sort();
        nodes
    };
    eventually(30, "a pod on ssd-1", || nodes_of_pods() == ["ssd-1"]);
    k.apply(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: ssd-2\n  labels: {disk: ssd}\n",
    );
    eventually(30, "a pod on the new node", || nodes_of_pods() == ["ssd-1", "ssd-2"]);
    eventually(30, "both ready", || {
        k.jsonpath("daemonset", "agent", "{.status.desiredNumberScheduled}/{.status.numberReady}")
            == "2/2"
    });
    // The update strategy is defaulted, which kubectl rollout status needs.
    k.ok(&["rollout", "status", "daemonset/agent", "--timeout=30s"]);
    let history = k.ok(&["rollout", "history", "daemonset/agent"]);
    assert!(history.contains("\n1 "), "its template is revision 1:\n{history}");
    // kubectl compares the revision with the live template byte for byte, as Go encodes both.
    let undo = k.ok(&["rollout", "undo", "daemonset/agent", "--to-revision=1"]);
    assert!(
        undo.contains("skipped rollback (current template already matches revision 1)"),
        "{undo}"
    );
}

fn gpu_pod(name: &str) -> String {
    gpu_pod_of(name, None)
}

/// A pod asking for a GPU, of PriorityClass `class` if given.
fn gpu_pod_of(name: &str, class: Option<&str>) -> String {
    let class = class.map(|c| format!("  priorityClassName: {c}\n")).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{class}  containers:\n  - name: main\n    image: vllm/vllm-openai\n    resources:\n      limits: {{nvidia.com/gpu: 1}}\n"
    )
}

#[test]
fn a_pod_of_higher_priority_preempts_one_of_lower_priority() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["create", "priorityclass", "low", "--value=100"]);
    k.ok(&["create", "priorityclass", "high", "--value=1000"]);
    k.apply(
        "gpu-node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\nstatus:\n  capacity: {nvidia.com/gpu: \"1\"}\n",
    );
    k.apply("low.yaml", &gpu_pod_of("low", Some("low")));
    eventually(30, "low on gpu-1", || k.jsonpath("pod", "low", "{.spec.nodeName}") == "gpu-1");
    k.apply("same.yaml", &gpu_pod_of("same", Some("low")));
    k.apply("high.yaml", &gpu_pod_of("high", Some("high")));
    let high = k.jsonpath("pod", "high", "{.metadata.uid}");
    eventually(60, "high on gpu-1", || k.jsonpath("pod", "high", "{.spec.nodeName}") == "gpu-1");
    eventually(30, "low gone", || !k.kubectl(&["get", "pod", "low"]).status.success());
    let events = k.ok(&["get", "events", "--field-selector=reason=Preempted"]);
    assert!(events.contains(&format!("Preempted by pod {high} on node gpu-1")), "{events}");
    // A pod of the same priority as the one on the GPU waits rather than preempting it.
    assert_eq!(k.jsonpath("pod", "same", "{.spec.nodeName}"), "");
}

#[test]
fn a_gpu_pod_waits_for_a_gpu_node_and_gpus_are_never_over_committed() {
    let k = Keelson::up_with(&FAST);
    k.apply("gpu-a.yaml", &gpu_pod("gpu-a"));
    eventually(30, "gpu-a to be unschedulable", || {
        k.jsonpath("pod", "gpu-a", "{.status.conditions[?(@.type==\"PodScheduled\")].reason}")
            == "Unschedulable"
    });
    eventually(30, "a FailedScheduling event saying why", || {
        let events = k.ok(&["get", "events", "--field-selector=involvedObject.name=gpu-a"]);
        events.contains("FailedScheduling") && events.contains("Insufficient nvidia.com/gpu")
    });
    assert_eq!(k.jsonpath("pod", "gpu-a", "{.status.phase}"), "Pending");
    k.apply(
        "gpu-node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\nstatus:\n  capacity: {nvidia.com/gpu: \"1\"}\n",
    );
    eventually(30, "gpu-a on gpu-1", || k.jsonpath("pod", "gpu-a", "{.spec.nodeName}") == "gpu-1");
    k.apply("gpu-b.yaml", &gpu_pod("gpu-b"));
    eventually(30, "gpu-b to be unschedulable", || {
        k.jsonpath("pod", "gpu-b", "{.status.conditions[?(@.type==\"PodScheduled\")].reason}")
            == "Unschedulable"
    });
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(k.jsonpath("pod", "gpu-b", "{.spec.nodeName}"), "", "one GPU, one pod");
}

#[test]
fn a_gated_pod_waits_until_its_gates_are_removed() {
    let k = Keelson::up_with(&FAST);
    k.apply(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\nspec:\n  schedulingGates:\n  - name: example.com/approval\n  containers:\n  - name: main\n    image: nginx\n",
    );
    let table = k.ok(&["get", "pod", "gated"]);
    assert!(table.contains("SchedulingGated"), "{table}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(k.jsonpath("pod", "gated", "{.spec.nodeName}"), "", "not scheduled while gated");
    // Gates may only be removed.
    let refused = k.fails(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p=[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\",\"value\":{\"name\":\"more\"}}]",
    ]);
    assert!(refused.contains("only deletion is allowed"), "{refused}");
    k.ok(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p=[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]",
    ]);
    eventually(30, "the pod to be scheduled", || {
        k.jsonpath("pod", "gated", "{.status.conditions[?(@.type==\"PodScheduled\")].status}")
            == "True"
            && !k.jsonpath("pod", "gated", "{.spec.nodeName}").is_empty()
    });
}

#[test]
fn the_pods_of_a_deleted_node_are_collected() {
    let mut args = FAST.to_vec();
    args.extend(["--node", "stays", "--node", "goes", "--missing-node-grace", "1s"]);
    let k = Keelson::up_with(&args);
    let pod = |name: &str, node: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n  containers:\n  - name: main\n    image: nginx\n"
        )
    };
    k.apply("on-stays.yaml", &pod("on-stays", "stays"));
    k.apply("on-goes.yaml", &pod("on-goes", "goes"));
    eventually(30, "both pods running", || {
        k.ok(&["get", "pods", "-o", "jsonpath={.items[*].status.phase}"]) == "Running Running"
    });
    k.ok(&["delete", "node", "goes"]);
    eventually(30, "the pod of the deleted node to be collected", || {
        k.ok(&["get", "pods", "-o", "name"]).trim() == "pod/on-stays"
    });
}

#[test]
fn replicas_with_anti_affinity_take_a_node_each_and_spread_over_zones() {
    let k = Keelson::up_with(&[
        "--pod-ready-delay",
        "200ms",
        "--node",
        "a,label:topology.kubernetes.io/zone=x",
        "--node",
        "b,label:topology.kubernetes.io/zone=y",
    ]);
    k.apply(
        "apart.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: apart\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: apart}\n  template:\n    metadata:\n      labels: {app: apart}\n    spec:\n      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector:\n              matchLabels: {app: apart}\n            topologyKey: kubernetes.io/hostname\n      containers:\n      - name: web\n        image: nginx\n",
    );
    let nodes_of = |app: &str| {
        let selector = format!("app={app}");
        let nodes =
            k.ok(&["get", "pods", "-l", &selector, "-o", "jsonpath={.items[*].spec.nodeName}"]);
        let mut nodes: Vec<String> = nodes.split_whitespace().map(str::to_owned).collect();
        nodes.sort();
        nodes
    };
    eventually(30, "a replica on each node", || nodes_of("apart") == ["a", "b"]);
    k.ok_showing(
        &["get", "events", "--field-selector=reason=FailedScheduling"],
        &["0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."],
    );
    k.apply(
        "node-c.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: c\n  labels: {kubernetes.io/hostname: c, topology.kubernetes.io/zone: x}\n",
    );
    eventually(30, "the third replica on the new node", || nodes_of("apart") == ["a", "b", "c"]);
    k.ok(&["rollout", "status", "deployment/apart", "--timeout=30s"]);

    // Zone x now has two nodes; spreading over zones still puts two pods in each.
    k.apply(
        "even.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: even\nspec:\n  replicas: 4\n  selector:\n    matchLabels: {app: even}\n  template:\n    metadata:\n      labels: {app: even}\n    spec:\n      topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector:\n          matchLabels: {app: even}\n      containers:\n      - name: web\n        image: nginx\n",
    );
    eventually(30, "four replicas placed", || nodes_of("even").len() == 4);
    let in_y = nodes_of("even").iter().filter(|node| *node == "b").count();
    assert_eq!(in_y, 2, "{:?}", nodes_of("even"));
}

#[test]
fn a_process_gets_its_env_and_a_working_directory_and_a_missing_executable_fails_clearly() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["create", "configmap", "settings", "--from-literal=colour=blue"]);
    k.ok(&["create", "secret", "generic", "token", "--from-literal=value=s3cret"]);
    k.apply(
        "env.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: env\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [sh, -c, 'echo $GREETING $COLOUR $TOKEN $MY_NAME; pwd']\n        env:\n        - {name: GREETING, value: hello}\n        - name: COLOUR\n          valueFrom: {configMapKeyRef: {name: settings, key: colour}}\n        - name: TOKEN\n          valueFrom: {secretKeyRef: {name: token, key: value}}\n        - name: MY_NAME\n          valueFrom: {fieldRef: {fieldPath: metadata.name}}\n",
    );
    k.ok(&["wait", "--for=condition=complete", "job/env", "--timeout=60s"]);
    let pod = &pods_of_job(&k, "env")[0];
    let logs = k.ok(&["logs", pod]);
    let mut lines = logs.lines();
    assert_eq!(lines.next(), Some(format!("hello blue s3cret {pod}").as_str()));
    let data_dir = std::fs::canonicalize(k.data_dir()).unwrap();
    assert!(lines.next().unwrap().starts_with(&data_dir.join("pods").display().to_string()));
    assert_eq!(k.ok(&["logs", pod, "--tail=1"]).lines().count(), 1);
    let stamped = k.ok(&["logs", pod, "--timestamps"]);
    assert!(
        stamped.lines().all(|l| l.split(' ').next().is_some_and(|t| t.ends_with('Z'))),
        "{stamped}"
    );

    k.apply(
        "missing.yaml",
        &job("missing", "  backoffLimit: 0\n", "unused")
            .replace("command: [sh, -c, \"unused\"]", "command: [no-such-program-here]"),
    );
    k.ok(&["wait", "--for=condition=failed", "job/missing", "--timeout=60s"]);
    let pod = &pods_of_job(&k, "missing")[0];
    let terminated = k.jsonpath(
        "pod",
        pod,
        "{.status.containerStatuses[0].state.terminated.reason} {.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.message}",
    );
    assert!(terminated.starts_with("ContainerCannotRun 127 "), "{terminated}");
    assert!(
        terminated.contains("no-such-program-here") && terminated.contains("not found"),
        "{terminated}"
    );

    k.apply(
        "bare.yaml",
        &job("bare", "  backoffLimit: 0\n", "unused")
            .replace("command: [sh, -c, \"unused\"]", "args: []"),
    );
    k.ok(&["wait", "--for=condition=failed", "job/bare", "--timeout=60s"]);
    let pod = &pods_of_job(&k, "bare")[0];
    let message = k.jsonpath("pod", pod, "{.status.containerStatuses[0].state.terminated.message}");
    assert!(message.contains("has no command"), "{message}");
    assert!(k.ok(&["logs", pod]).contains("has no command"));
}

#[test]
fn nodes_are_ready_with_leases_simulated_pods_honour_readiness_gates_and_claims_bind() {
    let k = Keelson::up_with(&[&FAST[..], &["--pod-stop-delay", "3s"]].concat());
    let node = || k.ok(&["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"]);
    eventually(30, "the node to register", || !node().is_empty());
    let node = node();
    k.ok(&["wait", "--for=condition=Ready", &format!("node/{node}"), "--timeout=30s"]);
    eventually(30, "the node's lease", || {
        k.kubectl(&["get", "lease", &node, "-n", "kube-node-lease"]).status.success()
    });
    k.apply(
        "gated.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gated\nspec:\n  readinessGates:\n  - conditionType: example.com/ready\n  containers:\n  - name: main\n    image: nginx\n",
    );
    eventually(30, "the pod to run", || k.jsonpath("pod", "gated", "{.status.phase}") == "Running");
    let ready = || k.jsonpath("pod", "gated", "{.status.conditions[?(@.type==\"Ready\")].status}");
    assert_eq!(ready(), "False", "the gate is not yet true");
    k.ok(&[
        "patch",
        "pod",
        "gated",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/status/conditions/-","value":{"type":"example.com/ready","status":"True"}}]"#,
    ]);
    eventually(30, "the pod to be ready", || ready() == "True");
    // Pods carry upstream's defaults, which kubectl reads unchecked: `kubectl debug`'s
    // profiles read the pod's securityContext.
    assert_eq!(k.jsonpath("pod", "gated", "{.spec.securityContext}"), "{}");
    let debugged = k.ok(&["debug", "gated", "--image=busybox", "--profile=general"]);
    assert!(debugged.contains("Defaulting debug container name"), "{debugged}");
    // Deleted, it is Terminating while its containers stop, then it goes.
    k.ok(&["delete", "pod", "gated", "--wait=false"]);
    let listed = k.ok(&["get", "pod", "gated"]);
    assert!(listed.contains("Terminating"), "{listed}");
    k.ok(&["wait", "--for=delete", "pod/gated", "--timeout=30s"]);

    k.apply(
        "claim.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 1Gi}\n",
    );
    eventually(30, "the claim to bind", || k.jsonpath("pvc", "data", "{.status.phase}") == "Bound");
    assert_eq!(k.jsonpath("pvc", "data", "{.status.capacity.storage}"), "1Gi");
    // Its volume was provisioned for it, and goes with it.
    let volume = k.jsonpath("pvc", "data", "{.spec.volumeName}");
    let listed = k.ok(&["get", "pv", &volume]);
    assert!(listed.contains("Delete") && listed.contains("default/data"), "{listed}");
    eventually(30, "the volume to be bound", || {
        k.jsonpath("pv", &volume, "{.status.phase}") == "Bound"
    });

    // A volume made by hand is Available, bound by the claim naming it, Released after it.
    k.apply(
        "manual.yaml",
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: manual\nspec:\n  capacity: {storage: 2Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /srv/manual}\n",
    );
    eventually(30, "the volume to be available", || {
        k.jsonpath("pv", "manual", "{.status.phase}") == "Available"
    });
    k.apply(
        "static.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: static\nspec:\n  volumeName: manual\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 1Gi}\n",
    );
    eventually(30, "the claim to take it", || {
        k.jsonpath("pv", "manual", "{.status.phase}/{.spec.claimRef.name}") == "Bound/static"
    });
    assert_eq!(k.jsonpath("pvc", "static", "{.status.capacity.storage}"), "2Gi");
    k.ok(&["delete", "pvc", "data", "static"]);
    eventually(30, "the provisioned volume to go", || {
        k.kubectl(&["get", "pv", &volume]).status.code() == Some(1)
    });
    eventually(30, "the kept volume to be released", || {
        k.jsonpath("pv", "manual", "{.status.phase}") == "Released"
    });
}

const STATEFUL_SET: &str = "apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 3
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:16
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
";

#[test]
fn a_statefulset_makes_ordered_pods_with_claims_and_rolls_from_the_top() {
    let k = Keelson::up_with(&FAST);
    k.apply("db.yaml", STATEFUL_SET);
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    assert_eq!(running_pods(&k, "app=db"), ["db-0", "db-1", "db-2"]);
    assert_eq!(k.jsonpath("pod", "db-1", "{.spec.hostname}.{.spec.subdomain}"), "db-1.db");
    let claims = k.ok(&["get", "pvc", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(claims, "data-db-0 data-db-1 data-db-2");
    assert_eq!(
        k.jsonpath(
            "pod",
            "db-2",
            "{.spec.volumes[?(@.name==\"data\")].persistentVolumeClaim.claimName}"
        ),
        "data-db-2"
    );
    // The headless Service's Endpoints list the pods, each with its hostname.
    eventually(30, "three ready endpoints", || {
        // Listed by address, as upstream lists them: compared in name order.
        let hosts = k.jsonpath("endpoints", "db", "{.subsets[0].addresses[*].hostname}");
        let mut hosts: Vec<&str> = hosts.split_whitespace().collect();
        hosts.sort();
        hosts == ["db-0", "db-1", "db-2"]
    });
    assert_eq!(k.jsonpath("endpoints", "db", "{.subsets[0].ports[0].port}"), "5432");
    let pod_ip = k.jsonpath("pod", "db-0", "{.status.podIP}");
    assert!(k.ok(&["describe", "service", "db"]).contains(&format!("{pod_ip}:5432")));
    // Pods came up one at a time, lowest ordinal first.
    let started = |pod: &str| k.jsonpath("pod", pod, "{.metadata.creationTimestamp}");
    assert!(started("db-0") <= started("db-1") && started("db-1") <= started("db-2"));

    k.ok(&["set", "image", "statefulset/db", "db=postgres:17"]);
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    for pod in ["db-0", "db-1", "db-2"] {
        assert_eq!(k.jsonpath("pod", pod, "{.spec.containers[0].image}"), "postgres:17");
    }
    assert_eq!(
        k.jsonpath("statefulset", "db", "{.status.currentRevision}"),
        k.jsonpath("statefulset", "db", "{.status.updateRevision}")
    );
    // Each template is a ControllerRevision: history lists them, undo rolls one back.
    let history = k.ok(&["rollout", "history", "statefulset/db"]);
    assert!(history.contains("\n1 ") && history.contains("\n2 "), "{history}");
    k.ok(&["rollout", "undo", "statefulset/db"]);
    k.ok(&["rollout", "status", "statefulset/db", "--timeout=60s"]);
    for pod in ["db-0", "db-1", "db-2"] {
        assert_eq!(k.jsonpath("pod", pod, "{.spec.containers[0].image}"), "postgres:16");
    }
    let history = k.ok(&["rollout", "history", "statefulset/db"]);
    assert!(
        history.contains("\n2 ") && history.contains("\n3 ") && !history.contains("\n1 "),
        "{history}"
    );
    k.ok_showing(
        &["describe", "statefulset", "db"],
        &[
            "create Claim data-db-0 Pod db-0 in StatefulSet db success",
            "delete Pod db-2 in StatefulSet db successful",
        ],
    );

    // A canary: with a partition of 2 only db-2 moves, and db-0, deleted by hand, comes back
    // at the current revision.
    let partition = r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}"#;
    k.ok(&["patch", "statefulset", "db", "-p", partition]);
    k.ok(&["set", "image", "statefulset/db", "db=postgres:18"]);
    let image = |pod: &str| k.jsonpath("pod", pod, "{.spec.containers[0].image}");
    // While the set replaces it, db-2 is stopping, then gone for a moment.
    eventually(60, "db-2 at the new image", || {
        let get = ["get", "pod", "db-2", "-o", "jsonpath={.spec.containers[0].image}"];
        k.kubectl(&get).stdout == b"postgres:18"
    });
    // kubectl's wait reads the pod, then lists it, and waits for its deletion: it ends only
    // because the simulated pod takes a moment to stop (`--pod-stop-delay`), as a real one
    // does, so the set cannot recreate `db-0` between the read and the list.
    k.ok(&["delete", "pod", "db-0", "--timeout=60s"]);
    eventually(60, "db-0 back", || running_pods(&k, "app=db").contains(&"db-0".to_owned()));
    assert_eq!(image("db-0"), "postgres:16");
    assert_eq!(image("db-1"), "postgres:16");

    k.ok(&["scale", "statefulset/db", "--replicas=1"]);
    eventually(30, "only db-0 left", || running_pods(&k, "app=db") == ["db-0"]);
    eventually(30, "one endpoint left", || {
        k.jsonpath("endpoints", "db", "{.subsets[*].addresses[*].hostname}") == "db-0"
    });
    let claims = k.ok(&["get", "pvc", "-o", "jsonpath={.items[*].metadata.name}"]);
    assert_eq!(claims, "data-db-0 data-db-1 data-db-2", "claims outlive the pods");

    // Under `whenScaled: Delete`, the claims of the pods a scale-down removes go with them.
    let policy = r#"{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"}}}"#;
    k.ok(&["patch", "statefulset", "db", "-p", policy]);
    k.ok(&["scale", "statefulset/db", "--replicas=0"]);
    eventually(30, "data-db-0 gone with db-0", || {
        k.ok(&["get", "pvc", "-o", "jsonpath={.items[*].metadata.name}"]) == "data-db-1 data-db-2"
    });
}

#[test]
fn a_replication_controller_keeps_its_replicas() {
    let k = Keelson::up_with(&FAST);
    k.apply(
        "rc.yaml",
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: old\nspec:\n  replicas: 2\n  template:\n    metadata:\n      labels: {app: old}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
    );
    eventually(30, "two pods", || running_pods(&k, "app=old").len() == 2);
    assert_eq!(k.jsonpath("rc", "old", "{.spec.selector.app}"), "old", "the selector is defaulted");
    let victim = running_pods(&k, "app=old")[0].clone();
    k.ok(&["delete", "pod", &victim]);
    eventually(30, "a replacement", || {
        let pods = running_pods(&k, "app=old");
        pods.len() == 2 && !pods.contains(&victim)
    });
    k.ok(&["scale", "rc/old", "--replicas=1"]);
    eventually(30, "one pod", || running_pods(&k, "app=old").len() == 1);
    eventually(30, "the status to follow", || {
        k.jsonpath("rc", "old", "{.status.replicas}/{.status.readyReplicas}") == "1/1"
    });
    k.ok_showing(&["describe", "rc", "old"], &["replication-controller"]);
}

#[test]
fn a_cronjob_runs_its_latest_missed_time_on_resume_and_jobs_can_be_made_from_it() {
    let k = Keelson::up_with(&FAST);
    k.apply(
        "tick.yaml",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: tick\nspec:\n  schedule: '*/5 * * * *'\n  suspend: true\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: tick\n            image: busybox\n            command: [sh, -c, 'echo tick']\n",
    );
    // Suspended for the last quarter of an hour: resuming runs the latest time it missed.
    let long_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(15);
    let status = format!(
        "{{\"status\":{{\"lastScheduleTime\":\"{}\"}}}}",
        long_ago.strftime("%Y-%m-%dT%H:%M:%SZ")
    );
    k.ok(&["patch", "cronjob", "tick", "--subresource=status", "--type=merge", "-p", &status]);
    k.ok(&["patch", "cronjob", "tick", "-p", "{\"spec\":{\"suspend\":false}}"]);
    let jobs = || {
        k.ok(&["get", "jobs", "-o", "jsonpath={.items[*].metadata.name}"])
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    eventually(30, "one job for the latest missed time", || jobs().len() == 1);
    let job = jobs().remove(0);
    let minutes: i64 = job.strip_prefix("tick-").unwrap().parse().unwrap();
    assert_eq!(minutes % 5, 0, "{job} is named after a scheduled minute");
    k.ok(&["wait", "--for=condition=Complete", &format!("job/{job}"), "--timeout=30s"]);
    assert_eq!(k.ok(&["logs", &format!("job/{job}")]).trim(), "tick");
    eventually(30, "the last schedule to move", || {
        k.jsonpath("cronjob", "tick", "{.status.lastScheduleTime}")
            .parse::<jiff::Timestamp>()
            .is_ok_and(|t| t.as_second() == minutes * 60)
    });
    k.ok_showing(&["describe", "cronjob", "tick"], &[&format!("Created job {job}")]);

    // kubectl's typed client sends the Job it builds from the CronJob's template in protobuf.
    k.ok(&["create", "job", "by-hand", "--from=cronjob/tick"]);
    k.ok(&["wait", "--for=condition=Complete", "job/by-hand", "--timeout=30s"]);
    assert_eq!(k.jsonpath("job", "by-hand", "{.metadata.ownerReferences[0].name}"), "tick");
    assert_eq!(
        k.jsonpath("job", "by-hand", "{.status.active}"),
        "",
        "a finished Job has none active"
    );
}

#[test]
fn kubectl_drain_evicts_pods_only_as_far_as_their_disruption_budget_allows() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    k.ok(&["create", "pdb", "web", "--selector=app=web", "--min-available=1"]);
    let budget =
        || k.jsonpath("pdb", "web", "{.status.currentHealthy}/{.status.disruptionsAllowed}");
    eventually(30, "the budget to count both pods", || budget() == "2/1");
    let listed = k.ok(&["get", "pdb", "web"]);
    assert!(listed.contains("ALLOWED DISRUPTIONS"), "{listed}");

    // The only node is cordoned, so an evicted pod's replacement waits: the first eviction
    // spends the budget's one disruption and the second is refused until drain gives up.
    let node = k.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    let refused = k.fails(&["drain", &node, "--timeout=8s"]);
    assert!(
        refused.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{refused}"
    );
    assert_eq!(running_pods(&k, "app=web").len(), 1, "one pod was evicted, one kept");
    eventually(30, "the budget to count one healthy pod", || budget() == "1/0");

    // Uncordoned, the replacement runs and the budget has room again.
    k.ok(&["uncordon", &node]);
    eventually(60, "both pods to run again", || running_pods(&k, "app=web").len() == 2);
    eventually(30, "the budget to allow a disruption again", || budget() == "2/1");
}

#[test]
fn kubectl_taint_no_execute_evicts_pods_that_do_not_tolerate_it() {
    let k = Keelson::up_with(&FAST);
    k.ok(&["run", "plain", "--image=nginx"]);
    let tolerant = r#"{"spec": {"tolerations": [{"key": "maintenance", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 2}]}}"#;
    k.ok(&["run", "patient", "--image=nginx", "--overrides", tolerant]);
    eventually(30, "both pods to run", || running_pods(&k, "run").len() == 2);
    let node = k.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    let tainted = Instant::now();
    k.ok(&["taint", "nodes", &node, "maintenance=now:NoExecute"]);
    eventually(10, "the pod without a toleration to go", || {
        k.kubectl(&["get", "pod", "plain"]).status.code() == Some(1)
    });
    let marked = || !k.jsonpath("pod", "patient", "{.metadata.deletionTimestamp}").is_empty();
    eventually(15, "the tolerant pod to be evicted", marked);
    assert!(tainted.elapsed() >= Duration::from_secs(2), "not before its two seconds");
    let events = k.ok(&["get", "events", "--field-selector", "reason=TaintManagerEviction"]);
    assert!(events.contains("Marking for deletion Pod default/plain"), "{events}");
}

const AUTOSCALER: &str = "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
";

#[test]
fn an_autoscaler_scales_its_deployment_on_what_the_pods_use() {
    let k = Keelson::up_with(&FAST);
    let requesting = "        resources:\n          requests: {cpu: 100m}\n";
    let deployment = DEPLOYMENT.replace("replicas: 0", "replicas: 3") + requesting;
    k.apply("web.yaml", &deployment);
    k.apply("autoscaler.yaml", AUTOSCALER);
    // Simulated pods use no CPU: the autoscaler reads 0 % of their requests and scales down to
    // its minimum at once (its scale-down window is zero).
    eventually(60, "the deployment to be scaled down", || {
        k.jsonpath("deployment", "web", "{.spec.replicas}") == "1"
    });
    let status = |path: &str| k.jsonpath("hpa", "web", path);
    eventually(30, "the status to say so", || status("{.status.desiredReplicas}") == "1");
    assert_eq!(status("{.status.currentMetrics[0].resource.current.averageUtilization}"), "0");
    assert_eq!(
        status("{.status.conditions[?(@.type==\"ScalingActive\")].reason}"),
        "ValidMetricFound"
    );
    assert_eq!(
        status("{.status.conditions[?(@.type==\"ScalingLimited\")].reason}"),
        "TooFewReplicas"
    );
    // The behavior it set is completed with upstream's defaults, which the autoscaler follows.
    let up = status("{.spec.behavior.scaleUp.policies[*].type}");
    assert_eq!(up, "Pods Percent");
    assert_eq!(status("{.spec.behavior.scaleDown.selectPolicy}"), "Max");
    let listed = k.ok(&["get", "hpa", "web"]);
    assert!(listed.contains("cpu: 0%/50%"), "{listed}");
    k.ok_showing(&["describe", "hpa", "web"], &["New size: 1; reason: All metrics below target"]);
}
