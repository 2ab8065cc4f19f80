//! The Endpoints and EndpointSlices of a Service with a selector: the addresses of the pods it
//! selects, ready or not, each with the Service's ports resolved against the pod (a named
//! `targetPort` is looked up among the pod's container ports). Services without a selector keep
//! the Endpoints their users write (such as `kubernetes`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Pod, Service,
    ServicePort,
};
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointPort as DiscoveryPort, EndpointSlice,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::node::pods;

/// The label upstream puts on the Endpoints of a headless Service.
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// The label naming an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming the controller of an EndpointSlice.
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// Upstream's EndpointSlice controller, whose slices these stand for.
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// A Service port resolved against a pod: name, number, protocol.
type Port = (Option<String>, i32, String);

/// The pods of a Service that share the same resolved ports, with their readiness.
struct Group<'a> {
    ports: Vec<Port>,
    pods: Vec<(&'a Pod, &'a str, bool)>,
}

/// The selected, active pods with an address, grouped by the ports they resolve; `None` when
/// the Service has no selector (its Endpoints are its users' to write) or is `ExternalName`.
fn groups<'a>(service: &Service, pods: &'a [Pod]) -> Option<Vec<Group<'a>>> {
    let spec = service.spec.as_ref()?;
    let selector = spec.selector.as_ref().filter(|s| !s.is_empty())?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    let ports = spec.ports.as_deref().unwrap_or_default();
    // Pods with the same resolved ports share a subset, as upstream packs them.
    let mut groups: BTreeMap<Vec<Port>, Group<'a>> = BTreeMap::new();
    for pod in pods.iter().filter(|pod| selects(selector, pod) && pods::is_active(pod)) {
        let Some(ip) = pod_ip(pod) else { continue };
        let resolved: Vec<Port> = ports
            .iter()
            .filter_map(|port| {
                let number = target_port(port, pod)?;
                Some((port.name.clone(), number, port.protocol.clone().unwrap_or("TCP".into())))
            })
            .collect();
        if resolved.is_empty() && !ports.is_empty() {
            continue;
        }
        let group = groups
            .entry(resolved.clone())
            .or_insert_with(|| Group { ports: resolved, pods: Vec::new() });
        group.pods.push((pod, ip, pods::is_ready(pod)));
    }
    Some(groups.into_values().collect())
}

/// The labels of the Service, and upstream's headless marker.
fn labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    if service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None") {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels
}

/// The Endpoints `service` should have given the pods of its namespace; `None` when the Service
/// has no selector or is an `ExternalName` one.
pub fn plan_endpoints(service: &Service, pods: &[Pod]) -> Option<Endpoints> {
    let subsets: Vec<EndpointSubset> = groups(service, pods)?
        .into_iter()
        .map(|group| {
            let (ready, not_ready): (Vec<_>, Vec<_>) =
                group.pods.iter().partition(|(_, _, ready)| *ready);
            // In upstream's order: by address (as text), then by pod uid.
            let addresses = |pods: Vec<&(&Pod, &str, bool)>| {
                let mut list: Vec<EndpointAddress> =
                    pods.into_iter().map(|(pod, ip, _)| address(pod, ip)).collect();
                let uid = |a: &EndpointAddress| a.target_ref.as_ref().and_then(|r| r.uid.clone());
                list.sort_by(|a, b| (&a.ip, uid(a)).cmp(&(&b.ip, uid(b))));
                (!list.is_empty()).then_some(list)
            };
            EndpointSubset {
                addresses: addresses(ready),
                not_ready_addresses: addresses(not_ready),
                ports: (!group.ports.is_empty()).then(|| {
                    group
                        .ports
                        .iter()
                        .map(|(name, port, protocol)| EndpointPort {
                            name: name.clone(),
                            port: *port,
                            protocol: Some(protocol.clone()),
                            ..EndpointPort::default()
                        })
                        .collect()
                }),
            }
        })
        .collect();
    let labels = labels(service);
    Some(Endpoints {
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            ..ObjectMeta::default()
        },
        subsets: (!subsets.is_empty()).then_some(subsets),
    })
}

