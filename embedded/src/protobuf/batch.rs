//! Conversion of `batch/v1` `Job` and `CronJob`, the `batch` kinds kubectl creates over protobuf
//! (`kubectl create job NAME --image=IMG -- CMD ARGS...`, `kubectl create job NAME
//! --from=cronjob/CRON`, `kubectl create cronjob NAME --schedule=... --image=IMG`).

use k8s_pb::api::batch::v1::{
    CronJob, CronJobSpec, CronJobStatus, Job, JobSpec, JobStatus, JobTemplateSpec,
};
use serde_json::{Map, Value};

use super::core::pod_template;
use super::fields::{Ctx, Object, join};
use super::meta::{label_selector, object_meta};

/// A `Job`; its status must be empty.
pub(crate) fn job(job: Job, ctx: &mut Ctx) -> Map<String, Value> {
    let Job { metadata, spec, status } = job;
    job_status(status.unwrap_or_default(), ctx, "status");
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", job_spec(spec.unwrap_or_default(), ctx, "spec"));
    out.put("status", Object::default());
    out.into()
}

/// A `CronJob`; its status must be empty.
pub(crate) fn cron_job(cron_job: CronJob, ctx: &mut Ctx) -> Map<String, Value> {
    let CronJob { metadata, spec, status } = cron_job;
    let CronJobStatus { active, last_schedule_time, last_successful_time } =
        status.unwrap_or_default();
    ctx.unmapped_entries("status", "active", &active);
    ctx.unmapped_pointer("status", "lastScheduleTime", &last_schedule_time);
    ctx.unmapped_pointer("status", "lastSuccessfulTime", &last_successful_time);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", cron_job_spec(spec.unwrap_or_default(), ctx, "spec"));
    out.put("status", Object::default());
    out.into()
}

/// A `CronJobSpec`: its schedule, policies, limits and the template of its Jobs.
fn cron_job_spec(spec: CronJobSpec, ctx: &mut Ctx, path: &str) -> Value {
    let CronJobSpec {
        schedule,
        time_zone,
        starting_deadline_seconds,
        concurrency_policy,
        suspend,
        job_template,
        successful_jobs_history_limit,
        failed_jobs_history_limit,
    } = spec;
    let mut out = Object::default();
    out.always("schedule", schedule);
    out.pointer("timeZone", time_zone);
    out.pointer("startingDeadlineSeconds", starting_deadline_seconds);
    out.omitempty("concurrencyPolicy", concurrency_policy);
    out.pointer("suspend", suspend);
    let JobTemplateSpec { metadata, spec } = job_template.unwrap_or_default();
    let template = join(path, "jobTemplate");
    let mut job_template = Object::default();
    job_template.put("metadata", object_meta(metadata, ctx, &join(&template, "metadata")));
    job_template.put("spec", job_spec(spec.unwrap_or_default(), ctx, &join(&template, "spec")));
    out.put("jobTemplate", job_template);
    out.pointer("successfulJobsHistoryLimit", successful_jobs_history_limit);
    out.pointer("failedJobsHistoryLimit", failed_jobs_history_limit);
    out.into()
}

/// A `JobSpec`: its counts, limits and modes, selector and template; not the failure and success
/// policies, nor `managedBy` (which hands the Job to another controller).
fn job_spec(spec: JobSpec, ctx: &mut Ctx, path: &str) -> Value {
    let JobSpec {
        parallelism,
        completions,
        active_deadline_seconds,
        pod_failure_policy,
        success_policy,
        backoff_limit,
        backoff_limit_per_index,
        max_failed_indexes,
        selector,
        manual_selector,
        template,
        ttl_seconds_after_finished,
        completion_mode,
        suspend,
        pod_replacement_policy,
        managed_by,
    } = spec;
    ctx.unmapped_pointer(path, "podFailurePolicy", &pod_failure_policy);
    ctx.unmapped_pointer(path, "successPolicy", &success_policy);
    ctx.unmapped_pointer(path, "managedBy", &managed_by);
    // Every field is a pointer tagged `omitempty` in Go but the template, a struct.
    let mut out = Object::default();
    out.pointer("parallelism", parallelism);
    out.pointer("completions", completions);
    out.pointer("activeDeadlineSeconds", active_deadline_seconds);
    out.pointer("backoffLimit", backoff_limit);
    out.pointer("backoffLimitPerIndex", backoff_limit_per_index);
    out.pointer("maxFailedIndexes", max_failed_indexes);
    if let Some(selector) = selector {
        out.put("selector", label_selector(selector));
    }
    out.pointer("manualSelector", manual_selector);
    let template = template.unwrap_or_default();
    out.put("template", pod_template(template, ctx, &join(path, "template")));
    out.pointer("ttlSecondsAfterFinished", ttl_seconds_after_finished);
    out.pointer("completionMode", completion_mode);
    out.pointer("suspend", suspend);
    out.pointer("podReplacementPolicy", pod_replacement_policy);
    out.into()
}

/// Checks that a Job's status is empty: a client has no status to create.
fn job_status(status: JobStatus, ctx: &mut Ctx, path: &str) {
    let JobStatus {
        conditions,
        start_time,
        completion_time,
        active,
        succeeded,
        failed,
        terminating,
        completed_indexes,
        failed_indexes,
        uncounted_terminated_pods,
        ready,
    } = status;
    ctx.unmapped_entries(path, "conditions", &conditions);
    ctx.unmapped_pointer(path, "startTime", &start_time);
    ctx.unmapped_pointer(path, "completionTime", &completion_time);
    ctx.unmapped_value(path, "active", &active);
    ctx.unmapped_value(path, "succeeded", &succeeded);
    ctx.unmapped_value(path, "failed", &failed);
    ctx.unmapped_pointer(path, "terminating", &terminating);
    ctx.unmapped_value(path, "completedIndexes", &completed_indexes);
    ctx.unmapped_pointer(path, "failedIndexes", &failed_indexes);
    ctx.unmapped_pointer(path, "uncountedTerminatedPods", &uncounted_terminated_pods);
    ctx.unmapped_pointer(path, "ready", &ready);
}
