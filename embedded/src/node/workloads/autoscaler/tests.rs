//! Tests of the autoscaler's decisions.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HPAScalingPolicy, HPAScalingRules,
    HorizontalPodAutoscalerBehavior, MetricSpec, MetricTarget, ResourceMetricSource,
};

use super::*;

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn hpa(
    metric: MetricTarget,
    min: i32,
    max: i32,
    down_window: Option<i32>,
) -> HorizontalPodAutoscaler {
    let behavior = down_window.map(|seconds| HorizontalPodAutoscalerBehavior {
        scale_down: Some(HPAScalingRules {
            stabilization_window_seconds: Some(seconds),
            ..HPAScalingRules::default()
        }),
        scale_up: None,
    });
    HorizontalPodAutoscaler {
        spec: Some(HorizontalPodAutoscalerSpec {
            min_replicas: Some(min),
            max_replicas: max,
            behavior,
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            metrics: Some(vec![MetricSpec {
                type_: "Resource".into(),
                resource: Some(ResourceMetricSource { name: "cpu".into(), target: metric }),
                ..MetricSpec::default()
            }]),
        }),
        ..HorizontalPodAutoscaler::default()
    }
}

fn utilization(percent: i32) -> MetricTarget {
    MetricTarget {
        type_: "Utilization".into(),
        average_utilization: Some(percent),
        ..MetricTarget::default()
    }
}

/// Pods requesting 100m of CPU each, using `millicores` (`None`: no reading).
fn pods(millicores: &[Option<i128>]) -> Vec<PodSample> {
    millicores
        .iter()
        .enumerate()
        .map(|(i, used)| PodSample {
            name: format!("web-{i}"),
            requests: BTreeMap::from([("cpu".into(), 100)]),
            usage: used.map(|m| BTreeMap::from([("cpu".into(), m)])),
        })
        .collect()
}

/// A history of one recommendation.
fn recommended(replicas: i32, at: Timestamp) -> History {
    History { recommendations: vec![Recommended { at, replicas }], ..History::default() }
}

fn condition(decision: &Decision, type_: &str) -> (String, String) {
    let c = decision.status.conditions.iter().flatten().find(|c| c.type_ == type_).unwrap();
    (c.status.clone(), c.reason.clone().unwrap_or_default())
}

#[test]
fn busy_pods_scale_up_by_their_utilization_and_say_why() {
    let hpa = hpa(utilization(50), 1, 10, None);
    let decision =
        decide(&hpa, 2, Ok(pods(&[Some(100), Some(100)])), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 4, "200 % of target on two pods wants four");
    assert_eq!(decision.status.desired_replicas, 4);
    assert_eq!(decision.status.last_scale_time, Some(Time(t(0))));
    let reading = &decision.status.current_metrics.as_ref().unwrap()[0];
    let current = &reading.resource.as_ref().unwrap().current;
    assert_eq!(
        (current.average_utilization, current.average_value.clone()),
        (Some(100), Some(Quantity("100m".into())))
    );
    assert_eq!(condition(&decision, "AbleToScale"), ("True".into(), "SucceededRescale".into()));
    assert_eq!(condition(&decision, "ScalingActive"), ("True".into(), "ValidMetricFound".into()));
    assert_eq!(
        decision.event.unwrap().note,
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    );
}

#[test]
fn a_reading_within_a_tenth_of_its_target_changes_nothing() {
    let hpa = hpa(utilization(50), 1, 10, None);
    let decision = decide(&hpa, 2, Ok(pods(&[Some(54), Some(52)])), &mut History::default(), t(0));
    assert_eq!(condition(&decision, "AbleToScale"), ("True".into(), "ReadyForNewScale".into()));
    assert_eq!((decision.replicas, decision.event), (2, None));
}

#[test]
fn without_behavior_a_scale_up_reaches_at_most_twice_the_replicas_or_four() {
    let hpa = hpa(utilization(10), 1, 100, None);
    let busy = |n: usize| pods(&vec![Some(100); n]);
    let decision = decide(&hpa, 1, Ok(busy(1)), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 4, "at least four");
    assert_eq!(condition(&decision, "ScalingLimited"), ("True".into(), "ScaleUpLimit".into()));
    assert_eq!(decide(&hpa, 6, Ok(busy(6)), &mut History::default(), t(0)).replicas, 12);
    let capped = self::hpa(utilization(10), 1, 5, None);
    let decision = decide(&capped, 3, Ok(busy(3)), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 5);
    assert_eq!(condition(&decision, "ScalingLimited"), ("True".into(), "TooManyReplicas".into()));
}

