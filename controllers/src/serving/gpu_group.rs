//! GPUGroup, `Exclusive` strategy: which member ModelDeployment holds the GPU (pure).
//!
//! The rules, applied on every reconcile to the members as read from the cluster:
//!
//! 1. At most one member runs (`spec.replicas > 0`): the *active* one. When several run, the
//!    one named by `status.activeModel` stays (else the best-ranked one) and the others are
//!    scaled to zero.
//! 2. With nothing running, the best-ranked member with queued requests is activated at once:
//!    higher priority first, then the longest waiting (`queued-since`, unknown last), then the
//!    name. With no demand anywhere the group stays idle (nothing is started speculatively);
//!    a running member with no demand keeps the GPU.
//! 3. A waiting member with queued requests replaces the running one when it has a higher
//!    priority, or when the running one has no queued requests. Equal or lower priority never
//!    preempts a busy member.
//! 4. Anti-thrashing (when enabled): a replacement waits until the last swap is at least
//!    `minimumRunDurationSeconds` (the active member's run) and
//!    `cooldownAfterPreemptionSeconds` old; the decision then asks for a requeue at that time.
//!    Activating a member on an idle group is never delayed.
//! 5. A swap scales the others to 0 first, then the new active member to 1 (or leaves its
//!    replicas when already above 0), always through the ModelDeployments.
//!
//! Every change of the active member (including finding one running that the status did not
//! name) counts as a swap: `lastSwapTime`, `lastSwapReason`, `swapCount`. Strategies other than
//! `Exclusive` are not acted on.

use std::cmp::Reverse;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{READY, Status, Update};
use keelson_api_crds::serving::{
    GPUGroup, GpuGroupMember, GpuGroupPhase, GpuGroupStatus, GpuSharingStrategy, ModelDeployment,
};

/// Annotation a gateway sets on a member ModelDeployment: requests waiting for it (an integer).
pub const DEMAND_ANNOTATION: &str = "serving.keelson.dev/queued-requests";
/// Annotation a gateway sets on a member ModelDeployment: since when requests wait (RFC 3339).
pub const DEMAND_SINCE_ANNOTATION: &str = "serving.keelson.dev/queued-since";

/// Reason of `Ready` when a member holds the GPU and serves.
pub const REASON_ACTIVE: &str = "Active";
/// Reason of `Ready` when no member runs and none has demand.
pub const REASON_IDLE: &str = "Idle";
/// Reason of `Ready` while the active member starts.
pub const REASON_SWAPPING: &str = "Swapping";
/// Reason of `Ready` when none of the member ModelDeployments exists.
pub const REASON_MEMBERS_NOT_FOUND: &str = "MembersNotFound";
/// Reason of `Ready` for a strategy this controller does not implement.
pub const REASON_STRATEGY_NOT_SUPPORTED: &str = "StrategyNotSupported";
/// Event reason: a member was given the GPU.
pub const EVENT_ACTIVATED: &str = "Activated";
/// Event reason: a member was scaled to zero to free the GPU.
pub const EVENT_PREEMPTED: &str = "Preempted";

/// One member of a group as read from the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Name of the ModelDeployment.
    pub name: String,
    /// Priority from the group's spec (higher wins).
    pub priority: i32,
    /// Current `spec.replicas` of the ModelDeployment.
    pub replicas: i32,
    /// Whether the ModelDeployment has a ready replica.
    pub ready: bool,
    /// Requests queued for it ([`DEMAND_ANNOTATION`]).
    pub demand: u32,
    /// Since when requests are queued ([`DEMAND_SINCE_ANNOTATION`]); only with demand.
    pub demand_since: Option<Timestamp>,
    /// Whether the ModelDeployment exists.
    pub exists: bool,
}

