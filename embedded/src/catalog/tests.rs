use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::*;

fn find<'a>(infos: &'a [ResourceInfo], group: &str, resource: &str) -> &'a ResourceInfo {
    infos
        .iter()
        .find(|i| i.group == group && i.resource == resource)
        .unwrap_or_else(|| panic!("missing {group}/{resource}"))
}

fn sub_names(info: &ResourceInfo) -> Vec<&'static str> {
    info.subresources.iter().map(Subresource::name).collect()
}

#[test]
fn builtins_have_scope_short_names_and_subresources() {
    let infos = builtin_resources();
    // (group, resource, kind, namespaced, short names, subresources, in category all)
    type Row<'a> = (&'a str, &'a str, &'a str, bool, &'a [&'a str], &'a [&'a str], bool);
    let expected: &[Row<'_>] = &[
        ("", "namespaces", "Namespace", false, &["ns"], &["status", "finalize"], false),
        ("", "configmaps", "ConfigMap", true, &["cm"], &[], false),
        ("", "secrets", "Secret", true, &[], &[], false),
        ("", "services", "Service", true, &["svc"], &["status", "proxy"], true),
        ("", "serviceaccounts", "ServiceAccount", true, &["sa"], &["token"], false),
        (
            "",
            "pods",
            "Pod",
            true,
            &["po"],
            &[
                "status",
                "log",
                "eviction",
                "attach",
                "exec",
                "portforward",
                "proxy",
                "ephemeralcontainers",
            ],
            true,
        ),
        ("", "nodes", "Node", false, &["no"], &["status", "proxy"], false),
        ("", "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"], &["status"], false),
        ("", "events", "Event", true, &["ev"], &[], false),
        ("", "endpoints", "Endpoints", true, &["ep"], &[], false),
        ("", "persistentvolumes", "PersistentVolume", false, &["pv"], &["status"], false),
        (
            "",
            "replicationcontrollers",
            "ReplicationController",
            true,
            &["rc"],
            &["status", "scale"],
            true,
        ),
        ("apps", "statefulsets", "StatefulSet", true, &["sts"], &["status", "scale"], true),
        ("batch", "cronjobs", "CronJob", true, &["cj"], &["status"], true),
        ("networking.k8s.io", "ingresses", "Ingress", true, &["ing"], &["status"], false),
        ("discovery.k8s.io", "endpointslices", "EndpointSlice", true, &[], &[], false),
        ("apps", "controllerrevisions", "ControllerRevision", true, &[], &[], false),
        ("", "limitranges", "LimitRange", true, &["limits"], &[], false),
        ("", "resourcequotas", "ResourceQuota", true, &["quota"], &["status"], false),
        ("rbac.authorization.k8s.io", "roles", "Role", true, &[], &[], false),
        ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, &[], &[], false),
        ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, &[], &[], false),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            &[],
            false,
        ),
        (
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            &["status"],
            false,
        ),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
            &["hpa"],
            &["status"],
            true,
        ),
        ("networking.k8s.io", "ingressclasses", "IngressClass", false, &[], &[], false),
        ("networking.k8s.io", "networkpolicies", "NetworkPolicy", true, &["netpol"], &[], false),
        ("scheduling.k8s.io", "priorityclasses", "PriorityClass", false, &["pc"], &[], false),
        ("storage.k8s.io", "storageclasses", "StorageClass", false, &["sc"], &[], false),
        ("storage.k8s.io", "csidrivers", "CSIDriver", false, &[], &[], false),
        ("storage.k8s.io", "csinodes", "CSINode", false, &[], &[], false),
        ("storage.k8s.io", "volumeattachments", "VolumeAttachment", false, &[], &["status"], false),
        ("node.k8s.io", "runtimeclasses", "RuntimeClass", false, &[], &[], false),
        ("", "podtemplates", "PodTemplate", true, &[], &[], false),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
            &["csr"],
            &["status", "approval"],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            false,
            &[],
            &[],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            false,
            &[],
            &[],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            false,
            &[],
            &["status"],
            false,
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            false,
            &[],
            &[],
            false,
        ),
        ("apiregistration.k8s.io", "apiservices", "APIService", false, &[], &["status"], false),
        ("events.k8s.io", "events", "Event", true, &["ev"], &[], false),
        ("apps", "deployments", "Deployment", true, &["deploy"], &["status", "scale"], true),
        ("apps", "daemonsets", "DaemonSet", true, &["ds"], &["status"], true),
        ("apps", "replicasets", "ReplicaSet", true, &["rs"], &["status", "scale"], true),
        ("batch", "jobs", "Job", true, &[], &["status"], true),
        ("coordination.k8s.io", "leases", "Lease", true, &[], &[], false),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            &["status"],
            false,
        ),
        (
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
            &[],
            &[],
            false,
        ),
        (
            "authorization.k8s.io",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            false,
            &[],
            &[],
            false,
        ),
        (
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
            false,
            &[],
            &[],
            false,
        ),
        ("authentication.k8s.io", "tokenreviews", "TokenReview", false, &[], &[], false),
        (
            "authorization.k8s.io",
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
            &[],
            &[],
            false,
        ),
        (
            "authorization.k8s.io",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
            &[],
            &[],
            false,
        ),
        ("metrics.k8s.io", "pods", "PodMetrics", true, &[], &[], false),
        ("metrics.k8s.io", "nodes", "NodeMetrics", false, &[], &[], false),
    ];
    // Autoscalers are listed once above and served in two versions.
    let autoscaler_versions: Vec<&str> = infos
        .iter()
        .filter(|i| i.resource == "horizontalpodautoscalers")
        .map(|i| i.version.as_str())
        .collect();
    assert_eq!(autoscaler_versions, ["v2", "v1"]);
    assert_eq!(infos.len(), expected.len() + 1);
    for (group, resource, kind, namespaced, short, subs, all) in expected {
        let info = find(&infos, group, resource);
        assert_eq!(&info.kind, kind);
        assert_eq!(info.list_kind, format!("{kind}List"));
        assert_eq!(info.namespaced, *namespaced, "{resource}");
        assert_eq!(info.short_names, *short, "{resource}");
        assert_eq!(sub_names(info), *subs, "{resource}");
        assert_eq!(info.categories.contains(&"all".to_owned()), *all, "{resource}");
        assert!(info.builtin);
        let reviews = group.starts_with("authorization") || group.starts_with("authentication");
        let verbs = match *group {
            _ if reviews => 1,
            "metrics.k8s.io" => 2,
            // Upstream serves no deletecollection of namespaces.
            "" if *resource == "namespaces" => 7,
            _ => 8,
        };
        assert_eq!(info.verbs.len(), verbs, "{resource}");
        assert!(info.schema.get().is_some(), "{resource} has a schema");
    }
    assert_eq!(find(&infos, "", "pods").api_version(), "v1");
    assert_eq!(find(&infos, "apps", "deployments").api_version(), "apps/v1");
    assert_eq!(
        find(&infos, "autoscaling", "horizontalpodautoscalers").api_version(),
        "autoscaling/v2"
    );
    assert_eq!(find(&infos, "", "nodes").scope(), "Cluster");
    let extensions: Vec<&str> = infos
        .iter()
        .filter(|i| i.categories.contains(&"api-extensions".to_owned()))
        .map(|i| i.resource.as_str())
        .collect();
    assert_eq!(
        extensions,
        [
            "customresourcedefinitions",
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "validatingwebhookconfigurations",
            "apiservices",
        ]
    );
}

