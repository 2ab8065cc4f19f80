//! A ModelRouting's status from a preflight outcome: the fields, the `Ready` condition
//! (reason `ModelsReady`, `ModelsMissing` or `CatalogUnreachable`) and the `ConfigValid`
//! condition (whether the override files could be used).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::conditions::{READY, Update};
use keelson_api_crds::serving::ModelRoutingStatus;

use super::preflight::Outcome;

/// The condition telling whether the override files could be used.
pub const CONFIG_VALID: &str = "ConfigValid";

/// What a preflight was checked against and what stood in the way of its inputs.
#[derive(Clone, Debug, Default)]
pub struct Context<'a> {
    /// Where the catalog was read, e.g. `http://litellm:4000/v1/models`.
    pub source: &'a str,
    /// Override files that could not be used, one line each.
    pub problems: &'a [String],
    /// What was ignored or guessed in the layers, one line each.
    pub warnings: &'a [String],
}

/// The status after a preflight: `previous` keeps its conditions' transition times.
pub fn status(
    outcome: &Outcome,
    context: &Context<'_>,
    previous: Option<&ModelRoutingStatus>,
    generation: Option<i64>,
    now: jiff::Timestamp,
) -> ModelRoutingStatus {
    let mut observed = previous.map(|p| p.observed.clone()).unwrap_or_default();
    let (reason, mut message) = match (&outcome.catalog_error, outcome.missing.is_empty()) {
        (Some(error), _) => (
            "CatalogUnreachable",
            format!(
                "the catalog {} could not be read: {error}; every configured model counts as missing",
                context.source
            ),
        ),
        (None, false) => (
            "ModelsMissing",
            format!("missing from the catalog {}: {}", context.source, outcome.missing.join(", ")),
        ),
        (None, true) if outcome.ready.is_empty() => {
            ("ModelsReady", "no models configured".to_owned())
        }
        (None, true) => (
            "ModelsReady",
            format!(
                "{} configured models served by the catalog {} ({} models)",
                outcome.ready.len(),
                context.source,
                outcome.catalog_size
            ),
        ),
    };
    for problem in context.problems {
        message.push_str("; ");
        message.push_str(problem);
    }
    let ready =
        Update { type_: READY, status: (!outcome.degraded).into(), reason, message: &message };
    observed.set(ready, generation, now);
    let (valid, reason, text) = if context.problems.is_empty() {
        let text = if context.warnings.is_empty() {
            "every override layer applied".to_owned()
        } else {
            context.warnings.join("; ")
        };
        (true, "OverridesApplied", text)
    } else {
        (false, "OverrideFileInvalid", format!("ignored: {}", context.problems.join("; ")))
    };
    let update = Update { type_: CONFIG_VALID, status: valid.into(), reason, message: &text };
    observed.set(update, generation, now);
    observed.observed_generation = generation;
    ModelRoutingStatus {
        degraded: outcome.degraded,
        missing_models: outcome.missing.clone(),
        ready_models: outcome.ready.clone(),
        catalog_error: outcome.catalog_error.clone(),
        catalog_size: i32::try_from(outcome.catalog_size).unwrap_or(i32::MAX),
        checked_at: Some(Time(now)),
        observed,
    }
}

/// The events a new status deserves against the old one: `(warning, reason, note)` for each
/// condition whose status or reason changed (the degraded state, why, and the override files).
pub fn events(
    old: Option<&ModelRoutingStatus>,
    new: &ModelRoutingStatus,
) -> Vec<(bool, String, String)> {
    let old = old.map(|o| o.observed.conditions.as_slice()).unwrap_or_default();
    new.observed
        .conditions
        .iter()
        .filter(|c| {
            keelson_api_crds::conditions::find(old, &c.type_)
                .is_none_or(|o| o.status != c.status || o.reason != c.reason)
        })
        .map(|c| {
            (
                c.status == "False",
                c.reason.clone(),
                format!("{} is {}: {}", c.type_, c.status, c.message),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::weaver::preflight::split;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(seconds).unwrap()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    const SOURCE: Context<'static> =
        Context { source: "http://c/v1/models", problems: &[], warnings: &[] };

    #[test]
    fn ready_missing_and_unreachable_conditions() {
        let configured = strings(&["a", "b"]);
        let catalog = strings(&["a", "b", "c"]);
        let ok = status(&split(&configured, Ok(&catalog)), &SOURCE, None, Some(1), at(10));
        assert!(!ok.degraded);
        assert_eq!(ok.catalog_size, 3);
        assert!(ok.observed.is_true(READY));
        let ready = &ok.observed.conditions[0];
        assert_eq!(ready.reason, "ModelsReady");
        assert!(ready.message.contains("2 configured models"), "{}", ready.message);
        assert_eq!(ok.checked_at, Some(Time(at(10))));

        let missing =
            status(&split(&configured, Ok(&catalog[..1])), &SOURCE, Some(&ok), Some(1), at(20));
        let ready = &missing.observed.conditions[0];
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "ModelsMissing"));
        assert!(ready.message.ends_with(": b"), "{}", ready.message);
        assert_eq!(ready.last_transition_time, Time(at(20)));
        let seen = events(Some(&ok), &missing);
        assert_eq!(seen.len(), 1);
        assert_eq!((seen[0].0, seen[0].1.as_str()), (true, "ModelsMissing"));

        let down = status(
            &split(&configured, Err("connection refused")),
            &SOURCE,
            Some(&missing),
            Some(1),
            at(30),
        );
        assert_eq!(down.missing_models, ["a", "b"]);
        assert_eq!(down.observed.conditions[0].reason, "CatalogUnreachable");
        assert_eq!(down.observed.conditions[0].last_transition_time, Time(at(20)));
        assert_eq!(events(Some(&missing), &down).len(), 1);
        // The same again is no event.
        let again = status(
            &split(&configured, Err("connection refused")),
            &SOURCE,
            Some(&down),
            Some(1),
            at(40),
        );
        assert!(events(Some(&down), &again).is_empty());
    }

    #[test]
    fn a_bad_override_file_shows_in_both_conditions() {
        let problems = strings(&["/x/roles.yaml: invalid: oops"]);
        let context = Context { problems: &problems, ..SOURCE };
        let s = status(&split(&[], Ok(&[])), &context, None, None, at(1));
        assert!(s.observed.is_true(READY));
        assert!(s.observed.conditions[0].message.contains("/x/roles.yaml"));
        let valid = &s.observed.conditions[1];
        assert_eq!((valid.type_.as_str(), valid.status.as_str()), (CONFIG_VALID, "False"));
        assert_eq!(valid.reason, "OverrideFileInvalid");
        let seen = events(None, &s);
        assert_eq!(seen.len(), 2);
        assert!(seen[1].0);
    }
}
