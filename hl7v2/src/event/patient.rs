//! `patient` from PID (identity, demographics, contact), with the SSN area check.

use serde::{Deserialize, Serialize};

use crate::value::Repetition;
use crate::warning;

use super::context::{Ctx, Seg};
use super::text::{comp, comp_words, sub};
use super::values::{Coded, Identifier, non_empty};

/// The patient (PID).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patient {
    /// The value of the first PID-3 identifier of type `MR`, else of the first identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrn: Option<String>,
    /// PID-3, every repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identifiers: Vec<Identifier>,
    /// PID-5, first repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<PersonName>,
    /// PID-7: `YYYY-MM-DD`, or RFC 3339 when a time is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub birth_date: Option<String>,
    /// PID-8 code as sent, e.g. `M`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gender: Option<String>,
    /// PID-11, every repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<Address>,
    /// PID-13 (home) then PID-14 (business), every repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phones: Vec<Phone>,
    /// PID-19 as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssn: Option<String>,
    /// PID-16 code (else text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marital_status: Option<String>,
    /// PID-10 code (else text) of the first repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<String>,
    /// PID-22 code (else text) of the first repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ethnicity: Option<String>,
    /// PID-15 code (else text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// PID-30: `Y` is `true`, `N` is `false`, anything else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deceased: Option<bool>,
    /// PID-29, the date/time of death (an addition to the shared shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deceased_at: Option<String>,
}

/// A person's name (XPN).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonName {
    /// Surname (component 1, subcomponent 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Given name (component 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
    /// Second and further given names or initials (component 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middle: Option<String>,
    /// Suffix, e.g. `JR` (component 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// Prefix, e.g. `DR` (component 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// A postal address (XAD).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// Street address (component 1; its non-empty subcomponents joined with a space, so
    /// `1000&Hospital Lane` gives `1000 Hospital Lane`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line1: Option<String>,
    /// Other designation (component 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line2: Option<String>,
    /// City (component 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// State or province (component 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Zip or postal code (component 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postal_code: Option<String>,
    /// Country (component 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// Address type as sent, e.g. `H` (component 7; an addition to the shared shape).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// A telecommunication address (XTN).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phone {
    /// Component 1 (the formatted number) when given, else the e-mail address
    /// (component 4), else country, area and local number (components 5–7) and ` x`
    /// extension (component 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Use code (component 2, HL7 table 0201); when absent, `PRN` for PID-13 and `WPN` for
    /// PID-14.
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    /// Equipment type (component 3, table 0202), e.g. `PH`, `CP`, `Internet`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl Phone {
    fn from_xtn(rep: &Repetition<'_>, default_use: &str) -> Option<Self> {
        let composed = || {
            let number: String = [5, 6, 7].iter().filter_map(|&c| comp(rep, c)).collect();
            let extension = comp(rep, 8).map(|e| format!(" x{e}")).unwrap_or_default();
            (!number.is_empty()).then(|| format!("{number}{extension}"))
        };
        let value = comp(rep, 1).or_else(|| comp(rep, 4)).or_else(composed)?;
        Some(Self {
            value: Some(value),
            usage: comp(rep, 2).or_else(|| Some(default_use.to_owned())),
            kind: comp(rep, 3),
        })
    }
}

/// `patient` from the first PID, if any.
pub(crate) fn build(ctx: &mut Ctx<'_, '_>) -> Option<Patient> {
    let pid = ctx.first("PID")?;
    let identifiers = Identifier::all(&pid.reps(3));
    let mrn = identifiers
        .iter()
        .find(|id| id.kind.as_deref() == Some("MR") && id.value.is_some())
        .or_else(|| identifiers.iter().find(|id| id.value.is_some()))
        .and_then(|id| id.value.clone());
    let phones = [(13, "PRN"), (14, "WPN")]
        .iter()
        .flat_map(|&(n, usage)| {
            pid.reps(n).into_iter().filter_map(move |rep| Phone::from_xtn(&rep, usage))
        })
        .collect();
    let ssn = pid.text(19);
    if let Some(ssn) = &ssn {
        check_ssn_area(ctx, pid, ssn);
    }
    let coded = |n: usize| pid.rep(n).and_then(|rep| Coded::code_or_display(&rep));
    let patient = Patient {
        mrn,
        identifiers,
        name: pid.rep(5).and_then(|rep| name(&rep)),
        birth_date: ctx.datetime(pid, 7, 1),
        gender: pid.value(8, 1),
        addresses: pid.reps(11).iter().filter_map(address).collect(),
        phones,
        ssn,
        marital_status: coded(16),
        race: coded(10),
        ethnicity: coded(22),
        language: coded(15),
        deceased: match pid.value(30, 1).as_deref() {
            Some("Y") => Some(true),
            Some("N") => Some(false),
            _ => None,
        },
        deceased_at: ctx.datetime(pid, 29, 1),
    };
    non_empty(patient)
}

fn name(rep: &Repetition<'_>) -> Option<PersonName> {
    non_empty(PersonName {
        family: sub(rep, 1, 1),
        given: comp(rep, 2),
        middle: comp(rep, 3),
        suffix: comp(rep, 4),
        prefix: comp(rep, 5),
    })
}

fn address(rep: &Repetition<'_>) -> Option<Address> {
    non_empty(Address {
        line1: comp_words(rep, 1),
        line2: comp(rep, 2),
        city: comp(rep, 3),
        state: comp(rep, 4),
        postal_code: comp(rep, 5),
        country: comp(rep, 6),
        kind: comp(rep, 7),
    })
}

/// Whether an SSN's area number (its first three digits) was never issued: 000, 666 or
/// 900–999. Values that do not start with three digits are not judged.
pub(crate) fn ssn_area_is_invalid(ssn: &str) -> bool {
    let Some(area) = ssn.get(..3).filter(|a| a.bytes().all(|b| b.is_ascii_digit())) else {
        return false;
    };
    area == "000" || area == "666" || area.starts_with('9')
}

fn check_ssn_area(ctx: &mut Ctx<'_, '_>, pid: Seg<'_, '_>, ssn: &str) {
    if ssn_area_is_invalid(ssn) {
        ctx.semantic(
            warning::INVALID_SSN_AREA,
            "PID-19 has an SSN area number that is never issued (000, 666 or 900-999)".into(),
            format!("{}.19", pid.label()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssn_areas() {
        for bad in ["000-12-3456", "666123456", "900-00-0000", "999999999"] {
            assert!(ssn_area_is_invalid(bad), "{bad}");
        }
        for good in ["123-45-6789", "665123456", "899", "", "12", "X00123456", "é00"] {
            assert!(!ssn_area_is_invalid(good), "{good}");
        }
    }
}
