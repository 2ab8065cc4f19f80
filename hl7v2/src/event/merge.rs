//! `merge` from MRG: the record an ADT merge, move or identifier change replaces.

use serde::{Deserialize, Serialize};

use super::context::Ctx;
use super::values::{Identifier, non_empty};

/// The record a merge or move replaces (MRG).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merge {
    /// MRG-1, the prior patient identifiers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prior_identifiers: Vec<Identifier>,
    /// MRG-3, the prior account number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_account: Option<String>,
    /// MRG-5, the prior visit number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_visit: Option<String>,
}

/// `merge` from the first MRG.
pub(crate) fn merge(ctx: &Ctx<'_, '_>) -> Option<Merge> {
    let mrg = ctx.first("MRG")?;
    non_empty(Merge {
        prior_identifiers: Identifier::all(&mrg.reps(1)),
        prior_account: mrg.value(3, 1),
        prior_visit: mrg.value(5, 1),
    })
}
