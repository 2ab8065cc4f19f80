//! Services get what a cluster's API server gives them: a cluster IP from `10.96.0.0/12` (or
//! `None` for a headless Service), node ports from 30000–32767 for `NodePort` and
//! `LoadBalancer` Services, both unique among all Services; and the `default/kubernetes`
//! Service with its Endpoints, pointing at this API server.
//!
//! Nothing routes to these addresses on one machine (there is no kube-proxy); they are kept so
//! that manifests, `kubectl get svc` and tools reading `spec.clusterIP` see what they expect.

use std::cell::LazyCell;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, MutexGuard};

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Store, StoreError, WriteOp};

use super::errors::{ApiError, ApiResult, Cause};
use super::objects::{meta_str, now_rfc3339, prepare_create};
use super::paths::{object_key, resource_prefix};

/// The first address of the service range, `10.96.0.0`.
const RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
/// The size of the range (a /12).
const RANGE_SIZE: u32 = 1 << 20;
/// The range as users see it in messages.
const RANGE: &str = "10.96.0.0/12";
/// The `kubernetes` Service's address, the first of the range as upstream reserves it.
const KUBERNETES_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);
/// The node port range (upstream's default).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// Serializes allocations: a Service's addresses are chosen and stored under it, so two
/// Services created at once cannot take the same address.
#[derive(Clone, Default)]
pub(crate) struct Allocator(Arc<Mutex<()>>);

impl Allocator {
    /// Gives `service` its cluster IP and node ports, keeping those of `old` (the stored Service
    /// on an update) that the new object leaves out, as upstream does. Hold the returned guard
    /// until the Service is stored.
    pub(crate) async fn allocate(
        &self,
        store: &Store,
        old: Option<&Value>,
        service: &mut Value,
    ) -> ApiResult<MutexGuard<'_, ()>> {
        let guard = self.0.lock().await;
        let name = meta_str(service, "name").unwrap_or_default().to_owned();
        let own_key =
            object_key(services(), meta_str(service, "namespace").unwrap_or_default(), &name);
        // Read only when an address or port must be chosen or checked: most updates keep
        // what the Service holds, and reading every other Service is O(Services).
        let taken = LazyCell::new(|| Taken::of(store, &own_key));
        let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(guard);
        };
        let mut problems = Vec::new();
        let old = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
        if let Some(old) = old {
            drop_type_dependent(old, spec);
            keep_allocations(old, spec);
            problems.extend(changed_cluster_ip(old, spec));
        }
        let held_ip = old.and_then(|old| old.get("clusterIP")).and_then(Value::as_str);
        problems.extend(assign(spec, &taken, held_ip, &name));
        if problems.is_empty() {
            Ok(guard)
        } else {
            Err(ApiError::invalid("", "Service", &name, problems))
        }
    }
}

/// The addresses and node ports other Services hold.
struct Taken {
    ips: BTreeSet<u32>,
    node_ports: BTreeSet<i64>,
}

impl Taken {
    /// What the Services other than the one stored under `own_key` hold.
    fn of(store: &Store, own_key: &str) -> Self {
        let info = services();
        // The `kubernetes` Service's address is reserved even before that Service is stored,
        // for every Service but that one (which may be re-applied with its own address).
        let reserved = (own_key != object_key(info, "default", "kubernetes"))
            .then_some(u32::from(KUBERNETES_IP));
        let mut taken = Taken { ips: reserved.into_iter().collect(), node_ports: BTreeSet::new() };
        let snapshot = store.list(&resource_prefix(info));
        for entry in snapshot.entries().filter(|e| e.key != own_key) {
            let spec = &entry.object["spec"];
            let ips =
                spec["clusterIPs"].as_array().into_iter().flatten().chain([&spec["clusterIP"]]);
            taken.ips.extend(
                ips.filter_map(Value::as_str)
                    .filter_map(|ip| ip.parse::<Ipv4Addr>().ok())
                    .map(u32::from),
            );
            let ports = spec["ports"].as_array().into_iter().flatten();
            taken.node_ports.extend(ports.filter_map(|p| p["nodePort"].as_i64()));
        }
        taken
    }
}

