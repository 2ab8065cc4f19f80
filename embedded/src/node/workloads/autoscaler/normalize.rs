//! From the metrics' recommendation to the replicas to set, as upstream's HPA controller
//! normalizes it: stabilization windows, then scale rates and the autoscaler's bounds.
//!
//! An autoscaler with `behavior` follows its scaling rules, each direction's missing fields
//! defaulted as the API server defaults them: scale up with no stabilization window by the
//! larger of 4 pods and 100 % per 15 s, scale down with a 5-minute window by up to 100 % per
//! 15 s. A policy limits the change over its period: the replicas at the period's start are
//! the current ones less the rescales made within it. One without `behavior` keeps upstream's
//! fixed rules: a 5-minute scale-down window, and a scale-up to at most twice the current
//! replicas or 4, whichever is more.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};

/// The scale-down stabilization window when the autoscaler sets none (kube-controller-manager's
/// `--horizontal-pod-autoscaler-downscale-stabilization`).
const DOWN_WINDOW: SignedDuration = SignedDuration::from_secs(300);

/// What the autoscaler keeps of one HPA between passes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// Recent recommendations, for the stabilization windows.
    pub recommendations: Vec<Recommended>,
    /// Recent rescales of the target, for the scaling policies' periods.
    pub rescales: Vec<Rescale>,
}

/// An earlier recommendation, kept for the stabilization windows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recommended {
    /// When it was made.
    pub at: Timestamp,
    /// The replicas it recommended.
    pub replicas: i32,
}

/// A rescale the target took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rescale {
    /// When it was made.
    pub at: Timestamp,
    /// Replicas added (positive) or removed (negative).
    pub change: i32,
}

impl History {
    /// Records that the target was rescaled from `from` to `to` replicas at `at`.
    pub fn rescaled(&mut self, from: i32, to: i32, at: Timestamp) {
        self.rescales.push(Rescale { at, change: to - from });
    }

    /// When the autoscaler last made a recommendation.
    pub fn last_pass(&self) -> Option<Timestamp> {
        self.recommendations.last().map(|r| r.at)
    }

    /// The replicas added (`up`) or removed within `period` before `now`.
    fn changed_within(&self, period: SignedDuration, now: Timestamp, up: bool) -> i32 {
        let recent = self.rescales.iter().filter(|r| now.duration_since(r.at) < period);
        recent.filter(|r| (r.change > 0) == up).map(|r| r.change.abs()).sum()
    }
}

/// The replicas to set and the conditions that say how they were reached.
#[derive(Debug, PartialEq)]
pub(super) struct Normalized {
    /// The replicas to set.
    pub replicas: i32,
    /// `AbleToScale`'s reason and message.
    pub able: (&'static str, &'static str),
    /// `ScalingLimited`'s reason and message; it holds unless the reason is
    /// `DesiredWithinRange`.
    pub limited: (&'static str, &'static str),
}

const READY: (&str, &str) = ("ReadyForNewScale", "recommended size matches current size");
const UP_STABILIZED: (&str, &str) = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const DOWN_STABILIZED: (&str, &str) = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const WITHIN: (&str, &str) =
    ("DesiredWithinRange", "the desired count is within the acceptable range");
const TOO_MANY: (&str, &str) =
    ("TooManyReplicas", "the desired replica count is more than the maximum replica count");
const TOO_FEW: (&str, &str) =
    ("TooFewReplicas", "the desired replica count is less than the minimum replica count");
const UP_LIMIT: (&str, &str) =
    ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate");
const DOWN_LIMIT: (&str, &str) = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);

/// The replicas for a recommendation of `wanted` with `current` replicas and bounds
/// `min`..=`max`; the recommendation joins the history.
pub(super) fn normalize(
    behavior: Option<&HorizontalPodAutoscalerBehavior>,
    (min, max): (i32, i32),
    current: i32,
    wanted: i32,
    history: &mut History,
    now: Timestamp,
) -> Normalized {
    match behavior {
        Some(behavior) => with_rules(behavior, (min, max), current, wanted, history, now),
        None => fixed((min, max), current, wanted, history, now),
    }
}

/// Upstream's rules for an autoscaler without `behavior`.
fn fixed(
    (min, max): (i32, i32),
    current: i32,
    wanted: i32,
    history: &mut History,
    now: Timestamp,
) -> Normalized {
    history.recommendations.retain(|r| now.duration_since(r.at) < DOWN_WINDOW);
    // No policies here, so no rescale is ever counted.
    history.rescales.clear();
    let stabilized = history.recommendations.iter().map(|r| r.replicas).fold(wanted, i32::max);
    history.recommendations.push(Recommended { at: now, replicas: wanted });
    let able = if stabilized == wanted { READY } else { DOWN_STABILIZED };
    let limit = current.saturating_mul(2).max(4);
    let (highest, above) = if max > limit { (limit, UP_LIMIT) } else { (max, TOO_MANY) };
    let (replicas, limited) = if stabilized < min {
        (min, TOO_FEW)
    } else if stabilized > highest {
        (highest, above)
    } else {
        (stabilized, WITHIN)
    };
    Normalized { replicas, able, limited }
}

/// One direction's scaling rules with the API server's defaults filled in.
struct Rules {
    window: SignedDuration,
    select: Select,
    policies: Vec<Policy>,
}

