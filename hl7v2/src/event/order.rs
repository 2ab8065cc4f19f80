//! `order` from ORC, with OBR-2/3/16 filling in what ORC leaves empty.

use serde::{Deserialize, Serialize};

use super::context::Ctx;
use super::values::{Person, non_empty};

/// The order (first ORC and first OBR).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Order {
    /// Placer order number: ORC-2, else OBR-2 (first component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placer_id: Option<String>,
    /// Filler order number: ORC-3, else OBR-3 (first component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filler_id: Option<String>,
    /// ORC-1, the order control code, e.g. `NW`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    /// ORC-5, the order status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// ORC-9, the date/time of the transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_at: Option<String>,
    /// Ordering provider: ORC-12, else OBR-16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Person>,
}

/// `order` when the message has an ORC or an OBR with order data.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Option<Order> {
    let orc = ctx.first("ORC");
    let obr = ctx.first("OBR");
    let either = |orc_field: usize, obr_field: usize| {
        orc.and_then(|s| s.value(orc_field, 1)).or_else(|| obr.and_then(|s| s.value(obr_field, 1)))
    };
    let provider = |seg: Option<super::context::Seg<'_, '_>>, n: usize| {
        seg.and_then(|s| s.rep(n)).and_then(|rep| Person::from_xcn(&rep))
    };
    let order = Order {
        placer_id: either(2, 2),
        filler_id: either(3, 3),
        control: orc.and_then(|s| s.value(1, 1)),
        status: orc.and_then(|s| s.value(5, 1)),
        ordered_at: orc.and_then(|s| ctx.datetime(s, 9, 1)),
        provider: provider(orc, 12).or_else(|| provider(obr, 16)),
    };
    non_empty(order)
}
