//! Starting the REST API next to the controllers.

use anyhow::Context;
use keelson_facades::orchestrator::{Orchestrator, Settings};

/// Starts the orchestrator REST API on `listener`; it serves until the task is aborted.
pub async fn spawn(
    client: kube::Client,
    settings: &Settings,
    listener: tokio::net::TcpListener,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let api = Orchestrator::start(client, settings)
        .await
        .context("loading the saved run event histories")?;
    Ok(tokio::spawn(async move {
        if let Err(error) = api.serve(listener).await {
            tracing::error!(%error, "the REST API stopped");
        }
    }))
}