impl Member {
    /// The member for a group entry and its ModelDeployment (`None` when it does not exist).
    /// A missing or unparsable demand annotation means no demand.
    pub fn new(entry: &GpuGroupMember, deployment: Option<&ModelDeployment>) -> Member {
        let annotation = |key: &str| {
            deployment
                .and_then(|d| d.metadata.annotations.as_ref())
                .and_then(|a| a.get(key))
                .map(|v| v.trim())
        };
        let demand = annotation(DEMAND_ANNOTATION).and_then(|v| v.parse().ok()).unwrap_or(0);
        let demand_since = annotation(DEMAND_SINCE_ANNOTATION)
            .and_then(|v| v.parse::<Timestamp>().ok())
            .filter(|_| demand > 0);
        Member {
            name: entry.name.clone(),
            priority: entry.priority(),
            replicas: deployment.map_or(0, |d| d.spec.replicas),
            ready: deployment.and_then(|d| d.status.as_ref()).is_some_and(|s| s.ready_replicas > 0),
            demand,
            demand_since,
            exists: deployment.is_some(),
        }
    }
}

/// Where a member stands after a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberState {
    /// Holds the GPU.
    Active,
    /// Scaled to zero by this decision.
    Preempted,
    /// Has queued requests and waits for the GPU.
    Queued,
    /// Not running and no demand.
    Idle,
    /// Its ModelDeployment does not exist.
    Missing,
}

/// A member's state, for messages and events (the GPUGroup status has no per-member list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberStatus {
    /// Name of the ModelDeployment.
    pub name: String,
    /// Its state.
    pub state: MemberState,
    /// Requests queued for it.
    pub queued_requests: u32,
    /// Since when requests are queued.
    pub queued_since: Option<Timestamp>,
}

/// What the reconciler does for a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The member that holds (or is given) the GPU; none when idle or not acted on.
    pub active: Option<String>,
    /// ModelDeployments whose `spec.replicas` must change, scale-downs first.
    pub scale: Vec<(String, i32)>,
    /// The group's new status.
    pub status: GpuGroupStatus,
    /// Every member's state, by name.
    pub members: Vec<MemberStatus>,
    /// When to look again: set when a swap is held back only by anti-thrashing.
    pub requeue_after: Option<Duration>,
    /// Events to record: `(reason, message)`.
    pub events: Vec<(&'static str, String)>,
}

/// Why a new member gets the GPU.
struct Swap<'a> {
    to: &'a Member,
    reason: String,
}

/// A swap held back by anti-thrashing.
struct Deferred<'a> {
    waiting: &'a Member,
    until: Timestamp,
    why: &'static str,
}

/// Decides which member holds the GPU of `group` and what must change; `members` are the
/// group's entries as read from the cluster (any order), `now` the current time.
pub fn decide(group: &GPUGroup, members: &[Member], now: Timestamp) -> Decision {
    let mut members: Vec<&Member> = members.iter().collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members.dedup_by(|a, b| a.name == b.name);
    let status = group.status.clone().unwrap_or_default();
    if group.spec.strategy != GpuSharingStrategy::Exclusive {
        return unsupported(group, &members, status, now);
    }
    let current = current_active(&members, status.active_model.as_deref());
    let waiting = best(members.iter().copied().filter(|m| {
        m.exists && m.demand > 0 && Some(m.name.as_str()) != current.map(|c| c.name.as_str())
    }));
    let named = status.active_model.as_deref();
    let mut deferred = None;
    let swap = match (current, waiting) {
        (None, None) => None,
        (None, Some(w)) => Some(Swap { to: w, reason: format!("{} has {}", w.name, queued(w)) }),
        (Some(a), Some(w)) if w.priority > a.priority || a.demand == 0 => {
            match held_back(group, &status, w, now) {
                None => Some(Swap { to: w, reason: preemption_reason(a, w) }),
                Some(d) => {
                    deferred = Some(d);
                    adopted(a, named)
                }
            }
        }
        (Some(a), _) => adopted(a, named),
    };
    let active = swap.as_ref().map(|s| s.to).or(current);
    build(group, &members, status, active, swap, deferred, now)
}

/// A swap to the running member when the status names another one. A group seen for the
/// first time (the status names none) takes the running member as it is: no swap, so no
/// cooldown starts before anything was preempted.
fn adopted<'a>(running: &'a Member, named: Option<&str>) -> Option<Swap<'a>> {
    named
        .is_some_and(|named| named != running.name)
        .then(|| Swap { to: running, reason: format!("{} was found running", running.name) })
}

