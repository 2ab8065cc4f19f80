//! The weaver model preflight: a controller that checks, for every ModelRouting, that the
//! models its roles and domains are configured to use are advertised by the model catalog,
//! and keeps the answer in the resource's status (`degraded`, `missingModels`,
//! `readyModels`, `catalogError`, `catalogSize`, `checkedAt`, conditions `Ready` and
//! `ConfigValid`).
//!
//! - [`config`]: the configured models, from `WEAVER_*_MODEL`, the role and domain override
//!   files and the resource;
//! - [`catalog`]: `GET {url}/v1/models`, or Keelson's own catalog in process;
//! - [`preflight`]: the split into ready and missing models;
//! - [`status`]: the status and events of an outcome;
//! - [`settings`]: where the files, the catalog and its key come from.
//!
//! A preflight runs when a ModelRouting appears or its spec or annotations change, every
//! `spec.preflightIntervalSeconds`, and when an override file changes (they are polled).
//! The catalog is `SERVING_URL`, else `spec.catalogUrl`, else Keelson's own.

pub mod catalog;
pub mod config;
pub mod preflight;
pub mod settings;
pub mod status;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use futures::{Stream, StreamExt};
use keelson_api_crds::serving::ModelRouting;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::task::JoinHandle;

pub use settings::Settings;

use crate::api;

/// Why a reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API refused or did not answer.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Error {
    /// Label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
        }
    }
}

struct Context {
    client: Client,
    recorder: Recorder,
    settings: Settings,
    catalog: catalog::Client,
    /// Bumped whenever an override file changes.
    file_epoch: Arc<AtomicU64>,
    /// The last check of each routing, by namespace and name.
    checks: Mutex<HashMap<(String, String), Check>>,
}

/// What a routing's last check saw, and when the next one is due.
#[derive(Clone, Debug, PartialEq)]
struct Check {
    /// `metadata.uid`: a routing deleted and created again is new.
    uid: Option<String>,
    /// `metadata.generation`: the spec.
    generation: Option<i64>,
    /// `metadata.annotations`: touching one asks for a check now.
    annotations: BTreeMap<String, String>,
    /// [`Context::file_epoch`].
    file_epoch: u64,
    /// When the next periodic check is due.
    due: Instant,
}

impl Check {
    /// Whether `next` sees the same inputs as this one, before this one's due time.
    fn covers(&self, next: &Check, now: Instant) -> bool {
        self.uid == next.uid
            && self.generation == next.generation
            && self.annotations == next.annotations
            && self.file_epoch == next.file_epoch
            && now < self.due
    }
}

/// Starts the preflight controller; it runs until its task is aborted.
pub fn spawn(client: Client, settings: Settings) -> Vec<JoinHandle<()>> {
    let reporter = Reporter { controller: "keelson-weaver".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let files: Vec<std::path::PathBuf> =
        [&settings.roles_file, &settings.domains_file].into_iter().flatten().cloned().collect();
    let poll = settings.file_poll;
    let catalog = catalog::Client::new(settings.master_key().map(str::to_owned));
    let ctx = Arc::new(Context {
        client: client.clone(),
        recorder,
        settings,
        catalog,
        file_epoch: Arc::default(),
        checks: Mutex::default(),
    });

    let epoch = ctx.file_epoch.clone();
    let changes = file_changes(files, poll).map(move |()| {
        epoch.fetch_add(1, Ordering::Relaxed);
    });
    let controller = Controller::new(Api::<ModelRouting>::all(client), watcher::Config::default())
        .reconcile_all_on(changes)
        .run(reconcile, retry, ctx)
        .for_each(api::log("modelrouting"));
    vec![tokio::spawn(controller)]
}

fn retry(_: Arc<ModelRouting>, error: &Error, _: Arc<Context>) -> Action {
    tracing::debug!(error = %error, label = error.metric_label(), "weaver reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

/// What identifies a file's content cheaply: whether it exists, its length and mtime.
type Fingerprint = Option<(u64, Option<SystemTime>)>;

fn fingerprint(path: &std::path::Path) -> Fingerprint {
    std::fs::metadata(path).ok().map(|m| (m.len(), m.modified().ok()))
}

/// Ticks whenever one of `files` appears, disappears or changes, looking every `poll`.
fn file_changes(
    files: Vec<std::path::PathBuf>,
    poll: Duration,
) -> impl Stream<Item = ()> + Send + 'static {
    let seen: Vec<Fingerprint> = files.iter().map(|f| fingerprint(f)).collect();
    futures::stream::unfold((files, seen), move |(files, mut seen)| async move {
        if files.is_empty() {
            return futures::future::pending().await;
        }
        loop {
            tokio::time::sleep(poll).await;
            let now: Vec<Fingerprint> = files.iter().map(|f| fingerprint(f)).collect();
            if now != seen {
                seen = now;
                return Some(((), (files, seen)));
            }
        }
    })
}

/// The override files, read: the layers that could be used and a line per file that could
/// not.
fn load_files(
    settings: &Settings,
) -> (Option<config::RolesFile>, Option<config::DomainsFile>, Vec<String>) {
    let mut problems = Vec::new();
    let roles = load_file(settings.roles_file.as_deref(), "role", &mut problems);
    let domains = load_file(settings.domains_file.as_deref(), "domain", &mut problems);
    (roles, domains, problems)
}

/// One override file: `None` when unset, absent or unusable (then a line in `problems`).
fn load_file<T: serde::de::DeserializeOwned + Default>(
    path: Option<&std::path::Path>,
    what: &str,
    problems: &mut Vec<String>,
) -> Option<T> {
    let path = path?;
    config::load(path).unwrap_or_else(|error| {
        tracing::warn!(
            file = %path.display(),
            error = %error,
            label = error.metric_label(),
            "weaver: {what} override file ignored"
        );
        problems.push(format!("{what} override file {error}"));
        None
    })
}

/// Reads the catalog the routing uses: its description (URL, without credentials) and its
/// model ids or why they could not be read.
async fn read_catalog(ctx: &Context, mr: &ModelRouting) -> (String, Result<Vec<String>, String>) {
    let url = ctx.settings.serving_url.as_deref().or(mr.spec.catalog_url.as_deref());
    match (url, &ctx.settings.local_catalog) {
        (Some(url), _) => {
            let shown = catalog::models_url(&without_credentials(url));
            (shown, ctx.catalog.models(url).await.map_err(|e| e.to_string()))
        }
        (None, Some(local)) => ("keelson (this operator's /v1/models)".to_owned(), local.models()),
        (None, None) => {
            ("(none)".to_owned(), Err("no catalog: set SERVING_URL or spec.catalogUrl".to_owned()))
        }
    }
}

/// `url` without user name and password.
fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string().trim_end_matches('/').to_owned()
        }
        Err(_) => url.to_owned(),
    }
}

