//! The cluster flags the model-serving commands share (`-n`, `-A`, `--kubeconfig`), and the
//! client they make.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The namespace the model-serving commands use without `-n`.
pub const DEFAULT_NAMESPACE: &str = "keelson-system";

/// Which cluster and namespace a command acts on; flatten it into a command's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct KubeArgs {
    /// The namespace.
    #[arg(short = 'n', long, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// Every namespace (for the commands that list).
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// The kubeconfig of the cluster; `.keelson/kubeconfig` (of `keelson up`) when it exists,
    /// else the usual `KUBECONFIG`, `~/.kube/config` or in-cluster configuration.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
}

impl KubeArgs {
    /// A client of the cluster these flags name.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client(self.kubeconfig.as_deref()).await
    }
}

/// A client from `kubeconfig`, else `.keelson/kubeconfig` when it exists, else the usual
/// configuration (`KUBECONFIG`, `~/.kube/config`, in-cluster).
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<kube::Client> {
    let local = PathBuf::from(".keelson").join(crate::up::KUBECONFIG);
    let path = kubeconfig.map(Path::to_path_buf).or_else(|| local.exists().then_some(local));
    match path {
        Some(path) => {
            let yaml = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            crate::up::client(&yaml).await
        }
        None => inferred_client()
            .await
            .context("finding a cluster (--kubeconfig, KUBECONFIG, ~/.kube/config or in-cluster)"),
    }
}

/// A client of the cluster `KUBECONFIG`, `~/.kube/config` or the in-cluster service account
/// names.
pub async fn inferred_client() -> anyhow::Result<kube::Client> {
    from_config(kube::Config::infer().await?)
}

/// A client that names itself `keelson/<version>` in `User-Agent`, so that the API server
/// records `keelson` as the field manager of the writes that name none.
pub fn from_config(mut config: kube::Config) -> anyhow::Result<kube::Client> {
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("keelson/", env!("CARGO_PKG_VERSION"))),
    ));
    Ok(kube::Client::try_from(config)?)
}
