//! The model catalog: `GET {url}/v1/models` (the OpenAI list shape, `{data: [{id, …}]}`),
//! with `Authorization: Bearer <MASTER_KEY>` when a key is set and a 5 s timeout; or
//! Keelson's own catalog, read in process. Error texts are short and never hold the key.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

/// How long a catalog request may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Largest catalog body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Keelson's own catalog (what `GET /v1/models` of the HTTP API lists), read in process: the
/// model ids, or why they cannot be listed yet.
#[derive(Clone)]
pub struct LocalCatalog(Arc<dyn Fn() -> Result<Vec<String>, String> + Send + Sync>);

impl LocalCatalog {
    /// A catalog answered by `list`.
    pub fn new(list: impl Fn() -> Result<Vec<String>, String> + Send + Sync + 'static) -> Self {
        Self(Arc::new(list))
    }

    /// The model ids.
    pub fn models(&self) -> Result<Vec<String>, String> {
        (self.0)()
    }
}

impl std::fmt::Debug for LocalCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalCatalog")
    }
}

/// Why a catalog could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// No answer (refused, unresolvable, TLS, timeout).
    #[error("{0}")]
    Unreachable(String),
    /// An answer other than 2xx.
    #[error("the catalog answered HTTP {0}")]
    Status(u16),
    /// A body that is not the OpenAI list shape.
    #[error("the catalog's answer is not a model list: {0}")]
    Body(String),
    /// Keelson's own catalog is not available.
    #[error("{0}")]
    Local(String),
}

impl CatalogError {
    /// Label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            CatalogError::Unreachable(_) => "unreachable",
            CatalogError::Status(_) => "status",
            CatalogError::Body(_) => "body",
            CatalogError::Local(_) => "local",
        }
    }
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Deserialize)]
struct ModelEntry {
    id: String,
}

/// A client of remote catalogs.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    key: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("key", &self.key.as_ref().map(|_| "<redacted>")).finish()
    }
}

impl Client {
    /// A client sending `key` as bearer token, when given.
    pub fn new(key: Option<String>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .build()
            .unwrap_or_default();
        Self { http, key: key.filter(|k| !k.is_empty()) }
    }

    /// The model ids of the catalog at `base` (`GET {base}/v1/models`).
    pub async fn models(&self, base: &str) -> Result<Vec<String>, CatalogError> {
        let url = models_url(base);
        let mut request = self.http.get(&url);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| unreachable(&e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(CatalogError::Status(status.as_u16()));
        }
        if response.content_length().is_some_and(|n| n > MAX_BODY as u64) {
            return Err(CatalogError::Body("larger than 4 MiB".into()));
        }
        let body = response.bytes().await.map_err(|e| unreachable(&e))?;
        parse(&body)
    }
}

/// `{base}/v1/models`, without a doubled slash.
pub fn models_url(base: &str) -> String {
    format!("{}/v1/models", base.trim_end_matches('/'))
}

/// The ids of an OpenAI model list.
pub fn parse(body: &[u8]) -> Result<Vec<String>, CatalogError> {
    if body.len() > MAX_BODY {
        return Err(CatalogError::Body("larger than 4 MiB".into()));
    }
    let list: ModelList =
        serde_json::from_slice(body).map_err(|e| CatalogError::Body(e.to_string()))?;
    Ok(list.data.into_iter().map(|m| m.id).collect())
}

/// A short text of a request failure: a timeout, or the innermost cause (e.g. `Connection
/// refused (os error 111)`). The URL is left out: it is reported beside the error.
fn unreachable(error: &reqwest::Error) -> CatalogError {
    if error.is_timeout() {
        return CatalogError::Unreachable(format!("timed out after {}s", TIMEOUT.as_secs()));
    }
    let mut cause: &dyn std::error::Error = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    let text = cause.to_string();
    let text = if error.is_connect() && !text.to_lowercase().contains("connect") {
        format!("connect: {text}")
    } else {
        text
    };
    CatalogError::Unreachable(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_bodies() {
        assert_eq!(models_url("http://h:4000/"), "http://h:4000/v1/models");
        assert_eq!(models_url("http://h:4000"), "http://h:4000/v1/models");
        let ids = parse(
            br#"{"object":"list","data":[{"id":"a","object":"model","owned_by":"x"},{"id":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(ids, ["a", "b"]);
        let error = parse(b"<html>").unwrap_err();
        assert_eq!(error.metric_label(), "body");
        assert!(parse(br#"{"models":[]}"#).is_err());
    }

    #[test]
    fn the_key_is_never_printed() {
        let client = Client::new(Some("sk-secret".into()));
        assert!(!format!("{client:?}").contains("sk-secret"));
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_short_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let error =
            Client::new(Some("k".into())).models(&format!("http://{addr}")).await.unwrap_err();
        assert_eq!(error.metric_label(), "unreachable");
        assert!(error.to_string().to_lowercase().contains("refused"), "{error}");
    }
}
