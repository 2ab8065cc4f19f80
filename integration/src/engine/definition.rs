//! Workflow definitions: parsed from YAML or JSON, validated, with errors naming the field.
//!
//! ```yaml
//! workflow:
//!   name: adt-routing
//!   version: "1"
//!   routes:
//!     - name: admit
//!       filter:
//!         event_type: [patient_admit, inpatient_admit]   # one string or a list; absent = any
//!         conditions:                                     # all must hold
//!           - {field: patient.gender, operator: eq, value: F}
//!       transforms:
//!         - set: {field: meta.route, value: admit}
//!         - remove: {fields: [patient.ssn]}
//!         - rename: {from: a.b, to: c.d}
//!       actions:
//!         - {id: send-fhir, type: fhir, base_url: "http://fhir.example/r4", resource: Patient}
//!         - {id: notify, type: webhook, url: "http://hooks.example/adt", timeout: 5s, headers: {X-Source: keelson}}
//!         - {id: audit, type: log, level: info}
//!   retry: {max_attempts: 3, initial_backoff: 100ms, max_backoff: 5s}
//!   circuit_breaker: {failure_threshold: 5, open_for: 30s}
//!   rate_limit: {per_second: 100, burst: 200}
//! ```
//!
//! Rules checked on load: unknown keys are refused; the workflow name, route names and action ids
//! are 1–63 characters of `A-Z a-z 0-9 . _ -`; route names and action ids are unique within the
//! workflow; operators are `eq ne in not_in exists not_exists contains starts_with gt lt` with a
//! value of the right shape (`in`/`not_in` a list, `exists`/`not_exists` none, the rest one
//! scalar); field paths parse (see [`FieldPath`]); `set` and `rename` name exactly one place;
//! action keys fit the action type; URLs are absolute `http`/`https`; header names and values are
//! valid; durations are text such as `100ms`, `5s`, `1m`, `1h 30m` (see [`parse_duration`]).
//!
//! In YAML flow style (`{field: ..., operator: ...}`) quote paths containing `[`, as in
//! `{field: 'results[0].status', ...}`; block style needs no quotes.
//!
//! YAML is read with the YAML 1.2 core schema for untyped values: `N`, `no`, `off` stay strings
//! (HL7 codes such as abnormal flag `N` must not turn into booleans) and `007` stays a string.

mod raw;

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;

use super::fhir::ResourceType;
use super::path::FieldPath;

/// A validated workflow. Build it with [`Workflow::from_yaml`] or [`Workflow::from_json`].
#[derive(Clone, Debug)]
pub struct Workflow {
    /// Workflow name; names the workflow in dead letters and logs.
    pub name: String,
    /// Version text as written (`"1"`); empty when absent.
    pub version: String,
    /// Routes, evaluated in order.
    pub routes: Vec<Route>,
    /// Retry policy for `webhook` and `fhir` actions.
    pub retry: RetryPolicy,
    /// Circuit breaker settings applied to this workflow's destinations.
    pub circuit_breaker: CircuitBreakerPolicy,
    /// Token bucket shared by this workflow's outbound actions; `None` = unlimited.
    pub rate_limit: Option<RateLimitPolicy>,
}

/// One route: a filter, transforms applied to a copy of the event, and actions run in order.
#[derive(Clone, Debug)]
pub struct Route {
    /// Route name, unique within the workflow.
    pub name: String,
    /// Which events the route takes.
    pub filter: Filter,
    /// Edits applied, in order, to the route's copy of the event.
    pub transforms: Vec<Transform>,
    /// Actions, run in order.
    pub actions: Vec<Action>,
}

/// Which events a route takes: the event type is one of `event_types` (any when empty) and all
/// `conditions` hold.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Accepted event types; empty accepts any.
    pub event_types: Vec<String>,
    /// Conditions that must all hold.
    pub conditions: Vec<Condition>,
}

/// A test of one field of the event.
#[derive(Clone, Debug)]
pub struct Condition {
    /// Where to look.
    pub field: FieldPath,
    /// How to compare.
    pub operator: Operator,
    /// What to compare with (`None` for `exists`/`not_exists`; an array for `in`/`not_in`).
    pub value: Option<Value>,
}

