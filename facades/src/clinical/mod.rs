//! The clinical integration endpoints (docs/clinical-api.md): `POST /api/v1/parse` turns one
//! HL7v2 message into canonical events, warnings and lineage; `POST /api/v1/workflow` runs
//! events through the legacy in-process workflow engine and answers with every route's and
//! action's outcome. Message text is never logged nor echoed in errors.

mod message;
pub mod model;
mod parse;
mod workflow;
pub mod workflows;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use keelson_integration::engine::Engine;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{self, Authenticator};
pub use workflows::{Settings, Workflows};

/// Largest body of the clinical endpoints: a message of the parser's 1 MiB limit, JSON-escaped.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The clinical endpoints' state: the workflow engine and where workflows come from.
#[derive(Clone)]
pub struct Clinical(Arc<Inner>);

/// See [`Clinical`].
pub struct Inner {
    engine: Engine,
    workflows: Workflows,
}

impl Clinical {
    /// The endpoints, running events through `engine` with the workflows of `workflows`.
    pub fn new(engine: Engine, workflows: Workflows) -> Self {
        Self(Arc::new(Inner { engine, workflows }))
    }

    /// The routes: parsing for any token, processing for write tokens.
    pub fn router(&self, auth: Authenticator) -> Router {
        let any_token = axum::middleware::from_fn_with_state(auth.clone(), auth::require_any_token);
        let write_token = axum::middleware::from_fn_with_state(auth, auth::require_token);
        parse_routes()
            .split_for_parts()
            .0
            .route_layer(any_token)
            .merge(workflow_routes().split_for_parts().0.route_layer(write_token))
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            .with_state(self.clone())
    }
}

fn parse_routes() -> OpenApiRouter<Clinical> {
    OpenApiRouter::new().routes(routes!(parse::parse))
}

fn workflow_routes() -> OpenApiRouter<Clinical> {
    OpenApiRouter::new().routes(routes!(workflow::process))
}

/// The documented routes, for the OpenAPI document.
pub(crate) fn api_router() -> OpenApiRouter<Clinical> {
    parse_routes().merge(workflow_routes())
}
