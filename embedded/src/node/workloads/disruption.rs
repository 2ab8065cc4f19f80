//! PodDisruptionBudgets: how many of the pods a budget selects are healthy, how many must stay
//! healthy, and so how many may be evicted now. This is what kube-controller-manager's
//! disruption controller writes into a budget's status, and what the API server's eviction
//! subresource (`server/eviction.rs`) reads and decrements.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::node::pods::{is_deleting, is_ready};
use crate::selectors::LabelSelector;

/// How long an eviction the API server granted keeps its pod out of the healthy count while
/// the pod is not yet marked for deletion (upstream's `DeletionTimeout`).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(120);

/// The condition type a budget's status carries.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";

/// Whether the budget selects the pod (policy/v1: a missing selector selects nothing, an empty
/// one every pod of the namespace).
pub fn selects(budget: &PodDisruptionBudget, pod: &Pod) -> bool {
    if budget.metadata.namespace != pod.metadata.namespace {
        return false;
    }
    let Some(selector) = budget.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return false;
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    LabelSelector::from_metav1(selector).is_ok_and(|s| s.matches(&labels))
}

/// Whether the budget's size depends on its pods' controllers' replicas (a `maxUnavailable`, or a
/// percentage `minAvailable`), rather than on the pods found.
pub fn needs_scale(budget: &PodDisruptionBudget) -> bool {
    let (min, max) = bounds(budget);
    max.is_some() || matches!(min, Some(IntOrString::String(_)))
}

/// The budget's `minAvailable` and `maxUnavailable`.
fn bounds(budget: &PodDisruptionBudget) -> (Option<&IntOrString>, Option<&IntOrString>) {
    let spec = budget.spec.as_ref();
    (spec.and_then(|s| s.min_available.as_ref()), spec.and_then(|s| s.max_unavailable.as_ref()))
}

