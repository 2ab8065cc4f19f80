//! The Job of one attempt of an agent step of a Run, and what an observed Job says of itself.
//!
//! Each attempt is its own Job, named by [`job_name`] and owned by the Run: the Job never
//! retries (`backoffLimit: 0`), since retries, with their backoff, are the Run's business. Its
//! single container, [`CONTAINER`], runs the agent's image and command with the agent's
//! arguments followed by the step's, and this environment, in order:
//!
//! 1. the agent's variables, then the step's; a step variable named like an agent one replaces
//!    it in place;
//! 2. what Keelson sets: `KEELSON_RUN`, `KEELSON_NODE`, `KEELSON_ATTEMPT`, `KEELSON_PARAMS`
//!    (all parameters as a JSON object), `KEELSON_PARAM_<NAME>` for each parameter and
//!    `KEELSON_INPUTS` (the predecessors' outputs as `{node: {key: value}}`). A user variable
//!    with one of these names is dropped.
//!
//! Variables taken from secrets or other sources (`valueFrom`) are passed as they are, so the
//! Job spec never holds a secret's value.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec, SecurityContext};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use keelson_api_crds::workflows::{AgentSpec, AgentStep, Run};
use kube::Resource;
use serde_json::{Map, Value};

use super::names::{ATTEMPT_LABEL, NODE_LABEL, RUN_LABEL, job_name, label_value};

/// Name of the Job's one container, whose log holds the agent's output.
pub const CONTAINER: &str = "agent";

/// Label saying which tool manages the Job and its pod.
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
const MANAGED_BY: &str = "keelson";

/// Everything one attempt's Job is built from.
#[derive(Clone, Copy, Debug)]
pub struct AttemptJob<'a> {
    /// The Run: its name, namespace and uid (for the owner reference).
    pub run: &'a Run,
    /// The node's id.
    pub node_id: &'a str,
    /// The agent step the node runs.
    pub step: &'a AgentStep,
    /// The Agent the step refers to.
    pub agent: &'a AgentSpec,
    /// The attempt number, from 1.
    pub attempt: i32,
    /// The run's resolved parameters.
    pub parameters: &'a BTreeMap<String, String>,
    /// Outputs of the node's predecessors, by node id.
    pub inputs: &'a BTreeMap<String, BTreeMap<String, String>>,
}

/// The Job of one attempt: one pod, never restarted nor retried, owned by the Run.
pub fn build(job: &AttemptJob<'_>) -> Job {
    let run_name = job.run.metadata.name.as_deref().unwrap_or_default();
    let labels = BTreeMap::from([
        (RUN_LABEL.to_owned(), label_value(run_name)),
        (NODE_LABEL.to_owned(), job.node_id.to_owned()),
        (ATTEMPT_LABEL.to_owned(), job.attempt.to_string()),
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
    ]);
    let args: Vec<String> = job.agent.args.iter().chain(&job.step.args).cloned().collect();
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(job.agent.image.clone()),
        command: non_empty(job.agent.command.clone()),
        args: non_empty(args),
        env: non_empty(env(job)),
        resources: job.agent.resources.clone(),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(run_name, job.node_id, job.attempt)),
            namespace: job.run.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner_reference(job.run)]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            completions: Some(1),
            parallelism: Some(1),
            active_deadline_seconds: job.step.timeout_seconds,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    restart_policy: Some("Never".to_owned()),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// What an attempt's Job says of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Not finished yet (or not started).
    Running,
    /// The pod completed successfully.
    Succeeded,
    /// The Job failed, e.g. with reason `DeadlineExceeded` or `BackoffLimitExceeded`.
    Failed {
        /// The `Failed` condition's reason; `Failed` when it has none.
        reason: String,
        /// The `Failed` condition's message.
        message: String,
    },
}

/// The state of an observed Job: succeeded when a `Complete` or `SuccessCriteriaMet` condition
/// is true or a pod succeeded, failed when a `Failed` condition is true, else running.
pub fn state(job: &Job) -> JobState {
    let status = job.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let holds = |type_: &str| conditions.iter().find(|c| c.type_ == type_ && c.status == "True");
    let succeeded = status.and_then(|s| s.succeeded).unwrap_or(0) >= 1;
    if succeeded || holds("Complete").or_else(|| holds("SuccessCriteriaMet")).is_some() {
        return JobState::Succeeded;
    }
    match holds("Failed") {
        Some(failed) => JobState::Failed {
            reason: failed.reason.clone().filter(|r| !r.is_empty()).unwrap_or("Failed".to_owned()),
            message: failed.message.clone().unwrap_or_default(),
        },
        None => JobState::Running,
    }
}

