//! The Kubernetes-compatible API server: axum routes over the revision-log [`Store`], with
//! discovery, OpenAPI, tables, admission and garbage collection, behind TLS and a bearer token.

mod admission;
mod apiservices;
mod certificates;
mod client_certs;
mod convert;
mod defaults;
mod discovery_routes;
mod ephemeral;
mod errors;
mod eviction;
mod gc;
mod impersonation;
mod kind_checks;
mod media;
mod metrics;
mod metrics_api;
mod namespace_conditions;
mod node_proxy;
mod object_checks;
mod objects;
mod paths;
mod pod_attach;
pub(crate) mod pod_exec;
pub mod pod_log;
mod port_forward;
mod priority;
mod proxy;
mod proxy_html;
mod query;
mod quota;
mod rbac;
mod read;
mod registry;
mod reviews;
mod root_ca;
mod service_accounts;
mod services;
mod spdy;
pub mod tls;
mod token_secrets;
mod tokens;
mod users;
mod watch;
mod write;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query as RawQuery, Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};

use subtle::ConstantTimeEq;

use crate::node::runtime::usage::Sampler;
use crate::storage::{Snapshot, Store, StoreConfig, StoreError};

pub use errors::ApiError;
use errors::ApiResult;
pub(crate) use objects::rfc3339;
use paths::Target;
pub use registry::Registry;
use tokens::TokenKeys;
use users::User;

/// How to run the API server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where the database, credentials and kubeconfig live.
    pub data_dir: PathBuf,
    /// Address to listen on; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Revisions of history kept for watches, at least.
    pub retain_revisions: u64,
    /// Age of history kept for watches, at least.
    pub retain_for: std::time::Duration,
}

impl ServerConfig {
    /// Loopback on port 6443, default history, data in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            bind: SocketAddr::from(([127, 0, 0, 1], 6443)),
            retain_revisions: 10_000,
            retain_for: std::time::Duration::from_secs(15 * 60),
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be created.
    #[error("creating the data directory {path}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The storage could not be opened (the cause follows in the error's chain).
    #[error("opening the storage")]
    Store(#[from] StoreError),
    /// Credentials could not be created or read.
    #[error("{0}")]
    Credentials(#[from] tls::CredentialsError),
    /// The address could not be bound.
    #[error(
        "listening on {addr} (is another `keelson up` running there? --bind picks another address)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS configuration was refused.
    #[error("configuring TLS: {0}")]
    Tls(String),
}

/// Shared state of all handlers, in one counted allocation: every request clones it (through
/// axum's extractors and middleware), and one shared count costs less than one per field.
#[derive(Clone)]
pub(crate) struct ApiState(Arc<ApiShared>);

impl std::ops::Deref for ApiState {
    type Target = ApiShared;

    fn deref(&self) -> &ApiShared {
        &self.0
    }
}

/// What [`ApiState`] holds.
pub(crate) struct ApiShared {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    /// The data directory, where the local node keeps pod logs.
    pub(crate) data_dir: PathBuf,
    token: String,
    /// Signs and checks service account tokens.
    tokens: TokenKeys,
    /// Snapshots of paginated lists, one per revision, so that later pages read the same state.
    snapshots: Mutex<VecDeque<Snapshot>>,
    /// Hands out Services' cluster IPs and node ports.
    pub(crate) services: services::Allocator,
    /// The CA certificate every namespace publishes (`kube-root-ca.crt`).
    pub(crate) ca_pem: Arc<str>,
    /// Reads what process pods and the machine use, for `metrics.k8s.io`.
    pub(crate) usage: Sampler,
}

/// How many revisions' snapshots are kept for continue tokens.
const KEPT_SNAPSHOTS: usize = 32;

impl ApiState {
    /// The user a bearer token authenticates for one of `audiences`, and those of `audiences` it
    /// is for: the admin token (compared in constant time; for the API server only) or a service
    /// account token.
    fn authenticate(&self, token: &str, audiences: &[&str]) -> Option<(User, Vec<String>)> {
        if bool::from(token.as_bytes().ct_eq(self.token.as_bytes())) {
            return audiences
                .contains(&tokens::ISSUER)
                .then(|| (User::admin(), vec![tokens::ISSUER.to_owned()]));
        }
        tokens::authenticate(&self.tokens, &self.store, token, audiences)
    }

    /// Keeps `snapshot` for the continue token of a list cut into pages (once per revision).
    fn keep_snapshot(&self, snapshot: &Snapshot) {
        let Ok(mut kept) = self.snapshots.lock() else { return };
        if kept.iter().any(|s| s.revision() == snapshot.revision()) {
            return;
        }
        if kept.len() == KEPT_SNAPSHOTS {
            kept.pop_front();
        }
        kept.push_back(snapshot.clone());
    }

    /// The state at `revision` under `prefix`, if a list cut into pages at that revision is
    /// still kept. Any kept snapshot holds every key, whichever collection it was taken for.
    fn snapshot_at(&self, revision: u64, prefix: &str) -> Option<Snapshot> {
        let kept = self.snapshots.lock().ok()?;
        kept.iter().find(|s| s.revision() == revision).map(|s| s.scoped(prefix))
    }
}

/// A running API server.
pub struct RunningServer {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The credentials clients need.
    pub credentials: tls::Credentials,
    /// The storage (shared with in-process components).
    pub store: Store,
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// The `https://host:port` URL clients use.
    pub fn url(&self) -> String {
        let host = if self.addr.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else {
            self.addr.ip().to_string()
        };
        match self.addr {
            SocketAddr::V6(_) if !self.addr.ip().is_unspecified() => {
                format!("https://[{host}]:{}", self.addr.port())
            }
            _ => format!("https://{host}:{}", self.addr.port()),
        }
    }

    /// A kubeconfig for this server: CA, server URL and bearer token.
    pub fn kubeconfig(&self) -> String {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.credentials.ca_pem);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: keelson\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: keelson-admin\n  user:\n    token: {}\ncontexts:\n- name: keelson\n  context:\n    cluster: keelson\n    user: keelson-admin\n    namespace: default\ncurrent-context: keelson\n",
            self.url(),
            self.credentials.token
        )
    }

