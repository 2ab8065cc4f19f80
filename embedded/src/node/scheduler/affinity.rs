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

/// A pod's pod-affinity terms, resolved once: a placed pod's when it is bound, since every
/// later placement asks them.
pub struct Terms<'a> {
    required: Vec<Term<'a>>,
    required_anti: Vec<Term<'a>>,
    /// Preferred terms with their weights, negative for anti-affinity.
    preferred: Vec<(Term<'a>, i64)>,
}

impl<'a> Terms<'a> {
    /// The terms of `pod`; `None` when it has none.
    pub fn of(pod: &'a Pod, namespaces: &'a NamespaceLabels) -> Option<Self> {
        let affinity = pod.spec.as_ref()?.affinity.as_ref()?;
        let near = affinity.pod_affinity.as_ref();
        let away = affinity.pod_anti_affinity.as_ref();
        let resolve = |terms: Option<&'a Vec<PodAffinityTerm>>| -> Vec<Term<'a>> {
            terms.into_iter().flatten().map(|term| Term::new(term, pod, namespaces)).collect()
        };
        let weigh = |terms: Option<&'a Vec<WeightedPodAffinityTerm>>, sign: i64| {
            terms.into_iter().flatten().map(move |weighted| {
                let term = Term::new(&weighted.pod_affinity_term, pod, namespaces);
                (term, sign * i64::from(weighted.weight))
            })
        };
        let terms = Terms {
            required: resolve(
                near.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            required_anti: resolve(
                away.and_then(|a| a.required_during_scheduling_ignored_during_execution.as_ref()),
            ),
            preferred: weigh(
                near.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
                1,
            )
            .chain(weigh(
                away.and_then(|a| a.preferred_during_scheduling_ignored_during_execution.as_ref()),
                -1,
            ))
            .collect(),
        };
        let none = terms.required.is_empty()
            && terms.required_anti.is_empty()
            && terms.preferred.is_empty();
        (!none).then_some(terms)
    }
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
    /// Works out the rules for `pod` among the placed pods (`with_terms`: the index in
    /// `placed` and the terms of those that have pod-affinity terms), `None` when no rule
    /// applies to it.
    pub fn new(
        pod: &'a Pod,
        placed: &[Placed<'a>],
        with_terms: &[(usize, Terms<'a>)],
        namespaces: &'a NamespaceLabels,
    ) -> Option<Self> {
        let own = Terms::of(pod, namespaces);
        if own.is_none() && with_terms.is_empty() {
            return None;
        }
        let mut rules = PodAffinity {
            existing_anti: HashSet::new(),
            required_keys: own.iter().flat_map(|o| &o.required).map(|t| t.topology_key).collect(),
            near: HashSet::new(),
            first_of_group: false,
            away: HashSet::new(),
            preference: HashMap::new(),
        };
        // Placed pods' terms about this pod.
        for (index, theirs) in with_terms {
            let other = &placed[*index];
            for term in theirs.required_anti.iter().filter(|t| t.matches(pod)) {
                rules.existing_anti.extend(other.domain(term.topology_key));
            }
            for term in theirs.required.iter().filter(|t| t.matches(pod)) {
                rules.prefer(other.domain(term.topology_key), HARD_AFFINITY_WEIGHT);
            }
            for (term, weight) in theirs.preferred.iter().filter(|(t, _)| t.matches(pod)) {
                rules.prefer(other.domain(term.topology_key), *weight);
            }
        }
        // This pod's terms about placed pods.
        if let Some(own) = &own {
            for other in placed {
                for term in own.required.iter().filter(|t| t.matches(other.pod)) {
                    rules.near.extend(other.domain(term.topology_key));
                }
                for term in own.required_anti.iter().filter(|t| t.matches(other.pod)) {
                    rules.away.extend(other.domain(term.topology_key));
                }
                for (term, weight) in own.preferred.iter().filter(|(t, _)| t.matches(other.pod)) {
                    rules.prefer(other.domain(term.topology_key), *weight);
                }
            }
            rules.first_of_group =
                rules.near.is_empty() && own.required.iter().all(|t| t.matches(pod));
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
