//! One autotune search as a sequence of experiments: what an experiment's outcome does to the
//! search (baseline, accepted, rejected, vetoed, failed) and which experiment comes next. Pure:
//! the reconciler reads the inputs and writes the status this returns.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use keelson_api_crds::serving::{
    AutotuneAction, AutotuneExperiment, AutotuneProgress, AutotuneStage, AutotuneStep,
    ModelAutotuneSpec, ModelAutotuneStatus,
};

use super::space::{self, Config};

/// What an experiment's benchmark gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Throughput and, with the guard on, decode speed per workload class.
    Measured {
        /// Tokens per second.
        tokens_per_second: f64,
        /// Decode tokens per second per class.
        quality: BTreeMap<String, f64>,
    },
    /// The candidate did not roll out, or the benchmark failed.
    Failed(String),
}

/// The candidates of `spec`'s search from the baseline in `status`.
pub fn plan(spec: &ModelAutotuneSpec, status: &ModelAutotuneStatus) -> Vec<(String, String)> {
    space::candidates(&spec.search_space, spec.quality_guard.enabled, &status.baseline_config)
}

/// The status of a search that starts now from `baseline`: its first experiment is the
/// baseline's own benchmark.
pub fn start(
    spec: &ModelAutotuneSpec,
    baseline: Config,
    now: jiff::Timestamp,
) -> ModelAutotuneStatus {
    let total = space::candidates(&spec.search_space, spec.quality_guard.enabled, &baseline).len();
    ModelAutotuneStatus {
        phase: Some(keelson_api_crds::serving::AutotunePhase::Running),
        progress: Some(AutotuneProgress { completed: 0, total: count(total) }),
        best_config: baseline.clone(),
        baseline_config: baseline,
        current: Some(experiment(0, None, AutotuneStage::RollingOut, now)),
        start_time: Some(Time(now)),
        ..ModelAutotuneStatus::default()
    }
}

/// An experiment at `stage` since `now`.
pub fn experiment(
    step: i32,
    candidate: Option<(String, String)>,
    stage: AutotuneStage,
    now: jiff::Timestamp,
) -> AutotuneExperiment {
    let (parameter, value) = candidate.unzip();
    AutotuneExperiment { step, parameter, value, stage, since: Time(now) }
}

/// The configuration the current experiment runs: the best so far with its candidate.
pub fn candidate_config(status: &ModelAutotuneStatus) -> Config {
    match status.current.as_ref().and_then(|c| Some((c.parameter.as_ref()?, c.value.as_ref()?))) {
        Some((parameter, value)) => space::with(&status.best_config, parameter, value),
        None => status.best_config.clone(),
    }
}

/// Records `outcome` of the current experiment in `status` (steps, best, progress) and
/// returns the step recorded. The current experiment is left for the caller to move on.
pub fn record(
    spec: &ModelAutotuneSpec,
    status: &mut ModelAutotuneStatus,
    outcome: Outcome,
    now: jiff::Timestamp,
) -> AutotuneStep {
    let current = status
        .current
        .clone()
        .unwrap_or_else(|| experiment(0, None, AutotuneStage::RollingOut, now));
    let config_delta = match (&current.parameter, &current.value) {
        (Some(p), Some(v)) => space::delta(p, v),
        _ => "(no change)".to_owned(),
    };
    let mut step = AutotuneStep {
        step: current.step,
        action: AutotuneAction::RolloutFailed,
        tokens_per_second: None,
        improvement_percent: None,
        config_delta,
        quality_note: None,
        error: None,
        time: Time(now),
    };
    match outcome {
        Outcome::Failed(error) => step.error = Some(error),
        Outcome::Measured { tokens_per_second, quality } if current.step == 0 => {
            step.action = AutotuneAction::Baseline;
            step.tokens_per_second = Some(tokens_per_second);
            status.baseline_tokens_per_second = Some(tokens_per_second);
            status.best_tokens_per_second = Some(tokens_per_second);
            status.baseline_quality = quality;
        }
        Outcome::Measured { tokens_per_second, quality } => {
            let best = status.best_tokens_per_second.unwrap_or_default();
            let change = percent(tokens_per_second, best);
            step.tokens_per_second = Some(tokens_per_second);
            step.improvement_percent = Some(change);
            let veto = (tokens_per_second > best && spec.quality_guard.enabled)
                .then(|| {
                    let tolerance = f64::from(spec.quality_guard.tolerance_percent);
                    veto(&status.baseline_quality, &quality, tolerance, change)
                })
                .flatten();
            step.action = if let Some(note) = veto {
                step.quality_note = Some(note);
                AutotuneAction::QualityVetoed
            } else if tokens_per_second > best {
                status.best_config = candidate_config(status);
                status.best_tokens_per_second = Some(tokens_per_second);
                AutotuneAction::Accepted
            } else {
                AutotuneAction::Rejected
            };
        }
    }
    if current.step > 0 {
        let progress = status.progress.get_or_insert_with(AutotuneProgress::default);
        progress.completed += 1;
    }
    status.steps.push(step.clone());
    step
}

