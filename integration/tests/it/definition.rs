//! Loading workflow definitions: the documented shape, defaults and clear errors.

use std::time::Duration;

use keelson_integration::engine::definition::{ActionConfig, LogLevel, Operator, Transform};
use keelson_integration::engine::fhir::ResourceType;
use keelson_integration::engine::{DefinitionError, Workflow};
use serde_json::json;

const EXAMPLE: &str = r#"
workflow:
  name: adt-routing
  version: "1"
  routes:
    - name: admit
      filter:
        event_type: [patient_admit, inpatient_admit]   # one string or a list; absent = any
        conditions:                                     # all must hold
          - field: patient.gender
            operator: eq
            value: F
      transforms:
        - set: {field: meta.route, value: admit}
        - remove: {fields: [patient.ssn]}
        - rename: {from: a.b, to: c.d}
      actions:
        - id: send-fhir
          type: fhir
          base_url: http://fhir.example/r4
          resource: Patient
        - id: notify
          type: webhook
          url: http://hooks.example/adt
          timeout: 5s
          headers: {X-Source: keelson}
        - id: audit
          type: log
          level: info
  retry: {max_attempts: 3, initial_backoff: 100ms, max_backoff: 5s}
  circuit_breaker: {failure_threshold: 5, open_for: 30s}
  rate_limit: {per_second: 100, burst: 200}
"#;

fn problems(error: DefinitionError) -> Vec<(String, String)> {
    match error {
        DefinitionError::Invalid(problems) => {
            problems.into_iter().map(|p| (p.field, p.message)).collect()
        }
        other => panic!("expected validation problems, got {other}"),
    }
}

#[test]
fn parses_the_documented_example() {
    let workflow = Workflow::from_yaml(EXAMPLE).unwrap();
    assert_eq!(workflow.name, "adt-routing");
    assert_eq!(workflow.version, "1");
    let route = &workflow.routes[0];
    assert_eq!(route.name, "admit");
    assert_eq!(route.filter.event_types, ["patient_admit", "inpatient_admit"]);
    let condition = &route.filter.conditions[0];
    assert_eq!(condition.field.as_str(), "patient.gender");
    assert_eq!(condition.operator, Operator::Eq);
    assert_eq!(condition.value, Some(json!("F")));
    assert!(
        matches!(&route.transforms[0], Transform::Set { field, value } if field.as_str() == "meta.route" && value == "admit")
    );
    assert!(
        matches!(&route.transforms[1], Transform::Remove { fields } if fields[0].as_str() == "patient.ssn")
    );
    assert!(
        matches!(&route.transforms[2], Transform::Rename { from, to } if from.as_str() == "a.b" && to.as_str() == "c.d")
    );

    let ids: Vec<_> = route.actions.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["send-fhir", "notify", "audit"]);
    let ActionConfig::Fhir(fhir) = &route.actions[0].config else { panic!("fhir action") };
    assert_eq!(fhir.base_url.as_str(), "http://fhir.example/r4");
    assert_eq!(fhir.resource, Some(ResourceType::Patient));
    assert_eq!(fhir.timeout, None, "engine default applies");
    let ActionConfig::Webhook(webhook) = &route.actions[1].config else { panic!("webhook action") };
    assert_eq!(webhook.url.as_str(), "http://hooks.example/adt");
    assert_eq!(webhook.timeout, Some(Duration::from_secs(5)));
    assert_eq!(webhook.headers.len(), 1);
    assert_eq!(webhook.headers[0].0.as_str(), "x-source");
    assert_eq!(webhook.headers[0].1, "keelson");
    let ActionConfig::Log(log) = &route.actions[2].config else { panic!("log action") };
    assert_eq!(log.level, LogLevel::Info);

    assert_eq!(workflow.retry.max_attempts, 3);
    assert_eq!(workflow.retry.initial_backoff, Duration::from_millis(100));
    assert_eq!(workflow.retry.max_backoff, Duration::from_secs(5));
    assert_eq!(workflow.circuit_breaker.failure_threshold, 5);
    assert_eq!(workflow.circuit_breaker.open_for, Duration::from_secs(30));
    let limit = workflow.rate_limit.unwrap();
    assert_eq!((limit.per_second, limit.burst), (100.0, 200));
}

