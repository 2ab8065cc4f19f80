//! Inter-pod affinity and anti-affinity, as kube-scheduler's `InterPodAffinity` plugin applies
//! them. A term names the pods it is about (a label selector, in some namespaces) and a
//! topology key: the nodes sharing that label's value form one domain. Required affinity puts
//! a pod in a domain holding such a pod; required anti-affinity keeps it out of such domains,
//! whether the term is the pod's own or that of a pod already placed; preferred terms, and
//! placed pods' terms about the pod, score domains by their weights.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};

use super::{NamespaceLabels, Placed, labels_of, selector_with_keys};
use crate::selectors::LabelSelector;

/// The weight of a placed pod's required affinity term that matches the pod being placed, in
/// the pod's score (kube-scheduler's `hardPodAffinityWeight`).
const HARD_AFFINITY_WEIGHT: i64 = 1;

/// Why inter-pod affinity rules a node out, as kube-scheduler words it; it checks them in
/// this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A required affinity term of the pod finds no matching pod in the node's domain.
    Affinity,
    /// A required anti-affinity term of the pod finds a matching pod in the node's domain.
    AntiAffinity,
    /// A placed pod's required anti-affinity term matches the pod, in the node's domain.
    ExistingAntiAffinity,
}

impl Refusal {
    /// The reason in a `FailedScheduling` summary.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::ExistingAntiAffinity => {
                "node(s) didn't satisfy existing pods anti-affinity rules"
            }
            Refusal::Affinity => "node(s) didn't match pod affinity rules",
            Refusal::AntiAffinity => "node(s) didn't match pod anti-affinity rules",
        }
    }
}

/// A term resolved against its pod and the namespaces: which pods it is about.
struct Term<'t> {
    /// `None` for a term without a selector, which is about no pod.
    selector: Option<LabelSelector>,
    /// `None` for every namespace.
    namespaces: Option<HashSet<&'t str>>,
    topology_key: &'t str,
}

impl<'t> Term<'t> {
    /// `term` of `owner`: its namespaces default to the owner's, and `matchLabelKeys` and
    /// `mismatchLabelKeys` take the owner's values of those labels.
    fn new(term: &'t PodAffinityTerm, owner: &'t Pod, namespaces: &'t NamespaceLabels) -> Self {
        let labels = labels_of(owner);
        let selector = selector_with_keys(
            term.label_selector.as_ref(),
            labels,
            term.match_label_keys.as_deref().unwrap_or_default(),
            term.mismatch_label_keys.as_deref().unwrap_or_default(),
        );
        let listed = term.namespaces.iter().flatten().map(String::as_str);
        let namespaces = match &term.namespace_selector {
            None if term.namespaces.as_ref().is_none_or(Vec::is_empty) => {
                Some(HashSet::from([owner.metadata.namespace.as_deref().unwrap_or_default()]))
            }
            None => Some(listed.collect()),
            Some(selector) => match LabelSelector::from_metav1(selector) {
                Ok(selector) if selector.is_empty() => None,
                Ok(selector) => Some(
                    namespaces
                        .iter()
                        .filter(|(_, labels)| selector.matches(labels))
                        .map(|(name, _)| name.as_str())
                        .chain(listed)
                        .collect(),
                ),
                Err(_) => Some(listed.collect()),
            },
        };
        Term { selector, namespaces, topology_key: &term.topology_key }
    }

    /// Whether the term is about `pod`.
    fn matches(&self, pod: &Pod) -> bool {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        self.namespaces.as_ref().is_none_or(|names| names.contains(namespace))
            && self.selector.as_ref().is_some_and(|s| s.matches(labels_of(pod)))
    }
}

/// A pod's pod-affinity terms by kind.
#[derive(Default)]
struct Terms<'t> {
    required: &'t [PodAffinityTerm],
    preferred: &'t [WeightedPodAffinityTerm],
    required_anti: &'t [PodAffinityTerm],
    preferred_anti: &'t [WeightedPodAffinityTerm],
}

impl<'t> Terms<'t> {
    fn of(pod: &'t Pod) -> Self {
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let near = affinity.and_then(|a| a.pod_affinity.as_ref());
        let away = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        Terms {
            required: near
                .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_deref())
                .unwrap_or_default(),
            preferred: near
                .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_deref())
                .unwrap_or_default(),
            required_anti: away
                .and_then(|a| a.required_during_scheduling_ignored_during_execution.as_deref())
                .unwrap_or_default(),
            preferred_anti: away
                .and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_deref())
                .unwrap_or_default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.required.is_empty()
            && self.preferred.is_empty()
            && self.required_anti.is_empty()
            && self.preferred_anti.is_empty()
    }
}

/// Whether the pod has pod-affinity or anti-affinity terms.
pub fn has_terms(pod: &Pod) -> bool {
    !Terms::of(pod).is_empty()
}

/// A domain: a topology key and one of its values.
type Domain<'a> = (&'a str, &'a str);

