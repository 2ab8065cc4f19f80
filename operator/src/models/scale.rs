//! `keelson scale <name> <replicas>`: sets a ModelDeployment's `spec.replicas` (a merge patch
//! of the ModelDeployment, never of its Deployment, which the controller would put back); 0
//! scales the model to zero.

use anyhow::Context;
use keelson_api_crds::serving::ModelDeployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::{Error, output};
use crate::kube_args::KubeArgs;

/// The most replicas a ModelDeployment may ask for (its schema's bound).
pub const MAX_REPLICAS: u32 = 64;

/// Settings of `keelson scale`.
#[derive(Debug, Clone, clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct ScaleArgs {
    /// The ModelDeployment.
    pub name: String,
    /// The number of serving replicas, 0 to 64; 0 scales to zero.
    #[arg(value_parser = clap::value_parser!(u32).range(..=i64::from(MAX_REPLICAS)))]
    pub replicas: u32,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// The merge patch that sets `spec.replicas`.
pub fn patch(replicas: u32) -> Value {
    json!({ "spec": { "replicas": replicas } })
}

/// What `scale` prints once the patch is accepted.
pub fn message(namespace: &str, name: &str, from: i32, to: u32) -> String {
    let zero = if to == 0 { " (scaled to zero: the model stops serving)" } else { "" };
    format!("modeldeployment {namespace}/{name} scaled from {from} to {to}{zero}\n")
}

/// Runs `keelson scale`.
pub async fn run(args: ScaleArgs) -> Result<(), Error> {
    let client = args.kube.client().await?;
    let namespace = args.kube.namespace.as_str();
    let name = args.name.as_str();
    let md = super::get_model(&client, namespace, name).await?;
    let api: Api<ModelDeployment> = Api::namespaced(client, namespace);
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch(args.replicas)))
        .await
        .context("patching the ModelDeployment's spec.replicas")?;
    output::print(&message(namespace, name, md.spec.replicas, args.replicas))?;
    if let Some(group) = md.spec.gpu_group_ref.as_deref().filter(|_| args.replicas > 0) {
        eprintln!("note: GPUGroup {group} decides which of its members holds the GPU");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_sets_spec_replicas() {
        assert_eq!(patch(3), json!({"spec": {"replicas": 3}}));
    }

    #[test]
    fn scaling_to_zero_says_so() {
        assert_eq!(message("ml", "qwen", 1, 3), "modeldeployment ml/qwen scaled from 1 to 3\n");
        assert!(message("ml", "qwen", 1, 0).contains("scaled to zero"));
    }
}
