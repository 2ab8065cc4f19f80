//! Run events for the server-sent event streams: derived from the Runs the API watches and
//! from the agents' log Events, numbered per run, and kept in a bounded history that is saved
//! in a ConfigMap owned by the run, so it survives a restart of Keelson and goes with the run.

pub mod diff;
pub mod history;
pub mod sse;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as KubeEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use keelson_api_crds::workflows::Run;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use history::{History, Lagged, Limits, Stored};

/// Label on the ConfigMaps that hold run event histories; its value is the run's name.
pub const HISTORY_LABEL: &str = "workflows.keelson.dev/run-events";
/// Field manager of the history ConfigMaps.
const MANAGER: &str = "keelson-api";
/// How often changed histories are saved.
const SAVE_EVERY: Duration = Duration::from_millis(250);

/// One run's history and the channel that tells its subscribers about new events.
struct Entry {
    history: History,
    /// The last seq, watched by subscribers.
    latest: watch::Sender<u64>,
    /// The run's uid, for the ConfigMap's owner reference; unknown until the run is seen.
    uid: Option<String>,
    /// Changed since it was last saved.
    dirty: bool,
}

/// The run event histories of one namespace.
#[derive(Clone)]
pub struct EventHub {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    limits: Limits,
}

/// What a subscriber reads.
pub enum Read {
    /// Events after the cursor (maybe none).
    Events(Vec<Arc<Stored>>),
    /// Events after the cursor were dropped; the oldest kept has this seq.
    Lagged(Lagged),
}

impl EventHub {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn entry<'a>(&self, entries: &'a mut HashMap<String, Entry>, run: &str) -> &'a mut Entry {
        entries.entry(run.to_owned()).or_insert_with(|| Entry {
            history: History::new(run, self.limits),
            latest: watch::channel(0).0,
            uid: None,
            dirty: false,
        })
    }

    /// Loads the saved histories of `namespace`; call before [`EventHub::observe`] sees runs.
    pub async fn load(
        client: &kube::Client,
        namespace: &str,
        limits: Limits,
    ) -> kube::Result<Self> {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let saved = api.list(&ListParams::default().labels(HISTORY_LABEL)).await?;
        let mut entries = HashMap::new();
        for config_map in saved.items {
            let Some(run) = run_of(&config_map) else { continue };
            let data = config_map.data.clone().unwrap_or_default();
            match History::from_data(&run, &data, limits) {
                Ok(history) => {
                    let uid = config_map
                        .owner_references()
                        .iter()
                        .find(|owner| owner.kind == "Run")
                        .map(|owner| owner.uid.clone());
                    let latest = watch::channel(history.last_seq()).0;
                    entries.insert(run, Entry { history, latest, uid, dirty: false });
                }
                Err(error) => {
                    tracing::warn!(run, %error, "a saved run event history is unreadable; starting it afresh");
                }
            }
        }
        Ok(Self { entries: Arc::new(Mutex::new(entries)), limits })
    }

    /// Derives events from a run's new state (a run without status gets an empty history).
    pub fn observe(&self, run: &Run) {
        let name = run.name_any();
        let mut entries = self.lock();
        let entry = self.entry(&mut entries, &name);
        entry.uid = run.uid();
        let Some(status) = &run.status else { return };
        let new = entry.history.observe(status, jiff::Timestamp::now());
        if !new.is_empty() {
            entry.dirty = true;
            entry.latest.send_replace(entry.history.last_seq());
        }
    }

    /// Forgets a deleted run; its subscribers' streams end.
    pub fn forget(&self, run: &str) {
        self.lock().remove(run);
    }

    /// Records an agent's log line, once per Kubernetes Event.
    pub fn log(&self, event: &KubeEvent) {
        let Some((run, node, kind, message)) = agent_log(event) else { return };
        let mut entries = self.lock();
        let entry = self.entry(&mut entries, &run);
        let name = event.name_any();
        if entry
            .history
            .push_log_once(&name, node, &kind, &message, jiff::Timestamp::now())
            .is_some()
        {
            entry.dirty = true;
            entry.latest.send_replace(entry.history.last_seq());
        }
    }

    /// A subscription to `run`'s new events; `None` when the hub knows nothing of it.
    pub fn subscribe(&self, run: &str) -> Option<watch::Receiver<u64>> {
        self.lock().get(run).map(|entry| entry.latest.subscribe())
    }

    /// The last seq of `run`, and whether its history has ended.
    pub fn position(&self, run: &str) -> Option<(u64, bool)> {
        self.lock().get(run).map(|entry| (entry.history.last_seq(), entry.history.ended()))
    }

    /// `run`'s events after `after`; `None` once the run is forgotten.
    pub fn read(&self, run: &str, after: u64) -> Option<Read> {
        let entries = self.lock();
        let entry = entries.get(run)?;
        Some(match entry.history.since(after) {
            Ok(events) => Read::Events(events),
            Err(lagged) => Read::Lagged(lagged),
        })
    }

    /// The histories changed since the last call, as ConfigMaps to save.
    fn take_dirty(&self, namespace: &str) -> Vec<ConfigMap> {
        let mut entries = self.lock();
        entries
            .iter_mut()
            .filter(|(_, entry)| entry.dirty && entry.uid.is_some())
            .map(|(run, entry)| {
                entry.dirty = false;
                config_map(namespace, run, entry.uid.as_deref().unwrap_or_default(), &entry.history)
            })
            .collect()
    }

    /// Saves changed histories every 250 ms, until the task is dropped.
    pub async fn save_forever(self, client: kube::Client, namespace: String) {
        let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
        let params = PatchParams::apply(MANAGER).force();
        let mut tick = tokio::time::interval(SAVE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            for config_map in self.take_dirty(&namespace) {
                let name = config_map.name_any();
                if let Err(error) = api.patch(&name, &params, &Patch::Apply(&config_map)).await {
                    // The run is gone (its owner reference is refused) or the API is down:
                    // mark it for the next pass unless the run was forgotten meanwhile.
                    tracing::debug!(%error, config_map = name, "saving a run event history failed");
                    if let Some(run) = run_of(&config_map)
                        && let Some(entry) = self.lock().get_mut(&run)
                    {
                        entry.dirty = true;
                    }
                }
            }
        }
    }

    /// Follows the agents' log Events of `namespace`, until the task is dropped.
    pub async fn follow_logs(self, client: kube::Client, namespace: String) {
        let api: Api<KubeEvent> = Api::namespaced(client, &namespace);
        watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .for_each(|event| {
                match event {
                    Ok(event) => self.log(&event),
                    Err(error) => tracing::debug!(%error, "watching Events failed; retrying"),
                }
                futures::future::ready(())
            })
            .await;
    }
}

