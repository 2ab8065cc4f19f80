//! The `proxy` subresource of pods and Services: an HTTP request relayed to a pod's port, or to
//! a Service's port on one of its ready endpoints, as `kubectl proxy` and `kubectl get --raw
//! /api/v1/namespaces/<ns>/services/<name>:<port>/proxy/<path>` use it.
//!
//! The URL names its target `[scheme:]name[:port]`, as upstream's. Pods the local node runs as
//! processes share this machine's network (their address is loopback) and are reached there;
//! simulated pods have nothing listening, so a request to one is refused saying so. As
//! upstream's API server does, the client's credentials (`Authorization`, `Impersonate-*`) are
//! not passed on, a redirect of the backend's own is rewritten to come back through the proxy,
//! and `https:` targets are reached without checking their certificate. A connection upgrade
//! (WebSocket) the backend accepts with `101 Switching Protocols` is relayed both ways until
//! either side closes. Links of HTML pages to the backend's own paths are rewritten to come
//! back through the proxy (see [`super::proxy_html`]).

use std::net::IpAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Extension, Path, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::net::TcpStream;

use super::errors::{ApiError, ApiResult};
use super::rbac::{self, Attributes, ResourceAttributes};
use super::read::stored_core;
use super::users::User;
use super::{ApiState, proxy_html};
use crate::container_http;

/// How long connecting to a backend may take (upstream's dial timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The namespace and target of a proxy request:
/// `/api/v1/namespaces/{namespace}/{pods|services}/{name}/proxy[/{path}]`. The path the backend
/// is asked for is taken from the request as sent (see `sent_rest`), not decoded.
#[derive(Deserialize)]
pub(crate) struct ProxyPath {
    namespace: String,
    name: String,
}

/// `/api/v1/namespaces/{namespace}/pods/{name}/proxy[/{path}]`, any method.
pub(crate) async fn pod(
    State(state): State<ApiState>,
    Path(path): Path<ProxyPath>,
    Extension(user): Extension<User>,
    request: Request,
) -> ApiResult<Response> {
    authorize(&state, &user, "pods", &path, request.method())?;
    let target = Target::parse(&path.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {:?}", path.name)))?;
    let pod: Pod = stored_core(&state, "pods", &path.namespace, &target.name)?;
    let backend = pod_backend(&pod, &target)?;
    relay(backend, prefix(&path, "pods"), request).await
}

/// `/api/v1/namespaces/{namespace}/services/{name}/proxy[/{path}]`, any method.
pub(crate) async fn service(
    State(state): State<ApiState>,
    Path(path): Path<ProxyPath>,
    Extension(user): Extension<User>,
    request: Request,
) -> ApiResult<Response> {
    authorize(&state, &user, "services", &path, request.method())?;
    let target = Target::parse(&path.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {:?}", path.name)))?;
    let service: Service = stored_core(&state, "services", &path.namespace, &target.name)?;
    // A Service without a selector may have Endpoints someone wrote; none at all is no endpoint.
    let endpoints: Endpoints =
        stored_core(&state, "endpoints", &path.namespace, &target.name).unwrap_or_default();
    let backend = service_backend(&service, &endpoints, &target, random)?;
    relay(backend, prefix(&path, "services"), request).await
}

/// RBAC: the verb of the request's method on `<resource>/proxy`, named as in the URL (with
/// its scheme and port, as upstream's authorizer sees it).
fn authorize(
    state: &ApiState,
    user: &User,
    resource: &str,
    path: &ProxyPath,
    method: &Method,
) -> ApiResult<()> {
    let asked = Attributes::Resource(ResourceAttributes {
        verb: rbac::object_verb(method).into_owned(),
        group: String::new(),
        resource: resource.into(),
        subresource: "proxy".into(),
        name: path.name.clone(),
        namespace: path.namespace.clone(),
    });
    rbac::check(&state.store, user, &asked)
}

/// Where the proxy of `resource` `path.name` is served: the prefix of the paths a backend's
/// redirects are rewritten to.
fn prefix(path: &ProxyPath, resource: &str) -> String {
    format!("/api/v1/namespaces/{}/{resource}/{}/proxy", path.namespace, path.name)
}

/// A proxy target as the URL names it: `[scheme:]name[:port]`.
#[derive(Debug, PartialEq)]
pub(super) struct Target {
    https: bool,
    pub(super) name: String,
    /// A port number or name; empty when none is given.
    port: String,
}

impl Target {
    pub(super) fn parse(id: &str) -> Option<Target> {
        let parts: Vec<&str> = id.split(':').collect();
        let (scheme, name, port) = match parts[..] {
            [name] => ("", name, ""),
            [name, port] => ("", name, port),
            [scheme, name, port] => (scheme, name, port),
            _ => return None,
        };
        let https = match scheme {
            "" | "http" => false,
            "https" => true,
            _ => return None,
        };
        (!name.is_empty()).then(|| Target { https, name: name.to_owned(), port: port.to_owned() })
    }
}

/// Where a request goes.
#[derive(Debug, PartialEq)]
struct Backend {
    https: bool,
    ip: IpAddr,
    port: u16,
}

impl Backend {
    fn authority(&self) -> String {
        std::net::SocketAddr::new(self.ip, self.port).to_string()
    }
}

/// The backend of a pod target: the pod's address and the port named (a number, or a container
/// port's name), else its first container port, else the scheme's.
fn pod_backend(pod: &Pod, target: &Target) -> ApiResult<Backend> {
    let name = &target.name;
    let ports: Vec<_> = pod
        .spec
        .iter()
        .flat_map(|spec| &spec.containers)
        .flat_map(|container| container.ports.iter().flatten())
        .collect();
    let port = if target.port.is_empty() {
        match ports.first() {
            Some(port) => port.container_port,
            None if target.https => 443,
            None => 80,
        }
    } else if let Ok(number) = target.port.parse::<i32>() {
        number
    } else {
        let named = ports.iter().find(|p| p.name.as_deref() == Some(target.port.as_str()));
        let port = named.ok_or_else(|| {
            ApiError::bad_request(format!("pod {name:?} has no port named {:?}", target.port))
        })?;
        port.container_port
    };
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid port {port} for pod {name:?}")))?;
    let ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()).unwrap_or_default();
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return Err(ApiError::unavailable(format!("pod {name:?} has no IP address yet")));
    };
    if !ip.is_loopback() {
        return Err(simulated(&format!("pod {name:?} is simulated")));
    }
    Ok(Backend { https: target.https, ip, port })
}

