//! `keelson weaver status`: the last weaver model preflight of a ModelRouting, with what to do
//! about it. Exit codes: 0 not degraded, 1 degraded, 2 the status could not be read (no such
//! routing, several and none named, no preflight yet, no cluster).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use keelson_api_crds::serving::ModelRouting;
use keelson_facades::serving::weaver::WeaverStatus;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

/// The `keelson weaver` arguments.
#[derive(Debug, clap::Args)]
pub struct WeaverArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: WeaverCommand,
}

/// The `keelson weaver` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum WeaverCommand {
    /// Show the last model preflight of a ModelRouting and how to fix what it found.
    ///
    /// Exit codes: 0 every configured model is served, 1 degraded (a model is missing or the
    /// catalog could not be read), 2 the status could not be read.
    Status(StatusArgs),
}

/// Settings of `keelson weaver status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The ModelRouting; may be left out when the namespace holds exactly one.
    pub name: Option<String>,
    /// The namespace.
    #[arg(short = 'n', long, default_value = crate::kube_args::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The kubeconfig of the cluster; `.keelson/kubeconfig` (of `keelson up`) when it exists,
    /// else the usual `KUBECONFIG`, `~/.kube/config` or in-cluster configuration.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t)]
    pub output: Output,
}

/// How the status is printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Fields and remediation for people.
    #[default]
    Table,
    /// The status object of `GET /api/weaver/status`.
    Json,
}

/// Why the status could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No ModelRouting of that name, or none at all.
    #[error("{0}")]
    NotFound(String),
    /// Several ModelRoutings and none named.
    #[error("several ModelRoutings in namespace {namespace:?} ({names}); name one")]
    Ambiguous {
        /// The namespace.
        namespace: String,
        /// Their names.
        names: String,
    },
    /// The controller has not checked the routing yet.
    #[error("ModelRouting {0:?} has no preflight result yet; is the operator running?")]
    NotChecked(String),
    /// The cluster could not be reached or refused.
    #[error(transparent)]
    Cluster(#[from] anyhow::Error),
}

/// Runs the command; exits with 1 when degraded and 2 on errors.
pub fn run(args: WeaverArgs) -> anyhow::Result<()> {
    let WeaverCommand::Status(args) = args.command;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let code = match runtime.block_on(status(&args)) {
        Ok((name, status)) => {
            let text = match args.output {
                Output::Json => serde_json::to_string_pretty(&status)? + "\n",
                Output::Table => render(&args.namespace, &name, &status),
            };
            std::io::stdout().lock().write_all(text.as_bytes()).context("writing to stdout")?;
            i32::from(status.degraded)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            2
        }
    };
    drop(runtime);
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// Reads the routing's status object.
async fn status(args: &StatusArgs) -> Result<(String, WeaverStatus), Error> {
    let client = crate::kube_args::client(args.kubeconfig.as_deref()).await?;
    let api: Api<ModelRouting> = Api::namespaced(client, &args.namespace);
    let routing = match &args.name {
        Some(name) => {
            api.get_opt(name).await.context("reading the ModelRouting")?.ok_or_else(|| {
                Error::NotFound(format!(
                    "ModelRouting {name:?} not found in namespace {:?}",
                    args.namespace
                ))
            })?
        }
        None => {
            let mut all =
                api.list(&ListParams::default()).await.context("listing ModelRoutings")?.items;
            match all.len() {
                0 => {
                    return Err(Error::NotFound(format!(
                        "no ModelRouting in namespace {:?}",
                        args.namespace
                    )));
                }
                1 => all.remove(0),
                _ => {
                    let mut names: Vec<String> = all.iter().map(|r| r.name_any()).collect();
                    names.sort();
                    return Err(Error::Ambiguous {
                        namespace: args.namespace.clone(),
                        names: names.join(", "),
                    });
                }
            }
        }
    };
    let name = routing.name_any();
    if routing.status.as_ref().and_then(|s| s.checked_at.as_ref()).is_none() {
        return Err(Error::NotChecked(name));
    }
    Ok((name.clone(), WeaverStatus::of(&routing)))
}

/// The status for people, with the remediation of its situation.
pub fn render(namespace: &str, name: &str, status: &WeaverStatus) -> String {
    let list = |models: &[String]| {
        if models.is_empty() { "(none)".to_owned() } else { models.join(", ") }
    };
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("ModelRouting:    {namespace}/{name}"));
    line(format!("Degraded:        {}", status.degraded));
    line(format!("Checked at:      {}", status.checked_at.as_deref().unwrap_or("never")));
    line(format!("Catalog size:    {}", status.catalog_size));
    if let Some(error) = &status.catalog_error {
        line(format!("Catalog error:   {error}"));
    }
    line(format!("Ready models:    {}", list(&status.ready_models)));
    line(format!("Missing models:  {}", list(&status.missing_models)));
    line(String::new());
    for text in remediation(name, status) {
        line(text);
    }
    out
}