/// Scaling rules with a stabilization `window`, a `select` policy and `policies` of (type,
/// value, period).
fn rules(
    window: Option<i32>,
    select: Option<&str>,
    policies: &[(&str, i32, i32)],
) -> HPAScalingRules {
    let policies: Vec<HPAScalingPolicy> = policies
        .iter()
        .map(|(type_, value, period_seconds)| HPAScalingPolicy {
            type_: (*type_).into(),
            value: *value,
            period_seconds: *period_seconds,
        })
        .collect();
    HPAScalingRules {
        stabilization_window_seconds: window,
        select_policy: select.map(Into::into),
        policies: (!policies.is_empty()).then_some(policies),
        ..HPAScalingRules::default()
    }
}

fn with_behavior(
    mut hpa: HorizontalPodAutoscaler,
    scale_up: Option<HPAScalingRules>,
    scale_down: Option<HPAScalingRules>,
) -> HorizontalPodAutoscaler {
    let behavior = HorizontalPodAutoscalerBehavior { scale_up, scale_down };
    hpa.spec.as_mut().unwrap().behavior = Some(behavior);
    hpa
}

#[test]
fn default_rules_scale_up_by_four_pods_or_double_whichever_is_more() {
    let hpa = with_behavior(hpa(utilization(10), 1, 100, None), None, None);
    let busy = |n: usize| pods(&vec![Some(100); n]);
    assert_eq!(decide(&hpa, 2, Ok(busy(2)), &mut History::default(), t(0)).replicas, 6, "2 + 4");
    assert_eq!(decide(&hpa, 10, Ok(busy(10)), &mut History::default(), t(0)).replicas, 20);
}

#[test]
fn a_pods_policy_limits_a_scale_down_per_period_counting_recent_rescales() {
    let one_a_minute = rules(Some(0), None, &[("Pods", 1, 60)]);
    let hpa = with_behavior(hpa(utilization(50), 1, 10, None), None, Some(one_a_minute));
    let idle = pods(&[Some(1); 5]);
    let mut history = History::default();
    let decision = decide(&hpa, 5, Ok(idle.clone()), &mut history, t(0));
    assert_eq!(decision.replicas, 4);
    assert_eq!(condition(&decision, "ScalingLimited"), ("True".into(), "ScaleDownLimit".into()));
    history.rescaled(5, 4, t(0));
    let decision = decide(&hpa, 4, Ok(idle[..4].to_vec()), &mut history, t(30));
    assert_eq!((decision.replicas, &decision.event), (4, &None), "one pod a minute is spent");
    assert_eq!(condition(&decision, "ScalingLimited"), ("True".into(), "ScaleDownLimit".into()));
    let decision = decide(&hpa, 4, Ok(idle[..4].to_vec()), &mut history, t(61));
    assert_eq!(decision.replicas, 3, "a minute later the next one may go");
}

#[test]
fn select_policy_min_takes_the_smaller_change_and_disabled_none() {
    let busy = pods(&[Some(100); 10]);
    let policies = [("Pods", 2, 60), ("Percent", 50, 60)];
    let replicas = |select: &str| {
        let up = rules(None, Some(select), &policies);
        let hpa = with_behavior(hpa(utilization(10), 1, 100, None), Some(up), None);
        decide(&hpa, 10, Ok(busy.clone()), &mut History::default(), t(0)).replicas
    };
    assert_eq!(replicas("Max"), 15, "half again");
    assert_eq!(replicas("Min"), 12, "two more");
    assert_eq!(replicas("Disabled"), 10);
}

#[test]
fn a_scale_up_window_waits_for_recommendations_to_agree() {
    let up = rules(Some(60), None, &[]);
    let hpa = with_behavior(hpa(utilization(50), 1, 10, None), Some(up), None);
    let mut history = recommended(2, t(0));
    let busy = pods(&[Some(100), Some(100)]);
    let decision = decide(&hpa, 2, Ok(busy.clone()), &mut history, t(30));
    assert_eq!((decision.replicas, &decision.event), (2, &None), "2 was recommended 30 s ago");
    assert_eq!(condition(&decision, "AbleToScale"), ("True".into(), "ScaleUpStabilized".into()));
    let decision = decide(&hpa, 2, Ok(busy), &mut history, t(61));
    assert_eq!(decision.replicas, 4, "every recommendation of the last minute wants 4");
}

#[test]
fn a_target_outside_its_bounds_is_brought_within_them_whatever_its_pods_use() {
    let hpa = hpa(utilization(50), 2, 5, None);
    let unread = || Err("no metrics".to_owned());
    let decision = decide(&hpa, 8, unread(), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 5);
    assert_eq!(
        decision.event.unwrap().note,
        "New size: 5; reason: Current number of replicas above Spec.MaxReplicas"
    );
    let decision = decide(&hpa, 1, unread(), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 2);
    assert_eq!(
        decision.event.unwrap().note,
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    );
}

