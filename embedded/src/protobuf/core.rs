//! Conversions of the `v1` (core) kinds kubectl creates over protobuf (`Namespace`, `ConfigMap`,
//! `Secret`, `ServiceAccount`, `Service`, `ResourceQuota`, and the `Pod`s of `kubectl debug
//! node/…` and `kubectl debug --copy-to`) and of the pod template a `Deployment` or a `Job`
//! carries.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use k8s_pb::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapEnvSource, ConfigMapKeySelector, Container, ContainerPort,
    EnvFromSource, EnvVar, EnvVarSource, ExecAction, GrpcAction, HttpGetAction, HttpHeader,
    LoadBalancerStatus, LocalObjectReference, Namespace, NamespaceSpec, NamespaceStatus,
    ObjectFieldSelector, Pod, PodSecurityContext, PodSpec, PodStatus, PodTemplateSpec, Probe,
    ProbeHandler, ResourceFieldSelector, ResourceQuota, ResourceQuotaSpec, ResourceQuotaStatus,
    ResourceRequirements, SeccompProfile, Secret, SecretEnvSource, SecretKeySelector,
    SecurityContext, Service, ServiceAccount, ServicePort, ServiceSpec, ServiceStatus,
    TcpSocketAction, Toleration, VolumeMount,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object, item, join};
use super::meta::{int_or_string, object_meta, quantities};
use super::volumes;

/// A `ResourceQuota`: its hard limits and scopes, not a scope selector; its status must be
/// empty.
pub(crate) fn resource_quota(quota: ResourceQuota, ctx: &mut Ctx) -> Map<String, Value> {
    let ResourceQuota { metadata, spec, status } = quota;
    let ResourceQuotaSpec { hard, scopes, scope_selector } = spec.unwrap_or_default();
    ctx.unmapped_pointer("spec", "scopeSelector", &scope_selector);
    let ResourceQuotaStatus { hard: status_hard, used } = status.unwrap_or_default();
    ctx.unmapped_entries("status", "hard", &status_hard);
    ctx.unmapped_entries("status", "used", &used);
    let mut spec = Object::default();
    spec.entries("hard", quantities(hard));
    spec.items("scopes", scopes);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.put("status", Object::default());
    out.into()
}

/// A `Pod`, as `kubectl debug` creates one; its status must be empty.
pub(crate) fn pod(pod: Pod, ctx: &mut Ctx) -> Map<String, Value> {
    let Pod { metadata, spec, status } = pod;
    empty_pod_status(status.unwrap_or_default(), ctx);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", pod_spec(spec.unwrap_or_default(), ctx, "spec"));
    out.put("status", Object::default());
    out.into()
}

/// Records every set field of a new pod's status, which must have none (Go writes the zero
/// ones).
fn empty_pod_status(status: PodStatus, ctx: &mut Ctx) {
    let PodStatus {
        observed_generation,
        phase,
        conditions,
        message,
        reason,
        nominated_node_name,
        host_ip,
        host_ips,
        pod_ip,
        pod_ips,
        start_time,
        init_container_statuses,
        container_statuses,
        qos_class,
        ephemeral_container_statuses,
        resize,
        resource_claim_statuses,
        extended_resource_claim_status,
        allocated_resources,
        resources,
    } = status;
    let path = "status";
    ctx.unmapped_value(path, "observedGeneration", &observed_generation);
    ctx.unmapped_value(path, "phase", &phase);
    ctx.unmapped_entries(path, "conditions", &conditions);
    ctx.unmapped_value(path, "message", &message);
    ctx.unmapped_value(path, "reason", &reason);
    ctx.unmapped_value(path, "nominatedNodeName", &nominated_node_name);
    ctx.unmapped_value(path, "hostIP", &host_ip);
    ctx.unmapped_entries(path, "hostIPs", &host_ips);
    ctx.unmapped_value(path, "podIP", &pod_ip);
    ctx.unmapped_entries(path, "podIPs", &pod_ips);
    ctx.unmapped_pointer(path, "startTime", &start_time);
    ctx.unmapped_entries(path, "initContainerStatuses", &init_container_statuses);
    ctx.unmapped_entries(path, "containerStatuses", &container_statuses);
    ctx.unmapped_value(path, "qosClass", &qos_class);
    ctx.unmapped_entries(path, "ephemeralContainerStatuses", &ephemeral_container_statuses);
    ctx.unmapped_value(path, "resize", &resize);
    ctx.unmapped_entries(path, "resourceClaimStatuses", &resource_claim_statuses);
    ctx.unmapped_pointer(path, "extendedResourceClaimStatus", &extended_resource_claim_status);
    ctx.unmapped_entries(path, "allocatedResources", &allocated_resources);
    ctx.unmapped_pointer(path, "resources", &resources);
}