/// Comparison operators of a [`Condition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Equal (numbers compare numerically when either side is a number).
    Eq,
    /// Not equal; holds when the field is absent.
    Ne,
    /// Equal to one of a list.
    In,
    /// Equal to none of a list; holds when the field is absent.
    NotIn,
    /// The field is present and not null.
    Exists,
    /// The field is absent or null.
    NotExists,
    /// A string contains the text, or an array contains an equal element.
    Contains,
    /// A string starts with the text.
    StartsWith,
    /// Greater than (numerically when both sides are numbers, else as text: ISO dates compare).
    Gt,
    /// Less than (numerically when both sides are numbers, else as text).
    Lt,
}

impl Operator {
    /// Every operator with its written name.
    pub const ALL: [(&'static str, Operator); 10] = [
        ("eq", Operator::Eq),
        ("ne", Operator::Ne),
        ("in", Operator::In),
        ("not_in", Operator::NotIn),
        ("exists", Operator::Exists),
        ("not_exists", Operator::NotExists),
        ("contains", Operator::Contains),
        ("starts_with", Operator::StartsWith),
        ("gt", Operator::Gt),
        ("lt", Operator::Lt),
    ];

    /// The operator's written name.
    pub fn as_str(self) -> &'static str {
        Self::ALL.iter().find(|(_, op)| *op == self).map_or("?", |(name, _)| name)
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An edit of the route's copy of the event.
#[derive(Clone, Debug)]
pub enum Transform {
    /// Set a field (creating missing objects on the way).
    Set {
        /// Where (one place).
        field: FieldPath,
        /// The value.
        value: Value,
    },
    /// Remove fields (missing fields are fine; `[*]` allowed).
    Remove {
        /// The fields.
        fields: Vec<FieldPath>,
    },
    /// Move a field; nothing happens when `from` is absent.
    Rename {
        /// Source (one place).
        from: FieldPath,
        /// Destination (one place).
        to: FieldPath,
    },
}

/// One action of a route.
#[derive(Clone, Debug)]
pub struct Action {
    /// Action id, unique within the workflow.
    pub id: String,
    /// What the action does.
    pub config: ActionConfig,
}

/// The kind-specific settings of an [`Action`].
#[derive(Clone, Debug)]
pub enum ActionConfig {
    /// Write a log line (event id, type, route; never the event body).
    Log(LogAction),
    /// POST the event JSON to a URL.
    Webhook(WebhookAction),
    /// POST a FHIR R4 resource built from the event to a FHIR server.
    Fhir(FhirAction),
}

/// Settings of a `log` action.
#[derive(Clone, Debug)]
pub struct LogAction {
    /// Log level (default `info`).
    pub level: LogLevel,
    /// Fixed text of the line (from the definition, never from the event).
    pub message: Option<String>,
}

/// Levels of a `log` action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// `trace`.
    Trace,
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn`.
    Warn,
    /// `error`.
    Error,
}

/// Settings of a `webhook` action.
#[derive(Clone, Debug)]
pub struct WebhookAction {
    /// Where to POST.
    pub url: Url,
    /// Per-attempt timeout; `None` = the engine's default (10 s unless configured).
    pub timeout: Option<Duration>,
    /// Extra request headers. Their values are never logged.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Settings of a `fhir` action.
#[derive(Clone, Debug)]
pub struct FhirAction {
    /// FHIR base URL, e.g. `http://fhir.example/r4`.
    pub base_url: Url,
    /// Resource to build; `None` = by event type (see [`super::fhir::default_resource`]).
    pub resource: Option<ResourceType>,
    /// Per-attempt timeout; `None` = the engine's default.
    pub timeout: Option<Duration>,
    /// Extra request headers (e.g. authorization). Their values are never logged.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Retries of `webhook` and `fhir` actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, including the first (1–20; default 3).
    pub max_attempts: u32,
    /// Wait before the first retry (default 100 ms); doubles per retry.
    pub initial_backoff: Duration,
    /// Upper bound of a wait (default 5 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Circuit breaker settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitBreakerPolicy {
    /// Consecutive failed attempts that open the circuit (default 5).
    pub failure_threshold: u32,
    /// How long the circuit stays open before a half-open probe (default 30 s).
    pub open_for: Duration,
}

impl Default for CircuitBreakerPolicy {
    fn default() -> Self {
        Self { failure_threshold: 5, open_for: Duration::from_secs(30) }
    }
}

/// Token bucket settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimitPolicy {
    /// Tokens added per second (may be fractional, > 0).
    pub per_second: f64,
    /// Bucket size (default: `per_second` rounded up, at least 1).
    pub burst: u32,
}

