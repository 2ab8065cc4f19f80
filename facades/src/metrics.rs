//! Prometheus metrics: the HTTP request metrics of the API and the `/metrics` endpoint that
//! serves them with every other metric of the process (the workflow engine's), in the
//! OpenMetrics text format Prometheus scrapes.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The OpenMetrics media type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of `http_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    /// The route template (`/api/v1/runs/{id}`), never the concrete path, so ids don't
    /// multiply series; `unmatched` for paths without a route.
    route: String,
    status: String,
}

/// Labels of `http_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

type DurationFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// `http_requests_total{method,route,status}` and `http_request_duration_seconds{method,route}`.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: DurationFamily,
}

impl HttpMetrics {
    /// Registers the request metrics in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let duration: DurationFamily =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.0, 16)));
        registry.register("http_requests", "HTTP requests answered by the API", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to answer HTTP requests (to the start of the response body)",
            duration.clone(),
        );
        Self { requests, duration }
    }
}

/// Middleware: counts and times every request by method, route template and status.
pub async fn track(State(metrics): State<HttpMetrics>, request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    let labels = RouteLabels { method, route };
    metrics.duration.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    let RouteLabels { method, route } = labels;
    let status = response.status().as_u16().to_string();
    metrics.requests.get_or_create(&RequestLabels { method, route, status }).inc();
    response
}

/// `GET /metrics`: every metric of `registry`.
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new().route("/metrics", axum::routing::get(move || async move { encode(&registry) }))
}

fn encode(registry: &Registry) -> Response {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keelson_integration::engine::{Engine, EngineSettings, Workflow};
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct RuleFile {
        groups: Vec<Group>,
    }

    #[derive(Deserialize)]
    struct Group {
        rules: Vec<Rule>,
    }

    #[derive(Deserialize)]
    struct Rule {
        alert: String,
        expr: String,
        labels: std::collections::BTreeMap<String, String>,
        annotations: std::collections::BTreeMap<String, String>,
    }

    fn rules() -> Vec<Rule> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/alerts/workflow-rules.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        let file: RuleFile = serde_saphyr::from_str(&text).unwrap();
        file.groups.into_iter().flat_map(|group| group.rules).collect()
    }

    /// The exposition text of a registry holding the engine's and the API's metrics, after
    /// the engine failed to reach a destination (families without samples are not exposed).
    async fn exposition() -> String {
        let mut registry = Registry::default();
        HttpMetrics::register(&mut registry);
        let engine = Engine::new(EngineSettings::default(), &mut registry).unwrap();
        let workflow = Workflow::from_yaml(
            "workflow:
  name: unreachable
  version: '1'
  routes:
    - name: all
      actions:
        - {id: notify, type: webhook, url: 'http://127.0.0.1:1/', timeout: 1s}
  retry: {max_attempts: 1}
",
        )
        .unwrap();
        let outcome = engine.process(&workflow, serde_json::json!({"type": "x"})).await;
        assert!(outcome.dead_lettered);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn the_alert_rules_have_the_spec_thresholds() {
        let rules = rules();
        let spec = [
            ("workflow_events_in_progress", "> 100"),
            ("workflow_action_duration_seconds_bucket", "> 1"),
            ("workflow_action_errors_total", "> 0.01"),
            ("workflow_dlq_size", "> 100"),
            ("workflow_circuit_breaker_state", "== 2"),
            ("workflow_rate_limiter_rejected_total", "> 10"),
        ];
        for (metric, threshold) in spec {
            let rule = rules
                .iter()
                .find(|rule| rule.expr.contains(metric))
                .unwrap_or_else(|| panic!("no rule on {metric}"));
            assert!(
                rule.expr.ends_with(threshold),
                "{}: {} lacks {threshold}",
                rule.alert,
                rule.expr
            );
            assert!(rule.labels.contains_key("severity"), "{} has no severity", rule.alert);
            assert!(rule.annotations.contains_key("summary"), "{} has no summary", rule.alert);
        }
        let latency = rules.iter().find(|r| r.expr.contains("duration_seconds")).unwrap();
        assert!(latency.expr.starts_with("histogram_quantile(0.99,"), "{}", latency.expr);
        assert_eq!(rules.len(), spec.len());
    }

    #[tokio::test]
    async fn every_metric_an_alert_reads_is_exposed() {
        let text = exposition().await;
        for rule in rules() {
            let metrics = rule
                .expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|word| word.starts_with("workflow_"));
            for sample in metrics {
                let family = sample
                    .strip_suffix("_bucket")
                    .or_else(|| sample.strip_suffix("_total"))
                    .unwrap_or(sample);
                assert!(
                    text.contains(&format!("# TYPE {family} ")),
                    "{}: {sample} is not exposed:\n{text}",
                    rule.alert
                );
            }
        }
    }

    #[tokio::test]
    async fn requests_are_counted_by_route_template() {
        let mut registry = Registry::default();
        let metrics = HttpMetrics::register(&mut registry);
        let app = Router::new()
            .route("/items/{id}", axum::routing::get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(metrics, track));
        for path in ["/items/1", "/items/2", "/nothing"] {
            let request = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
            tower::ServiceExt::oneshot(app.clone(), request).await.unwrap();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                r#"http_requests_total{method="GET",route="/items/{id}",status="200"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"http_requests_total{method="GET",route="unmatched",status="404"} 1"#),
            "{text}"
        );
    }
}
