//! HorizontalPodAutoscalers: the replicas a workload should run for its pods' resource use to
//! meet the autoscaler's targets, and the status that says so (what kube-controller-manager's
//! HPA controller computes from metrics-server's readings; here the readings are the embedded
//! API server's `metrics.k8s.io`, measured from the local node's processes).
//!
//! As upstream: a target within 10 % of the reading changes nothing; pods without a reading
//! count as using nothing when scaling up and as exactly on target when scaling down; several
//! metrics take the largest recommendation; a scale-down keeps the largest recommendation of
//! the stabilization window (5 minutes unless `behavior` says otherwise) and a scale-up grows by
//! at most 100 % or 4 pods at a time. Only `Resource` metrics (`cpu`, `memory`) are read, and
//! `behavior` policies other than `selectPolicy: Disabled` are not applied.

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingRules, HorizontalPodAutoscaler, HorizontalPodAutoscalerBehavior,
    HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerSpec, HorizontalPodAutoscalerStatus,
    MetricStatus, MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::plan::PlanEvent;

/// How far a reading may be from its target before the replicas change (upstream's default).
const TOLERANCE: f64 = 0.1;

/// The scale-down stabilization window when `behavior` sets none.
const DOWN_WINDOW: SignedDuration = SignedDuration::from_secs(300);

/// One pod the target selects: what its containers request and, if measured, use (milli-units
/// by resource name).
#[derive(Clone, Debug, Default)]
pub struct PodSample {
    /// The pod's name.
    pub name: String,
    /// Requests summed over its containers.
    pub requests: BTreeMap<String, i128>,
    /// Usage summed over its containers; `None` when the metrics API has no reading.
    pub usage: Option<BTreeMap<String, i128>>,
}

/// An earlier recommendation, kept for the stabilization windows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recommended {
    /// When it was made.
    pub at: Timestamp,
    /// The replicas it recommended.
    pub replicas: i32,
}

/// What one pass of the autoscaler decides.
#[derive(Debug, PartialEq)]
pub struct Decision {
    /// The replicas the target should have now (its current ones when nothing changes).
    pub replicas: i32,
    /// The status to write.
    pub status: HorizontalPodAutoscalerStatus,
    /// The event of a rescale.
    pub event: Option<PlanEvent>,
}

/// Decides the target's replicas from its `current` ones, the selected pods' `samples` (`Err`
/// when they could not be read) and the `history` of recommendations (to which this pass's is
/// added, older ones dropped).
pub fn decide(
    hpa: &HorizontalPodAutoscaler,
    current: i32,
    samples: Result<Vec<PodSample>, String>,
    history: &mut Vec<Recommended>,
    now: Timestamp,
) -> Decision {
    let spec = hpa.spec.clone().unwrap_or_default();
    let previous = hpa.status.clone().unwrap_or_default();
    let min = spec.min_replicas.unwrap_or(1);
    let mut conditions =
        Conditions { previous: previous.conditions.unwrap_or_default(), now, out: vec![] };
    let mut status = HorizontalPodAutoscalerStatus {
        current_replicas: Some(current),
        desired_replicas: current,
        last_scale_time: previous.last_scale_time,
        observed_generation: hpa.metadata.generation,
        current_metrics: previous.current_metrics,
        conditions: None,
    };
    let able = |conditions: &mut Conditions| {
        conditions.set(
            "AbleToScale",
            true,
            "ReadyForNewScale",
            "recommended size matches current size",
        );
    };
    if current == 0 && min > 0 {
        able(&mut conditions);
        conditions.set(
            "ScalingActive",
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        );
        status.conditions = Some(conditions.finish());
        return Decision { replicas: current, status, event: None };
    }
    let recommendation = samples.and_then(|samples| recommend(&spec, current, &samples));
    let (wanted, metrics, reason) = match recommendation {
        Ok(found) => found,
        Err(why) => {
            able(&mut conditions);
            conditions.set("ScalingActive", false, "FailedGetResourceMetric", &why);
            status.conditions = Some(conditions.finish());
            return Decision { replicas: current, status, event: None };
        }
    };
    conditions.set(
        "ScalingActive",
        true,
        "ValidMetricFound",
        &format!("the HPA was able to successfully calculate a replica count from {reason}"),
    );
    status.current_metrics = Some(metrics);
    let stabilized = stabilize(spec.behavior.as_ref(), current, wanted, history, now);
    let (replicas, limited) = if stabilized > spec.max_replicas {
        (spec.max_replicas, Some(("TooManyReplicas", "more than the maximum")))
    } else if stabilized < min {
        (min, Some(("TooFewReplicas", "less than the minimum")))
    } else {
        (stabilized, None)
    };
    match limited {
        Some((why, than)) => conditions.set(
            "ScalingLimited",
            true,
            why,
            &format!("the desired replica count is {than} replica count"),
        ),
        None => conditions.set(
            "ScalingLimited",
            false,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        ),
    }
    status.desired_replicas = replicas;
    let event = (replicas != current).then(|| {
        let direction = if replicas > current {
            format!("{reason} above target")
        } else {
            "All metrics below target".to_owned()
        };
        PlanEvent::normal("SuccessfulRescale", format!("New size: {replicas}; reason: {direction}"))
    });
    if event.is_some() {
        status.last_scale_time = Some(Time(now));
        conditions.set(
            "AbleToScale",
            true,
            "SucceededRescale",
            &format!("the HPA controller was able to update the target scale to {replicas}"),
        );
    } else {
        able(&mut conditions);
    }
    status.conditions = Some(conditions.finish());
    Decision { replicas, status, event }
}

