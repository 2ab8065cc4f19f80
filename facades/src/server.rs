//! The whole HTTP API on one port: the orchestrator REST API, the clinical endpoints, the model
//! catalog and the weaver status, with
//! one error shape for unknown paths and methods, body limits, request metrics and one
//! OpenAPI 3.1 document (docs/openapi.json).

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::clinical::{self, Clinical};
use crate::error::{self, ApiError};
use crate::metrics::{self, HttpMetrics};
use crate::orchestrator::{self, Orchestrator};
use crate::serving::{self, Serving};

/// Largest request body, except webhook triggers (256 KiB) and clinical messages (2 MiB).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Every route of the API, measured by `metrics`.
pub fn router(
    orchestrator: &Orchestrator,
    clinical: &Clinical,
    serving: &Serving,
    metrics: &HttpMetrics,
) -> Router {
    orchestrator
        .router()
        .merge(clinical.router(orchestrator.authenticator().clone()))
        .merge(serving.router(orchestrator.authenticator().clone()))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(metrics.clone(), metrics::track))
}

/// The OpenAPI 3.1 document of the API.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    document.merge(orchestrator::documented_routes().split_for_parts().1);
    document.merge(clinical::api_router().split_for_parts().1);
    document.merge(serving::api_router().split_for_parts().1);
    common_errors(&mut document);
    document
}

/// The OpenAPI document as pretty JSON, as checked in as docs/openapi.json.
pub fn openapi_json() -> String {
    serde_json::to_string_pretty(&openapi()).unwrap_or_default()
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Keelson API",
        description = "Workflow orchestration (runs, flows, agents, webhooks, schedules, Job status; see docs/orchestrator-api.md) clinical message parsing and workflow processing (see docs/clinical-api.md), and model serving: the model catalog and the weaver model preflight status (see docs/weaver.md).",
        license(name = "Apache-2.0")
    ),
    modifiers(&Security),
    security(("bearer" = [])),
    components(schemas(error::ErrorBody, orchestrator::model::RunEvent))
)]
struct ApiDoc;

/// Declares the bearer and webhook token schemes.
struct Security;

impl utoipa::Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "webhook_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Webhook-Token"))),
        );
    }
}

/// Adds the errors every operation can answer, so clients and schema checks know their shape:
/// 400, 413 and 415 where there is a body or query, 401/403/429 behind a token, 503 always.
fn common_errors(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, ResponseBuilder, content::ContentBuilder};
    let error = |description: &str| -> RefOr<utoipa::openapi::Response> {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(utoipa::openapi::Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build(),
        )
    };
    for (path, item) in document.paths.paths.iter_mut() {
        let public = ["/health", "/healthz", "/ready"].contains(&path.as_str())
            || path.starts_with("/api/v1/webhooks/trigger");
        let operations =
            [item.get.as_mut(), item.post.as_mut(), item.put.as_mut(), item.delete.as_mut()];
        for operation in operations.into_iter().flatten() {
            let responses = &mut operation.responses.responses;
            let mut add = |code: &str, description: &str| {
                responses.entry(code.to_owned()).or_insert_with(|| error(description));
            };
            if !path.starts_with("/health") {
                add("400", "The request is malformed or invalid; details name the fields");
                add("503", "The Kubernetes API is not available");
            }
            if operation.request_body.is_some() {
                add("413", "The body is too large");
                add("415", "The body's media type is not accepted");
            }
            if !public {
                add("401", "No valid bearer token");
                add("403", "The token may not do this");
                add("429", "Too many requests for this token; see Retry-After");
            }
        }
    }
}

async fn no_route(uri: Uri) -> ApiError {
    ApiError::no_route(uri.path())
}

/// 405 with the `Allow` header of the path's documented methods.
async fn method_not_allowed(path: Option<axum::extract::MatchedPath>) -> ApiError {
    static ALLOWED: std::sync::LazyLock<BTreeMap<String, String>> =
        std::sync::LazyLock::new(|| {
            let document = serde_json::to_value(openapi()).unwrap_or_default();
            let paths = document["paths"].as_object().cloned().unwrap_or_default();
            paths
                .into_iter()
                .map(|(path, item)| {
                    let methods: Vec<String> = ["get", "put", "post", "delete"]
                        .into_iter()
                        .filter(|m| item.get(m).is_some())
                        .map(str::to_uppercase)
                        .collect();
                    (path, methods.join(","))
                })
                .collect()
        });
    let allow = path.and_then(|p| ALLOWED.get(p.as_str()).cloned()).unwrap_or_default();
    ApiError::method_not_allowed(&allow)
}
