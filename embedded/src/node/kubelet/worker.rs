//! One pod on the local node, from binding to deletion: its containers run as local processes
//! (Job pods and pods annotated `keelson.dev/run-as-process: "true"`) or are simulated, its
//! status is reported, and it is stopped gracefully when deleted or past its deadline.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerStateRunning, ContainerStatus, EventSource, Pod, PodSpec, PodStatus,
};
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::backoff::CrashLoop;
use super::probe::{Finding, Kind, Probes};
use super::status::{self, Ended, Observed};
use super::{env, ephemeral, service_account};
use crate::node::events::{EventLog, EventNote};
use crate::node::pod_status;
use crate::node::pods::{is_terminal, node_name};
use crate::node::runtime::attach::Console;
use crate::node::runtime::logs;
use crate::node::runtime::process::{self, Adopted, ProcessSpec, Terminator};
use crate::server::pod_log::{PROCESS_SCHEME, SIMULATED_SCHEME};

/// The annotation that makes any pod run its containers as local processes (`"true"`), or a
/// Job's pod be simulated (`"false"`).
pub const RUN_AS_PROCESS: &str = "keelson.dev/run-as-process";

/// How often a status report is tried when the API fails.
const REPORT_ATTEMPTS: usize = 8;

/// What every pod worker shares.
pub struct Shared {
    /// Client of the API server.
    pub client: Client,
    /// Where pod directories live (`<data dir>`).
    pub data_dir: PathBuf,
    /// Whether Job pods may run as processes (`--no-process-pods` turns it off).
    pub process_pods: bool,
    /// How long a simulated pod takes to become ready.
    pub ready_delay: Duration,
    /// How long a simulated pod's containers take to stop once it is deleted (at most its
    /// grace period).
    pub stop_delay: Duration,
    /// The executable process pods run under, if any (see [`process::ProcessSpec::supervisor`]).
    pub supervisor: Option<PathBuf>,
    /// How process pods reach the API server, if they are given credentials.
    pub api: Option<service_account::ApiAccess>,
    /// Records the pods' events, as the kubelet of their node.
    pub events: EventLog,
    /// The addresses of the simulated pods.
    pub ips: super::pod_ips::PodIps,
    /// Becomes true when the node shuts down.
    pub shutdown: watch::Receiver<bool>,
}

/// The latest state of the pod; `None` once it is gone.
pub type Updates = watch::Receiver<Option<Arc<Pod>>>;

/// Runs the pod until it is gone or the node shuts down.
pub async fn run(shared: Arc<Shared>, mut updates: Updates) {
    let Some(pod) = updates.borrow_and_update().clone() else { return };
    let api: Api<Pod> =
        Api::namespaced(shared.client.clone(), &pod.namespace().unwrap_or_default());
    let mut worker = Worker { shared: shared.clone(), api, pod: pod.clone(), updates };
    let deleting = pod.metadata.deletion_timestamp.is_some();
    tracing::debug!(pod = %pod.name_any(), deleting, "pod worker started");
    let result = if deleting {
        // Deleted while no worker ran it (a restart, or an earlier worker that failed to finish
        // the deletion): nothing of it runs here, so it can go.
        remove_dir(&worker.pod_dir()).await;
        worker.finish_deletion().await
    } else if !runs_as_process(&pod) {
        worker.simulate().await
    } else if shared.process_pods {
        worker.run_processes().await
    } else {
        worker.refuse().await
    };
    match result {
        Ok(()) => tracing::debug!(pod = %pod.name_any(), "pod worker ended"),
        Err(error) => {
            tracing::warn!(pod = %pod.name_any(), %error, "the local node lost track of a pod")
        }
    }
    shared.ips.release(&pod.uid().unwrap_or_default());
}

/// Whether the pod's containers run as local processes: a Job's pods do, unless annotated
/// `keelson.dev/run-as-process: "false"`; any pod annotated `"true"` does.
pub fn runs_as_process(pod: &Pod) -> bool {
    let owned_by_job = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == "Job" && r.api_version.starts_with("batch/"));
    match pod.annotations().get(RUN_AS_PROCESS).map(String::as_str) {
        Some("true") => true,
        Some("false") => false,
        _ => owned_by_job,
    }
}

/// What wakes a waiting worker.
enum Wake {
    /// The pod changed (still there, not deleting).
    Changed,
    /// The pod is being deleted (graceful).
    Deleting,
    /// The pod is gone.
    Gone,
    /// The node is shutting down.
    Shutdown,
}

struct Worker {
    shared: Arc<Shared>,
    api: Api<Pod>,
    pod: Arc<Pod>,
    updates: Updates,
}

impl Worker {
    fn name(&self) -> String {
        self.pod.name_any()
    }

    fn uid(&self) -> String {
        self.pod.uid().unwrap_or_default()
    }

    /// Where the pod's working directory, logs and pid files are.
    fn pod_dir(&self) -> PathBuf {
        let namespace = self.pod.namespace().unwrap_or_default();
        logs::pod_dir(&self.shared.data_dir, &namespace, &self.name(), &self.uid())
    }

    /// The pod as upstream's kubelet names it in messages: `<name>_<namespace>(<uid>)`.
    fn full_name(&self) -> String {
        format!("{}_{}({})", self.name(), self.pod.namespace().unwrap_or_default(), self.uid())
    }

    /// Records an event about container `name` of the spec's `list`, which events name as
    /// `spec.containers{web}`.
    fn record(&self, list: &str, name: &str, note: EventNote) {
        self.record_at(Some(format!("spec.{list}{{{name}}}")), note);
    }

    /// Records an event about the pod, or about a part of it (`field`, such as
    /// `spec.containers{web}`), as the kubelet of the pod's node.
    fn record_at(&self, field: Option<String>, note: EventNote) {
        let mut object = self.pod.object_ref(&());
        object.field_path = field;
        let source = EventSource {
            component: Some("kubelet".to_owned()),
            host: node_name(&self.pod).map(str::to_owned),
        };
        self.shared.events.record(&source, &object, &note);
    }

    /// Records that container `name`, of the spec's `list`, is being stopped.
    fn record_stopping(&self, list: &str, name: &str) {
        let stopping = EventNote::normal("Killing", format!("Stopping container {name}"));
        self.record(list, name, stopping);
    }