/// The experiment after the last recorded one, if any candidate is left.
pub fn next(spec: &ModelAutotuneSpec, status: &ModelAutotuneStatus) -> Option<(String, String)> {
    let done = status.progress.as_ref().map_or(0, |p| p.completed);
    plan(spec, status).into_iter().nth(usize::try_from(done).unwrap_or(usize::MAX))
}

/// Why the guard vetoes a candidate, if it does: a workload class of the baseline whose
/// decode speed fell more than `tolerance` percent (a class not measured counts as −100 %),
/// while aggregate throughput moved `aggregate` percent.
pub fn veto(
    baseline: &BTreeMap<String, f64>,
    candidate: &BTreeMap<String, f64>,
    tolerance: f64,
    aggregate: f64,
) -> Option<String> {
    let (class, change) = baseline
        .iter()
        .map(|(class, before)| {
            (class, candidate.get(class).map_or(-100.0, |after| percent(*after, *before)))
        })
        .filter(|(_, change)| *change < -tolerance)
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "class \"{class}\" regressed {:.1}% (tolerance {tolerance:.1}%) while aggregate moved {aggregate:+.1}% — proxy hides the regression",
        -change
    ))
}

/// `after` against `before`, in percent.
pub fn percent(after: f64, before: f64) -> f64 {
    if before > 0.0 { (after - before) / before * 100.0 } else { 0.0 }
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use keelson_api_crds::serving::{QualityGuard, SearchSpace};

    use super::*;

    fn spec(guard: bool) -> ModelAutotuneSpec {
        ModelAutotuneSpec {
            deployment_ref: "test-model".into(),
            search_space: SearchSpace {
                max_num_seqs: vec![2, 8],
                gpu_memory_utilization: vec![],
                max_model_len: vec![],
                enforce_eager: vec![],
                enable_prefix_caching: vec![],
                max_num_batched_tokens: vec![],
                speculative_decoding: true,
            },
            quality_guard: QualityGuard { enabled: guard, ..QualityGuard::default() },
            ..ModelAutotuneSpec::default()
        }
    }

    fn measured(tps: f64, quality: &[(&str, f64)]) -> Outcome {
        let quality = quality.iter().map(|(c, v)| ((*c).to_owned(), *v)).collect();
        Outcome::Measured { tokens_per_second: tps, quality }
    }

    fn now() -> jiff::Timestamp {
        "2026-11-24T12:00:00Z".parse().unwrap()
    }

    /// Runs `outcomes` through a search from `baseline`: the baseline's first, then each
    /// candidate's.
    fn run(
        spec: &ModelAutotuneSpec,
        baseline: Config,
        outcomes: Vec<Outcome>,
    ) -> ModelAutotuneStatus {
        let mut status = start(spec, baseline, now());
        for outcome in outcomes {
            record(spec, &mut status, outcome, now());
            let step = status.steps.len() as i32;
            status.current = next(spec, &status)
                .map(|c| experiment(step, Some(c), AutotuneStage::RollingOut, now()));
        }
        status
    }

    #[test]
    fn a_faster_candidate_is_accepted_and_becomes_the_best() {
        // The reference's case: baseline 70, maxNumSeqs=2 gives 80.
        let baseline = Config::from([("maxNumSeqs".into(), "4".into())]);
        let status = run(
            &spec(false),
            baseline,
            vec![measured(70.0, &[]), measured(80.0, &[]), measured(75.0, &[])],
        );
        let actions: Vec<_> = status.steps.iter().map(|s| s.action).collect();
        assert_eq!(
            actions,
            [AutotuneAction::Baseline, AutotuneAction::Accepted, AutotuneAction::Rejected]
        );
        assert_eq!(status.best_config["maxNumSeqs"], "2");
        assert_eq!(status.best_tokens_per_second, Some(80.0));
        assert_eq!(status.baseline_tokens_per_second, Some(70.0));
        assert_eq!(status.progress, Some(AutotuneProgress { completed: 2, total: 2 }));
        let improvement = status.steps[1].improvement_percent.unwrap();
        assert!((improvement - 14.285).abs() < 0.01, "{improvement}");
        assert_eq!(status.steps[2].improvement_percent.map(|p| (p * 100.0).round()), Some(-625.0));
        assert_eq!(status.steps[1].config_delta, "maxNumSeqs=2");
        assert_eq!(status.steps[0].config_delta, "(no change)");
        assert_eq!(status.current, None);
    }

    #[test]
    fn a_faster_candidate_that_halves_a_class_is_vetoed() {
        // The reference's guard case: candidate 90 TPS but novel 72 → 38.
        let spec = spec(true);
        let baseline = Config::from([("maxNumSeqs".into(), "8".into())]);
        let base = measured(80.0, &[("lookup", 60.0), ("novel", 72.0)]);
        let status =
            run(&spec, baseline, vec![base, measured(90.0, &[("lookup", 95.0), ("novel", 38.0)])]);
        let step = &status.steps[1];
        assert_eq!(step.action, AutotuneAction::QualityVetoed);
        assert_eq!(
            step.quality_note.as_deref(),
            Some(
                "class \"novel\" regressed 47.2% (tolerance 10.0%) while aggregate moved +12.5% — proxy hides the regression"
            )
        );
        assert_eq!(status.best_config["maxNumSeqs"], "8", "the config stays");
        assert_eq!(status.best_tokens_per_second, Some(80.0));
        // Then speculation is tried: the guard is on.
        assert_eq!(
            status.current.as_ref().and_then(|c| c.parameter.as_deref()),
            Some(space::SPECULATIVE)
        );
    }

    #[test]
    fn the_guard_tolerates_small_regressions_and_vetoes_missing_classes() {
        let base = BTreeMap::from([("novel".to_owned(), 100.0)]);
        assert_eq!(veto(&base, &BTreeMap::from([("novel".to_owned(), 91.0)]), 10.0, 5.0), None);
        let missing = veto(&base, &BTreeMap::new(), 10.0, 5.0).unwrap();
        assert!(missing.starts_with("class \"novel\" regressed 100.0%"), "{missing}");
        assert_eq!(veto(&BTreeMap::new(), &BTreeMap::new(), 10.0, 5.0), None);
    }

    #[test]
    fn failures_are_recorded_and_the_search_goes_on() {
        let status = run(
            &spec(false),
            Config::new(),
            vec![
                measured(70.0, &[]),
                Outcome::Failed("rollout timed out".into()),
                measured(90.0, &[]),
            ],
        );
        assert_eq!(status.steps[1].action, AutotuneAction::RolloutFailed);
        assert_eq!(status.steps[1].error.as_deref(), Some("rollout timed out"));
        assert_eq!(status.steps[1].improvement_percent, None);
        assert_eq!(status.steps[2].action, AutotuneAction::Accepted);
        assert_eq!(status.best_config["maxNumSeqs"], "8");
    }

    #[test]
    fn the_first_experiment_is_the_baseline() {
        let status = start(&spec(true), Config::new(), now());
        let current = status.current.as_ref().unwrap();
        assert_eq!((current.step, current.parameter.as_ref()), (0, None));
        assert_eq!(status.progress.as_ref().unwrap().total, 3, "2 maxNumSeqs + ngram");
        assert_eq!(candidate_config(&status), Config::new());
    }
}