/// Drops the histories (by autoscaler) that saw no pass for an hour, the longest window there
/// is: their autoscalers were deleted.
pub fn forget_stale(histories: &mut HashMap<String, Vec<Recommended>>, now: Timestamp) {
    let hour = SignedDuration::from_secs(3600);
    histories.retain(|_, h| h.last().is_some_and(|r| now.duration_since(r.at) < hour));
}

/// The status of an autoscaler whose target's scale cannot be read or written: `AbleToScale`
/// false, saying why; the rest as it was.
pub fn unable(
    hpa: &HorizontalPodAutoscaler,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> HorizontalPodAutoscalerStatus {
    let previous = hpa.status.clone().unwrap_or_default();
    let kept = previous.conditions.clone().unwrap_or_default();
    let mut conditions = Conditions { previous: kept.clone(), now, out: kept };
    conditions.set("AbleToScale", false, reason, message);
    HorizontalPodAutoscalerStatus { conditions: Some(conditions.finish()), ..previous }
}

/// The conditions of this pass, keeping the transition time of those whose status held.
struct Conditions {
    previous: Vec<HorizontalPodAutoscalerCondition>,
    now: Timestamp,
    out: Vec<HorizontalPodAutoscalerCondition>,
}

impl Conditions {
    /// The conditions in upstream's order.
    fn finish(mut self) -> Vec<HorizontalPodAutoscalerCondition> {
        let rank = |c: &HorizontalPodAutoscalerCondition| {
            ["AbleToScale", "ScalingActive", "ScalingLimited"].iter().position(|t| *t == c.type_)
        };
        self.out.sort_by_key(rank);
        self.out
    }

    fn set(&mut self, type_: &str, holds: bool, reason: &str, message: &str) {
        let status = if holds { "True" } else { "False" };
        let kept = self.previous.iter().find(|c| c.type_ == type_ && c.status == status);
        self.out.retain(|c| c.type_ != type_);
        self.out.push(HorizontalPodAutoscalerCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_transition_time: kept
                .and_then(|c| c.last_transition_time.clone())
                .or(Some(Time(self.now))),
        });
    }
}

