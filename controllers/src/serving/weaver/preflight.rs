//! The preflight decision: which configured models the catalog serves.
//!
//! A catalog that cannot be read makes every configured model missing (and the result
//! degraded); otherwise models are split by exact id, and the result is degraded when one is
//! missing. Nothing configured is never degraded.

use std::collections::BTreeSet;

/// What a preflight found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// A model is missing or the catalog could not be read.
    pub degraded: bool,
    /// Configured models the catalog does not advertise, sorted.
    pub missing: Vec<String>,
    /// Configured models the catalog advertises, sorted.
    pub ready: Vec<String>,
    /// Why the catalog could not be read.
    pub catalog_error: Option<String>,
    /// Models the catalog advertised (0 when it could not be read).
    pub catalog_size: usize,
}

/// Splits `configured` by what `catalog` (its model ids, or why it could not be read)
/// advertises.
pub fn split(configured: &[String], catalog: Result<&[String], &str>) -> Outcome {
    let configured: BTreeSet<&String> = configured.iter().filter(|m| !m.is_empty()).collect();
    match catalog {
        Err(error) => Outcome {
            degraded: true,
            missing: configured.into_iter().cloned().collect(),
            ready: Vec::new(),
            catalog_error: Some(error.to_owned()),
            catalog_size: 0,
        },
        Ok(ids) => {
            let advertised: BTreeSet<&String> = ids.iter().collect();
            let (ready, missing): (Vec<&String>, Vec<&String>) =
                configured.into_iter().partition(|m| advertised.contains(m));
            Outcome {
                degraded: !missing.is_empty(),
                missing: missing.into_iter().cloned().collect(),
                ready: ready.into_iter().cloned().collect(),
                catalog_error: None,
                catalog_size: ids.len(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::weaver::config::{self, DomainsFile};
    use keelson_api_crds::serving::ModelRoutingSpec;
    use std::collections::BTreeMap;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Router and subagent primaries plus the given domains, as the reference's tests
    /// configure them.
    fn configured(router: &str, subagent: &str, domains: &str) -> Vec<String> {
        let mut yaml = String::new();
        if !router.is_empty() || !subagent.is_empty() {
            yaml.push_str(&format!(
                "roles:\n  - {{name: weaver-router, primary: {router}}}\n  - {{name: weaver-subagent, primary: {subagent}}}\n"
            ));
        }
        let spec: ModelRoutingSpec = if yaml.is_empty() {
            ModelRoutingSpec::default()
        } else {
            serde_saphyr::from_str(&yaml).unwrap()
        };
        let file: DomainsFile = config::parse(domains).unwrap();
        config::resolve(&spec, None, Some(&file), &BTreeMap::new()).models()
    }

    #[test]
    fn all_ready_with_a_catalog_of_four() {
        let models = configured(
            "qwen3-router",
            "qwen3-8b",
            "domains:\n  - {name: fast, model: fast-text, tools: [x]}\n",
        );
        let catalog = strings(&["qwen3-router", "qwen3-8b", "fast-text", "other"]);
        let outcome = split(&models, Ok(&catalog));
        assert_eq!(outcome.ready, ["fast-text", "qwen3-8b", "qwen3-router"]);
        assert!(outcome.missing.is_empty());
        assert!(!outcome.degraded);
        assert_eq!(outcome.catalog_size, 4);
        assert_eq!(outcome.catalog_error, None);
    }

    #[test]
    fn missing_models_exclude_a_domain_of_another_backend() {
        let models = configured(
            "absent-model",
            "also-absent",
            "domains:\n  - {name: spawn, model: claude-opus, backend: claude, tools: [x]}\n",
        );
        let catalog = strings(&["qwen3-8b"]);
        let outcome = split(&models, Ok(&catalog));
        assert_eq!(outcome.missing, ["absent-model", "also-absent"]);
        assert!(outcome.ready.is_empty());
        assert!(outcome.degraded);
    }

    #[test]
    fn an_unreachable_catalog_makes_every_model_missing() {
        let models = configured("qwen3-router", "qwen3-8b", "");
        let outcome = split(&models, Err("connection refused"));
        assert_eq!(outcome.missing, ["qwen3-8b", "qwen3-router"]);
        assert!(outcome.ready.is_empty());
        assert!(outcome.degraded);
        assert_eq!(outcome.catalog_error.as_deref(), Some("connection refused"));
        assert_eq!(outcome.catalog_size, 0);
    }

    #[test]
    fn nothing_configured_is_not_degraded() {
        let models = configured("", "", "");
        assert!(models.is_empty());
        let catalog = strings(&["qwen3-8b"]);
        let outcome = split(&models, Ok(&catalog));
        assert!(!outcome.degraded);
        assert_eq!(outcome.catalog_size, 1);
        assert!(outcome.missing.is_empty() && outcome.ready.is_empty());
    }

    #[test]
    fn a_domain_model_missing_while_another_backend_s_domain_is_ignored() {
        let models = configured(
            "qwen3-router",
            "qwen3-8b",
            "domains:\n  - {name: research, model: domain-m, tools: [x]}\n  - {name: spawn, model: spawn-m, backend: claude, tools: [y]}\n",
        );
        let catalog = strings(&["qwen3-router", "qwen3-8b"]);
        let outcome = split(&models, Ok(&catalog));
        assert_eq!(outcome.missing, ["domain-m"]);
        assert_eq!(outcome.ready, ["qwen3-8b", "qwen3-router"]);
        assert!(outcome.degraded);
    }

    #[test]
    fn ids_match_exactly() {
        let outcome =
            split(&strings(&["Qwen3-8B"]), Ok(&strings(&["qwen3-8b", "Qwen3-8B:latest"])));
        assert_eq!(outcome.missing, ["Qwen3-8B"]);
    }
}