/// A definition that could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The text is not well-formed YAML/JSON or does not have the workflow's shape (unknown key,
    /// wrong type, missing key); the message gives line and column.
    #[error("workflow definition: {0}")]
    Syntax(String),
    /// The shape is right but values are not valid; one entry per problem.
    #[error("workflow definition: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<Problem>),
}

impl DefinitionError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Syntax(_) => "definition_syntax",
            Self::Invalid(_) => "definition_invalid",
        }
    }

    /// The problems found by validation (empty for syntax errors).
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Syntax(_) => &[],
            Self::Invalid(problems) => problems,
        }
    }
}

/// One validation problem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The field, e.g. `workflow.routes[0].filter.conditions[1].operator`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl Workflow {
    /// Parses and validates a YAML definition (`workflow: {...}`).
    pub fn from_yaml(text: &str) -> Result<Self, DefinitionError> {
        let options = serde_saphyr::options! {
            strict_booleans: true,
            leading_zero_numbers_as_strings: true,
            underscored_numbers_as_strings: true,
            with_snippet: false,
        };
        let document: raw::Document = serde_saphyr::from_str_with_options(text, options)
            .map_err(|error| DefinitionError::Syntax(error.to_string()))?;
        validate(document.workflow)
    }

    /// Parses and validates a JSON definition (`{"workflow": {...}}`).
    pub fn from_json(text: &str) -> Result<Self, DefinitionError> {
        let document: raw::Document = serde_json::from_str(text)
            .map_err(|error| DefinitionError::Syntax(error.to_string()))?;
        validate(document.workflow)
    }

    /// The route named `name`.
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.routes.iter().find(|route| route.name == name)
    }
}

impl Route {
    /// The action with id `id`.
    pub fn action(&self, id: &str) -> Option<&Action> {
        self.actions.iter().find(|action| action.id == id)
    }
}

/// Parses a duration written as text: `100ms`, `5s`, `1m`, `1h 30m`, `2 seconds`, `1.5s` or ISO
/// 8601 (`PT5S`). Negative durations are refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let signed: jiff::SignedDuration = text.trim().parse().map_err(|_| {
        format!("`{text}` is not a duration (write e.g. `100ms`, `5s`, `1m`, `1h 30m`)")
    })?;
    Duration::try_from(signed).map_err(|_| format!("`{text}` is negative"))
}

/// Collects problems while walking the raw definition.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem { field: field.into(), message: message.into() });
    }

    fn name(&mut self, field: &str, value: &str) {
        let valid = (1..=63).contains(&value.len())
            && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !valid {
            self.add(field, "must be 1-63 characters of A-Z a-z 0-9 . _ -");
        }
    }

    fn path(&mut self, field: &str, text: &str) -> Option<FieldPath> {
        text.parse()
            .map_err(|error: super::path::PathError| self.add(field, error.to_string()))
            .ok()
    }

    fn single_path(&mut self, field: &str, text: &str) -> Option<FieldPath> {
        let path = self.path(field, text)?;
        if path.has_wildcard() {
            self.add(field, "`[*]` is not allowed here: name exactly one place");
            return None;
        }
        Some(path)
    }

    fn duration(&mut self, field: &str, text: Option<&str>, positive: bool) -> Option<Duration> {
        let duration = parse_duration(text?).map_err(|message| self.add(field, message)).ok()?;
        if positive && duration.is_zero() {
            self.add(field, "must be more than zero");
            return None;
        }
        Some(duration)
    }
}

