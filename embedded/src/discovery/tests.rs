use serde_json::{Value, json};

use super::*;
use crate::catalog::{ResourceInfo, builtin_resources, tests::widget_crd};

const KUBECTL_132: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

fn catalog() -> Vec<std::sync::Arc<ResourceInfo>> {
    let mut infos = builtin_resources();
    let mut crd = widget_crd();
    // A second served version and a second CRD group.
    let mut v1 = crd.spec.versions[0].clone();
    v1.name = "v1".into();
    crd.spec.versions.push(v1);
    infos.extend(ResourceInfo::from_crd(&crd));
    let mut other = widget_crd();
    other.spec.group = "alpha.example.com".into();
    infos.extend(ResourceInfo::from_crd(&other));
    infos.into_iter().map(std::sync::Arc::new).collect()
}

#[test]
fn negotiation_matches_client_go() {
    assert_eq!(negotiate(KUBECTL_132), DiscoveryFormat::AggregatedV2);
    assert_eq!(
        negotiate(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ),
        DiscoveryFormat::AggregatedV2Beta1
    );
    assert_eq!(negotiate("application/json"), DiscoveryFormat::Legacy);
    assert_eq!(negotiate(""), DiscoveryFormat::Legacy);
    assert_eq!(negotiate("*/*"), DiscoveryFormat::Legacy);
    // An unknown aggregated version is skipped, not chosen.
    assert_eq!(
        negotiate(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json"
        ),
        DiscoveryFormat::Legacy
    );
    // Protobuf first (kube-rs / client-go protobuf clients) falls through to JSON.
    assert_eq!(
        negotiate(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        DiscoveryFormat::AggregatedV2
    );
    // q-values are honoured.
    assert_eq!(
        negotiate(
            "application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        DiscoveryFormat::AggregatedV2
    );
    assert_eq!(
        content_type(DiscoveryFormat::AggregatedV2),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(
        content_type(DiscoveryFormat::AggregatedV2Beta1),
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    );
    assert_eq!(content_type(DiscoveryFormat::Legacy), "application/json");
    // The Accept kube-rs sends for aggregated discovery.
    assert_eq!(
        negotiate(kube_core::discovery::v2::ACCEPT_AGGREGATED_DISCOVERY_V2),
        DiscoveryFormat::AggregatedV2
    );
}

fn resource<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn legacy_documents() {
    let infos = catalog();
    assert_eq!(
        api_versions(&infos),
        json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
    );

    let core = resource_list(&infos, "", "v1").unwrap();
    assert_eq!(
        (core["kind"].as_str(), core["groupVersion"].as_str()),
        (Some("APIResourceList"), Some("v1"))
    );
    let pods = resource(&core, "pods");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(resource(&core, "pods/log")["verbs"], json!(["get"]));
    assert_eq!(resource(&core, "pods/status")["kind"], "Pod");
    // What `kubectl drain` looks for before it evicts rather than deletes.
    let eviction = resource(&core, "pods/eviction");
    assert_eq!(
        (&eviction["group"], &eviction["version"], &eviction["kind"], &eviction["verbs"]),
        (&json!("policy"), &json!("v1"), &json!("Eviction"), &json!(["create"]))
    );
    // The streams kubectl exec, attach and port-forward open, in the core group itself.
    let exec = resource(&core, "pods/exec");
    assert_eq!(
        (&exec["kind"], &exec["verbs"]),
        (&json!("PodExecOptions"), &json!(["create", "get"]))
    );
    assert!(exec.get("group").is_none() && exec.get("version").is_none(), "{exec}");
    assert_eq!(resource(&core, "pods/attach")["kind"], "PodAttachOptions");
    assert_eq!(resource(&core, "pods/portforward")["kind"], "PodPortForwardOptions");
    let proxy = resource(&core, "services/proxy");
    assert_eq!(
        (&proxy["kind"], &proxy["verbs"]),
        (&json!("ServiceProxyOptions"), &json!(["create", "delete", "get", "patch", "update"]))
    );
    assert_eq!(resource(&core, "namespaces")["namespaced"], false);
    assert!(resource(&core, "configmaps").get("shortNames").is_some());
    assert!(resource(&core, "secrets").get("shortNames").is_none());
    let names: Vec<&str> =
        core["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);

    let apps = resource_list(&infos, "apps", "v1").unwrap();
    assert_eq!(apps["groupVersion"], "apps/v1");
    let scale = resource(&apps, "deployments/scale");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    assert_eq!(scale["verbs"], json!(["get", "patch", "update"]));
    let token = resource(&core, "serviceaccounts/token");
    assert_eq!(
        (&token["group"], &token["version"], &token["kind"], &token["verbs"]),
        (&json!("authentication.k8s.io"), &json!("v1"), &json!("TokenRequest"), &json!(["create"]))
    );
    let cr_scale = resource(
        resource_list(&infos, "serving.keelson.dev", "v1alpha1").as_ref().unwrap(),
        "modeldeployments/scale",
    )
    .clone();
    assert_eq!(cr_scale["kind"], "Scale");
    assert!(resource_list(&infos, "apps", "v2").is_none());

    let groups = group_list(&infos);
    assert_eq!(groups["kind"], "APIGroupList");
    let names: Vec<&str> =
        groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "apps",
            "events.k8s.io",
            "batch",
            "networking.k8s.io",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "discovery.k8s.io",
            "rbac.authorization.k8s.io",
            "policy",
            "autoscaling",
            "scheduling.k8s.io",
            "storage.k8s.io",
            "node.k8s.io",
            "certificates.k8s.io",
            "admissionregistration.k8s.io",
            "apiregistration.k8s.io",
            "authorization.k8s.io",
            "authentication.k8s.io",
            "metrics.k8s.io",
            "alpha.example.com",
            "serving.keelson.dev"
        ]
    );
    assert!(!names.contains(&""));
    assert!(
        names.iter().position(|n| *n == "apps")
            < names.iter().position(|n| *n == "alpha.example.com")
    );
    assert!(
        names.iter().position(|n| *n == "alpha.example.com")
            < names.iter().position(|n| *n == "serving.keelson.dev")
    );

    let serving = group(&infos, "serving.keelson.dev").unwrap();
    assert_eq!(serving["kind"], "APIGroup");
    assert_eq!(
        serving["preferredVersion"],
        json!({"groupVersion": "serving.keelson.dev/v1", "version": "v1"})
    );
    assert_eq!(serving["versions"][1]["version"], "v1alpha1");
    assert!(group(&infos, "nope.example.com").is_none());
    assert!(group(&infos, "").is_none());
}

#[test]
fn aggregated_documents() {
    let infos = catalog();
    let api = api_root(&infos, DiscoveryFormat::AggregatedV2);
    assert_eq!(api["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(api["kind"], "APIGroupDiscoveryList");
    assert_eq!(api["items"].as_array().unwrap().len(), 1);
    let core = &api["items"][0]["versions"][0];
    assert_eq!(core["version"], "v1");
    assert_eq!(core["freshness"], "Current");
    let pods =
        core["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap();
    assert_eq!(pods["responseKind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
    assert_eq!(pods["scope"], "Namespaced");
    assert_eq!(pods["singularResource"], "pod");
    let subs: Vec<&str> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(
        subs,
        [
            "status",
            "log",
            "eviction",
            "attach",
            "exec",
            "portforward",
            "proxy",
            "ephemeralcontainers"
        ]
    );

    let apis = apis_root(&infos, DiscoveryFormat::AggregatedV2Beta1);
    assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    let items = apis["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|g| g["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "apps");
    assert_eq!(names.last(), Some(&"serving.keelson.dev"));
    let apps = &items[0]["versions"][0]["resources"];
    let deploy = apps.as_array().unwrap().iter().find(|r| r["resource"] == "deployments").unwrap();
    let scale = deploy["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "scale")
        .unwrap();
    assert_eq!(
        scale["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    let status = deploy["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "status")
        .unwrap();
    assert_eq!(status["responseKind"]["kind"], "Deployment");
    let serving = items.last().unwrap();
    let versions: Vec<&str> = serving["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1alpha1"]);
    let md = &serving["versions"][0]["resources"][0];
    assert_eq!(md["shortNames"], json!(["md"]));
    assert_eq!(md["categories"], json!(["keelson"]));
    assert_eq!(md["verbs"].as_array().unwrap().len(), 8);
    // The aggregated document deserialises into kube-core's types.
    let typed: kube_core::discovery::v2::APIGroupDiscoveryList =
        serde_json::from_value(apis.clone()).unwrap();
    assert_eq!(typed.items.len(), items.len());

    assert_eq!(api_root(&infos, DiscoveryFormat::Legacy)["kind"], "APIVersions");
    assert_eq!(apis_root(&infos, DiscoveryFormat::Legacy)["kind"], "APIGroupList");
}
