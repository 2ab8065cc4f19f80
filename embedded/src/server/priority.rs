//! Pod priority, as upstream's `Priority` admission plugin and bootstrap keep it: the server
//! holds the two system PriorityClasses, and a new pod gets the `priority` and
//! `preemptionPolicy` of the class it names (or of the cluster's global default class, else 0);
//! a pod naming a class that does not exist, or giving a priority of its own that differs, is
//! refused with a `403`.

use serde_json::{Value, json};

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Store, StoreError};

use super::errors::{ApiError, ApiResult};
use super::objects::meta_str;
use super::paths::{object_key, resource_prefix};
use super::write::create_missing;

/// The classes every cluster has: name, value and description, as upstream's bootstrap.
const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another \
         node if necessary.",
    ),
];

/// The preemption policy of a class that gives none.
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

fn priority_classes() -> &'static ResourceInfo {
    builtin_resource("scheduling.k8s.io", "priorityclasses").expect("priorityclasses are built in")
}

/// Creates the system PriorityClasses when they are missing.
pub(crate) async fn ensure_system_classes(store: &Store) -> Result<(), StoreError> {
    for (name, value, description) in SYSTEM_CLASSES {
        let class = json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": { "name": name },
            "value": value,
            "description": description,
            "preemptionPolicy": DEFAULT_PREEMPTION,
        });
        create_missing(store, priority_classes(), None, class, None).await?;
    }
    Ok(())
}

/// Gives a new pod the priority of its class (see the module docs), or refuses it.
pub(crate) fn admit_pod(store: &Store, pod: &mut Value) -> ApiResult<()> {
    let named = pod.pointer("/spec/priorityClassName").and_then(Value::as_str);
    let named = named.unwrap_or_default().to_owned();
    let class = if named.is_empty() {
        global_default(store)
    } else {
        let key = object_key(priority_classes(), "", &named);
        let Some(entry) = store.get(&key) else {
            return Err(refusal(pod, &format!("no PriorityClass with name {named} was found")));
        };
        Some(Value::clone(&entry.object))
    };
    let value = class.as_ref().and_then(|c| c.get("value")).and_then(Value::as_i64).unwrap_or(0);
    let given = pod.pointer("/spec/priority").and_then(Value::as_i64);
    if let Some(given) = given.filter(|given| *given != value) {
        let detail = format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        );
        return Err(refusal(pod, &detail));
    }
    let preemption = class
        .as_ref()
        .and_then(|c| c.get("preemptionPolicy"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_PREEMPTION)
        .to_owned();
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(class) =
            class.as_ref().and_then(|c| meta_str(c, "name")).filter(|_| named.is_empty())
        {
            spec.insert("priorityClassName".into(), json!(class));
        }
        spec.insert("priority".into(), json!(value));
        spec.entry("preemptionPolicy").or_insert(json!(preemption));
    }
    Ok(())
}

/// Keeps a pod's priority through an update that leaves it out (a replace of its manifest), as
/// the plugin does: admission set it, the client never had it.
pub(crate) fn keep_on_update(new: &mut Value, old: &Value) {
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["priority", "preemptionPolicy"] {
        if let Some(value) = old.pointer(&["/spec/", field].concat()) {
            spec.entry(field).or_insert_with(|| value.clone());
        }
    }
}

/// The class marked `globalDefault`, if any.
fn global_default(store: &Store) -> Option<Value> {
    let classes = store.list(&resource_prefix(priority_classes()));
    classes
        .entries()
        .find(|entry| entry.object.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .map(|entry| Value::clone(&entry.object))
}

/// Upstream's `403` for a pod the plugin refuses.
fn refusal(pod: &Value, detail: &str) -> ApiError {
    let name = meta_str(pod, "generateName").or(meta_str(pod, "name")).unwrap_or_default();
    ApiError::forbidden(format!("pods \"{name}\" is forbidden: {detail}"))
}
