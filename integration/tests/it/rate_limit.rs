//! The token-bucket rate limiter.

use keelson_integration::engine::ActionStatus;

use crate::support::{Destination, admit_event, engine, metric, workflow};

#[tokio::test]
async fn second_action_is_rate_limited_and_counted() {
    let server = Destination::start(200).await;
    let (engine, registry) = engine();
    let url = server.url("/hook");
    let workflow = workflow(&format!(
        r#"
workflow:
  name: limited
  rate_limit: {{per_second: 0.001, burst: 1}}
  routes:
    - name: r
      actions:
        - {{id: first, type: webhook, url: "{url}"}}
        - {{id: second, type: webhook, url: "{url}"}}
        - {{id: audit, type: log}}
"#
    ));
    assert_eq!(metric(&registry, "workflow_rate_limiter_rejected_total"), Some(0.0));
    let outcome = engine.process(&workflow, admit_event()).await;
    let actions = &outcome.routes[0].actions;
    assert_eq!(actions[0].status, ActionStatus::Succeeded);
    assert_eq!((actions[1].status, actions[1].attempts), (ActionStatus::RateLimited, 0));
    assert_eq!(actions[1].error.as_deref(), Some("rate limit of workflow `limited` exceeded"));
    assert_eq!(actions[2].status, ActionStatus::Succeeded, "log actions are not limited");
    assert_eq!(server.count(), 1);
    assert_eq!(metric(&registry, "workflow_rate_limiter_rejected_total"), Some(1.0));
    assert!(outcome.dead_lettered);
    let letters = engine.dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        (letters[0].action.as_str(), letters[0].status),
        ("second", ActionStatus::RateLimited)
    );
    assert_eq!(
        serde_json::to_value(&outcome).unwrap()["routes"][0]["actions"][1]["status"],
        "rate_limited"
    );
}
