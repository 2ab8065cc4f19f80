//! The workflow reconcilers of the long-lived kinds (Flow, Agent, Webhook) and [`spawn`], which
//! starts them with the Run and Schedule reconcilers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use keelson_api_crds::conditions::{ObservedConditions, READY, REASON_INVALID_SPEC, Update};
use keelson_api_crds::workflows::{
    Agent, AgentStatus, Flow, FlowStatus, Plan, Run, Schedule, Webhook, WebhookStatus,
};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use super::settings::Settings;
use super::{plan, run_controller, schedule_controller};
use crate::api::{self, log};

/// What every workflow reconciler needs.
pub(super) struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub settings: Settings,
    /// Every Agent, for checking the steps of flows and runs.
    pub agents: Store<Agent>,
}

impl Context {
    /// The Agents the steps of `plan` name that exist in `namespace`, by name: from the cache,
    /// or read from the API when the cache has not seen them yet (an Agent created just before
    /// the run that uses it).
    pub async fn agents_of(
        &self,
        namespace: &str,
        plan: &Plan,
    ) -> Result<BTreeMap<String, Arc<Agent>>> {
        // Never `wait_until_ready` here: the Agent controller's runner waits on the same store,
        // and kube-runtime wakes only whichever waiter polled last, so a reconcile could wait
        // forever. Before the first list the cache is empty and the API answers instead.
        let api = Api::<Agent>::namespaced(self.client.clone(), namespace);
        let mut found = BTreeMap::new();
        for node in &plan.nodes {
            let Some(name) = node.agent.as_ref().map(|step| &step.agent_ref) else { continue };
            if found.contains_key(name) {
                continue;
            }
            let agent = match self.agents.get(&ObjectRef::new(name).within(namespace)) {
                Some(agent) => Some(agent),
                None => api.get_opt(name).await?.map(Arc::new),
            };
            if let Some(agent) = agent {
                found.insert(name.clone(), agent);
            }
        }
        Ok(found)
    }

    /// Records an event about `owner`.
    pub async fn record<K: Resource<DynamicType = ()>>(
        &self,
        owner: &K,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        api::record(&self.recorder, owner, warning, reason, note).await;
    }
}

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    /// The API refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Error {
    /// A conflict means this reconcile read an older version: retry at once with a fresh read.
    fn is_conflict(&self) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(status)) if status.code == 409)
    }
}

pub(super) type Result<T, E = Error> = std::result::Result<T, E>;

pub(super) fn retry<K>(_: Arc<K>, error: &Error, _: Arc<Context>) -> Action {
    if error.is_conflict() {
        Action::requeue(Duration::from_millis(50))
    } else {
        Action::requeue(Duration::from_secs(2))
    }
}

/// Starts the Flow, Run, Agent, Schedule and Webhook controllers; they run until their tasks
/// are aborted.
pub fn spawn(client: Client, settings: Settings) -> Vec<JoinHandle<()>> {
    let reporter = Reporter { controller: "keelson-workflows".into(), instance: None };
    let recorder = Recorder::new(client.clone(), reporter);
    let all = watcher::Config::default();

    let agents = Controller::new(Api::<Agent>::all(client.clone()), all.clone());
    let ctx =
        Arc::new(Context { client: client.clone(), recorder, settings, agents: agents.store() });
    let agents = agents.run(reconcile_agent, retry, ctx.clone()).for_each(log("agent"));

    let flows = Controller::new(Api::<Flow>::all(client.clone()), all.clone());
    let flow_store = flows.store();
    let flows = flows
        // An Agent created or deleted changes whether the flows that use it can run.
        .watches(Api::<Agent>::all(client.clone()), all.clone(), move |agent| {
            let (name, namespace) = (agent.name_any(), agent.namespace());
            flow_store
                .state()
                .into_iter()
                .filter(|flow| flow.namespace() == namespace)
                .filter(|flow| {
                    flow.spec
                        .plan
                        .nodes
                        .iter()
                        .any(|n| n.agent.as_ref().is_some_and(|a| a.agent_ref == name))
                })
                .map(|flow| ObjectRef::from_obj(&*flow))
                .collect::<Vec<_>>()
        })
        .run(reconcile_flow, retry, ctx.clone())
        .for_each(log("flow"));

    let webhooks = Controller::new(Api::<Webhook>::all(client.clone()), all.clone());
    let webhook_store = webhooks.store();
    let webhooks = webhooks
        .owns(Api::<Secret>::all(client.clone()), all.clone())
        .watches(Api::<Flow>::all(client.clone()), all.clone(), move |flow| {
            let (name, namespace) = (flow.name_any(), flow.namespace());
            webhook_store
                .state()
                .into_iter()
                .filter(|w| w.namespace() == namespace && w.spec.flow_ref == name)
                .map(|w| ObjectRef::from_obj(&*w))
                .collect::<Vec<_>>()
        })
        .run(reconcile_webhook, retry, ctx.clone())
        .for_each(log("webhook"));

    let runs = Controller::new(Api::<Run>::all(client.clone()), all.clone())
        .owns(Api::<Job>::all(client.clone()), all.clone())
        .run(run_controller::reconcile, retry, ctx.clone())
        .for_each(log("run"));

    let schedules = Controller::new(Api::<Schedule>::all(client.clone()), all.clone())
        .owns(Api::<Run>::all(client), all)
        .run(schedule_controller::reconcile, retry, ctx)
        .for_each(log("schedule"));

    [
        tokio::spawn(agents),
        tokio::spawn(flows),
        tokio::spawn(webhooks),
        tokio::spawn(runs),
        tokio::spawn(schedules),
    ]
    .into()
}