fn validate(raw: raw::Workflow) -> Result<Workflow, DefinitionError> {
    let mut problems = Problems::default();
    problems.name("workflow.name", &raw.name);
    if raw.routes.is_empty() {
        problems.add("workflow.routes", "at least one route is required");
    }
    let mut route_names = HashSet::new();
    let mut action_ids = HashSet::new();
    let mut routes = Vec::with_capacity(raw.routes.len());
    for (index, route) in raw.routes.into_iter().enumerate() {
        let field = format!("workflow.routes[{index}]");
        if !route_names.insert(route.name.clone()) {
            problems.add(format!("{field}.name"), format!("duplicate route name `{}`", route.name));
        }
        routes.push(validate_route(&mut problems, &field, route, &mut action_ids));
    }
    let retry = validate_retry(&mut problems, raw.retry);
    let circuit_breaker = validate_circuit(&mut problems, raw.circuit_breaker);
    let rate_limit = raw.rate_limit.and_then(|raw| validate_rate_limit(&mut problems, raw));
    if !problems.0.is_empty() {
        return Err(DefinitionError::Invalid(problems.0));
    }
    Ok(Workflow {
        name: raw.name,
        version: raw.version.map(|v| v.0).unwrap_or_default(),
        routes,
        retry,
        circuit_breaker,
        rate_limit,
    })
}

fn validate_route(
    problems: &mut Problems,
    field: &str,
    raw: raw::Route,
    action_ids: &mut HashSet<String>,
) -> Route {
    problems.name(&format!("{field}.name"), &raw.name);
    let filter = raw.filter.map(|f| validate_filter(problems, field, f)).unwrap_or_default();
    let transforms = raw
        .transforms
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| validate_transform(problems, &format!("{field}.transforms[{i}]"), t))
        .collect();
    if raw.actions.is_empty() {
        problems.add(format!("{field}.actions"), "at least one action is required");
    }
    let mut actions = Vec::with_capacity(raw.actions.len());
    for (i, action) in raw.actions.into_iter().enumerate() {
        let field = format!("{field}.actions[{i}]");
        if !action_ids.insert(action.id.clone()) {
            problems.add(format!("{field}.id"), format!("duplicate action id `{}`", action.id));
        }
        if let Some(action) = validate_action(problems, &field, action) {
            actions.push(action);
        }
    }
    Route { name: raw.name, filter, transforms, actions }
}

fn validate_filter(problems: &mut Problems, route: &str, raw: raw::Filter) -> Filter {
    let event_types = raw.event_type.map(|types| types.0).unwrap_or_default();
    for (i, event_type) in event_types.iter().enumerate() {
        if event_type.trim().is_empty() {
            problems.add(format!("{route}.filter.event_type[{i}]"), "must not be empty");
        }
    }
    let conditions = raw
        .conditions
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| {
            validate_condition(problems, &format!("{route}.filter.conditions[{i}]"), c)
        })
        .collect();
    Filter { event_types, conditions }
}

fn validate_condition(
    problems: &mut Problems,
    field: &str,
    raw: raw::Condition,
) -> Option<Condition> {
    let path = problems.path(&format!("{field}.field"), &raw.field);
    let Some(operator) = Operator::ALL.iter().find(|(name, _)| *name == raw.operator).map(|p| p.1)
    else {
        let known = Operator::ALL.map(|(name, _)| name).join(", ");
        let message = if raw.operator == "matches" {
            format!("operator `matches` (regular expressions) is not supported; use one of {known}")
        } else {
            format!("unknown operator `{}`; expected one of {known}", raw.operator)
        };
        problems.add(format!("{field}.operator"), message);
        return None;
    };
    let value_field = format!("{field}.value");
    let is_scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
    match (operator, &raw.value) {
        (Operator::Exists | Operator::NotExists, Some(_)) => {
            problems.add(value_field, format!("`{operator}` takes no value"));
        }
        (Operator::Exists | Operator::NotExists, None) => {}
        (_, None) => problems.add(value_field, format!("`{operator}` needs a value")),
        (Operator::In | Operator::NotIn, Some(Value::Array(items))) => {
            if items.is_empty() {
                problems.add(value_field, "the list must not be empty");
            } else if !items.iter().all(is_scalar) {
                problems.add(value_field, "list items must be strings, numbers or booleans");
            }
        }
        (Operator::In | Operator::NotIn, Some(_)) => {
            problems.add(value_field, format!("`{operator}` needs a list"));
        }
        (Operator::Gt | Operator::Lt, Some(v))
            if !matches!(v, Value::String(_) | Value::Number(_)) =>
        {
            problems.add(value_field, format!("`{operator}` needs a number or a string"));
        }
        (_, Some(v)) if !is_scalar(v) => {
            problems.add(value_field, format!("`{operator}` needs a string, number or boolean"));
        }
        _ => {}
    }
    Some(Condition { field: path?, operator, value: raw.value })
}

