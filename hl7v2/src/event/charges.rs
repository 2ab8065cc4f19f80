//! `charges` from FT1 (DFT).

use serde::{Deserialize, Serialize};

use super::context::{Ctx, Seg};
use super::text::sub;
use super::values::{Coded, non_empty};

/// One financial transaction (FT1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// FT1-2, the transaction id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    /// FT1-4, the transaction date (start of the range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// FT1-6, the transaction type, e.g. `CG`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// FT1-7, the transaction code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// FT1-7 text, else FT1-8 (transaction description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// FT1-10, the quantity as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<String>,
    /// FT1-11, the extended amount as sent (its money quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// FT1-11 denomination, e.g. `USD` (an addition to the shared shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

/// `charges`: one per FT1 that holds anything, in order.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Vec<Charge> {
    let segments: Vec<Seg<'_, '_>> = ctx.all("FT1").collect();
    segments.into_iter().filter_map(|ft1| charge(ctx, ft1)).collect()
}

fn charge(ctx: &mut Ctx<'_, '_>, ft1: Seg<'_, '_>) -> Option<Charge> {
    let coded = ft1.rep(7).and_then(|rep| Coded::from_rep(&rep)).unwrap_or_default();
    let amount = ft1.rep(11);
    non_empty(Charge {
        transaction_id: ft1.value(2, 1),
        date: ctx.datetime(ft1, 4, 1),
        kind: ft1.rep(6).and_then(|rep| Coded::code_or_display(&rep)),
        code: coded.code,
        description: coded.display.or_else(|| ft1.text(8)),
        quantity: ft1.value(10, 1),
        amount: amount.and_then(|rep| sub(&rep, 1, 1)),
        currency: amount.and_then(|rep| sub(&rep, 1, 2)),
    })
}