    /// Stops accepting requests, lets open ones finish for up to `grace`, then closes storage.
    pub async fn shutdown(self, grace: std::time::Duration) {
        self.handle.graceful_shutdown(Some(grace));
        let _ = self.task.await;
        self.store.shutdown().await;
    }
}

/// Starts the API server: opens storage, loads credentials, serves HTTPS.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| StartError::DataDir { path: config.data_dir.clone(), source })?;
    let mut store_config = StoreConfig::new(config.data_dir.join("state.db"));
    store_config.retain_revisions = config.retain_revisions;
    store_config.retain_for = config.retain_for;
    let store = Store::open(store_config).await?;
    let credentials = tls::load_or_create(&config.data_dir, &[config.bind.ip()])?;

    let registry = Registry::default();
    registry.refresh(&store);
    write::ensure_default_namespaces(&store).await?;
    priority::ensure_system_classes(&store).await?;
    service_accounts::ensure_every_default(&store).await?;
    rbac::ensure_defaults(&store).await?;
    rbac::converge_aggregation(&store).await?;
    root_ca::publish_everywhere(&store, &credentials.ca_pem).await?;
    let state = ApiState(Arc::new(ApiShared {
        store: store.clone(),
        registry,
        data_dir: config.data_dir.clone(),
        token: credentials.token.clone(),
        tokens: TokenKeys::from_pem(&credentials.service_account_key_pem)
            .map_err(|e| StartError::Tls(format!("the service account key: {e}")))?,
        snapshots: Mutex::default(),
        services: services::Allocator::default(),
        ca_pem: credentials.ca_pem.clone().into(),
        usage: Sampler::default(),
    }));
    gc::spawn(store.clone(), state.registry.clone());
    quota::spawn(store.clone());
    root_ca::spawn(store.clone(), state.ca_pem.clone());
    token_secrets::spawn(store.clone(), state.tokens.clone(), state.ca_pem.clone());
    rbac::spawn_aggregation(store.clone());
    apiservices::spawn(store.clone());
    certificates::spawn(store.clone(), &credentials.ca_pem, &credentials.ca_key_pem)
        .map_err(StartError::Tls)?;
    let app = router(state);

    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = client_certs::tls_config(&credentials).map_err(StartError::Tls)?;
    let listener = std::net::TcpListener::bind(config.bind)
        .map_err(|source| StartError::Bind { addr: config.bind, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| StartError::Bind { addr: config.bind, source })?;
    let addr =
        listener.local_addr().map_err(|source| StartError::Bind { addr: config.bind, source })?;
    services::ensure_kubernetes(&store, addr).await?;
    let handle = axum_server::Handle::new();
    // Segments go out as written (`TCP_NODELAY`, as Go's API server has it): a watch event is
    // not held back waiting for the acknowledgement of the one before.
    let acceptor = client_certs::PeerAcceptor::new(tls);
    let server = axum_server::from_tcp(listener)
        .map_err(|source| StartError::Bind { addr, source })?
        .acceptor(acceptor)
        .handle(handle.clone());
    let task = tokio::spawn(server.serve(app.into_make_service()));
    Ok(RunningServer { addr, credentials, store, handle, task })
}