    /// Waits for the next change of the pod or the node.
    async fn wake(&mut self) -> Wake {
        let mut shutdown = self.shared.shutdown.clone();
        if *shutdown.borrow() {
            return Wake::Shutdown;
        }
        tokio::select! {
            changed = self.updates.changed() => {
                let latest = if changed.is_ok() { self.updates.borrow_and_update().clone() } else { None };
                match latest {
                    None => Wake::Gone,
                    Some(pod) => {
                        let deleting = pod.metadata.deletion_timestamp.is_some();
                        self.pod = pod;
                        if deleting { Wake::Deleting } else { Wake::Changed }
                    }
                }
            }
            _ = shutdown.wait_for(|stop| *stop) => Wake::Shutdown,
        }
    }

    /// Writes the status the node observed, keeping conditions written by others (readiness
    /// gates). Failures are logged and retried a few times, not fatal: the next change reports
    /// again.
    async fn report(&self, observed: &Observed) {
        let name = self.name();
        let render = |current: &Pod| {
            let rendered = status::render(current, observed, Timestamp::now());
            (current.status.as_ref() != Some(&rendered)).then(|| json!(rendered))
        };
        for _ in 0..REPORT_ATTEMPTS {
            match pod_status::update(&self.api, &name, self.pod.uid().as_deref(), render).await {
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(pod = %name, %error, "reporting a pod's status failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Removes the pod for good once its containers stopped (a grace period of 0, only this
    /// incarnation of it). A failed call is tried again a few times, as a status report is:
    /// nothing else would remove the pod until it changes again.
    async fn finish_deletion(&self) -> Result<(), kube::Error> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: self.pod.uid(), resource_version: None }),
            ..DeleteParams::default()
        };
        let name = self.name();
        for attempt in 1.. {
            match self.api.delete(&name, &params).await {
                Ok(_) => break,
                // Gone already, or another pod of that name now.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => break,
                Err(error) if attempt < REPORT_ATTEMPTS => {
                    tracing::warn!(pod = %name, %error, "removing a deleted pod failed");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error),
            }
        }
        tracing::debug!(pod = %name, "deleted pod removed");
        Ok(())
    }

    /// Keeps reporting (readiness gates can change) until the pod goes. Nothing of it runs any
    /// more, unless it is a running simulated pod.
    async fn until_deleted(&mut self, observed: &Observed) -> Result<(), kube::Error> {
        let mut observed = observed.clone();
        loop {
            match self.wake().await {
                Wake::Changed => {
                    // A running simulated pod runs the ephemeral containers added to it, and
                    // restarts a container whose image changed.
                    if !runs_as_process(&self.pod) && observed.phase == Some("Running") {
                        let uid = self.uid();
                        let id = |name: &str| format!("{SIMULATED_SCHEME}{uid}/{name}");
                        observed.ephemeral = ephemeral::simulated(&self.pod, id, Timestamp::now());
                        self.restart_changed(&mut observed.containers, id);
                    }
                    self.report(&observed).await;
                }
                Wake::Deleting if !runs_as_process(&self.pod) && !is_terminal(&self.pod) => {
                    let apps = observed.containers.iter().map(|s| (CONTAINERS, s));
                    let debuggers = observed.ephemeral.iter().map(|s| (EPHEMERAL_CONTAINERS, s));
                    let running = apps.chain(debuggers).filter(|(_, s)| {
                        s.state.as_ref().is_some_and(|state| state.running.is_some())
                    });
                    for (list, status) in running {
                        self.record_stopping(list, &status.name);
                    }
                    return self.stop_simulated(&observed).await;
                }
                Wake::Deleting => return self.finish_deletion().await,
                Wake::Gone | Wake::Shutdown => return Ok(()),
            }
        }
    }

    /// A simulated pod being deleted, which `observed` shows: its containers take the stop delay
    /// to stop, as real ones take a moment to exit, then it reports them stopped and goes. Going
    /// at once would let a controller replace it under the same name (a StatefulSet's) between
    /// two reads of a client waiting for it to go, and `kubectl delete` would then wait for ever.
    async fn stop_simulated(&mut self, observed: &Observed) -> Result<(), kube::Error> {
        let asked = Instant::now();
        loop {
            let grace = grace_period(&self.pod);
            let stopped_at = asked + self.shared.stop_delay.min(grace);
            tokio::select! {
                _ = tokio::time::sleep_until(stopped_at) => {
                    let ended = simulated_stop(observed, self.shared.stop_delay > grace, Timestamp::now());
                    self.report(&status::stopped_for_deletion(&self.pod, &ended)).await;
                    return self.finish_deletion().await;
                }
                wake = self.wake() => match wake {
                    // A second delete may shorten the grace period.
                    Wake::Changed | Wake::Deleting => {}
                    Wake::Gone | Wake::Shutdown => return Ok(()),
                },
            }
        }
    }

