//! `GET /v1/models`: Keelson's model catalog in the OpenAI list shape. A ModelDeployment
//! whose `Ready` condition is true and whose gateway publication is on (`spec.litellm.enabled`
//! not false) contributes its served name (`spec.litellm.servedModelName`, else its name)
//! and its `spec.litellm.aliases`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json as Reply;
use axum::extract::State;
use keelson_api_crds::conditions::{READY, is_true};
use keelson_api_crds::serving::ModelDeployment;
use kube::ResourceExt;
use serde::Serialize;
use utoipa::ToSchema;

use super::Serving;
use crate::error::{ApiError, ErrorBody};

/// The catalog: every model id served.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: &'static str,
    /// The models, by id.
    pub data: Vec<Model>,
}

/// One model id of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Model {
    /// The name clients ask for: a served model name or an alias.
    pub id: String,
    /// Always `model`.
    pub object: &'static str,
    /// When the ModelDeployment serving it was created, in Unix seconds.
    pub created: i64,
    /// Always `keelson`.
    pub owned_by: &'static str,
}

/// The catalog entries of `deployments`, sorted by id; an id served twice is listed once (the
/// older deployment's).
pub fn entries(deployments: &[Arc<ModelDeployment>]) -> Vec<Model> {
    let mut models: BTreeMap<String, Model> = BTreeMap::new();
    let mut serving: Vec<&Arc<ModelDeployment>> = deployments
        .iter()
        .filter(|md| md.status.as_ref().is_some_and(|s| is_true(&s.observed.conditions, READY)))
        .filter(|md| md.spec.litellm.as_ref().is_none_or(|l| l.enabled))
        .collect();
    serving.sort_by_key(|md| (created(md), md.name_any()));
    for md in serving {
        let litellm = md.spec.litellm.as_ref();
        let served =
            litellm.and_then(|l| l.served_model_name.clone()).unwrap_or_else(|| md.name_any());
        let aliases = litellm.map(|l| l.aliases.clone()).unwrap_or_default();
        for id in std::iter::once(served).chain(aliases).filter(|id| !id.is_empty()) {
            models.entry(id.clone()).or_insert(Model {
                id,
                object: "model",
                created: created(md),
                owned_by: "keelson",
            });
        }
    }
    models.into_values().collect()
}

fn created(md: &ModelDeployment) -> i64 {
    md.metadata.creation_timestamp.as_ref().map_or(0, |t| t.0.as_second())
}

/// Lists the models Keelson serves: the served names and aliases of Ready ModelDeployments
/// (in the API namespace) whose gateway publication is on. This is the catalog the weaver
/// preflight checks against when no other is configured.
#[utoipa::path(get, path = "/v1/models", tag = "models",
    responses((status = 200, description = "The model catalog", body = ModelList),
        (status = 503, description = "The catalog has not synced yet", body = ErrorBody)))]
pub async fn list_models(State(serving): State<Serving>) -> Result<Reply<ModelList>, ApiError> {
    if !serving.0.deployments.is_ready() {
        return Err(ApiError::unavailable("the model catalog has not synced yet", Vec::new()));
    }
    Ok(Reply(ModelList { object: "list", data: entries(&serving.0.deployments.all()) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(yaml: &str, ready: bool) -> Arc<ModelDeployment> {
        let mut md: ModelDeployment = serde_saphyr::from_str(yaml).unwrap();
        let status = if ready { "True" } else { "False" };
        md.status = Some(
            serde_json::from_value(serde_json::json!({"conditions": [{
                "type": "Ready", "status": status, "reason": "R", "message": "",
                "lastTransitionTime": "2025-01-01T00:00:00Z"}]}))
            .unwrap(),
        );
        Arc::new(md)
    }

    const HEAD: &str =
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n";

    #[test]
    fn ready_published_models_with_their_aliases() {
        let models = [
            md(
                &format!(
                    "{HEAD}  name: qwen\nspec:\n  backend: vllm\n  model: Qwen/Qwen2.5-7B\n  litellm:\n    servedModelName: qwen2.5-7b\n    aliases: [qwen-chat]\n"
                ),
                true,
            ),
            md(&format!("{HEAD}  name: llama\nspec:\n  backend: vllm\n  model: m\n"), true),
            md(&format!("{HEAD}  name: pending\nspec:\n  backend: vllm\n  model: m\n"), false),
            md(
                &format!(
                    "{HEAD}  name: hidden\nspec:\n  backend: vllm\n  model: m\n  litellm: {{enabled: false}}\n"
                ),
                true,
            ),
            md(
                &format!(
                    "{HEAD}  name: twin\nspec:\n  backend: vllm\n  model: m\n  litellm: {{aliases: [qwen-chat]}}\n"
                ),
                true,
            ),
        ];
        let ids: Vec<String> = entries(&models).into_iter().map(|m| m.id).collect();
        assert_eq!(ids, ["llama", "qwen-chat", "qwen2.5-7b", "twin"]);
        let entry = &entries(&models)[0];
        assert_eq!((entry.object, entry.owned_by), ("model", "keelson"));
    }
}