#[test]
fn optional_parts_have_defaults_and_json_works_too() {
    let workflow = Workflow::from_json(
        r#"{"workflow": {"name": "w", "version": 2, "routes": [
            {"name": "all", "actions": [{"id": "a", "type": "log"}]}]}}"#,
    )
    .unwrap();
    assert_eq!(workflow.version, "2");
    assert!(workflow.routes[0].filter.event_types.is_empty(), "absent filter takes any event");
    assert_eq!(workflow.retry.max_attempts, 3);
    assert_eq!(workflow.retry.initial_backoff, Duration::from_millis(100));
    assert_eq!(workflow.circuit_breaker.open_for, Duration::from_secs(30));
    assert!(workflow.rate_limit.is_none(), "absent = unlimited");
    let ActionConfig::Log(log) = &workflow.routes[0].actions[0].config else { panic!() };
    assert_eq!(log.level, LogLevel::Info);

    let one_type = Workflow::from_yaml(
        "workflow: {name: w, routes: [{name: r, filter: {event_type: lab_result}, actions: [{id: a, type: log}]}]}",
    )
    .unwrap();
    assert_eq!(one_type.routes[0].filter.event_types, ["lab_result"]);
}

#[test]
fn yaml_scalars_keep_hl7_codes_as_text() {
    let workflow = Workflow::from_yaml(
        r#"
workflow:
  name: w
  routes:
    - name: r
      filter:
        conditions:
          - {field: 'results[*].abnormal_flags', operator: eq, value: N}
          - {field: patient.marital_status, operator: in, value: [no, Y, 007]}
          - {field: 'results[0].result', operator: gt, value: 5}
      actions: [{id: a, type: log}]
"#,
    )
    .unwrap();
    let conditions = &workflow.routes[0].filter.conditions;
    assert_eq!(conditions[0].value, Some(json!("N")));
    assert_eq!(conditions[1].value, Some(json!(["no", "Y", "007"])));
    assert_eq!(conditions[2].value, Some(json!(5)));
}

