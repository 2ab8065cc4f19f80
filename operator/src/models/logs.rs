//! `keelson logs <name>`: the logs of a ModelDeployment's serving pods (selected by the
//! controller's [`DEPLOYMENT_LABEL`], leaving out its Jobs' pods), each line prefixed with
//! `[pod]` when there are several; `-f` follows them all at once.

use anyhow::Context;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use keelson_controllers::serving::workload::DEPLOYMENT_LABEL;
use kube::ResourceExt;
use kube::api::{Api, ListParams, LogParams};

use super::Error;
use crate::kube_args::KubeArgs;

/// Settings of `keelson logs`.
#[derive(Debug, Clone, clap::Args)]
pub struct LogsArgs {
    /// The ModelDeployment.
    pub name: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Keep streaming new lines.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only the last N lines of each pod.
    #[arg(long, value_name = "N")]
    pub tail: Option<u32>,
    /// The container (default: the pod's first, the model server).
    #[arg(short = 'c', long, value_name = "NAME")]
    pub container: Option<String>,
}

/// Runs `keelson logs`.
pub async fn run(args: LogsArgs) -> Result<(), Error> {
    let client = args.kube.client().await?;
    let namespace = args.kube.namespace.as_str();
    super::get_model(&client, namespace, &args.name).await?;
    let pods: Api<Pod> = Api::namespaced(client, namespace);
    let selector = ListParams::default().labels(&selector(&args.name));
    let mut names: Vec<String> =
        pods.list(&selector).await.context("listing pods")?.iter().map(|p| p.name_any()).collect();
    names.sort();
    if names.is_empty() {
        return Err(Error::NoPods(args.name));
    }
    let params = LogParams {
        follow: args.follow,
        tail_lines: args.tail.map(i64::from),
        container: args.container.clone(),
        ..LogParams::default()
    };
    let several = names.len() > 1;
    let streams = names.iter().map(|pod| {
        let pods = pods.clone();
        let params = params.clone();
        let prefix = prefix(pod, several);
        async move {
            let lines = pods
                .log_stream(pod, &params)
                .await
                .with_context(|| format!("reading the logs of pod {pod}"))?
                .lines();
            lines
                .map_err(anyhow::Error::from)
                .try_for_each(|line| {
                    println!("{prefix}{line}");
                    futures::future::ok(())
                })
                .await
                .with_context(|| format!("reading the logs of pod {pod}"))
        }
    });
    let results = futures::stream::iter(streams).buffer_unordered(names.len()).collect::<Vec<_>>();
    let mut failed: Vec<anyhow::Error> =
        results.await.into_iter().filter_map(Result::err).collect();
    match failed.len() {
        0 => Ok(()),
        1 if !several => Err(Error::Other(failed.remove(0))),
        n => {
            for error in failed {
                eprintln!("error: {}", super::describe(&Error::Other(error)));
            }
            Err(Error::Logs(n))
        }
    }
}

/// The label selector of a ModelDeployment's serving pods: its [`DEPLOYMENT_LABEL`], without
/// the pods of its Jobs (the benchmark's logs are `kubectl logs job/<name>-benchmark`).
pub fn selector(name: &str) -> String {
    format!("{DEPLOYMENT_LABEL}={name},!job-name")
}

/// What goes before each line of `pod`: `[pod] ` when the logs of several pods interleave.
pub fn prefix(pod: &str, several: bool) -> String {
    if several { format!("[{pod}] ") } else { String::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_leaves_out_job_pods() {
        assert_eq!(selector("qwen"), "serving.keelson.dev/model-deployment=qwen,!job-name");
    }

    #[test]
    fn lines_are_prefixed_only_with_several_pods() {
        assert_eq!(prefix("qwen-abc", true), "[qwen-abc] ");
        assert_eq!(prefix("qwen-abc", false), "");
    }
}