/// Sets `Ready` on `observed`.
fn set_ready(
    observed: &mut ObservedConditions,
    generation: Option<i64>,
    ready: bool,
    reason: &str,
    message: &str,
) {
    let update = Update { type_: READY, status: ready.into(), reason, message };
    observed.set(update, generation, jiff::Timestamp::now());
}

/// Whether `Ready` was true before, for events on transitions.
fn was_ready(observed: Option<&ObservedConditions>) -> Option<bool> {
    let condition = observed?.conditions.iter().find(|c| c.type_ == READY)?;
    Some(condition.status == "True")
}

async fn reconcile_agent(agent: Arc<Agent>, ctx: Arc<Context>) -> Result<Action> {
    if agent.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let mut status = agent.status.clone().unwrap_or_default();
    let message = format!("runs {}", agent.spec.image);
    set_ready(&mut status.observed, agent.metadata.generation, true, "Registered", &message);
    api::write_status::<_, AgentStatus>(&ctx.client, &*agent, agent.status.as_ref(), &status)
        .await?;
    Ok(Action::await_change())
}

async fn reconcile_flow(flow: Arc<Flow>, ctx: Arc<Context>) -> Result<Action> {
    if flow.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = flow.namespace().unwrap_or_default();
    let agents = ctx.agents_of(&namespace, &flow.spec.plan).await?;
    let problems = plan::flow_problems(&flow.spec, |agent| agents.contains_key(agent));
    let mut status: FlowStatus = flow.status.clone().unwrap_or_default();
    let before = was_ready(flow.status.as_ref().map(|s| &s.observed));
    let ready = problems.is_empty();
    let (reason, message) = if ready {
        ("Valid", format!("{} nodes, ready to run", flow.spec.plan.nodes.len()))
    } else {
        (REASON_INVALID_SPEC, problems.join("; "))
    };
    set_ready(&mut status.observed, flow.metadata.generation, ready, reason, &message);
    api::write_status(&ctx.client, &*flow, flow.status.as_ref(), &status).await?;
    if before != Some(ready) {
        ctx.record(&*flow, !ready, reason, message).await;
    }
    Ok(Action::await_change())
}

/// The REST API path a webhook's flow is triggered at.
pub fn trigger_path(flow: &str) -> String {
    format!("/api/v1/webhooks/trigger/{flow}")
}

/// Whether `hash` is a hex SHA-256 (64 hex digits), as a webhook's Secret must hold.
fn is_sha256_hex(hash: &[u8]) -> bool {
    hash.len() == 64 && hash.iter().all(u8::is_ascii_hexdigit)
}

async fn reconcile_webhook(webhook: Arc<Webhook>, ctx: Arc<Context>) -> Result<Action> {
    if webhook.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &ctx.client;
    let namespace = webhook.namespace().unwrap_or_default();
    let reference = &webhook.spec.token_secret_ref;
    let flow =
        Api::<Flow>::namespaced(client.clone(), &namespace).get_opt(&webhook.spec.flow_ref).await?;
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    let secret = secrets.get_opt(&reference.name).await?;
    let hash = secret.as_ref().and_then(|s| s.data.as_ref()?.get(&reference.key));
    let (ready, reason, message) = if flow.is_none() {
        (false, "FlowNotFound", format!("flow {:?} does not exist", webhook.spec.flow_ref))
    } else if secret.is_none() {
        (false, "SecretNotFound", format!("secret {:?} does not exist", reference.name))
    } else if !hash.is_some_and(|h| is_sha256_hex(&h.0)) {
        let problem = format!(
            "key {:?} of secret {:?} must hold the hex SHA-256 of the token",
            reference.key, reference.name
        );
        (false, "InvalidTokenHash", problem)
    } else {
        (true, "Ready", format!("POST {} with the token", trigger_path(&webhook.spec.flow_ref)))
    };
    // The token's Secret goes with the webhook (unless something else already controls it).
    if let Some(secret) = &secret
        && let Some(owner) = webhook.controller_owner_ref(&())
        && !secret
            .owner_references()
            .iter()
            .any(|r| r.uid == owner.uid || r.controller == Some(true))
    {
        let mut owners = secret.owner_references().to_vec();
        owners.push(owner);
        let patch = json!({ "metadata": { "ownerReferences": owners } });
        secrets.patch(&reference.name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    let mut status: WebhookStatus = webhook.status.clone().unwrap_or_default();
    let before = was_ready(webhook.status.as_ref().map(|s| &s.observed));
    status.trigger_path = Some(trigger_path(&webhook.spec.flow_ref));
    set_ready(&mut status.observed, webhook.metadata.generation, ready, reason, &message);
    api::write_status(client, &*webhook, webhook.status.as_ref(), &status).await?;
    if before != Some(ready) {
        ctx.record(&*webhook, !ready, reason, message).await;
    }
    Ok(Action::await_change())
}