/// The container's environment: the user's variables, then Keelson's (see the module doc).
fn env(job: &AttemptJob<'_>) -> Vec<EnvVar> {
    let keelson = keelson_env(job);
    let mut vars: Vec<EnvVar> = Vec::new();
    for var in job.agent.env.iter().chain(&job.step.env) {
        if keelson.iter().any(|k| k.name == var.name) {
            continue;
        }
        match vars.iter_mut().find(|v| v.name == var.name) {
            Some(earlier) => *earlier = var.clone(),
            None => vars.push(var.clone()),
        }
    }
    vars.extend(keelson);
    vars
}

/// The variables Keelson sets, in order.
fn keelson_env(job: &AttemptJob<'_>) -> Vec<EnvVar> {
    let run_name = job.run.metadata.name.as_deref().unwrap_or_default();
    let params = json_object(job.parameters).to_string();
    let inputs: Map<String, Value> =
        job.inputs.iter().map(|(node, outputs)| (node.clone(), json_object(outputs))).collect();
    let mut vars = vec![
        plain("KEELSON_RUN", run_name.to_owned()),
        plain("KEELSON_NODE", job.node_id.to_owned()),
        plain("KEELSON_ATTEMPT", job.attempt.to_string()),
        plain("KEELSON_PARAMS", params),
    ];
    vars.extend(
        job.parameters
            .iter()
            .map(|(name, value)| plain(&format!("KEELSON_PARAM_{name}"), value.clone())),
    );
    vars.push(plain("KEELSON_INPUTS", Value::Object(inputs).to_string()));
    vars
}

/// A string map as a JSON object.
fn json_object(map: &BTreeMap<String, String>) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

/// A variable with a literal value.
fn plain(name: &str, value: String) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value), value_from: None }
}

/// `Some(list)`, or `None` for an empty list so the field is left out.
fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    if list.is_empty() { None } else { Some(list) }
}

