//! `appointment` from SCH, TQ1 and the resource segments AIS, AIL and AIP (SIU).

use serde::{Deserialize, Serialize};

use super::context::{Ctx, Seg};
use super::values::{Coded, Location, Person, non_empty};

/// The appointment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appointment {
    /// SCH-1, the placer appointment id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// SCH-2, the filler appointment id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filler_id: Option<String>,
    /// SCH-7, the appointment reason (text, else code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Start: TQ1-7, else SCH-11.4 (timing quantity, before v2.7), else AIS-4, AIL-6, AIP-6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Duration as sent: SCH-9, else AIS-7, AIL-9, AIP-9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// Units of the duration (the field after it), code else text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_units: Option<String>,
    /// Filler status: SCH-25, else AIS-10, AIL-12, AIP-12 (code, else text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// AIL-3, the first location resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// AIP-3, the first personnel resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Person>,
}

/// `appointment` from the first SCH and the first of each resource segment.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Option<Appointment> {
    let sch = ctx.first("SCH");
    let [tq1, ais, ail, aip] = ["TQ1", "AIS", "AIL", "AIP"].map(|id| ctx.first(id));
    let code = |seg: Option<Seg<'_, '_>>, n: usize| {
        seg.and_then(|s| s.rep(n)).and_then(|rep| Coded::code_or_display(&rep))
    };
    let start_sources = [(tq1, 7, 1), (sch, 11, 4), (ais, 4, 1), (ail, 6, 1), (aip, 6, 1)];
    let mut start = None;
    for (seg, field, component) in start_sources {
        if let Some(seg) = seg {
            start = ctx.datetime(seg, field, component);
            if start.is_some() {
                break;
            }
        }
    }
    let duration_sources = [(sch, 9), (ais, 7), (ail, 9), (aip, 9)];
    let (duration, duration_units) = duration_sources
        .iter()
        .find_map(|&(seg, n)| {
            let duration = seg?.value(n, 1)?;
            Some((Some(duration), code(seg, n + 1)))
        })
        .unwrap_or_default();
    let status =
        [(sch, 25), (ais, 10), (ail, 12), (aip, 12)].iter().find_map(|&(seg, n)| code(seg, n));
    non_empty(Appointment {
        id: sch.and_then(|s| s.value(1, 1)),
        filler_id: sch.and_then(|s| s.value(2, 1)),
        reason: sch.and_then(|s| s.rep(7)).and_then(|rep| Coded::display_or_code(&rep)),
        start,
        duration,
        duration_units,
        status,
        location: ail.and_then(|s| s.rep(3)).and_then(|rep| Location::from_pl(&rep)),
        provider: aip.and_then(|s| s.rep(3)).and_then(|rep| Person::from_xcn(&rep)),
    })
}