/// The budget's status, given the pods it selects and, when [`needs_scale`], their controllers'
/// replicas (`Err` says why they are unknown: no eviction is allowed then). Returns the status
/// and when it must be worked out again (an eviction's grace in `disruptedPods` running out).
pub fn plan_status(
    budget: &PodDisruptionBudget,
    pods: &[&Pod],
    scale: Result<i32, String>,
    now: Timestamp,
) -> (PodDisruptionBudgetStatus, Option<SignedDuration>) {
    let previous = budget.status.clone().unwrap_or_default();
    let mut disrupted = BTreeMap::new();
    let mut recheck: Option<SignedDuration> = None;
    for (name, at) in previous.disrupted_pods.iter().flatten() {
        let Some(pod) = pods.iter().find(|p| p.metadata.name.as_deref() == Some(name)) else {
            continue;
        };
        let left = (at.0 + DELETION_TIMEOUT).duration_since(now);
        if is_deleting(pod) || left <= SignedDuration::ZERO {
            continue;
        }
        disrupted.insert(name.clone(), at.clone());
        recheck = Some(recheck.map_or(left, |r| r.min(left)));
    }
    let healthy = pods
        .iter()
        .filter(|p| !is_deleting(p) && is_ready(p))
        .filter(|p| !disrupted.contains_key(p.metadata.name.as_deref().unwrap_or_default()))
        .count();
    let current_healthy = i32::try_from(healthy).unwrap_or(i32::MAX);
    let found = i32::try_from(pods.len()).unwrap_or(i32::MAX);
    let sized = if needs_scale(budget) { scale.map(Some) } else { Ok(None) };
    let generation = budget.metadata.generation.unwrap_or_default();
    let (expected, desired, allowed, failure) = match sized.and_then(|s| sizes(budget, found, s)) {
        Ok((expected, desired)) => (expected, desired, (current_healthy - desired).max(0), None),
        Err(why) => (0, 0, 0, Some(why)),
    };
    let (status, reason, message) = match (&failure, allowed > 0) {
        (Some(why), _) => ("False", "SyncFailed", why.clone()),
        (None, true) => ("True", "SufficientPods", String::new()),
        (None, false) => ("False", "InsufficientPods", String::new()),
    };
    let kept = previous.conditions.iter().flatten().find(|c| c.type_ == DISRUPTION_ALLOWED);
    let since = match kept {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    let condition = Condition {
        type_: DISRUPTION_ALLOWED.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time: since,
        observed_generation: None,
    };
    let status = PodDisruptionBudgetStatus {
        observed_generation: Some(generation),
        disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
        disruptions_allowed: allowed,
        current_healthy,
        desired_healthy: desired,
        expected_pods: expected,
        conditions: Some(vec![condition]),
    };
    (status, recheck)
}

/// The pods expected and those that must stay healthy: `minAvailable` as a number counts the pods
/// found; a percentage, or `maxUnavailable`, is of the controllers' replicas (rounded up, as
/// upstream does).
fn sizes(
    budget: &PodDisruptionBudget,
    found: i32,
    scale: Option<i32>,
) -> Result<(i32, i32), String> {
    let expected = scale.unwrap_or(found);
    let desired = match bounds(budget) {
        (Some(IntOrString::Int(n)), _) => *n,
        (Some(IntOrString::String(percent)), _) => scaled(percent, expected)?,
        (None, Some(IntOrString::Int(n))) => (expected - n).max(0),
        (None, Some(IntOrString::String(percent))) => {
            (expected - scaled(percent, expected)?).max(0)
        }
        // Neither: nothing has to stay healthy, as upstream reads such a budget.
        (None, None) => 0,
    };
    Ok((expected, desired))
}

/// `percent` (`"50%"`) of `total`, rounded up.
fn scaled(percent: &str, total: i32) -> Result<i32, String> {
    let value: i64 = percent.strip_suffix('%').and_then(|p| p.parse().ok()).ok_or_else(|| {
        format!(
            "invalid value for IntOrString: invalid type: string is not a percentage: {percent:?}"
        )
    })?;
    let product = value * i64::from(total);
    Ok(i32::try_from((product + 99).div_euclid(100)).unwrap_or(i32::MAX))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as MetaSelector, ObjectMeta,
    };

    use super::*;

    fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn budget(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                generation: Some(2),
                ..ObjectMeta::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available: min,
                max_unavailable: max,
                selector: Some(MetaSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                    ..MetaSelector::default()
                }),
                ..PodDisruptionBudgetSpec::default()
            }),
            status: None,
        }
    }

    fn pod(name: &str, ready: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
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

    fn allowed(status: &PodDisruptionBudgetStatus) -> (i32, i32, i32, i32) {
        (
            status.expected_pods,
            status.desired_healthy,
            status.current_healthy,
            status.disruptions_allowed,
        )
    }

    #[test]
    fn a_number_of_available_pods_counts_the_healthy_ones_found() {
        let pods = [pod("a", true), pod("b", true), pod("c", false)];
        let pods: Vec<&Pod> = pods.iter().collect();
        let budget = budget(Some(IntOrString::Int(1)), None);
        assert!(!needs_scale(&budget));
        let (status, recheck) = plan_status(&budget, &pods, Err("unused".into()), t(0));
        assert_eq!(allowed(&status), (3, 1, 2, 1));
        assert_eq!(status.observed_generation, Some(2));
        let condition = &status.conditions.unwrap()[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("True", "SufficientPods")
        );
        assert_eq!(recheck, None);
    }

    #[test]
    fn percentages_and_max_unavailable_are_of_the_controllers_replicas_rounded_up() {
        let pods = [pod("a", true), pod("b", true)];
        let pods: Vec<&Pod> = pods.iter().collect();
        let half = budget(Some(IntOrString::String("50%".into())), None);
        assert!(needs_scale(&half));
        assert_eq!(allowed(&plan_status(&half, &pods, Ok(3), t(0)).0), (3, 2, 2, 0));
        let one_down = budget(None, Some(IntOrString::Int(1)));
        assert_eq!(allowed(&plan_status(&one_down, &pods, Ok(3), t(0)).0), (3, 2, 2, 0));
        let quarter = budget(None, Some(IntOrString::String("25%".into())));
        assert_eq!(allowed(&plan_status(&quarter, &pods, Ok(2), t(0)).0), (2, 1, 2, 1));
    }

    #[test]
    fn unknown_replicas_allow_nothing_and_say_why() {
        let pods = [pod("a", true)];
        let pods: Vec<&Pod> = pods.iter().collect();
        let budget = budget(None, Some(IntOrString::Int(1)));
        let (status, _) =
            plan_status(&budget, &pods, Err("found no controller ref for pod \"a\"".into()), t(0));
        assert_eq!(status.disruptions_allowed, 0);
        let condition = &status.conditions.unwrap()[0];
        assert_eq!(
            (condition.reason.as_str(), condition.message.as_str()),
            ("SyncFailed", "found no controller ref for pod \"a\"")
        );
    }

    #[test]
    fn an_evicted_pod_stays_out_of_the_count_until_it_is_deleted_or_its_grace_runs_out() {
        let pods = [pod("a", true), pod("b", true)];
        let mut budget = budget(Some(IntOrString::Int(1)), None);
        budget.status = Some(PodDisruptionBudgetStatus {
            disrupted_pods: Some(BTreeMap::from([
                ("a".into(), Time(t(0))),
                ("gone".into(), Time(t(0))),
            ])),
            ..PodDisruptionBudgetStatus::default()
        });
        let refs: Vec<&Pod> = pods.iter().collect();
        let (status, recheck) = plan_status(&budget, &refs, Err(String::new()), t(30));
        assert_eq!(allowed(&status), (2, 1, 1, 0));
        assert_eq!(status.disrupted_pods.as_ref().unwrap().keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(recheck, Some(SignedDuration::from_secs(90)));
        let condition = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "InsufficientPods")
        );

        let (later, recheck) = plan_status(&budget, &refs, Err(String::new()), t(121));
        assert_eq!(allowed(&later), (2, 1, 2, 1));
        assert_eq!((later.disrupted_pods, recheck), (None, None));

        let mut deleting = pods.clone();
        deleting[0].metadata.deletion_timestamp = Some(Time(t(31)));
        let refs: Vec<&Pod> = deleting.iter().collect();
        let (status, _) = plan_status(&budget, &refs, Err(String::new()), t(32));
        assert_eq!(allowed(&status), (2, 1, 1, 0), "a deleting pod is not healthy");
        assert_eq!(status.disrupted_pods, None);
    }

    #[test]
    fn the_condition_keeps_its_transition_time_while_its_status_holds() {
        let pods = [pod("a", true), pod("b", true)];
        let pods: Vec<&Pod> = pods.iter().collect();
        let mut budget = budget(Some(IntOrString::Int(1)), None);
        let (first, _) = plan_status(&budget, &pods, Err(String::new()), t(0));
        budget.status = Some(first);
        let (second, _) = plan_status(&budget, &pods, Err(String::new()), t(60));
        assert_eq!(second.conditions.unwrap()[0].last_transition_time, Time(t(0)));
    }

    #[test]
    fn the_selector_follows_policy_v1() {
        let web = pod("a", true);
        let mut all = budget(Some(IntOrString::Int(1)), None);
        assert!(selects(&all, &web));
        all.spec.as_mut().unwrap().selector = Some(MetaSelector::default());
        assert!(selects(&all, &web), "an empty selector selects every pod of the namespace");
        all.spec.as_mut().unwrap().selector = None;
        assert!(!selects(&all, &web), "a missing one none");
        let mut elsewhere = budget(Some(IntOrString::Int(1)), None);
        elsewhere.metadata.namespace = Some("other".into());
        assert!(!selects(&elsewhere, &web));
    }
}
