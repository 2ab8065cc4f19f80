//! HorizontalPodAutoscalers: the replicas a workload should run for its pods' resource use to
//! meet the autoscaler's targets, and the status that says so (what kube-controller-manager's
//! HPA controller computes from metrics-server's readings; here the readings are the embedded
//! API server's `metrics.k8s.io`, measured from the local node's processes).
//!
//! As upstream: a target within 10 % of the reading changes nothing; pods without a reading
//! count as using nothing when scaling up and as exactly on target when scaling down; several
//! metrics take the largest recommendation; the stabilization windows and scale rates of
//! `normalize` then apply. A target outside the autoscaler's bounds is brought within them
//! whatever its pods use. Only `Resource` metrics (`cpu`, `memory`) are read.

mod normalize;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerSpec,
    HorizontalPodAutoscalerStatus, MetricStatus, MetricValueStatus, ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use self::normalize::{History, Recommended, Rescale};
use crate::node::events::EventNote;

/// How far a reading may be from its target before the replicas change (upstream's default).
const TOLERANCE: f64 = 0.1;

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

/// What one pass of the autoscaler decides.
#[derive(Debug, PartialEq)]
pub struct Decision {
    /// The replicas the target should have now (its current ones when nothing changes).
    pub replicas: i32,
    /// The status to write.
    pub status: HorizontalPodAutoscalerStatus,
    /// The event of a rescale.
    pub event: Option<EventNote>,
}

/// Decides the target's replicas from its `current` ones, the selected pods' `samples` (`Err`
/// when they could not be read) and the autoscaler's `history` (to which this pass's
/// recommendation is added, older ones dropped).
pub fn decide(
    hpa: &HorizontalPodAutoscaler,
    current: i32,
    samples: Result<Vec<PodSample>, String>,
    history: &mut History,
    now: Timestamp,
) -> Decision {
    let spec = hpa.spec.clone().unwrap_or_default();
    let previous = hpa.status.clone().unwrap_or_default();
    let (min, max) = (spec.min_replicas.unwrap_or(1), spec.max_replicas);
    let kept = previous.conditions.unwrap_or_default();
    let mut conditions = Conditions { previous: kept.clone(), now, out: kept };
    // Conditions not set below keep what the last pass found, as upstream's do.
    conditions.set(
        "AbleToScale",
        true,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    );
    let mut status = HorizontalPodAutoscalerStatus {
        current_replicas: Some(current),
        desired_replicas: current,
        last_scale_time: previous.last_scale_time,
        observed_generation: hpa.metadata.generation,
        current_metrics: previous.current_metrics,
        conditions: None,
    };
    let (replicas, reason) = if current == 0 && min > 0 {
        conditions.set(
            "ScalingActive",
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        );
        (current, String::new())
    } else if current > max {
        (max, "Current number of replicas above Spec.MaxReplicas".to_owned())
    } else if current < min {
        (min, "Current number of replicas below Spec.MinReplicas".to_owned())
    } else {
        let (wanted, metrics, measured) =
            match samples.and_then(|samples| recommend(&spec, current, &samples)) {
                Ok(found) => found,
                Err(why) => {
                    conditions.set("ScalingActive", false, "FailedGetResourceMetric", &why);
                    status.conditions = Some(conditions.finish());
                    return Decision { replicas: current, status, event: None };
                }
            };
        conditions.set(
            "ScalingActive",
            true,
            "ValidMetricFound",
            &format!("the HPA was able to successfully calculate a replica count from {measured}"),
        );
        status.current_metrics = Some(metrics);
        let behavior = spec.behavior.as_ref();
        let normalized = normalize::normalize(behavior, (min, max), current, wanted, history, now);
        let (able, able_message) = normalized.able;
        conditions.set("AbleToScale", true, able, able_message);
        let (limited, limited_message) = normalized.limited;
        conditions.set("ScalingLimited", limited != "DesiredWithinRange", limited, limited_message);
        let reason = if normalized.replicas > current {
            format!("{measured} above target")
        } else {
            "All metrics below target".to_owned()
        };
        (normalized.replicas, reason)
    };
    status.desired_replicas = replicas;
    let event = (replicas != current).then(|| {
        EventNote::normal("SuccessfulRescale", format!("New size: {replicas}; reason: {reason}"))
    });
    if event.is_some() {
        status.last_scale_time = Some(Time(now));
        conditions.set(
            "AbleToScale",
            true,
            "SucceededRescale",
            &format!("the HPA controller was able to update the target scale to {replicas}"),
        );
    }
    status.conditions = Some(conditions.finish());
    Decision { replicas, status, event }
}

/// Drops the histories (by autoscaler) that saw no pass for an hour, the longest window there
/// is: their autoscalers were deleted.
pub fn forget_stale(histories: &mut HashMap<String, History>, now: Timestamp) {
    let hour = SignedDuration::from_secs(3600);
    histories.retain(|_, h| h.last_pass().is_some_and(|at| now.duration_since(at) < hour));
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

/// `milli` milli-units of `resource` as a Quantity: CPU in millicores, memory in bytes.
fn quantity(resource: &str, milli: i128) -> Quantity {
    if resource == "memory" {
        Quantity(format!("{}", milli / 1000))
    } else {
        Quantity(format!("{milli}m"))
    }
}
