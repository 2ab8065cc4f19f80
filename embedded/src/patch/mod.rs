//! PATCH semantics of the API server, as pure functions: JSON patch, JSON merge patch,
//! strategic merge patch, server-side apply and managed-fields tracking.
//!
//! Callers map [`PatchError::Invalid`] and [`PatchError::TestFailed`] to 422 (400 for a
//! body that does not parse), [`PatchError::UnsupportedMediaType`] to 415, and
//! [`ApplyError::Conflicts`] to 409.

mod apply;
mod fieldpath;
mod json;
mod lists;
mod strategic;
mod typed;

#[cfg(test)]
mod apply_tests;
#[cfg(test)]
mod fieldpath_tests;
#[cfg(test)]
mod json_tests;
#[cfg(test)]
mod lists_tests;
#[cfg(test)]
mod strategic_tests;

pub use apply::{ApplyError, ApplyRequest, Conflict, apply, parse_apply_body, track_update};
pub use json::{json_patch, merge_patch};
pub use lists::{BuiltinLists, ListKind, ListSemantics, SchemaLists};
pub use strategic::strategic_merge_patch;

/// Why a patch could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The patch is malformed or does not apply to the object.
    #[error("{0}")]
    Invalid(String),
    /// A JSON patch `test` operation failed.
    #[error("{0}")]
    TestFailed(String),
    /// The patch's content type is not supported for this resource.
    #[error("{0}")]
    UnsupportedMediaType(String),
}

/// The kind of a PATCH request, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; the body may be JSON).
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type` header (parameters ignored); `None` for anything
    /// else, including `application/apply-patch+cbor` (answer 415).
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let media = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match media.as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }

    /// The `Content-Type` of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}
