//! The autotune log ConfigMap `<model>-autotune-log`: `results.tsv` (one row per experiment,
//! in the reference's columns), `best_config.json` and `summary.json`. Owned by the
//! ModelDeployment, so the log outlives its ModelAutotune and goes with the model.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use keelson_api_crds::serving::{
    AutotuneAction, AutotuneStep, ModelAutotuneStatus, ModelDeployment,
};
use serde_json::{Value, json};

use super::space;
use crate::serving::settings::owner_reference;
use crate::serving::workload::{DEPLOYMENT_LABEL, KIND};

/// The columns of `results.tsv`.
pub const TSV_HEADER: &str =
    "step\ttimestamp\taction\ttps\timprovement\tconfig_delta\terror\tquality_note";
/// `app.kubernetes.io/managed-by` of the log.
pub const MANAGED_BY: &str = "keelson-autotune";

/// Name of a model's autotune log: `<model>-autotune-log`.
pub fn name(model: &str) -> String {
    format!("{model}-autotune-log")
}

/// `results.tsv`: the header, then a row per step.
pub fn tsv(steps: &[AutotuneStep]) -> String {
    let mut text = format!("{TSV_HEADER}\n");
    for step in steps {
        let tps = step.tokens_per_second.map_or("-".to_owned(), |t| format!("{t:.1}"));
        let improvement = match step.action {
            AutotuneAction::Baseline | AutotuneAction::RolloutFailed => None,
            _ => step.improvement_percent,
        }
        .map_or("-".to_owned(), |p| format!("{p:+.2}%"));
        let row = [
            step.step.to_string(),
            step.time.0.to_string(),
            action(step.action).to_owned(),
            tps,
            improvement,
            step.config_delta.clone(),
            cell(step.error.as_deref()),
            cell(step.quality_note.as_deref()),
        ];
        text.push_str(&row.join("\t"));
        text.push('\n');
    }
    text
}

/// An action as the log writes it.
pub fn action(action: AutotuneAction) -> &'static str {
    match action {
        AutotuneAction::Baseline => "baseline",
        AutotuneAction::Accepted => "accepted",
        AutotuneAction::Rejected => "rejected",
        AutotuneAction::QualityVetoed => "quality_vetoed",
        AutotuneAction::RolloutFailed => "rollout_failed",
        AutotuneAction::Skipped => "skipped",
    }
}

/// A free-text cell: `-` when empty; tabs and line breaks become spaces.
fn cell(text: Option<&str>) -> String {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(text) => text.replace(['\t', '\n', '\r'], " "),
        None => "-".to_owned(),
    }
}

/// `best_config.json`: the best settings as `spec.vllm` fields (unset ones left out).
pub fn best_config(status: &ModelAutotuneStatus) -> Value {
    let fields = space::vllm_fields(&status.best_config);
    Value::Object(fields.into_iter().filter(|(_, v)| !v.is_null()).collect())
}

/// `summary.json`.
pub fn summary(model: &str, status: &ModelAutotuneStatus) -> Value {
    let baseline = status.baseline_tokens_per_second;
    let best = status.best_tokens_per_second;
    let improvement = match (baseline, best) {
        (Some(b), Some(t)) => Some((super::search::percent(t, b) * 100.0).round() / 100.0),
        _ => None,
    };
    json!({
        "modelName": model,
        "startTime": status.start_time.as_ref().map(|t| t.0.to_string()),
        "endTime": status.completion_time.as_ref().map(|t| t.0.to_string()),
        "baselineTps": baseline,
        "bestTps": best,
        "improvementPct": improvement,
        "totalSteps": status.steps.iter().filter(|s| s.step > 0).count(),
        "acceptedSteps": status.steps.iter().filter(|s| s.action == AutotuneAction::Accepted).count(),
        "bestConfig": best_config(status),
    })
}

