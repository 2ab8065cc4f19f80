//! The models a ModelRouting's roles and domains are configured to use, from its layers
//! (highest first):
//!
//! 1. `WEAVER_<ROLE>_MODEL` environment variables: the role's name upper-cased, `-` as `_`,
//!    without a `weaver-` prefix (`weaver-router` ← `WEAVER_ROUTER_MODEL`, `mills-judge` ←
//!    `WEAVER_MILLS_JUDGE_MODEL`). They replace the role's primary model only;
//! 2. the role override file (`roles: {<role>: {primary, fallbacks}}`): a missing field keeps
//!    the value of the layer below;
//! 3. the resource's `spec.roles`: the defaults.
//!
//! Domains are the resource's `spec.domains`, each overridden field by field by the entry of
//! the same name in the domain override file (`domains: [{name, model, backend, …}]`, other
//! keys such as `tools` ignored).
//!
//! The configured set is every role's primary and fallbacks (a fallback the catalog does not
//! serve fails when the primary does, so it is checked too) and the model of every domain
//! served through Keelson (no backend, or `keelson`), sorted and without duplicates or
//! empty names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use keelson_api_crds::serving::ModelRoutingSpec;
use serde::Deserialize;

/// Roles the weaver and its neighbours use; a role of the override file that is neither one
/// of these nor a role of the resource is reported and ignored.
pub const KNOWN_ROLES: [&str; 6] = [
    "weaver-router",
    "weaver-subagent",
    "mills-judge",
    "mills-research",
    "coordinator-default",
    "autofix",
];

/// Domain backends whose models Keelson serves (checked against the catalog).
const KEELSON_BACKEND: &str = "keelson";

/// The models of one role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Role {
    /// Model tried first.
    pub primary: String,
    /// Models tried next, in order.
    pub fallbacks: Vec<String>,
}

/// The model of one domain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Domain {
    /// Domain name.
    pub name: String,
    /// Model the domain uses.
    pub model: String,
    /// Backend serving it; empty for Keelson.
    pub backend: String,
}

impl Domain {
    /// Whether the model is served through Keelson, so the catalog must advertise it.
    pub fn served_by_keelson(&self) -> bool {
        self.backend.is_empty() || self.backend == KEELSON_BACKEND
    }
}

/// The role override file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct RolesFile {
    /// Per role, the fields to override.
    #[serde(default)]
    pub roles: BTreeMap<String, RoleOverride>,
}

/// One role of the role override file; absent fields keep the layer below.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct RoleOverride {
    /// Model tried first.
    #[serde(default)]
    pub primary: Option<String>,
    /// Models tried next.
    #[serde(default)]
    pub fallbacks: Option<Vec<String>>,
}

/// The domain override file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct DomainsFile {
    /// Domains to add or override, by name.
    #[serde(default)]
    pub domains: Vec<DomainOverride>,
}

/// One domain of the domain override file; keys other than these are ignored.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct DomainOverride {
    /// Domain name.
    pub name: String,
    /// Model the domain uses.
    #[serde(default)]
    pub model: Option<String>,
    /// Backend serving it.
    #[serde(default)]
    pub backend: Option<String>,
}

/// Why an override file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file exists but could not be read.
    #[error("{path}: cannot be read: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape.
    #[error("{path}: invalid: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
}

impl FileError {
    /// Label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            FileError::Read { .. } => "read",
            FileError::Invalid { .. } => "invalid",
        }
    }
}

/// Reads an override file: `Ok(None)` when it does not exist (no layer).
pub fn load<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<Option<T>, FileError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(FileError::Read { path: path.display().to_string(), source }),
    };
    parse(&text)
        .map(Some)
        .map_err(|message| FileError::Invalid { path: path.display().to_string(), message })
}

/// Parses an override file's text; an empty file is an empty layer.
pub fn parse<T: serde::de::DeserializeOwned + Default>(text: &str) -> Result<T, String> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_saphyr::from_str(text).map_err(|error| error.to_string())
}

/// The `WEAVER_*_MODEL` variable of `role`.
pub fn env_var(role: &str) -> String {
    let base = role.strip_prefix("weaver-").unwrap_or(role);
    format!("WEAVER_{}_MODEL", base.to_ascii_uppercase().replace('-', "_"))
}

/// The `WEAVER_*_MODEL` variables among `vars` with a non-blank value.
pub fn model_env(vars: impl IntoIterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.into_iter()
        .filter(|(key, _)| {
            key.len() > "WEAVER__MODEL".len()
                && key.starts_with("WEAVER_")
                && key.ends_with("_MODEL")
        })
        .map(|(key, value)| (key, value.trim().to_owned()))
        .filter(|(_, value)| !value.is_empty())
        .collect()
}

