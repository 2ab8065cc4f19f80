//! `POST pods/<name>/eviction`: deletes a pod unless that would take the PodDisruptionBudget
//! selecting it below its healthy minimum (`429`, which `kubectl drain` retries). Evicting
//! spends one of the budget's `disruptionsAllowed`, as upstream's eviction subresource does, and
//! notes the pod in the budget's `disruptedPods` until the disruption controller
//! (`node/workloads/disruption.rs`) sees it go.

use axum::http::StatusCode;
use axum::response::Response;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use crate::catalog::builtin_resource;
use crate::node::pods::{is_deleting, is_ready, is_terminal, phase};
use crate::node::workloads::disruption::{self, DISRUPTION_ALLOWED};
use crate::storage::{Entry, StoreError, WriteOp};

use super::errors::{ApiError, ApiResult};
use super::objects::meta_str;
use super::paths::resource_prefix;
use super::read::json_response;
use super::write::{body, delete_options_from, delete_with};
use super::{ApiState, ResourceRequest};

/// How often a budget's status write is retried when another write got there first.
const ATTEMPTS: usize = 20;

/// Evicts the pod the request names.
pub(crate) async fn evict(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    let name = request.target.object_name("create")?.to_owned();
    let eviction = body(&request)?;
    if meta_str(&eviction, "name").is_some_and(|named| named != name) {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let options = eviction.get("deleteOptions").unwrap_or(&Value::Null);
    let options = delete_options_from(options, &request.query)?;
    let info = &request.target.info;
    let namespace = request.target.namespace.clone().unwrap_or_default();
    for _ in 0..ATTEMPTS {
        let current = state
            .store
            .get(&request.target.key(&name))
            .ok_or_else(|| ApiError::not_found("", "pods", &name))?;
        let pod: Pod = typed(&current.object)?;
        let budgets = budgets(state, &namespace, &pod)?;
        match plan(&pod, &budgets, Timestamp::now())? {
            Step::Delete { guard } => {
                // Guarded, the pod must not have become ready (and counted) since it was read;
                // if it has, the eviction is decided again. A precondition of the caller's own
                // is the caller's to retry.
                let ours = guard && options.resource_version.is_none();
                let mut guarded = options.clone();
                if ours {
                    guarded.resource_version = Some(current.revision.to_string());
                }
                match delete_with(state, info, &current, &guarded).await {
                    Ok(_) => return Ok(success()),
                    Err(e) if ours && e.code == StatusCode::CONFLICT => continue,
                    Err(e) => return Err(e),
                }
            }
            Step::Spend { status } => {
                let (entry, _) = &budgets[0];
                if !options.dry_run && !spend(state, entry, status).await? {
                    continue;
                }
                delete_with(state, info, &current, &options).await?;
                return Ok(success());
            }
        }
    }
    Err(ApiError::internal(format!(
        "couldn't evict pod {name:?}: it or its disruption budget kept changing"
    )))
}

/// What an eviction does.
#[derive(Debug, PartialEq)]
enum Step {
    /// Delete the pod; `guard`: only the version of it that was checked.
    Delete { guard: bool },
    /// Write the budget's status with one disruption spent, then delete the pod.
    Spend { status: PodDisruptionBudgetStatus },
}

/// Decides an eviction of `pod`, given the budgets that select it (upstream's rules).
fn plan(pod: &Pod, budgets: &[(Entry, PodDisruptionBudget)], now: Timestamp) -> ApiResult<Step> {
    // A finished, pending or deleting pod disrupts nothing more.
    if is_terminal(pod) || is_deleting(pod) {
        return Ok(Step::Delete { guard: false });
    }
    if phase(pod) == "Pending" {
        return Ok(Step::Delete { guard: true });
    }
    let budget = match budgets {
        [] => return Ok(Step::Delete { guard: true }),
        [(_, budget)] => budget,
        _ => {
            return Err(ApiError::internal(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let name = budget.metadata.name.as_deref().unwrap_or_default();
    let status = budget.status.clone().unwrap_or_default();
    if !is_ready(pod) {
        let always = budget.spec.as_ref().and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
            == Some("AlwaysAllow");
        if always
            || (status.current_healthy >= status.desired_healthy && status.desired_healthy > 0)
        {
            return Ok(Step::Delete { guard: true });
        }
    }
    if status.observed_generation.unwrap_or_default()
        < budget.metadata.generation.unwrap_or_default()
    {
        return Err(processing(name));
    }
    if status.disruptions_allowed < 0 {
        return Err(ApiError::forbidden_resource(
            "policy",
            "poddisruptionbudgets",
            name,
            "pdb disruptions allowed is negative",
            "",
        ));
    }
    if status.disruptions_allowed == 0 {
        return Err(ApiError::disruption_budget(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            status.desired_healthy, status.current_healthy
        )));
    }
    let mut spent = status;
    spent.disruptions_allowed -= 1;
    if spent.disruptions_allowed == 0 {
        for condition in spent.conditions.iter_mut().flatten() {
            if condition.type_ == DISRUPTION_ALLOWED && condition.status != "False" {
                condition.status = "False".into();
                condition.reason = "InsufficientPods".into();
                condition.last_transition_time = Time(now);
            }
        }
    }
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    spent.disrupted_pods.get_or_insert_default().insert(pod_name, Time(now));
    Ok(Step::Spend { status: spent })
}

/// Writes the budget's new status, unless the budget changed since it was read (`false`).
async fn spend(
    state: &ApiState,
    entry: &Entry,
    status: PodDisruptionBudgetStatus,
) -> ApiResult<bool> {
    let mut object = Value::clone(&entry.object);
    object["status"] = json!(status);
    let write =
        WriteOp::Update { key: entry.key.clone(), expected_revision: entry.revision, object };
    match state.store.write(write).await {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(ApiError::from_store(e, "policy", "poddisruptionbudgets", "")),
    }
}

/// The stored budgets of `namespace` that select `pod`.
fn budgets(
    state: &ApiState,
    namespace: &str,
    pod: &Pod,
) -> ApiResult<Vec<(Entry, PodDisruptionBudget)>> {
    let info = builtin_resource("policy", "poddisruptionbudgets").expect("budgets are built in");
    let prefix = format!("{}{namespace}/", resource_prefix(info));
    let mut selecting = Vec::new();
    for entry in state.store.list(&prefix).entries() {
        let budget: PodDisruptionBudget = typed(&entry.object)?;
        if disruption::selects(&budget, pod) {
            selecting.push((entry.clone(), budget));
        }
    }
    Ok(selecting)
}

fn typed<T: serde::de::DeserializeOwned>(object: &Value) -> ApiResult<T> {
    serde_json::from_value(Value::clone(object))
        .map_err(|e| ApiError::internal(format!("a stored object cannot be read: {e}")))
}

/// 429 while the budget's status lags behind it.
fn processing(budget: &str) -> ApiError {
    ApiError::disruption_budget(format!(
        "The disruption budget {budget} is still being processed by the server."
    ))
}

/// What an eviction answers: `201` with a successful `Status`.
fn success() -> Response {
    let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201 });
    json_response(StatusCode::CREATED, &status, &[])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};

    use super::*;

    fn pod(phase: &str, ready: bool) -> Pod {
        Pod {
            metadata: ObjectMeta { name: Some("web-1".into()), ..ObjectMeta::default() },
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn budget(allowed: i32, current: i32, desired: i32) -> (Entry, PodDisruptionBudget) {
        let budget = PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                generation: Some(1),
                ..ObjectMeta::default()
            },
            spec: Some(PodDisruptionBudgetSpec::default()),
            status: Some(PodDisruptionBudgetStatus {
                observed_generation: Some(1),
                disruptions_allowed: allowed,
                current_healthy: current,
                desired_healthy: desired,
                conditions: Some(vec![Condition {
                    type_: DISRUPTION_ALLOWED.into(),
                    status: "True".into(),
                    reason: "SufficientPods".into(),
                    message: String::new(),
                    last_transition_time: Time(Timestamp::UNIX_EPOCH),
                    observed_generation: None,
                }]),
                ..PodDisruptionBudgetStatus::default()
            }),
        };
        let entry = Entry {
            key: "/policy/poddisruptionbudgets/default/web".into(),
            revision: 7,
            create_revision: 7,
            object: Arc::new(json!({})),
        };
        (entry, budget)
    }

    fn refusal(step: ApiResult<Step>) -> (u16, String) {
        let error = step.unwrap_err();
        let cause = error.details.and_then(|d| d.causes.first().map(|c| c.message.clone()));
        (error.code.as_u16(), cause.unwrap_or(error.message))
    }

    #[test]
    fn a_pod_no_budget_selects_or_one_that_already_ended_just_goes() {
        let now = Timestamp::UNIX_EPOCH;
        assert_eq!(plan(&pod("Running", true), &[], now).unwrap(), Step::Delete { guard: true });
        let spent = [budget(0, 1, 1)];
        assert_eq!(
            plan(&pod("Succeeded", false), &spent, now).unwrap(),
            Step::Delete { guard: false }
        );
        assert_eq!(
            plan(&pod("Pending", false), &spent, now).unwrap(),
            Step::Delete { guard: true }
        );
    }

    #[test]
    fn a_budget_with_room_spends_one_disruption_and_remembers_the_pod() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let Step::Spend { status } = plan(&pod("Running", true), &[budget(1, 2, 1)], now).unwrap()
        else {
            panic!("not spent")
        };
        assert_eq!(status.disruptions_allowed, 0);
        assert_eq!(status.disrupted_pods, Some(BTreeMap::from([("web-1".into(), Time(now))])));
        let condition = &status.conditions.unwrap()[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "InsufficientPods")
        );
    }

    #[test]
    fn a_spent_budget_refuses_with_429_naming_it() {
        let step = plan(&pod("Running", true), &[budget(0, 2, 2)], Timestamp::UNIX_EPOCH);
        assert_eq!(
            refusal(step),
            (429, "The disruption budget web needs 2 healthy pods and has 2 currently".into())
        );
        let mut stale = budget(1, 2, 1);
        stale.1.metadata.generation = Some(2);
        let step = plan(&pod("Running", true), &[stale], Timestamp::UNIX_EPOCH);
        assert_eq!(
            refusal(step),
            (429, "The disruption budget web is still being processed by the server.".into())
        );
        let two = [budget(1, 2, 1), budget(1, 2, 1)];
        assert_eq!(refusal(plan(&pod("Running", true), &two, Timestamp::UNIX_EPOCH)).0, 500);
    }

    #[test]
    fn an_unready_pod_goes_while_the_budget_is_met_or_its_policy_always_allows() {
        let now = Timestamp::UNIX_EPOCH;
        let unready = pod("Running", false);
        assert_eq!(plan(&unready, &[budget(0, 2, 2)], now).unwrap(), Step::Delete { guard: true });
        assert_eq!(refusal(plan(&unready, &[budget(0, 1, 2)], now)).0, 429);
        let mut always = budget(0, 1, 2);
        always.1.spec.as_mut().unwrap().unhealthy_pod_eviction_policy = Some("AlwaysAllow".into());
        assert_eq!(plan(&unready, &[always], now).unwrap(), Step::Delete { guard: true });
    }
}
