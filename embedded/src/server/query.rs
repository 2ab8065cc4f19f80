//! Query parameters of resource requests.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::selectors::{FieldSelector, LabelSelector};

use super::admission::FieldValidation;
use super::errors::{ApiError, ApiResult};

/// The parsed query string of a resource request.
#[derive(Debug, Default)]
pub struct Query {
    /// `watch=true`.
    pub watch: bool,
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (lists).
    pub version_match: Option<VersionMatch>,
    /// `limit`.
    pub limit: Option<usize>,
    /// `continue`, decoded.
    pub continue_from: Option<ContinueToken>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (server-side apply).
    pub force: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `includeObject` for tables: `None`, `Metadata` or `Object`.
    pub include_object: Option<String>,
    /// `follow`, `tailLines`, `container` for pod logs.
    pub raw: HashMap<String, String>,
}

/// Where the next page of a list starts: the revision of the first page and the last key sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    /// Revision all pages of the list are read at.
    pub revision: u64,
    /// The last key of the previous page.
    pub after_key: String,
}

impl ContinueToken {
    /// The opaque token sent to clients.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}\n{}", self.revision, self.after_key))
    }

    /// Decodes a token from [`ContinueToken::encode`].
    pub fn decode(token: &str) -> ApiResult<Self> {
        let bad = || {
            ApiError::bad_request("continue key is not valid: it was not produced by this server")
        };
        let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (revision, after_key) = text.split_once('\n').ok_or_else(bad)?;
        Ok(Self { revision: revision.parse().map_err(|_| bad())?, after_key: after_key.to_owned() })
    }
}

/// A boolean query parameter as the API server reads one: `true` or `1`.
pub(super) fn boolean(value: Option<&str>) -> bool {
    value.is_some_and(|v| v == "true" || v == "1")
}

impl Query {
    /// Parses the query parameters.
    pub fn parse(params: HashMap<String, String>) -> ApiResult<Self> {
        let number = |name: &str| -> ApiResult<Option<u64>> {
            params
                .get(name)
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.parse().map_err(|_| {
                        ApiError::bad_request(format!("{name} must be a number, not {v:?}"))
                    })
                })
                .transpose()
        };
        let labels =
            match params.get("labelSelector").filter(|s| !s.is_empty()) {
                Some(s) => Some(s.parse::<LabelSelector>().map_err(|e| {
                    ApiError::bad_request(format!("unable to parse requirement: {e}"))
                })?),
                None => None,
            };
        let fields = match params.get("fieldSelector").filter(|s| !s.is_empty()) {
            Some(s) => Some(
                FieldSelector::parse(s)
                    .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?,
            ),
            None => None,
        };
        let dry_run = dry_run(params.get("dryRun").map(String::as_str))?;
        Ok(Self {
            watch: boolean(params.get("watch").map(String::as_str)),
            labels,
            fields,
            resource_version: params.get("resourceVersion").cloned(),
            version_match: VersionMatch::parse(params.get("resourceVersionMatch"))?,
            limit: number("limit")?.map(|l| l as usize).filter(|l| *l > 0),
            continue_from: params
                .get("continue")
                .filter(|c| !c.is_empty())
                .map(|c| ContinueToken::decode(c))
                .transpose()?,
            timeout_seconds: number("timeoutSeconds")?,
            allow_bookmarks: boolean(params.get("allowWatchBookmarks").map(String::as_str)),
            send_initial_events: params.get("sendInitialEvents").map(|v| v == "true"),
            dry_run,
            field_manager: params.get("fieldManager").cloned(),
            force: boolean(params.get("force").map(String::as_str)),
            field_validation: FieldValidation::parse(
                params.get("fieldValidation").map(String::as_str),
            )?,
            include_object: params.get("includeObject").cloned(),
            raw: params,
        })
    }
}

/// How a list's `resourceVersion` is to be met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionMatch {
    /// The list as it was at exactly that revision.
    Exact,
    /// The list at that revision or a later one.
    NotOlderThan,
}

impl VersionMatch {
    fn parse(value: Option<&String>) -> ApiResult<Option<Self>> {
        match value.map(String::as_str) {
            None | Some("") => Ok(None),
            Some("Exact") => Ok(Some(Self::Exact)),
            Some("NotOlderThan") => Ok(Some(Self::NotOlderThan)),
            Some(other) => Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            ))),
        }
    }
}

/// A `dryRun` directive (query parameter or `DeleteOptions` item): `All`, or none.
pub fn dry_run(value: Option<&str>) -> ApiResult<bool> {
    match value {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!("dryRun must be All, not {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_garbage_is_refused() {
        let token = ContinueToken { revision: 42, after_key: "/core/pods/default/a".into() };
        assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
        assert_eq!(ContinueToken::decode("%%%").unwrap_err().code.as_u16(), 400);
    }

    #[test]
    fn bad_numbers_and_dry_run_values_are_bad_requests() {
        let parse = |k: &str, v: &str| Query::parse(HashMap::from([(k.to_owned(), v.to_owned())]));
        assert_eq!(parse("limit", "ten").unwrap_err().code.as_u16(), 400);
        assert_eq!(parse("dryRun", "Some").unwrap_err().code.as_u16(), 400);
        assert!(parse("dryRun", "All").unwrap().dry_run);
        assert!(parse("watch", "1").unwrap().watch);
    }
}
