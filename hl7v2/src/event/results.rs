//! `test` from OBR and `results` from OBX.

use serde::{Deserialize, Serialize};

use super::context::{Ctx, Seg};
use super::text::comp;
use super::values::{Coded, non_empty};

/// The test or panel ordered (first OBR).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Test {
    /// OBR-4, the universal service identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel: Option<Coded>,
    /// OBR-7, the observation date/time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// OBR-25, the result status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// One observation (OBX).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// OBX-1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_id: Option<String>,
    /// OBX-2, e.g. `NM`, `CWE`, `ST`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_type: Option<String>,
    /// OBX-3, the observation identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Coded>,
    /// OBX-5 as text: every value unescaped, joined with the standard separators (`^`
    /// between components, `&` between subcomponents, `~` between repetitions) whatever the
    /// message declares, so `27268008^Salmonella^SCT` for a CWE and `60~120` for two values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// OBX-6, the units code (else text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<String>,
    /// OBX-7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_range: Option<String>,
    /// OBX-8, the code of every repetition, e.g. `["H"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abnormal_flags: Vec<String>,
    /// OBX-11, the observation result status, e.g. `F`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// OBX-14, the date/time of the observation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
}

/// `test` from the first OBR.
pub(crate) fn test(ctx: &mut Ctx<'_, '_>) -> Option<Test> {
    let obr = ctx.first("OBR")?;
    non_empty(Test {
        panel: obr.rep(4).and_then(|rep| Coded::from_rep(&rep)),
        observed_at: ctx.datetime(obr, 7, 1),
        status: obr.value(25, 1),
    })
}

/// `results`: one per OBX, in order (`results[i]` is `OBX[i]`, even when it is empty).
pub(crate) fn results(ctx: &mut Ctx<'_, '_>) -> Vec<Observation> {
    let segments: Vec<Seg<'_, '_>> = ctx.all("OBX").collect();
    segments.into_iter().map(|obx| observation(ctx, obx)).collect()
}

fn observation(ctx: &mut Ctx<'_, '_>, obx: Seg<'_, '_>) -> Observation {
    Observation {
        set_id: obx.value(1, 1),
        value_type: obx.value(2, 1),
        test: obx.rep(3).and_then(|rep| Coded::from_rep(&rep)),
        result: obx.text(5),
        units: obx.rep(6).and_then(|rep| Coded::code_or_display(&rep)),
        reference_range: obx.text(7),
        abnormal_flags: obx.reps(8).iter().filter_map(|rep| comp(rep, 1)).collect(),
        status: obx.value(11, 1),
        observed_at: ctx.datetime(obx, 14, 1),
    }
}
