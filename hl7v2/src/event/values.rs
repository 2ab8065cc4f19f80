//! Value objects shared by several event sections: codes, people, locations, identifiers.

use serde::{Deserialize, Serialize};

use crate::value::Repetition;

use super::text::{comp, first_comp, sub};

/// `Some(value)` unless every field of it is empty.
pub(crate) fn non_empty<T: Default + PartialEq>(value: T) -> Option<T> {
    (value != T::default()).then_some(value)
}

/// A coded value (CE, CWE, CNE): `{code, display, system}`. The alternate triplet
/// (components 4–6) fills in when the primary one is empty, and the original text
/// (component 9) when there is no display.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coded {
    /// Identifier (component 1, else 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Text (component 2, else 5, else the original text, 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Name of the coding system (component 3, else 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

impl Coded {
    pub(crate) fn from_rep(rep: &Repetition<'_>) -> Option<Self> {
        let primary = comp(rep, 1).is_some() || comp(rep, 2).is_some();
        let (code, display, system) = if primary { (1, 2, 3) } else { (4, 5, 6) };
        non_empty(Self {
            code: comp(rep, code),
            display: first_comp(rep, &[display, 9]),
            system: comp(rep, system),
        })
    }

    /// The code, else the display text.
    pub(crate) fn code_or_display(rep: &Repetition<'_>) -> Option<String> {
        let coded = Self::from_rep(rep)?;
        coded.code.or(coded.display)
    }

    /// The display text, else the code.
    pub(crate) fn display_or_code(rep: &Repetition<'_>) -> Option<String> {
        let coded = Self::from_rep(rep)?;
        coded.display.or(coded.code)
    }
}

/// A person from an XCN (clinician) field: `{id, family, given}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// Identifier (component 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Family name (component 2, its first subcomponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Given name (component 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<String>,
}

impl Person {
    pub(crate) fn from_xcn(rep: &Repetition<'_>) -> Option<Self> {
        non_empty(Self { id: comp(rep, 1), family: comp(rep, 2), given: comp(rep, 3) })
    }
}

/// A location from a PL field: `{unit, room, bed, facility}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// Point of care (component 1), e.g. `ICU`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Room (component 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// Bed (component 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bed: Option<String>,
    /// Facility (component 4, its namespace id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facility: Option<String>,
}

impl Location {
    pub(crate) fn from_pl(rep: &Repetition<'_>) -> Option<Self> {
        non_empty(Self {
            unit: comp(rep, 1),
            room: comp(rep, 2),
            bed: comp(rep, 3),
            facility: comp(rep, 4),
        })
    }
}

/// An identifier from a CX field: `{value, type, assigner, system}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identifier {
    /// The id (component 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Identifier type code as sent (component 5, HL7 table 0203), e.g. `MR`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Assigning authority's namespace id (component 4, subcomponent 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigner: Option<String>,
    /// Assigning authority's universal id, e.g. an OID (component 4, subcomponent 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

impl Identifier {
    pub(crate) fn from_cx(rep: &Repetition<'_>) -> Option<Self> {
        non_empty(Self {
            value: comp(rep, 1),
            kind: comp(rep, 5),
            assigner: sub(rep, 4, 1),
            system: sub(rep, 4, 2),
        })
    }

    /// Every identifier of a repeating CX field.
    pub(crate) fn all(reps: &[Repetition<'_>]) -> Vec<Self> {
        reps.iter().filter_map(Self::from_cx).collect()
    }
}