/// The backend of a Service target, as upstream finds it: the Service port named (by its name,
/// or by number; none names the port without a name), then a ready address of the Service's
/// Endpoints with the port of that name, taken at random (`pick(n)` is below `n`). Only
/// addresses on this machine can be reached, so only they are taken.
fn service_backend(
    service: &Service,
    endpoints: &Endpoints,
    target: &Target,
    pick: impl Fn(usize) -> usize,
) -> ApiResult<Backend> {
    let name = &target.name;
    let mut port_name = target.port.clone();
    if let Ok(number) = target.port.parse::<i32>() {
        let ports = service.spec.iter().flat_map(|spec| spec.ports.iter().flatten());
        let Some(port) = ports.into_iter().find(|p| p.port == number) else {
            let message = format!("no service port {number} found for service {name:?}");
            return Err(ApiError::unavailable(message));
        };
        port_name = port.name.clone().unwrap_or_default();
    }
    let mut candidates = Vec::new();
    let mut simulated_only = false;
    for subset in endpoints.subsets.iter().flatten() {
        let ports = subset.ports.iter().flatten();
        for port in ports.filter(|p| p.name.as_deref().unwrap_or_default() == port_name) {
            for address in subset.addresses.iter().flatten() {
                match address.ip.parse::<IpAddr>() {
                    Ok(ip) if ip.is_loopback() => candidates.push((ip, port.port)),
                    _ => simulated_only = true,
                }
            }
        }
    }
    if candidates.is_empty() {
        if simulated_only {
            return Err(simulated(&format!(
                "the endpoints of service {name:?} are simulated pods"
            )));
        }
        return Err(ApiError::unavailable(format!("no endpoints available for service {name:?}")));
    }
    let (ip, port) = candidates[pick(candidates.len())];
    let port = u16::try_from(port)
        .map_err(|_| ApiError::unavailable(format!("invalid endpoint port {port}")))?;
    Ok(Backend { https: target.https, ip, port })
}

/// A number below `n` (which is not 0), at random.
fn random(n: usize) -> usize {
    getrandom::u32().map_or(0, |r| r as usize % n)
}

/// `503` for a target only simulated pods stand behind.
fn simulated(what: &str) -> ApiError {
    ApiError::unavailable(format!(
        "{what}: keelson's local node runs nothing behind its ports (only Job pods and pods annotated keelson.dev/run-as-process=\"true\" run as processes, whose ports can be reached)"
    ))
}