/// What inter-pod affinity says about placing one pod, worked out once from the placed pods
/// and then asked of each node.
pub struct PodAffinity<'a> {
    /// Domains a placed pod's required anti-affinity keeps the pod out of.
    existing_anti: HashSet<Domain<'a>>,
    /// The pod's required affinity terms' topology keys.
    required_keys: Vec<&'a str>,
    /// Domains holding a pod that one of the required affinity terms is about.
    near: HashSet<Domain<'a>>,
    /// Whether the pod may go anywhere with the keys: no pod matches its required terms
    /// anywhere, and it matches them all itself (the first pod of a group).
    first_of_group: bool,
    /// Domains holding a pod that one of the pod's required anti-affinity terms is about.
    away: HashSet<Domain<'a>>,
    /// Preference per domain, from preferred terms both ways and placed pods' required
    /// affinity for the pod.
    preference: HashMap<Domain<'a>, i64>,
}

impl<'a> PodAffinity<'a> {
    /// Works out the rules for `pod` among the placed pods (`with_terms`: those of them that
    /// have pod-affinity terms), `None` when no rule applies to it.
    pub fn new(
        pod: &'a Pod,
        placed: &[Placed<'a>],
        with_terms: &[usize],
        namespaces: &'a NamespaceLabels,
    ) -> Option<Self> {
        let own = Terms::of(pod);
        if own.is_empty() && with_terms.is_empty() {
            return None;
        }
        let mut rules = PodAffinity {
            existing_anti: HashSet::new(),
            required_keys: own.required.iter().map(|t| t.topology_key.as_str()).collect(),
            near: HashSet::new(),
            first_of_group: false,
            away: HashSet::new(),
            preference: HashMap::new(),
        };
        // Placed pods' terms about this pod.
        for other in with_terms.iter().map(|&i| &placed[i]) {
            let theirs = Terms::of(other.pod);
            for term in theirs.required_anti {
                if Term::new(term, other.pod, namespaces).matches(pod) {
                    rules.existing_anti.extend(other.domain(&term.topology_key));
                }
            }
            for term in theirs.required {
                if Term::new(term, other.pod, namespaces).matches(pod) {
                    rules.prefer(other.domain(&term.topology_key), HARD_AFFINITY_WEIGHT);
                }
            }
            for (weighted, sign) in weighted(theirs.preferred, theirs.preferred_anti) {
                let term = &weighted.pod_affinity_term;
                if Term::new(term, other.pod, namespaces).matches(pod) {
                    rules.prefer(
                        other.domain(&term.topology_key),
                        sign * i64::from(weighted.weight),
                    );
                }
            }
        }
        // This pod's terms about placed pods.
        if !own.is_empty() {
            let required: Vec<Term> =
                own.required.iter().map(|t| Term::new(t, pod, namespaces)).collect();
            let required_anti: Vec<Term> =
                own.required_anti.iter().map(|t| Term::new(t, pod, namespaces)).collect();
            let preferred: Vec<(Term, i64)> = weighted(own.preferred, own.preferred_anti)
                .map(|(w, sign)| {
                    (Term::new(&w.pod_affinity_term, pod, namespaces), sign * i64::from(w.weight))
                })
                .collect();
            for other in placed {
                for term in required.iter().filter(|t| t.matches(other.pod)) {
                    rules.near.extend(other.domain(term.topology_key));
                }
                for term in required_anti.iter().filter(|t| t.matches(other.pod)) {
                    rules.away.extend(other.domain(term.topology_key));
                }
                for (term, weight) in preferred.iter().filter(|(t, _)| t.matches(other.pod)) {
                    rules.prefer(other.domain(term.topology_key), *weight);
                }
            }
            rules.first_of_group = rules.near.is_empty() && required.iter().all(|t| t.matches(pod));
        }
        Some(rules)
    }

    fn prefer(&mut self, domain: Option<Domain<'a>>, weight: i64) {
        if let Some(domain) = domain {
            *self.preference.entry(domain).or_default() += weight;
        }
    }

    /// Why the node, with these labels, cannot take the pod, if it cannot.
    pub fn refusal(&self, node: &BTreeMap<String, String>) -> Option<Refusal> {
        let in_domain = |&(key, value): &Domain| node.get(key).is_some_and(|v| v == value);
        let has_keys = self.required_keys.iter().all(|key| node.contains_key(*key));
        let near = self.required_keys.iter().all(|&key| {
            node.get(key).is_some_and(|value| self.near.contains(&(key, value.as_str())))
        });
        if !has_keys || !(near || self.first_of_group) {
            Some(Refusal::Affinity)
        } else if self.away.iter().any(in_domain) {
            Some(Refusal::AntiAffinity)
        } else if self.existing_anti.iter().any(in_domain) {
            Some(Refusal::ExistingAntiAffinity)
        } else {
            None
        }
    }

    /// The node's raw preference: the weights of the domains it is in.
    pub fn preference(&self, node: &BTreeMap<String, String>) -> i64 {
        self.preference
            .iter()
            .filter(|((key, value), _)| node.get(*key).is_some_and(|v| v == value))
            .map(|(_, weight)| weight)
            .sum()
    }
}

/// Preferred affinity terms with sign 1 and anti-affinity terms with sign -1.
fn weighted<'t>(
    near: &'t [WeightedPodAffinityTerm],
    away: &'t [WeightedPodAffinityTerm],
) -> impl Iterator<Item = (&'t WeightedPodAffinityTerm, i64)> {
    near.iter().map(|t| (t, 1)).chain(away.iter().map(|t| (t, -1)))
}