fn queued(member: &Member) -> String {
    match member.demand {
        1 => "1 queued request".to_owned(),
        n => format!("{n} queued requests"),
    }
}

fn preemption_reason(active: &Member, waiting: &Member) -> String {
    if waiting.priority > active.priority {
        format!(
            "{} (priority {}, {}) preempted {} (priority {})",
            waiting.name,
            waiting.priority,
            queued(waiting),
            active.name,
            active.priority
        )
    } else {
        format!("{} has {} and {} has none", waiting.name, queued(waiting), active.name)
    }
}

/// The running member: the only one, the one the status names, or the best-ranked one.
fn current_active<'a>(members: &[&'a Member], named: Option<&str>) -> Option<&'a Member> {
    let running: Vec<&Member> =
        members.iter().copied().filter(|m| m.exists && m.replicas > 0).collect();
    running.iter().copied().find(|m| Some(m.name.as_str()) == named).or_else(|| best(running))
}

/// The best-ranked member: with demand first, then higher priority, longest waiting (unknown
/// last), and name.
fn best<'a>(members: impl IntoIterator<Item = &'a Member>) -> Option<&'a Member> {
    members.into_iter().min_by_key(|m| {
        (m.demand == 0, Reverse(m.priority), m.demand_since.is_none(), m.demand_since, &m.name)
    })
}

/// The anti-thrashing hold on replacing the active member by `waiting`, if one applies now.
fn held_back<'a>(
    group: &GPUGroup,
    status: &GpuGroupStatus,
    waiting: &'a Member,
    now: Timestamp,
) -> Option<Deferred<'a>> {
    let guard = &group.spec.anti_thrashing;
    if !guard.enabled {
        return None;
    }
    let last = status.last_swap_time.as_ref()?.0;
    let after = |seconds: i32| last.checked_add(SignedDuration::from_secs(seconds.max(0).into()));
    let run_end = after(guard.minimum_run_duration_seconds).ok()?;
    let cooldown_end = after(guard.cooldown_after_preemption_seconds).ok()?;
    let (until, why) = if run_end >= cooldown_end {
        (run_end, "minimum run duration")
    } else {
        (cooldown_end, "cooldown after the last swap")
    };
    (until > now).then_some(Deferred { waiting, until, why })
}

/// Scale changes, status, member states and events for the chosen active member.
fn build(
    group: &GPUGroup,
    members: &[&Member],
    mut status: GpuGroupStatus,
    active: Option<&Member>,
    swap: Option<Swap<'_>>,
    deferred: Option<Deferred<'_>>,
    now: Timestamp,
) -> Decision {
    let active_name = active.map(|m| m.name.as_str());
    let scale = scale_changes(members, active);
    let mut events = Vec::new();
    for (name, _) in scale.iter().filter(|(_, replicas)| *replicas == 0) {
        let message = match active_name {
            Some(to) => format!("{name} scaled to zero: {to} holds the GPU"),
            None => format!("{name} scaled to zero"),
        };
        events.push((EVENT_PREEMPTED, message));
    }
    if let Some(swap) = &swap {
        status.swap_count += 1;
        status.last_swap_time = Some(Time(now));
        status.last_swap_reason = Some(swap.reason.clone());
        events.push((EVENT_ACTIVATED, format!("{} holds the GPU: {}", swap.to.name, swap.reason)));
    }
    status.active_model = active_name.map(str::to_owned);
    let preempted: Vec<&str> =
        scale.iter().filter(|(_, r)| *r == 0).map(|(n, _)| n.as_str()).collect();
    let member_statuses: Vec<MemberStatus> =
        members.iter().map(|m| member_status(m, active_name, &preempted)).collect();
    let (phase, ready, reason, mut message) = summary(members, active);
    if let Some(d) = &deferred {
        message.push_str(&format!(
            "; {} ({}) waits until {} ({})",
            d.waiting.name,
            queued(d.waiting),
            d.until,
            d.why
        ));
    }
    let missing: Vec<&str> =
        members.iter().filter(|m| !m.exists).map(|m| m.name.as_str()).collect();
    if !missing.is_empty() && phase != GpuGroupPhase::Pending {
        message.push_str(&format!("; missing: {}", missing.join(", ")));
    }
    set_ready(&mut status, group, phase, ready, reason, &message, now);
    Decision {
        active: status.active_model.clone(),
        scale,
        status,
        members: member_statuses,
        requeue_after: deferred.and_then(|d| Duration::try_from(d.until.duration_since(now)).ok()),
        events,
    }
}