/// Copies the cluster IPs, IP families and node ports of the stored spec that an update leaves
/// out (`kubectl replace` of a manifest without them), for the Service types that keep them.
fn keep_allocations(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let kind = service_type(new).to_owned();
    if kind == "ExternalName" {
        return;
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let missing = new.get(field).is_none_or(|v| v.is_null() || v == "");
        if missing && let Some(value) = old.get(field) {
            new.insert(field.into(), value.clone());
        }
    }
    if kind != "NodePort" && kind != "LoadBalancer" {
        return;
    }
    let old_ports = old.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    for port in new.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if port.get("nodePort").is_some_and(|p| p.as_i64().is_some_and(|p| p != 0)) {
            continue;
        }
        let same = old_ports
            .iter()
            .find(|o| o["port"] == port["port"] && o["protocol"] == port["protocol"]);
        if let Some(node_port) = same.and_then(|o| o.get("nodePort")) {
            port["nodePort"] = node_port.clone();
        }
    }
}

/// Drops what the old type needed and the new one may not have, as upstream's update does:
/// node ports the Service held when it becomes a `ClusterIP` one (or a `LoadBalancer` without
/// node ports), and the external traffic policy when it becomes `ClusterIP` or `ExternalName`.
fn drop_type_dependent(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let kind = service_type(new).to_owned();
    let keeps_node_ports = kind == "NodePort"
        || (kind == "LoadBalancer"
            && new.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if !keeps_node_ports {
        let held: Vec<&Value> = old
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort"))
            .collect();
        for port in new.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(port) = port.as_object_mut()
                && port.get("nodePort").is_some_and(|p| held.contains(&p))
            {
                port.remove("nodePort");
            }
        }
    }
    if (kind == "ClusterIP" || kind == "ExternalName")
        && old.get("externalTrafficPolicy") == new.get("externalTrafficPolicy")
    {
        new.remove("externalTrafficPolicy");
    }
}

/// A cluster IP may not change once set (except by becoming, or ceasing to be, an
/// `ExternalName` Service, which holds none).
fn changed_cluster_ip(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<Cause> {
    let ip = |spec: &Map<String, Value>| {
        spec.get("clusterIP").and_then(Value::as_str).unwrap_or_default().to_owned()
    };
    let (before, after) = (ip(old), ip(new));
    if before.is_empty() || service_type(new) == "ExternalName" || before == after {
        return None;
    }
    Some(invalid("spec.clusterIPs[0]", &after, "may not change once set"))
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

/// Fills in the cluster IP, IP families and node ports `spec` lacks; the problems with those
/// it names itself. `held_ip` is the cluster IP the stored Service holds (on an update), which
/// stays valid.
fn assign(
    spec: &mut Map<String, Value>,
    taken: &LazyCell<Taken, impl FnOnce() -> Taken>,
    held_ip: Option<&str>,
    name: &str,
) -> Vec<Cause> {
    let kind = service_type(spec).to_owned();
    if kind == "ExternalName" {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            spec.remove(field);
        }
        return Vec::new();
    }
    let mut problems = Vec::new();
    let requested = spec.get("clusterIP").and_then(Value::as_str).unwrap_or_default().to_owned();
    let ip = match requested.as_str() {
        "" => match free_ip(taken, name) {
            Some(ip) => ip.to_string(),
            None => {
                problems.push(invalid(
                    "spec.clusterIPs",
                    "",
                    &format!("no addresses left in the range {RANGE}"),
                ));
                String::new()
            }
        },
        "None" => requested,
        text if Some(text) == held_ip => requested,
        text => {
            if let Some(problem) = check_ip(text, taken) {
                problems.push(invalid("spec.clusterIPs[0]", text, &problem));
            }
            requested
        }
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
    spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));

    let wants_node_ports = kind == "NodePort"
        || (kind == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else { return problems };
    let mut used = LazyCell::new(|| taken.node_ports.clone());
    // Requested ports first, so that a port handed out cannot take one asked for further on.
    for (index, port) in ports.iter().enumerate() {
        let Some(given) = port.get("nodePort").and_then(Value::as_i64).filter(|p| *p != 0) else {
            continue;
        };
        let field = format!("spec.ports[{index}].nodePort");
        let problem = if kind == "ClusterIP" {
            Some("may not be used when `type` is 'ClusterIP'".to_owned())
        } else if !NODE_PORTS.contains(&given) {
            Some(format!(
                "provided port is not in the valid range. The range of valid ports is {}-{}",
                NODE_PORTS.start(),
                NODE_PORTS.end()
            ))
        } else if !used.insert(given) {
            Some("provided port is already allocated".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            problems.push(invalid(&field, &given.to_string(), &problem));
        }
    }
    if !wants_node_ports {
        return problems;
    }
    for (index, port) in ports.iter_mut().enumerate() {
        let Some(port) = port.as_object_mut() else { continue };
        if port.get("nodePort").and_then(Value::as_i64).is_some_and(|p| p != 0) {
            continue;
        }
        match free_node_port(&used, &format!("{name}:{index}")) {
            Some(free) => {
                used.insert(free);
                port.insert("nodePort".into(), json!(free));
            }
            None => problems.push(invalid(
                &format!("spec.ports[{index}].nodePort"),
                "",
                "no node ports left",
            )),
        }
    }
    problems
}

fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {detail}"),
        field: field.into(),
    }
}

