//! The model-serving endpoints: `GET /v1/models`, Keelson's model catalog in the OpenAI
//! shape (the served names and aliases of Ready ModelDeployments), and `GET
//! /api/weaver/status`, the weaver model preflight's result kept in a ModelRouting's status.
//! Both read watch-fed caches of the API namespace and need a bearer token (read scope is
//! enough).

pub mod catalog;
pub mod weaver;

use std::sync::Arc;

use axum::Router;
use keelson_api_crds::serving::{ModelDeployment, ModelRouting};
use kube::runtime::watcher;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{self, Authenticator};
use crate::orchestrator::cache::Cache;

/// The serving endpoints' state: caches of ModelDeployments and ModelRoutings.
#[derive(Clone)]
pub struct Serving(Arc<Inner>);

/// See [`Serving`].
pub struct Inner {
    deployments: Cache<ModelDeployment>,
    routings: Cache<ModelRouting>,
}

impl Serving {
    /// Starts watching the ModelDeployments and ModelRoutings of `namespace`.
    pub fn start(client: kube::Client, namespace: &str) -> Self {
        let all = watcher::Config::default;
        Self(Arc::new(Inner {
            deployments: Cache::start("model deployments", client.clone(), namespace, all()),
            routings: Cache::start("model routings", client, namespace, all()),
        }))
    }

    /// The routes, behind a bearer token.
    pub fn router(&self, auth: Authenticator) -> Router {
        api_router()
            .split_for_parts()
            .0
            .route_layer(axum::middleware::from_fn_with_state(auth, auth::require_token))
            .with_state(self.clone())
    }

    /// The model ids `GET /v1/models` lists, or why they cannot be listed yet (the cache has
    /// not synced): the in-process catalog of the weaver preflight.
    pub fn model_ids(&self) -> Result<Vec<String>, String> {
        if !self.0.deployments.is_ready() {
            return Err("Keelson's model catalog has not synced yet".to_owned());
        }
        Ok(catalog::entries(&self.0.deployments.all()).into_iter().map(|m| m.id).collect())
    }

    /// The caches whose first list has not arrived.
    pub fn unsynced_caches(&self) -> Vec<&'static str> {
        [&self.0.deployments.name(), &self.0.routings.name()]
            .into_iter()
            .zip([self.0.deployments.is_ready(), self.0.routings.is_ready()])
            .filter(|(_, ready)| !ready)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// The documented routes.
pub(crate) fn api_router() -> OpenApiRouter<Serving> {
    OpenApiRouter::new().routes(routes!(catalog::list_models)).routes(routes!(weaver::status))
}
