//! Conversion of `networking.k8s.io/v1` `Ingress`, as `kubectl create ingress` sends it: class,
//! TLS, a default backend and rules whose paths lead to Services; not a resource backend.

use k8s_pb::api::networking::v1::{
    HttpIngressPath, HttpIngressRuleValue, Ingress, IngressBackend, IngressLoadBalancerStatus,
    IngressRule, IngressRuleValue, IngressServiceBackend, IngressSpec, IngressStatus, IngressTls,
    ServiceBackendPort,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object, item, join};
use super::meta::object_meta;

/// An `Ingress`; its status must be empty.
pub(crate) fn ingress(ingress: Ingress, ctx: &mut Ctx) -> Map<String, Value> {
    let Ingress { metadata, spec, status } = ingress;
    let IngressStatus { load_balancer } = status.unwrap_or_default();
    let IngressLoadBalancerStatus { ingress: addresses } = load_balancer.unwrap_or_default();
    ctx.unmapped_entries("status.loadBalancer", "ingress", &addresses);
    let IngressSpec { ingress_class_name, default_backend, tls, rules } = spec.unwrap_or_default();
    let mut spec = Object::default();
    spec.pointer("ingressClassName", ingress_class_name);
    if let Some(default_backend) = default_backend {
        spec.put("defaultBackend", backend(default_backend, ctx, "spec.defaultBackend"));
    }
    let tls: Vec<Value> = tls
        .into_iter()
        .map(|IngressTls { hosts, secret_name }| {
            let mut out = Object::default();
            out.items("hosts", hosts);
            out.omitempty("secretName", secret_name);
            Value::from(out)
        })
        .collect();
    spec.items("tls", tls);
    let rules: Vec<Value> = rules
        .into_iter()
        .enumerate()
        .map(|(index, rule)| self::rule(rule, ctx, &item("spec", "rules", index)))
        .collect();
    spec.items("rules", rules);
    let mut load_balancer = Object::default();
    load_balancer.put("loadBalancer", Object::default());
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.put("status", load_balancer);
    out.into()
}

fn rule(rule: IngressRule, ctx: &mut Ctx, path: &str) -> Value {
    let IngressRule { host, ingress_rule_value } = rule;
    let mut out = Object::default();
    out.omitempty("host", host);
    if let Some(HttpIngressRuleValue { paths }) =
        ingress_rule_value.and_then(|IngressRuleValue { http }| http)
    {
        let http_path = join(path, "http");
        let paths: Vec<Value> = paths
            .into_iter()
            .enumerate()
            .map(|(index, p)| self::path(p, ctx, &item(&http_path, "paths", index)))
            .collect();
        let mut http = Object::default();
        // Not `omitempty` in Go: a nil slice is written as `null`.
        http.put("paths", if paths.is_empty() { Value::Null } else { paths.into() });
        out.put("http", http);
    }
    out.into()
}

fn path(http_path: HttpIngressPath, ctx: &mut Ctx, path: &str) -> Value {
    let HttpIngressPath { path: prefix, path_type, backend } = http_path;
    let backend = self::backend(backend.unwrap_or_default(), ctx, &join(path, "backend"));
    let mut out = Object::default();
    out.omitempty("path", prefix);
    // A pointer without `omitempty` in Go: `null` when unset.
    out.put("pathType", path_type.map_or(Value::Null, Value::from));
    out.put("backend", backend);
    out.into()
}

/// A backend at `path`: a Service's name and port.
fn backend(backend: IngressBackend, ctx: &mut Ctx, path: &str) -> Object {
    let IngressBackend { service, resource } = backend;
    ctx.unmapped_pointer(path, "resource", &resource);
    let mut out = Object::default();
    if let Some(IngressServiceBackend { name, port }) = service {
        let ServiceBackendPort { name: port_name, number } = port.unwrap_or_default();
        let mut port = Object::default();
        port.omitempty("name", port_name);
        port.omitempty("number", number);
        let mut service = Object::default();
        service.always("name", name);
        service.put("port", port);
        out.put("service", service);
    }
    out
}
