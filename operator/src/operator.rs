//! `keelson operator`: the controllers, the HTTP API and metrics against a real cluster.

use std::net::SocketAddr;

use anyhow::Context;

/// Settings of `keelson operator`.
#[derive(Debug, Clone, clap::Args)]
pub struct OperatorArgs {
    /// Address of the HTTP API (`/api/v1`: orchestrator and clinical endpoints).
    #[arg(long, env = "KEELSON_API_BIND", default_value = "0.0.0.0:8080")]
    pub api_bind: SocketAddr,
    /// Address of the Prometheus metrics endpoint (`/metrics`).
    #[arg(long, env = "KEELSON_METRICS_BIND", default_value = "0.0.0.0:9090")]
    pub metrics_bind: SocketAddr,
}

/// Runs the controllers and the REST API until Ctrl-C or SIGTERM. The cluster comes from the
/// in-cluster service account, else from `KUBECONFIG` or `~/.kube/config`.
pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let settings = crate::api::Settings::from_env()?;
    let client = crate::kube_args::inferred_client()
        .await
        .context("connecting to the cluster (in-cluster service account or KUBECONFIG)")?;
    let listeners = crate::api::Listeners::bind(args.api_bind, args.metrics_bind).await?;
    let tasks = crate::api::spawn(client, settings, listeners).await?;
    tracing::info!(api = %args.api_bind, metrics = %args.metrics_bind, "operator running");
    crate::up::stop_requested().await?;
    for task in tasks {
        task.abort();
    }
    Ok(())
}
