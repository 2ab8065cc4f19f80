//! The metric names and labels of the spec, read from the encoded registry.

use std::time::Duration;

use crate::support::{Destination, admit_event, encode, engine, metric, workflow};

#[tokio::test]
async fn metrics_have_the_spec_names() {
    let server = Destination::start(200).await;
    let (engine, registry) = engine();
    let workflow = workflow(&format!(
        "workflow: {{name: m, routes: [{{name: admit, filter: {{event_type: inpatient_admit}}, actions: [{{id: hook, type: webhook, url: '{}'}}, {{id: audit, type: log}}]}}]}}",
        server.url("/m")
    ));
    let text = encode(&registry);
    for line in [
        "# TYPE workflow_events_processed counter",
        "# TYPE workflow_events_in_progress gauge",
        "# TYPE workflow_action_duration_seconds histogram",
        "# TYPE workflow_dlq_size gauge",
        "# TYPE workflow_rate_limiter_rejected counter",
        "workflow_events_processed_total{outcome=\"ok\"} 0",
        "workflow_events_processed_total{outcome=\"dead_lettered\"} 0",
        "workflow_events_processed_total{outcome=\"no_route\"} 0",
        "workflow_action_duration_seconds_count{action_type=\"fhir\"} 0",
        "workflow_events_in_progress 0",
        "workflow_dlq_size 0",
        "workflow_rate_limiter_rejected_total 0",
    ] {
        assert!(text.lines().any(|l| l == line), "missing `{line}` in\n{text}");
    }

    // In progress while the destination holds the request.
    server.hold();
    let running = {
        let (engine, workflow) = (engine.clone(), workflow.clone());
        tokio::spawn(async move { engine.process(&workflow, admit_event()).await })
    };
    server.wait_for(1).await;
    assert_eq!(metric(&registry, "workflow_events_in_progress"), Some(1.0));
    server.unhold();
    server.release();
    running.await.unwrap();
    assert_eq!(metric(&registry, "workflow_events_in_progress"), Some(0.0));

    let mut lab = admit_event();
    lab["type"] = "lab_result".into();
    engine.process(&workflow, lab).await;

    assert_eq!(metric(&registry, "workflow_events_processed_total{outcome=\"ok\"}"), Some(1.0));
    assert_eq!(
        metric(&registry, "workflow_events_processed_total{outcome=\"no_route\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&registry, "workflow_action_duration_seconds_count{action_type=\"webhook\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&registry, "workflow_action_duration_seconds_count{action_type=\"log\"}"),
        Some(1.0)
    );
    let text = encode(&registry);
    assert!(
        text.contains(
            "workflow_action_duration_seconds_bucket{le=\"0.005\",action_type=\"webhook\"}"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "workflow_action_duration_seconds_bucket{le=\"10.0\",action_type=\"webhook\"}"
        ),
        "{text}"
    );
    let state =
        format!("workflow_circuit_breaker_state{{destination=\"{}\"}}", server.destination());
    assert_eq!(metric(&registry, &state), Some(0.0));
    assert!(text.lines().any(|l| l == "# TYPE workflow_circuit_breaker_state gauge"), "{text}");
    assert!(!text.contains("workflow_action_errors_total{"), "no errors yet");

    // Dropping a running event still decrements the gauge.
    server.hold();
    let abandoned = {
        let (engine, workflow) = (engine.clone(), workflow.clone());
        tokio::spawn(async move { engine.process(&workflow, admit_event()).await })
    };
    server.wait_for(2).await;
    abandoned.abort();
    let _ = abandoned.await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(metric(&registry, "workflow_events_in_progress"), Some(0.0));
}
