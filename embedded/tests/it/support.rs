//! A server in a temporary data directory and a client for it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use keelson_embedded::server::{self, RunningServer, ServerConfig};
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A running server and a client of it.
pub struct TestServer {
    pub server: Option<RunningServer>,
    pub client: kube::Client,
    pub dir: tempfile::TempDir,
}

/// Loopback, a free port, default history.
pub fn config(dir: &std::path::Path) -> ServerConfig {
    let mut config = ServerConfig::new(dir);
    config.bind = "127.0.0.1:0".parse().unwrap();
    config
}

/// Starts a server in a new temporary directory.
pub async fn start() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    start_with(dir, config).await
}

/// Starts a server with `config` (whose data dir is inside `dir`).
pub async fn start_with(dir: tempfile::TempDir, config: ServerConfig) -> TestServer {
    let server = server::start(config).await.unwrap();
    let client = client(&server).await;
    TestServer { server: Some(server), client, dir }
}

/// A client using the server's kubeconfig.
pub async fn client(server: &RunningServer) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    // Tests see each answer as the server gave it: kube would retry a 429, 503 or 504 for
    // minutes before handing it over.
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// Installs Keelson's CRDs by server-side apply, as `keelson up` does.
pub async fn install_crds(client: &kube::Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in keelson_api_crds::all_crds() {
        let name = crd.metadata.name.clone().unwrap();
        api.patch(&name, &PatchParams::apply("keelson").force(), &Patch::Apply(&crd))
            .await
            .unwrap();
    }
}

/// The HTTP status and reason of a kube API error.
pub fn api_error(error: kube::Error) -> (u16, String, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason.clone(), status.message.clone()),
        other => panic!("not an API error: {other:?}"),
    }
}

/// Polls `check` every 10 ms for up to 10 s until it gives a value.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..1000 {
        if let Some(value) = check().await {
            return value;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}