/// Every other running member to 0, then the active member to 1 when it is not running.
fn scale_changes(members: &[&Member], active: Option<&Member>) -> Vec<(String, i32)> {
    let is_active = |m: &Member| active.is_some_and(|a| a.name == m.name);
    let mut scale: Vec<(String, i32)> = members
        .iter()
        .filter(|m| m.exists && m.replicas > 0 && !is_active(m))
        .map(|m| (m.name.clone(), 0))
        .collect();
    if let Some(a) = active.filter(|a| a.replicas <= 0) {
        scale.push((a.name.clone(), 1));
    }
    scale
}

fn member_status(member: &Member, active: Option<&str>, preempted: &[&str]) -> MemberStatus {
    let state = if !member.exists {
        MemberState::Missing
    } else if Some(member.name.as_str()) == active {
        MemberState::Active
    } else if preempted.contains(&member.name.as_str()) {
        MemberState::Preempted
    } else if member.demand > 0 {
        MemberState::Queued
    } else {
        MemberState::Idle
    };
    MemberStatus {
        name: member.name.clone(),
        state,
        queued_requests: member.demand,
        queued_since: member.demand_since,
    }
}

/// Phase and `Ready` condition (status, reason, message) of an Exclusive group: `Swapping`
/// while the active member is being scaled up or has no ready replica yet.
fn summary(
    members: &[&Member],
    active: Option<&Member>,
) -> (GpuGroupPhase, bool, &'static str, String) {
    match active {
        _ if members.iter().all(|m| !m.exists) => {
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            let message = format!("no member ModelDeployment exists: {}", names.join(", "));
            (GpuGroupPhase::Pending, false, REASON_MEMBERS_NOT_FOUND, message)
        }
        None => {
            let message = "no member has queued requests".to_owned();
            (GpuGroupPhase::Idle, true, REASON_IDLE, message)
        }
        Some(a) if a.replicas <= 0 || !a.ready => {
            let message = format!("{} is starting", a.name);
            (GpuGroupPhase::Swapping, false, REASON_SWAPPING, message)
        }
        Some(a) => {
            let message = format!("{} holds the GPU", a.name);
            (GpuGroupPhase::Active, true, REASON_ACTIVE, message)
        }
    }
}

fn set_ready(
    status: &mut GpuGroupStatus,
    group: &GPUGroup,
    phase: GpuGroupPhase,
    ready: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let generation = group.metadata.generation;
    let update = Update { type_: READY, status: Status::from(ready), reason, message };
    status.observed.set(update, generation, now);
    status.observed.observed_generation = generation;
    status.phase = Some(phase);
}

