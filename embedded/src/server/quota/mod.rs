//! Resource quotas, as upstream's quota admission and quota controller keep them: a create that
//! would take a namespace past a `ResourceQuota`'s `spec.hard` is refused with a `403`, and each
//! quota's `status` shows its `hard` limits and what the namespace `used`, kept current as
//! objects come and go.
//!
//! Counted: objects (`pods`, `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
//! `replicationcontrollers`, `resourcequotas`, and `count/<resource>[.<group>]` of any kind),
//! `services.loadbalancers` and `services.nodeports`, the compute requests and limits of pods
//! that have not finished (`requests.cpu`, `cpu`, `limits.memory`, extended resources, …), and
//! `requests.storage` of claims. Usage is read from the store at admission rather than from the
//! quota's status, so two quick creates cannot both slip under a limit the status had not yet
//! caught up with. A quota with scopes counts only the pods that meet them ([`scopes`]). Not
//! supported: limits on updates (a pod's resources do not change).

pub(super) mod scopes;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::node::quantity;
use crate::storage::{Store, StoreError, WriteOp};

use super::errors::{ApiError, ApiResult};
use super::gc::key_namespace;
use super::objects::{is_core, meta_str};
use super::paths::resource_prefix;
use scopes::Requirement;

/// Storage prefix of every ResourceQuota.
const QUOTAS_PREFIX: &str = "/core/resourcequotas/";

/// Amounts by quota resource name, in milli-units (an object counts 1000).
type Amounts = BTreeMap<String, i128>;

/// One object, as counted.
const ONE: i128 = 1000;

/// What `object` of `group`/`resource` is charged under each quota resource name.
fn charges(group: &str, resource: &str, object: &Value) -> Amounts {
    let mut charged = Amounts::new();
    let pod = group.is_empty() && resource == "pods";
    if pod && finished(object) {
        return charged;
    }
    let count_name = match group {
        "" => ["count/", resource].concat(),
        group => ["count/", resource, ".", group].concat(),
    };
    charged.insert(count_name, ONE);
    let legacy = [
        "pods",
        "services",
        "configmaps",
        "secrets",
        "persistentvolumeclaims",
        "replicationcontrollers",
        "resourcequotas",
    ];
    if group.is_empty() && legacy.contains(&resource) {
        charged.insert(resource.to_owned(), ONE);
    }
    match (group, resource) {
        ("", "pods") => charged.extend(pod_resources(object)),
        ("", "services") => {
            let kind = object.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
            let ports = object.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
            if kind == "LoadBalancer" {
                charged.insert("services.loadbalancers".into(), ONE);
            }
            if matches!(kind, "NodePort" | "LoadBalancer") {
                charged.insert("services.nodeports".into(), ONE * ports as i128);
            }
        }
        ("", "persistentvolumeclaims") => {
            let storage =
                object.pointer("/spec/resources/requests/storage").and_then(Value::as_str);
            if let Some(amount) = storage.and_then(|s| quantity::parse(s).ok()) {
                charged.insert("requests.storage".into(), amount);
            }
        }
        _ => {}
    }
    charged
}

/// Whether a pod has finished: it no longer holds quota.
fn finished(pod: &Value) -> bool {
    matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"))
}

/// A pod's `requests.<r>` and `limits.<r>` (and `<r>` for the requests of cpu, memory and
/// ephemeral storage), as upstream's pod evaluator adds them up: its containers' sum, or its
/// largest init container when that is more. A container's request of a resource it only
/// limits is its limit, as defaulting makes it.
fn pod_resources(pod: &Value) -> Amounts {
    let containers = |field: &str| {
        let list = pod.pointer(&["/spec/", field].concat()).and_then(Value::as_array);
        list.into_iter().flatten().map(container_resources).collect::<Vec<_>>()
    };
    let mut total = Amounts::new();
    for amounts in containers("containers") {
        quantity::add(&mut total, &amounts);
    }
    for amounts in containers("initContainers") {
        for (name, amount) in amounts {
            let entry = total.entry(name).or_default();
            *entry = (*entry).max(amount);
        }
    }
    for plain in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = total.get(&["requests.", plain].concat()).copied() {
            total.insert(plain.to_owned(), request);
        }
    }
    total
}

/// One container's `requests.<r>` and `limits.<r>`.
fn container_resources(container: &Value) -> Amounts {
    let list = |kind: &str| {
        let amounts = container.pointer(&["/resources/", kind].concat()).and_then(Value::as_object);
        amounts
            .into_iter()
            .flatten()
            .filter_map(|(r, q)| Some((r.clone(), quantity::parse(q.as_str()?).ok()?)))
            .collect::<BTreeMap<_, _>>()
    };
    let (requests, limits) = (list("requests"), list("limits"));
    let mut amounts = Amounts::new();
    for (resource, amount) in &limits {
        amounts.insert(["limits.", resource].concat(), *amount);
        amounts.insert(["requests.", resource].concat(), *amount);
    }
    for (resource, amount) in requests {
        amounts.insert(["requests.", &resource].concat(), amount);
    }
    amounts
}

