//! `keelson up`: the whole control plane on one machine, with an embedded Kubernetes API server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use keelson_embedded::server::{self, RunningServer, ServerConfig, tls::write_secret};
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Settings of `keelson up`.
#[derive(Debug, Clone, clap::Args)]
pub struct UpArgs {
    /// Where state, credentials and the kubeconfig live.
    #[arg(long, env = "KEELSON_DATA_DIR", default_value = ".keelson")]
    pub data_dir: PathBuf,
    /// Address of the Kubernetes API; loopback unless told otherwise.
    #[arg(long, env = "KEELSON_BIND", default_value = "127.0.0.1:6443")]
    pub bind: SocketAddr,
}

/// The file name of the kubeconfig inside the data directory.
pub const KUBECONFIG: &str = "kubeconfig";

/// Starts the API server, writes the kubeconfig and installs Keelson's CRDs.
pub async fn start(args: &UpArgs) -> anyhow::Result<RunningServer> {
    let started = Instant::now();
    let mut config = ServerConfig::new(&args.data_dir);
    config.bind = args.bind;
    let server = server::start(config).await.context("starting the embedded API server")?;
    let kubeconfig = server.kubeconfig();
    write_secret(&args.data_dir.join(KUBECONFIG), &kubeconfig).context("writing the kubeconfig")?;
    let client = client(&kubeconfig).await?;
    install_crds(&client).await?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, url = %server.url(), "control plane up");
    Ok(server)
}

/// A client for a kubeconfig given as YAML.
async fn client(kubeconfig: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).context("parsing the kubeconfig")?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// Server-side applies every Keelson CRD (field manager `keelson`, forced).
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("keelson").force();
    for crd in keelson_api_crds::all_crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .with_context(|| format!("installing CRD {name}"))?;
    }
    Ok(())
}

/// Runs `keelson up` until Ctrl-C.
pub async fn run(args: UpArgs) -> anyhow::Result<()> {
    let server = start(&args).await?;
    // Absolute, so the printed `export` works from any directory.
    let data_dir = std::path::absolute(&args.data_dir).unwrap_or_else(|_| args.data_dir.clone());
    let kubeconfig = data_dir.join(KUBECONFIG);
    println!("Keelson is up.");
    println!("  Kubernetes API  {}", server.url());
    println!("  kubeconfig      {}", kubeconfig.display());
    println!("  data            {}", data_dir.display());
    println!();
    println!("Try:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl apply -R -f examples/");
    println!("  kubectl get keelson");
    println!();
    println!("Press Ctrl-C to stop.");
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    println!("Stopping…");
    server.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