/// Why a requested cluster IP cannot be had, if it cannot.
fn check_ip(text: &str, taken: &Taken) -> Option<String> {
    let Ok(ip) = text.parse::<Ipv4Addr>() else {
        return Some("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into());
    };
    let offset = u32::from(ip).wrapping_sub(RANGE_START);
    if offset == 0 || offset >= RANGE_SIZE - 1 {
        return Some(format!(
            "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {RANGE}"
        ));
    }
    taken
        .ips
        .contains(&u32::from(ip))
        .then(|| format!("failed to allocate IP {ip}: provided IP is already allocated"))
}

/// A free address, starting from one derived from the Service's name so that names spread
/// over the range, then the next free one after it.
fn free_ip(taken: &Taken, name: &str) -> Option<Ipv4Addr> {
    // Usable offsets: 1 ..= RANGE_SIZE - 2 (not the network or broadcast address).
    let usable = RANGE_SIZE - 2;
    let start = fnv(name) % usable;
    (0..usable)
        .map(|step| RANGE_START + 1 + (start + step) % usable)
        .find(|ip| !taken.ips.contains(ip))
        .map(Ipv4Addr::from)
}

/// A node port not `used`, as upstream hands them out: from the upper band of the range first,
/// starting at one derived from `seed` (the Service's name and the port's index) so that
/// Services spread over it, then the next free one; the lower band only once the upper one is
/// full, as it is kept for Services that ask for a port of their own.
fn free_node_port(used: &BTreeSet<i64>, seed: &str) -> Option<i64> {
    let (start, end) = (*NODE_PORTS.start(), *NODE_PORTS.end());
    // Upstream's lower band: a 32nd of the range, at least 16 ports and at most 128.
    let band = ((end - start + 1) / 32).clamp(16, 128);
    let upper = end - (start + band) + 1;
    let first = i64::from(fnv(seed)) % upper;
    let in_upper = (0..upper).map(|step| start + band + (first + step) % upper);
    in_upper.chain(start..start + band).find(|port| !used.contains(port))
}

/// FNV-1a, a stable spread of names over the range.
fn fnv(text: &str) -> u32 {
    text.bytes()
        .fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193))
}

fn services() -> &'static ResourceInfo {
    builtin_resource("", "services").expect("services are built in")
}

/// Creates or refreshes the `default/kubernetes` Service, its Endpoints and EndpointSlice so that
/// they point at the API server listening on `addr` (its port may change between runs).
pub(crate) async fn ensure_kubernetes(store: &Store, addr: SocketAddr) -> Result<(), StoreError> {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
        IpAddr::V6(ip) if ip.is_unspecified() => Ipv4Addr::LOCALHOST.to_string(),
        ip => ip.to_string(),
    };
    let port = addr.port();
    let service = json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "component": "apiserver", "provider": "kubernetes" },
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_IP.to_string(),
            "clusterIPs": [KUBERNETES_IP.to_string()],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "sessionAffinity": "None",
            "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": port }],
        },
        "status": { "loadBalancer": {} },
    });
    let endpoints = json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" },
        },
        "subsets": [{
            "addresses": [{ "ip": ip }],
            "ports": [{ "name": "https", "port": port, "protocol": "TCP" }],
        }],
    });
    let slice = json!({
        "metadata": {
            "name": "kubernetes",
            "labels": { "kubernetes.io/service-name": "kubernetes" },
        },
        "addressType": "IPv4",
        "endpoints": [{ "addresses": [ip], "conditions": { "ready": true } }],
        "ports": [{ "name": "https", "port": port, "protocol": "TCP" }],
    });
    put(store, services(), service, &["spec"]).await?;
    let info = builtin_resource("", "endpoints").expect("endpoints are built in");
    put(store, info, endpoints, &["subsets"]).await?;
    let info = builtin_resource("discovery.k8s.io", "endpointslices").expect("slices are built in");
    put(store, info, slice, &["endpoints", "ports"]).await
}

