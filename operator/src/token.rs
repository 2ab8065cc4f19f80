//! `keelson token create`: a new REST API token, shown once.

use std::path::PathBuf;

use keelson_facades::auth::{self, Scope};

/// Settings of `keelson token create`.
#[derive(Debug, Clone, clap::Args)]
pub struct CreateArgs {
    /// What the token may do: `read` (GET only) or `write`.
    #[arg(long, value_enum, default_value = "read")]
    pub scope: Scope,
    /// Its name, recorded on what it creates and decides; generated when absent.
    #[arg(long)]
    pub name: Option<String>,
    /// The kubeconfig of the cluster; `.keelson/kubeconfig` (of `keelson up`) when it exists,
    /// else the usual `KUBECONFIG` or `~/.kube/config`.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace the REST API serves.
    #[arg(long, env = "KEELSON_API_NAMESPACE", default_value = "default")]
    pub namespace: String,
}

/// Creates the token and prints it on stdout.
pub async fn create(args: CreateArgs) -> anyhow::Result<()> {
    let client = crate::kube_args::client(args.kubeconfig.as_deref()).await?;
    let name = match args.name {
        Some(name) => name,
        None => format!(
            "{}-{}",
            args.scope.as_str(),
            &auth::token::hash(&auth::token::generate("")?)[..8]
        ),
    };
    let token = auth::create_token(&client, &args.namespace, &name, args.scope).await?;
    eprintln!(
        "Created {} token {name:?}. It is shown only now; keep it safe:",
        args.scope.as_str()
    );
    println!("{token}");
    Ok(())
}