/// The EndpointSlices `service` should have: one per set of resolved ports (one with no
/// endpoints when no pod is selected), named `<service>-<n>` and labelled with the Service's
/// name, as `kubectl describe service` finds them; `None` as for [`plan_endpoints`].
pub fn plan_endpoint_slices(service: &Service, pods: &[Pod]) -> Option<Vec<EndpointSlice>> {
    let mut groups = groups(service, pods)?;
    if groups.is_empty() {
        groups.push(Group { ports: Vec::new(), pods: Vec::new() });
    }
    let name = service.metadata.name.clone().unwrap_or_default();
    let mut labels = labels(service);
    labels.insert(SERVICE_NAME_LABEL.into(), name.clone());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    let slices = groups
        .into_iter()
        .enumerate()
        .map(|(index, group)| EndpointSlice {
            metadata: ObjectMeta {
                name: Some(format!("{name}-{index}")),
                namespace: service.metadata.namespace.clone(),
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            endpoints: group
                .pods
                .iter()
                .map(|(pod, ip, ready)| {
                    let address = address(pod, ip);
                    Endpoint {
                        addresses: vec![address.ip],
                        conditions: Some(EndpointConditions {
                            ready: Some(*ready),
                            serving: Some(*ready),
                            terminating: Some(false),
                        }),
                        hostname: address.hostname,
                        node_name: address.node_name,
                        target_ref: address.target_ref,
                        ..Endpoint::default()
                    }
                })
                .collect(),
            ports: (!group.ports.is_empty()).then(|| {
                group
                    .ports
                    .into_iter()
                    .map(|(name, port, protocol)| DiscoveryPort {
                        // Always set, as upstream's controller writes it: kubectl's describe
                        // reads it through the pointer.
                        name: Some(name.unwrap_or_default()),
                        port: Some(port),
                        protocol: Some(protocol),
                        ..DiscoveryPort::default()
                    })
                    .collect()
            }),
        })
        .collect();
    Some(slices)
}

/// Whether the pod carries every label of the selector.
pub fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.metadata.labels.as_ref();
    selector.iter().all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

fn pod_ip(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.pod_ip.as_deref().filter(|ip| !ip.is_empty())
}

fn address(pod: &Pod, ip: &str) -> EndpointAddress {
    let spec = pod.spec.as_ref();
    EndpointAddress {
        ip: ip.to_owned(),
        hostname: spec
            .and_then(|s| s.hostname.clone())
            .filter(|_| spec.and_then(|s| s.subdomain.as_deref()).is_some_and(|d| !d.is_empty())),
        node_name: pods::node_name(pod).map(str::to_owned),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
    }
}

/// The port number `port` reaches on `pod`: its `targetPort` (the port itself when unset), or
/// the container port of that name; `None` when the pod has no port of that name.
fn target_port(port: &ServicePort, pod: &Pod) -> Option<i32> {
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(number)) => Some(*number),
        Some(IntOrString::String(name)) => {
            let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
            containers
                .iter()
                .flat_map(|c| c.ports.as_deref().unwrap_or_default())
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| p.container_port)
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, PodCondition, PodSpec, PodStatus, ServiceSpec,
    };
    use serde_json::json;

    use super::*;

    fn service(ports: serde_json::Value, cluster_ip: &str) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"selector": {"app": "web"}, "ports": ports, "clusterIP": cluster_ip},
        }))
        .unwrap()
    }

    fn pod(name: &str, ip: Option<&str>, ready: bool, app: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{name}")),
                labels: Some([("app".to_owned(), app.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some("vm".into()),
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(vec![ContainerPort {
                        name: Some("http".into()),
                        container_port: 8080,
                        ..ContainerPort::default()
                    }]),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                pod_ip: ip.map(Into::into),
                conditions: ready.then(|| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        ..PodCondition::default()
                    }]
                }),
                ..PodStatus::default()
            }),
        }
    }

    #[test]
    fn selected_pods_with_addresses_are_listed_by_readiness_with_resolved_ports() {
        let service =
            service(json!([{"name": "http", "port": 80, "targetPort": "http"}]), "10.96.0.9");
        let pods = [
            pod("a", Some("10.244.0.1"), true, "web"),
            pod("b", Some("10.244.0.2"), false, "web"),
            pod("c", None, true, "web"),
            pod("d", Some("10.244.0.4"), true, "other"),
        ];
        let endpoints = plan_endpoints(&service, &pods).unwrap();
        assert_eq!(endpoints.metadata.name.as_deref(), Some("web"));
        assert_eq!(endpoints.metadata.labels.unwrap().get("app").map(String::as_str), Some("web"));
        let subsets = endpoints.subsets.unwrap();
        assert_eq!(subsets.len(), 1);
        let ips = |list: &Option<Vec<EndpointAddress>>| {
            list.iter().flatten().map(|a| a.ip.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ips(&subsets[0].addresses), ["10.244.0.1"]);
        assert_eq!(ips(&subsets[0].not_ready_addresses), ["10.244.0.2"]);
        let port = &subsets[0].ports.as_ref().unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.port, port.protocol.as_deref()),
            (Some("http"), 8080, Some("TCP"))
        );
        let target = subsets[0].addresses.as_ref().unwrap()[0].target_ref.clone().unwrap();
        assert_eq!(target.name.as_deref(), Some("a"));

        // Addresses come in upstream's order whatever the pods' order.
        let pods = [
            pod("z", Some("10.244.0.3"), true, "web"),
            pod("y", Some("10.244.0.12"), true, "web"),
            pod("x", Some("10.244.0.2"), true, "web"),
        ];
        let subsets = plan_endpoints(&service, &pods).unwrap().subsets.unwrap();
        assert_eq!(ips(&subsets[0].addresses), ["10.244.0.12", "10.244.0.2", "10.244.0.3"]);
    }

    #[test]
    fn no_selector_no_endpoints_and_headless_services_are_labelled() {
        let mut manual = service(json!([{"port": 443}]), "10.96.0.1");
        manual.spec = Some(ServiceSpec { selector: None, ..manual.spec.unwrap() });
        assert!(plan_endpoints(&manual, &[]).is_none());

        let headless = service(json!([{"port": 5432}]), "None");
        let endpoints = plan_endpoints(&headless, &[]).unwrap();
        assert!(endpoints.subsets.is_none(), "no pods, no subsets");
        assert!(endpoints.metadata.labels.unwrap().contains_key(HEADLESS_LABEL));
    }

    #[test]
    fn slices_carry_the_same_endpoints_with_conditions_and_the_service_name() {
        let named = service(json!([{"name": "http", "port": 80, "targetPort": 8080}]), "10.96.0.9");
        let pods =
            [pod("a", Some("10.244.0.1"), true, "web"), pod("b", Some("10.244.0.2"), false, "web")];
        let slices = plan_endpoint_slices(&named, &pods).unwrap();
        assert_eq!(slices.len(), 1);
        let slice = &slices[0];
        assert_eq!(slice.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(slice.metadata.labels.as_ref().unwrap()[SERVICE_NAME_LABEL], "web");
        let ready: Vec<(String, Option<bool>)> = slice
            .endpoints
            .iter()
            .map(|e| (e.addresses[0].clone(), e.conditions.as_ref().unwrap().ready))
            .collect();
        assert_eq!(ready, [("10.244.0.1".into(), Some(true)), ("10.244.0.2".into(), Some(false))]);
        assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(8080));
        let unnamed = service(json!([{"port": 80}]), "10.96.0.9");
        let slices = plan_endpoint_slices(&unnamed, &pods).unwrap();
        assert_eq!(
            slices[0].ports.as_ref().unwrap()[0].name.as_deref(),
            Some(""),
            "kubectl needs the name"
        );

        let empty = plan_endpoint_slices(&named, &[]).unwrap();
        assert_eq!(
            (empty.len(), empty[0].endpoints.len()),
            (1, 0),
            "a selected nobody still has a slice"
        );
    }

    #[test]
    fn a_pod_without_the_named_port_is_left_out() {
        let service = service(json!([{"port": 80, "targetPort": "metrics"}]), "10.96.0.9");
        let endpoints =
            plan_endpoints(&service, &[pod("a", Some("10.244.0.1"), true, "web")]).unwrap();
        assert!(endpoints.subsets.is_none());
    }
}
