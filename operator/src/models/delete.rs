//! `keelson delete <name>`: deletes a ModelDeployment after asking (its Deployment, Service,
//! benchmark Job and results go with it, by garbage collection). Anything but `y`/`yes` cancels
//! and exits 0; `--yes` (or the reference's `--force`) does not ask.

use keelson_api_crds::serving::ModelDeployment;
use kube::api::{Api, DeleteParams};

use super::{Error, output};
use crate::kube_args::KubeArgs;

/// Settings of `keelson delete`.
#[derive(Debug, Clone, clap::Args)]
pub struct DeleteArgs {
    /// The ModelDeployment.
    pub name: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Do not ask.
    #[arg(short = 'y', long, visible_alias = "force")]
    pub yes: bool,
}

/// What a cancelled deletion prints.
pub const CANCELLED: &str = "Deletion cancelled";

/// The question asked before deleting.
pub fn question(namespace: &str, name: &str) -> String {
    format!("Delete ModelDeployment {namespace}/{name}?")
}

/// Runs `keelson delete`.
pub async fn run(args: DeleteArgs) -> Result<(), Error> {
    let client = args.kube.client().await?;
    let namespace = args.kube.namespace.as_str();
    let name = args.name.as_str();
    super::get_model(&client, namespace, name).await?;
    if !args.yes && !super::confirm(&question(namespace, name), &mut std::io::stdin().lock())? {
        output::print(&format!("{CANCELLED}\n"))?;
        return Ok(());
    }
    let api: Api<ModelDeployment> = Api::namespaced(client, namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(Error::NotFound {
                kind: "ModelDeployment",
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            });
        }
        Err(other) => return Err(anyhow::Error::from(other).context("deleting").into()),
    }
    output::print(&format!("modeldeployment {namespace}/{name} deleted\n"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_the_model() {
        assert_eq!(question("ml", "qwen"), "Delete ModelDeployment ml/qwen?");
    }
}