/// What to do, per situation of the spec's remediation rules.
pub fn remediation(name: &str, status: &WeaverStatus) -> Vec<String> {
    if !status.degraded {
        return vec![format!("ok: {} models ready", status.ready_models.len())];
    }
    let mut lines = Vec::new();
    if status.catalog_error.is_some() {
        lines.extend([
            "The catalog could not be read, so every configured model counts as missing:".to_owned(),
            "  - check the catalog URL setting (SERVING_URL, else spec.catalogUrl, else Keelson's own /v1/models)".to_owned(),
            "  - check the model proxy's health (GET <catalog>/v1/models with the MASTER_KEY bearer token)".to_owned(),
            "  - check the network policy between the operator's namespace and the proxy's".to_owned(),
        ]);
    } else {
        let missing = status.missing_models.join(", ");
        lines.extend([
            format!("Missing from the catalog: {missing}. For each, depending on why:"),
            "  - needed: create a ModelDeployment serving it (its name or spec.litellm.servedModelName), wait until it is Ready".to_owned(),
            "  - a stale alias of a deployed model: add it to spec.litellm.aliases of the Ready ModelDeployment".to_owned(),
            "  - not worth deploying: point the role at a Ready model in the role override file (KEELSON_WEAVER_ROLES_FILE), or unset the WEAVER_*_MODEL variable that names it and restart the operator".to_owned(),
            "  - pending rollout on purpose: the status is informational; ready models on the fallback chain keep serving".to_owned(),
        ]);
    }
    lines.push(format!(
        "The next preflight runs at the routing's interval, when an override file changes, or now with: kubectl annotate modelrouting/{name} keelson.dev/recheck=\"$(date +%s)\" --overwrite"
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(
        degraded: bool,
        error: Option<&str>,
        ready: &[&str],
        missing: &[&str],
    ) -> WeaverStatus {
        WeaverStatus {
            degraded,
            missing_models: missing.iter().map(|s| (*s).to_owned()).collect(),
            catalog_error: error.map(str::to_owned),
            ready_models: ready.iter().map(|s| (*s).to_owned()).collect(),
            catalog_size: 2,
            checked_at: Some("2025-01-01T00:00:00Z".into()),
        }
    }

    #[test]
    fn ok_says_how_many() {
        let text = render("ns", "w", &status(false, None, &["a", "b"], &[]));
        assert!(text.ends_with("ok: 2 models ready\n"), "{text}");
        assert!(text.contains("Ready models:    a, b"));
    }

    #[test]
    fn missing_models_get_the_model_remediations() {
        let lines = remediation("w", &status(true, None, &["a"], &["x", "y"]));
        assert!(lines[0].contains("x, y"));
        assert!(lines.iter().any(|l| l.contains("spec.litellm.aliases")));
        assert!(lines.iter().any(|l| l.contains("role override file")));
        assert!(lines.iter().any(|l| l.contains("informational")));
        assert!(!lines.iter().any(|l| l.contains("network policy")));
    }

    #[test]
    fn a_catalog_error_gets_the_catalog_remediations() {
        let text = render("ns", "w", &status(true, Some("GET u: refused"), &[], &["x"]));
        assert!(text.contains("Catalog error:   GET u: refused"));
        assert!(text.contains("catalog URL setting"));
        assert!(text.contains("network policy"));
        assert!(!text.contains("spec.litellm.aliases"));
    }
}