/// A `Namespace`.
pub(crate) fn namespace(namespace: Namespace, ctx: &mut Ctx) -> Map<String, Value> {
    let Namespace { metadata, spec, status } = namespace;
    let NamespaceSpec { finalizers } = spec.unwrap_or_default();
    let mut spec = Object::default();
    spec.items("finalizers", finalizers);
    let NamespaceStatus { phase, conditions } = status.unwrap_or_default();
    ctx.unmapped_value("status", "phase", &phase);
    ctx.unmapped_entries("status", "conditions", &conditions);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.put("status", Object::default());
    out.into()
}

/// A `ConfigMap`; `binaryData` values are written in base64, as in JSON.
pub(crate) fn config_map(config_map: ConfigMap, ctx: &mut Ctx) -> Map<String, Value> {
    let ConfigMap { metadata, immutable, data, binary_data } = config_map;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.pointer("immutable", immutable);
    out.entries("data", data);
    out.entries("binaryData", base64_values(binary_data));
    out.into()
}

/// A `Secret`; `data` values are written in base64, as in JSON.
pub(crate) fn secret(secret: Secret, ctx: &mut Ctx) -> Map<String, Value> {
    let Secret { metadata, immutable, data, string_data, r#type } = secret;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.pointer("immutable", immutable);
    out.entries("data", base64_values(data));
    out.entries("stringData", string_data);
    out.omitempty("type", r#type);
    out.into()
}

/// A `ServiceAccount`.
pub(crate) fn service_account(account: ServiceAccount, ctx: &mut Ctx) -> Map<String, Value> {
    let ServiceAccount { metadata, secrets, image_pull_secrets, automount_service_account_token } =
        account;
    ctx.unmapped_entries("", "secrets", &secrets);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.items("imagePullSecrets", image_pull_secrets.into_iter().map(local_reference).collect());
    out.pointer("automountServiceAccountToken", automount_service_account_token);
    out.into()
}

/// A `Service`: `type`, `ports`, `selector`, `clusterIP` and `externalName` of its spec (what
/// `kubectl create service` sets); its status must be empty.
pub(crate) fn service(service: Service, ctx: &mut Ctx) -> Map<String, Value> {
    let Service { metadata, spec, status } = service;
    let ServiceStatus { load_balancer, conditions } = status.unwrap_or_default();
    let LoadBalancerStatus { ingress } = load_balancer.unwrap_or_default();
    ctx.unmapped_entries("status.loadBalancer", "ingress", &ingress);
    ctx.unmapped_entries("status", "conditions", &conditions);
    let mut status = Object::default();
    status.put("loadBalancer", Object::default());
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", service_spec(spec.unwrap_or_default(), ctx, "spec"));
    out.put("status", status);
    out.into()
}

/// A `ServiceSpec`.
fn service_spec(spec: ServiceSpec, ctx: &mut Ctx, path: &str) -> Value {
    let ServiceSpec {
        ports,
        selector,
        cluster_ip,
        cluster_ips,
        r#type,
        external_ips,
        session_affinity,
        load_balancer_ip,
        load_balancer_source_ranges,
        external_name,
        external_traffic_policy,
        health_check_node_port,
        publish_not_ready_addresses,
        session_affinity_config,
        ip_families,
        ip_family_policy,
        allocate_load_balancer_node_ports,
        load_balancer_class,
        internal_traffic_policy,
        traffic_distribution,
    } = spec;
    ctx.unmapped_entries(path, "clusterIPs", &cluster_ips);
    ctx.unmapped_entries(path, "externalIPs", &external_ips);
    ctx.unmapped_value(path, "sessionAffinity", &session_affinity);
    ctx.unmapped_value(path, "loadBalancerIP", &load_balancer_ip);
    ctx.unmapped_entries(path, "loadBalancerSourceRanges", &load_balancer_source_ranges);
    ctx.unmapped_value(path, "externalTrafficPolicy", &external_traffic_policy);
    ctx.unmapped_value(path, "healthCheckNodePort", &health_check_node_port);
    ctx.unmapped_value(path, "publishNotReadyAddresses", &publish_not_ready_addresses);
    ctx.unmapped_pointer(path, "sessionAffinityConfig", &session_affinity_config);
    ctx.unmapped_entries(path, "ipFamilies", &ip_families);
    ctx.unmapped_pointer(path, "ipFamilyPolicy", &ip_family_policy);
    ctx.unmapped_pointer(path, "allocateLoadBalancerNodePorts", &allocate_load_balancer_node_ports);
    ctx.unmapped_pointer(path, "loadBalancerClass", &load_balancer_class);
    ctx.unmapped_pointer(path, "internalTrafficPolicy", &internal_traffic_policy);
    ctx.unmapped_pointer(path, "trafficDistribution", &traffic_distribution);
    let ports = ports.into_iter().enumerate();
    let mut out = Object::default();
    out.items(
        "ports",
        ports.map(|(i, port)| service_port(port, ctx, &item(path, "ports", i))).collect(),
    );
    out.entries("selector", selector);
    out.omitempty("clusterIP", cluster_ip);
    out.omitempty("type", r#type);
    out.omitempty("externalName", external_name);
    out.into()
}

/// An item of a Service's `ports`; `targetPort` is a number or a port name.
fn service_port(port: ServicePort, ctx: &mut Ctx, path: &str) -> Value {
    let ServicePort { name, protocol, app_protocol, port, target_port, node_port } = port;
    let mut out = Object::default();
    out.omitempty("name", name);
    out.omitempty("protocol", protocol);
    out.pointer("appProtocol", app_protocol);
    out.always("port", port);
    // A struct in Go, so written even when zero.
    let target_port = target_port.unwrap_or_default();
    out.put("targetPort", int_or_string(target_port, ctx, &join(path, "targetPort")));
    out.omitempty("nodePort", node_port);
    out.into()
}

/// A `PodTemplateSpec` (`metadata` and `spec`).
pub(crate) fn pod_template(template: PodTemplateSpec, ctx: &mut Ctx, path: &str) -> Value {
    let PodTemplateSpec { metadata, spec } = template;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, &join(path, "metadata")));
    out.put("spec", pod_spec(spec.unwrap_or_default(), ctx, &join(path, "spec")));
    out.into()
}

/// A `PodSpec`: init and app containers, volumes, image pull secrets, the ServiceAccount, host
/// namespaces, where it runs (node name and selector, tolerations), its hostname, priority (and
/// preemption policy, which a copied pod carries) and security context, and the defaults a server fills in; not affinity, topology spread, DNS
/// configuration, readiness gates or resource claims.
fn pod_spec(spec: PodSpec, ctx: &mut Ctx, path: &str) -> Value {
    let PodSpec {
        volumes,
        init_containers,
        containers,
        ephemeral_containers,
        restart_policy,
        termination_grace_period_seconds,
        active_deadline_seconds,
        dns_policy,
        node_selector,
        service_account_name,
        service_account,
        automount_service_account_token,
        node_name,
        host_network,
        host_pid,
        host_ipc,
        share_process_namespace,
        security_context,
        image_pull_secrets,
        hostname,
        subdomain,
        affinity,
        scheduler_name,
        tolerations,
        host_aliases,
        priority_class_name,
        priority,
        dns_config,
        readiness_gates,
        runtime_class_name,
        enable_service_links,
        preemption_policy,
        overhead,
        topology_spread_constraints,
        set_hostname_as_fqdn,
        os,
        host_users,
        scheduling_gates,
        resource_claims,
        resources,
        hostname_override,
        workload_ref,
    } = spec;
    ctx.unmapped_entries(path, "ephemeralContainers", &ephemeral_containers);
    ctx.unmapped_pointer(path, "activeDeadlineSeconds", &active_deadline_seconds);
    ctx.unmapped_pointer(path, "affinity", &affinity);
    ctx.unmapped_entries(path, "hostAliases", &host_aliases);
    ctx.unmapped_pointer(path, "dnsConfig", &dns_config);
    ctx.unmapped_entries(path, "readinessGates", &readiness_gates);
    ctx.unmapped_pointer(path, "runtimeClassName", &runtime_class_name);
    ctx.unmapped_entries(path, "overhead", &overhead);
    ctx.unmapped_entries(path, "topologySpreadConstraints", &topology_spread_constraints);
    ctx.unmapped_pointer(path, "setHostnameAsFQDN", &set_hostname_as_fqdn);
    ctx.unmapped_pointer(path, "os", &os);
    ctx.unmapped_pointer(path, "hostUsers", &host_users);
    ctx.unmapped_entries(path, "schedulingGates", &scheduling_gates);
    ctx.unmapped_entries(path, "resourceClaims", &resource_claims);
    ctx.unmapped_pointer(path, "resources", &resources);
    ctx.unmapped_pointer(path, "hostnameOverride", &hostname_override);
    ctx.unmapped_pointer(path, "workloadRef", &workload_ref);
    let containers: Vec<Value> = containers
        .into_iter()
        .enumerate()
        .map(|(i, container)| self::container(container, ctx, &item(path, "containers", i)))
        .collect();
    let init_containers: Vec<Value> = init_containers
        .into_iter()
        .enumerate()
        .map(|(i, container)| self::container(container, ctx, &item(path, "initContainers", i)))
        .collect();
    let volumes = volumes.into_iter().enumerate();
    let mut out = Object::default();
    out.items(
        "volumes",
        volumes
            .map(|(i, volume)| volumes::volume(volume, ctx, &item(path, "volumes", i)))
            .collect(),
    );
    out.items("initContainers", init_containers);
    // Not `omitempty` in Go: a nil slice is written as `null`.
    out.put("containers", if containers.is_empty() { Value::Null } else { containers.into() });
    out.omitempty("restartPolicy", restart_policy);
    out.pointer("terminationGracePeriodSeconds", termination_grace_period_seconds);
    out.omitempty("dnsPolicy", dns_policy);
    out.entries("nodeSelector", node_selector);
    out.omitempty("serviceAccountName", service_account_name);
    out.omitempty("serviceAccount", service_account);
    out.pointer("automountServiceAccountToken", automount_service_account_token);
    out.omitempty("nodeName", node_name);
    out.omitempty("hostNetwork", host_network);
    out.omitempty("hostPID", host_pid);
    out.omitempty("hostIPC", host_ipc);
    out.pointer("shareProcessNamespace", share_process_namespace);
    if let Some(context) = security_context {
        out.put(
            "securityContext",
            pod_security_context(context, ctx, &join(path, "securityContext")),
        );
    }
    out.items("imagePullSecrets", image_pull_secrets.into_iter().map(local_reference).collect());
    out.omitempty("hostname", hostname);
    out.omitempty("subdomain", subdomain);
    out.omitempty("schedulerName", scheduler_name);
    out.items("tolerations", tolerations.into_iter().map(toleration).collect());
    out.omitempty("priorityClassName", priority_class_name);
    out.pointer("priority", priority);
    out.pointer("enableServiceLinks", enable_service_links);
    out.pointer("preemptionPolicy", preemption_policy);
    out.into()
}

/// An item of a pod's `tolerations`.
fn toleration(toleration: Toleration) -> Value {
    let Toleration { key, operator, value, effect, toleration_seconds } = toleration;
    let mut out = Object::default();
    out.omitempty("key", key);
    out.omitempty("operator", operator);
    out.omitempty("value", value);
    out.omitempty("effect", effect);
    out.pointer("tolerationSeconds", toleration_seconds);
    out.into()
}

/// An item of a container's `volumeMounts`.
fn volume_mount(mount: VolumeMount, ctx: &mut Ctx, path: &str) -> Value {
    let VolumeMount {
        name,
        read_only,
        recursive_read_only,
        mount_path,
        sub_path,
        mount_propagation,
        sub_path_expr,
    } = mount;
    ctx.unmapped_pointer(path, "recursiveReadOnly", &recursive_read_only);
    ctx.unmapped_pointer(path, "mountPropagation", &mount_propagation);
    let mut out = Object::default();
    out.always("name", name);
    out.omitempty("readOnly", read_only);
    out.always("mountPath", mount_path);
    out.omitempty("subPath", sub_path);
    out.omitempty("subPathExpr", sub_path_expr);
    out.into()
}

/// A `PodSecurityContext`: who the pod runs as and its seccomp profile (what `kubectl debug`'s
/// profiles set).
fn pod_security_context(context: PodSecurityContext, ctx: &mut Ctx, path: &str) -> Value {
    let PodSecurityContext {
        se_linux_options,
        windows_options,
        run_as_user,
        run_as_group,
        run_as_non_root,
        supplemental_groups,
        supplemental_groups_policy,
        fs_group,
        sysctls,
        fs_group_change_policy,
        seccomp_profile,
        app_armor_profile,
        se_linux_change_policy,
    } = context;
    ctx.unmapped_pointer(path, "seLinuxOptions", &se_linux_options);
    ctx.unmapped_pointer(path, "windowsOptions", &windows_options);
    ctx.unmapped_entries(path, "supplementalGroups", &supplemental_groups);
    ctx.unmapped_pointer(path, "supplementalGroupsPolicy", &supplemental_groups_policy);
    ctx.unmapped_pointer(path, "fsGroup", &fs_group);
    ctx.unmapped_entries(path, "sysctls", &sysctls);
    ctx.unmapped_pointer(path, "fsGroupChangePolicy", &fs_group_change_policy);
    ctx.unmapped_pointer(path, "appArmorProfile", &app_armor_profile);
    ctx.unmapped_pointer(path, "seLinuxChangePolicy", &se_linux_change_policy);
    let mut out = Object::default();
    out.pointer("runAsUser", run_as_user);
    out.pointer("runAsGroup", run_as_group);
    out.pointer("runAsNonRoot", run_as_non_root);
    if let Some(profile) = seccomp_profile {
        out.put("seccompProfile", self::seccomp_profile(profile));
    }
    out.into()
}

/// A container's `SecurityContext`: capabilities, privilege, who it runs as, its root file
/// system and seccomp profile (what `kubectl debug`'s profiles set).
fn security_context(context: SecurityContext, ctx: &mut Ctx, path: &str) -> Value {
    let SecurityContext {
        capabilities,
        privileged,
        se_linux_options,
        windows_options,
        run_as_user,
        run_as_group,
        run_as_non_root,
        read_only_root_filesystem,
        allow_privilege_escalation,
        proc_mount,
        seccomp_profile,
        app_armor_profile,
    } = context;
    ctx.unmapped_pointer(path, "seLinuxOptions", &se_linux_options);
    ctx.unmapped_pointer(path, "windowsOptions", &windows_options);
    ctx.unmapped_pointer(path, "procMount", &proc_mount);
    ctx.unmapped_pointer(path, "appArmorProfile", &app_armor_profile);
    let mut out = Object::default();
    if let Some(Capabilities { add, drop }) = capabilities {
        let mut capabilities = Object::default();
        capabilities.items("add", add);
        capabilities.items("drop", drop);
        out.put("capabilities", capabilities);
    }
    out.pointer("privileged", privileged);
    out.pointer("runAsUser", run_as_user);
    out.pointer("runAsGroup", run_as_group);
    out.pointer("runAsNonRoot", run_as_non_root);
    out.pointer("readOnlyRootFilesystem", read_only_root_filesystem);
    out.pointer("allowPrivilegeEscalation", allow_privilege_escalation);
    if let Some(profile) = seccomp_profile {
        out.put("seccompProfile", self::seccomp_profile(profile));
    }
    out.into()
}

fn seccomp_profile(profile: SeccompProfile) -> Value {
    let SeccompProfile { r#type, localhost_profile } = profile;
    let mut out = Object::default();
    out.always("type", r#type);
    out.pointer("localhostProfile", localhost_profile);
    out.into()
}

/// A `Container`: name, image, command, args, ports, environment (values, sources and
/// `envFrom`), resources, probes, volume mounts, security context, the termination message's
/// path and policy, `imagePullPolicy`, and stdin and terminal.
fn container(container: Container, ctx: &mut Ctx, path: &str) -> Value {
    let Container {
        name,
        image,
        command,
        args,
        working_dir,
        ports,
        env_from,
        env,
        resources,
        resize_policy,
        restart_policy,
        restart_policy_rules,
        volume_mounts,
        volume_devices,
        liveness_probe,
        readiness_probe,
        startup_probe,
        lifecycle,
        termination_message_path,
        termination_message_policy,
        image_pull_policy,
        security_context,
        stdin,
        stdin_once,
        tty,
    } = container;
    ctx.unmapped_value(path, "workingDir", &working_dir);
    ctx.unmapped_entries(path, "resizePolicy", &resize_policy);
    ctx.unmapped_pointer(path, "restartPolicy", &restart_policy);
    ctx.unmapped_entries(path, "restartPolicyRules", &restart_policy_rules);
    ctx.unmapped_entries(path, "volumeDevices", &volume_devices);
    ctx.unmapped_pointer(path, "lifecycle", &lifecycle);
    let ports = ports.into_iter().enumerate();
    let mounts = volume_mounts.into_iter().enumerate();
    let env = env.into_iter().enumerate();
    let mut out = Object::default();
    out.always("name", name);
    out.omitempty("image", image);
    out.items("command", command);
    out.items("args", args);
    out.items(
        "ports",
        ports.map(|(i, port)| container_port(port, ctx, &item(path, "ports", i))).collect(),
    );
    out.items("envFrom", env_from.into_iter().map(self::env_from).collect());
    out.items("env", env.map(|(i, var)| env_var(var, ctx, &item(path, "env", i))).collect());
    let resources = resources.unwrap_or_default();
    out.put("resources", resource_requirements(resources, ctx, &join(path, "resources")));
    let probes = [
        ("livenessProbe", liveness_probe),
        ("readinessProbe", readiness_probe),
        ("startupProbe", startup_probe),
    ];
    for (name, found) in probes {
        if let Some(found) = found {
            out.put(name, probe(found, ctx, &join(path, name)));
        }
    }
    out.items(
        "volumeMounts",
        mounts.map(|(i, m)| volume_mount(m, ctx, &item(path, "volumeMounts", i))).collect(),
    );
    out.omitempty("terminationMessagePath", termination_message_path);
    out.omitempty("terminationMessagePolicy", termination_message_policy);
    out.omitempty("imagePullPolicy", image_pull_policy);
    if let Some(context) = security_context {
        let path = join(path, "securityContext");
        out.put("securityContext", self::security_context(context, ctx, &path));
    }
    out.omitempty("stdin", stdin);
    out.omitempty("stdinOnce", stdin_once);
    out.omitempty("tty", tty);
    out.into()
}

/// An item of a container's `ports`.
fn container_port(port: ContainerPort, ctx: &mut Ctx, path: &str) -> Value {
    let ContainerPort { name, host_port, container_port, protocol, host_ip } = port;
    ctx.unmapped_value(path, "hostPort", &host_port);
    ctx.unmapped_value(path, "hostIP", &host_ip);
    let mut out = Object::default();
    out.omitempty("name", name);
    out.always("containerPort", container_port);
    out.omitempty("protocol", protocol);
    out.into()
}

/// An item of a container's `env`: a plain `value`, or one taken from a field of the pod, a
/// resource of a container, a ConfigMap or a Secret.
fn env_var(var: EnvVar, ctx: &mut Ctx, path: &str) -> Value {
    let EnvVar { name, value, value_from } = var;
    let mut out = Object::default();
    out.always("name", name);
    out.omitempty("value", value);
    if let Some(source) = value_from {
        out.put("valueFrom", env_var_source(source, ctx, &join(path, "valueFrom")));
    }
    out.into()
}

fn env_var_source(source: EnvVarSource, ctx: &mut Ctx, path: &str) -> Value {
    let EnvVarSource {
        field_ref,
        resource_field_ref,
        config_map_key_ref,
        secret_key_ref,
        file_key_ref,
    } = source;
    ctx.unmapped_pointer(path, "fileKeyRef", &file_key_ref);
    let mut out = Object::default();
    out.pointer("fieldRef", field_ref.map(field_selector));
    out.pointer("resourceFieldRef", resource_field_ref.map(resource_selector));
    if let Some(ConfigMapKeySelector { local_object_reference, key, optional }) = config_map_key_ref
    {
        out.put("configMapKeyRef", key_selector(local_object_reference, key, optional));
    }
    if let Some(SecretKeySelector { local_object_reference, key, optional }) = secret_key_ref {
        out.put("secretKeyRef", key_selector(local_object_reference, key, optional));
    }
    out.into()
}

/// A field of the pod, as an environment variable or a downward-API file takes it.
pub(crate) fn field_selector(selector: ObjectFieldSelector) -> Value {
    let ObjectFieldSelector { api_version, field_path } = selector;
    let mut out = Object::default();
    out.omitempty("apiVersion", api_version);
    out.always("fieldPath", field_path);
    out.into()
}

/// A resource of a container, as an environment variable or a downward-API file takes it.
pub(crate) fn resource_selector(selector: ResourceFieldSelector) -> Value {
    let ResourceFieldSelector { container_name, resource, divisor } = selector;
    let mut out = Object::default();
    out.omitempty("containerName", container_name);
    out.always("resource", resource);
    // A struct in Go, so written even when zero.
    out.put("divisor", divisor.and_then(|q| q.string).unwrap_or_else(|| "0".into()));
    out.into()
}

/// A key of a named ConfigMap or Secret.
fn key_selector(
    reference: Option<LocalObjectReference>,
    key: Option<String>,
    optional: Option<bool>,
) -> Value {
    let mut out = Object::default();
    out.omitempty("name", reference.and_then(|r| r.name));
    out.always("key", key);
    out.pointer("optional", optional);
    out.into()
}

/// An item of a container's `envFrom`: every key of a ConfigMap or a Secret.
fn env_from(source: EnvFromSource) -> Value {
    let EnvFromSource { prefix, config_map_ref, secret_ref } = source;
    let reference = |reference: Option<LocalObjectReference>, optional: Option<bool>| {
        let mut out = Object::default();
        out.omitempty("name", reference.and_then(|r| r.name));
        out.pointer("optional", optional);
        out
    };
    let mut out = Object::default();
    out.omitempty("prefix", prefix);
    if let Some(ConfigMapEnvSource { local_object_reference, optional }) = config_map_ref {
        out.put("configMapRef", reference(local_object_reference, optional));
    }
    if let Some(SecretEnvSource { local_object_reference, optional }) = secret_ref {
        out.put("secretRef", reference(local_object_reference, optional));
    }
    out.into()
}

/// A container's liveness, readiness or startup probe.
fn probe(probe: Probe, ctx: &mut Ctx, path: &str) -> Value {
    let Probe {
        handler,
        initial_delay_seconds,
        timeout_seconds,
        period_seconds,
        success_threshold,
        failure_threshold,
        termination_grace_period_seconds,
    } = probe;
    let ProbeHandler { exec, http_get, tcp_socket, grpc } = handler.unwrap_or_default();
    let mut out = Object::default();
    if let Some(ExecAction { command }) = exec {
        let mut action = Object::default();
        action.items("command", command);
        out.put("exec", action);
    }
    if let Some(HttpGetAction { path: url_path, port, host, scheme, http_headers }) = http_get {
        let mut action = Object::default();
        action.omitempty("path", url_path);
        let port = port.map(|p| int_or_string(p, ctx, &join(path, "httpGet.port")));
        action.put("port", port.unwrap_or(Value::from(0)));
        action.omitempty("host", host);
        action.omitempty("scheme", scheme);
        let headers = http_headers.into_iter().map(|HttpHeader { name, value }| {
            let mut header = Object::default();
            header.always("name", name);
            header.always("value", value);
            Value::from(header)
        });
        action.items("httpHeaders", headers.collect());
        out.put("httpGet", action);
    }
    if let Some(TcpSocketAction { port, host }) = tcp_socket {
        let mut action = Object::default();
        let port = port.map(|p| int_or_string(p, ctx, &join(path, "tcpSocket.port")));
        action.put("port", port.unwrap_or(Value::from(0)));
        action.omitempty("host", host);
        out.put("tcpSocket", action);
    }
    if let Some(GrpcAction { port, service }) = grpc {
        let mut action = Object::default();
        action.always("port", port);
        // A pointer without `omitempty` in Go: written as null when unset.
        action.put("service", service.map_or(Value::Null, Value::from));
        out.put("grpc", action);
    }
    out.omitempty("initialDelaySeconds", initial_delay_seconds);
    out.omitempty("timeoutSeconds", timeout_seconds);
    out.omitempty("periodSeconds", period_seconds);
    out.omitempty("successThreshold", success_threshold);
    out.omitempty("failureThreshold", failure_threshold);
    out.pointer("terminationGracePeriodSeconds", termination_grace_period_seconds);
    out.into()
}

/// A container's `resources` (`limits`, `requests`).
fn resource_requirements(resources: ResourceRequirements, ctx: &mut Ctx, path: &str) -> Value {
    let ResourceRequirements { limits, requests, claims } = resources;
    ctx.unmapped_entries(path, "claims", &claims);
    let mut out = Object::default();
    out.entries("limits", quantities(limits));
    out.entries("requests", quantities(requests));
    out.into()
}

/// An item of `imagePullSecrets`.
fn local_reference(reference: LocalObjectReference) -> Value {
    let LocalObjectReference { name } = reference;
    let mut out = Object::default();
    out.omitempty("name", name);
    out.into()
}

/// Byte values as the base64 strings JSON carries them in.
fn base64_values(map: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    map.into_iter().map(|(key, bytes)| (key, BASE64.encode(bytes))).collect()
}
