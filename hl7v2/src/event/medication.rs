//! `medication` from RXE (pharmacy orders, RDE) or RXA (administrations, VXU), and RXR.

use serde::{Deserialize, Serialize};

use super::context::Ctx;
use super::values::{Coded, non_empty};

/// The medication or vaccine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Medication {
    /// Code: RXE-2 or RXA-5, component 1 (e.g. an NDC or CVX code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Name: RXE-2 or RXA-5, component 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Coding system: RXE-2 or RXA-5, component 3, e.g. `NDC`, `CVX`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// Dose as sent: RXE-3 (give amount, minimum) or RXA-6 (administered amount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose: Option<String>,
    /// Dose units code: RXE-5 or RXA-7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dose_units: Option<String>,
    /// Route code: RXR-1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Dispense amount: RXE-10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<String>,
    /// RXA-3, the start of administration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub administered_at: Option<String>,
    /// RXA-15, the first lot number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lot_number: Option<String>,
    /// RXA-17, the first manufacturer's name (else its code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    /// RXA-20, the completion status, e.g. `CP` (an addition to the shared shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

fn route(ctx: &Ctx<'_, '_>) -> Option<String> {
    ctx.first("RXR")?.rep(1).and_then(|rep| Coded::code_or_display(&rep))
}

/// `medication` from the first RXE (RDE^O11).
pub(crate) fn from_rxe(ctx: &mut Ctx<'_, '_>) -> Option<Medication> {
    let rxe = ctx.first("RXE")?;
    let coded = rxe.rep(2).and_then(|rep| Coded::from_rep(&rep)).unwrap_or_default();
    non_empty(Medication {
        code: coded.code,
        display: coded.display,
        system: coded.system,
        dose: rxe.value(3, 1),
        dose_units: rxe.rep(5).and_then(|rep| Coded::code_or_display(&rep)),
        route: route(ctx),
        quantity: rxe.value(10, 1),
        ..Medication::default()
    })
}

/// `medication` from the first RXA (VXU^V04).
pub(crate) fn from_rxa(ctx: &mut Ctx<'_, '_>) -> Option<Medication> {
    let rxa = ctx.first("RXA")?;
    let coded = rxa.rep(5).and_then(|rep| Coded::from_rep(&rep)).unwrap_or_default();
    non_empty(Medication {
        code: coded.code,
        display: coded.display,
        system: coded.system,
        dose: rxa.value(6, 1),
        dose_units: rxa.rep(7).and_then(|rep| Coded::code_or_display(&rep)),
        route: route(ctx),
        quantity: None,
        administered_at: ctx.datetime(rxa, 3, 1),
        lot_number: rxa.value(15, 1),
        manufacturer: rxa.rep(17).and_then(|rep| Coded::display_or_code(&rep)),
        status: rxa.value(20, 1),
    })
}