    /// A simulated pod: after the ready delay its containers are running and ready.
    async fn simulate(&mut self) -> Result<(), kube::Error> {
        let spec = self.pod.spec.clone().unwrap_or_default();
        let uid = self.uid();
        let id = |name: &str| format!("{SIMULATED_SCHEME}{uid}/{name}");
        let already = self.pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        let running_before = already.is_some_and(|statuses| {
            !statuses.is_empty()
                && statuses.iter().all(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()))
        });
        let now = Timestamp::now();
        let shown_ip = self.pod.status.as_ref().and_then(|s| s.pod_ip.as_deref());
        let mut observed = Observed {
            start_time: Some(
                self.pod.status.as_ref().and_then(|s| s.start_time.clone()).map_or(now, |t| t.0),
            ),
            pod_ip: Some(self.shared.ips.assign(&uid, shown_ip)),
            ..Observed::default()
        };
        let starts = !running_before && !is_terminal(&self.pod);
        if starts {
            observed.phase = Some("Pending");
            observed.containers = spec
                .containers
                .iter()
                .map(|c| status::waiting(&c.name, "ContainerCreating", None, &initial(c)))
                .collect();
            self.report(&observed).await;
            let ready_at = Instant::now() + self.shared.ready_delay;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(ready_at) => break,
                    wake = self.wake() => match wake {
                        Wake::Changed => {}
                        Wake::Deleting => return self.stop_simulated(&observed).await,
                        Wake::Gone | Wake::Shutdown => return Ok(()),
                    },
                }
            }
        }
        let started = Timestamp::now();
        let done = Ended {
            exit_code: 0,
            signal: None,
            reason: "Completed".into(),
            message: None,
            started_at: Some(started),
            finished_at: started,
        };
        observed.init = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| status::terminated(&c.name, Some(id(&c.name)), &done, &initial(c)))
            .collect();
        // A pod meant to run to completion (a Job's) completes; any other keeps running.
        let completes = matches!(spec.restart_policy.as_deref(), Some("Never" | "OnFailure"));
        observed.containers = spec
            .containers
            .iter()
            .map(|c| match completes {
                true => status::terminated(&c.name, Some(id(&c.name)), &done, &initial(c)),
                false => status::running(&c.name, id(&c.name), started, &initial(c)),
            })
            .collect();
        observed.phase = Some(if completes { "Succeeded" } else { "Running" });
        if !completes {
            observed.ephemeral = ephemeral::simulated(&self.pod, id, started);
        }
        if is_terminal(&self.pod) {
            return self.until_deleted(&Observed::default()).await;
        }
        if starts {
            let init = spec.init_containers.iter().flatten().map(|c| (INIT_CONTAINERS, c));
            for (list, container) in init.chain(spec.containers.iter().map(|c| (CONTAINERS, c))) {
                self.record_started(list, &container.name);
            }
        }
        self.report(&observed).await;
        self.until_deleted(&observed).await
    }

    /// Restarts the running simulated app containers (`statuses`) whose image is no longer the
    /// spec's (`kubectl set image pod/...`), as a kubelet restarts a container whose definition
    /// changed: stopped (it completes), counted as a restart, running the new image; `id` names a
    /// container's id.
    fn restart_changed(&self, statuses: &mut [ContainerStatus], id: impl Fn(&str) -> String) {
        let specs = self.pod.spec.iter().flat_map(|spec| &spec.containers);
        let now = Timestamp::now();
        for (container, status) in specs.zip(statuses) {
            let image = container.image.clone().unwrap_or_default();
            let running = status.state.as_ref().and_then(|s| s.running.as_ref());
            let Some(running) = running.filter(|_| status.image != image) else { continue };
            let name = &container.name;
            self.record_redefined(name);
            let ended = Ended {
                exit_code: 0,
                signal: None,
                reason: "Completed".into(),
                message: None,
                started_at: running.started_at.as_ref().map(|t| t.0),
                finished_at: now,
            };
            let stopped = status::terminated(name, None, &ended, status);
            let restarted = ContainerStatus { image, ..status::restarted(&stopped) };
            *status = status::running(name, id(name), now, &restarted);
            self.record_started(CONTAINERS, name);
        }
    }

    /// Takes into `spec` the images of the pod's app containers that changed (`kubectl set image
    /// pod/...`), the only part of a container a pod's update may change; their indexes.
    fn take_new_images(&self, spec: &mut PodSpec) -> Vec<usize> {
        let latest = self.pod.spec.iter().flat_map(|s| &s.containers);
        let mut changed = Vec::new();
        for (index, (current, latest)) in spec.containers.iter_mut().zip(latest).enumerate() {
            if current.image != latest.image {
                current.image = latest.image.clone();
                changed.push(index);
            }
        }
        changed
    }

    /// Records that app container `name` is stopped to run again with its new definition.
    fn record_redefined(&self, name: &str) {
        let note = format!("Container {name} definition changed, will be restarted");
        self.record(CONTAINERS, name, EventNote::normal("Killing", note));
    }

    /// Records that container `name`, of the spec's `list`, was created and started.
    fn record_started(&self, list: &str, name: &str) {
        let created = EventNote::normal("Created", format!("Created container: {name}"));
        self.record(list, name, created);
        let started = EventNote::normal("Started", format!("Started container {name}"));
        self.record(list, name, started);
    }

    /// Process pods while `--no-process-pods` is set: they fail at once, saying why.
    async fn refuse(&mut self) -> Result<(), kube::Error> {
        let spec = self.pod.spec.clone().unwrap_or_default();
        let now = Timestamp::now();
        let ended = Ended {
            exit_code: 126,
            signal: None,
            reason: "ContainerCannotRun".into(),
            message: Some(
                "keelson up runs with --no-process-pods, so this pod's containers (which would run as local processes) are not started".into(),
            ),
            started_at: None,
            finished_at: now,
        };
        let observed = Observed {
            containers: spec
                .containers
                .iter()
                .map(|c| status::terminated(&c.name, None, &ended, &initial(c)))
                .collect(),
            phase: Some("Failed"),
            start_time: Some(now),
            message: ended.message.clone(),
            ..Observed::default()
        };
        if !is_terminal(&self.pod) {
            self.report(&observed).await;
        }
        self.until_deleted(&observed).await
    }

    /// A process pod: init containers one after another, then every container at once, each
    /// restarted as its restart policy says.
    async fn run_processes(&mut self) -> Result<(), kube::Error> {
        let mut spec = self.pod.spec.clone().unwrap_or_default();
        let restart_policy = spec.restart_policy.clone().unwrap_or_else(|| "Always".into());
        let pod_dir = self.pod_dir();
        let mut debuggers = ephemeral::containers(&self.pod);
        // Processes a crashed `keelson up` left running under their supervisors carry on.
        let adopted: Vec<(Slot, Adopted)> = running_slots(&self.pod, &debuggers)
            .into_iter()
            .filter_map(|slot| {
                let name = &slot.container(&spec, &debuggers).name;
                Some((slot, process::adopt(&pid_file(&pod_dir, name))?))
            })
            .collect();
        let mut observed =
            recover(&self.pod, &debuggers, |slot| adopted.iter().any(|(s, _)| *s == slot));
        if matches!(observed.phase, Some("Succeeded" | "Failed")) {
            if !is_terminal(&self.pod) {
                self.report(&observed).await;
            }
            return self.until_deleted(&observed).await;
        }
        self.report(&observed).await;
        let deadline = spec.active_deadline_seconds.map(|s| {
            let started = observed.start_time.unwrap_or_else(Timestamp::now);
            let left =
                (started + jiff::SignedDuration::from_secs(s)).duration_since(Timestamp::now());
            Instant::now() + Duration::try_from(left).unwrap_or(Duration::ZERO)
        });
        let (events, mut inbox) = mpsc::channel(16);
        let apps = spec.containers.len();
        let mut running: HashMap<Slot, Terminator> = HashMap::new();
        let mut probing = Probing((0..apps).map(|_| None).collect());
        let mut restarts: Vec<(Instant, Slot)> = Vec::new();
        let mut crash_loops: HashMap<Slot, CrashLoop> = HashMap::new();
        // App containers stopped because their image changed: they run again at once.
        let mut redefined: HashSet<Slot> = HashSet::new();
        let adopted_slots: Vec<Slot> = adopted.iter().map(|(slot, _)| *slot).collect();
        for (slot, found) in adopted {
            tokio::spawn(follow(slot, found, events.clone(), false));
        }

        // Init containers first, in order; a failure ends the pod or retries it.
        let init = spec.init_containers.clone().unwrap_or_default();
        let mut next_init =
            observed.init.iter().take_while(|s| status::exit_code(s) == Some(0)).count();
        if next_init < init.len() {
            if !adopted_slots.contains(&Slot::Init(next_init)) {
                let slot = Slot::Init(next_init);
                self.launch(&pod_dir, &init[next_init], slot, &mut observed, &mut running, &events)
                    .await;
            }
        } else {
            for (index, container) in spec.containers.iter().enumerate() {
                if status::exit_code(&observed.containers[index]).is_none()
                    && !adopted_slots.contains(&Slot::App(index))
                {
                    self.launch(
                        &pod_dir,
                        container,
                        Slot::App(index),
                        &mut observed,
                        &mut running,
                        &events,
                    )
                    .await;
                }
            }
        }
        self.launch_ephemeral(&pod_dir, &debuggers, &mut observed, &mut running, &events).await;
        self.report(&observed).await;
        loop {
            let next_restart = restarts.iter().map(|(at, _)| *at).min();
            tokio::select! {
                Some(event) = inbox.recv() => {
                    match event {
                        Event::Retry { slot } => {
                            let container = slot.container(&spec, &debuggers);
                            self.launch(&pod_dir, container, slot, &mut observed, &mut running, &events).await;
                        }
                        Event::Started { slot, pid, started_at, terminator, launched } => {
                            let id = format!("{PROCESS_SCHEME}{pid}");
                            let cell = observed.slot_mut(slot);
                            // A run this worker launched is a new one; an adopted one shows already.
                            let run = if launched { status::restarted(cell) } else { cell.clone() };
                            *cell = status::running(&cell.name.clone(), id, started_at, &run);
                            running.insert(slot, terminator);
                            if let Slot::App(i) = slot {
                                let work = pod_dir.join("work");
                                if let Some(probes) = Probes::of(&spec.containers[i], pid, &work) {
                                    cell.started = Some(!probes.gates_start());
                                    cell.ready = !probes.gates_start() && !probes.gates_readiness();
                                    probing.start(i, probes, &events);
                                }
                            }
                            if launched {
                                let name = &slot.container(&spec, &debuggers).name;
                                self.record_started(slot.list(), name);
                            }
                            if observed.phase != Some("Running") && matches!(slot, Slot::App(_)) {
                                observed.phase = Some("Running");
                            }
                        }
                        Event::Probed { index, finding } => {
                            let cell = &mut observed.containers[index];
                            let name = cell.name.clone();
                            if cell.state.as_ref().is_some_and(|s| s.running.is_some()) {
                                match finding {
                                    Finding::Failed { kind, message } => {
                                        let note = format!("{} probe failed: {message}", kind.name());
                                        self.record(CONTAINERS, &name, EventNote::warning("Unhealthy", note));
                                    }
                                    Finding::Started => cell.started = Some(true),
                                    Finding::Ready(ready) => cell.ready = ready,
                                    Finding::Unhealthy(kind) => {
                                        // Killed; its end restarts it as the policy says.
                                        cell.ready = false;
                                        let note = format!("Container {name} failed {} probe, will be restarted", kind.name().to_lowercase());
                                        self.record(CONTAINERS, &name, EventNote::normal("Killing", note));
                                        if let Some(terminator) = running.get(&Slot::App(index)).cloned() {
                                            let grace = probe_grace_period(&self.pod, &spec.containers[index], kind);
                                            tokio::spawn(async move { terminator.terminate(grace).await });
                                        }
                                    }
                                }
                            }
                        }
                        Event::Ended { slot, ended } => {
                            running.remove(&slot);
                            if ended.reason == process::CANNOT_RUN {
                                let name = &slot.container(&spec, &debuggers).name;
                                let note = format!("Error: {}", ended.message.as_deref().unwrap_or_default());
                                self.record(slot.list(), name, EventNote::warning("Failed", note));
                            }
                            let cell = observed.slot_mut(slot);
                            *cell = status::terminated(&cell.name.clone(), None, &ended, &ending_run(cell));
                            let failed = ended.exit_code != 0;
                            let again = match restart_policy.as_str() {
                                "Always" => true,
                                "OnFailure" => failed,
                                _ => false,
                            };
                            match slot {
                                Slot::Init(i) if !failed => {
                                    next_init = i + 1;
                                    if next_init < init.len() {
                                        self.launch(&pod_dir, &init[next_init], Slot::Init(next_init), &mut observed, &mut running, &events).await;
                                    } else {
                                        for (index, container) in spec.containers.iter().enumerate() {
                                            self.launch(&pod_dir, container, Slot::App(index), &mut observed, &mut running, &events).await;
                                        }
                                    }
                                }
                                Slot::Init(_) if restart_policy != "Never" => {
                                    let wait = self.back_off(&mut observed, slot, crash_loops.entry(slot).or_default());
                                    restarts.push((Instant::now() + wait, slot));
                                }
                                Slot::Init(_) => observed.phase = Some("Failed"),
                                // Run once, whatever the restart policy; the pod's phase is its
                                // other containers'.
                                Slot::Ephemeral(_) => {}
                                Slot::App(i) => {
                                    probing.stop(i);
                                    if redefined.remove(&slot) {
                                        let container = &spec.containers[i];
                                        observed.containers[i].image = container.image.clone().unwrap_or_default();
                                        self.launch(&pod_dir, container, slot, &mut observed, &mut running, &events).await;
                                    } else if again {
                                        let wait = self.back_off(&mut observed, slot, crash_loops.entry(slot).or_default());
                                        restarts.push((Instant::now() + wait, slot));
                                    } else if let Some(phase) = status::final_phase(&restart_policy, &observed.containers) {
                                        observed.phase = Some(phase);
                                    }
                                }
                            }
                        }
                    }
                    if matches!(observed.phase, Some("Succeeded" | "Failed")) {
                        // What debugged the pod ends with it.
                        if !running.is_empty() {
                            let stopped = self.stop(&mut running, grace_period(&self.pod), &spec, &debuggers).await;
                            drain_ends(&mut inbox, &mut observed, stopped).await;
                        }
                        self.report(&observed).await;
                        return self.until_deleted(&observed).await;
                    }
                    self.report(&observed).await;
                }
                _ = sleep_until_some(next_restart) => {
                    let now = Instant::now();
                    let due: Vec<Slot> = restarts.iter().filter(|(at, _)| *at <= now).map(|(_, slot)| *slot).collect();
                    restarts.retain(|(at, _)| *at > now);
                    for slot in due {
                        let container = slot.container(&spec, &debuggers);
                        self.launch(&pod_dir, container, slot, &mut observed, &mut running, &events).await;
                    }
                    self.report(&observed).await;
                }
                _ = sleep_until_some(deadline) => {
                    let note = "Pod was active on the node longer than the specified deadline";
                    self.record_at(None, EventNote::normal("DeadlineExceeded", note));
                    let stopped = self.stop(&mut running, grace_period(&self.pod), &spec, &debuggers).await;
                    drain_ends(&mut inbox, &mut observed, stopped).await;
                    observed.phase = Some("Failed");
                    observed.reason = Some("DeadlineExceeded".into());
                    observed.message = Some("Pod was active on the node longer than the specified deadline".into());
                    self.report(&observed).await;
                    return self.until_deleted(&observed).await;
                }
                wake = self.wake() => match wake {
                    Wake::Changed => {
                        // Ephemeral containers added since run now.
                        debuggers = ephemeral::containers(&self.pod);
                        self.launch_ephemeral(&pod_dir, &debuggers, &mut observed, &mut running, &events).await;
                        // A running container whose image changed is stopped, to run again.
                        for index in self.take_new_images(&mut spec) {
                            let slot = Slot::App(index);
                            if let Some(terminator) = running.get(&slot).cloned() {
                                self.record_redefined(&spec.containers[index].name);
                                redefined.insert(slot);
                                let grace = grace_period(&self.pod);
                                tokio::spawn(async move { terminator.terminate(grace).await });
                            }
                        }
                        self.report(&observed).await;
                    }
                    Wake::Deleting => {
                        let grace = grace_period(&self.pod);
                        tracing::debug!(pod = %self.name(), running = running.len(), ?grace, "stopping a deleted pod's containers");
                        let stopped = self.stop(&mut running, grace, &spec, &debuggers).await;
                        drain_ends(&mut inbox, &mut observed, stopped).await;
                        tracing::debug!(pod = %self.name(), "a deleted pod's containers stopped");
                        self.report(&status::stopped_for_deletion(&self.pod, &observed)).await;
                        self.finish_deletion().await?;
                        remove_dir(&pod_dir).await;
                        return Ok(());
                    }
                    Wake::Gone => {
                        stop_all(&mut running, Duration::ZERO).await;
                        remove_dir(&pod_dir).await;
                        return Ok(());
                    }
                    Wake::Shutdown => {
                        stop_all(&mut running, grace_period(&self.pod).min(Duration::from_secs(5))).await;
                        return Ok(());
                    }
                },
            }
        }
    }

    /// Stops the `running` containers of a pod with `spec` and `debuggers`, recording it:
    /// SIGTERM, then SIGKILL after `grace`. The containers stopped.
    async fn stop(
        &self,
        running: &mut HashMap<Slot, Terminator>,
        grace: Duration,
        spec: &PodSpec,
        debuggers: &[Container],
    ) -> Vec<Slot> {
        let stopped: Vec<Slot> = running.keys().copied().collect();
        for slot in &stopped {
            self.record_stopping(slot.list(), &slot.container(spec, debuggers).name);
        }
        stop_all(running, grace).await;
        stopped
    }

    /// Puts an ended container into its crash-loop back-off, recording a wait; how long it
    /// waits before it restarts. Its restart count goes up only when it runs again.
    fn back_off(
        &self,
        observed: &mut Observed,
        slot: Slot,
        crash_loop: &mut CrashLoop,
    ) -> Duration {
        let wait = crash_loop.wait(Instant::now());
        let cell = observed.slot_mut(slot);
        let name = cell.name.clone();
        if wait.is_zero() {
            *cell = status::waiting_to_restart(cell, "ContainerCreating", None);
            return wait;
        }
        let pod = self.full_name();
        let message =
            format!("back-off {}s restarting failed container={name} pod={pod}", wait.as_secs());
        *cell = status::waiting_to_restart(cell, "CrashLoopBackOff", Some(message));
        let note = format!("Back-off restarting failed container {name} in pod {pod}");
        self.record(slot.list(), &name, EventNote::warning("BackOff", note));
        wait
    }

    /// Starts the ephemeral containers not started yet (those past the statuses known), in
    /// order.
    async fn launch_ephemeral(
        &self,
        pod_dir: &std::path::Path,
        debuggers: &[Container],
        observed: &mut Observed,
        running: &mut HashMap<Slot, Terminator>,
        events: &mpsc::Sender<Event>,
    ) {
        for (index, container) in debuggers.iter().enumerate().skip(observed.ephemeral.len()) {
            let waiting =
                status::waiting(&container.name, "ContainerCreating", None, &initial(container));
            observed.ephemeral.push(waiting);
            self.launch(pod_dir, container, Slot::Ephemeral(index), observed, running, events)
                .await;
        }
    }

    /// Starts one container's process, which is `running` from then on (a stop that follows
    /// at once stops it too); its start and end arrive as events.
    async fn launch(
        &self,
        pod_dir: &std::path::Path,
        container: &Container,
        slot: Slot,
        observed: &mut Observed,
        running: &mut HashMap<Slot, Terminator>,
        events: &mpsc::Sender<Event>,
    ) {
        let restart_count = status::next_run(observed.slot_mut(slot)).max(0) as u32;
        let spec = match self.process_spec(pod_dir, container, restart_count).await {
            Ok(spec) => spec,
            Err(Unrunnable::Config(message)) => {
                let failed = EventNote::warning("Failed", format!("Error: {message}"));
                self.record(slot.list(), &container.name, failed);
                let cell = observed.slot_mut(slot);
                *cell = status::waiting(
                    &container.name,
                    "CreateContainerConfigError",
                    Some(message),
                    cell,
                );
                // The configuration may appear later: try again soon.
                let events = events.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    let _ = events.send(Event::Retry { slot }).await;
                });
                return;
            }
            Err(Unrunnable::NoCommand(message)) => {
                let log = logs::log_path(pod_dir, &container.name, restart_count);
                let events = events.clone();
                tokio::spawn(async move {
                    if let Ok(writer) = logs::LogWriter::create(&log).await {
                        let _ =
                            writer.write_line(logs::LogStream::Stderr, message.as_bytes()).await;
                    }
                    let ended = Ended {
                        exit_code: 128,
                        signal: None,
                        reason: "ContainerCannotRun".into(),
                        message: Some(message),
                        started_at: None,
                        finished_at: Timestamp::now(),
                    };
                    let _ = events.send(Event::Ended { slot, ended }).await;
                });
                return;
            }
        };
        // Started here, not in the task that follows it: a deletion the worker handles next
        // must find the process among the running ones, or it would outlive its pod.
        let events = events.clone();
        match process::start(spec).await {
            Ok(child) => {
                tracing::debug!(pod = %self.name(), container = %container.name, pid = child.pid(), "container process started");
                running.insert(slot, child.terminator());
                tokio::spawn(follow(slot, Adopted::Running(child), events, true));
            }
            Err(failure) => {
                let ended = Ended {
                    exit_code: failure.exit_code,
                    signal: None,
                    reason: failure.reason,
                    message: Some(failure.message),
                    started_at: None,
                    finished_at: Timestamp::now(),
                };
                // Sent from a task: the worker, which reads the channel, must not wait on it.
                tokio::spawn(async move { events.send(Event::Ended { slot, ended }).await });
            }
        }
    }

    /// The process of a container: command line, environment, directories.
    async fn process_spec(
        &self,
        pod_dir: &std::path::Path,
        container: &Container,
        restart_count: u32,
    ) -> Result<ProcessSpec, Unrunnable> {
        let command = container.command.clone().unwrap_or_default();
        let args = container.args.clone().unwrap_or_default();
        // Without an image there is no entrypoint: the command runs, or else the arguments do
        // (as with images that have no entrypoint, such as busybox).
        let mut argv: Vec<String> =
            if command.is_empty() { args } else { command.into_iter().chain(args).collect() };
        if argv.is_empty() {
            return Err(Unrunnable::NoCommand(format!(
                "container {:?} has no command: keelson's local node runs a process pod's command as a local process and cannot use an image's entrypoint; give the container a command",
                container.name
            )));
        }
        let work_dir = pod_dir.join("work");
        let hostname =
            self.pod.spec.as_ref().and_then(|s| s.hostname.clone()).unwrap_or_else(|| self.name());
        let mut base = vec![
            (
                "PATH".to_owned(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
            ),
            ("HOME".to_owned(), work_dir.display().to_string()),
            ("HOSTNAME".to_owned(), hostname),
        ];
        if let Some(access) = &self.shared.api {
            let kubeconfig =
                service_account::prepare(&self.shared.client, access, &self.pod, pod_dir)
                    .await
                    .map_err(Unrunnable::Config)?;
            if let Some(path) = kubeconfig {
                base.push(("KUBECONFIG".to_owned(), path.display().to_string()));
            }
        }
        let env = env::resolve(&self.shared.client, &self.pod, container, base)
            .await
            .map_err(|e| Unrunnable::Config(e.to_string()))?;
        argv = argv.iter().map(|a| env::expand(a, &env)).collect();
        let program = argv.remove(0);
        Ok(ProcessSpec {
            program,
            args: argv,
            env,
            work_dir,
            log_path: logs::log_path(pod_dir, &container.name, restart_count),
            pid_file: pid_file(pod_dir, &container.name),
            supervisor: self.shared.supervisor.clone(),
            console: Console {
                stdin: container.stdin.unwrap_or(false),
                stdin_once: container.stdin_once.unwrap_or(false),
                tty: container.tty.unwrap_or(false),
            },
        })
    }
}

