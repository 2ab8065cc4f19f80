//! `/version`, health, discovery (legacy and aggregated, by `Accept`) and OpenAPI v2 and v3.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::discovery::{self, DiscoveryFormat};
use crate::openapi;

use super::ApiState;
use super::errors::ApiError;
use super::read::json_response;

/// The Kubernetes version the server behaves as (k8s-openapi's `v1_33` types).
const KUBERNETES_MINOR: &str = "33";

/// The checks behind `/healthz`, `/livez` and `/readyz`: the server answers (`ping`), logs
/// (`log`) and holds its store open (`storage`), all true while it serves requests at all.
const HEALTH_CHECKS: [&str; 3] = ["ping", "log", "storage"];

/// `GET /healthz`, `/livez`, `/readyz`: `ok`, or with `?verbose` each check as upstream lists
/// them (`[+]ping ok` … `readyz check passed`).
pub(crate) async fn health(request: axum::extract::Request) -> Response {
    let path = request.uri().path().trim_start_matches('/');
    let verbose = request
        .uri()
        .query()
        .is_some_and(|q| form_urlencoded::parse(q.as_bytes()).any(|(key, _)| key == "verbose"));
    if !verbose {
        return "ok".into_response();
    }
    let mut text: String = HEALTH_CHECKS.iter().map(|check| format!("[+]{check} ok\n")).collect();
    text.push_str(&format!("{path} check passed\n"));
    text.into_response()
}

/// `GET /healthz/<check>`, `/livez/<check>`, `/readyz/<check>`: one check.
pub(crate) async fn health_check(Path(check): Path<String>) -> Response {
    if HEALTH_CHECKS.contains(&check.as_str()) {
        "ok".into_response()
    } else {
        (StatusCode::NOT_FOUND, "404 page not found\n").into_response()
    }
}

/// `GET /version`.
pub(crate) async fn version() -> Response {
    let body = json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0-keelson.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    });
    json_response(StatusCode::OK, &body, &[])
}

fn format_of(headers: &HeaderMap) -> DiscoveryFormat {
    discovery::negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or(""))
}

fn discovery_response(format: DiscoveryFormat, body: Value) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, discovery::content_type(format))], body.to_string())
        .into_response()
}

fn json_text(text: std::sync::Arc<str>) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], text.to_string()).into_response()
}

/// `GET /api`.
pub(crate) async fn api(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    let served = state.registry.served();
    let format = format_of(&headers);
    let body = match format {
        DiscoveryFormat::Legacy => discovery::api_versions(&served.resources),
        aggregated => discovery::aggregated(&served.resources, true, aggregated),
    };
    discovery_response(format, body)
}

/// `GET /apis`.
pub(crate) async fn apis(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    let served = state.registry.served();
    let format = format_of(&headers);
    let body = match format {
        DiscoveryFormat::Legacy => discovery::group_list(&served.resources),
        aggregated => discovery::aggregated(&served.resources, false, aggregated),
    };
    discovery_response(format, body)
}

/// `GET /api/v1`.
pub(crate) async fn core_resources(State(state): State<ApiState>) -> Response {
    let served = state.registry.served();
    match discovery::resource_list(&served.resources, "", "v1") {
        Some(body) => json_response(StatusCode::OK, &body, &[]),
        None => ApiError::no_route("/api/v1").into_response(),
    }
}

/// `GET /apis/<group>`.
pub(crate) async fn group(State(state): State<ApiState>, Path(group): Path<String>) -> Response {
    let served = state.registry.served();
    match discovery::group(&served.resources, &group) {
        Some(body) => json_response(StatusCode::OK, &body, &[]),
        None => ApiError::no_route(&format!("/apis/{group}")).into_response(),
    }
}

/// `GET /apis/<group>/<version>`.
pub(crate) async fn group_version_resources(
    State(state): State<ApiState>,
    Path((group, version)): Path<(String, String)>,
) -> Response {
    let served = state.registry.served();
    match discovery::resource_list(&served.resources, &group, &version) {
        Some(body) => json_response(StatusCode::OK, &body, &[]),
        None => ApiError::no_route(&format!("/apis/{group}/{version}")).into_response(),
    }
}

/// `GET /openapi/v3`.
pub(crate) async fn openapi_index(State(state): State<ApiState>) -> Response {
    json_text(state.registry.served().openapi_index())
}

/// `GET /openapi/v2`: gnostic's protobuf when the client asks for it (kubectl does), else JSON.
pub(crate) async fn openapi_v2(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    let served = state.registry.served();
    let wants_protobuf = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|media| media.split(';').next())
        .any(|media| openapi::v2::PROTOBUF_ACCEPTED.contains(&media.trim()));
    if wants_protobuf {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, openapi::v2::PROTOBUF)],
            served.openapi_v2_protobuf(),
        )
            .into_response()
    } else {
        json_text(served.openapi_v2_json())
    }
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
pub(crate) async fn openapi_document(
    State(state): State<ApiState>,
    Path(gv): Path<String>,
) -> Response {
    let served = state.registry.served();
    let (group, version) = match gv.split('/').collect::<Vec<_>>()[..] {
        ["api", version] => (String::new(), version.to_owned()),
        ["apis", group, version] => (group.to_owned(), version.to_owned()),
        _ => return ApiError::no_route(&format!("/openapi/v3/{gv}")).into_response(),
    };
    match served.openapi_document(&group, &version) {
        Some(document) => json_text(document),
        None => ApiError::no_route(&format!("/openapi/v3/{gv}")).into_response(),
    }
}