/// The Run as the Job's controlling owner, so deleting the Run deletes its Jobs.
fn owner_reference(run: &Run) -> OwnerReference {
    OwnerReference {
        api_version: Run::api_version(&()).into_owned(),
        kind: Run::kind(&()).into_owned(),
        name: run.metadata.name.clone().unwrap_or_default(),
        uid: run.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};

    use super::super::names::MAX_LABEL_VALUE;
    use super::*;

    fn run(name: &str) -> Run {
        serde_saphyr::from_str(&format!(
            "metadata: {{name: {name}, namespace: team, uid: run-uid-1}}\nspec: {{}}"
        ))
        .expect("run fixture parses")
    }

    fn agent() -> AgentSpec {
        serde_saphyr::from_str(
            "
image: ghcr.io/acme/summarizer:1.2
command: [python, -m, summarizer]
args: [--model, small]
env:
  - {name: LOG_LEVEL, value: info}
  - {name: API_KEY, valueFrom: {secretKeyRef: {name: llm-keys, key: openai}}}
  - {name: REGION, value: eu}
  - {name: KEELSON_RUN, value: spoofed}
resources:
  limits: {memory: 512Mi}
",
        )
        .expect("agent fixture parses")
    }

    fn step() -> AgentStep {
        serde_saphyr::from_str(
            "
agentRef: summarizer
args: [--words, '200']
env:
  - {name: STYLE, value: terse}
  - {name: LOG_LEVEL, value: debug}
  - {name: KEELSON_PARAM_week, value: spoofed}
timeoutSeconds: 900
",
        )
        .expect("step fixture parses")
    }

    fn params() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("week".to_owned(), "2026-W47".to_owned()),
            ("team".to_owned(), "data \"core\"".to_owned()),
        ])
    }

    fn inputs() -> BTreeMap<String, BTreeMap<String, String>> {
        BTreeMap::from([(
            "fetch".to_owned(),
            BTreeMap::from([("report".to_owned(), "s3://bucket/r.csv".to_owned())]),
        )])
    }

    fn build_with(run: &Run, agent: &AgentSpec, step: &AgentStep, attempt: i32) -> Job {
        let (parameters, inputs) = (params(), inputs());
        build(&AttemptJob {
            run,
            node_id: "summarize",
            step,
            agent,
            attempt,
            parameters: &parameters,
            inputs: &inputs,
        })
    }

    fn container(job: &Job) -> &Container {
        let spec = job.spec.as_ref().expect("spec");
        let pod = spec.template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.containers.len(), 1);
        &pod.containers[0]
    }

    fn env_value<'a>(env: &'a [EnvVar], name: &str) -> &'a str {
        let var = env.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("{name} set"));
        var.value.as_deref().expect("plain value")
    }

    #[test]
    fn env_is_agent_then_step_then_keelson_with_overrides_in_place() {
        let job = build_with(&run("weekly"), &agent(), &step(), 2);
        let env = container(&job).env.as_deref().expect("env");
        let names: Vec<&str> = env.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "LOG_LEVEL",
                "API_KEY",
                "REGION",
                "STYLE",
                "KEELSON_RUN",
                "KEELSON_NODE",
                "KEELSON_ATTEMPT",
                "KEELSON_PARAMS",
                "KEELSON_PARAM_team",
                "KEELSON_PARAM_week",
                "KEELSON_INPUTS",
            ]
        );
        assert_eq!(env_value(env, "LOG_LEVEL"), "debug", "the step's value wins");
        assert_eq!(env_value(env, "KEELSON_RUN"), "weekly", "Keelson's value wins");
        assert_eq!(env_value(env, "KEELSON_NODE"), "summarize");
        assert_eq!(env_value(env, "KEELSON_ATTEMPT"), "2");
        assert_eq!(env_value(env, "KEELSON_PARAM_week"), "2026-W47");
        assert_eq!(env_value(env, "KEELSON_PARAM_team"), "data \"core\"");
        let params: Value = serde_json::from_str(env_value(env, "KEELSON_PARAMS")).expect("json");
        assert_eq!(params, serde_json::json!({"week": "2026-W47", "team": "data \"core\""}));
        let inputs: Value = serde_json::from_str(env_value(env, "KEELSON_INPUTS")).expect("json");
        assert_eq!(inputs, serde_json::json!({"fetch": {"report": "s3://bucket/r.csv"}}));
    }

    #[test]
    fn secrets_stay_references() {
        let job = build_with(&run("weekly"), &agent(), &step(), 1);
        let env = container(&job).env.as_deref().expect("env");
        let key = env.iter().find(|v| v.name == "API_KEY").expect("API_KEY");
        assert_eq!(key.value, None);
        let secret = key.value_from.as_ref().and_then(|f| f.secret_key_ref.as_ref()).expect("ref");
        assert_eq!((secret.name.as_str(), secret.key.as_str()), ("llm-keys", "openai"));
    }

    #[test]
    fn no_inputs_nor_parameters_are_empty_objects() {
        let (parameters, inputs) = (BTreeMap::new(), BTreeMap::new());
        let (run, agent, step) = (run("r"), agent(), AgentStep { env: Vec::new(), ..step() });
        let job = build(&AttemptJob {
            run: &run,
            node_id: "first",
            step: &step,
            agent: &agent,
            attempt: 1,
            parameters: &parameters,
            inputs: &inputs,
        });
        let env = container(&job).env.as_deref().expect("env");
        assert_eq!(env_value(env, "KEELSON_INPUTS"), "{}");
        assert_eq!(env_value(env, "KEELSON_PARAMS"), "{}");
        assert!(!env.iter().any(|v| v.name.starts_with("KEELSON_PARAM_")));
    }

    #[test]
    fn container_runs_the_agent_with_both_args_unprivileged() {
        let job = build_with(&run("weekly"), &agent(), &step(), 1);
        let container = container(&job);
        assert_eq!(container.name, CONTAINER);
        assert_eq!(container.image.as_deref(), Some("ghcr.io/acme/summarizer:1.2"));
        assert_eq!(
            container.command,
            Some(vec!["python".into(), "-m".into(), "summarizer".into()])
        );
        assert_eq!(container.args.as_ref().expect("args").join(" "), "--model small --words 200");
        let limits = container.resources.as_ref().and_then(|r| r.limits.as_ref()).expect("limits");
        assert_eq!(limits["memory"].0, "512Mi");
        let security = container.security_context.as_ref().expect("security context");
        assert_eq!(security.allow_privilege_escalation, Some(false));
    }

    #[test]
    fn an_agent_without_command_keeps_the_image_entrypoint() {
        let agent = AgentSpec { command: Vec::new(), ..agent() };
        let job = build_with(&run("weekly"), &agent, &step(), 1);
        assert_eq!(container(&job).command, None);
    }

    #[test]
    fn one_attempt_one_pod_with_the_step_deadline() {
        let job = build_with(&run("weekly"), &agent(), &step(), 1);
        let spec = job.spec.as_ref().expect("spec");
        assert_eq!(spec.backoff_limit, Some(0));
        assert_eq!(spec.completions, Some(1));
        assert_eq!(spec.parallelism, Some(1));
        assert_eq!(spec.active_deadline_seconds, Some(900));
        let pod = spec.template.spec.as_ref().expect("pod spec");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));

        let untimed = AgentStep { timeout_seconds: None, ..step() };
        let job = build_with(&run("weekly"), &agent(), &untimed, 1);
        assert_eq!(job.spec.expect("spec").active_deadline_seconds, None);
    }

    #[test]
    fn job_is_named_labelled_and_owned_by_the_run() {
        let job = build_with(&run("weekly"), &agent(), &step(), 3);
        assert_eq!(job.metadata.name.as_deref(), Some("weekly-summarize-3"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("team"));
        let expected = BTreeMap::from([
            (RUN_LABEL.to_owned(), "weekly".to_owned()),
            (NODE_LABEL.to_owned(), "summarize".to_owned()),
            (ATTEMPT_LABEL.to_owned(), "3".to_owned()),
            ("app.kubernetes.io/managed-by".to_owned(), "keelson".to_owned()),
        ]);
        assert_eq!(job.metadata.labels.as_ref(), Some(&expected));
        let template = job.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).expect("meta");
        assert_eq!(template.labels.as_ref(), Some(&expected));
        let owners = job.metadata.owner_references.as_deref().expect("owners");
        assert_eq!(
            owners,
            [OwnerReference {
                api_version: "workflows.keelson.dev/v1alpha1".to_owned(),
                kind: "Run".to_owned(),
                name: "weekly".to_owned(),
                uid: "run-uid-1".to_owned(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        );
    }

    #[test]
    fn long_run_names_are_shortened_in_name_and_label() {
        let name = "a-schedule-with-a-rather-long-name-20261123t080000z-and-even-more-to-it";
        let job = build_with(&run(name), &agent(), &step(), 10);
        let job_name = job.metadata.name.as_deref().expect("name");
        assert!(job_name.len() <= MAX_LABEL_VALUE, "{job_name}");
        assert!(job_name.ends_with("-10"), "{job_name}");
        let labels = job.metadata.labels.as_ref().expect("labels");
        assert!(labels[RUN_LABEL].len() <= MAX_LABEL_VALUE);
        assert_ne!(labels[RUN_LABEL], name);
        let env = container(&job).env.as_deref().expect("env");
        assert_eq!(env_value(env, "KEELSON_RUN"), name, "the agent sees the full name");
        let owner = &job.metadata.owner_references.as_deref().expect("owners")[0];
        assert_eq!(owner.name, name);
    }

    fn observed(succeeded: Option<i32>, conditions: &[(&str, &str, &str, &str)]) -> Job {
        let conditions = conditions
            .iter()
            .map(|(type_, status, reason, message)| JobCondition {
                type_: (*type_).to_owned(),
                status: (*status).to_owned(),
                reason: Some((*reason).to_owned()),
                message: Some((*message).to_owned()),
                ..JobCondition::default()
            })
            .collect();
        Job {
            status: Some(JobStatus {
                succeeded,
                conditions: Some(conditions),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    #[test]
    fn a_new_or_active_job_is_running() {
        assert_eq!(state(&Job::default()), JobState::Running);
        let active = Job {
            status: Some(JobStatus { active: Some(1), ..JobStatus::default() }),
            ..Job::default()
        };
        assert_eq!(state(&active), JobState::Running);
        let not_yet = observed(None, &[("Failed", "False", "", ""), ("Complete", "False", "", "")]);
        assert_eq!(state(&not_yet), JobState::Running);
    }

    #[test]
    fn a_complete_job_succeeded() {
        assert_eq!(state(&observed(None, &[("Complete", "True", "", "")])), JobState::Succeeded);
        let criteria = observed(None, &[("SuccessCriteriaMet", "True", "", "")]);
        assert_eq!(state(&criteria), JobState::Succeeded);
        assert_eq!(state(&observed(Some(1), &[])), JobState::Succeeded);
    }

    #[test]
    fn a_failed_job_says_why() {
        let failed = observed(
            None,
            &[("Failed", "True", "BackoffLimitExceeded", "Job has reached the backoff limit")],
        );
        assert_eq!(
            state(&failed),
            JobState::Failed {
                reason: "BackoffLimitExceeded".to_owned(),
                message: "Job has reached the backoff limit".to_owned(),
            }
        );
    }

    #[test]
    fn a_job_past_its_deadline_failed() {
        let late = observed(
            None,
            &[("Failed", "True", "DeadlineExceeded", "Job was active longer than specified")],
        );
        let JobState::Failed { reason, .. } = state(&late) else { panic!("not failed") };
        assert_eq!(reason, "DeadlineExceeded");
    }
}