/// Reports a container's process, `launched` here or adopted, to its pod's worker: its start (a
/// process still running), then its end.
async fn follow(slot: Slot, process: Adopted, events: mpsc::Sender<Event>, launched: bool) {
    let (exit, started_at) = match process {
        Adopted::Running(mut child) => {
            let started_at = child.started_at();
            let terminator = child.terminator();
            let pid = child.pid();
            let started = Event::Started { slot, pid, started_at, terminator, launched };
            let _ = events.send(started).await;
            (child.wait().await, Some(started_at))
        }
        Adopted::Ended(exit) => (exit, None),
    };
    let ended = Ended {
        exit_code: exit.exit_code,
        signal: exit.signal,
        reason: exit.reason.to_owned(),
        message: exit.message,
        started_at,
        finished_at: exit.finished_at,
    };
    let _ = events.send(Event::Ended { slot, ended }).await;
}

/// Where a container's process id is recorded while it runs.
fn pid_file(pod_dir: &std::path::Path, container: &str) -> PathBuf {
    pod_dir.join("pids").join(format!("{container}.pid"))
}

/// The containers (init, app and ephemeral: `debuggers`) the pod's status shows running.
fn running_slots(pod: &Pod, debuggers: &[Container]) -> Vec<Slot> {
    let (Some(spec), Some(status)) = (&pod.spec, &pod.status) else { return Vec::new() };
    let init = (0..spec.init_containers.as_ref().map_or(0, Vec::len)).map(Slot::Init);
    let app = (0..spec.containers.len()).map(Slot::App);
    let ephemeral = (0..debuggers.len()).map(Slot::Ephemeral);
    init.chain(app)
        .chain(ephemeral)
        .filter(|slot| {
            let state = slot.reported(spec, debuggers, status).and_then(|s| s.state.as_ref());
            state.is_some_and(|state| state.running.is_some())
        })
        .collect()
}