/// The role an environment variable names when no role of the lower layers matches it:
/// `WEAVER_X_Y_MODEL` → `weaver-x-y`.
fn role_of_var(var: &str) -> String {
    let middle = &var["WEAVER_".len()..var.len() - "_MODEL".len()];
    format!("weaver-{}", middle.to_ascii_lowercase().replace('_', "-"))
}

/// Everything the layers configure, and what was odd about them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Configured {
    /// Models per role.
    pub roles: BTreeMap<String, Role>,
    /// Domains, by name.
    pub domains: Vec<Domain>,
    /// What was ignored or guessed (unknown roles of the override file, variables naming no
    /// role), one line each.
    pub warnings: Vec<String>,
}

impl Configured {
    /// The configured set: every role's primary and fallbacks and every Keelson-served
    /// domain's model, sorted, deduplicated, empty names dropped.
    pub fn models(&self) -> Vec<String> {
        let roles =
            self.roles.values().flat_map(|r| std::iter::once(&r.primary).chain(&r.fallbacks));
        let domains = self.domains.iter().filter(|d| d.served_by_keelson()).map(|d| &d.model);
        let set: BTreeSet<&String> =
            roles.chain(domains).filter(|m| !m.trim().is_empty()).collect();
        set.into_iter().cloned().collect()
    }
}

