//! Webhook: a token-protected trigger path that starts runs of a flow.

use kube::{CustomResource, KubeSchema};

use crate::conditions::ObservedConditions;
use serde::{Deserialize, Serialize};

/// A webhook for a flow. The token itself is never stored; the Secret holds its SHA-256 hash.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "workflows.keelson.dev",
    version = "v1alpha1",
    kind = "Webhook",
    doc = "A token-protected trigger path that starts runs of a Flow.",
    namespaced,
    status = "WebhookStatus",
    shortname = "wh",
    category = "keelson",
    printcolumn(name = "Flow", type_ = "string", json_path = ".spec.flowRef"),
    printcolumn(name = "Path", type_ = "string", json_path = ".status.triggerPath"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSpec {
    /// The Flow the webhook starts, in the same namespace.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub flow_ref: String,
    /// The Secret key holding the hex SHA-256 hash of the token.
    pub token_secret_ref: SecretKeyRef,
}

/// A key of a Secret in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Secret name.
    #[schemars(schema_with = "crate::schema::object_name")]
    pub name: String,
    /// Key inside the Secret.
    #[serde(default = "default_key")]
    #[schemars(regex(pattern = r"^[-._a-zA-Z0-9]+$"), length(max = 253))]
    pub key: String,
}

fn default_key() -> String {
    "tokenHash".to_owned()
}

/// Observed state of a webhook.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WebhookStatus {
    /// Conditions and the generation they describe.
    #[serde(flatten)]
    pub observed: ObservedConditions,
    /// Path to POST to, under the REST API: `/api/v1/webhooks/trigger/<flow>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_path: Option<String>,
}