/// Request headers that concern one connection only, or the client's credentials: never
/// passed on.
fn drop_headers(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::try_from(name.trim()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::AUTHORIZATION,
        HeaderName::from_static("keep-alive"),
    ] {
        headers.remove(name);
    }
    let impersonation: Vec<HeaderName> =
        headers.keys().filter(|name| name.as_str().starts_with("impersonate-")).cloned().collect();
    for name in impersonation {
        headers.remove(name);
    }
}

/// What follows `.../proxy/` in a proxy request's `path`, still percent-encoded as sent, so that
/// an escaped `/` or space reaches the backend as the client wrote it; empty for `.../proxy`.
fn sent_rest(path: &str) -> &str {
    // "", "api", "v1", "namespaces", namespace, resource, name, "proxy", then the rest.
    path.splitn(9, '/').nth(8).unwrap_or_default()
}

/// Sends `request` to `backend` at the path after `.../proxy`, with its query, and answers with
/// the backend's response. A GET of the target itself without a trailing `/` is redirected to
/// it with one first, as upstream does, so that relative links resolve under the proxy.
async fn relay(backend: Backend, prefix: String, mut request: Request) -> ApiResult<Response> {
    let upgrade = upgrade_protocol(request.headers());
    let client_side = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
    let query = request.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
    let rest = sent_rest(request.uri().path()).to_owned();
    let (mut parts, body) = request.into_parts();
    if rest.is_empty()
        && !parts.uri.path().ends_with('/')
        && matches!(parts.method, Method::GET | Method::HEAD)
    {
        let location = format!("{}/{query}", parts.uri.path());
        return Ok((StatusCode::MOVED_PERMANENTLY, [(header::LOCATION, location)]).into_response());
    }
    let uri: Uri = format!("/{rest}{query}")
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid proxy path {rest:?}")))?;
    drop_headers(&mut parts.headers);
    if let Some(protocol) = upgrade {
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        parts.headers.insert(header::UPGRADE, protocol);
    }
    let authority = backend.authority();
    let host = HeaderValue::try_from(&authority).expect("an address is a valid header value");
    parts.headers.insert(header::HOST, host);
    let head = parts.method == Method::HEAD;
    let mut outbound = hyper::Request::new(body);
    *outbound.method_mut() = parts.method;
    *outbound.uri_mut() = uri;
    *outbound.headers_mut() = parts.headers;

    let unreachable = |error: &dyn std::fmt::Display| {
        ApiError::unavailable(format!("error trying to reach service: {authority}: {error}"))
    };
    let stream =
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((backend.ip, backend.port)))
            .await
        {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(unreachable(&error)),
            Err(_) => return Err(unreachable(&"connection timed out")),
        };
    let tls = backend.https.then(|| ServerName::IpAddress(backend.ip.into()));
    let mut response =
        container_http::send(stream, tls, outbound).await.map_err(|e| unreachable(&e))?;
    if let (StatusCode::SWITCHING_PROTOCOLS, Some(client_side)) = (response.status(), client_side) {
        // The answer goes back as it is (its `Upgrade` and `Connection` included); then both
        // connections are the client's and the backend's to talk over.
        tokio::spawn(splice(client_side, hyper::upgrade::on(&mut response)));
        return Ok(response.map(|_| Body::empty()));
    }
    drop_headers(response.headers_mut());
    rewrite_location(response.headers_mut(), &backend, &prefix);
    if head || !proxy_html::is_html(response.headers()) {
        return Ok(response.map(Body::new));
    }
    let (mut parts, body) = response.into_parts();
    let link = |value: &str| own_link(value, &backend, &prefix);
    let body = proxy_html::relay(&mut parts.headers, body, link).await;
    Ok(Response::from_parts(parts, body))
}

/// The protocol a request asks to switch to (`Upgrade`), when its `Connection` lists `upgrade`.
fn upgrade_protocol(headers: &HeaderMap) -> Option<HeaderValue> {
    let asked = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|token| token.trim().eq_ignore_ascii_case("upgrade")));
    asked.then(|| headers.get(header::UPGRADE).cloned()).flatten()
}

/// Relays bytes between an upgraded client connection and the backend's, both ways, until
/// either side closes.
async fn splice(client: hyper::upgrade::OnUpgrade, backend: hyper::upgrade::OnUpgrade) {
    let (Ok(client), Ok(backend)) = tokio::join!(client, backend) else { return };
    let (mut client, mut backend) = (TokioIo::new(client), TokioIo::new(backend));
    if let Err(error) = tokio::io::copy_bidirectional(&mut client, &mut backend).await {
        tracing::debug!(%error, "an upgraded proxy connection ended");
    }
}