/// Resolves the layers: `spec` (defaults), then the override files, then `env` (the
/// `WEAVER_*_MODEL` variables, see [`model_env`]).
pub fn resolve(
    spec: &ModelRoutingSpec,
    roles_file: Option<&RolesFile>,
    domains_file: Option<&DomainsFile>,
    env: &BTreeMap<String, String>,
) -> Configured {
    let mut warnings = Vec::new();
    let mut roles: BTreeMap<String, Role> = spec
        .roles
        .iter()
        .map(|r| {
            (r.name.clone(), Role { primary: r.primary.clone(), fallbacks: r.fallbacks.clone() })
        })
        .collect();
    for (name, over) in roles_file.map(|f| &f.roles).into_iter().flatten() {
        if !roles.contains_key(name) && !KNOWN_ROLES.contains(&name.as_str()) {
            warnings.push(format!(
                "the role override file names an unknown role {name:?}; it is ignored"
            ));
            continue;
        }
        let role = roles.entry(name.clone()).or_default();
        if let Some(primary) = &over.primary {
            role.primary = primary.clone();
        }
        if let Some(fallbacks) = &over.fallbacks {
            role.fallbacks = fallbacks.clone();
        }
    }
    let mut unused: BTreeMap<&String, &String> = env.iter().collect();
    for (name, role) in roles.iter_mut() {
        if let Some(model) = unused.remove(&env_var(name)) {
            role.primary = model.clone();
        }
    }
    for (var, model) in unused {
        let name = role_of_var(var);
        warnings.push(format!("{var} names no configured role; checked as role {name:?}"));
        roles.entry(name).or_default().primary = model.clone();
    }

    let mut domains: Vec<Domain> = spec
        .domains
        .iter()
        .map(|d| Domain {
            name: d.name.clone(),
            model: d.model.clone(),
            backend: d.backend.clone().unwrap_or_default(),
        })
        .collect();
    for over in domains_file.map(|f| f.domains.as_slice()).unwrap_or_default() {
        let index = match domains.iter().position(|d| d.name == over.name) {
            Some(index) => index,
            None => {
                domains.push(Domain { name: over.name.clone(), ..Domain::default() });
                domains.len() - 1
            }
        };
        let domain = &mut domains[index];
        if let Some(model) = &over.model {
            domain.model = model.clone();
        }
        if let Some(backend) = &over.backend {
            domain.backend = backend.clone();
        }
    }
    domains.sort_by(|a, b| a.name.cmp(&b.name));
    Configured { roles, domains, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> ModelRoutingSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const SPEC: &str = "
roles:
  - {name: weaver-router, primary: qwen3-router, fallbacks: [qwen3-8b, fast-text]}
  - {name: weaver-subagent, primary: qwen3-8b, fallbacks: [fast-text]}
domains:
  - {name: research, model: research-model}
  - {name: legal, model: claude-legal, backend: claude}
";

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        model_env(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
    }

    #[test]
    fn env_var_names_follow_the_role() {
        assert_eq!(env_var("weaver-router"), "WEAVER_ROUTER_MODEL");
        assert_eq!(env_var("weaver-subagent"), "WEAVER_SUBAGENT_MODEL");
        assert_eq!(env_var("mills-judge"), "WEAVER_MILLS_JUDGE_MODEL");
        assert_eq!(role_of_var("WEAVER_MILLS_JUDGE_MODEL"), "weaver-mills-judge");
    }

    #[test]
    fn only_weaver_model_variables_with_values_count() {
        let vars = env(&[
            ("WEAVER_ROUTER_MODEL", " a "),
            ("WEAVER_SUBAGENT_MODEL", "  "),
            ("WEAVER__MODEL", "x"),
            ("WEAVER_URL", "y"),
            ("PATH", "/bin"),
        ]);
        assert_eq!(vars, BTreeMap::from([("WEAVER_ROUTER_MODEL".to_owned(), "a".to_owned())]));
    }

    #[test]
    fn the_resource_alone_configures_primaries_fallbacks_and_keelson_domains() {
        let c = resolve(&spec(SPEC), None, None, &BTreeMap::new());
        assert_eq!(c.models(), ["fast-text", "qwen3-8b", "qwen3-router", "research-model"]);
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn env_beats_the_roles_file_which_beats_the_resource() {
        let file: RolesFile = parse(
            "roles:\n  weaver-router: {primary: file-router}\n  weaver-subagent: {fallbacks: [file-fb]}\n",
        )
        .unwrap();
        let c =
            resolve(&spec(SPEC), Some(&file), None, &env(&[("WEAVER_ROUTER_MODEL", "env-router")]));
        assert_eq!(c.roles["weaver-router"].primary, "env-router");
        // The file's router fallbacks were absent: the resource's stand.
        assert_eq!(c.roles["weaver-router"].fallbacks, ["qwen3-8b", "fast-text"]);
        // The file's subagent primary was absent: the resource's stands; its fallbacks win.
        assert_eq!(
            c.roles["weaver-subagent"],
            Role { primary: "qwen3-8b".into(), fallbacks: vec!["file-fb".into()] }
        );
        assert!(!c.models().contains(&"file-router".to_owned()));
        assert!(!c.models().contains(&"qwen3-router".to_owned()));
    }

    #[test]
    fn unknown_roles_warn_and_known_ones_join() {
        let file: RolesFile =
            parse("roles:\n  nobody: {primary: x}\n  mills-judge: {primary: judge}\n").unwrap();
        let c = resolve(&spec(SPEC), Some(&file), None, &BTreeMap::new());
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("\"nobody\""));
        assert_eq!(c.roles["mills-judge"].primary, "judge");
        assert!(!c.models().contains(&"x".to_owned()));
    }

    #[test]
    fn a_variable_naming_no_role_is_checked_with_a_warning() {
        let c = resolve(&spec(SPEC), None, None, &env(&[("WEAVER_PLANNER_MODEL", "plan")]));
        assert_eq!(c.roles["weaver-planner"].primary, "plan");
        assert!(c.warnings[0].contains("WEAVER_PLANNER_MODEL"), "{:?}", c.warnings);
    }

    #[test]
    fn the_domains_file_overrides_by_name_and_ignores_other_keys() {
        let file: DomainsFile = parse(
            "domains:\n  - {name: research, model: domain-m, tools: [search]}\n  - {name: spawn, model: claude-x, backend: claude, tools: [a]}\n  - {name: legal, backend: keelson}\n",
        )
        .unwrap();
        let c = resolve(&spec(SPEC), None, Some(&file), &BTreeMap::new());
        let models = c.models();
        assert!(models.contains(&"domain-m".to_owned()), "{models:?}");
        assert!(!models.contains(&"research-model".to_owned()));
        assert!(!models.contains(&"claude-x".to_owned()));
        // Legal moved to Keelson and kept its model.
        assert!(models.contains(&"claude-legal".to_owned()));
    }

    #[test]
    fn nothing_configured_is_an_empty_set_and_empty_names_drop() {
        let c = resolve(&ModelRoutingSpec::default(), None, None, &BTreeMap::new());
        assert!(c.models().is_empty());
        let file: DomainsFile = parse("domains:\n  - {name: d, model: ''}\n").unwrap();
        let c = resolve(&ModelRoutingSpec::default(), None, Some(&file), &BTreeMap::new());
        assert!(c.models().is_empty());
    }

    #[test]
    fn files_load_missing_empty_and_invalid() {
        let dir = std::env::temp_dir().join(format!("weaver-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(load::<RolesFile>(&dir.join("absent.yaml")).unwrap(), None);
        let empty = dir.join("empty.yaml");
        std::fs::write(&empty, "\n").unwrap();
        assert_eq!(load::<RolesFile>(&empty).unwrap(), Some(RolesFile::default()));
        let bad = dir.join("bad.yaml");
        std::fs::write(&bad, "roles: [1, 2\n").unwrap();
        let error = load::<RolesFile>(&bad).unwrap_err();
        assert_eq!(error.metric_label(), "invalid");
        assert!(error.to_string().starts_with(&bad.display().to_string()), "{error}");
        let error = load::<RolesFile>(&dir).unwrap_err();
        assert_eq!(error.metric_label(), "read");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
