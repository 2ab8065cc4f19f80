//! Writing a pod's status against concurrent writers: the scheduler, the kubelet and whoever
//! sets readiness-gate conditions all write the same `status`, so each write is computed from
//! the stored pod and made with its `resourceVersion` as a precondition.

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// How often a write is recomputed after losing to another writer.
const CONFLICT_RETRIES: usize = 8;

/// Writes the status `change` computes from the stored pod (`None`: nothing to write), re-reading
/// and recomputing after a conflict so that nothing another writer wrote in between is lost.
/// Whether a write happened; a pod that is gone, or is another pod of the same name than `uid`,
/// is not written.
pub async fn update(
    api: &Api<Pod>,
    name: &str,
    uid: Option<&str>,
    change: impl Fn(&Pod) -> Option<Value>,
) -> Result<bool, kube::Error> {
    for _ in 0..CONFLICT_RETRIES {
        let Some(current) = api.get_opt(name).await? else { return Ok(false) };
        if uid.is_some_and(|uid| current.uid().as_deref() != Some(uid)) {
            return Ok(false);
        }
        let Some(status) = change(&current) else { return Ok(false) };
        let patch = json!({
            "metadata": { "resourceVersion": current.resource_version() },
            "status": status,
        });
        match api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// The pod's conditions with a `DisruptionTarget` condition (true, `reason`, `message`) in place
/// of any it had: how upstream's controllers mark a pod they are about to delete.
pub fn with_disruption_target(pod: &Pod, reason: &str, message: String) -> Vec<PodCondition> {
    let mut conditions = pod.status.as_ref().and_then(|s| s.conditions.clone()).unwrap_or_default();
    conditions.retain(|c| c.type_ != "DisruptionTarget");
    conditions.push(PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: Some(Time(jiff::Timestamp::now())),
        ..PodCondition::default()
    });
    conditions
}
