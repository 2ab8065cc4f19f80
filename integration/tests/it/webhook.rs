//! The webhook action against a real local HTTP server.

use std::time::Duration;

use keelson_integration::engine::{ActionKind, ActionStatus};
use serde_json::json;

use crate::support::{Destination, admit_event, engine, logs, workflow};

#[tokio::test]
async fn posts_the_transformed_event_with_headers() {
    let server = Destination::start(200).await;
    let (engine, _registry) = engine();
    let workflow = workflow(&format!(
        r#"
workflow:
  name: adt-routing
  routes:
    - name: labs
      filter: {{event_type: lab_result}}
      actions: [{{id: never, type: log}}]
    - name: admit
      filter:
        event_type: [patient_admit, inpatient_admit]
        conditions: [{{field: patient.gender, operator: eq, value: M}}]
      transforms:
        - set: {{field: meta.route, value: admit}}
        - remove: {{fields: [patient.ssn]}}
      actions:
        - {{id: notify, type: webhook, url: "{}", timeout: 5s, headers: {{X-Source: keelson, Authorization: Bearer t0ken}}}}
        - {{id: audit, type: log, level: info}}
"#,
        server.url("/hooks/adt")
    ));
    let outcome = engine.process(&workflow, admit_event()).await;

    assert_eq!(outcome.event_id.as_deref(), Some("evt_0123456789abcdef0123456789abcdef"));
    assert_eq!(outcome.event_type.as_deref(), Some("inpatient_admit"));
    assert!(!outcome.dead_lettered);
    assert_eq!(outcome.routes.len(), 2);
    assert!(!outcome.routes[0].matched);
    assert_eq!(
        outcome.routes[0].skip_reason.as_deref(),
        Some("event type `inpatient_admit` is not one of [lab_result]")
    );
    let admit = &outcome.routes[1];
    assert!(admit.matched);
    assert_eq!(admit.transforms_applied, 2);
    let notify = &admit.actions[0];
    assert_eq!(notify.kind, ActionKind::Webhook);
    assert_eq!(notify.status, ActionStatus::Succeeded);
    assert_eq!(notify.attempts, 1);
    assert_eq!(notify.http_status, Some(200));
    assert_eq!(notify.destination.as_deref(), Some(server.destination().as_str()));
    assert_eq!(admit.actions[1].kind, ActionKind::Log);
    assert_eq!(admit.actions[1].status, ActionStatus::Succeeded);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hooks/adt");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-source"), Some("keelson"));
    assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(
        request.header("idempotency-key"),
        Some("evt_0123456789abcdef0123456789abcdef:admit:notify")
    );
    assert!(request.header("user-agent").unwrap().starts_with("keelson-integration/"));
    let mut expected = admit_event();
    expected["meta"] = json!({"route": "admit"});
    expected["patient"].as_object_mut().unwrap().remove("ssn");
    assert_eq!(request.json(), expected, "the body is the route's transformed copy");

    // The outcome serializes in snake_case with empty fields left out.
    let json = serde_json::to_value(&outcome).unwrap();
    assert_eq!(json["routes"][1]["actions"][0]["status"], "succeeded");
    assert_eq!(json["routes"][1]["actions"][0]["kind"], "webhook");
    assert!(json["routes"][1]["actions"][0].get("error").is_none());
    assert!(json["routes"][1].get("skip_reason").is_none());
    assert_eq!(json["dead_lettered"], false);
}

#[tokio::test]
async fn timeout_is_honoured() {
    let server = Destination::start(200).await;
    server.set_delay(Duration::from_secs(3));
    let (engine, _registry) = engine();
    let workflow = workflow(&format!(
        "workflow: {{name: w, retry: {{max_attempts: 1}}, routes: [{{name: r, actions: [{{id: slow, type: webhook, url: '{}', timeout: 150ms}}]}}]}}",
        server.url("/slow")
    ));
    let started = std::time::Instant::now();
    let outcome = engine.process(&workflow, admit_event()).await;
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    let action = &outcome.routes[0].actions[0];
    assert_eq!(action.status, ActionStatus::Failed);
    assert_eq!(action.attempts, 1);
    assert_eq!(
        action.error.as_deref(),
        Some(format!("no answer from {} within 150 ms", server.destination()).as_str())
    );
    assert!((150..2000).contains(&action.duration_ms), "{}", action.duration_ms);
    assert!(outcome.dead_lettered);
    assert_eq!(engine.dead_letters().len(), 1);
}

#[tokio::test]
async fn transient_failures_are_retried_and_client_errors_are_not() {
    let server = Destination::start(200).await;
    server.fail_first(2);
    let (engine, _registry) = engine();
    let yaml = |url: String| {
        format!(
            "workflow: {{name: w, retry: {{max_attempts: 3, initial_backoff: 1ms, max_backoff: 5ms}}, routes: [{{name: r, actions: [{{id: a, type: webhook, url: '{url}'}}]}}]}}"
        )
    };
    let flaky = workflow(&yaml(server.url("/flaky")));
    let outcome = engine.process(&flaky, admit_event()).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::Succeeded, 3));
    assert!(!outcome.dead_lettered);
    assert_eq!(server.count(), 3);

    server.set_status(422);
    let outcome = engine.process(&flaky, admit_event()).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!(
        (action.status, action.attempts, action.http_status),
        (ActionStatus::Failed, 1, Some(422))
    );
    assert_eq!(
        action.error.as_deref(),
        Some(format!("HTTP 422 from {}", server.destination()).as_str())
    );
    assert_eq!(server.count(), 4, "a 4xx is not retried");

    // Nothing listens here: a connection error, retried, then dead-lettered.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let unreachable = workflow(&yaml(format!("http://{addr}/x")));
    let outcome = engine.process(&unreachable, admit_event()).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::Failed, 3));
    assert_eq!(
        action.error.as_deref(),
        Some(format!("could not connect to http://{addr} (after 3 attempts)").as_str())
    );
}

#[tokio::test]
async fn logs_never_carry_event_data() {
    let (captured, _guard) = logs::capture();
    let server = Destination::start(500).await;
    let (engine, _registry) = engine();
    let workflow = workflow(&format!(
        "workflow: {{name: w, retry: {{max_attempts: 2, initial_backoff: 1ms, max_backoff: 1ms}}, routes: [{{name: r, actions: [{{id: audit, type: log, level: warn}}, {{id: a, type: webhook, url: '{}?token=s3cr3t', headers: {{Authorization: Bearer s3cr3t}}}}]}}]}}",
        server.url("/path-secret")
    ));
    engine.process(&workflow, admit_event()).await;
    let text = captured.text();
    assert!(text.contains("workflow event routed"), "{text}");
    assert!(text.contains("evt_0123456789abcdef0123456789abcdef"), "{text}");
    assert!(text.contains("inpatient_admit"), "{text}");
    assert!(text.contains("workflow action dead-lettered"), "{text}");
    for secret in [
        "DOE",
        "JOHN",
        "123456789\"",
        "123-45-6789",
        "MAIN ST",
        "5551234567",
        "1980",
        "s3cr3t",
        "path-secret",
    ] {
        assert!(!text.contains(secret), "`{secret}` reached the logs:\n{text}");
    }
}
