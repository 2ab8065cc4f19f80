//! `/api/v1/webhooks`: token-protected triggers of flows. A token is generated here, shown
//! once, and stored only as its SHA-256 hash in a Secret that the Webhook references.

use std::collections::BTreeMap;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as Reply};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use keelson_api_crds::workflows as crd;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use subtle::ConstantTimeEq;

use super::Orchestrator;
use super::convert;
use super::model::{ParamValue, Run, WebhookCreated, WebhookInput};
use crate::auth::{Identity, bearer, token};
use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;

/// Largest body a trigger takes.
pub const TRIGGER_BODY_LIMIT: usize = 256 * 1024;
/// Label on a webhook's token Secret naming its webhook.
const WEBHOOK_LABEL: &str = "workflows.keelson.dev/webhook";

/// Creates a webhook for a flow; the answer holds its token, shown only this once.
#[utoipa::path(post, path = "/api/v1/webhooks", tag = "webhooks", request_body = WebhookInput,
    responses((status = 201, description = "The webhook and its token", body = WebhookCreated),
        (status = 404, description = "The flow does not exist", body = ErrorBody)))]
pub async fn create_webhook(
    State(api): State<Orchestrator>,
    Extension(who): Extension<Identity>,
    Json(input): Json<WebhookInput>,
) -> Result<Response, ApiError> {
    api.flow(&input.flow_id)?;
    let id = convert::id_or_new(None, "webhook")?;
    let value = token::generate(token::WEBHOOK_TOKEN_PREFIX).map_err(|e| ApiError::internal(&e))?;
    let mut secret_meta = convert::new_meta(&format!("{id}-token"), None, &who.name);
    secret_meta.labels = Some(BTreeMap::from([(WEBHOOK_LABEL.to_owned(), id.clone())]));
    let secret = Secret {
        metadata: secret_meta,
        data: Some(BTreeMap::from([(
            token::HASH_KEY.to_owned(),
            ByteString(token::hash(&value).into_bytes()),
        )])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    let secrets: Api<Secret> = api.api();
    let secret = secrets
        .create(&PostParams::default(), &secret)
        .await
        .map_err(|e| ApiError::from_kube("secret", &id, e))?;
    let webhook = crd::Webhook {
        metadata: convert::new_meta(&id, None, &who.name),
        spec: crd::WebhookSpec {
            flow_ref: input.flow_id.clone(),
            token_secret_ref: crd::SecretKeyRef {
                name: secret.name_any(),
                key: token::HASH_KEY.into(),
            },
        },
        status: None,
    };
    if let Err(error) = api.create(&api.webhooks, "webhook", webhook).await {
        let _ = secrets.delete(&secret.name_any(), &DeleteParams::default()).await;
        return Err(error);
    }
    let created = WebhookCreated {
        trigger_url: convert::trigger_url(&input.flow_id),
        flow_id: input.flow_id,
        token: value,
        id,
    };
    Ok((StatusCode::CREATED, Reply(created)).into_response())
}

/// Starts a run of the flow. The token comes in `X-Webhook-Token` or as a Bearer token; a
/// JSON object body (at most 256 KiB) gives the run's parameters. A missing or wrong token
/// answers 401 whether or not the flow exists.
#[utoipa::path(post, path = "/api/v1/webhooks/trigger/{flowId}", tag = "webhooks",
    request_body(content = Option<BTreeMap<String, ParamValue>>, description = "Run parameters"),
    params(("flowId" = String, Path, description = "Flow id"),
        ("X-Webhook-Token" = Option<String>, Header, description = "The webhook's token")),
    security(("webhook_token" = []), ("bearer" = [])),
    responses((status = 201, description = "The started run", body = Run),
        (status = 401, description = "Missing or wrong token", body = ErrorBody),
        (status = 404, description = "The webhook's flow was deleted", body = ErrorBody)))]
pub async fn trigger(
    State(api): State<Orchestrator>,
    Path(flow): Path<String>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    let presented = headers
        .get("x-webhook-token")
        .and_then(|value| value.to_str().ok())
        .or_else(|| bearer(&headers))
        .ok_or_else(|| ApiError::unauthorized("send the webhook's token as X-Webhook-Token"))?;
    let webhook = api
        .webhook_for(&flow, presented)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the webhook token is not valid for this path"))?;
    let body = axum::body::to_bytes(request.into_body(), TRIGGER_BODY_LIMIT)
        .await
        .map_err(|_| ApiError::too_large())?;
    let params: BTreeMap<String, ParamValue> = if body.iter().all(u8::is_ascii_whitespace) {
        BTreeMap::new()
    } else {
        serde_json::from_slice(&body).map_err(|error| {
            ApiError::bad_request(format!(
                "the body must be a JSON object of parameter values (text, numbers or booleans): {error}"
            ))
        })?
    };
    if api.flows.get(&flow).is_none() {
        return Err(ApiError::not_found("flow", &flow));
    }
    let creator = format!("webhook:{webhook}");
    let run = api.start_flow(&flow, convert::params(params), None, &creator).await?;
    Ok((StatusCode::CREATED, Reply(api.show_run(&run))).into_response())
}

impl Orchestrator {
    /// The webhook of `flow` whose token is `presented`: the hashes are compared in constant
    /// time, against every webhook of the flow.
    async fn webhook_for(&self, flow: &str, presented: &str) -> Result<Option<String>, ApiError> {
        let presented = token::hash(presented);
        let secrets: Api<Secret> = self.api();
        let mut found = None;
        for webhook in self.webhooks.all().iter().filter(|w| w.spec.flow_ref == flow) {
            let reference = &webhook.spec.token_secret_ref;
            let secret = match secrets.get_opt(&reference.name).await {
                Ok(secret) => secret,
                Err(error) => return Err(ApiError::from_kube("secret", &reference.name, error)),
            };
            let stored = secret
                .and_then(|s| s.data)
                .and_then(|mut data| data.remove(&reference.key))
                .map(|bytes| String::from_utf8_lossy(&bytes.0).trim().to_ascii_lowercase())
                .unwrap_or_default();
            if bool::from(stored.as_bytes().ct_eq(presented.as_bytes())) {
                found = Some(webhook.name_any());
            }
        }
        Ok(found)
    }
}
