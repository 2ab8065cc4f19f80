//! Bearer-token authentication, scopes and per-token rate limits of the REST API.

pub mod token;

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PostParams;
use kube::runtime::watcher;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::orchestrator::cache::Cache;
pub use token::{Identity, Scope};

/// How long an unknown token is looked for before it is refused.
const NEW_TOKEN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Checks bearer tokens against the token Secrets and applies scopes and rate limits.
#[derive(Clone)]
pub struct Authenticator {
    tokens: Cache<Secret>,
    limiter: Option<Arc<DefaultKeyedRateLimiter<String>>>,
}

impl Authenticator {
    /// Watches the token Secrets of `namespace`; `rate` is requests per second per token
    /// (bursts of twice that), none when `None`.
    pub fn start(client: kube::Client, namespace: &str, rate: Option<NonZeroU32>) -> Self {
        let selector = format!("{}=true", token::API_TOKEN_LABEL);
        let tokens = Cache::start(
            "api tokens",
            client,
            namespace,
            watcher::Config::default().labels(&selector),
        );
        let limiter = rate.map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).unwrap_or(NonZeroU32::MIN));
            Arc::new(RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)))
        });
        Self { tokens, limiter }
    }

    /// The token cache, for readiness.
    pub fn cache(&self) -> &Cache<Secret> {
        &self.tokens
    }

    /// Who holds `presented`, compared by hash in constant time against every stored token.
    pub fn identify(&self, presented: &str) -> Option<Identity> {
        let presented = token::hash(presented);
        let mut found = None;
        for secret in self.tokens.all() {
            if let Some((stored, identity)) = token::identity_of(&secret)
                && bool::from(stored.as_bytes().ct_eq(presented.as_bytes()))
            {
                found = Some(identity);
            }
        }
        found
    }

    /// Like [`Self::identify`], but a token not found is looked for again while the token cache
    /// changes, for up to two seconds: one created a moment ago (`keelson token create`)
    /// may not have reached the cache yet.
    pub async fn identify_new(&self, presented: &str) -> Option<Identity> {
        if let Some(identity) = self.identify(presented) {
            return Some(identity);
        }
        self.tokens.wait_until(NEW_TOKEN_GRACE, |_| self.identify(presented).is_some()).await;
        self.identify(presented)
    }

    fn check_rate(&self, identity: &Identity) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else { return Ok(()) };
        limiter.check_key(&identity.name).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ApiError::rate_limited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        })
    }
}

/// The bearer token of a request.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Middleware: authenticates, checks the scope against the method, rate-limits, and hands the
/// [`Identity`] to the handler.
pub async fn require_token(
    State(auth): State<Authenticator>,
    request: Request,
    next: Next,
) -> Response {
    let reading = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    admit(&auth, request, next, !reading).await
}

/// Middleware like [`require_token`] for endpoints that change nothing although they take a
/// body by `POST` (parsing a message): read tokens may call them.
pub async fn require_any_token(
    State(auth): State<Authenticator>,
    request: Request,
    next: Next,
) -> Response {
    admit(&auth, request, next, false).await
}

async fn admit(auth: &Authenticator, mut request: Request, next: Next, writes: bool) -> Response {
    let Some(presented) = bearer(request.headers()) else {
        return ApiError::unauthorized("this endpoint needs `Authorization: Bearer <token>`")
            .into_response();
    };
    let Some(identity) = auth.identify_new(presented).await else {
        return ApiError::unauthorized("the bearer token is not valid").into_response();
    };
    if writes && identity.scope == Scope::Read {
        return ApiError::forbidden(format!(
            "token {:?} may only read; this needs a write token",
            identity.name
        ))
        .into_response();
    }
    if let Err(error) = auth.check_rate(&identity) {
        return error.into_response();
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}

/// Creates an API token named `name` in `namespace` and returns it: the only time it exists
/// outside the caller.
pub async fn create_token(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    scope: Scope,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        token::valid_name(name),
        "a token name is 1 to 40 lowercase letters, digits and '-': {name:?}"
    );
    let value = token::generate(token::API_TOKEN_PREFIX)?;
    let secret = token::api_token_secret(name, scope, &token::hash(&value));
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(value),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            anyhow::bail!(
                "a token named {name:?} exists; pick another name or delete Secret {}",
                token::secret_name(name)
            )
        }
        Err(error) => Err(error.into()),
    }
}

/// Whether `value` is a token stored in `namespace`.
pub async fn token_exists(
    client: &kube::Client,
    namespace: &str,
    value: &str,
) -> kube::Result<bool> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{}=true", token::API_TOKEN_LABEL);
    let secrets = api.list(&kube::api::ListParams::default().labels(&selector)).await?;
    let hash = token::hash(value);
    Ok(secrets
        .items
        .iter()
        .any(|s| token::identity_of(s).is_some_and(|(stored, _)| stored == hash)))
}