/// Why a container cannot be started.
enum Unrunnable {
    /// Its ConfigMaps or Secrets are missing (they may appear: retried).
    Config(String),
    /// It has nothing to run (final).
    NoCommand(String),
}

/// Which container an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot {
    Init(usize),
    App(usize),
    Ephemeral(usize),
}

/// The lists of containers in a pod's spec.
const INIT_CONTAINERS: &str = "initContainers";
const CONTAINERS: &str = "containers";
const EPHEMERAL_CONTAINERS: &str = "ephemeralContainers";

impl Slot {
    /// The list of the pod's spec this slot's container is in.
    fn list(self) -> &'static str {
        match self {
            Slot::Init(_) => INIT_CONTAINERS,
            Slot::App(_) => CONTAINERS,
            Slot::Ephemeral(_) => EPHEMERAL_CONTAINERS,
        }
    }

    /// The container this slot names in `spec`, whose ephemeral containers run as `debuggers`.
    fn container<'a>(self, spec: &'a PodSpec, debuggers: &'a [Container]) -> &'a Container {
        match self {
            Slot::Init(i) => &spec.init_containers.as_deref().unwrap_or_default()[i],
            Slot::App(i) => &spec.containers[i],
            Slot::Ephemeral(i) => &debuggers[i],
        }
    }

    /// The status a pod with `spec` reports for this slot's container, if any.
    fn reported<'a>(
        self,
        spec: &PodSpec,
        debuggers: &[Container],
        status: &'a PodStatus,
    ) -> Option<&'a ContainerStatus> {
        let reported = match self {
            Slot::Init(_) => &status.init_container_statuses,
            Slot::App(_) => &status.container_statuses,
            Slot::Ephemeral(_) => &status.ephemeral_container_statuses,
        };
        let name = &self.container(spec, debuggers).name;
        reported.iter().flatten().find(|s| &s.name == name)
    }
}

