//! The search space of an autotune and the settings it moves: which vLLM parameters are tried,
//! in which order, with which values, and how a set of values becomes a ModelDeployment patch.
//!
//! A configuration is a map from parameter name (the `spec.vllm` field) to its value as text;
//! a parameter the deployment leaves unset is absent. `speculativeConfig` reads `off` or `ngram`
//! (the n-gram configuration autotune tries), or, for any other configuration, its JSON.

use std::collections::BTreeMap;

use keelson_api_crds::serving::{SearchSpace, SpeculativeConfig, VllmConfig};
use serde_json::{Value, json};

/// Parameter name to value, as text.
pub type Config = BTreeMap<String, String>;

/// The parameter of n-gram speculative decoding.
pub const SPECULATIVE: &str = "speculativeConfig";
/// `speculativeConfig` switched off.
pub const OFF: &str = "off";
/// `speculativeConfig` set to [`SpeculativeConfig::ngram`].
pub const NGRAM: &str = "ngram";

/// How a parameter's value is written in `spec.vllm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Integer,
    Text,
    Boolean,
    Speculative,
}

/// The parameters autotune moves, in search order (the reference's default vLLM space).
const PARAMETERS: [(&str, Kind); 7] = [
    ("maxNumSeqs", Kind::Integer),
    ("gpuMemoryUtilization", Kind::Text),
    ("maxModelLen", Kind::Integer),
    ("enforceEager", Kind::Boolean),
    ("enablePrefixCaching", Kind::Boolean),
    ("maxNumBatchedTokens", Kind::Integer),
    (SPECULATIVE, Kind::Speculative),
];

/// The parameters and values of `space`, in search order. `speculativeConfig` is left out
/// unless `guarded` (with the quality guard on): throughput alone cannot judge it.
pub fn values(space: &SearchSpace, guarded: bool) -> Vec<(&'static str, Vec<String>)> {
    let text = |values: &[i32]| values.iter().map(i32::to_string).collect();
    let flags = |values: &[bool]| values.iter().map(bool::to_string).collect();
    let mut all = vec![
        ("maxNumSeqs", text(&space.max_num_seqs)),
        ("gpuMemoryUtilization", space.gpu_memory_utilization.clone()),
        ("maxModelLen", text(&space.max_model_len)),
        ("enforceEager", flags(&space.enforce_eager)),
        ("enablePrefixCaching", flags(&space.enable_prefix_caching)),
        ("maxNumBatchedTokens", text(&space.max_num_batched_tokens)),
    ];
    if guarded && space.speculative_decoding {
        all.push((SPECULATIVE, vec![OFF.to_owned(), NGRAM.to_owned()]));
    }
    all.retain(|(_, values)| !values.is_empty());
    all
}

/// Whether `space` would try speculative decoding were the guard on (the CLI's notice).
pub fn drops_speculative(space: &SearchSpace, guarded: bool) -> bool {
    space.speculative_decoding && !guarded
}

/// Every candidate of a search starting from `baseline`, in order: each value of each
/// parameter, except the value the parameter already has. Coordinate descent moves one
/// parameter at a time, in order, so when a parameter's turn comes it still has its baseline
/// value, and the plan is fixed from the start.
pub fn candidates(space: &SearchSpace, guarded: bool, baseline: &Config) -> Vec<(String, String)> {
    values(space, guarded)
        .into_iter()
        .flat_map(|(parameter, values)| {
            let current = value_of(baseline, parameter);
            values
                .into_iter()
                .filter(move |v| Some(v.as_str()) != current.as_deref())
                .map(move |v| (parameter.to_owned(), v))
        })
        .collect()
}

/// The value `parameter` has in `config` (`speculativeConfig` unset reads `off`).
fn value_of(config: &Config, parameter: &str) -> Option<String> {
    match config.get(parameter) {
        Some(value) => Some(value.clone()),
        None if parameter == SPECULATIVE => Some(OFF.to_owned()),
        None => None,
    }
}

/// The searched parameters' values in a deployment's `spec.vllm`.
pub fn config_of(vllm: Option<&VllmConfig>) -> Config {
    let Some(vllm) = vllm else { return Config::new() };
    let speculative = vllm.speculative_config.as_ref().map(|c| {
        if *c == SpeculativeConfig::ngram() {
            NGRAM.to_owned()
        } else {
            serde_json::to_string(c).unwrap_or_default()
        }
    });
    [
        ("maxNumSeqs", vllm.max_num_seqs.map(|v| v.to_string())),
        ("gpuMemoryUtilization", vllm.gpu_memory_utilization.clone()),
        ("maxModelLen", vllm.max_model_len.map(|v| v.to_string())),
        ("enforceEager", vllm.enforce_eager.map(|v| v.to_string())),
        ("enablePrefixCaching", vllm.enable_prefix_caching.map(|v| v.to_string())),
        ("maxNumBatchedTokens", vllm.max_num_batched_tokens.map(|v| v.to_string())),
        (SPECULATIVE, speculative),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name.to_owned(), value?)))
    .collect()
}

/// `config` as `spec.vllm` fields: every searched parameter, typed, and `null` for those
/// `config` leaves unset, so a merge patch of it sets exactly these settings.
pub fn vllm_fields(config: &Config) -> serde_json::Map<String, Value> {
    PARAMETERS
        .iter()
        .map(|(name, kind)| {
            let value = config.get(*name).map_or(Value::Null, |v| typed(*kind, v));
            ((*name).to_owned(), value)
        })
        .collect()
}

/// The merge patch that gives a ModelDeployment the settings of `config`.
pub fn patch(config: &Config) -> Value {
    json!({ "spec": { "vllm": vllm_fields(config) } })
}