/// Stores `object` in `default`, or replaces the stored one's `fields` when they differ.
async fn put(
    store: &Store,
    info: &ResourceInfo,
    object: Value,
    fields: &[&str],
) -> Result<(), StoreError> {
    let name = meta_str(&object, "name").unwrap_or_default().to_owned();
    let key = object_key(info, "default", &name);
    match store.get(&key) {
        Some(entry) if fields.iter().all(|f| entry.object[*f] == object[*f]) => Ok(()),
        Some(entry) => {
            let mut updated = (*entry.object).clone();
            for field in fields {
                updated[*field] = object[*field].clone();
            }
            let op = WriteOp::Update { key, expected_revision: entry.revision, object: updated };
            match store.write(op).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
        None => {
            let object = prepare_create(info, Some("default"), object, &now_rfc3339())
                .expect("the kubernetes Service and Endpoints are valid");
            match store.write(WriteOp::Create { key, object }).await {
                Ok(_) | Err(StoreError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(ips: &[&str], node_ports: &[i64]) -> LazyCell<Taken, impl FnOnce() -> Taken> {
        let taken = Taken {
            ips: ips.iter().map(|ip| u32::from(ip.parse::<Ipv4Addr>().unwrap())).collect(),
            node_ports: node_ports.iter().copied().collect(),
        };
        LazyCell::new(move || taken)
    }

    fn spec(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_cluster_ip_service_gets_a_free_address_in_the_range() {
        let mut s = spec(json!({ "type": "ClusterIP", "ports": [{ "port": 80 }] }));
        assert!(assign(&mut s, &taken(&[], &[]), None, "web").is_empty());
        let ip: Ipv4Addr = s["clusterIP"].as_str().unwrap().parse().unwrap();
        assert_eq!(&ip.octets()[..1], &[10]);
        assert!((96..112).contains(&ip.octets()[1]), "{ip} is in 10.96.0.0/12");
        assert_eq!(s["clusterIPs"], json!([ip.to_string()]));
        assert_eq!(
            (s["ipFamilies"].clone(), s["ipFamilyPolicy"].clone()),
            (json!(["IPv4"]), json!("SingleStack"))
        );
        assert!(s["ports"][0].get("nodePort").is_none(), "no node port for ClusterIP");

        let mut again = spec(json!({ "type": "ClusterIP" }));
        assert!(assign(&mut again, &taken(&[&ip.to_string()], &[]), None, "web").is_empty());
        assert_ne!(again["clusterIP"], s["clusterIP"], "a taken address is not handed out twice");
    }

    #[test]
    fn headless_and_requested_addresses_are_kept_and_checked() {
        let mut headless = spec(json!({ "type": "ClusterIP", "clusterIP": "None" }));
        assert!(assign(&mut headless, &taken(&[], &[]), None, "db").is_empty());
        assert_eq!(headless["clusterIPs"], json!(["None"]));

        let mut fixed = spec(json!({ "clusterIP": "10.96.5.5" }));
        assert!(assign(&mut fixed, &taken(&[], &[]), None, "a").is_empty());
        assert_eq!(fixed["clusterIP"], "10.96.5.5");

        let problems = assign(
            &mut spec(json!({ "clusterIP": "10.96.5.5" })),
            &taken(&["10.96.5.5"], &[]),
            None,
            "b",
        );
        assert_eq!(problems[0].field, "spec.clusterIPs[0]");
        assert!(
            problems[0].message.contains("provided IP is already allocated"),
            "{}",
            problems[0].message
        );

        let problems =
            assign(&mut spec(json!({ "clusterIP": "192.168.0.1" })), &taken(&[], &[]), None, "c");
        assert!(
            problems[0]
                .message
                .contains("not in the valid range. The range of valid IPs is 10.96.0.0/12")
        );
        let problems = assign(
            &mut spec(json!({ "clusterIP": "10.96.0.1" })),
            &taken(&["10.96.0.1"], &[]),
            None,
            "d",
        );
        assert!(
            problems[0].message.contains("already allocated"),
            "the kubernetes Service's address is taken"
        );
    }

    #[test]
    fn node_ports_spread_over_the_upper_band_and_fill_the_lower_one_last() {
        let none = BTreeSet::new();
        let (a, b) =
            (free_node_port(&none, "web:0").unwrap(), free_node_port(&none, "api:0").unwrap());
        assert_ne!(a, b, "names spread over the band");
        assert_eq!(
            free_node_port(&none, "web:0"),
            Some(a),
            "the same name starts at the same port"
        );
        let mut used: BTreeSet<i64> = BTreeSet::from([a]);
        let next = free_node_port(&used, "web:0").unwrap();
        assert_eq!(
            next,
            if a == 32767 { 30086 } else { a + 1 },
            "the next free one, wrapping in the band"
        );
        used.extend(30086..=32767);
        assert!((30000..30086).contains(&free_node_port(&used, "web:0").unwrap()));
        used.extend(30000..30086);
        assert_eq!(free_node_port(&used, "web:0"), None);
    }

    #[test]
    fn node_ports_are_unique_in_their_range() {
        let mut s = spec(
            json!({ "type": "NodePort", "ports": [{ "port": 80 }, { "port": 443, "nodePort": 30001 }] }),
        );
        assert!(assign(&mut s, &taken(&[], &[30000]), None, "np").is_empty());
        let given = s["ports"][0]["nodePort"].as_i64().unwrap();
        assert!((30086..=32767).contains(&given), "from the upper band: {given}");
        assert_eq!(s["ports"][1]["nodePort"], 30001);

        let mut clash =
            spec(json!({ "type": "NodePort", "ports": [{ "port": 80, "nodePort": 30000 }] }));
        let problems = assign(&mut clash, &taken(&[], &[30000]), None, "np2");
        assert_eq!(problems[0].field, "spec.ports[0].nodePort");
        assert!(problems[0].message.contains("provided port is already allocated"));

        let mut outside =
            spec(json!({ "type": "NodePort", "ports": [{ "port": 80, "nodePort": 80 }] }));
        assert!(
            assign(&mut outside, &taken(&[], &[]), None, "np3")[0].message.contains("30000-32767")
        );

        let mut lb = spec(
            json!({ "type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{ "port": 80 }] }),
        );
        assert!(assign(&mut lb, &taken(&[], &[]), None, "lb").is_empty());
        assert!(lb["ports"][0].get("nodePort").is_none());
    }

    #[test]
    fn an_update_keeps_what_was_allocated_and_external_names_hold_none() {
        let old = spec(
            json!({ "type": "NodePort", "clusterIP": "10.96.7.7", "clusterIPs": ["10.96.7.7"],
            "ports": [{ "port": 80, "protocol": "TCP", "nodePort": 31000 }] }),
        );
        let mut new =
            spec(json!({ "type": "NodePort", "ports": [{ "port": 80, "protocol": "TCP" }] }));
        keep_allocations(&old, &mut new);
        let unread = LazyCell::new(|| -> Taken {
            panic!("an update keeping its address reads no other Service")
        });
        let mut kept = spec(json!({ "type": "ClusterIP", "clusterIP": "10.96.7.7" }));
        assert!(assign(&mut kept, &unread, Some("10.96.7.7"), "np").is_empty());
        assert!(assign(&mut new, &taken(&["10.96.7.7"], &[]), Some("10.96.7.7"), "np").is_empty());
        assert_eq!(
            (new["clusterIP"].clone(), new["ports"][0]["nodePort"].clone()),
            (json!("10.96.7.7"), json!(31000))
        );

        let mut moved = spec(
            json!({ "type": "NodePort", "clusterIP": "10.96.8.8", "ports": [{ "port": 80 }] }),
        );
        let problem = changed_cluster_ip(&old, &moved).unwrap();
        assert_eq!(problem.field, "spec.clusterIPs[0]");
        assert!(problem.message.contains("may not change once set"));
        keep_allocations(&old, &mut moved);
        assert_eq!(moved["clusterIP"], "10.96.8.8", "a requested change is not overwritten");

        let mut to_cluster_ip = spec(json!({ "type": "ClusterIP", "clusterIP": "10.96.7.7",
            "externalTrafficPolicy": "Cluster", "ports": [{ "port": 80, "protocol": "TCP", "nodePort": 31000 }] }));
        let old_with_policy = spec(
            json!({ "type": "NodePort", "clusterIP": "10.96.7.7", "externalTrafficPolicy": "Cluster",
            "ports": [{ "port": 80, "protocol": "TCP", "nodePort": 31000 }] }),
        );
        drop_type_dependent(&old_with_policy, &mut to_cluster_ip);
        assert!(
            assign(&mut to_cluster_ip, &taken(&[], &[]), None, "np").is_empty(),
            "node ports held go with the type"
        );
        assert!(to_cluster_ip["ports"][0].get("nodePort").is_none());
        assert!(to_cluster_ip.get("externalTrafficPolicy").is_none());

        let mut external =
            spec(json!({ "type": "ExternalName", "externalName": "example.com", "clusterIP": "" }));
        keep_allocations(&old, &mut external);
        assert!(assign(&mut external, &taken(&[], &[]), None, "ext").is_empty());
        assert!(external.get("clusterIP").is_none());
    }
}