/// The largest recommendation over the spec's metrics, their readings, and what the first one
/// measures (for messages); `Err` says why no recommendation can be made.
fn recommend(
    spec: &HorizontalPodAutoscalerSpec,
    current: i32,
    samples: &[PodSample],
) -> Result<(i32, Vec<MetricStatus>, String), String> {
    let mut best: Option<(i32, String)> = None;
    let mut readings = Vec::new();
    for metric in spec.metrics.iter().flatten() {
        let Some(source) = metric.resource.as_ref().filter(|_| metric.type_ == "Resource") else {
            return Err(format!(
                "the local node reads only Resource metrics (cpu, memory), not {}",
                metric.type_
            ));
        };
        let name = source.name.as_str();
        let measured: Vec<&PodSample> = samples.iter().filter(|s| s.usage.is_some()).collect();
        if measured.is_empty() {
            return Err("did not receive metrics for targeted pods (pods might be unready)".into());
        }
        let used = |s: &PodSample| s.usage.as_ref().and_then(|u| u.get(name)).copied().unwrap_or(0);
        let missing = samples.len() - measured.len();
        let (replicas, current_value, what) = match (
            source.target.average_utilization,
            &source.target.average_value,
        ) {
            (Some(target), _) if source.target.type_ == "Utilization" => {
                let mut requested = 0;
                for sample in &measured {
                    match sample.requests.get(name).copied().filter(|r| *r > 0) {
                        Some(request) => requested += request,
                        None => {
                            return Err(format!(
                                "missing request for {name} in pod {}",
                                sample.name
                            ));
                        }
                    }
                }
                let usage: i128 = measured.iter().map(|s| used(s)).sum();
                let utilization = usage * 100 / requested;
                let per_pod = requested / measured.len() as i128;
                // Pods without a reading: on target when scaling down, idle when scaling up.
                let with_missing = |assumed: i128| {
                    (usage + assumed * missing as i128) as f64
                        / (requested + per_pod * missing as i128) as f64
                        * 100.0
                };
                let replicas = scaled(
                    current,
                    measured.len(),
                    missing,
                    utilization as f64 / f64::from(target),
                    |down| {
                        with_missing(if down { per_pod * i128::from(target) / 100 } else { 0 })
                            / f64::from(target)
                    },
                );
                let value = MetricValueStatus {
                    average_utilization: Some(i32::try_from(utilization).unwrap_or(i32::MAX)),
                    average_value: Some(quantity(name, usage / measured.len() as i128)),
                    value: None,
                };
                (replicas, value, format!("{name} resource utilization (percentage of request)"))
            }
            (_, Some(target)) if source.target.type_ == "AverageValue" => {
                let target = crate::node::quantity::parse(&target.0).map_err(|e| e.to_string())?;
                if target <= 0 {
                    return Err(format!("the averageValue target of {name} must be positive"));
                }
                let usage: i128 = measured.iter().map(|s| used(s)).sum();
                let average = usage / measured.len() as i128;
                let replicas = scaled(
                    current,
                    measured.len(),
                    missing,
                    average as f64 / target as f64,
                    |down| {
                        let assumed = if down { target } else { 0 };
                        (usage + assumed * missing as i128) as f64
                            / samples.len() as f64
                            / target as f64
                    },
                );
                let value = MetricValueStatus {
                    average_utilization: None,
                    average_value: Some(quantity(name, average)),
                    value: None,
                };
                (replicas, value, format!("{name} resource"))
            }
            _ => {
                return Err(format!(
                    "the target of {name} must be Utilization with averageUtilization or AverageValue with averageValue"
                ));
            }
        };
        readings.push(MetricStatus {
            type_: "Resource".into(),
            resource: Some(ResourceMetricStatus { name: name.to_owned(), current: current_value }),
            ..MetricStatus::default()
        });
        if best.as_ref().is_none_or(|(r, _)| replicas > *r) {
            best = Some((replicas, what));
        }
    }
    let (replicas, what) =
        best.ok_or_else(|| "the autoscaler has no metrics to scale on".to_owned())?;
    Ok((replicas, readings, what))
}

/// Replicas for a reading `ratio` times its target over `measured` pods, with `missing` pods
/// unread: `with_missing(down)` gives the ratio again counting them as upstream assumes.
fn scaled(
    current: i32,
    measured: usize,
    missing: usize,
    ratio: f64,
    with_missing: impl Fn(bool) -> f64,
) -> i32 {
    let within = |ratio: f64| (ratio - 1.0).abs() <= TOLERANCE;
    if missing == 0 {
        return if within(ratio) { current } else { ceil(ratio * measured as f64) };
    }
    if within(ratio) {
        return current;
    }
    let down = ratio < 1.0;
    let again = with_missing(down);
    // The unread pods must not turn the direction around, nor bring it within tolerance.
    if within(again) || (again < 1.0) != down {
        return current;
    }
    let replicas = ceil(again * (measured + missing) as f64);
    if down { replicas.min(current) } else { replicas.max(current) }
}

fn ceil(value: f64) -> i32 {
    // Saturating, as the replicas are clamped to the autoscaler's bounds afterwards.
    value.ceil() as i32
}