fn validate_transform(
    problems: &mut Problems,
    field: &str,
    raw: raw::Transform,
) -> Option<Transform> {
    match raw {
        raw::Transform::Set(set) => {
            let path = problems.single_path(&format!("{field}.set.field"), &set.field)?;
            Some(Transform::Set { field: path, value: set.value })
        }
        raw::Transform::Remove(remove) => {
            if remove.fields.0.is_empty() {
                problems.add(format!("{field}.remove.fields"), "at least one field is required");
            }
            let fields: Vec<_> = remove
                .fields
                .0
                .iter()
                .enumerate()
                .map(|(i, text)| problems.path(&format!("{field}.remove.fields[{i}]"), text))
                .collect();
            Some(Transform::Remove { fields: fields.into_iter().collect::<Option<_>>()? })
        }
        raw::Transform::Rename(rename) => {
            let from = problems.single_path(&format!("{field}.rename.from"), &rename.from);
            let to = problems.single_path(&format!("{field}.rename.to"), &rename.to);
            Some(Transform::Rename { from: from?, to: to? })
        }
    }
}

/// Keys each action type accepts (besides `id` and `type`).
fn allowed_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "log" => &["level", "message"],
        "webhook" => &["url", "timeout", "headers"],
        "fhir" => &["base_url", "resource", "timeout", "headers"],
        _ => &[],
    }
}

fn validate_action(problems: &mut Problems, field: &str, raw: raw::Action) -> Option<Action> {
    problems.name(&format!("{field}.id"), &raw.id);
    if !matches!(raw.kind.as_str(), "log" | "webhook" | "fhir") {
        problems.add(
            format!("{field}.type"),
            format!("unknown action type `{}`; expected log, webhook or fhir", raw.kind),
        );
        return None;
    }
    let present = [
        ("level", raw.level.is_some()),
        ("message", raw.message.is_some()),
        ("url", raw.url.is_some()),
        ("base_url", raw.base_url.is_some()),
        ("resource", raw.resource.is_some()),
        ("timeout", raw.timeout.is_some()),
        ("headers", raw.headers.is_some()),
    ];
    let allowed = allowed_keys(&raw.kind);
    for (key, _) in present.iter().filter(|(key, set)| *set && !allowed.contains(key)) {
        problems.add(format!("{field}.{key}"), format!("not a key of a `{}` action", raw.kind));
    }
    let timeout_field = format!("{field}.timeout");
    let config = match raw.kind.as_str() {
        "log" => {
            let level = match raw.level.as_deref().unwrap_or("info") {
                "trace" => LogLevel::Trace,
                "debug" => LogLevel::Debug,
                "info" => LogLevel::Info,
                "warn" => LogLevel::Warn,
                "error" => LogLevel::Error,
                other => {
                    problems.add(
                        format!("{field}.level"),
                        format!(
                            "unknown level `{other}`; expected trace, debug, info, warn or error"
                        ),
                    );
                    LogLevel::Info
                }
            };
            ActionConfig::Log(LogAction { level, message: raw.message })
        }
        "webhook" => {
            let url = http_url(problems, &format!("{field}.url"), raw.url.as_deref());
            let timeout = problems.duration(&timeout_field, raw.timeout.as_deref(), true);
            let headers = headers(problems, &format!("{field}.headers"), raw.headers);
            ActionConfig::Webhook(WebhookAction { url: url?, timeout, headers })
        }
        _ => {
            let base_url =
                http_url(problems, &format!("{field}.base_url"), raw.base_url.as_deref());
            let resource = raw.resource.as_deref().and_then(|text| {
                text.parse::<ResourceType>()
                    .map_err(|message| problems.add(format!("{field}.resource"), message))
                    .ok()
            });
            let timeout = problems.duration(&timeout_field, raw.timeout.as_deref(), true);
            let headers = headers(problems, &format!("{field}.headers"), raw.headers);
            ActionConfig::Fhir(FhirAction { base_url: base_url?, resource, timeout, headers })
        }
    };
    Some(Action { id: raw.id, config })
}

