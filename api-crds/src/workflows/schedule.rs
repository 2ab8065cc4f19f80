//! Schedule: start runs of a flow on a cron schedule in a time zone.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// A cron schedule for a flow. Schedules have no update: only `suspend` may change.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "workflows.keelson.dev",
    version = "v1alpha1",
    kind = "Schedule",
    doc = "Starts runs of a Flow on a cron schedule in a time zone; only suspend may change.",
    namespaced,
    status = "ScheduleStatus",
    shortname = "sched",
    category = "keelson",
    printcolumn(name = "Flow", type_ = "string", json_path = ".spec.flowRef"),
    printcolumn(name = "Cron", type_ = "string", json_path = ".spec.cron"),
    printcolumn(name = "TimeZone", type_ = "string", json_path = ".spec.timeZone"),
    printcolumn(name = "Suspend", type_ = "boolean", json_path = ".spec.suspend"),
    printcolumn(name = "Last", type_ = "date", json_path = ".status.lastScheduleTime"),
    printcolumn(name = "Next", type_ = "date", json_path = ".status.nextScheduleTime"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new(
    "self.flowRef == oldSelf.flowRef && self.cron == oldSelf.cron && self.timeZone == oldSelf.timeZone \
     && self.concurrencyPolicy == oldSelf.concurrencyPolicy && self.parameters == oldSelf.parameters \
     && self.successfulRunsHistoryLimit == oldSelf.successfulRunsHistoryLimit \
     && self.failedRunsHistoryLimit == oldSelf.failedRunsHistoryLimit \
     && has(self.startingDeadlineSeconds) == has(oldSelf.startingDeadlineSeconds) \
     && (!has(self.startingDeadlineSeconds) || self.startingDeadlineSeconds == oldSelf.startingDeadlineSeconds)"
).message("a schedule cannot be updated, except spec.suspend; delete it and create a new one"))]
#[serde(rename_all = "camelCase")]
pub struct ScheduleSpec {
    /// The Flow to run, in the same namespace.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub flow_ref: String,
    /// Five-field cron expression (minute hour day-of-month month day-of-week), or a macro
    /// such as `@hourly`.
    #[schemars(length(min = 1, max = 128))]
    pub cron: String,
    /// IANA time zone the cron expression is read in.
    #[serde(default = "default_time_zone")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: String,
    /// Stop starting runs; runs already started go on.
    #[serde(default)]
    pub suspend: bool,
    /// What to do when a run is due while the previous one still runs.
    #[serde(default)]
    pub concurrency_policy: ConcurrencyPolicy,
    /// Seconds after a due time within which a missed run (Keelson was down, or the schedule
    /// suspended) still starts, once; older due times are skipped and counted. Only the most
    /// recent due time is started when the deadline is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 31536000))]
    pub starting_deadline_seconds: Option<i64>,
    /// Parameter values for each run.
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// Succeeded runs kept.
    #[serde(default = "default_successful_limit")]
    #[schemars(range(min = 0, max = 100))]
    pub successful_runs_history_limit: i32,
    /// Failed runs kept.
    #[serde(default = "default_failed_limit")]
    #[schemars(range(min = 0, max = 100))]
    pub failed_runs_history_limit: i32,
}

fn default_time_zone() -> String {
    "UTC".to_owned()
}
fn default_successful_limit() -> i32 {
    3
}
fn default_failed_limit() -> i32 {
    1
}

/// What a schedule does when a run is due while the previous one still runs.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema,
)]
pub enum ConcurrencyPolicy {
    /// Start it anyway.
    Allow,
    /// Skip it.
    #[default]
    Forbid,
    /// Cancel the running one and start the new one.
    Replace,
}

/// Observed state of a schedule.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// When a run was last started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
    /// When the next run is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_schedule_time: Option<Time>,
    /// Name of the last Run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_name: Option<String>,
    /// Runs started by this schedule that have not finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active: Vec<String>,
    /// Due times skipped because they were past the starting deadline.
    #[serde(default, skip_serializing_if = "crate::schema::is_zero_i64")]
    pub missed_schedules: i64,
}