/// The largest request body, as the Kubernetes API server's (3 MiB).
const MAX_REQUEST_BODY: usize = 3 << 20;

fn router(state: ApiState) -> Router {
    let open = Router::new()
        .route("/healthz", get(discovery_routes::health))
        .route("/livez", get(discovery_routes::health))
        .route("/readyz", get(discovery_routes::health))
        .route("/healthz/{check}", get(discovery_routes::health_check))
        .route("/livez/{check}", get(discovery_routes::health_check))
        .route("/readyz/{check}", get(discovery_routes::health_check))
        .route("/version", get(discovery_routes::version))
        .method_not_allowed_fallback(method_not_allowed);
    let guarded = Router::new()
        .route("/metrics", get(metrics::metrics))
        .route("/api", get(discovery_routes::api))
        .route("/api/v1", get(discovery_routes::core_resources))
        .route("/api/v1/namespaces/{namespace}/pods/{name}/attach", any(pod_attach::attach))
        .route("/api/v1/namespaces/{namespace}/pods/{name}/exec", any(pod_exec::exec))
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/portforward",
            any(port_forward::port_forward),
        )
        .route("/api/v1/nodes/{name}/proxy", any(node_proxy::node))
        .route("/api/v1/nodes/{name}/proxy/", any(node_proxy::node))
        .route("/api/v1/nodes/{name}/proxy/{*path}", any(node_proxy::node))
        .route("/api/v1/namespaces/{namespace}/pods/{name}/proxy", any(proxy::pod))
        .route("/api/v1/namespaces/{namespace}/pods/{name}/proxy/", any(proxy::pod))
        .route("/api/v1/namespaces/{namespace}/pods/{name}/proxy/{*path}", any(proxy::pod))
        .route("/api/v1/namespaces/{namespace}/services/{name}/proxy", any(proxy::service))
        .route("/api/v1/namespaces/{namespace}/services/{name}/proxy/", any(proxy::service))
        .route("/api/v1/namespaces/{namespace}/services/{name}/proxy/{*path}", any(proxy::service))
        .route(
            "/api/v1/{*rest}",
            any(core_resource).layer(middleware::from_fn(media::negotiate_response)),
        )
        .route("/apis", get(discovery_routes::apis))
        .route("/apis/{group}", get(discovery_routes::group))
        .route("/apis/{group}/{version}", get(discovery_routes::group_version_resources))
        .route(
            "/apis/{group}/{version}/{*rest}",
            any(group_resource).layer(middleware::from_fn(media::negotiate_response)),
        )
        .route("/openapi/v2", get(discovery_routes::openapi_v2))
        .route("/openapi/v3", get(discovery_routes::openapi_index))
        .route("/openapi/v3/{*gv}", get(discovery_routes::openapi_document))
        .fallback(|request: Request| async move { ApiError::no_route(request.uri().path()) })
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    open.merge(guarded).with_state(state)
}

/// A `405` Status for a method a path does not take (axum's own answer has no body).
async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::method_not_allowed(request.method().as_str(), request.uri().path())
}

