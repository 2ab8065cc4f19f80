//! Serving kinds: names a deployment publishes, GPU quantities, autotune search spaces and
//! routing fallbacks.
//!
//! ModelCache and GPUGroup have nothing to check beyond their schemas.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use keelson_api_crds::serving::{ModelAutotuneSpec, ModelDeploymentSpec, ModelRoutingSpec};

use crate::Problem;

/// Resource keys that count GPUs; their quantities must be whole numbers.
pub const GPU_RESOURCES: &[&str] = &["nvidia.com/gpu", "amd.com/gpu"];

/// Problems with a ModelDeployment's spec: gateway aliases blank, repeated, or the same as the
/// served model name (`spec.litellm.aliases[i]`); service labels repeated
/// (`spec.serviceLabels[i]`); GPU limits that are not a positive whole number
/// (`spec.resources.limits[nvidia.com/gpu]`) and GPU requests that differ from the limit or
/// have none (`spec.resources.requests[nvidia.com/gpu]`).
///
/// `name` is the resource's name, when known: the served model name defaults to it.
pub fn check_model_deployment(name: Option<&str>, spec: &ModelDeploymentSpec) -> Vec<Problem> {
    let mut problems = Vec::new();

    if let Some(litellm) = &spec.litellm {
        let served = litellm.served_model_name.as_deref();
        let mut first_index = HashMap::new();
        for (i, alias) in litellm.aliases.iter().enumerate() {
            let field = format!("spec.litellm.aliases[{i}]");
            if alias.trim().is_empty() {
                problems.push(Problem::new(field, "alias is blank"));
            } else if let Some(first) = first_index.get(alias.as_str()) {
                problems.push(Problem::new(
                    field,
                    format!("alias \"{alias}\" is already listed at aliases[{first}]"),
                ));
                continue;
            } else if served == Some(alias.as_str()) {
                problems.push(Problem::new(
                    field,
                    format!("alias \"{alias}\" is the same as servedModelName"),
                ));
            } else if served.is_none() && name == Some(alias.as_str()) {
                problems.push(Problem::new(
                    field,
                    format!(
                        "alias \"{alias}\" is the deployment's own name, which is already its \
                         served model name"
                    ),
                ));
            }
            first_index.entry(alias.as_str()).or_insert(i);
        }
    }

    problems.extend(repeats(&spec.service_labels, |label| label.as_str()).map(|(i, first)| {
        Problem::new(
            format!("spec.serviceLabels[{i}]"),
            format!(
                "label \"{}\" is already listed at serviceLabels[{first}]",
                spec.service_labels[i]
            ),
        )
    }));

    if let Some(resources) = &spec.resources {
        let empty = BTreeMap::new();
        let limits = resources.limits.as_ref().unwrap_or(&empty);
        let requests = resources.requests.as_ref().unwrap_or(&empty);
        for key in GPU_RESOURCES {
            let limit = limits.get(*key).map(|q| (q.0.as_str(), gpu_count(&q.0)));
            if let Some((text, count)) = limit {
                let message = match count {
                    Count::Whole(n) if n > 0 => None,
                    Count::Invalid => Some(format!(
                        "GPU limit \"{text}\" is not a quantity; count GPUs in whole numbers such as 1"
                    )),
                    _ => Some(format!("GPU limit {text} must be a positive whole number of GPUs")),
                };
                if let Some(message) = message {
                    problems.push(Problem::new(format!("spec.resources.limits[{key}]"), message));
                }
            }
            let Some(request) = requests.get(*key) else { continue };
            let field = format!("spec.resources.requests[{key}]");
            let request_count = gpu_count(&request.0);
            match limit {
                None => problems.push(Problem::new(
                    field,
                    format!(
                        "a GPU request needs a limit of the same number in resources.limits[{key}]: \
                         GPUs cannot be overcommitted"
                    ),
                )),
                Some(_) if request_count == Count::Invalid => problems.push(Problem::new(
                    field,
                    format!(
                        "GPU request \"{}\" is not a quantity; count GPUs in whole numbers such as 1",
                        request.0
                    ),
                )),
                Some((limit_text, Count::Whole(limit))) if request_count != Count::Whole(limit) => {
                    problems.push(Problem::new(
                        field,
                        format!("GPU request {} must equal the limit {limit_text}", request.0),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    problems
}

/// Problems with a ModelAutotune's spec: a value listed twice in one search-space list
/// (`spec.searchSpace.maxNumSeqs[i]`, …), and a search space with nothing to search
/// (`spec.searchSpace`): every list has fewer than two distinct values and speculative
/// decoding is not tried (it is tried only with the quality guard on).
pub fn check_model_autotune(spec: &ModelAutotuneSpec) -> Vec<Problem> {
    let space = &spec.search_space;
    let mut problems = Vec::new();
    let mut searched = false;
    let mut list = |name: &str, values: Vec<String>, keys: Vec<String>| {
        let mut distinct = 0;
        let mut first_index = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some(first) = first_index.get(key) {
                problems.push(Problem::new(
                    format!("spec.searchSpace.{name}[{i}]"),
                    format!("value {} is already listed at {name}[{first}]", values[i]),
                ));
            } else {
                first_index.insert(key, i);
                distinct += 1;
            }
        }
        searched |= distinct >= 2;
    };
    fn texts<T: ToString>(values: &[T]) -> Vec<String> {
        values.iter().map(ToString::to_string).collect()
    }
    list("maxNumSeqs", texts(&space.max_num_seqs), texts(&space.max_num_seqs));
    list(
        "gpuMemoryUtilization",
        space.gpu_memory_utilization.clone(),
        space.gpu_memory_utilization.iter().map(|v| normalize_decimal(v)).collect(),
    );
    list("maxModelLen", texts(&space.max_model_len), texts(&space.max_model_len));
    list("enforceEager", texts(&space.enforce_eager), texts(&space.enforce_eager));
    list(
        "enablePrefixCaching",
        texts(&space.enable_prefix_caching),
        texts(&space.enable_prefix_caching),
    );
    list(
        "maxNumBatchedTokens",
        texts(&space.max_num_batched_tokens),
        texts(&space.max_num_batched_tokens),
    );
    searched |= space.speculative_decoding && spec.quality_guard.enabled;
    if !searched {
        problems.push(Problem::new(
            "spec.searchSpace",
            "nothing to search: give at least one setting two or more values, or try \
             speculativeDecoding with qualityGuard enabled",
        ));
    }
    problems
}

/// Problems with a ModelRouting's spec: a role's fallback that is its primary model or is
/// listed twice (`spec.roles[i].fallbacks[j]`).
pub fn check_model_routing(spec: &ModelRoutingSpec) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (i, role) in spec.roles.iter().enumerate() {
        let mut first_index = HashMap::new();
        for (j, fallback) in role.fallbacks.iter().enumerate() {
            let field = format!("spec.roles[{i}].fallbacks[{j}]");
            if *fallback == role.primary {
                problems.push(Problem::new(
                    field,
                    format!("fallback \"{fallback}\" is already the role's primary model"),
                ));
            } else if let Some(first) = first_index.get(fallback.as_str()) {
                problems.push(Problem::new(
                    field,
                    format!("fallback \"{fallback}\" is already listed at fallbacks[{first}]"),
                ));
            } else {
                first_index.insert(fallback.as_str(), j);
            }
        }
    }
    problems
}

/// `(index, index of its first occurrence)` of each item whose key came before.
fn repeats<'a, T, K: Eq + Hash>(
    items: &'a [T],
    key: impl Fn(&'a T) -> K,
) -> impl Iterator<Item = (usize, usize)> {
    let mut first_index = HashMap::new();
    items.iter().enumerate().filter_map(move |(i, item)| match first_index.get(&key(item)) {
        Some(&first) => Some((i, first)),
        None => {
            first_index.insert(key(item), i);
            None
        }
    })
}

/// `0.90` → `0.9`, `0.` → `0`: equal decimals compare equal.
fn normalize_decimal(value: &str) -> String {
    if value.contains('.') {
        value.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        value.to_owned()
    }
}

/// The value of a quantity, as far as counting GPUs goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// A whole number, zero or more.
    Whole(u128),
    /// A well-formed quantity that is negative, fractional or absurdly large.
    Other,
    /// Not a Kubernetes quantity.
    Invalid,
}

/// Evaluates a Kubernetes quantity (`<sign><digits>[.<digits>]<suffix>`, the suffix one of
/// `Ki`…`Ei`, `m`, `k`, `M`…`E`, or `e<exponent>`) exactly, without floating point.
fn gpu_count(quantity: &str) -> Count {
    let (negative, rest) = match quantity.as_bytes().first() {
        Some(b'-') => (true, &quantity[1..]),
        Some(b'+') => (false, &quantity[1..]),
        _ => (false, quantity),
    };
    let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.len() + fraction.len() == 0 || fraction.contains('.') {
        return Count::Invalid;
    }
    let (mut power10, power2): (i64, u32) = match suffix {
        "" => (0, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exponent => {
            let Some(exponent) = exponent.strip_prefix(['e', 'E']) else { return Count::Invalid };
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Count::Invalid;
            }
            match exponent.parse::<i64>() {
                Ok(exponent) => (exponent, 0),
                Err(_) => return Count::Other,
            }
        }
    };
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Count::Whole(0);
    }
    if negative {
        return Count::Other;
    }
    let significant = digits.trim_end_matches('0');
    power10 = power10
        .saturating_add((digits.len() - significant.len()) as i64)
        .saturating_sub(fraction.len() as i64);
    let Ok(mantissa) = significant.parse::<u128>() else { return Count::Other };
    let value = if power10 >= 0 {
        u32::try_from(power10)
            .ok()
            .and_then(|p| 10u128.checked_pow(p))
            .and_then(|scale| mantissa.checked_mul(scale))
            .and_then(|v| v.checked_mul(1u128 << power2))
    } else {
        // mantissa × 2^power2 / (2^k × 5^k), whole only if the division is exact.
        u32::try_from(-power10).ok().filter(|&k| k <= 38).and_then(|k| {
            let fives = 5u128.pow(k);
            if mantissa % fives != 0 {
                return None;
            }
            let value = mantissa / fives;
            if k >= power2 {
                let twos = 1u128 << (k - power2);
                (value % twos == 0).then(|| value / twos)
            } else {
                value.checked_mul(1u128 << (power2 - k))
            }
        })
    };
    value.map_or(Count::Other, Count::Whole)
}

#[cfg(test)]
mod tests {
    use super::*;
    use keelson_api_crds::serving::{
        Backend, LiteLlmConfig, ModelAutotuneSpec, QualityGuard, RoleModels, SearchSpace,
    };

    fn deployment() -> ModelDeploymentSpec {
        serde_json::from_value(serde_json::json!({
            "backend": "vllm",
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "litellm": {"servedModelName": "llama-8b", "aliases": ["llama", "llama3"]},
            "serviceLabels": ["chat", "small"],
            "resources": {
                "limits": {"nvidia.com/gpu": 1, "memory": "32Gi"},
                "requests": {"nvidia.com/gpu": "1", "cpu": "500m"},
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_valid_deployment_has_no_problem() {
        let spec = deployment();
        assert_eq!(spec.backend, Backend::Vllm);
        assert_eq!(check_model_deployment(Some("llama-8b"), &spec), vec![]);
    }

    #[test]
    fn aliases_are_unique_and_differ_from_the_served_name() {
        let mut spec = deployment();
        spec.litellm = Some(LiteLlmConfig {
            enabled: true,
            served_model_name: Some("llama-8b".to_owned()),
            aliases: ["llama", "llama-8b", "llama", " "].map(String::from).to_vec(),
        });
        assert_eq!(
            check_model_deployment(Some("my-deployment"), &spec),
            vec![
                Problem::new(
                    "spec.litellm.aliases[1]",
                    "alias \"llama-8b\" is the same as servedModelName"
                ),
                Problem::new(
                    "spec.litellm.aliases[2]",
                    "alias \"llama\" is already listed at aliases[0]"
                ),
                Problem::new("spec.litellm.aliases[3]", "alias is blank"),
            ]
        );
        // Without servedModelName, the resource name is the served name.
        if let Some(litellm) = &mut spec.litellm {
            litellm.served_model_name = None;
            litellm.aliases = vec!["my-deployment".to_owned()];
        }
        assert_eq!(
            check_model_deployment(Some("my-deployment"), &spec),
            vec![Problem::new(
                "spec.litellm.aliases[0]",
                "alias \"my-deployment\" is the deployment's own name, which is already its \
                 served model name"
            )]
        );
        assert_eq!(check_model_deployment(None, &spec), vec![]);
    }

    #[test]
    fn service_labels_are_unique() {
        let mut spec = deployment();
        spec.service_labels = ["chat", "small", "chat"].map(String::from).to_vec();
        assert_eq!(
            check_model_deployment(None, &spec),
            vec![Problem::new(
                "spec.serviceLabels[2]",
                "label \"chat\" is already listed at serviceLabels[0]"
            )]
        );
    }

    fn with_gpus(limits: serde_json::Value, requests: serde_json::Value) -> ModelDeploymentSpec {
        let mut spec = deployment();
        spec.resources = Some(
            serde_json::from_value(serde_json::json!({"limits": limits, "requests": requests}))
                .unwrap(),
        );
        spec
    }

    #[test]
    fn gpu_limits_are_positive_whole_numbers() {
        let spec = with_gpus(
            serde_json::json!({"nvidia.com/gpu": "0.5", "amd.com/gpu": "two", "cpu": "0.5"}),
            serde_json::json!({}),
        );
        assert_eq!(
            check_model_deployment(None, &spec),
            vec![
                Problem::new(
                    "spec.resources.limits[nvidia.com/gpu]",
                    "GPU limit 0.5 must be a positive whole number of GPUs"
                ),
                Problem::new(
                    "spec.resources.limits[amd.com/gpu]",
                    "GPU limit \"two\" is not a quantity; count GPUs in whole numbers such as 1"
                ),
            ]
        );
        for good in ["1", "2", "2000m", "1e1", "+3", "8.0"] {
            let spec = with_gpus(serde_json::json!({"amd.com/gpu": good}), serde_json::json!({}));
            assert_eq!(check_model_deployment(None, &spec), vec![], "{good}");
        }
        for bad in ["0", "-1", "1500m", "1e-1", "0.25"] {
            let spec = with_gpus(serde_json::json!({"amd.com/gpu": bad}), serde_json::json!({}));
            assert_eq!(
                check_model_deployment(None, &spec),
                vec![Problem::new(
                    "spec.resources.limits[amd.com/gpu]",
                    format!("GPU limit {bad} must be a positive whole number of GPUs")
                )],
                "{bad}"
            );
        }
    }

    #[test]
    fn gpu_requests_equal_the_limit() {
        let spec = with_gpus(
            serde_json::json!({"nvidia.com/gpu": 2}),
            serde_json::json!({"nvidia.com/gpu": 1}),
        );
        assert_eq!(
            check_model_deployment(None, &spec),
            vec![Problem::new(
                "spec.resources.requests[nvidia.com/gpu]",
                "GPU request 1 must equal the limit 2"
            )]
        );
        let spec = with_gpus(
            serde_json::json!({"nvidia.com/gpu": 2}),
            serde_json::json!({"nvidia.com/gpu": "2000m"}),
        );
        assert_eq!(check_model_deployment(None, &spec), vec![]);
        let spec = with_gpus(serde_json::json!({}), serde_json::json!({"amd.com/gpu": 1}));
        assert_eq!(
            check_model_deployment(None, &spec),
            vec![Problem::new(
                "spec.resources.requests[amd.com/gpu]",
                "a GPU request needs a limit of the same number in resources.limits[amd.com/gpu]: \
                 GPUs cannot be overcommitted"
            )]
        );
    }

    #[test]
    fn quantities_evaluate_exactly() {
        assert_eq!(gpu_count("1"), Count::Whole(1));
        assert_eq!(gpu_count("0.5Ki"), Count::Whole(512));
        assert_eq!(gpu_count("0.3Ki"), Count::Other);
        assert_eq!(gpu_count("1k"), Count::Whole(1000));
        assert_eq!(gpu_count("1.5"), Count::Other);
        assert_eq!(gpu_count("3000m"), Count::Whole(3));
        assert_eq!(gpu_count("12e-1"), Count::Other);
        assert_eq!(gpu_count("120e-1"), Count::Whole(12));
        assert_eq!(gpu_count(".5e1"), Count::Whole(5));
        assert_eq!(gpu_count("-0"), Count::Whole(0));
        assert_eq!(gpu_count("1e99999999999999999999"), Count::Other);
        for invalid in ["", ".", "1.2.3", "1x", "1 ", "e3", "1e", "1e+", "--1", "1Ki2"] {
            assert_eq!(gpu_count(invalid), Count::Invalid, "{invalid:?}");
        }
    }

    fn autotune(space: SearchSpace) -> ModelAutotuneSpec {
        ModelAutotuneSpec {
            deployment_ref: "llama".to_owned(),
            search_space: space,
            ..Default::default()
        }
    }

    fn single_values() -> SearchSpace {
        SearchSpace {
            max_num_seqs: vec![8],
            gpu_memory_utilization: vec!["0.9".to_owned()],
            max_model_len: vec![],
            enforce_eager: vec![false],
            enable_prefix_caching: vec![true],
            max_num_batched_tokens: vec![2048],
            speculative_decoding: false,
        }
    }

    #[test]
    fn the_default_search_space_has_no_problem() {
        assert_eq!(check_model_autotune(&autotune(SearchSpace::default())), vec![]);
    }

    #[test]
    fn search_space_values_are_not_repeated() {
        let space = SearchSpace {
            max_num_seqs: vec![1, 2, 1],
            gpu_memory_utilization: ["0.9", "0.90"].map(String::from).to_vec(),
            enforce_eager: vec![true, true],
            ..Default::default()
        };
        assert_eq!(
            check_model_autotune(&autotune(space)),
            vec![
                Problem::new(
                    "spec.searchSpace.maxNumSeqs[2]",
                    "value 1 is already listed at maxNumSeqs[0]"
                ),
                Problem::new(
                    "spec.searchSpace.gpuMemoryUtilization[1]",
                    "value 0.90 is already listed at gpuMemoryUtilization[0]"
                ),
                Problem::new(
                    "spec.searchSpace.enforceEager[1]",
                    "value true is already listed at enforceEager[0]"
                ),
            ]
        );
    }

    #[test]
    fn a_search_space_must_have_something_to_search() {
        let nothing = Problem::new(
            "spec.searchSpace",
            "nothing to search: give at least one setting two or more values, or try \
             speculativeDecoding with qualityGuard enabled",
        );
        assert_eq!(check_model_autotune(&autotune(single_values())), vec![nothing.clone()]);

        // Speculative decoding is dropped without the quality guard.
        let mut spec = autotune(SearchSpace { speculative_decoding: true, ..single_values() });
        assert_eq!(check_model_autotune(&spec), vec![nothing.clone()]);
        spec.quality_guard = QualityGuard { enabled: true, ..Default::default() };
        assert_eq!(check_model_autotune(&spec), vec![]);

        // Two values of one setting are enough; a repeat is not a second value.
        let spec = autotune(SearchSpace { max_model_len: vec![4096, 8192], ..single_values() });
        assert_eq!(check_model_autotune(&spec), vec![]);
        let spec = autotune(SearchSpace { max_model_len: vec![4096, 4096], ..single_values() });
        assert_eq!(
            check_model_autotune(&spec),
            vec![
                Problem::new(
                    "spec.searchSpace.maxModelLen[1]",
                    "value 4096 is already listed at maxModelLen[0]"
                ),
                nothing,
            ]
        );
    }

    fn role(name: &str, primary: &str, fallbacks: &[&str]) -> RoleModels {
        RoleModels {
            name: name.to_owned(),
            primary: primary.to_owned(),
            fallbacks: fallbacks.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn routing_fallbacks_repeat_neither_the_primary_nor_themselves() {
        let valid = ModelRoutingSpec {
            roles: vec![role("weaver-router", "qwen", &["llama", "mistral"])],
            ..Default::default()
        };
        assert_eq!(check_model_routing(&valid), vec![]);
        let spec = ModelRoutingSpec {
            roles: vec![
                role("weaver-router", "qwen", &["llama"]),
                role("weaver-subagent", "qwen", &["llama", "qwen", "llama"]),
            ],
            ..Default::default()
        };
        assert_eq!(
            check_model_routing(&spec),
            vec![
                Problem::new(
                    "spec.roles[1].fallbacks[1]",
                    "fallback \"qwen\" is already the role's primary model"
                ),
                Problem::new(
                    "spec.roles[1].fallbacks[2]",
                    "fallback \"llama\" is already listed at fallbacks[0]"
                ),
            ]
        );
    }
}
