//! The Schedule reconciler: reads the Runs a schedule started, lets [`schedule::decide`] say
//! what is due, then starts, cancels and deletes Runs, writes the status and sleeps until the
//! next due time.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use keelson_api_crds::workflows::{Run, Schedule};
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::names::{SCHEDULE_LABEL, label_value};
use super::reconcile::{Context, Result};
use super::schedule::{self, OwnedRun, SCHEDULED_AT_ANNOTATION};
use crate::api;

pub(super) async fn reconcile(sched: Arc<Schedule>, ctx: Arc<Context>) -> Result<Action> {
    if sched.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &ctx.client;
    let runs = Api::<Run>::namespaced(client.clone(), &sched.namespace().unwrap_or_default());
    let selector = format!("{SCHEDULE_LABEL}={}", label_value(&sched.name_any()));
    let uid = sched.metadata.uid.clone().unwrap_or_default();
    let owned: Vec<OwnedRun> = runs
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .filter(|run| run.owner_references().iter().any(|r| r.uid == uid))
        .filter_map(owned_run)
        .collect();
    let now = ctx.settings.now();
    let decision = schedule::decide(&sched, &owned, now);

    for name in &decision.cancel {
        let patch = json!({ "spec": { "cancel": true } });
        runs.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    if let Some(at) = decision.start {
        // A retried reconcile finds its run started already: the name is the due time's.
        api::create_if_absent(&runs, &schedule::build_run(&sched, at)).await?;
    }
    for name in &decision.delete {
        api::delete_if_present(&runs, name).await?;
    }
    api::write_status(client, &*sched, sched.status.as_ref(), &decision.status).await?;
    for event in decision.events {
        ctx.record(&*sched, event.warning, event.reason, event.note).await;
    }
    Ok(match decision.wake_at {
        Some(at) => Action::requeue(until(now, at)),
        None => Action::await_change(),
    })
}

/// A Run as the schedule decision reads it; runs without a readable scheduled time are not
/// the schedule's.
fn owned_run(run: &Run) -> Option<OwnedRun> {
    let scheduled_at: Timestamp = run.annotations().get(SCHEDULED_AT_ANNOTATION)?.parse().ok()?;
    let status = run.status.as_ref();
    Some(OwnedRun {
        name: run.name_any(),
        scheduled_at,
        phase: status.and_then(|s| s.phase),
        cancel_requested: run.spec.cancel,
        finished_at: status.and_then(|s| s.finished_at.as_ref()).map(|t| t.0),
    })
}

/// Time from `now` until `at` (at least a second, so a due time is never polled in a loop).
fn until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or_default().max(Duration::from_secs(1))
}
