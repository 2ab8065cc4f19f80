//! Conversions of the `v1` (core) kinds kubectl creates over protobuf (`Namespace`, `ConfigMap`,
//! `Secret`, `ServiceAccount`, `Service`, `ResourceQuota`) and of the pod template a
//! `Deployment` or a `Job` carries.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use k8s_pb::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, LoadBalancerStatus, LocalObjectReference,
    Namespace, NamespaceSpec, NamespaceStatus, PodSecurityContext, PodSpec, PodTemplateSpec,
    ResourceQuota, ResourceQuotaSpec, ResourceQuotaStatus, ResourceRequirements, Secret, Service,
    ServiceAccount, ServicePort, ServiceSpec, ServiceStatus,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object, item, join};
use super::meta::{int_or_string, object_meta, quantities};

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

/// A `PodSpec`: containers, the defaults a server fills in and the ServiceAccount (which a
/// template copied from a stored object carries); nothing that mounts, schedules or secures a
/// pod beyond that.
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
    ctx.unmapped_entries(path, "volumes", &volumes);
    ctx.unmapped_entries(path, "initContainers", &init_containers);
    ctx.unmapped_entries(path, "ephemeralContainers", &ephemeral_containers);
    ctx.unmapped_pointer(path, "activeDeadlineSeconds", &active_deadline_seconds);
    ctx.unmapped_value(path, "nodeName", &node_name);
    ctx.unmapped_value(path, "hostNetwork", &host_network);
    ctx.unmapped_value(path, "hostPID", &host_pid);
    ctx.unmapped_value(path, "hostIPC", &host_ipc);
    ctx.unmapped_pointer(path, "shareProcessNamespace", &share_process_namespace);
    ctx.unmapped_entries(path, "imagePullSecrets", &image_pull_secrets);
    ctx.unmapped_value(path, "hostname", &hostname);
    ctx.unmapped_value(path, "subdomain", &subdomain);
    ctx.unmapped_pointer(path, "affinity", &affinity);
    ctx.unmapped_entries(path, "tolerations", &tolerations);
    ctx.unmapped_entries(path, "hostAliases", &host_aliases);
    ctx.unmapped_value(path, "priorityClassName", &priority_class_name);
    ctx.unmapped_pointer(path, "priority", &priority);
    ctx.unmapped_pointer(path, "dnsConfig", &dns_config);
    ctx.unmapped_entries(path, "readinessGates", &readiness_gates);
    ctx.unmapped_pointer(path, "runtimeClassName", &runtime_class_name);
    ctx.unmapped_pointer(path, "preemptionPolicy", &preemption_policy);
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
    let mut out = Object::default();
    // Not `omitempty` in Go: a nil slice is written as `null`.
    out.put("containers", if containers.is_empty() { Value::Null } else { containers.into() });
    out.omitempty("restartPolicy", restart_policy);
    out.pointer("terminationGracePeriodSeconds", termination_grace_period_seconds);
    out.omitempty("dnsPolicy", dns_policy);
    out.entries("nodeSelector", node_selector);
    out.omitempty("serviceAccountName", service_account_name);
    out.omitempty("serviceAccount", service_account);
    out.pointer("automountServiceAccountToken", automount_service_account_token);
    if let Some(context) = security_context {
        out.put(
            "securityContext",
            pod_security_context(context, ctx, &join(path, "securityContext")),
        );
    }
    out.omitempty("schedulerName", scheduler_name);
    out.pointer("enableServiceLinks", enable_service_links);
    out.into()
}

/// A `PodSecurityContext`: only an empty one (`{}`, what servers default it to) is supported.
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
    ctx.unmapped_pointer(path, "runAsUser", &run_as_user);
    ctx.unmapped_pointer(path, "runAsGroup", &run_as_group);
    ctx.unmapped_pointer(path, "runAsNonRoot", &run_as_non_root);
    ctx.unmapped_entries(path, "supplementalGroups", &supplemental_groups);
    ctx.unmapped_pointer(path, "supplementalGroupsPolicy", &supplemental_groups_policy);
    ctx.unmapped_pointer(path, "fsGroup", &fs_group);
    ctx.unmapped_entries(path, "sysctls", &sysctls);
    ctx.unmapped_pointer(path, "fsGroupChangePolicy", &fs_group_change_policy);
    ctx.unmapped_pointer(path, "seccompProfile", &seccomp_profile);
    ctx.unmapped_pointer(path, "appArmorProfile", &app_armor_profile);
    ctx.unmapped_pointer(path, "seLinuxChangePolicy", &se_linux_change_policy);
    Object::default().into()
}

/// A `Container`: name, image, command, args, ports, env (plain values), resources, the
/// termination message's path and policy, and `imagePullPolicy`.
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
    ctx.unmapped_entries(path, "envFrom", &env_from);
    ctx.unmapped_entries(path, "resizePolicy", &resize_policy);
    ctx.unmapped_pointer(path, "restartPolicy", &restart_policy);
    ctx.unmapped_entries(path, "restartPolicyRules", &restart_policy_rules);
    ctx.unmapped_entries(path, "volumeMounts", &volume_mounts);
    ctx.unmapped_entries(path, "volumeDevices", &volume_devices);
    ctx.unmapped_pointer(path, "livenessProbe", &liveness_probe);
    ctx.unmapped_pointer(path, "readinessProbe", &readiness_probe);
    ctx.unmapped_pointer(path, "startupProbe", &startup_probe);
    ctx.unmapped_pointer(path, "lifecycle", &lifecycle);
    ctx.unmapped_pointer(path, "securityContext", &security_context);
    ctx.unmapped_value(path, "stdin", &stdin);
    ctx.unmapped_value(path, "stdinOnce", &stdin_once);
    ctx.unmapped_value(path, "tty", &tty);
    let ports = ports.into_iter().enumerate();
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
    out.items("env", env.map(|(i, var)| env_var(var, ctx, &item(path, "env", i))).collect());
    let resources = resources.unwrap_or_default();
    out.put("resources", resource_requirements(resources, ctx, &join(path, "resources")));
    out.omitempty("terminationMessagePath", termination_message_path);
    out.omitempty("terminationMessagePolicy", termination_message_policy);
    out.omitempty("imagePullPolicy", image_pull_policy);
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

/// An item of a container's `env` with a plain `value` (no `valueFrom`).
fn env_var(var: EnvVar, ctx: &mut Ctx, path: &str) -> Value {
    let EnvVar { name, value, value_from } = var;
    ctx.unmapped_pointer(path, "valueFrom", &value_from);
    let mut out = Object::default();
    out.always("name", name);
    out.omitempty("value", value);
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
