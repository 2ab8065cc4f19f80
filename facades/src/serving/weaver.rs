//! `GET /api/weaver/status`: the last weaver model preflight, as kept in a ModelRouting's
//! status.

use std::sync::Arc;

use axum::Json as Reply;
use axum::extract::State;
use keelson_api_crds::serving::ModelRouting;
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::Serving;
use crate::error::{ApiError, ErrorBody};
use crate::extract::Query;

/// Which ModelRouting to show.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQuery {
    /// The ModelRouting's name; may be left out when the namespace holds exactly one.
    pub name: Option<String>,
}

/// The weaver status object.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct WeaverStatus {
    /// True when the catalog could not be read or a configured model is missing.
    pub degraded: bool,
    /// Configured models the catalog does not advertise, sorted.
    pub missing_models: Vec<String>,
    /// Why the catalog could not be read; absent when it could.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_error: Option<String>,
    /// Configured models the catalog advertises, sorted.
    pub ready_models: Vec<String>,
    /// Models the catalog advertised.
    pub catalog_size: i32,
    /// When the preflight ran (RFC 3339); null before the first one.
    pub checked_at: Option<String>,
}

impl WeaverStatus {
    /// The status object of `routing`.
    pub fn of(routing: &ModelRouting) -> Self {
        let status = routing.status.clone().unwrap_or_default();
        Self {
            degraded: status.degraded,
            missing_models: status.missing_models,
            catalog_error: status.catalog_error.filter(|e| !e.is_empty()),
            ready_models: status.ready_models,
            catalog_size: status.catalog_size,
            checked_at: status.checked_at.map(|t| t.0.to_string()),
        }
    }
}

/// The routing named `name`, else the only one; 404 when there is none, 409 naming them when
/// there are several and none was named.
pub fn pick(
    routings: Vec<Arc<ModelRouting>>,
    name: Option<&str>,
) -> Result<Arc<ModelRouting>, ApiError> {
    if let Some(name) = name {
        return routings
            .into_iter()
            .find(|r| r.name_any() == name)
            .ok_or_else(|| ApiError::not_found("ModelRouting", name));
    }
    let mut names: Vec<String> = routings.iter().map(|r| r.name_any()).collect();
    match <[Arc<ModelRouting>; 1]>::try_from(routings) {
        Ok([only]) => Ok(only),
        Err(none) if none.is_empty() => {
            let mut error = ApiError::not_found("ModelRouting", "");
            error.message = "no ModelRouting exists; create one (see examples/serving)".to_owned();
            Err(error)
        }
        Err(_) => {
            names.sort();
            Err(ApiError::conflict(format!(
                "several ModelRoutings exist ({}); pick one with ?name=",
                names.join(", ")
            )))
        }
    }
}

/// The last model preflight of the weaver: which configured models the catalog serves.
/// `degraded` is true when `catalog_error` is set or `missing_models` is not empty.
#[utoipa::path(get, path = "/api/weaver/status", tag = "weaver", params(StatusQuery),
    responses((status = 200, description = "The preflight status", body = WeaverStatus),
        (status = 404, description = "No such ModelRouting, or none at all", body = ErrorBody),
        (status = 409, description = "Several ModelRoutings and none named", body = ErrorBody)))]
pub async fn status(
    State(serving): State<Serving>,
    Query(query): Query<StatusQuery>,
) -> Result<Reply<WeaverStatus>, ApiError> {
    if !serving.0.routings.is_ready() {
        return Err(ApiError::unavailable("the ModelRouting cache has not synced yet", Vec::new()));
    }
    let routing = pick(serving.0.routings.all(), query.name.as_deref())?;
    Ok(Reply(WeaverStatus::of(&routing)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn routing(name: &str, status: serde_json::Value) -> Arc<ModelRouting> {
        let mut r = ModelRouting::new(name, Default::default());
        r.status = Some(serde_json::from_value(status).unwrap());
        Arc::new(r)
    }

    #[test]
    fn the_status_object_is_snake_case_without_an_empty_error() {
        let r = routing(
            "w",
            serde_json::json!({"degraded": true, "missingModels": ["b"],
            "readyModels": ["a"], "catalogSize": 3, "checkedAt": "2025-01-02T03:04:05Z"}),
        );
        let json = serde_json::to_value(WeaverStatus::of(&r)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"degraded": true, "missing_models": ["b"],
            "ready_models": ["a"], "catalog_size": 3, "checked_at": "2025-01-02T03:04:05Z"})
        );
        let r = routing(
            "w",
            serde_json::json!({"degraded": true, "missingModels": ["b"],
            "catalogError": "GET x: refused"}),
        );
        let json = serde_json::to_value(WeaverStatus::of(&r)).unwrap();
        assert_eq!(json["catalog_error"], "GET x: refused");
        assert_eq!(json["ready_models"], serde_json::json!([]));
    }

    #[test]
    fn one_is_picked_by_name_or_alone() {
        let a = routing("a", serde_json::json!({}));
        let b = routing("b", serde_json::json!({}));
        assert_eq!(pick(vec![a.clone()], None).unwrap().name_any(), "a");
        assert_eq!(pick(vec![a.clone(), b.clone()], Some("b")).unwrap().name_any(), "b");
        let error = pick(vec![b.clone(), a.clone()], None).unwrap_err();
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert!(error.message.contains("(a, b)"), "{}", error.message);
        assert_eq!(pick(vec![a], Some("c")).unwrap_err().status, StatusCode::NOT_FOUND);
        assert_eq!(pick(Vec::new(), None).unwrap_err().status, StatusCode::NOT_FOUND);
    }
}