#[test]
fn scale_down_waits_out_its_stabilization_window() {
    let idle = pods(&[Some(5), Some(5), Some(5), Some(5)]);
    let default_window = hpa(utilization(50), 1, 10, None);
    let mut history = recommended(4, t(0));
    let decision = decide(&default_window, 4, Ok(idle.clone()), &mut history, t(60));
    assert_eq!(decision.replicas, 4, "a recommendation of 4 a minute ago holds");
    let decision = decide(&default_window, 4, Ok(idle.clone()), &mut history, t(301));
    assert_eq!(decision.replicas, 1, "five minutes later it does not");
    assert_eq!(decision.event.unwrap().note, "New size: 1; reason: All metrics below target");

    let no_window = hpa(utilization(50), 2, 10, Some(0));
    let mut history = recommended(4, t(0));
    let decision = decide(&no_window, 4, Ok(idle), &mut history, t(1));
    assert_eq!(decision.replicas, 2, "at once, down to the minimum");
    assert_eq!(condition(&decision, "ScalingLimited"), ("True".into(), "TooFewReplicas".into()));
}

#[test]
fn unread_pods_count_as_idle_going_up_and_on_target_going_down() {
    let hpa = hpa(utilization(50), 1, 10, Some(0));
    // Up: 400 % on one pod, the unread one idle: 200 % over two pods wants four.
    let decision = decide(&hpa, 2, Ok(pods(&[Some(200), None])), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 4);
    // 200 % on one, the other idle, is on target: nothing changes.
    let decision = decide(&hpa, 2, Ok(pods(&[Some(100), None])), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 2);
    // Down: 10 % on one pod, the unread one on target: 30 % over two wants two (no change
    // beyond tolerance would turn it around).
    let decision = decide(&hpa, 3, Ok(pods(&[Some(10), None])), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 2);
}

#[test]
fn what_cannot_be_measured_stops_scaling_and_says_why() {
    let hpa = hpa(utilization(50), 1, 10, None);
    let mut unrequested = pods(&[Some(100)]);
    unrequested[0].requests.clear();
    let decision = decide(&hpa, 2, Ok(unrequested), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 2);
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("False".into(), "FailedGetResourceMetric".into())
    );
    let message = |d: &Decision| {
        let c = d.status.conditions.iter().flatten().find(|c| c.type_ == "ScalingActive").unwrap();
        c.message.clone().unwrap()
    };
    assert_eq!(message(&decision), "missing request for cpu in pod web-0");
    let decision = decide(&hpa, 2, Ok(pods(&[None])), &mut History::default(), t(0));
    assert_eq!(
        message(&decision),
        "did not receive metrics for targeted pods (pods might be unready)"
    );
    let decision = decide(&hpa, 0, Ok(pods(&[])), &mut History::default(), t(0));
    assert_eq!(condition(&decision, "ScalingActive"), ("False".into(), "ScalingDisabled".into()));
}

#[test]
fn an_average_value_target_scales_on_usage_per_pod() {
    let target = MetricTarget {
        type_: "AverageValue".into(),
        average_value: Some(Quantity("50m".into())),
        ..MetricTarget::default()
    };
    let hpa = hpa(target, 1, 10, None);
    let decision = decide(&hpa, 3, Ok(pods(&[Some(100); 3])), &mut History::default(), t(0));
    assert_eq!(decision.replicas, 6, "twice the target per pod wants twice the pods");
    let reading = &decision.status.current_metrics.unwrap()[0];
    assert_eq!(
        reading.resource.as_ref().unwrap().current.average_value,
        Some(Quantity("100m".into()))
    );
}

#[test]
fn a_target_that_cannot_be_scaled_says_so_and_keeps_the_rest() {
    let mut hpa = hpa(utilization(50), 1, 10, None);
    hpa.status = Some(
        decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut History::default(), t(0)).status,
    );
    let status = unable(&hpa, "FailedGetScale", "deployments.apps \"web\" not found", t(5));
    let conditions = status.conditions.unwrap();
    let types: Vec<(&str, &str)> =
        conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect();
    assert_eq!(
        types,
        [("AbleToScale", "False"), ("ScalingActive", "True"), ("ScalingLimited", "False")]
    );
    assert_eq!(conditions[0].last_transition_time, Some(Time(t(5))));
    assert_eq!(status.desired_replicas, 2);
}

#[test]
fn the_histories_of_autoscalers_that_stopped_passing_are_forgotten() {
    let mut histories = HashMap::from([
        ("live".to_owned(), recommended(2, t(3590))),
        ("gone".to_owned(), recommended(2, t(0))),
        ("empty".to_owned(), History::default()),
    ]);
    forget_stale(&mut histories, t(3600));
    assert_eq!(histories.keys().collect::<Vec<_>>(), ["live"]);
}

#[test]
fn a_condition_keeps_its_transition_time_while_its_status_holds() {
    let mut hpa = hpa(utilization(50), 1, 10, None);
    let first = decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut History::default(), t(0));
    hpa.status = Some(first.status);
    let second = decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut History::default(), t(30));
    let active =
        second.status.conditions.unwrap().into_iter().find(|c| c.type_ == "ScalingActive").unwrap();
    assert_eq!(active.last_transition_time, Some(Time(t(0))));
}