/// Makes a redirect of the backend to one of its own paths (`/login`, or a URL naming the
/// backend's address) go through the proxy at `prefix`; others are left as they are.
fn rewrite_location(headers: &mut HeaderMap, backend: &Backend, prefix: &str) {
    let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()) else {
        return;
    };
    if let Some(value) =
        own_link(location, backend, prefix).and_then(|l| HeaderValue::try_from(l).ok())
    {
        headers.insert(header::LOCATION, value);
    }
}

/// `link` made to go through the proxy at `prefix` when it leads to one of the backend's own
/// paths: a path from the root (`/login`), or a URL naming the backend's address. A relative
/// link, one elsewhere, or one already under `prefix` is left as it is (none).
fn own_link(link: &str, backend: &Backend, prefix: &str) -> Option<String> {
    let path = if link.starts_with('/') && !link.starts_with("//") {
        link.to_owned()
    } else {
        let uri = link.parse::<Uri>().ok().filter(|uri| {
            uri.authority().is_some_and(|a| a.as_str() == backend.authority())
                && matches!(uri.scheme_str(), Some("http" | "https"))
        })?;
        uri.path_and_query().map_or("/".to_owned(), |p| p.as_str().to_owned())
    };
    let under_prefix = path
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']));
    (!under_prefix).then(|| format!("{prefix}{path}"))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};
    use serde_json::json;

    use super::*;

    fn target(id: &str) -> Target {
        Target::parse(id).unwrap()
    }

    #[test]
    fn a_target_is_scheme_name_and_port() {
        let plain = Target { https: false, name: "web".into(), port: String::new() };
        assert_eq!(target("web"), plain);
        assert_eq!(target("web:8080").port, "8080");
        assert_eq!(target("http:web:http").port, "http");
        assert!(target("https:web:").https);
        for bad in ["", ":80", "ftp:web:21", "a:b:c:d"] {
            assert_eq!(Target::parse(bad), None, "{bad}");
        }
    }

    fn pod(ip: &str) -> Pod {
        serde_json::from_value(json!({
            "spec": {"containers": [
                {"name": "sidecar"},
                {"name": "main", "ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 9090}]},
            ]},
            "status": {"podIP": ip},
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_is_reached_on_the_port_named_else_its_first() {
        let local = "127.0.0.1".parse().unwrap();
        let port = |id| pod_backend(&pod("127.0.0.1"), &target(id)).map(|b| b.port);
        assert_eq!(port("p"), Ok(8080));
        assert_eq!(port("p:http"), Ok(8080));
        assert_eq!(port("p:7000"), Ok(7000));
        assert_eq!(
            pod_backend(&pod("127.0.0.1"), &target("https:p:9090")),
            Ok(Backend { https: true, ip: local, port: 9090 })
        );
        let bare: Pod = serde_json::from_value(json!({"status": {"podIP": "127.0.0.1"}})).unwrap();
        assert_eq!(pod_backend(&bare, &target("p")).map(|b| b.port), Ok(80));
        assert_eq!(pod_backend(&bare, &target("https:p:")).map(|b| b.port), Ok(443));

        assert_eq!(port("p:grpc").unwrap_err().code, StatusCode::BAD_REQUEST);
        assert_eq!(port("p:70000").unwrap_err().code, StatusCode::BAD_REQUEST);
        let simulated = pod_backend(&pod("10.244.0.7"), &target("p")).unwrap_err();
        assert_eq!(simulated.code, StatusCode::SERVICE_UNAVAILABLE);
        assert!(simulated.message.starts_with("pod \"p\" is simulated"), "{}", simulated.message);
        let unplaced = pod_backend(&pod(""), &target("p")).unwrap_err();
        assert_eq!(unplaced.message, "pod \"p\" has no IP address yet");
    }

    fn service() -> Service {
        serde_json::from_value(json!({"spec": {"ports": [
            {"name": "http", "port": 80},
            {"name": "metrics", "port": 9100},
        ]}}))
        .unwrap()
    }

    fn endpoints(addresses: &[&str], not_ready: &[&str]) -> Endpoints {
        let address = |ip: &&str| EndpointAddress { ip: (*ip).to_owned(), ..Default::default() };
        let port =
            |name: &str, port| EndpointPort { name: Some(name.into()), port, ..Default::default() };
        Endpoints {
            subsets: Some(vec![EndpointSubset {
                addresses: Some(addresses.iter().map(address).collect()),
                not_ready_addresses: Some(not_ready.iter().map(address).collect()),
                ports: Some(vec![port("http", 8080), port("metrics", 9200)]),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn a_service_is_reached_on_a_ready_local_endpoint_of_its_port() {
        let ready = endpoints(&["10.244.0.3", "127.0.0.1"], &["127.0.0.2"]);
        let backend = |id, eps: &Endpoints| service_backend(&service(), eps, &target(id), |_| 0);
        let local = "127.0.0.1".parse().unwrap();
        assert_eq!(
            backend("web:http", &ready),
            Ok(Backend { https: false, ip: local, port: 8080 })
        );
        assert_eq!(
            backend("web:9100", &ready).map(|b| b.port),
            Ok(9200),
            "by the service port's number"
        );
        assert!(backend("https:web:metrics", &ready).unwrap().https);

        let missing = backend("web:81", &ready).unwrap_err();
        assert_eq!(missing.code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(missing.message, "no service port 81 found for service \"web\"");
        // No port names the unnamed one, which this service does not have.
        let none = backend("web", &ready).unwrap_err();
        assert_eq!(none.message, "no endpoints available for service \"web\"");
        let unready = backend("web:http", &endpoints(&[], &["127.0.0.1"])).unwrap_err();
        assert_eq!(unready.message, "no endpoints available for service \"web\"");
        let simulated = backend("web:http", &endpoints(&["10.244.0.3"], &[])).unwrap_err();
        assert!(
            simulated.message.starts_with("the endpoints of service \"web\" are simulated pods")
        );

        // Several local endpoints: the one picked.
        let two = endpoints(&["127.0.0.1", "127.0.0.5"], &[]);
        let second = service_backend(&service(), &two, &target("web:http"), |n| n - 1).unwrap();
        assert_eq!(second.ip, "127.0.0.5".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_backend_is_asked_for_the_path_as_sent() {
        let pods = "/api/v1/namespaces/proxy/pods/web:8080/proxy";
        assert_eq!(sent_rest(pods), "");
        assert_eq!(sent_rest(&format!("{pods}/")), "");
        assert_eq!(sent_rest(&format!("{pods}/a%20b/c%2Fd/")), "a%20b/c%2Fd/");
    }

    #[test]
    fn an_upgrade_is_asked_by_connection_and_upgrade_together() {
        let headers = |pairs: &[(&str, &str)]| -> HeaderMap {
            pairs
                .iter()
                .map(|(k, v)| {
                    (HeaderName::try_from(*k).unwrap(), HeaderValue::try_from(*v).unwrap())
                })
                .collect()
        };
        let asked = headers(&[("connection", "keep-alive, Upgrade"), ("upgrade", "websocket")]);
        assert_eq!(upgrade_protocol(&asked).unwrap(), "websocket");
        assert_eq!(upgrade_protocol(&headers(&[("upgrade", "websocket")])), None);
        assert_eq!(upgrade_protocol(&headers(&[("connection", "upgrade")])), None);
    }

    #[test]
    fn credentials_and_connection_headers_stay_behind() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer secret"),
            ("impersonate-user", "admin"),
            ("impersonate-extra-scopes", "x"),
            ("connection", "keep-alive, x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("accept", "text/html"),
            ("cookie", "a=b"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        drop_headers(&mut headers);
        let left: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["accept", "cookie"]);
    }

    #[test]
    fn redirects_to_the_backends_own_paths_come_back_through_the_proxy() {
        let backend = Backend { https: false, ip: "127.0.0.1".parse().unwrap(), port: 8080 };
        let prefix = "/api/v1/namespaces/default/services/web:http/proxy";
        let rewritten = |location: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::LOCATION, HeaderValue::from_static(location));
            rewrite_location(&mut headers, &backend, prefix);
            headers[header::LOCATION].to_str().unwrap().to_owned()
        };
        assert_eq!(rewritten("/login?next=%2F"), format!("{prefix}/login?next=%2F"));
        assert_eq!(rewritten("http://127.0.0.1:8080/docs/"), format!("{prefix}/docs/"));
        assert_eq!(rewritten("http://127.0.0.1:8080"), format!("{prefix}/"));
        let under_prefix = format!("{prefix}/docs/");
        for elsewhere in ["https://example.com/x", "//example.com/x", "next/page", &under_prefix] {
            assert_eq!(own_link(elsewhere, &backend, prefix), None, "{elsewhere}");
        }
        assert_eq!(rewritten("https://example.com/x"), "https://example.com/x");
    }
}