/// The run, node, kind and message of an agent log Event the workflow controller recorded
/// (`<node>: <message>` for `AgentLog`, `<node>: <kind>: <message>` for `AgentEvent`).
fn agent_log(event: &KubeEvent) -> Option<(String, Option<String>, String, String)> {
    let regarding = event.regarding.as_ref()?;
    if regarding.kind.as_deref() != Some("Run") {
        return None;
    }
    let run = regarding.name.clone()?;
    let note = event.note.as_deref().unwrap_or_default();
    let (node, rest) = note.split_once(": ")?;
    let (kind, message) = match event.reason.as_deref()? {
        "AgentLog" => ("log".to_owned(), rest.to_owned()),
        "AgentEvent" => {
            let (kind, message) = rest.split_once(": ").unwrap_or((rest, ""));
            (kind.to_owned(), message.to_owned())
        }
        _ => return None,
    };
    Some((run, Some(node.to_owned()), kind, message))
}

/// The run a history ConfigMap belongs to.
fn run_of(config_map: &ConfigMap) -> Option<String> {
    config_map.annotations().get(HISTORY_LABEL).cloned()
}

/// The ConfigMap name of a run's history: `<run>.events`, or a hash when that is too long.
fn config_map_name(run: &str) -> String {
    let name = format!("{run}.events");
    if name.len() <= 253 {
        return name;
    }
    format!("{}-{}.events", &run[..200], short_hash(run, 8))
}

/// The label value for a run name (label values are at most 63 characters).
fn label_value(run: &str) -> String {
    if run.len() <= 63 { run.to_owned() } else { short_hash(run, 16) }
}

/// The first `bytes` bytes of the SHA-256 of `text`, in hex.
fn short_hash(text: &str, bytes: usize) -> String {
    Sha256::digest(text.as_bytes()).iter().take(bytes).map(|b| format!("{b:02x}")).collect()
}

fn config_map(namespace: &str, run: &str, uid: &str, history: &History) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(run)),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(HISTORY_LABEL.to_owned(), label_value(run))])),
            annotations: Some(BTreeMap::from([(HISTORY_LABEL.to_owned(), run.to_owned())])),
            owner_references: Some(vec![OwnerReference {
                api_version: Run::api_version(&()).into_owned(),
                kind: Run::kind(&()).into_owned(),
                name: run.to_owned(),
                uid: uid.to_owned(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..ObjectMeta::default()
        },
        data: Some(history.to_data()),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str, note: &str) -> KubeEvent {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "r1.abc"},
            "eventTime": null,
            "reason": reason,
            "note": note,
            "regarding": {"kind": "Run", "name": "r1"}
        }))
        .unwrap()
    }

    #[test]
    fn agent_log_events_give_the_node_kind_and_message() {
        assert_eq!(
            agent_log(&event("AgentLog", "fetch: got 3 rows: fine")),
            Some(("r1".into(), Some("fetch".into()), "log".into(), "got 3 rows: fine".into()))
        );
        assert_eq!(
            agent_log(&event("AgentEvent", "fetch: progress: 50%")),
            Some(("r1".into(), Some("fetch".into()), "progress".into(), "50%".into()))
        );
        assert_eq!(agent_log(&event("NodeStarted", "fetch: attempt 1")), None);
    }

    #[test]
    fn history_config_maps_are_owned_by_their_run_and_named_within_limits() {
        let history = History::new("r1", Limits::default());
        let saved = config_map("ns", "r1", "uid-1", &history);
        assert_eq!(saved.metadata.name.as_deref(), Some("r1.events"));
        assert_eq!(run_of(&saved).as_deref(), Some("r1"));
        assert_eq!(saved.metadata.owner_references.unwrap()[0].uid, "uid-1");
        let long = "r".repeat(253);
        assert!(config_map_name(&long).len() <= 253);
        assert_eq!(label_value(&long).len(), 32);
    }
}
