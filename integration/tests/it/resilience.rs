//! Retries, the circuit breaker, the dead letter queue and replay, against a real failing
//! destination (the issue's engine test).

use std::time::Duration;

use keelson_integration::engine::{ActionStatus, DeadLetterError, EngineSettings};
use serde_json::json;

use crate::support::{Destination, admit_event_n, encode, engine, engine_with, metric, workflow};

fn failing_workflow(
    url: &str,
    threshold: u32,
    attempts: u32,
) -> keelson_integration::engine::Workflow {
    workflow(&format!(
        r#"
workflow:
  name: adt-routing
  retry: {{max_attempts: {attempts}, initial_backoff: 1ms, max_backoff: 2ms}}
  circuit_breaker: {{failure_threshold: {threshold}, open_for: 200ms}}
  routes:
    - name: admit
      filter: {{event_type: inpatient_admit}}
      transforms: [{{set: {{field: meta.route, value: admit}}}}]
      actions:
        - {{id: notify, type: webhook, url: "{url}"}}
"#
    ))
}

#[tokio::test]
async fn failing_destination_opens_its_circuit_dead_letters_and_recovers() {
    let server = Destination::start(500).await;
    let (engine, registry) = engine();
    let workflow = failing_workflow(&server.url("/adt"), 6, 3);
    let state =
        format!("workflow_circuit_breaker_state{{destination=\"{}\"}}", server.destination());
    let dlq_size = || metric(&registry, "workflow_dlq_size");

    // Event 1: three attempts (the retry limit), then a dead letter. 3 failures < 6: closed.
    let outcome = engine.process(&workflow, admit_event_n(1)).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!(
        (action.status, action.attempts, action.http_status),
        (ActionStatus::Failed, 3, Some(500))
    );
    assert_eq!(
        action.error.as_deref(),
        Some(format!("HTTP 500 from {} (after 3 attempts)", server.destination()).as_str())
    );
    assert!(outcome.dead_lettered);
    assert_eq!(server.count(), 3, "requests counted server-side");
    assert_eq!(dlq_size(), Some(1.0));
    assert_eq!(metric(&registry, &state), Some(0.0));

    // Event 2: three more failures: six in a row open the circuit.
    let outcome = engine.process(&workflow, admit_event_n(2)).await;
    assert_eq!(outcome.routes[0].actions[0].attempts, 3);
    assert_eq!(server.count(), 6);
    assert_eq!(dlq_size(), Some(2.0));
    assert_eq!(metric(&registry, &state), Some(2.0), "open");

    // Event 3: refused without a request.
    let outcome = engine.process(&workflow, admit_event_n(3)).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::CircuitOpen, 0));
    assert_eq!(
        action.error.as_deref(),
        Some(format!("circuit open for {}", server.destination()).as_str())
    );
    assert_eq!(server.count(), 6, "the open circuit made no request");
    assert_eq!(dlq_size(), Some(3.0));

    // The dead letters hold the original events and what happened.
    let letters = engine.dead_letters();
    assert_eq!(letters.len(), 3);
    assert_eq!(letters[0].event, admit_event_n(1), "original event, before transforms");
    assert_eq!(
        (letters[0].workflow.as_str(), letters[0].route.as_str(), letters[0].action.as_str()),
        ("adt-routing", "admit", "notify")
    );
    assert_eq!((letters[0].status, letters[0].attempts), (ActionStatus::Failed, 3));
    assert_eq!((letters[2].status, letters[2].attempts), (ActionStatus::CircuitOpen, 0));
    let json = serde_json::to_value(&letters[0]).unwrap();
    assert!(json["failed_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["status"], "failed");
    assert_eq!(json["id"], letters[0].id);

    // The destination is fixed; after open_for the next call is the single half-open probe.
    server.set_status(200);
    server.hold();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let probe = {
        let (engine, workflow) = (engine.clone(), workflow.clone());
        tokio::spawn(async move { engine.process(&workflow, admit_event_n(4)).await })
    };
    server.wait_for(7).await;
    assert_eq!(metric(&registry, &state), Some(1.0), "half-open while probing");
    let concurrent = engine.process(&workflow, admit_event_n(5)).await;
    assert_eq!(concurrent.routes[0].actions[0].status, ActionStatus::CircuitOpen, "one probe only");
    assert_eq!(dlq_size(), Some(4.0));
    server.unhold();
    server.release();
    let probed = probe.await.unwrap();
    let action = &probed.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::Succeeded, 1));
    assert!(!probed.dead_lettered);
    assert_eq!(metric(&registry, &state), Some(0.0), "closed again");

    // Replaying every dead letter empties the queue.
    let before = server.count();
    for letter in engine.dead_letters() {
        let replay = engine.replay_dead_letter(&workflow, &letter.id).await.unwrap();
        assert_eq!(replay.event_id.as_deref(), letter.event["id"].as_str());
        assert_eq!(replay.routes.len(), 1);
        assert_eq!(replay.routes[0].transforms_applied, 1);
        assert_eq!(replay.routes[0].actions[0].status, ActionStatus::Succeeded);
        assert!(!replay.dead_lettered);
    }
    assert!(engine.dead_letters().is_empty());
    assert_eq!(dlq_size(), Some(0.0));
    let replayed = &server.requests()[before..];
    assert_eq!(replayed.len(), 4);
    let mut ids: Vec<_> =
        replayed.iter().map(|r| r.json()["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3, 5].map(|n| format!("evt_{n:032x}")));
    assert!(
        replayed.iter().all(|r| r.json()["meta"] == json!({"route": "admit"})),
        "transforms re-applied"
    );
    assert_eq!(
        replayed[0].header("idempotency-key"),
        Some(format!("evt_{:032x}:admit:notify", 1).as_str()),
        "same key as the first try"
    );

    assert_eq!(
        metric(&registry, "workflow_events_processed_total{outcome=\"dead_lettered\"}"),
        Some(4.0)
    );
    assert_eq!(metric(&registry, "workflow_events_processed_total{outcome=\"ok\"}"), Some(1.0));
    let errors = format!(
        "workflow_action_errors_total{{action_type=\"webhook\",destination=\"{}\"}}",
        server.destination()
    );
    assert_eq!(metric(&registry, &errors), Some(4.0));
    assert!(encode(&registry).lines().any(|l| l == "# TYPE workflow_action_errors counter"));
}

#[tokio::test]
async fn circuit_can_open_between_retries() {
    let server = Destination::start(503).await;
    let (engine, registry) = engine();
    let workflow = failing_workflow(&server.url("/x"), 2, 5);
    let outcome = engine.process(&workflow, admit_event_n(1)).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::Failed, 2));
    assert_eq!(
        action.error.as_deref(),
        Some(
            format!("HTTP 503 from {}; circuit opened after 2 attempts", server.destination())
                .as_str()
        )
    );
    assert_eq!(server.count(), 2);
    let state =
        format!("workflow_circuit_breaker_state{{destination=\"{}\"}}", server.destination());
    assert_eq!(metric(&registry, &state), Some(2.0));
}

