//! `encounter` from PV1 (the visit).

use serde::{Deserialize, Serialize};

use super::context::Ctx;
use super::values::{Coded, Location, Person, non_empty};

/// The visit (PV1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Encounter {
    /// PV1-19, the visit number (first component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// PV1-2, the patient class code as sent, e.g. `I`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// PV1-3, the assigned location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// PV1-7, the first attending doctor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attending: Option<Person>,
    /// PV1-44, admit date/time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admit_time: Option<String>,
    /// PV1-45, discharge date/time (first repetition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discharge_time: Option<String>,
    /// PV1-10, the hospital service code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hospital_service: Option<String>,
    /// PV1-4, the admission type code (an addition to the shared shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_type: Option<String>,
}

/// `encounter` from the first PV1, if any.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Option<Encounter> {
    let pv1 = ctx.first("PV1")?;
    let code = |n: usize| pv1.rep(n).and_then(|rep| Coded::code_or_display(&rep));
    let encounter = Encounter {
        id: pv1.value(19, 1),
        class: pv1.value(2, 1),
        location: pv1.rep(3).and_then(|rep| Location::from_pl(&rep)),
        attending: pv1.rep(7).and_then(|rep| Person::from_xcn(&rep)),
        admit_time: ctx.datetime(pv1, 44, 1),
        discharge_time: ctx.datetime(pv1, 45, 1),
        hospital_service: code(10),
        admission_type: code(4),
    };
    non_empty(encounter)
}
