//! `keelson operator`: the controllers and the REST API against a real cluster.

use std::net::SocketAddr;

use anyhow::Context;

/// Settings of `keelson operator`.
#[derive(Debug, Clone, clap::Args)]
pub struct OperatorArgs {
    /// Address of the orchestrator REST API (`/api/v1`).
    #[arg(long, env = "KEELSON_API_BIND", default_value = "0.0.0.0:8080")]
    pub api_bind: SocketAddr,
}

/// Runs the controllers and the REST API until Ctrl-C or SIGTERM. The cluster comes from the
/// in-cluster service account, else from `KUBECONFIG` or `~/.kube/config`.
pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let env = |key: &str| std::env::var(key).ok();
    let workflow_settings = keelson_controllers::workflows::settings::Settings::from_lookup(env)
        .map_err(|problems| anyhow::anyhow!(problems.join("\n")))?;
    let api_settings = keelson_facades::orchestrator::Settings::from_lookup(env)
        .map_err(|problems| anyhow::anyhow!(problems.join("\n")))?;
    let client = kube::Client::try_default()
        .await
        .context("connecting to the cluster (in-cluster service account or KUBECONFIG)")?;
    let listener = tokio::net::TcpListener::bind(args.api_bind)
        .await
        .with_context(|| format!("listening for the REST API on {}", args.api_bind))?;
    let serving = keelson_controllers::serving::settings::Settings::from_env();
    let mut tasks = keelson_controllers::serving::spawn(client.clone(), serving);
    tasks.extend(keelson_controllers::workflows::spawn(client.clone(), workflow_settings));
    tasks.push(crate::api::spawn(client, &api_settings, listener).await?);
    tracing::info!(api = %args.api_bind, "operator running");
    crate::up::stop_requested().await?;
    for task in tasks {
        task.abort();
    }
    Ok(())
}