impl Observed {
    fn slot_mut(&mut self, slot: Slot) -> &mut ContainerStatus {
        match slot {
            Slot::Init(i) => &mut self.init[i],
            Slot::App(i) => &mut self.containers[i],
            Slot::Ephemeral(i) => &mut self.ephemeral[i],
        }
    }
}

/// What a container's task reports.
enum Event {
    Started {
        slot: Slot,
        pid: u32,
        started_at: Timestamp,
        terminator: Terminator,
        /// Started by this worker, not adopted from an earlier `keelson up`.
        launched: bool,
    },
    Ended {
        slot: Slot,
        ended: Ended,
    },
    /// The container's configuration was missing: try to start it again.
    Retry {
        slot: Slot,
    },
    /// The probes of app container `index` found something out.
    Probed {
        index: usize,
        finding: Finding,
    },
}

/// The probes running, by app container; they stop when this is dropped.
struct Probing(Vec<Option<tokio::task::JoinHandle<()>>>);

impl Probing {
    /// Starts probing app container `index` (a restarted one anew), reporting to `events`.
    fn start(&mut self, index: usize, probes: Probes, events: &mpsc::Sender<Event>) {
        self.stop(index);
        let events = events.clone();
        let report = move |finding| {
            let events = events.clone();
            async move { events.send(Event::Probed { index, finding }).await.is_ok() }
        };
        self.0[index] = Some(tokio::spawn(probes.run(report)));
    }

