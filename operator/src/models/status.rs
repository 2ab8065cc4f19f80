//! `keelson status <name>`: one ModelDeployment in full — phase, replicas, throughput,
//! endpoints, GPU allocation, conditions and the recent events about it.

use anyhow::Context;
use k8s_openapi::api::core::v1::Event;
use keelson_api_crds::serving::ModelDeployment;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::output::{self, Output, OutputArgs, Style};
use super::{Error, list};
use crate::kube_args::KubeArgs;

/// How many events `status` shows, the newest last.
pub const RECENT_EVENTS: usize = 10;

/// Settings of `keelson status`.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The ModelDeployment.
    pub name: String,
    /// The cluster and namespace.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// The output format (json and yaml print the ModelDeployment).
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `keelson status`.
pub async fn run(args: StatusArgs) -> Result<(), Error> {
    let client = args.kube.client().await?;
    let namespace = args.kube.namespace.as_str();
    let md = super::get_model(&client, namespace, &args.name).await?;
    let text = match args.output.output {
        Output::Table => {
            let events: Api<Event> = Api::namespaced(client, namespace);
            let selector =
                ListParams::default().fields(&format!("involvedObject.name={}", args.name));
            let events = events.list(&selector).await.context("listing events")?.items;
            render(&md, &recent(events, &md), jiff::Timestamp::now(), output::colour())
        }
        format => output::serialise(&output::object(&md)?, format)?,
    };
    output::print(&text)?;
    Ok(())
}

