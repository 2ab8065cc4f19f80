//! Where the workflow of an event comes from: the Integration resource named by the request
//! (its `spec.workflow.id` names a ConfigMap holding `workflow.yaml`), else the default
//! workflow file of `KEELSON_WORKFLOW_CONFIG`.

use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use keelson_api_crds::integration::Integration;
use keelson_integration::engine::Workflow;
use kube::Api;
use kube::api::ListParams;

use crate::error::{ApiError, ErrorDetail};

/// The key of a workflow ConfigMap that holds the definition.
pub const WORKFLOW_KEY: &str = "workflow.yaml";

/// Settings of the clinical endpoints.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The default workflow, read from `KEELSON_WORKFLOW_CONFIG` at startup.
    pub default_workflow: Option<Arc<Workflow>>,
}

impl Settings {
    /// Reads and checks the workflow file of `KEELSON_WORKFLOW_CONFIG`, if set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Vec<String>> {
        let Some(path) = lookup("KEELSON_WORKFLOW_CONFIG").filter(|p| !p.is_empty()) else {
            return Ok(Self::default());
        };
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|error| {
            vec![format!("KEELSON_WORKFLOW_CONFIG={}: cannot read it: {error}", path.display())]
        })?;
        let workflow = Workflow::from_yaml(&text).map_err(|error| {
            vec![format!("KEELSON_WORKFLOW_CONFIG={}: {error}", path.display())]
        })?;
        Ok(Self { default_workflow: Some(Arc::new(workflow)) })
    }
}

/// Finds the workflow of a request.
#[derive(Clone)]
pub struct Workflows {
    client: kube::Client,
    namespace: String,
    default: Option<Arc<Workflow>>,
}

impl Workflows {
    /// Workflows of Integrations in `namespace`, and `settings`' default one.
    pub fn new(client: kube::Client, namespace: &str, settings: Settings) -> Self {
        Self { client, namespace: namespace.to_owned(), default: settings.default_workflow }
    }

    /// The workflow of `integration_id`, or the default one.
    pub async fn resolve(&self, integration_id: Option<&str>) -> Result<Arc<Workflow>, ApiError> {
        let Some(id) = integration_id else {
            return self.default.clone().ok_or_else(|| {
                ApiError::conflict(
                    "no default workflow is configured (KEELSON_WORKFLOW_CONFIG); name an integration_id",
                )
            });
        };
        let integrations: Api<Integration> = Api::namespaced(self.client.clone(), &self.namespace);
        let list = integrations
            .list(&ListParams::default())
            .await
            .map_err(|error| ApiError::from_kube("integration", id, error))?;
        let integration = list
            .items
            .into_iter()
            .find(|i| i.spec.integration_id == id)
            .ok_or_else(|| ApiError::not_found("integration", id))?;
        let name = integration.spec.workflow.id;
        let maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let missing = || {
            ApiError::not_found(
                "workflow",
                &format!(
                    "{name} (a ConfigMap {name} with key {WORKFLOW_KEY}, for integration {id})"
                ),
            )
        };
        let map =
            maps.get_opt(&name).await.map_err(|e| ApiError::from_kube("workflow", &name, e))?;
        let text = map.and_then(|m| m.data?.remove(WORKFLOW_KEY)).ok_or_else(missing)?;
        let workflow = Workflow::from_yaml(&text).map_err(|error| {
            ApiError::unprocessable(
                "INVALID_WORKFLOW",
                format!("the workflow {name:?} of integration {id:?} is not valid"),
                vec![ErrorDetail { code: None, field: None, message: error.to_string() }],
            )
        })?;
        Ok(Arc::new(workflow))
    }
}