/// The recommendation after the stabilization windows and the scale-up rate, as upstream's
/// default behavior has them.
fn stabilize(
    behavior: Option<&HorizontalPodAutoscalerBehavior>,
    current: i32,
    wanted: i32,
    history: &mut Vec<Recommended>,
    now: Timestamp,
) -> i32 {
    let rules = |rules: Option<&HPAScalingRules>| {
        let window = rules
            .and_then(|r| r.stabilization_window_seconds)
            .map(|s| SignedDuration::from_secs(i64::from(s)));
        let disabled = rules.and_then(|r| r.select_policy.as_deref()) == Some("Disabled");
        (window, disabled)
    };
    let (up_window, up_disabled) = rules(behavior.and_then(|b| b.scale_up.as_ref()));
    let (down_window, down_disabled) = rules(behavior.and_then(|b| b.scale_down.as_ref()));
    let up_window = up_window.unwrap_or(SignedDuration::ZERO);
    let down_window = down_window.unwrap_or(DOWN_WINDOW);
    history.retain(|r| now.duration_since(r.at) < up_window.max(down_window));
    history.push(Recommended { at: now, replicas: wanted });
    let within = |window: SignedDuration| {
        history.iter().filter(move |r| r.at == now || now.duration_since(r.at) < window)
    };
    let up = within(up_window).map(|r| r.replicas).min().unwrap_or(wanted);
    let down = within(down_window).map(|r| r.replicas).max().unwrap_or(wanted);
    let mut replicas = current;
    if replicas < up && !up_disabled {
        replicas = up.min((current * 2).max(current + 4));
    }
    if replicas > down && !down_disabled {
        replicas = down;
    }
    replicas
}