#[test]
fn unknown_keys_are_refused_with_their_place() {
    let top = Workflow::from_yaml("workflow: {name: w, routes: [], retries: 3}").unwrap_err();
    assert!(matches!(top, DefinitionError::Syntax(_)));
    assert!(top.to_string().contains("unknown field `retries`"), "{top}");

    let nested = Workflow::from_yaml(
        "workflow:\n  name: w\n  routes:\n    - name: r\n      filter:\n        event_types: [x]\n      actions: [{id: a, type: log}]\n",
    )
    .unwrap_err();
    let text = nested.to_string();
    assert!(text.contains("unknown field `event_types`"), "{text}");
    assert!(text.contains("line 6"), "names the line: {text}");

    let action_key = Workflow::from_yaml(
        "workflow: {name: w, routes: [{name: r, actions: [{id: a, type: log, url: 'http://x'}]}]}",
    )
    .unwrap_err();
    assert_eq!(
        problems(action_key),
        [(
            "workflow.routes[0].actions[0].url".to_owned(),
            "not a key of a `log` action".to_owned()
        )]
    );

    let json = Workflow::from_json(r#"{"workflow": {"name": "w", "routes": [], "extra": 1}}"#)
        .unwrap_err();
    assert!(json.to_string().contains("unknown field `extra`"), "{json}");
}

#[test]
fn bad_operators_name_the_field() {
    let error = Workflow::from_yaml(
        r#"
workflow:
  name: w
  routes:
    - name: r
      filter:
        conditions:
          - {field: patient.gender, operator: eq, value: F}
          - {field: patient.name.family, operator: matches, value: "^D"}
          - {field: patient.mrn, operator: like, value: "1"}
      actions: [{id: a, type: log}]
"#,
    )
    .unwrap_err();
    let problems = problems(error);
    assert_eq!(problems.len(), 2);
    assert_eq!(problems[0].0, "workflow.routes[0].filter.conditions[1].operator");
    assert!(
        problems[0].1.contains("`matches` (regular expressions) is not supported"),
        "{}",
        problems[0].1
    );
    assert_eq!(problems[1].0, "workflow.routes[0].filter.conditions[2].operator");
    assert!(
        problems[1].1.starts_with("unknown operator `like`; expected one of eq, ne, in"),
        "{}",
        problems[1].1
    );
}

#[test]
fn duplicate_ids_are_refused() {
    let error = Workflow::from_yaml(
        r#"
workflow:
  name: w
  routes:
    - name: admit
      actions:
        - {id: notify, type: log}
        - {id: notify, type: log}
    - name: admit
      actions:
        - {id: audit, type: log}
        - {id: notify, type: log}
"#,
    )
    .unwrap_err();
    assert_eq!(
        problems(error),
        [
            (
                "workflow.routes[0].actions[1].id".to_owned(),
                "duplicate action id `notify`".to_owned()
            ),
            ("workflow.routes[1].name".to_owned(), "duplicate route name `admit`".to_owned()),
            (
                "workflow.routes[1].actions[1].id".to_owned(),
                "duplicate action id `notify`".to_owned()
            ),
        ]
    );
}

#[test]
fn values_are_checked() {
    let error = Workflow::from_yaml(
        r#"
workflow:
  name: "bad name"
  routes:
    - name: r
      filter:
        conditions:
          - {field: patient..x, operator: exists}
          - {field: patient.x, operator: exists, value: 1}
          - {field: patient.x, operator: in, value: F}
          - {field: patient.x, operator: eq}
      transforms:
        - set: {field: "results[*].x", value: 1}
      actions:
        - {id: a, type: webhook, url: "ftp://x.example/", timeout: 5}
        - {id: b, type: fhir, base_url: "http://f.example", resource: Medication, headers: {"Bad Header": x}}
        - {id: c, type: log, level: loud}
        - {id: d, type: email}
  retry: {max_attempts: 0, initial_backoff: 2s, max_backoff: 1s}
  circuit_breaker: {failure_threshold: 0, open_for: 0s}
  rate_limit: {per_second: 0}
"#,
    )
    .unwrap_err();
    let fields: Vec<String> = problems(error).into_iter().map(|(field, _)| field).collect();
    assert_eq!(
        fields,
        [
            "workflow.name",
            "workflow.routes[0].filter.conditions[0].field",
            "workflow.routes[0].filter.conditions[1].value",
            "workflow.routes[0].filter.conditions[2].value",
            "workflow.routes[0].filter.conditions[3].value",
            "workflow.routes[0].transforms[0].set.field",
            "workflow.routes[0].actions[0].url",
            "workflow.routes[0].actions[0].timeout",
            "workflow.routes[0].actions[1].resource",
            "workflow.routes[0].actions[1].headers.Bad Header",
            "workflow.routes[0].actions[2].level",
            "workflow.routes[0].actions[3].type",
            "workflow.retry.max_attempts",
            "workflow.retry.max_backoff",
            "workflow.circuit_breaker.failure_threshold",
            "workflow.circuit_breaker.open_for",
            "workflow.rate_limit.per_second",
        ]
    );
}

#[test]
fn header_values_never_appear_in_errors() {
    let error = Workflow::from_yaml(
        "workflow: {name: w, routes: [{name: r, actions: [{id: a, type: webhook, url: 'http://h.example', headers: {Authorization: \"Bearer s3cr3t\\n\"}}]}]}",
    )
    .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("headers.Authorization: not a valid header value"), "{text}");
    assert!(!text.contains("s3cr3t"), "{text}");
}