fn typed(kind: Kind, value: &str) -> Value {
    match kind {
        Kind::Integer => value.parse::<i64>().map_or(Value::Null, Value::from),
        Kind::Boolean => Value::Bool(value == "true"),
        Kind::Text => Value::String(value.to_owned()),
        Kind::Speculative => match value {
            OFF => Value::Null,
            NGRAM => serde_json::to_value(SpeculativeConfig::ngram()).unwrap_or_default(),
            other => serde_json::from_str(other).unwrap_or(Value::Null),
        },
    }
}

/// `config` with `parameter` set to `value` (`speculativeConfig=off` unsets it).
pub fn with(config: &Config, parameter: &str, value: &str) -> Config {
    let mut next = config.clone();
    if parameter == SPECULATIVE && value == OFF {
        next.remove(parameter);
    } else {
        next.insert(parameter.to_owned(), value.to_owned());
    }
    next
}

/// A candidate's change as the log shows it: `maxNumSeqs=8`.
pub fn delta(parameter: &str, value: &str) -> String {
    format!("{parameter}={value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_space_has_24_experiments_22_without_the_guard() {
        let space = SearchSpace::default();
        let order: Vec<_> = values(&space, true).into_iter().map(|(p, _)| p).collect();
        assert_eq!(order, PARAMETERS.map(|(p, _)| p).to_vec());
        assert_eq!(candidates(&space, true, &Config::new()).len(), 24 - 1);
        let counted: usize = values(&space, true).iter().map(|(_, v)| v.len()).sum();
        assert_eq!(counted, 24);
        let unguarded: usize = values(&space, false).iter().map(|(_, v)| v.len()).sum();
        assert_eq!(unguarded, 22);
        assert!(drops_speculative(&space, false));
        assert!(!drops_speculative(&space, true));
        assert!(!values(&space, false).iter().any(|(p, _)| *p == SPECULATIVE));
    }

    #[test]
    fn the_current_value_of_each_parameter_is_skipped() {
        let space = SearchSpace {
            max_num_seqs: vec![1, 2, 3],
            gpu_memory_utilization: vec![],
            max_model_len: vec![],
            enforce_eager: vec![true, false],
            enable_prefix_caching: vec![],
            max_num_batched_tokens: vec![],
            speculative_decoding: false,
        };
        let all = candidates(&space, false, &Config::new());
        assert_eq!(all.len(), 5);
        let baseline = Config::from([("maxNumSeqs".to_owned(), "2".to_owned())]);
        let plan = candidates(&space, false, &baseline);
        let plan: Vec<_> = plan.iter().map(|(p, v)| delta(p, v)).collect();
        assert_eq!(
            plan,
            ["maxNumSeqs=1", "maxNumSeqs=3", "enforceEager=true", "enforceEager=false"]
        );
        // Speculation unset counts as off: only `ngram` is a candidate.
        let guarded = SearchSpace { speculative_decoding: true, ..space };
        let plan = candidates(&guarded, true, &baseline);
        assert_eq!(plan.last(), Some(&(SPECULATIVE.to_owned(), NGRAM.to_owned())));
        assert!(!plan.contains(&(SPECULATIVE.to_owned(), OFF.to_owned())));
    }

    #[test]
    fn configs_round_trip_through_the_deployment_spec() {
        let vllm = VllmConfig {
            max_num_seqs: Some(8),
            gpu_memory_utilization: Some("0.90".into()),
            enforce_eager: Some(false),
            speculative_config: Some(SpeculativeConfig::ngram()),
            dtype: Some("half".into()),
            ..VllmConfig::default()
        };
        let config = config_of(Some(&vllm));
        assert_eq!(
            config,
            Config::from([
                ("maxNumSeqs".into(), "8".into()),
                ("gpuMemoryUtilization".into(), "0.90".into()),
                ("enforceEager".into(), "false".into()),
                (SPECULATIVE.into(), NGRAM.into()),
            ])
        );
        let fields = vllm_fields(&config);
        let back: VllmConfig = serde_json::from_value(Value::Object(
            fields.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        ))
        .unwrap();
        assert_eq!(config_of(Some(&back)), config);
        let patch = patch(&config);
        assert_eq!(patch["spec"]["vllm"]["maxModelLen"], Value::Null);
        assert_eq!(patch["spec"]["vllm"]["maxNumSeqs"], 8);
        assert_eq!(patch["spec"]["vllm"]["speculativeConfig"]["numSpeculativeTokens"], 7);
        assert_eq!(patch["spec"]["vllm"]["speculativeConfig"]["promptLookupMax"], 6);
        assert_eq!(patch["spec"]["vllm"]["speculativeConfig"]["promptLookupMin"], 1);
        assert!(patch["spec"]["vllm"].get("dtype").is_none(), "other settings are left alone");
        assert_eq!(config_of(None), Config::new());
    }

    #[test]
    fn a_custom_speculative_config_is_restored_as_it_was() {
        let custom = SpeculativeConfig { num_speculative_tokens: 3, ..SpeculativeConfig::ngram() };
        let vllm = VllmConfig { speculative_config: Some(custom.clone()), ..VllmConfig::default() };
        let config = config_of(Some(&vllm));
        let restored = &patch(&config)["spec"]["vllm"]["speculativeConfig"];
        assert_eq!(restored, &serde_json::to_value(custom).unwrap());
        assert_eq!(with(&config, SPECULATIVE, OFF), Config::new());
        assert_eq!(delta("maxNumSeqs", "2"), "maxNumSeqs=2");
    }
}
