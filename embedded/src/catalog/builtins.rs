//! The built-in kinds, with kubectl-like printer columns.
//!
//! Printer columns whose `json_path` starts with `computed:` are rendered by
//! `table::computed` (see its docs for the list).

use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, certificates,
    coordination, core, discovery, events, networking, node, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;

use super::schemas::builtin_schema;
use super::{ALL_VERBS, PrinterColumn, ResourceInfo, Schema, Subresource};

const AGE: &str =
    "CreationTimestamp is a timestamp representing the server time when this object was created.";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// HorizontalPodAutoscalers, served as `autoscaling/v2` and `v1` (see `server::convert`).
fn autoscalers() -> ResourceInfo {
    res(
        "autoscaling",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .all_category()
    .subs(vec![Subresource::Status])
    .cols(vec![
        col("Reference", "string", "computed:hpa-reference", "The scaled workload."),
        col("Targets", "string", "computed:hpa-targets", "Current and target metrics."),
        col("MinPods", "string", "computed:or-unset:.spec.minReplicas", "The fewest replicas."),
        col("MaxPods", "integer", ".spec.maxReplicas", "The most replicas."),
        col("Replicas", "integer", ".status.currentReplicas", "The replicas now."),
        age(),
    ])
}

fn res(group: &str, resource: &str, singular: &str, kind: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.to_owned(),
        version: "v1".to_owned(),
        resource: resource.to_owned(),
        singular: singular.to_owned(),
        kind: kind.to_owned(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        verbs: strings(&ALL_VERBS),
        subresources: Vec::new(),
        printer_columns: Vec::new(),
        schema: Schema::None,
        builtin: true,
        selectable_fields: Vec::new(),
    }
}

impl ResourceInfo {
    fn create_only(mut self) -> Self {
        self.verbs = strings(&["create"]);
        self
    }

    fn read_only(mut self) -> Self {
        self.verbs = strings(&["get", "list"]);
        self
    }

    fn without(mut self, verb: &str) -> Self {
        self.verbs.retain(|v| v != verb);
        self
    }

    fn short(mut self, names: &[&str]) -> Self {
        self.short_names = strings(names);
        self
    }
    fn all_category(mut self) -> Self {
        self.categories = strings(&["all"]);
        self
    }
    /// Upstream's category of the kinds that extend the API (`kubectl get api-extensions`).
    fn api_extensions_category(mut self) -> Self {
        self.categories = strings(&["api-extensions"]);
        self
    }
    fn subs(mut self, subresources: Vec<Subresource>) -> Self {
        self.subresources = subresources;
        self
    }
    fn cols(mut self, columns: Vec<PrinterColumn>) -> Self {
        self.printer_columns = columns;
        self
    }
    fn fields(mut self, fields: &[&str]) -> Self {
        self.selectable_fields = strings(fields);
        self
    }
    fn with_version(mut self, version: &str) -> Self {
        version.clone_into(&mut self.version);
        self
    }
    fn with_schema(mut self, generators: fn() -> super::BuiltinSchema) -> Self {
        self.schema = Schema::Builtin(generators());
        self
    }
}

fn col(name: &str, type_: &str, path: &str, description: &str) -> PrinterColumn {
    PrinterColumn::new(name, type_, path, description)
}

fn age() -> PrinterColumn {
    col("Age", "string", "computed:age", AGE)
}

fn scale() -> Subresource {
    Subresource::Scale {
        spec_replicas_path: ".spec.replicas".into(),
        status_replicas_path: ".status.replicas".into(),
        label_selector_path: Some(".spec.selector".into()),
    }
}

/// Wide columns shared by the workload controllers.
fn workload_wide() -> [PrinterColumn; 3] {
    [
        col(
            "Containers",
            "string",
            "computed:containers",
            "Names of each container in the template.",
        )
        .wide(),
        col(
            "Images",
            "string",
            "computed:images",
            "Images referenced by each container in the template.",
        )
        .wide(),
        col("Selector", "string", "computed:selector", "Label selector of the controlled pods.")
            .wide(),
    ]
}

/// A RoleBinding's or ClusterRoleBinding's columns, as kubectl prints them.
fn binding_columns() -> Vec<PrinterColumn> {
    vec![
        col("Role", "string", "computed:binding-role", "The role bound."),
        age(),
        col("Users", "string", "computed:binding-subjects:User", "Users bound.").wide(),
        col("Groups", "string", "computed:binding-subjects:Group", "Groups bound.").wide(),
        col(
            "ServiceAccounts",
            "string",
            "computed:binding-subjects:ServiceAccount",
            "ServiceAccounts bound.",
        )
        .wide(),
    ]
}

/// A webhook configuration's columns, as kubectl prints them.
fn webhook_columns() -> Vec<PrinterColumn> {
    vec![
        col("Webhooks", "integer", "computed:count:webhooks", "Number of webhooks configured."),
        age(),
    ]
}

fn event_columns() -> Vec<PrinterColumn> {
    vec![
        col(
            "Last Seen",
            "string",
            "computed:event-last-seen",
            "Time since the event was last seen.",
        ),
        col("Type", "string", ".type", "Type of this event (Normal, Warning)."),
        col("Reason", "string", ".reason", "Short, machine understandable reason for the event."),
        col("Object", "string", "computed:event-object", "The object this event is about."),
        col("Subobject", "string", "computed:event-subobject", "Field path of the sub-object.")
            .wide(),
        col("Source", "string", "computed:event-source", "Component reporting this event.").wide(),
        col(
            "Message",
            "string",
            "computed:event-message",
            "Human-readable description of the event.",
        ),
        col(
            "First Seen",
            "string",
            "computed:event-first-seen",
            "Time since the event was first seen.",
        )
        .wide(),
        col("Count", "integer", "computed:event-count", "Number of times this event has occurred.")
            .wide(),
        col("Name", "string", ".metadata.name", "Name of the event.").wide().with_format("name"),
    ]
}

pub(super) fn all() -> Vec<ResourceInfo> {
    use Subresource::{
        Approval, Attach, EphemeralContainers, Eviction, Exec, Finalize, Log, PortForward, Proxy,
        Status, Token,
    };
    let pod_fields = [
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ];
    let core_event_fields = [
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ];
    let events_v1_fields = [
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "regarding.resourceVersion",
        "regarding.fieldPath",
        "reason",
        "reportingController",
        "type",
    ];
    vec![
        // core/v1, alphabetical within the group like kube-apiserver.
        res("", "configmaps", "configmap", "ConfigMap", true)
            .short(&["cm"])
            .cols(vec![
                col("Data", "integer", "computed:configmap-data", "Number of data entries."),
                age(),
            ])
            .with_schema(builtin_schema::<core::v1::ConfigMap>),
        res("", "endpoints", "endpoints", "Endpoints", true)
            .short(&["ep"])
            .cols(vec![
                col("Endpoints", "string", "computed:endpoints", "Endpoints of the service."),
                age(),
            ])
            .with_schema(builtin_schema::<core::v1::Endpoints>),
        res("", "events", "event", "Event", true)
            .short(&["ev"])
            .cols(event_columns())
            .fields(&core_event_fields)
            .with_schema(builtin_schema::<core::v1::Event>),
        res("", "limitranges", "limitrange", "LimitRange", true)
            .short(&["limits"])
            .cols(vec![col("Created At", "date", "computed:created-at", AGE)])
            .with_schema(builtin_schema::<core::v1::LimitRange>),
        // Upstream serves no deletecollection of namespaces.
        res("", "namespaces", "namespace", "Namespace", false)
            .without("deletecollection")
            .short(&["ns"])
            .subs(vec![Status, Finalize])
            .cols(vec![
                col("Status", "string", ".status.phase", "The status of the namespace."),
                age(),
            ])
            .fields(&["status.phase"])
            .with_schema(builtin_schema::<core::v1::Namespace>),
        res("", "nodes", "node", "Node", false)
            .short(&["no"])
            .subs(vec![Status, Proxy("NodeProxyOptions")])
            .cols(vec![
                col("Status", "string", "computed:node-status", "The status of the node."),
                col("Roles", "string", "computed:node-roles", "The roles of the node."),
                age(),
                col("Version", "string", ".status.nodeInfo.kubeletVersion", "Kubelet version."),
                col("Internal-IP", "string", "computed:node-address:InternalIP", "Internal IP of the node.")
                    .wide(),
                col("External-IP", "string", "computed:node-address:ExternalIP", "External IP of the node.")
                    .wide(),
                col("OS-Image", "string", ".status.nodeInfo.osImage", "The node's operating system image.")
                    .wide(),
                col("Kernel-Version", "string", ".status.nodeInfo.kernelVersion", "The node's kernel version.")
                    .wide(),
                col("Container-Runtime", "string", ".status.nodeInfo.containerRuntimeVersion", "The node's container runtime.")
                    .wide(),
            ])
            .fields(&["spec.unschedulable"])
            .with_schema(builtin_schema::<core::v1::Node>),
        res("", "persistentvolumes", "persistentvolume", "PersistentVolume", false)
            .short(&["pv"])
            .subs(vec![Status])
            .cols(vec![
                col("Capacity", "string", ".spec.capacity.storage", "The capacity of the volume."),
                col("Access Modes", "string", "computed:pv-access-modes", "The access modes of the volume."),
                col(
                    "Reclaim Policy",
                    "string",
                    ".spec.persistentVolumeReclaimPolicy",
                    "What happens to the volume when its claim is released.",
                ),
                col("Status", "string", "computed:volume-status", "The phase of the volume."),
                col("Claim", "string", "computed:pv-claim", "The claim bound to the volume."),
                col("StorageClass", "string", ".spec.storageClassName", "The storage class of the volume."),
                col(
                    "VolumeAttributesClass",
                    "string",
                    "computed:or-unset:.spec.volumeAttributesClassName",
                    "The volume attributes class of the volume.",
                ),
                col("Reason", "string", ".status.reason", "Why the volume is in its phase."),
                age(),
                col("VolumeMode", "string", "computed:or-unset:.spec.volumeMode", "The volume mode.").wide(),
            ])
            .with_schema(builtin_schema::<core::v1::PersistentVolume>),
        res("", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true)
            .short(&["pvc"])
            .subs(vec![Status])
            .cols(vec![
                col("Status", "string", "computed:volume-status", "The phase of the claim."),
                col("Volume", "string", ".spec.volumeName", "The bound PersistentVolume."),
                col("Capacity", "string", "computed:pvc-capacity", "The capacity of the bound volume."),
                col("Access Modes", "string", "computed:pvc-access-modes", "The access modes of the volume."),
                col("StorageClass", "string", ".spec.storageClassName", "The storage class of the claim."),
                col(
                    "VolumeAttributesClass",
                    "string",
                    "computed:or-unset:.spec.volumeAttributesClassName",
                    "The volume attributes class of the claim.",
                ),
                age(),
                col("VolumeMode", "string", "computed:or-unset:.spec.volumeMode", "The volume mode.").wide(),
            ])
            .with_schema(builtin_schema::<core::v1::PersistentVolumeClaim>),
        res("", "pods", "pod", "Pod", true)
            .short(&["po"])
            .all_category()
            .subs(vec![
                Status,
                Log,
                Eviction,
                Attach,
                Exec,
                PortForward,
                Proxy("PodProxyOptions"),
                EphemeralContainers,
            ])
            .cols(vec![
                col(
                    "Ready",
                    "string",
                    "computed:pod-ready",
                    "The aggregate readiness state of this pod for accepting traffic.",
                ),
                col("Status", "string", "computed:pod-status", "The aggregate status of the containers in this pod."),
                col(
                    "Restarts",
                    "string",
                    "computed:pod-restarts",
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                ),
                age(),
                col("IP", "string", "computed:or-none:.status.podIP", "The IP address assigned to the pod.").wide(),
                col("Node", "string", "computed:or-none:.spec.nodeName", "The node the pod is assigned to.").wide(),
                col(
                    "Nominated Node",
                    "string",
                    "computed:or-none:.status.nominatedNodeName",
                    "The node the pod is nominated to run on.",
                )
                .wide(),
                col("Readiness Gates", "string", "computed:pod-readiness-gates", "The pod's readiness gates.")
                    .wide(),
            ])
            .fields(&pod_fields)
            .with_schema(builtin_schema::<core::v1::Pod>),
        // Stored only: no controller reads them.
        res("", "podtemplates", "podtemplate", "PodTemplate", true)
            .cols(vec![
                col(
                    "Containers",
                    "string",
                    "computed:podtemplate-containers",
                    "Names of each container in the template.",
                ),
                col(
                    "Images",
                    "string",
                    "computed:podtemplate-images",
                    "Images referenced by each container in the template.",
                ),
                col("Pod Labels", "string", "computed:podtemplate-labels", "The labels for the pod template."),
            ])
            .with_schema(builtin_schema::<core::v1::PodTemplate>),
        res("", "replicationcontrollers", "replicationcontroller", "ReplicationController", true)
            .short(&["rc"])
            .all_category()
            .subs(vec![Status, scale()])
            .cols(
                [
                    col("Desired", "integer", ".spec.replicas", "Number of desired replicas."),
                    col("Current", "integer", ".status.replicas", "Number of current replicas."),
                    col("Ready", "integer", ".status.readyReplicas", "Number of ready replicas."),
                    age(),
                ]
                .into_iter()
                .chain(workload_wide().into_iter().take(2))
                .chain([col("Selector", "string", "computed:selector-map", "Labels of the controlled pods.")
                    .wide()])
                .collect(),
            )
            .fields(&["status.replicas"])
            .with_schema(builtin_schema::<core::v1::ReplicationController>),
        res("", "resourcequotas", "resourcequota", "ResourceQuota", true)
            .short(&["quota"])
            .subs(vec![Status])
            .cols(vec![
                age(),
                col("Request", "string", "computed:quota-request", "Requests used of the hard limits."),
                col("Limit", "string", "computed:quota-limit", "Limits used of the hard limits."),
            ])
            .with_schema(builtin_schema::<core::v1::ResourceQuota>),
        res("", "secrets", "secret", "Secret", true)
            .cols(vec![
                col("Type", "string", ".type", "The type of the secret."),
                col("Data", "integer", "computed:secret-data", "Number of data entries."),
                age(),
            ])
            .fields(&["type"])
            .with_schema(builtin_schema::<core::v1::Secret>),
        res("", "serviceaccounts", "serviceaccount", "ServiceAccount", true)
            .short(&["sa"])
            .subs(vec![Token])
            .cols(vec![
                col("Secrets", "integer", "computed:serviceaccount-secrets", "Number of secrets."),
                age(),
            ])
            .with_schema(builtin_schema::<core::v1::ServiceAccount>),
        res("", "services", "service", "Service", true)
            .short(&["svc"])
            .all_category()
            .subs(vec![Status, Proxy("ServiceProxyOptions")])
            .cols(vec![
                col("Type", "string", ".spec.type", "The type of the service."),
                col("Cluster-IP", "string", "computed:service-cluster-ip", "The cluster IP of the service."),
                col("External-IP", "string", "computed:service-external-ip", "The external IPs of the service."),
                col("Port(s)", "string", "computed:service-ports", "The ports of the service."),
                age(),
                col("Selector", "string", "computed:selector-map", "The service's pod selector.").wide(),
            ])
            .fields(&["spec.clusterIP", "spec.type"])
            .with_schema(builtin_schema::<core::v1::Service>),
        // apps/v1
        res("apps", "controllerrevisions", "controllerrevision", "ControllerRevision", true)
            .cols(vec![
                col("Controller", "string", "computed:controller", "The workload this is a revision of."),
                col("Revision", "integer", ".revision", "The revision number."),
                age(),
            ])
            .with_schema(builtin_schema::<apps::v1::ControllerRevision>),
        res("apps", "daemonsets", "daemonset", "DaemonSet", true)
            .short(&["ds"])
            .all_category()
            .subs(vec![Status])
            .cols(
                [
                    col("Desired", "integer", ".status.desiredNumberScheduled", "Desired number of pods."),
                    col("Current", "integer", ".status.currentNumberScheduled", "Scheduled number of pods."),
                    col("Ready", "integer", ".status.numberReady", "Ready number of pods."),
                    col("Up-to-date", "integer", ".status.updatedNumberScheduled", "Updated number of pods."),
                    col("Available", "integer", ".status.numberAvailable", "Available number of pods."),
                    col("Node Selector", "string", "computed:node-selector", "Node selector of the pods."),
                    age(),
                ]
                .into_iter()
                .chain(workload_wide())
                .collect(),
            )
            .with_schema(builtin_schema::<apps::v1::DaemonSet>),
        res("apps", "deployments", "deployment", "Deployment", true)
            .short(&["deploy"])
            .all_category()
            .subs(vec![Status, scale()])
            .cols(
                [
                    col("Ready", "string", "computed:replicas-ready", "Number of ready replicas / desired."),
                    col("Up-to-date", "integer", ".status.updatedReplicas", "Number of updated replicas."),
                    col("Available", "integer", ".status.availableReplicas", "Number of available replicas."),
                    age(),
                ]
                .into_iter()
                .chain(workload_wide())
                .collect(),
            )
            .with_schema(builtin_schema::<apps::v1::Deployment>),
        res("apps", "replicasets", "replicaset", "ReplicaSet", true)
            .short(&["rs"])
            .all_category()
            .subs(vec![Status, scale()])
            .cols(
                [
                    col("Desired", "integer", ".spec.replicas", "Number of desired replicas."),
                    col("Current", "integer", ".status.replicas", "Number of current replicas."),
                    col("Ready", "integer", ".status.readyReplicas", "Number of ready replicas."),
                    age(),
                ]
                .into_iter()
                .chain(workload_wide())
                .collect(),
            )
            .fields(&["status.replicas"])
            .with_schema(builtin_schema::<apps::v1::ReplicaSet>),
        res("apps", "statefulsets", "statefulset", "StatefulSet", true)
            .short(&["sts"])
            .all_category()
            .subs(vec![Status, scale()])
            .cols([
                col("Ready", "string", "computed:replicas-ready", "Number of ready replicas / desired."),
                age(),
            ]
            .into_iter()
            .chain(workload_wide().into_iter().take(2))
            .collect())
            .with_schema(builtin_schema::<apps::v1::StatefulSet>),
        // events.k8s.io/v1: the same storage as core Events, the same printer.
        res("events.k8s.io", "events", "event", "Event", true)
            .short(&["ev"])
            .cols(event_columns())
            .fields(&events_v1_fields)
            .with_schema(builtin_schema::<events::v1::Event>),
        // batch/v1
        res("batch", "jobs", "job", "Job", true)
            .all_category()
            .subs(vec![Status])
            .cols(
                [
                    col("Status", "string", "computed:job-status", "Status of the job."),
                    col("Completions", "string", "computed:job-completions", "Succeeded / desired completions."),
                    col("Duration", "string", "computed:job-duration", "Time the job took to complete."),
                    age(),
                ]
                .into_iter()
                .chain(workload_wide())
                .collect(),
            )
            .fields(&["status.successful"])
            .with_schema(builtin_schema::<batch::v1::Job>),
        res("batch", "cronjobs", "cronjob", "CronJob", true)
            .short(&["cj"])
            .all_category()
            .subs(vec![Status])
            .cols(vec![
                col("Schedule", "string", ".spec.schedule", "The schedule in cron format."),
                col("Timezone", "string", "computed:or-none:.spec.timeZone", "The time zone of the schedule."),
                col("Suspend", "boolean", "computed:cronjob-suspend", "Whether new jobs are suspended."),
                col("Active", "integer", "computed:cronjob-active", "Number of running jobs."),
                col(
                    "Last Schedule",
                    "string",
                    "computed:cronjob-last-schedule",
                    "When a job was last scheduled.",
                ),
                age(),
                col(
                    "Containers",
                    "string",
                    "computed:job-template-containers",
                    "Names of each container in the job template.",
                )
                .wide(),
                col(
                    "Images",
                    "string",
                    "computed:job-template-images",
                    "Images referenced by each container in the job template.",
                )
                .wide(),
                col("Selector", "string", "computed:job-template-selector", "Label selector of the jobs' pods.")
                    .wide(),
            ])
            .with_schema(builtin_schema::<batch::v1::CronJob>),
        // networking.k8s.io/v1: stored only; no ingress controller runs on one machine.
        res("networking.k8s.io", "ingresses", "ingress", "Ingress", true)
            .short(&["ing"])
            .subs(vec![Status])
            .cols(vec![
                col("Class", "string", "computed:or-none:.spec.ingressClassName", "The ingress class."),
                col("Hosts", "string", "computed:ingress-hosts", "The hosts of the rules."),
                col("Address", "string", "computed:ingress-address", "The load balancer addresses."),
                col("Ports", "string", "computed:ingress-ports", "The ports served."),
                age(),
            ])
            .with_schema(builtin_schema::<networking::v1::Ingress>),
        // apiextensions.k8s.io/v1
        res("apiextensions.k8s.io", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", false)
            .short(&["crd", "crds"])
            .api_extensions_category()
            .subs(vec![Status])
            .cols(vec![col("Created At", "date", "computed:created-at", AGE)])
            .with_schema(builtin_schema::<CustomResourceDefinition>),
        // coordination.k8s.io/v1
        res("coordination.k8s.io", "leases", "lease", "Lease", true)
            .cols(vec![col("Holder", "string", ".spec.holderIdentity", "The holder of the lease."), age()])
            .with_schema(builtin_schema::<coordination::v1::Lease>),
        // discovery.k8s.io/v1: written by the local node's endpoints controller.
        res("discovery.k8s.io", "endpointslices", "endpointslice", "EndpointSlice", true)
            .cols(vec![
                col("AddressType", "string", ".addressType", "The type of the addresses."),
                col("Ports", "string", "computed:slice-ports", "The ports of the endpoints."),
                col("Endpoints", "string", "computed:slice-endpoints", "The addresses of the endpoints."),
                age(),
            ])
            .with_schema(builtin_schema::<discovery::v1::EndpointSlice>),
        // RBAC's kinds, enforced by `server::rbac`.
        res("rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false)
            .cols(binding_columns())
            .with_schema(builtin_schema::<rbac::v1::ClusterRoleBinding>),
        res("rbac.authorization.k8s.io", "clusterroles", "clusterrole", "ClusterRole", false)
            .cols(vec![col("Created At", "date", "computed:created-at", AGE)])
            .with_schema(builtin_schema::<rbac::v1::ClusterRole>),
        res("rbac.authorization.k8s.io", "rolebindings", "rolebinding", "RoleBinding", true)
            .cols(binding_columns())
            .with_schema(builtin_schema::<rbac::v1::RoleBinding>),
        res("rbac.authorization.k8s.io", "roles", "role", "Role", true)
            .cols(vec![col("Created At", "date", "computed:created-at", AGE)])
            .with_schema(builtin_schema::<rbac::v1::Role>),
        // Stored only: nothing enforces policies, quotas or priorities, and no autoscaler or
        // disruption controller runs on one machine. Served so that manifests carrying them
        // apply, as on a cluster.
        res("policy", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true)
            .short(&["pdb"])
            .subs(vec![Status])
            .cols(vec![
                col("Min Available", "string", "computed:or-na:.spec.minAvailable", "Pods that must stay available."),
                col("Max Unavailable", "string", "computed:or-na:.spec.maxUnavailable", "Pods that may be unavailable."),
                col("Allowed Disruptions", "integer", ".status.disruptionsAllowed", "Disruptions allowed now."),
                age(),
            ])
            .with_schema(builtin_schema::<policy::v1::PodDisruptionBudget>),
        autoscalers()
            .with_version("v2")
            .with_schema(builtin_schema::<autoscaling::v2::HorizontalPodAutoscaler>),
        // autoscaling/v1: the same storage, converted (what `kubectl autoscale` writes).
        autoscalers().with_schema(builtin_schema::<autoscaling::v1::HorizontalPodAutoscaler>),
        res("networking.k8s.io", "ingressclasses", "ingressclass", "IngressClass", false)
            .cols(vec![
                col("Controller", "string", ".spec.controller", "The controller of the class."),
                col("Parameters", "string", "computed:ingressclass-parameters", "The parameters of the class."),
                age(),
            ])
            .with_schema(builtin_schema::<networking::v1::IngressClass>),
        res("networking.k8s.io", "networkpolicies", "networkpolicy", "NetworkPolicy", true)
            .short(&["netpol"])
            .cols(vec![
                col("Pod-Selector", "string", "computed:pod-selector", "The pods the policy is about."),
                age(),
            ])
            .with_schema(builtin_schema::<networking::v1::NetworkPolicy>),
        res("scheduling.k8s.io", "priorityclasses", "priorityclass", "PriorityClass", false)
            .short(&["pc"])
            .cols(vec![
                col("Value", "integer", ".value", "The priority."),
                col("Global-Default", "boolean", "computed:bool:.globalDefault", "Whether pods get it by default."),
                age(),
                col("PreemptionPolicy", "string", ".preemptionPolicy", "Whether it preempts lower priorities."),
            ])
            .with_schema(builtin_schema::<scheduling::v1::PriorityClass>),
        res("storage.k8s.io", "storageclasses", "storageclass", "StorageClass", false)
            .short(&["sc"])
            .cols(vec![
                col("Provisioner", "string", ".provisioner", "The provisioner of its volumes."),
                col("ReclaimPolicy", "string", ".reclaimPolicy", "What happens to released volumes."),
                col("VolumeBindingMode", "string", ".volumeBindingMode", "When claims are bound."),
                col(
                    "AllowVolumeExpansion",
                    "boolean",
                    "computed:bool:.allowVolumeExpansion",
                    "Whether claims may grow.",
                ),
                age(),
            ])
            .with_schema(builtin_schema::<storage::v1::StorageClass>),
        // Stored only: no CSI driver, attacher or node plugin runs here.
        res("storage.k8s.io", "csidrivers", "csidriver", "CSIDriver", false)
            .cols(vec![
                col(
                    "AttachRequired",
                    "boolean",
                    "computed:csidriver-attach-required",
                    "Whether volumes are attached before they are mounted.",
                ),
                col("PodInfoOnMount", "boolean", "computed:bool:.spec.podInfoOnMount", "Whether mounts get the pod's details."),
                col(
                    "StorageCapacity",
                    "boolean",
                    "computed:bool:.spec.storageCapacity",
                    "Whether the scheduler considers the driver's storage capacity.",
                ),
                col("TokenRequests", "string", "computed:csidriver-token-requests", "Audiences of the tokens mounts get."),
                col(
                    "RequiresRepublish",
                    "boolean",
                    "computed:bool:.spec.requiresRepublish",
                    "Whether volumes are mounted again periodically.",
                ),
                col("Modes", "string", "computed:csidriver-modes", "The volume lifecycle modes supported."),
                age(),
            ])
            .with_schema(builtin_schema::<storage::v1::CSIDriver>),
        res("storage.k8s.io", "csinodes", "csinode", "CSINode", false)
            .cols(vec![
                col("Drivers", "integer", "computed:count:spec.drivers", "Number of CSI drivers registered on the node."),
                age(),
            ])
            .with_schema(builtin_schema::<storage::v1::CSINode>),
        res("storage.k8s.io", "volumeattachments", "volumeattachment", "VolumeAttachment", false)
            .subs(vec![Status])
            .cols(vec![
                col("Attacher", "string", ".spec.attacher", "The driver that attaches the volume."),
                col("PV", "string", ".spec.source.persistentVolumeName", "The volume attached."),
                col("Node", "string", ".spec.nodeName", "The node the volume is attached to."),
                col("Attached", "boolean", "computed:bool:.status.attached", "Whether the volume is attached."),
                age(),
            ])
            .with_schema(builtin_schema::<storage::v1::VolumeAttachment>),
        res("node.k8s.io", "runtimeclasses", "runtimeclass", "RuntimeClass", false)
            .cols(vec![col("Handler", "string", ".handler", "The container runtime handler."), age()])
            .with_schema(builtin_schema::<node::v1::RuntimeClass>),
        // Approved requests for `kubernetes.io/kube-apiserver-client` are signed by the CA
        // (server/certificates.rs); no other signer runs here.
        res("certificates.k8s.io", "certificatesigningrequests", "certificatesigningrequest", "CertificateSigningRequest", false)
            .short(&["csr"])
            .subs(vec![Status, Approval])
            .cols(vec![
                age(),
                col("SignerName", "string", "computed:or-none:.spec.signerName", "The signer asked to sign."),
                col("Requestor", "string", ".spec.username", "The user who asked."),
                col(
                    "RequestedDuration",
                    "string",
                    "computed:csr-requested-duration",
                    "How long the certificate asked for is valid.",
                ),
                col("Condition", "string", "computed:csr-condition", "Approved, Denied or Pending; Failed, Issued."),
            ])
            .with_schema(builtin_schema::<certificates::v1::CertificateSigningRequest>),
        // Stored only: no webhook is called and no admission policy evaluated.
        res("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false)
            .api_extensions_category()
            .cols(webhook_columns())
            .with_schema(builtin_schema::<admissionregistration::v1::MutatingWebhookConfiguration>),
        res("admissionregistration.k8s.io", "validatingadmissionpolicies", "validatingadmissionpolicy", "ValidatingAdmissionPolicy", false)
            .api_extensions_category()
            .subs(vec![Status])
            .cols(vec![
                col("Validations", "integer", "computed:count:spec.validations", "Number of validation rules."),
                col("ParamKind", "string", "computed:policy-param-kind", "The kind of the policy's parameters."),
                age(),
            ])
            .with_schema(builtin_schema::<admissionregistration::v1::ValidatingAdmissionPolicy>),
        res("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", false)
            .api_extensions_category()
            .cols(vec![
                col("PolicyName", "string", ".spec.policyName", "The policy bound."),
                col("ParamRef", "string", "computed:binding-param-ref", "The parameters of the binding."),
                age(),
            ])
            .with_schema(builtin_schema::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>),
        res("admissionregistration.k8s.io", "validatingwebhookconfigurations", "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false)
            .api_extensions_category()
            .cols(webhook_columns())
            .with_schema(builtin_schema::<admissionregistration::v1::ValidatingWebhookConfiguration>),
        // Nothing is aggregated: the served groups' `Local` APIServices are kept by
        // `server::apiservices`, others are stored only.
        res("apiregistration.k8s.io", "apiservices", "apiservice", "APIService", false)
            .api_extensions_category()
            .subs(vec![Status])
            .cols(vec![
                col("Service", "string", "computed:apiservice-service", "The service that serves the API."),
                col("Available", "string", "computed:apiservice-available", "Whether the API is available."),
                age(),
            ])
            .with_schema(builtin_schema::<APIService>),
        // Reviews: created only, answered at once, never stored (see `server::reviews`).
        res("authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview", false)
            .create_only()
            .with_schema(builtin_schema::<authorization::v1::SelfSubjectAccessReview>),
        res("authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview", false)
            .create_only()
            .with_schema(builtin_schema::<authorization::v1::SelfSubjectRulesReview>),
        res("authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview", false)
            .create_only()
            .with_schema(builtin_schema::<authentication::v1::SelfSubjectReview>),
        // What servers that delegate to the API server ask (webhooks, metrics endpoints behind
        // controller-runtime's or kube-rbac-proxy's filters).
        res("authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview", false)
            .create_only()
            .with_schema(builtin_schema::<authentication::v1::TokenReview>),
        res("authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", false)
            .create_only()
            .with_schema(builtin_schema::<authorization::v1::SubjectAccessReview>),
        res("authorization.k8s.io", "localsubjectaccessreviews", "localsubjectaccessreview", "LocalSubjectAccessReview", true)
            .create_only()
            .with_schema(builtin_schema::<authorization::v1::LocalSubjectAccessReview>),
        // Resource metrics for `kubectl top`: read only, measured when asked, never stored (see
        // `server::metrics_api`).
        res("metrics.k8s.io", "pods", "", "PodMetrics", true)
            .with_version("v1beta1")
            .read_only()
            .with_schema(builtin_schema::<super::metrics::PodMetrics>),
        res("metrics.k8s.io", "nodes", "", "NodeMetrics", false)
            .with_version("v1beta1")
            .read_only()
            .with_schema(builtin_schema::<super::metrics::NodeMetrics>),
    ]
}