/// The group and resource whose objects a quota resource name counts; `None` for a name this
/// server does not count.
fn counted_kind(name: &str) -> Option<(&str, &str)> {
    if let Some(kind) = name.strip_prefix("count/") {
        return Some(match kind.split_once('.') {
            Some((resource, group)) => (group, resource),
            None => ("", kind),
        });
    }
    Some(match name {
        "requests.storage" | "persistentvolumeclaims" => ("", "persistentvolumeclaims"),
        "services" | "services.loadbalancers" | "services.nodeports" => ("", "services"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => ("", name),
        "pods" | "cpu" | "memory" | "ephemeral-storage" => ("", "pods"),
        _ if name.starts_with("requests.") || name.starts_with("limits.") => ("", "pods"),
        _ => return None,
    })
}

/// The compute names a pod must give each of its containers for a quota that limits them.
fn must_specify(name: &str) -> Option<(&'static str, &str)> {
    match name {
        "cpu" | "memory" | "ephemeral-storage" => Some(("requests", name)),
        _ => {
            let (kind, resource) = name.split_once('.')?;
            let kind = match kind {
                "requests" => "requests",
                "limits" => "limits",
                _ => return None,
            };
            matches!(resource, "cpu" | "memory" | "ephemeral-storage").then_some((kind, resource))
        }
    }
}

/// What the objects of `namespace` that fall under a quota's `requirements` use of each of
/// `names`, read from the store.
fn usage<'a>(
    store: &Store,
    namespace: &str,
    names: impl Iterator<Item = &'a str>,
    requirements: &[Requirement],
) -> Amounts {
    let mut by_kind: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for name in names {
        if let Some(kind) = counted_kind(name) {
            by_kind.entry(kind).or_default().push(name);
        }
    }
    let mut used = Amounts::new();
    for ((group, resource), names) in by_kind {
        let prefix = match builtin_resource(group, resource) {
            Some(info) => resource_prefix(info),
            None => ["/", group, "/", resource, "/"].concat(),
        };
        let mut total = Amounts::new();
        for entry in store.list(&[&prefix, namespace, "/"].concat()).entries() {
            if scopes::matches(requirements, group, resource, &entry.object) {
                quantity::add(&mut total, &charges(group, resource, &entry.object));
            }
        }
        for name in names {
            used.insert(name.to_owned(), total.get(name).copied().unwrap_or(0));
        }
    }
    used
}

/// A quota's `spec.hard`, its amounts read (unreadable ones left out: the API server's
/// validation of quantities is not this module's).
fn hard_limits(quota: &Value) -> Vec<(String, i128)> {
    let hard = quota.pointer("/spec/hard").and_then(Value::as_object);
    hard.into_iter()
        .flatten()
        .filter_map(|(name, q)| Some((name.clone(), quantity::parse(q.as_str()?).ok()?)))
        .collect()
}

/// Refuses the creation of `object` as an `info` when it would take its namespace past a
/// quota, or when it is a pod that leaves out a request or limit a quota limits.
pub(crate) fn admit(store: &Store, info: &ResourceInfo, object: &Value) -> ApiResult<()> {
    if !info.namespaced {
        return Ok(());
    }
    let namespace = meta_str(object, "namespace").unwrap_or("default");
    let quotas = store.list(&[QUOTAS_PREFIX, namespace, "/"].concat());
    if quotas.is_empty() {
        return Ok(());
    }
    let name = meta_str(object, "name").unwrap_or_default();
    let refuse =
        |why: String| ApiError::forbidden_resource(&info.group, &info.resource, name, &why, "");
    let charged = charges(&info.group, &info.resource, object);
    let names = || charged.keys().map(String::as_str);
    // Every name the object is charged under counts objects of its own kind: one pass over them
    // for all unscoped quotas, one for each scoped quota it falls under.
    let mut unscoped = None;
    for entry in quotas.entries() {
        let requirements = scopes::requirements(&entry.object);
        if !scopes::matches(&requirements, &info.group, &info.resource, object) {
            continue;
        }
        let scoped;
        let used = match requirements.is_empty() {
            true => unscoped.get_or_insert_with(|| usage(store, namespace, names(), &[])),
            false => {
                scoped = usage(store, namespace, names(), &requirements);
                &scoped
            }
        };
        let quota_name = meta_str(&entry.object, "name").unwrap_or_default();
        let hard = hard_limits(&entry.object);
        if is_core(info, "pods") && !finished(object) {
            let missing = missing_resources(object, hard.iter().map(|(n, _)| n.as_str()));
            if !missing.is_empty() {
                return Err(refuse(format!("failed quota: {quota_name}: {missing}")));
            }
        }
        let limited: Vec<&(String, i128)> =
            hard.iter().filter(|(n, _)| charged.get(n).is_some_and(|c| *c > 0)).collect();
        let exceeded: Vec<(&str, i128, i128, i128)> = limited
            .iter()
            .map(|(n, limit)| (n.as_str(), charged[n], used.get(n).copied().unwrap_or(0), *limit))
            .filter(|(_, asked, used, limit)| used + asked > *limit)
            .collect();
        if !exceeded.is_empty() {
            let list = |pick: fn(&(&str, i128, i128, i128)) -> i128| {
                let pairs: Vec<String> =
                    exceeded.iter().map(|e| [e.0, "=", &format(e.0, pick(e))].concat()).collect();
                pairs.join(",")
            };
            return Err(refuse(format!(
                "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                list(|e| e.1),
                list(|e| e.2),
                list(|e| e.3)
            )));
        }
    }
    Ok(())
}