/// When an event last happened: its last timestamp, event time, first timestamp or creation.
pub fn event_time(event: &Event) -> Option<jiff::Timestamp> {
    event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.first_timestamp.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The events about `md` (its kind and, when known, its uid), oldest first, at most
/// [`RECENT_EVENTS`] of the newest.
pub fn recent(mut events: Vec<Event>, md: &ModelDeployment) -> Vec<Event> {
    let uid = md.uid();
    events.retain(|e| {
        let about = &e.involved_object;
        about.name.as_deref() == Some(md.name_any().as_str())
            && about.kind.as_deref().is_none_or(|k| k == "ModelDeployment")
            && (about.uid.is_none() || uid.is_none() || about.uid == uid)
    });
    events.sort_by_key(event_time);
    let skip = events.len().saturating_sub(RECENT_EVENTS);
    events.split_off(skip)
}

/// The status for people.
pub fn render(
    md: &ModelDeployment,
    events: &[Event],
    now: jiff::Timestamp,
    colour: bool,
) -> String {
    let status = md.status.clone().unwrap_or_default();
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(text.trim_end());
        out.push('\n');
    };
    let word = list::status_word(md);
    line(format!("Name:          {}", md.name_any()));
    line(format!("Namespace:     {}", md.namespace().unwrap_or_default()));
    line(format!("Backend:       {}", md.spec.backend.as_str()));
    line(format!("Model:         {}", md.spec.model));
    line(format!("Status:        {}", Style::of(&word).paint(&word, colour)));
    line(format!(
        "Replicas:      {} (spec {}, ready {} of {})",
        list::replicas(md),
        md.spec.replicas,
        status.ready_replicas,
        status.replicas
    ));
    let benchmarked = status.last_benchmark_time.as_ref().map(|t| format!(" (measured {})", t.0));
    line(format!(
        "Throughput:    {}{}",
        output::throughput(status.tokens_per_second),
        benchmarked.unwrap_or_default()
    ));
    if let Some(cache) = &md.spec.model_cache_ref {
        line(format!("Cache:         {cache}"));
    }
    if let Some(group) = &md.spec.gpu_group_ref {
        line(format!("GPU Group:     {group}"));
    }
    if let Some(created) = &md.metadata.creation_timestamp {
        line(format!("Age:           {}", output::age(created.0, now)));
    }
    let endpoints = status.endpoints.clone().unwrap_or_default();
    line("Endpoints:".to_owned());
    line(format!("  Internal:    {}", endpoints.internal.as_deref().unwrap_or("-")));
    line(format!("  External:    {}", endpoints.external.as_deref().unwrap_or("-")));
    line("GPU Allocation:".to_owned());
    match &status.allocated_gpu {
        None => line(format!("  none ({})", list::gpu(md))),
        Some(gpu) => {
            line(format!("  Node:        {}", gpu.node));
            line(format!(
                "  GPUs:        {} × {}",
                gpu.count,
                gpu.resource.as_deref().unwrap_or("gpu")
            ));
            if let Some(vendor) = &gpu.vendor {
                line(format!("  Vendor:      {vendor}"));
            }
            if let Some(memory) = gpu.memory_mb {
                line(format!("  Memory:      {memory} MiB per GPU"));
            }
        }
    }
    line("Conditions:".to_owned());
    if status.observed.conditions.is_empty() {
        line("  none".to_owned());
    }
    let conditions = &status.observed.conditions;
    let type_width = conditions.iter().map(|c| c.type_.len()).max().unwrap_or(0);
    let reason_width = conditions.iter().map(|c| c.reason.len()).max().unwrap_or(0);
    for condition in conditions {
        let padded = format!("{:<7}", condition.status);
        let painted = Style::of(&condition.status).paint(&padded, colour);
        line(format!(
            "  {:<type_width$}  {painted}  {:<reason_width$}  {} ago",
            condition.type_,
            condition.reason,
            output::age(condition.last_transition_time.0, now)
        ));
        if !condition.message.is_empty() {
            line(format!("    Message: {}", condition.message));
        }
    }
    line("Recent Events:".to_owned());
    if events.is_empty() {
        line("  none".to_owned());
    }
    for event in events {
        let age = event_time(event).map_or_else(|| "?".to_owned(), |t| output::age(t, now));
        let type_ = event.type_.as_deref().unwrap_or("Normal");
        let style = if type_ == "Warning" { Style::Red } else { Style::Plain };
        let count = event.count.filter(|c| *c > 1).map(|c| format!(" (x{c})")).unwrap_or_default();
        line(format!(
            "  {age:>4}  {}  {}{count}: {}",
            style.paint(&format!("{type_:<7}"), colour),
            event.reason.as_deref().unwrap_or_default(),
            event.message.as_deref().unwrap_or_default()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn model() -> ModelDeployment {
        serde_json::from_value(json!({
            "apiVersion": "serving.keelson.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "qwen", "namespace": "ml", "uid": "u1",
                         "creationTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"backend": "vllm", "model": "org/qwen", "replicas": 1},
            "status": {
                "phase": "Pending", "replicas": 1, "readyReplicas": 0,
                "endpoints": {"internal": "http://qwen.ml.svc:8000"},
                "allocatedGpu": {"node": "gpu-0", "resource": "nvidia.com/gpu", "count": 1,
                                 "vendor": "nvidia", "memoryMb": 24576},
                "conditions": [{"type": "Ready", "status": "False", "reason": "Unschedulable",
                                "message": "no suitable GPU available",
                                "lastTransitionTime": "2025-01-01T00:01:00Z"}],
            },
        }))
        .unwrap()
    }

    fn event(name: &str, uid: &str, reason: &str, at: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{name}.{reason}")},
            "involvedObject": {"kind": "ModelDeployment", "name": name, "uid": uid},
            "reason": reason, "message": format!("{reason} happened"), "type": "Normal",
            "lastTimestamp": at,
        }))
        .unwrap()
    }

    #[test]
    fn the_status_shows_gpu_conditions_and_events() {
        let now: jiff::Timestamp = "2025-01-01T00:10:00Z".parse().unwrap();
        let events = [event("qwen", "u1", "Pending", "2025-01-01T00:09:00Z")];
        let text = render(&model(), &events, now, false);
        for expected in [
            "Status:        Pending",
            "Replicas:      0/1 (spec 1, ready 0 of 1)",
            "Throughput:    -",
            "  Internal:    http://qwen.ml.svc:8000",
            "GPU Allocation:\n  Node:        gpu-0\n  GPUs:        1 × nvidia.com/gpu",
            "  Memory:      24576 MiB per GPU",
            "  Ready  False    Unschedulable  9m ago",
            "    Message: no suitable GPU available",
            "Recent Events:\n   60s  Normal   Pending: Pending happened",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    #[test]
    fn without_events_or_gpu_it_says_none() {
        let mut md = model();
        md.status.as_mut().unwrap().allocated_gpu = None;
        let text = render(&md, &[], jiff::Timestamp::now(), false);
        assert!(text.contains("GPU Allocation:\n  none (-)"), "{text}");
        assert!(text.ends_with("Recent Events:\n  none\n"), "{text}");
    }

    #[test]
    fn recent_events_are_the_model_s_own_newest_last() {
        let md = model();
        let mut events: Vec<Event> = (0..12)
            .map(|i| event("qwen", "u1", &format!("R{i:02}"), &format!("2025-01-01T00:{i:02}:00Z")))
            .collect();
        events.reverse();
        events.push(event("qwen", "old-uid", "Stale", "2025-01-01T00:30:00Z"));
        events.push(event("other", "u1", "Other", "2025-01-01T00:30:00Z"));
        let recent = recent(events, &md);
        let reasons: Vec<&str> = recent.iter().filter_map(|e| e.reason.as_deref()).collect();
        assert_eq!(reasons, ["R02", "R03", "R04", "R05", "R06", "R07", "R08", "R09", "R10", "R11"]);
    }
}