/// The log ConfigMap of `md` for the search in `status`.
pub fn configmap(md: &ModelDeployment, status: &ModelAutotuneStatus) -> ConfigMap {
    let model = md.metadata.name.clone().unwrap_or_default();
    let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(&model)),
            namespace: md.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([
                ("app.kubernetes.io/managed-by".to_owned(), MANAGED_BY.to_owned()),
                (DEPLOYMENT_LABEL.to_owned(), model.clone()),
            ])),
            owner_references: Some(vec![owner_reference(KIND, &md.metadata)]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("results.tsv".to_owned(), tsv(&status.steps)),
            ("best_config.json".to_owned(), pretty(&best_config(status))),
            ("summary.json".to_owned(), pretty(&summary(&model, status))),
        ])),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn step(
        n: i32,
        action: AutotuneAction,
        tps: Option<f64>,
        change: Option<f64>,
        delta: &str,
    ) -> AutotuneStep {
        AutotuneStep {
            step: n,
            action,
            tokens_per_second: tps,
            improvement_percent: change,
            config_delta: delta.into(),
            quality_note: None,
            error: None,
            time: Time("2026-11-24T12:00:00Z".parse().unwrap()),
        }
    }

    #[test]
    fn tsv_rows_in_the_reference_format() {
        let mut failed = step(3, AutotuneAction::RolloutFailed, None, None, "maxNumSeqs=32");
        failed.error = Some("rollout of\tqwen timed out".into());
        let mut vetoed = step(
            4,
            AutotuneAction::QualityVetoed,
            Some(90.0),
            Some(12.5),
            "speculativeConfig=ngram",
        );
        vetoed.quality_note = Some("class \"novel\" regressed 47.2%".into());
        let steps = [
            step(0, AutotuneAction::Baseline, Some(70.0), None, "(no change)"),
            step(1, AutotuneAction::Accepted, Some(74.68), Some(6.6857), "maxNumSeqs=2"),
            step(2, AutotuneAction::Rejected, Some(72.43), Some(-3.0128), "maxNumSeqs=8"),
            failed,
            vetoed,
        ];
        let text = tsv(&steps);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(lines[0], TSV_HEADER);
        assert_eq!(lines[1], "0\t2026-11-24T12:00:00Z\tbaseline\t70.0\t-\t(no change)\t-\t-");
        assert_eq!(lines[2], "1\t2026-11-24T12:00:00Z\taccepted\t74.7\t+6.69%\tmaxNumSeqs=2\t-\t-");
        assert!(lines[3].contains("\trejected\t72.4\t-3.01%\t"), "{}", lines[3]);
        assert_eq!(
            lines[4],
            "3\t2026-11-24T12:00:00Z\trollout_failed\t-\t-\tmaxNumSeqs=32\trollout of qwen timed out\t-"
        );
        assert!(lines[5].ends_with("\tquality_vetoed\t90.0\t+12.50%\tspeculativeConfig=ngram\t-\tclass \"novel\" regressed 47.2%"));
        for line in lines {
            assert_eq!(line.split('\t').count(), 8, "{line}");
        }
    }

    #[test]
    fn summary_and_best_config() {
        let status = ModelAutotuneStatus {
            baseline_tokens_per_second: Some(70.0),
            best_tokens_per_second: Some(80.0),
            best_config: BTreeMap::from([
                ("maxNumSeqs".into(), "2".into()),
                ("enforceEager".into(), "false".into()),
            ]),
            steps: vec![
                step(0, AutotuneAction::Baseline, Some(70.0), None, "(no change)"),
                step(1, AutotuneAction::Accepted, Some(80.0), Some(14.3), "maxNumSeqs=2"),
                step(2, AutotuneAction::Rejected, Some(60.0), Some(-25.0), "enforceEager=true"),
            ],
            ..ModelAutotuneStatus::default()
        };
        assert_eq!(best_config(&status), json!({ "maxNumSeqs": 2, "enforceEager": false }));
        let summary = summary("test-model", &status);
        assert_eq!(summary["modelName"], "test-model");
        assert_eq!(summary["improvementPct"], 14.29);
        assert_eq!(summary["totalSteps"], 2);
        assert_eq!(summary["acceptedSteps"], 1);
        assert_eq!(summary["bestConfig"]["maxNumSeqs"], 2);
        assert_eq!(name("test-model"), "test-model-autotune-log");
    }
}
