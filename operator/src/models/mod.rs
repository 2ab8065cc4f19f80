//! The model-serving command line: `keelson list`, `status`, `logs`, `delete`, `scale`,
//! `cache status`, `node check|drain` and `completions`.
//!
//! Each command is a thin client of the cluster's API: it reads ModelDeployments, ModelCaches,
//! pods and events, and changes only what the spec's cleanup rules allow (a ModelDeployment's
//! `spec.replicas`, a ModelDeployment or a Memory ModelCache, stuck pods), never the children
//! the controllers own. The text each one prints is built by pure functions of its module.
//!
//! Exit codes: 0 done (a cancelled deletion included), 1 an error (an unknown name, no pods, no
//! cluster), 2 a usage error.

pub mod cache;
pub mod delete;
pub mod list;
pub mod logs;
pub mod node;
pub mod output;
pub mod scale;
pub mod status;

use std::io::BufRead;

use anyhow::Context;
use clap::CommandFactory;
use keelson_api_crds::serving::ModelDeployment;
use kube::api::Api;

/// The model-serving subcommands, flattened into `keelson`'s own.
#[derive(Debug, clap::Subcommand)]
pub enum ModelCommand {
    /// List ModelDeployments with their status, replicas, throughput and GPU.
    List(list::ListArgs),
    /// Show one ModelDeployment: phase, replicas, throughput, endpoints, GPU allocation,
    /// conditions and recent events.
    Status(status::StatusArgs),
    /// Print (or follow with -f) the logs of a ModelDeployment's serving pods.
    Logs(logs::LogsArgs),
    /// Delete a ModelDeployment (its Deployment, Service and benchmark go with it), after
    /// asking.
    Delete(delete::DeleteArgs),
    /// Set a ModelDeployment's replicas; 0 scales it to zero.
    Scale(scale::ScaleArgs),
    /// Model caches.
    Cache(cache::CacheArgs),
    /// A GPU node's cleanup and recovery: what targets it, and clearing it in the documented
    /// order.
    Node(node::NodeArgs),
    /// Print a shell completion script, e.g. `keelson completions bash > ~/.local/share/bash-completion/completions/keelson`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Why a model-serving command failed (exit code 1).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No resource of that name.
    #[error("{kind} {name:?} not found in namespace {namespace:?}")]
    NotFound {
        /// `ModelDeployment`, …
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// The namespace looked in.
        namespace: String,
    },
    /// The ModelDeployment has no pods to show logs of.
    #[error("no pods found for ModelDeployment {0:?}")]
    NoPods(String),
    /// Some of the pods' logs could not be read (each was reported).
    #[error("the logs of {0} pod(s) could not be read")]
    Logs(usize),
    /// The cluster could not be reached, refused, or the output could not be written.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<kube::Error> for Error {
    fn from(error: kube::Error) -> Self {
        Error::Other(error.into())
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Other(error.into())
    }
}

/// Runs a model-serving command; an error is printed on stderr and exits with code 1.
pub fn run(command: ModelCommand) -> anyhow::Result<()> {
    if let ModelCommand::Completions { shell } = command {
        let mut cli = crate::cli::Cli::command();
        clap_complete::generate(shell, &mut cli, "keelson", &mut std::io::stdout().lock());
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        match command {
            ModelCommand::List(args) => list::run(args).await,
            ModelCommand::Status(args) => status::run(args).await,
            ModelCommand::Logs(args) => logs::run(args).await,
            ModelCommand::Delete(args) => delete::run(args).await,
            ModelCommand::Scale(args) => scale::run(args).await,
            ModelCommand::Cache(args) => cache::run(args).await,
            ModelCommand::Node(args) => node::run(args).await,
            ModelCommand::Completions { .. } => Ok(()),
        }
    });
    drop(runtime);
    if let Err(error) = result {
        eprintln!("error: {}", describe(&error));
        std::process::exit(1);
    }
    Ok(())
}

/// An error for people: its contexts, then the cause; an API refusal gives its message only,
/// not the whole `Status`.
pub fn describe(error: &Error) -> String {
    let Error::Other(error) = error else { return error.to_string() };
    let mut parts = Vec::new();
    for cause in error.chain() {
        match cause.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => {
                parts.push(format!("{} ({})", status.message, status.code));
                break;
            }
            _ => parts.push(cause.to_string()),
        }
    }
    parts.join(": ")
}

/// The ModelDeployment `namespace/name`, or [`Error::NotFound`].
pub async fn get_model(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<ModelDeployment, Error> {
    let api: Api<ModelDeployment> = Api::namespaced(client.clone(), namespace);
    api.get_opt(name).await.context("reading the ModelDeployment")?.ok_or_else(|| Error::NotFound {
        kind: "ModelDeployment",
        name: name.to_owned(),
        namespace: namespace.to_owned(),
    })
}

/// Asks `question` on stderr and reads the answer from `input`: only `y` or `yes` (any case)
/// is a yes; an empty line or the end of the input is a no.
pub fn confirm(question: &str, input: &mut impl BufRead) -> std::io::Result<bool> {
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    Ok(is_yes(&answer))
}

/// Whether an answer to a `[y/N]` question is a yes.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_y_and_yes_confirm() {
        for yes in ["y", "Y\n", " yes \n", "YES"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n", "no", "yep", "N\n"] {
            assert!(!is_yes(no), "{no:?}");
        }
        assert!(!confirm("Delete?", &mut &b""[..]).unwrap());
        assert!(confirm("Delete?", &mut &b"y\n"[..]).unwrap());
    }

    #[test]
    fn api_refusals_give_their_message() {
        let status =
            kube::core::Status::failure("pods \"x\" is forbidden", "Forbidden").with_code(403);
        let error = anyhow::Error::from(kube::Error::Api(Box::new(status))).context("listing pods");
        assert_eq!(describe(&Error::Other(error)), "listing pods: pods \"x\" is forbidden (403)");
        assert_eq!(describe(&Error::NoPods("q".into())), "no pods found for ModelDeployment \"q\"");
    }

    #[test]
    fn not_found_names_the_namespace() {
        let error =
            Error::NotFound { kind: "ModelDeployment", name: "x".into(), namespace: "y".into() };
        assert_eq!(error.to_string(), "ModelDeployment \"x\" not found in namespace \"y\"");
    }
}