/// The compute `names` some container of `pod` leaves out, as upstream words it:
/// `must specify limits.cpu for: web; requests.memory for: web,side` (empty when none).
fn missing_resources<'a>(pod: &Value, names: impl Iterator<Item = &'a str>) -> String {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array);
    let containers = containers.map(Vec::as_slice).unwrap_or_default();
    let mut missing = Vec::new();
    for name in names {
        let Some((kind, resource)) = must_specify(name) else { continue };
        let given = |container: &Value, kind: &str| {
            container.pointer(&["/resources/", kind, "/", resource].concat()).is_some()
        };
        let without: Vec<&str> = containers
            .iter()
            .filter(|c| !(given(c, kind) || (kind == "requests" && given(c, "limits"))))
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or_default())
            .collect();
        if !without.is_empty() {
            missing.push(format!("{name} for: {}", without.join(",")));
        }
    }
    if missing.is_empty() { String::new() } else { ["must specify ", &missing.join("; ")].concat() }
}

/// An amount of quota resource `name` as a quantity: bytes for memory and storage (with the
/// largest binary or decimal suffix that divides them), plain or milli-units for the rest.
fn format(name: &str, milli: i128) -> String {
    if milli % ONE != 0 {
        return format!("{milli}m");
    }
    let units = milli / ONE;
    if units != 0 && (name.contains("memory") || name.contains("storage")) {
        const BINARY: [(&str, u32); 6] =
            [("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)];
        const DECIMAL: [(&str, u32); 6] =
            [("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)];
        let binary = BINARY.iter().map(|(s, p)| (*s, 1i128 << p));
        let decimal = DECIMAL.iter().map(|(s, p)| (*s, 10i128.pow(*p)));
        if let Some((suffix, size)) = binary.chain(decimal).find(|(_, size)| units % size == 0) {
            return format!("{}{suffix}", units / size);
        }
    }
    units.to_string()
}

/// `quota`'s status: its `hard` limits as given and what the namespace uses of each it counts.
fn status(quota: &Value, used: &Amounts) -> Value {
    let hard = quota.pointer("/spec/hard").cloned().unwrap_or_else(|| json!({}));
    let shown: Map<String, Value> =
        used.iter().map(|(name, amount)| (name.clone(), json!(format(name, *amount)))).collect();
    json!({ "hard": hard, "used": shown })
}

/// Brings the status of every quota in `namespace` up to date, writing only what changed.
async fn refresh(store: &Store, namespace: &str) -> Result<(), StoreError> {
    for entry in store.list(&[QUOTAS_PREFIX, namespace, "/"].concat()).entries() {
        let hard = entry.object.pointer("/spec/hard").and_then(Value::as_object);
        let names = hard.into_iter().flat_map(Map::keys).map(String::as_str);
        let requirements = scopes::requirements(&entry.object);
        let wanted = status(&entry.object, &usage(store, namespace, names, &requirements));
        if entry.object.get("status") == Some(&wanted) {
            continue;
        }
        let mut object = Value::clone(&entry.object);
        object["status"] = wanted;
        let op =
            WriteOp::Update { key: entry.key.clone(), expected_revision: entry.revision, object };
        store.write_if_unchanged(op).await?;
    }
    Ok(())
}

/// Keeps quota statuses current until the store shuts down. While no quota exists it follows
/// only the quotas, so that other writes cost it nothing; once one does, it follows every write
/// and refreshes the quotas of the namespace written to.
pub(crate) fn spawn(store: Store) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            // From this revision on, a quota's coming or going shows as an event.
            let from = store.revision();
            let any = !store.list(QUOTAS_PREFIX).is_empty();
            let prefix = if any { "/" } else { QUOTAS_PREFIX };
            let Ok(mut watch) = store.watch(prefix, from) else { return };
            let quotas = store.list(QUOTAS_PREFIX);
            let namespaces: BTreeSet<&str> =
                quotas.entries().map(|e| key_namespace(&e.key)).collect();
            for namespace in namespaces {
                if refresh(&store, namespace).await.is_err() {
                    return;
                }
            }
            loop {
                let event = match watch.next().await {
                    Some(Ok(event)) => event,
                    // Compacted past: start again from now.
                    Some(Err(StoreError::Compacted { .. })) => break,
                    None | Some(Err(_)) => return,
                };
                let quotas_exist = !store.list(QUOTAS_PREFIX).is_empty();
                if quotas_exist != any {
                    break;
                }
                if let Err(error) = refresh(&store, key_namespace(&event.key)).await {
                    tracing::warn!(%error, "updating quota status failed");
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn an_object_counts_once_under_its_count_and_legacy_names() {
        let charged = charges("", "configmaps", &json!({}));
        assert_eq!(
            charged,
            Amounts::from([("count/configmaps".into(), ONE), ("configmaps".into(), ONE)])
        );
        let charged = charges("apps", "deployments", &json!({}));
        assert_eq!(charged, Amounts::from([("count/deployments.apps".into(), ONE)]));
        let done = json!({"status": {"phase": "Succeeded"}});
        assert!(charges("", "pods", &done).is_empty(), "a finished pod holds no quota");
    }

    #[test]
    fn a_pod_is_charged_its_containers_sum_or_its_largest_init_container() {
        let mut p = pod(json!([
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
            {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}
        ]));
        p["spec"]["initContainers"] =
            json!([{"name": "i", "resources": {"requests": {"cpu": "2"}}}]);
        let charged = charges("", "pods", &p);
        let get = |name: &str| charged.get(name).copied();
        assert_eq!(get("pods"), Some(ONE));
        assert_eq!(get("requests.cpu"), Some(2000), "the init container asks for more");
        assert_eq!(get("cpu"), Some(2000));
        assert_eq!(get("limits.cpu"), Some(1500));
        assert_eq!(
            get("requests.memory"),
            Some(192 * (1 << 20) * 1000),
            "b's limit is its request"
        );
        assert_eq!(get("limits.memory"), Some(128 * (1 << 20) * 1000));
    }

    #[test]
    fn services_and_claims_are_charged_their_own_resources() {
        let service =
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        let charged = charges("", "services", &service);
        assert_eq!(charged["services.loadbalancers"], ONE);
        assert_eq!(charged["services.nodeports"], 2 * ONE);
        let claim = json!({"spec": {"resources": {"requests": {"storage": "10Gi"}}}});
        assert_eq!(
            charges("", "persistentvolumeclaims", &claim)["requests.storage"],
            10 * (1 << 30) * ONE
        );
    }

    #[test]
    fn names_map_to_the_kinds_they_count() {
        assert_eq!(counted_kind("count/deployments.apps"), Some(("apps", "deployments")));
        assert_eq!(counted_kind("count/widgets.example.com"), Some(("example.com", "widgets")));
        assert_eq!(counted_kind("count/pods"), Some(("", "pods")));
        assert_eq!(counted_kind("limits.memory"), Some(("", "pods")));
        assert_eq!(counted_kind("requests.nvidia.com/gpu"), Some(("", "pods")));
        assert_eq!(counted_kind("requests.storage"), Some(("", "persistentvolumeclaims")));
        assert_eq!(counted_kind("services.nodeports"), Some(("", "services")));
        assert_eq!(counted_kind("gold.storageclass.storage.k8s.io/requests.storage"), None);
    }

    #[test]
    fn a_pod_must_give_what_a_quota_limits() {
        let p = pod(json!([
            {"name": "web", "resources": {"limits": {"cpu": "1"}}},
            {"name": "side"}
        ]));
        let names = ["requests.cpu", "limits.cpu", "memory", "pods"];
        assert_eq!(
            missing_resources(&p, names.into_iter()),
            "must specify requests.cpu for: side; limits.cpu for: side; memory for: web,side"
        );
        assert_eq!(missing_resources(&p, ["pods", "count/pods"].into_iter()), "");
    }

    #[test]
    fn amounts_read_as_quantities() {
        assert_eq!(format("pods", 3 * ONE), "3");
        assert_eq!(format("requests.cpu", 1500), "1500m");
        assert_eq!(format("requests.cpu", 2000), "2");
        assert_eq!(format("limits.memory", 256 * (1 << 20) * ONE), "256Mi");
        assert_eq!(format("requests.storage", 5_000_000_000 * ONE), "5G");
        assert_eq!(format("memory", 1001 * ONE), "1001");
        assert_eq!(format("memory", 0), "0");
    }
}