/// Refuses requests without the admin bearer token (compared in constant time), a service
/// account token the server accepts or a client certificate issued by its CA; applies
/// impersonation headers; authorizes requests for discovery and OpenAPI (resource requests are
/// authorized once their path is resolved); and tells the handlers who the request is from.
async fn authenticate(State(state): State<ApiState>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    // A bearer token, else the client certificate of the connection.
    let user = match presented {
        "" => request
            .extensions()
            .get::<client_certs::PeerUser>()
            .and_then(|p| p.0.as_deref())
            .cloned(),
        _ => state.authenticate(presented, &[tokens::ISSUER]).map(|(user, _)| user),
    };
    let Some(user) = user else { return ApiError::unauthorized().into_response() };
    let checked = impersonation::apply(&state.store, user, request.headers()).and_then(|user| {
        let path = request.uri().path();
        if !user.is_master() && !rbac::is_resource_path(path) {
            let verb = request.method().as_str().to_lowercase();
            let attributes = rbac::Attributes::NonResource { verb, path: path.to_owned() };
            rbac::check(&state.store, &user, &attributes)?;
        }
        Ok(user)
    });
    match checked {
        Ok(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}

/// A parsed resource request.
pub(crate) struct ResourceRequest {
    pub(crate) method: Method,
    pub(crate) target: Target,
    pub(crate) query: query::Query,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Who the request is from.
    pub(crate) user: User,
}

async fn core_resource(
    State(state): State<ApiState>,
    Path(rest): Path<String>,
    method: Method,
    RawQuery(params): RawQuery<HashMap<String, String>>,
    Extension(user): Extension<User>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = (method, params, user, headers);
    dispatch(state, "", "v1", &rest, request, body).await
}

async fn group_resource(
    State(state): State<ApiState>,
    Path((group, version, rest)): Path<(String, String, String)>,
    method: Method,
    RawQuery(params): RawQuery<HashMap<String, String>>,
    Extension(user): Extension<User>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = (method, params, user, headers);
    dispatch(state, &group, &version, &rest, request, body).await
}

/// What a resource request's handler extracted besides its path and body.
type RequestParts = (Method, HashMap<String, String>, User, HeaderMap);

async fn dispatch(
    state: ApiState,
    group: &str,
    version: &str,
    rest: &str,
    (method, params, user, headers): RequestParts,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let result: ApiResult<Response> = async {
        let body =
            body.map_err(|rejection| ApiError::unreadable_body(&rejection, MAX_REQUEST_BODY))?;
        let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
        let target = paths::resolve(&state.registry.served(), group, version, &segments)?;
        let query = query::Query::parse(params)?;
        let request = ResourceRequest { method, target, query, headers, body, user };
        if !request.user.is_master() {
            rbac::check(&state.store, &request.user, &rbac::request_attributes(&request))?;
        }
        route(&state, request).await
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

/// Each handler's future is boxed: the route's own future, which axum moves into a box of its
/// own for every request, then stays a few words long instead of taking the size of the
/// largest handler's (a few KiB) and copying it each time.
async fn route(state: &ApiState, request: ResourceRequest) -> ApiResult<Response> {
    if reviews::is_review(&request.target.info) {
        return reviews::review(state, &request);
    }
    if metrics_api::is_metrics(&request.target.info) {
        return Box::pin(metrics_api::serve(state, &request)).await;
    }
    let has_name = request.target.name.is_some();
    let sub = request.target.subresource.clone();
    match (&request.method, has_name, sub.as_deref()) {
        (&Method::GET, false, _) if request.query.watch => {
            Box::pin(watch::watch(state, request)).await
        }
        (&Method::GET, false, _) => Box::pin(read::list(state, request)).await,
        (&Method::GET, true, Some("scale")) => read::get_scale(state, request),
        (&Method::GET, true, Some("log")) => Box::pin(pod_log::pod_log(state, request)).await,
        (&Method::GET, true, _) => read::get(state, request),
        (&Method::POST, false, _) => Box::pin(write::create(state, request)).await,
        (&Method::POST, true, Some("eviction")) => Box::pin(eviction::evict(state, request)).await,
        (&Method::POST, true, Some("token")) => {
            tokens::create(&state.tokens, &state.store, &request)
        }
        (&Method::PUT, true, Some("scale")) => Box::pin(write::update_scale(state, request)).await,
        (&Method::PUT, true, _) => Box::pin(write::update(state, request)).await,
        (&Method::PATCH, true, _) => Box::pin(write::patch(state, request)).await,
        (&Method::DELETE, true, None) => Box::pin(write::delete(state, request)).await,
        (&Method::DELETE, false, None)
            if request.target.info.verbs.iter().any(|v| v == "deletecollection") =>
        {
            Box::pin(write::delete_collection(state, request)).await
        }
        (method, _, _) => {
            Err(ApiError::method_not_allowed(method.as_str(), &request.target.info.resource))
        }
    }
}