    fn stop(&mut self, index: usize) {
        if let Some(task) = self.0[index].take() {
            task.abort();
        }
    }
}

impl Drop for Probing {
    fn drop(&mut self) {
        self.0.iter().flatten().for_each(tokio::task::JoinHandle::abort);
    }
}

/// The first status of a container.
pub(super) fn initial(container: &Container) -> ContainerStatus {
    ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: String::new(),
        ..ContainerStatus::default()
    }
}

/// What the node knew of a process pod before (after a restart of `keelson up`): containers
/// that were running and were not `adopted` died with the previous process; they are recorded
/// as ended, and run again unless the restart policy is `Never`, in which case the pod has
/// failed.
///
/// Ephemeral containers (`debuggers`) that ran are recorded too: as running if adopted, else as
/// ended; they never run again. Those that never started start (again).
fn recover(pod: &Pod, debuggers: &[Container], adopted: impl Fn(Slot) -> bool) -> Observed {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let never = spec.restart_policy.as_deref() == Some("Never");
    let now = Timestamp::now();
    let mut lost = false;
    let mut recover_one =
        |slot: Slot, c: &Container, previous: Option<&ContainerStatus>| -> ContainerStatus {
            let Some(previous) = previous else {
                return status::waiting(&c.name, "ContainerCreating", None, &initial(c));
            };
            let Some(running) = previous.state.as_ref().and_then(|s| s.running.as_ref()) else {
                return previous.clone();
            };
            if adopted(slot) {
                return previous.clone();
            }
            lost = true;
            let dead = status::terminated(&c.name, None, &lost_end(running, now), previous);
            if never { dead } else { status::waiting_to_restart(&dead, "ContainerCreating", None) }
        };
    let mut recover_slot = |slot: Slot| {
        let container = slot.container(&spec, debuggers);
        recover_one(slot, container, slot.reported(&spec, debuggers, &status))
    };
    let init_count = spec.init_containers.as_ref().map_or(0, Vec::len);
    let init: Vec<ContainerStatus> = (0..init_count).map(|i| recover_slot(Slot::Init(i))).collect();
    let containers: Vec<ContainerStatus> =
        (0..spec.containers.len()).map(|i| recover_slot(Slot::App(i))).collect();
    let ephemeral: Vec<ContainerStatus> = (0..debuggers.len())
        .map_while(|i| {
            let slot = Slot::Ephemeral(i);
            let previous = slot.reported(&spec, debuggers, &status)?;
            let state = previous.state.as_ref()?;
            match (&state.running, &state.terminated) {
                (Some(_), _) if adopted(slot) => Some(previous.clone()),
                (Some(running), _) => {
                    let ended = lost_end(running, now);
                    Some(status::terminated(&previous.name, None, &ended, previous))
                }
                (None, Some(_)) => Some(previous.clone()),
                (None, None) => None,
            }
        })
        .collect();
    let phase = match status.phase.as_deref() {
        _ if lost && never => "Failed",
        Some("Succeeded") => "Succeeded",
        Some("Failed") => "Failed",
        Some("Running") => "Running",
        _ => "Pending",
    };
    Observed {
        init,
        containers,
        ephemeral,
        phase: Some(phase),
        reason: status.reason.clone(),
        message: status.message.clone(),
        start_time: Some(status.start_time.map_or(now, |t| t.0)),
        pod_ip: Some("127.0.0.1".into()),
    }
}