#[tokio::test]
async fn client_errors_do_not_open_the_circuit() {
    let server = Destination::start(400).await;
    let (engine, registry) = engine();
    let workflow = failing_workflow(&server.url("/x"), 1, 3);
    for n in 0..3 {
        let outcome = engine.process(&workflow, admit_event_n(n)).await;
        assert_eq!(outcome.routes[0].actions[0].attempts, 1);
    }
    assert_eq!(server.count(), 3);
    let state =
        format!("workflow_circuit_breaker_state{{destination=\"{}\"}}", server.destination());
    assert_eq!(metric(&registry, &state), Some(0.0));
    let circuits = engine.circuits();
    assert_eq!(circuits.len(), 1);
    assert_eq!(circuits[0].destination, server.destination());
}

#[tokio::test]
async fn dead_letter_queue_is_bounded_inspectable_and_discardable() {
    let server = Destination::start(500).await;
    let (engine, registry) =
        engine_with(EngineSettings { dlq_capacity: 2, ..EngineSettings::default() });
    let workflow = failing_workflow(&server.url("/x"), 100, 1);
    for n in 1..=3 {
        engine.process(&workflow, admit_event_n(n)).await;
    }
    let letters = engine.dead_letters();
    assert_eq!(letters.len(), 2, "the oldest was dropped");
    assert_eq!(letters[0].event["id"], format!("evt_{:032x}", 2));
    assert_eq!(metric(&registry, "workflow_dlq_size"), Some(2.0));
    assert_eq!(engine.dead_letter(&letters[1].id).unwrap(), letters[1]);

    // A failed replay keeps the entry and counts the replay.
    let replay = engine.replay_dead_letter(&workflow, &letters[0].id).await.unwrap();
    assert!(replay.dead_lettered);
    assert_eq!(replay.routes[0].actions[0].dead_letter_id.as_deref(), Some(letters[0].id.as_str()));
    let kept = engine.dead_letter(&letters[0].id).unwrap();
    assert_eq!(kept.replay_count, 1);
    assert_eq!(kept.event, letters[0].event);

    // Replay errors.
    let other = failing_workflow(&server.url("/x"), 100, 1);
    let mut renamed = other.clone();
    renamed.name = "other".into();
    assert_eq!(
        engine.replay_dead_letter(&renamed, &letters[0].id).await,
        Err(DeadLetterError::WorkflowMismatch {
            id: letters[0].id.clone(),
            expected: "adt-routing".into(),
            given: "other".into()
        })
    );
    let mut without_action = other.clone();
    without_action.routes[0].actions[0].id = "renamed".into();
    assert_eq!(
        engine.replay_dead_letter(&without_action, &letters[0].id).await,
        Err(DeadLetterError::UnknownAction {
            workflow: "adt-routing".into(),
            route: "admit".into(),
            action: "notify".into()
        })
    );
    assert!(engine.dead_letter(&letters[0].id).is_some(), "refused replays change nothing");
    assert_eq!(
        engine.replay_dead_letter(&workflow, "dlq_999999").await,
        Err(DeadLetterError::NotFound("dlq_999999".into()))
    );

    // Discard.
    let removed = engine.discard_dead_letter(&letters[0].id).unwrap();
    assert_eq!(removed.id, letters[0].id);
    assert_eq!(metric(&registry, "workflow_dlq_size"), Some(1.0));
    assert_eq!(
        engine.discard_dead_letter(&letters[0].id),
        Err(DeadLetterError::NotFound(letters[0].id.clone()))
    );
}
