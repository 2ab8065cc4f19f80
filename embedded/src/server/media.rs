//! What a resource request's `Accept` asks for, as the Kubernetes API server negotiates it: JSON
//! (also for `*/*`, `application/*`, tables and protobuf, which this server answers in JSON, a
//! type kubectl's and client-go's protobuf requests accept too), YAML for `application/yaml`,
//! and `406 Not Acceptable` when nothing asked for can be served.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::errors::ApiError;
use super::query::boolean;

/// The media types upstream lists when it refuses an `Accept`.
const ACCEPTED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The media types upstream lists when it refuses the `Accept` of a watch.
const ACCEPTED_FOR_WATCH: &str = "application/json, application/json;stream=watch, \
     application/vnd.kubernetes.protobuf, application/vnd.kubernetes.protobuf;stream=watch";

/// How a response is written.
#[derive(Debug, PartialEq)]
enum Media {
    Json,
    Yaml,
}

/// The media `accept` asks for first among those this server writes; `None` when it asks for
/// none of them. A watch is never YAML, which cannot be streamed. Weights are not read: clients
/// list what they prefer first.
fn negotiate(accept: &str, watch: bool) -> Option<Media> {
    accept.split(',').find_map(|range| {
        let essence = range.split(';').next().unwrap_or_default().trim();
        match essence.to_ascii_lowercase().as_str() {
            "" | "*/*" | "application/*" | "application/json" => Some(Media::Json),
            "application/vnd.kubernetes.protobuf" => Some(Media::Json),
            "application/yaml" if !watch => Some(Media::Yaml),
            _ => None,
        }
    })
}

/// Whether a request is a watch (`?watch=true` or `1`).
fn is_watch(request: &Request) -> bool {
    request.uri().query().is_some_and(|query| {
        form_urlencoded::parse(query.as_bytes())
            .any(|(key, value)| key == "watch" && boolean(Some(&value)))
    })
}

/// Answers a resource request in the media its `Accept` asks for: JSON responses are written
/// as YAML when YAML comes first, and a request for nothing this server writes is refused with
/// a `406` before it is served. Streams (watches, logs) are never converted.
pub(super) async fn negotiate_response(request: Request, next: Next) -> Response {
    let accept = request.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    // A pod's log is text whatever the client accepts.
    let Some(accept) = accept.filter(|_| !request.uri().path().ends_with("/log")) else {
        return next.run(request).await;
    };
    let watch = is_watch(&request);
    match negotiate(accept, watch) {
        None => {
            let accepted = if watch { ACCEPTED_FOR_WATCH } else { ACCEPTED };
            let message = format!("only the following media types are accepted: {accepted}");
            ApiError::not_acceptable(message).into_response()
        }
        Some(Media::Json) => next.run(request).await,
        Some(Media::Yaml) => as_yaml(next.run(request).await).await,
    }
}

/// A JSON response written as YAML; any other response as it is.
async fn as_yaml(response: Response) -> Response {
    let content_type = response.headers().get(header::CONTENT_TYPE);
    let json = content_type.and_then(|v| v.to_str().ok()) == Some("application/json");
    if !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Responses other than streams are built whole in memory, so reading one back is bounded.
    let Ok(bytes) = to_bytes(body, usize::MAX).await else {
        return ApiError::internal("the response could not be read").into_response();
    };
    let yaml = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|value| serde_saphyr::to_string(&value).ok());
    let Some(yaml) = yaml else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/yaml"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(yaml))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_media_this_server_writes_is_chosen() {
        let negotiate = |accept| negotiate(accept, false);
        assert_eq!(negotiate("application/json"), Some(Media::Json));
        assert_eq!(negotiate("application/yaml"), Some(Media::Yaml));
        assert_eq!(negotiate("text/html, application/yaml;q=0.9"), Some(Media::Yaml));
        assert_eq!(negotiate("application/yaml, application/json"), Some(Media::Yaml));
        assert_eq!(
            negotiate("application/json;as=Table;v=v1;g=meta.k8s.io, application/json"),
            Some(Media::Json)
        );
        assert_eq!(
            negotiate("application/vnd.kubernetes.protobuf, application/json"),
            Some(Media::Json)
        );
        assert_eq!(negotiate("*/*"), Some(Media::Json));
        assert_eq!(negotiate(""), Some(Media::Json));
        assert_eq!(negotiate("text/html"), None);
        assert_eq!(negotiate("application/xml, text/plain"), None);
    }

    #[test]
    fn a_watch_is_never_yaml() {
        assert_eq!(negotiate("application/yaml, application/json", true), Some(Media::Json));
        assert_eq!(negotiate("application/yaml", true), None);
    }

    #[test]
    fn watches_are_recognised_by_their_query() {
        let watch = |uri: &str| is_watch(&Request::get(uri).body(Body::empty()).unwrap());
        assert!(watch("/api/v1/namespaces/default/pods?watch=true&resourceVersion=1"));
        assert!(watch("/api/v1/pods?watch=1"));
        assert!(!watch("/api/v1/namespaces/default/pods?watch=false"));
        assert!(!watch("/api/v1/namespaces/watch/pods"));
    }
}