/// How a container that was running when `keelson up` stopped, and was not found again,
/// ended.
fn lost_end(running: &ContainerStateRunning, now: Timestamp) -> Ended {
    Ended {
        exit_code: 137,
        signal: Some(9),
        reason: "Error".into(),
        message: Some("the process ended when keelson stopped".into()),
        started_at: running.started_at.as_ref().map(|t| t.0),
        finished_at: now,
    }
}

/// A simulated pod's containers (`observed`) once stopped for its deletion: each running one
/// exits at once on SIGTERM (`Completed`), or, when it takes longer than the grace period
/// (`killed`), is killed then (137).
fn simulated_stop(observed: &Observed, killed: bool, now: Timestamp) -> Observed {
    let stop = |s: &ContainerStatus| {
        let Some(running) = s.state.as_ref().and_then(|state| state.running.as_ref()) else {
            return s.clone();
        };
        let (exit_code, signal, reason) =
            if killed { (137, Some(9), "Error") } else { (0, None, "Completed") };
        let ended = Ended {
            exit_code,
            signal,
            reason: reason.into(),
            message: None,
            started_at: running.started_at.as_ref().map(|t| t.0),
            finished_at: now,
        };
        status::terminated(&s.name, None, &ended, s)
    };
    Observed {
        init: observed.init.iter().map(stop).collect(),
        containers: observed.containers.iter().map(stop).collect(),
        ephemeral: observed.ephemeral.iter().map(stop).collect(),
        ..observed.clone()
    }
}

/// How long the pod's containers may take to stop: the grace period its deletion gave, or else
/// its spec's.
fn grace_period(pod: &Pod) -> Duration {
    grace_or_the_pods(pod.metadata.deletion_grace_period_seconds, pod)
}

/// How long `container` of `pod`, found unhealthy by its `kind` probe, may take to stop: the
/// probe's own grace period, or else the pod's spec's.
fn probe_grace_period(pod: &Pod, container: &Container, kind: Kind) -> Duration {
    let probe = match kind {
        Kind::Startup => &container.startup_probe,
        Kind::Readiness | Kind::Liveness => &container.liveness_probe,
    };
    grace_or_the_pods(probe.as_ref().and_then(|p| p.termination_grace_period_seconds), pod)
}

/// `seconds`, or else the pod's `terminationGracePeriodSeconds`, or else 30 s.
fn grace_or_the_pods(seconds: Option<i64>, pod: &Pod) -> Duration {
    let seconds = seconds
        .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .unwrap_or(30);
    Duration::from_secs(seconds.max(0) as u64)
}

/// Terminates every running container: SIGTERM, then SIGKILL after `grace`.
async fn stop_all(running: &mut HashMap<Slot, Terminator>, grace: Duration) {
    let stops = running.drain().map(|(_, t)| async move { t.terminate(grace).await });
    futures::future::join_all(stops).await;
}

/// The status a container's run ends from: a run that ended without having started (it could
/// not) is a new run all the same.
fn ending_run(status: &ContainerStatus) -> ContainerStatus {
    let running = status.state.as_ref().is_some_and(|s| s.running.is_some());
    if running { status.clone() } else { status::restarted(status) }
}

/// Records the ends of the containers that were just `stopped`, waiting at most 2 s for each.
async fn drain_ends(
    inbox: &mut mpsc::Receiver<Event>,
    observed: &mut Observed,
    stopped: Vec<Slot>,
) {
    let mut left = stopped;
    while !left.is_empty()
        && let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(2), inbox.recv()).await
    {
        if let Event::Ended { slot, ended } = event {
            left.retain(|s| *s != slot);
            let cell = observed.slot_mut(slot);
            *cell = status::terminated(&cell.name.clone(), None, &ended, &ending_run(cell));
        }
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn remove_dir(dir: &std::path::Path) {
    if let Err(error) = tokio::fs::remove_dir_all(dir).await
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!(dir = %dir.display(), %error, "removing a pod directory failed");
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Probe;

    use super::*;

    #[test]
    fn a_probe_kill_takes_the_probes_grace_period_else_the_pods() {
        let probe =
            |grace| Some(Probe { termination_grace_period_seconds: grace, ..Probe::default() });
        let container = Container {
            liveness_probe: probe(Some(3)),
            startup_probe: probe(None),
            ..Container::default()
        };
        let spec = PodSpec { termination_grace_period_seconds: Some(12), ..PodSpec::default() };
        let mut pod = Pod { spec: Some(spec), ..Pod::default() };
        pod.metadata.deletion_grace_period_seconds = Some(1);
        let seconds = Duration::from_secs;
        assert_eq!(probe_grace_period(&pod, &container, Kind::Liveness), seconds(3));
        assert_eq!(probe_grace_period(&pod, &container, Kind::Startup), seconds(12));
        assert_eq!(grace_period(&pod), seconds(1), "a deletion's own");
        pod.spec = None;
        assert_eq!(probe_grace_period(&pod, &container, Kind::Startup), seconds(30));
    }

    #[test]
    fn a_stopped_simulated_container_completes_unless_killed_after_the_grace_period() {
        let started: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let web = Container { name: "web".into(), ..Container::default() };
        let observed = Observed {
            containers: vec![status::running(
                "web",
                "simulated://u/web".into(),
                started,
                &initial(&web),
            )],
            ..Observed::default()
        };
        let end = |killed| {
            let stopped = simulated_stop(&observed, killed, Timestamp::now());
            let state = stopped.containers[0].state.clone().unwrap().terminated.unwrap();
            (state.exit_code, state.reason.unwrap(), state.started_at.unwrap().0)
        };
        assert_eq!(end(false), (0, "Completed".to_owned(), started));
        assert_eq!(end(true), (137, "Error".to_owned(), started));
    }
}