/// A group whose strategy is not `Exclusive`: nothing is scaled, the status says why.
fn unsupported(
    group: &GPUGroup,
    members: &[&Member],
    mut status: GpuGroupStatus,
    now: Timestamp,
) -> Decision {
    let strategy = match group.spec.strategy {
        GpuSharingStrategy::Exclusive => "Exclusive",
        GpuSharingStrategy::TimeSliced => "TimeSliced",
        GpuSharingStrategy::MemoryShared => "MemoryShared",
    };
    let message = format!(
        "strategy {strategy} is not supported yet: only Exclusive groups swap models; members are left as they are"
    );
    set_ready(
        &mut status,
        group,
        GpuGroupPhase::Failed,
        false,
        REASON_STRATEGY_NOT_SUPPORTED,
        &message,
        now,
    );
    Decision {
        active: None,
        scale: Vec::new(),
        members: members.iter().map(|m| member_status(m, None, &[])).collect(),
        status,
        requeue_after: None,
        events: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keelson_api_crds::conditions;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn group(yaml: &str) -> GPUGroup {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const PAIR: &str = "
apiVersion: serving.keelson.dev/v1alpha1
kind: GPUGroup
metadata: {name: gpu-1, namespace: ml, generation: 3}
spec:
  node: gpu-node-1
  models:
  - {name: chat}
  - {name: coder}
";

    fn member(name: &str, priority: i32, replicas: i32, demand: u32) -> Member {
        Member {
            name: name.to_owned(),
            priority,
            replicas,
            ready: replicas > 0,
            demand,
            demand_since: None,
            exists: true,
        }
    }

    /// Applies a decision as the reconciler would: status written, replicas changed.
    fn apply(g: &mut GPUGroup, members: &mut [Member], d: &Decision) {
        g.status = Some(d.status.clone());
        for (name, replicas) in &d.scale {
            let m = members.iter_mut().find(|m| &m.name == name).unwrap();
            m.replicas = *replicas;
            m.ready = *replicas > 0;
        }
    }

    fn ready(d: &Decision) -> (String, String, String) {
        let c = conditions::find(&d.status.observed.conditions, READY).unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    fn scale(pairs: &[(&str, i32)]) -> Vec<(String, i32)> {
        pairs.iter().map(|(n, r)| (n.to_string(), *r)).collect()
    }

    #[test]
    fn demand_moves_the_gpu_and_the_cooldown_stops_a_swap_back() {
        let mut g = group(PAIR);
        let mut members = vec![member("chat", 100, 1, 2), member("coder", 100, 0, 0)];
        let d = decide(&g, &members, at(1000));
        assert_eq!(d.active.as_deref(), Some("chat"));
        assert!(d.scale.is_empty());
        assert_eq!(d.status.swap_count, 0, "the running member is taken as it is: no swap");
        assert_eq!(d.status.last_swap_time, None, "and no cooldown");
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Active));
        apply(&mut g, &mut members, &d);

        // Later, all requests go to the second model.
        members[0].demand = 0;
        members[1].demand = 3;
        let d = decide(&g, &members, at(1200));
        assert_eq!(d.active.as_deref(), Some("coder"));
        assert_eq!(d.scale, scale(&[("chat", 0), ("coder", 1)]));
        assert_eq!(d.status.swap_count, 1);
        assert_eq!(d.status.last_swap_time, Some(Time(at(1200))));
        assert_eq!(
            d.status.last_swap_reason.as_deref(),
            Some("coder has 3 queued requests and chat has none")
        );
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Swapping));
        let reasons: Vec<_> = d.events.iter().map(|(r, _)| *r).collect();
        assert_eq!(reasons, ["Preempted", "Activated"]);
        let states: Vec<_> = d.members.iter().map(|m| m.state).collect();
        assert_eq!(states, [MemberState::Preempted, MemberState::Active]);
        apply(&mut g, &mut members, &d);

        // A request for the first model inside the cooldown does not swap back.
        members[0].demand = 1;
        members[1].demand = 0;
        let d = decide(&g, &members, at(1210));
        assert_eq!(d.active.as_deref(), Some("coder"));
        assert!(d.scale.is_empty());
        assert_eq!(d.status.swap_count, 1);
        assert_eq!(d.requeue_after, Some(Duration::from_secs(50)));
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Active));
        let (status, reason, message) = ready(&d);
        assert_eq!((status.as_str(), reason.as_str()), ("True", "Active"));
        assert!(message.contains("chat (1 queued request) waits until"), "{message}");
        assert_eq!(d.members[0].state, MemberState::Queued);
        assert!(d.events.is_empty());

        // Once the cooldown is over it does.
        let d = decide(&g, &members, at(1260));
        assert_eq!(d.scale, scale(&[("coder", 0), ("chat", 1)]));
        assert_eq!(d.requeue_after, None);
    }

    #[test]
    fn a_new_member_waits_for_the_minimum_run_time() {
        let mut g = group(
            &(PAIR.to_owned()
                + "  antiThrashing: {minimumRunDurationSeconds: 90, cooldownAfterPreemptionSeconds: 10}\n"),
        );
        g.status = Some(GpuGroupStatus {
            active_model: Some("chat".into()),
            last_swap_time: Some(Time(at(0))),
            swap_count: 4,
            ..GpuGroupStatus::default()
        });
        let members = [member("chat", 100, 1, 0), member("coder", 100, 0, 5)];
        let d = decide(&g, &members, at(30));
        assert!(d.scale.is_empty());
        assert_eq!(d.requeue_after, Some(Duration::from_secs(60)));
        assert!(ready(&d).2.contains("(minimum run duration)"));
        let d = decide(&g, &members, at(90));
        assert_eq!(d.scale, scale(&[("chat", 0), ("coder", 1)]));
        assert_eq!(d.status.swap_count, 5);
    }

    #[test]
    fn anti_thrashing_can_be_turned_off() {
        let mut g = group(&(PAIR.to_owned() + "  antiThrashing: {enabled: false}\n"));
        g.status = Some(GpuGroupStatus {
            active_model: Some("chat".into()),
            last_swap_time: Some(Time(at(0))),
            ..GpuGroupStatus::default()
        });
        let d = decide(&g, &[member("chat", 100, 1, 0), member("coder", 100, 0, 1)], at(1));
        assert_eq!(d.active.as_deref(), Some("coder"));
    }

    #[test]
    fn priority_decides_who_preempts_whom() {
        let mut g = group(PAIR);
        g.status = Some(GpuGroupStatus {
            active_model: Some("chat".into()),
            last_swap_time: Some(Time(at(0))),
            ..GpuGroupStatus::default()
        });
        // A busy active member keeps the GPU against equal or lower priority.
        let d = decide(&g, &[member("chat", 100, 1, 4), member("coder", 100, 0, 9)], at(600));
        assert_eq!((d.active.as_deref(), d.scale.len()), (Some("chat"), 0));
        assert_eq!(d.requeue_after, None);
        let d = decide(&g, &[member("chat", 100, 1, 4), member("coder", 50, 0, 9)], at(600));
        assert_eq!(d.active.as_deref(), Some("chat"));
        // A higher priority preempts even a busy one.
        let d = decide(&g, &[member("chat", 100, 1, 4), member("coder", 200, 0, 1)], at(600));
        assert_eq!(d.scale, scale(&[("chat", 0), ("coder", 1)]));
        assert_eq!(
            d.status.last_swap_reason.as_deref(),
            Some("coder (priority 200, 1 queued request) preempted chat (priority 100)")
        );
    }

    #[test]
    fn an_idle_group_activates_the_best_waiting_member_at_once() {
        let mut g = group(PAIR);
        g.status = Some(GpuGroupStatus { last_swap_time: Some(Time(at(0))), ..Default::default() });
        let members = [member("a", 100, 0, 0), member("b", 200, 0, 0)];
        let d = decide(&g, &members, at(5));
        assert_eq!((d.active.as_deref(), d.scale.len()), (None, 0));
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Idle));
        assert_eq!(ready(&d).1, "Idle");

        // Highest priority with demand wins, cooldown or not.
        let members = [member("a", 300, 0, 0), member("b", 100, 0, 1), member("c", 200, 0, 2)];
        let d = decide(&g, &members, at(5));
        assert_eq!(d.scale, scale(&[("c", 1)]));
        assert_eq!(d.status.last_swap_reason.as_deref(), Some("c has 2 queued requests"));

        // Equal priority: the longest waiting, then the name.
        let mut b = member("b", 100, 0, 1);
        b.demand_since = Some(at(1));
        let mut c = member("c", 100, 0, 1);
        c.demand_since = Some(at(2));
        let d = decide(&g, &[c.clone(), b.clone(), member("a", 100, 0, 1)], at(5));
        assert_eq!(d.active.as_deref(), Some("b"));
        let d = decide(&g, &[member("z", 100, 0, 1), member("y", 100, 0, 1)], at(5));
        assert_eq!(d.active.as_deref(), Some("y"));
    }

    #[test]
    fn only_one_member_may_run() {
        let mut g = group(PAIR);
        g.status = Some(GpuGroupStatus { active_model: Some("b".into()), ..Default::default() });
        let d = decide(&g, &[member("a", 500, 2, 0), member("b", 100, 1, 0)], at(5));
        assert_eq!(d.active.as_deref(), Some("b"));
        assert_eq!(d.scale, scale(&[("a", 0)]));
        assert_eq!(d.status.swap_count, 0);
        assert_eq!(d.events[0].1, "a scaled to zero: b holds the GPU");
        // An active member keeps the replicas it has.
        assert!(decide(&g, &[member("b", 100, 3, 0)], at(5)).scale.is_empty());
    }

    #[test]
    fn missing_members_are_reported_and_never_scaled() {
        let g = group(PAIR);
        let mut gone = member("chat", 100, 0, 7);
        gone.exists = false;
        let d = decide(&g, &[gone.clone(), member("coder", 100, 0, 0)], at(5));
        assert_eq!(d.active, None);
        assert!(ready(&d).2.ends_with("; missing: chat"));
        assert_eq!(d.members[0].state, MemberState::Missing);
        let mut also_gone = member("coder", 100, 0, 0);
        also_gone.exists = false;
        let d = decide(&g, &[gone, also_gone], at(5));
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Pending));
        assert_eq!(ready(&d).1, "MembersNotFound");
    }

    #[test]
    fn other_strategies_are_not_acted_on() {
        let g = group(&(PAIR.to_owned() + "  strategy: TimeSliced\n"));
        let d = decide(&g, &[member("chat", 100, 1, 0), member("coder", 100, 1, 3)], at(5));
        assert!(d.scale.is_empty());
        assert_eq!(d.status.phase, Some(GpuGroupPhase::Failed));
        let (status, reason, _) = ready(&d);
        assert_eq!((status.as_str(), reason.as_str()), ("False", "StrategyNotSupported"));
        assert_eq!(d.status.observed.observed_generation, Some(3));
    }

    #[test]
    fn decisions_do_not_depend_on_member_order_and_repeat_exactly() {
        let g = group(PAIR);
        let members = [member("c", 100, 1, 0), member("a", 100, 1, 2), member("b", 300, 0, 1)];
        let mut reversed = members.clone();
        reversed.reverse();
        let first = decide(&g, &members, at(5));
        assert_eq!(first, decide(&g, &reversed, at(5)));
        assert_eq!(first.scale, scale(&[("a", 0), ("c", 0), ("b", 1)]));

        // Applying the decision and deciding again changes nothing but the phase.
        let mut g2 = g.clone();
        let mut applied = members.clone();
        apply(&mut g2, &mut applied, &first);
        let second = decide(&g2, &applied, at(6));
        assert!(second.scale.is_empty() && second.events.is_empty());
        let third =
            decide(&GPUGroup { status: Some(second.status.clone()), ..g2 }, &applied, at(7));
        assert_eq!(third.status, second.status);
    }

    #[test]
    fn members_read_demand_from_gateway_annotations() {
        let md: ModelDeployment = serde_saphyr::from_str(
            "
metadata:
  name: chat
  annotations:
    serving.keelson.dev/queued-requests: ' 4 '
    serving.keelson.dev/queued-since: '2025-01-11T12:00:00Z'
spec: {backend: vllm, model: m, replicas: 0}
status: {readyReplicas: 0}
",
        )
        .unwrap();
        let entry = GpuGroupMember { name: "chat".into(), priority: Some(7), ..Default::default() };
        let m = Member::new(&entry, Some(&md));
        assert_eq!((m.demand, m.priority, m.replicas, m.exists, m.ready), (4, 7, 0, true, false));
        assert_eq!(m.demand_since, Some("2025-01-11T12:00:00Z".parse().unwrap()));

        let mut bad = md.clone();
        let annotations = bad.metadata.annotations.as_mut().unwrap();
        annotations.insert(DEMAND_ANNOTATION.into(), "many".into());
        let m = Member::new(&entry, Some(&bad));
        assert_eq!((m.demand, m.demand_since), (0, None));

        let absent = Member::new(&GpuGroupMember { name: "x".into(), ..Default::default() }, None);
        assert_eq!((absent.exists, absent.priority, absent.demand), (false, 100, 0));
    }
}
