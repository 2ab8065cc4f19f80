//! The `fhir` action: build a FHIR R4 resource from the route's copy of the event and POST it
//! as `application/fhir+json` to `{base}/{ResourceType}` (a transaction Bundle to `{base}`).

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use serde_json::Value;

use super::Request;
use crate::engine::definition::FhirAction;
use crate::engine::fhir::{self, FhirError};

/// The FHIR JSON media type.
pub(crate) const FHIR_JSON: &str = "application/fhir+json";

/// The request for `event`; `extra` are engine headers (idempotency key).
pub(crate) fn request(
    action: &FhirAction,
    event: &Value,
    default_timeout: Duration,
    extra: Option<(HeaderName, HeaderValue)>,
) -> Result<Request, FhirError> {
    let built = fhir::build(action.resource, event)?;
    let mut headers = vec![(ACCEPT, HeaderValue::from_static(FHIR_JSON))];
    headers.extend(action.headers.iter().cloned());
    headers.extend(extra);
    Ok(Request {
        url: join(&action.base_url, built.path),
        body: serde_json::to_vec(&built.body).unwrap_or_default(),
        content_type: FHIR_JSON,
        headers,
        timeout: action.timeout.unwrap_or(default_timeout),
    })
}

/// `{base}/{path}` (one slash between), or the base itself.
fn join(base: &Url, path: Option<&str>) -> Url {
    let mut url = base.clone();
    if let Some(path) = path
        && let Ok(mut segments) = url.path_segments_mut()
    {
        segments.pop_if_empty().push(path);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_paths() {
        let base = Url::parse("http://fhir.example/r4").unwrap();
        assert_eq!(join(&base, Some("Patient")).as_str(), "http://fhir.example/r4/Patient");
        let slash = Url::parse("http://fhir.example/r4/").unwrap();
        assert_eq!(join(&slash, Some("Patient")).as_str(), "http://fhir.example/r4/Patient");
        assert_eq!(join(&slash, None).as_str(), "http://fhir.example/r4/");
        let root = Url::parse("http://fhir.example").unwrap();
        assert_eq!(join(&root, Some("Patient")).as_str(), "http://fhir.example/Patient");
    }
}