/// How the policies' limits combine (`selectPolicy`).
#[derive(Clone, Copy, PartialEq)]
enum Select {
    /// The policy allowing the largest change.
    Max,
    /// The policy allowing the smallest change.
    Min,
    /// No change in this direction.
    Disabled,
}

/// A policy: at most `value` pods (or percent, when `percent`) per `period`.
struct Policy {
    percent: bool,
    value: i32,
    period: SignedDuration,
}

impl Rules {
    fn of(rules: Option<&HPAScalingRules>, up: bool) -> Self {
        let window = rules.and_then(|r| r.stabilization_window_seconds);
        let window = window.map_or(if up { SignedDuration::ZERO } else { DOWN_WINDOW }, |s| {
            SignedDuration::from_secs(i64::from(s))
        });
        let select = match rules.and_then(|r| r.select_policy.as_deref()) {
            Some("Min") => Select::Min,
            Some("Disabled") => Select::Disabled,
            _ => Select::Max,
        };
        let policy = |percent: bool, value: i32| Policy {
            percent,
            value,
            period: SignedDuration::from_secs(15),
        };
        let given = rules.and_then(|r| r.policies.as_deref()).filter(|p| !p.is_empty());
        let policies = match given {
            Some(given) => given.iter().map(Policy::of).collect(),
            None if up => vec![policy(false, 4), policy(true, 100)],
            None => vec![policy(true, 100)],
        };
        Rules { window, select, policies }
    }

    /// The longest period of the policies.
    fn longest_period(&self) -> SignedDuration {
        self.policies.iter().map(|p| p.period).max().unwrap_or(SignedDuration::ZERO)
    }

    /// The furthest the replicas may move from `current` now, `up` or down.
    fn limit(&self, current: i32, history: &History, now: Timestamp, up: bool) -> i32 {
        let sign = if up { 1 } else { -1 };
        let proposals = self.policies.iter().map(|policy| {
            let start = policy.start(current, history, now);
            if policy.percent {
                let moved = f64::from(start) * (1.0 + f64::from(sign * policy.value) / 100.0);
                // Up rounds up, so that a small percentage still adds a pod; down truncates.
                if up { moved.ceil() as i32 } else { moved as i32 }
            } else {
                start.saturating_add(sign * policy.value)
            }
        });
        // The largest change is the highest count up and the lowest down.
        let limit = match (self.select, up) {
            (Select::Disabled, _) => return current,
            (Select::Max, true) | (Select::Min, false) => proposals.max(),
            (Select::Max, false) | (Select::Min, true) => proposals.min(),
        };
        // Past it already (by rescales within a period): no further change this way for now.
        let limit = limit.unwrap_or(current);
        if up { limit.max(current) } else { limit.min(current) }
    }
}

impl Policy {
    fn of(policy: &HPAScalingPolicy) -> Self {
        Policy {
            percent: policy.type_ == "Percent",
            value: policy.value,
            period: SignedDuration::from_secs(i64::from(policy.period_seconds)),
        }
    }

    /// The replicas at the start of this policy's period: the current ones without the
    /// rescales made within it.
    fn start(&self, current: i32, history: &History, now: Timestamp) -> i32 {
        current - history.changed_within(self.period, now, true)
            + history.changed_within(self.period, now, false)
    }
}

/// An autoscaler's `behavior`: stabilization within each direction's window, then the
/// direction's rate limit and the bound it meets.
fn with_rules(
    behavior: &HorizontalPodAutoscalerBehavior,
    (min, max): (i32, i32),
    current: i32,
    wanted: i32,
    history: &mut History,
    now: Timestamp,
) -> Normalized {
    let up = Rules::of(behavior.scale_up.as_ref(), true);
    let down = Rules::of(behavior.scale_down.as_ref(), false);
    history.recommendations.retain(|r| now.duration_since(r.at) < up.window.max(down.window));
    let period = up.longest_period().max(down.longest_period());
    history.rescales.retain(|r| now.duration_since(r.at) < period);
    let within = |window: SignedDuration| {
        let recent =
            history.recommendations.iter().filter(move |r| now.duration_since(r.at) < window);
        recent.map(|r| r.replicas)
    };
    // The lowest recommendation of the scale-up window and the highest of the scale-down one
    // bound the change.
    let lowest = within(up.window).fold(wanted, i32::min);
    let highest = within(down.window).fold(wanted, i32::max);
    history.recommendations.push(Recommended { at: now, replicas: wanted });
    let stabilized = current.max(lowest).min(highest);
    let able = match stabilized == wanted {
        true => READY,
        false if wanted >= current => UP_STABILIZED,
        false => DOWN_STABILIZED,
    };
    let (replicas, limited) = if stabilized > current {
        let limit = up.limit(current, history, now, true);
        let (highest, above) = if max > limit { (limit, UP_LIMIT) } else { (max, TOO_MANY) };
        if stabilized > highest { (highest, above) } else { (stabilized, WITHIN) }
    } else if stabilized < current {
        let limit = down.limit(current, history, now, false);
        let (lowest, below) = if min < limit { (limit, DOWN_LIMIT) } else { (min, TOO_FEW) };
        if stabilized < lowest { (lowest, below) } else { (stabilized, WITHIN) }
    } else {
        (stabilized, WITHIN)
    };
    Normalized { replicas, able, limited }
}