/// `milli` milli-units of `resource` as a Quantity: CPU in millicores, memory in bytes.
fn quantity(resource: &str, milli: i128) -> Quantity {
    if resource == "memory" {
        Quantity(format!("{}", milli / 1000))
    } else {
        Quantity(format!("{milli}m"))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::autoscaling::v2::{
        CrossVersionObjectReference, MetricSpec, MetricTarget, ResourceMetricSource,
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

    fn condition(decision: &Decision, type_: &str) -> (String, String) {
        let c = decision.status.conditions.iter().flatten().find(|c| c.type_ == type_).unwrap();
        (c.status.clone(), c.reason.clone().unwrap_or_default())
    }

    #[test]
    fn busy_pods_scale_up_by_their_utilization_and_say_why() {
        let hpa = hpa(utilization(50), 1, 10, None);
        let decision = decide(&hpa, 2, Ok(pods(&[Some(100), Some(100)])), &mut vec![], t(0));
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
        assert_eq!(
            condition(&decision, "ScalingActive"),
            ("True".into(), "ValidMetricFound".into())
        );
        assert_eq!(
            decision.event.unwrap().note,
            "New size: 4; reason: cpu resource utilization (percentage of request) above target"
        );
    }

    #[test]
    fn a_reading_within_a_tenth_of_its_target_changes_nothing() {
        let hpa = hpa(utilization(50), 1, 10, None);
        let decision = decide(&hpa, 2, Ok(pods(&[Some(54), Some(52)])), &mut vec![], t(0));
        assert_eq!(condition(&decision, "AbleToScale"), ("True".into(), "ReadyForNewScale".into()));
        assert_eq!((decision.replicas, decision.event), (2, None));
    }

    #[test]
    fn scale_up_grows_by_at_most_double_or_four_and_stops_at_the_maximum() {
        let hpa = hpa(utilization(10), 1, 100, None);
        let busy = pods(&[Some(100), Some(100)]);
        assert_eq!(decide(&hpa, 2, Ok(busy.clone()), &mut vec![], t(0)).replicas, 6, "2 + 4");
        let capped = self::hpa(utilization(10), 1, 5, None);
        let decision = decide(&capped, 2, Ok(busy), &mut vec![], t(0));
        assert_eq!(decision.replicas, 5);
        assert_eq!(
            condition(&decision, "ScalingLimited"),
            ("True".into(), "TooManyReplicas".into())
        );
    }

    #[test]
    fn scale_down_waits_out_its_stabilization_window() {
        let idle = pods(&[Some(5), Some(5), Some(5), Some(5)]);
        let default_window = hpa(utilization(50), 1, 10, None);
        let mut history = vec![Recommended { at: t(0), replicas: 4 }];
        let decision = decide(&default_window, 4, Ok(idle.clone()), &mut history, t(60));
        assert_eq!(decision.replicas, 4, "a recommendation of 4 a minute ago holds");
        let decision = decide(&default_window, 4, Ok(idle.clone()), &mut history, t(301));
        assert_eq!(decision.replicas, 1, "five minutes later it does not");
        assert_eq!(decision.event.unwrap().note, "New size: 1; reason: All metrics below target");

        let no_window = hpa(utilization(50), 2, 10, Some(0));
        let mut history = vec![Recommended { at: t(0), replicas: 4 }];
        let decision = decide(&no_window, 4, Ok(idle), &mut history, t(1));
        assert_eq!(decision.replicas, 2, "at once, down to the minimum");
        assert_eq!(
            condition(&decision, "ScalingLimited"),
            ("True".into(), "TooFewReplicas".into())
        );
    }

    #[test]
    fn unread_pods_count_as_idle_going_up_and_on_target_going_down() {
        let hpa = hpa(utilization(50), 1, 10, Some(0));
        // Up: 400 % on one pod, the unread one idle: 200 % over two pods wants four.
        let decision = decide(&hpa, 2, Ok(pods(&[Some(200), None])), &mut vec![], t(0));
        assert_eq!(decision.replicas, 4);
        // 200 % on one, the other idle, is on target: nothing changes.
        let decision = decide(&hpa, 2, Ok(pods(&[Some(100), None])), &mut vec![], t(0));
        assert_eq!(decision.replicas, 2);
        // Down: 10 % on one pod, the unread one on target: 30 % over two wants two (no change
        // beyond tolerance would turn it around).
        let decision = decide(&hpa, 3, Ok(pods(&[Some(10), None])), &mut vec![], t(0));
        assert_eq!(decision.replicas, 2);
    }

    #[test]
    fn what_cannot_be_measured_stops_scaling_and_says_why() {
        let hpa = hpa(utilization(50), 1, 10, None);
        let mut unrequested = pods(&[Some(100)]);
        unrequested[0].requests.clear();
        let decision = decide(&hpa, 2, Ok(unrequested), &mut vec![], t(0));
        assert_eq!(decision.replicas, 2);
        assert_eq!(
            condition(&decision, "ScalingActive"),
            ("False".into(), "FailedGetResourceMetric".into())
        );
        let message = |d: &Decision| {
            let c =
                d.status.conditions.iter().flatten().find(|c| c.type_ == "ScalingActive").unwrap();
            c.message.clone().unwrap()
        };
        assert_eq!(message(&decision), "missing request for cpu in pod web-0");
        let decision = decide(&hpa, 2, Ok(pods(&[None])), &mut vec![], t(0));
        assert_eq!(
            message(&decision),
            "did not receive metrics for targeted pods (pods might be unready)"
        );
        let decision = decide(&hpa, 0, Ok(pods(&[])), &mut vec![], t(0));
        assert_eq!(
            condition(&decision, "ScalingActive"),
            ("False".into(), "ScalingDisabled".into())
        );
    }

    #[test]
    fn an_average_value_target_scales_on_usage_per_pod() {
        let target = MetricTarget {
            type_: "AverageValue".into(),
            average_value: Some(Quantity("50m".into())),
            ..MetricTarget::default()
        };
        let hpa = hpa(target, 1, 10, None);
        let decision = decide(&hpa, 2, Ok(pods(&[Some(150), Some(150)])), &mut vec![], t(0));
        assert_eq!(decision.replicas, 6);
        let reading = &decision.status.current_metrics.unwrap()[0];
        assert_eq!(
            reading.resource.as_ref().unwrap().current.average_value,
            Some(Quantity("150m".into()))
        );
    }

    #[test]
    fn a_target_that_cannot_be_scaled_says_so_and_keeps_the_rest() {
        let mut hpa = hpa(utilization(50), 1, 10, None);
        hpa.status =
            Some(decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut vec![], t(0)).status);
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
            ("live".to_owned(), vec![Recommended { at: t(3590), replicas: 2 }]),
            ("gone".to_owned(), vec![Recommended { at: t(0), replicas: 2 }]),
            ("empty".to_owned(), vec![]),
        ]);
        forget_stale(&mut histories, t(3600));
        assert_eq!(histories.keys().collect::<Vec<_>>(), ["live"]);
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut hpa = hpa(utilization(50), 1, 10, None);
        let first = decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut vec![], t(0));
        hpa.status = Some(first.status);
        let second = decide(&hpa, 2, Ok(pods(&[Some(50), Some(50)])), &mut vec![], t(30));
        let active = second
            .status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "ScalingActive")
            .unwrap();
        assert_eq!(active.last_transition_time, Some(Time(t(0))));
    }
}