#[test]
fn deployment_scale_paths() {
    let infos = builtin_resources();
    let deploy = find(&infos, "apps", "deployments");
    assert_eq!(
        deploy.subresource("scale"),
        Some(&Subresource::Scale {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".spec.selector".into()),
        })
    );
    assert!(deploy.has_status());
    assert!(!find(&infos, "", "configmaps").has_status());
}

#[test]
fn builtin_printer_columns_mirror_kubectl() {
    let infos = builtin_resources();
    let visible = |group: &str, resource: &str| -> Vec<String> {
        find(&infos, group, resource)
            .printer_columns
            .iter()
            .filter(|c| c.priority == 0)
            .map(|c| c.name.to_uppercase())
            .collect()
    };
    assert_eq!(visible("", "pods"), ["READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(visible("apps", "deployments"), ["READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(visible("apps", "replicasets"), ["DESIRED", "CURRENT", "READY", "AGE"]);
    assert_eq!(visible("batch", "jobs"), ["STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(visible("", "services"), ["TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]);
    assert_eq!(visible("", "configmaps"), ["DATA", "AGE"]);
    assert_eq!(visible("", "secrets"), ["TYPE", "DATA", "AGE"]);
    assert_eq!(visible("", "namespaces"), ["STATUS", "AGE"]);
    assert_eq!(visible("", "events"), ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(visible("apiextensions.k8s.io", "customresourcedefinitions"), ["CREATED AT"]);
    assert_eq!(visible("coordination.k8s.io", "leases"), ["HOLDER", "AGE"]);
    assert_eq!(visible("", "serviceaccounts"), ["SECRETS", "AGE"]);
    assert_eq!(visible("", "endpoints"), ["ENDPOINTS", "AGE"]);
    assert_eq!(
        visible("discovery.k8s.io", "endpointslices"),
        ["ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    );
    assert_eq!(
        visible("", "persistentvolumes"),
        [
            "CAPACITY",
            "ACCESS MODES",
            "RECLAIM POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "REASON",
            "AGE"
        ]
    );
    assert_eq!(visible("", "replicationcontrollers"), ["DESIRED", "CURRENT", "READY", "AGE"]);
    assert_eq!(visible("apps", "statefulsets"), ["READY", "AGE"]);
    assert_eq!(
        visible("batch", "cronjobs"),
        ["SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    );
    assert_eq!(
        visible("networking.k8s.io", "ingresses"),
        ["CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_eq!(visible("", "podtemplates"), ["CONTAINERS", "IMAGES", "POD LABELS"]);
    for webhooks in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        assert_eq!(visible("admissionregistration.k8s.io", webhooks), ["WEBHOOKS", "AGE"]);
    }
    assert_eq!(
        visible("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ["VALIDATIONS", "PARAMKIND", "AGE"]
    );
    assert_eq!(
        visible("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ["POLICYNAME", "PARAMREF", "AGE"]
    );
    assert_eq!(visible("apiregistration.k8s.io", "apiservices"), ["SERVICE", "AVAILABLE", "AGE"]);
    assert_eq!(
        visible("certificates.k8s.io", "certificatesigningrequests"),
        ["AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    );
    assert_eq!(visible("node.k8s.io", "runtimeclasses"), ["HANDLER", "AGE"]);
    assert_eq!(
        visible("storage.k8s.io", "csidrivers"),
        [
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE"
        ]
    );
    assert_eq!(visible("storage.k8s.io", "csinodes"), ["DRIVERS", "AGE"]);
    assert_eq!(
        visible("storage.k8s.io", "volumeattachments"),
        ["ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    );
}

#[test]
fn every_computed_column_is_rendered_by_table() {
    for info in builtin_resources() {
        for column in &info.printer_columns {
            if let Some(name) = column.json_path.strip_prefix("computed:") {
                assert!(crate::table::is_known_computed(name), "{}: {name}", info.resource);
            }
        }
    }
}

fn contains_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| contains_key(v, key)),
        Value::Array(items) => items.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}

/// A JSON reference (`"$ref": "<string>"`; JSONSchemaProps has a *property* named `$ref`).
fn has_reference(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            map.get("$ref").is_some_and(Value::is_string) || map.values().any(has_reference)
        }
        Value::Array(items) => items.iter().any(has_reference),
        _ => false,
    }
}

#[test]
fn builtin_schemas_are_self_contained_with_patch_metadata() {
    for info in builtin_resources() {
        let schema = info.schema.get().unwrap();
        assert!(!has_reference(&schema), "{} has a $ref", info.resource);
        assert!(schema.get("$schema").is_none(), "{}", info.resource);
        assert!(schema.get("components").is_none(), "{}", info.resource);
        assert_eq!(schema["type"], "object", "{}", info.resource);
        assert!(
            schema.pointer("/properties/metadata/properties/name").is_some(),
            "{}",
            info.resource
        );
        let required = schema.get("required").and_then(Value::as_array);
        assert!(
            !required.into_iter().flatten().any(|field| field == "metadata"),
            "{}: metadata is not required, as upstream",
            info.resource
        );
    }
    let infos = builtin_resources();
    let pod = find(&infos, "", "pods").schema.get().unwrap();
    let containers = pod.pointer("/properties/spec/properties/containers").unwrap();
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    let ports = containers.pointer("/items/properties/ports").unwrap();
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    let volumes = pod.pointer("/properties/spec/properties/volumes").unwrap();
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let svc = find(&infos, "", "services").schema.get().unwrap();
    assert_eq!(
        svc.pointer("/properties/spec/properties/ports/x-kubernetes-patch-merge-key").unwrap(),
        "port"
    );
    for webhooks in ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"] {
        let config = find(&infos, "admissionregistration.k8s.io", webhooks).schema.get().unwrap();
        assert_eq!(config["properties"]["webhooks"]["x-kubernetes-patch-merge-key"], "name");
    }
    let csi_node = find(&infos, "storage.k8s.io", "csinodes").schema.get().unwrap();
    assert_eq!(
        csi_node
            .pointer("/properties/spec/properties/drivers/x-kubernetes-patch-merge-key")
            .unwrap(),
        "name"
    );
    let deploy = find(&infos, "apps", "deployments").schema.get().unwrap();
    assert_eq!(
        deploy.pointer("/properties/spec/properties/strategy/x-kubernetes-patch-strategy").unwrap(),
        "retainKeys"
    );
    // The recursive JSONSchemaProps of CRDs becomes a preserve-unknown-fields stub.
    let crd =
        find(&infos, "apiextensions.k8s.io", "customresourcedefinitions").schema.get().unwrap();
    assert!(contains_key(&crd, "x-kubernetes-preserve-unknown-fields"));
}

pub(crate) fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "modeldeployments.serving.keelson.dev"},
        "spec": {
            "group": "serving.keelson.dev",
            "scope": "Namespaced",
            "names": {
                "plural": "modeldeployments", "singular": "modeldeployment", "kind": "ModelDeployment",
                "shortNames": ["md"], "categories": ["keelson"]
            },
            "versions": [
                {
                    "name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }}},
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}
                    },
                    "additionalPrinterColumns": [
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                        {"name": "Model", "type": "string", "jsonPath": ".spec.model", "priority": 1, "description": "Model name"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                    ],
                    "selectableFields": [{"jsonPath": ".spec.model"}]
                },
                {"name": "v1alpha0", "served": false, "storage": false}
            ]
        }
    }))
    .unwrap()
}

#[test]
fn from_crd_builds_one_info_per_served_version() {
    let infos = ResourceInfo::from_crd(&widget_crd());
    assert_eq!(infos.len(), 1);
    let info = &infos[0];
    assert_eq!(info.api_version(), "serving.keelson.dev/v1alpha1");
    assert_eq!(
        (info.resource.as_str(), info.singular.as_str()),
        ("modeldeployments", "modeldeployment")
    );
    assert_eq!(
        (info.kind.as_str(), info.list_kind.as_str()),
        ("ModelDeployment", "ModelDeploymentList")
    );
    assert!(info.namespaced && !info.builtin);
    assert_eq!(info.short_names, ["md"]);
    assert_eq!(info.categories, ["keelson"]);
    assert_eq!(info.verbs, CR_VERBS);
    assert_eq!(
        info.subresources,
        [
            Subresource::Status,
            Subresource::Scale {
                spec_replicas_path: ".spec.replicas".into(),
                status_replicas_path: ".status.replicas".into(),
                label_selector_path: Some(".status.selector".into()),
            }
        ]
    );
    let names: Vec<&str> = info.printer_columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Replicas", "Ready", "Model", "Age"]);
    assert_eq!(info.printer_columns[2].priority, 1);
    assert_eq!(info.printer_columns[2].description, "Model name");
    assert_eq!(info.printer_columns[3].type_, "date");
    assert_eq!(
        info.schema.get().unwrap()["properties"]["spec"]["properties"]["replicas"]["type"],
        "integer"
    );
    assert_eq!(info.selectable_fields, ["spec.model"]);
    assert!(info.supports_field("spec.model"));
    assert!(info.supports_field("metadata.name"));
    assert!(!info.supports_field("spec.replicas"));
}

#[test]
fn from_crd_defaults_singular_and_list_kind() {
    let mut crd = widget_crd();
    crd.spec.names.singular = None;
    crd.spec.names.list_kind = None;
    crd.spec.scope = "Cluster".into();
    let info = &ResourceInfo::from_crd(&crd)[0];
    assert_eq!(info.singular, "modeldeployment");
    assert_eq!(info.list_kind, "ModelDeploymentList");
    assert!(!info.namespaced);
}

#[test]
fn kube_version_priority() {
    let mut versions = vec![
        "v1alpha1",
        "foo",
        "v1",
        "v2beta1",
        "v1beta2",
        "v2",
        "v11alpha2",
        "v1beta1",
        "v1alpha",
    ];
    versions.sort_by(|a, b| compare_kube_versions(a, b));
    assert_eq!(
        versions,
        ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo", "v1alpha"]
    );
}