async fn reconcile(mr: Arc<ModelRouting>, ctx: Arc<Context>) -> Result<Action, Error> {
    if mr.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let (name, namespace) = (mr.name_any(), mr.namespace().unwrap_or_default());
    let interval = u64::try_from(mr.spec.preflight_interval_seconds).unwrap_or(60).max(10);
    let interval = Duration::from_secs(interval);
    // Status writes (checkedAt moves every cycle) bring the routing back here: a check runs
    // only when its inputs changed or it is due.
    let started = Instant::now();
    let check = Check {
        uid: mr.metadata.uid.clone(),
        generation: mr.metadata.generation,
        annotations: mr.metadata.annotations.clone().unwrap_or_default(),
        file_epoch: ctx.file_epoch.load(Ordering::Relaxed),
        due: started + interval,
    };
    let key = (namespace.clone(), name.clone());
    if let Some(last) = ctx.checks.lock().ok().and_then(|c| c.get(&key).cloned())
        && last.covers(&check, started)
    {
        return Ok(Action::requeue(last.due - started));
    }
    let (roles, domains, problems) = load_files(&ctx.settings);
    let configured =
        config::resolve(&mr.spec, roles.as_ref(), domains.as_ref(), &ctx.settings.model_env);
    for warning in &configured.warnings {
        tracing::warn!(routing = %name, namespace = %namespace, "weaver: {warning}");
    }
    let models = configured.models();
    let (source, catalog) = read_catalog(&ctx, &mr).await;
    let catalog = catalog.map_err(|e| format!("GET {source}: {e}"));
    let outcome = preflight::split(&models, catalog.as_deref().map_err(String::as_str));
    if outcome.degraded {
        tracing::warn!(
            routing = %name,
            namespace = %namespace,
            missing_models = ?outcome.missing,
            catalog_size = outcome.catalog_size,
            catalog_error = outcome.catalog_error.as_deref().unwrap_or_default(),
            "weaver: model preflight degraded"
        );
    } else {
        tracing::info!(
            routing = %name,
            namespace = %namespace,
            ready_models = ?outcome.ready,
            catalog_size = outcome.catalog_size,
            "weaver: model preflight ok"
        );
    }
    let context =
        status::Context { source: &source, problems: &problems, warnings: &configured.warnings };
    let now = jiff::Timestamp::now();
    let new = status::status(&outcome, &context, mr.status.as_ref(), mr.metadata.generation, now);
    api::write_status(&ctx.client, &*mr, None::<&serde_json::Value>, &status_patch(&new)).await?;
    for (warning, reason, note) in status::events(mr.status.as_ref(), &new) {
        api::record(&ctx.recorder, &*mr, warning, &reason, note).await;
    }
    if let Ok(mut checks) = ctx.checks.lock() {
        checks.insert(key, check);
    }
    Ok(Action::requeue(interval))
}

/// The status as a merge patch: lists and the error that are now empty are `null`, so the
/// patch removes them (a merge patch keeps what it leaves out).
fn status_patch(status: &keelson_api_crds::serving::ModelRoutingStatus) -> serde_json::Value {
    let mut value = serde_json::to_value(status).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        for key in ["missingModels", "readyModels", "catalogError"] {
            fields.entry(key).or_insert(serde_json::Value::Null);
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleared_fields_are_removed_by_the_patch() {
        let patch = status_patch(&Default::default());
        assert_eq!(patch["missingModels"], serde_json::Value::Null);
        assert!(patch.as_object().unwrap().contains_key("catalogError"));
    }

    #[test]
    fn credentials_never_show_in_the_catalog_url() {
        assert_eq!(without_credentials("http://user:pw@litellm:4000/"), "http://litellm:4000");
        assert_eq!(without_credentials("https://h/base"), "https://h/base");
    }

    #[tokio::test]
    async fn a_changed_file_ticks() {
        let dir = std::env::temp_dir().join(format!("weaver-poll-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("roles.yaml");
        let mut ticks = Box::pin(file_changes(vec![file.clone()], Duration::from_millis(20)));
        std::fs::write(&file, "roles: {}\n").unwrap();
        tokio::time::timeout(Duration::from_secs(5), ticks.next()).await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        tokio::time::timeout(Duration::from_secs(5), ticks.next()).await.unwrap();
    }
}