fn http_url(problems: &mut Problems, field: &str, text: Option<&str>) -> Option<Url> {
    let Some(text) = text else {
        problems.add(field, "is required");
        return None;
    };
    match Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {
            Some(url)
        }
        Ok(_) => {
            problems.add(field, "must be an http or https URL with a host");
            None
        }
        Err(error) => {
            problems.add(field, format!("not a URL: {error}"));
            None
        }
    }
}

fn headers(
    problems: &mut Problems,
    field: &str,
    raw: Option<std::collections::BTreeMap<String, String>>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::new();
    for (name, value) in raw.unwrap_or_default() {
        let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
            problems.add(format!("{field}.{name}"), "not a valid header name");
            continue;
        };
        if matches!(header.as_str(), "host" | "content-length" | "transfer-encoding") {
            problems.add(format!("{field}.{name}"), "this header is set by the engine");
            continue;
        }
        // The value may be a credential: the message never repeats it.
        let Ok(value) = HeaderValue::from_str(&value) else {
            problems.add(format!("{field}.{name}"), "not a valid header value");
            continue;
        };
        headers.push((header, value));
    }
    headers
}

fn validate_retry(problems: &mut Problems, raw: Option<raw::Retry>) -> RetryPolicy {
    let mut policy = RetryPolicy::default();
    let Some(raw) = raw else { return policy };
    if let Some(attempts) = raw.max_attempts {
        if (1..=20).contains(&attempts) {
            policy.max_attempts = attempts;
        } else {
            problems.add("workflow.retry.max_attempts", "must be between 1 and 20");
        }
    }
    let initial = raw.initial_backoff.as_deref();
    if let Some(d) = problems.duration("workflow.retry.initial_backoff", initial, false) {
        policy.initial_backoff = d;
    }
    if let Some(d) =
        problems.duration("workflow.retry.max_backoff", raw.max_backoff.as_deref(), false)
    {
        policy.max_backoff = d;
    }
    if policy.initial_backoff > policy.max_backoff {
        problems.add("workflow.retry.max_backoff", "must not be less than initial_backoff");
    }
    policy
}

fn validate_circuit(
    problems: &mut Problems,
    raw: Option<raw::CircuitBreaker>,
) -> CircuitBreakerPolicy {
    let mut policy = CircuitBreakerPolicy::default();
    let Some(raw) = raw else { return policy };
    match raw.failure_threshold {
        Some(0) => problems.add("workflow.circuit_breaker.failure_threshold", "must be at least 1"),
        Some(threshold) => policy.failure_threshold = threshold,
        None => {}
    }
    let open_for = raw.open_for.as_deref();
    if let Some(d) = problems.duration("workflow.circuit_breaker.open_for", open_for, true) {
        policy.open_for = d;
    }
    policy
}

fn validate_rate_limit(problems: &mut Problems, raw: raw::RateLimit) -> Option<RateLimitPolicy> {
    if !(raw.per_second.is_finite() && raw.per_second > 0.0) {
        problems.add("workflow.rate_limit.per_second", "must be a number above zero");
        return None;
    }
    let burst = match raw.burst {
        Some(0) => {
            problems.add("workflow.rate_limit.burst", "must be at least 1");
            return None;
        }
        Some(burst) => burst,
        // Saturating float-to-int cast; at least one token.
        None => (raw.per_second.ceil() as u32).max(1),
    };
    Some(RateLimitPolicy { per_second: raw.per_second, burst })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("5").unwrap_err().contains("not a duration"));
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn operator_names_round_trip() {
        for (name, op) in Operator::ALL {
            assert_eq!(op.as_str(), name);
        }
    }
}
