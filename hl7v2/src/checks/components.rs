//! `EXTRA_COMPONENTS`: a mapped field whose repetition has more components than its HL7
//! datatype defines.
//!
//! The datatype counts follow the version in MSH-12: up to v2.5 (older versions are held
//! to the v2.5 counts, since the later components are additions that senders commonly
//! fill), v2.6, and v2.7 and later (also used when the version is missing or unreadable).
//! Trailing empty components are not counted. CE, CWE and CNE fields allow 9 components
//! up to v2.6 and 22 from v2.7; fields that were IS or ID before v2.7 and became CWE allow
//! 1 and then 22.

use crate::event::catalog::Family;
use crate::event::context::segment_label;
use crate::message::Message;
use crate::value::Repetition;
use crate::warning::{self, Phase, Severity, Warning};

/// HL7 versions that differ in component counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Band {
    /// v2.5.1 and older.
    V25,
    /// v2.6.
    V26,
    /// v2.7 and newer, or unknown.
    V27,
}

impl Band {
    /// The band of an MSH-12 version id such as `2.5.1`.
    pub(crate) fn of(version: Option<&str>) -> Self {
        let mut parts = version.unwrap_or_default().trim().split('.');
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        match (major, minor) {
            (Some(2), Some(0..=5)) => Self::V25,
            (Some(2), Some(6)) => Self::V26,
            _ => Self::V27,
        }
    }
}

/// The datatypes of the mapped fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Datatype {
    /// ST, ID, IS, NM, SI: one component.
    Primitive,
    /// IS or ID before v2.7, CWE from v2.7.
    CodedFrom27,
    Cwe,
    Cx,
    Xpn,
    Xad,
    Xtn,
    Xcn,
    Pl,
    Hd,
    Ts,
    Msg,
    Vid,
    Ei,
    Dr,
    Cp,
}

impl Datatype {
    /// Name and component count in a version band.
    fn limit(self, band: Band) -> (&'static str, usize) {
        let by_band = |v25: usize, v26: usize, v27: usize| match band {
            Band::V25 => v25,
            Band::V26 => v26,
            Band::V27 => v27,
        };
        match self {
            Self::Primitive => ("a primitive datatype", 1),
            Self::CodedFrom27 if band == Band::V27 => ("CWE", 22),
            Self::CodedFrom27 => ("a primitive datatype", 1),
            Self::Cwe => ("CE/CWE", by_band(9, 9, 22)),
            Self::Cx => ("CX", by_band(10, 10, 12)),
            Self::Xpn => ("XPN", by_band(14, 14, 15)),
            Self::Xad => ("XAD", by_band(14, 23, 23)),
            Self::Xtn => ("XTN", by_band(12, 17, 18)),
            Self::Xcn => ("XCN", by_band(23, 23, 25)),
            Self::Pl => ("PL", 11),
            Self::Hd => ("HD", 3),
            Self::Ts => ("TS/DTM", 2),
            Self::Msg => ("MSG", 3),
            Self::Vid => ("VID", 3),
            Self::Ei => ("EI", 4),
            Self::Dr => ("DR", 2),
            Self::Cp => ("CP", 6),
        }
    }
}

use Datatype::{
    CodedFrom27, Cp, Cwe, Cx, Dr, Ei, Hd, Msg, Pl, Primitive, Ts, Vid, Xad, Xcn, Xpn, Xtn,
};

/// The fields the event mapping reads, by segment, with their datatypes.
const MAPPED: &[(&str, &[(usize, Datatype)])] = &[
    ("MSH", &[(3, Hd), (4, Hd), (5, Hd), (6, Hd), (7, Ts), (9, Msg), (10, Primitive), (12, Vid)]),
    (
        "PID",
        &[
            (3, Cx),
            (5, Xpn),
            (7, Ts),
            (8, CodedFrom27),
            (10, Cwe),
            (11, Xad),
            (13, Xtn),
            (14, Xtn),
            (15, Cwe),
            (16, Cwe),
            (19, Primitive),
            (22, Cwe),
            (29, Ts),
            (30, Primitive),
        ],
    ),
    (
        "PV1",
        &[
            (2, CodedFrom27),
            (3, Pl),
            (4, CodedFrom27),
            (7, Xcn),
            (10, CodedFrom27),
            (19, Cx),
            (44, Ts),
            (45, Ts),
        ],
    ),
    ("MRG", &[(1, Cx), (3, Cx), (5, Cx)]),
    ("ORC", &[(1, Primitive), (2, Ei), (3, Ei), (5, Primitive), (9, Ts), (12, Xcn)]),
    ("OBR", &[(2, Ei), (3, Ei), (4, Cwe), (7, Ts), (16, Xcn), (25, Primitive)]),
    (
        "OBX",
        &[
            (1, Primitive),
            (2, Primitive),
            (3, Cwe),
            (6, Cwe),
            (7, Primitive),
            (8, CodedFrom27),
            (11, Primitive),
            (14, Ts),
        ],
    ),
    ("RXE", &[(2, Cwe), (3, Primitive), (5, Cwe), (10, Primitive)]),
    ("RXR", &[(1, Cwe)]),
    (
        "RXA",
        &[(3, Ts), (5, Cwe), (6, Primitive), (7, Cwe), (15, Primitive), (17, Cwe), (20, Primitive)],
    ),
    ("SCH", &[(1, Ei), (2, Ei), (7, Cwe), (9, Primitive), (10, Cwe), (25, Cwe)]),
    ("TQ1", &[(7, Ts)]),
    ("AIS", &[(4, Ts), (7, Primitive), (8, Cwe), (10, Cwe)]),
    ("AIL", &[(3, Pl), (6, Ts), (9, Primitive), (10, Cwe), (12, Cwe)]),
    ("AIP", &[(3, Xcn), (6, Ts), (9, Primitive), (10, Cwe), (12, Cwe)]),
    ("TXA", &[(2, CodedFrom27), (4, Ts), (6, Ts), (9, Xcn), (12, Ei), (17, Primitive)]),
    (
        "FT1",
        &[
            (2, Primitive),
            (4, Dr),
            (6, CodedFrom27),
            (7, Cwe),
            (8, Primitive),
            (10, Primitive),
            (11, Cp),
        ],
    ),
];

/// Components up to the last one that is not empty.
fn used_components(rep: &Repetition<'_>) -> usize {
    rep.components()
        .enumerate()
        .filter(|(_, component)| !component.is_empty())
        .last()
        .map_or(0, |(i, _)| i + 1)
}

/// `EXTRA_COMPONENTS` for the MSH fields, and for the family's mapped segments when the
/// message type is mapped, in segment order.
pub(crate) fn check(message: &Message<'_>, family: Option<Family>, out: &mut Vec<Warning>) {
    let band = Band::of(message.version());
    let segments = family.map(|f| f.sections().segments()).unwrap_or_default();
    let mut occurrences = std::collections::HashMap::<&str, usize>::new();
    for segment in message.segments() {
        let id = segment.id();
        let occurrence = occurrences.entry(id).or_default();
        let label = segment_label(id, *occurrence);
        *occurrence += 1;
        let checked = (id == "MSH" && segment.index() == 0) || segments.contains(&id);
        let Some((_, fields)) = MAPPED.iter().find(|(seg, _)| *seg == id).filter(|_| checked)
        else {
            continue;
        };
        for &(n, datatype) in *fields {
            let Some(field) = segment.field(n) else { continue };
            let (name, max) = datatype.limit(band);
            for (r, rep) in field.repetitions().enumerate() {
                let used = used_components(&rep);
                if used > max {
                    out.push(Warning::new(
                        Phase::Syntactic,
                        Severity::Warning,
                        warning::EXTRA_COMPONENTS,
                        format!("{id}-{n} has {used} components; {name} has {max}"),
                        Some(format!("{label}.{n}[{r}]")),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands() {
        assert_eq!(Band::of(Some("2.3")), Band::V25);
        assert_eq!(Band::of(Some("2.5.1")), Band::V25);
        assert_eq!(Band::of(Some("2.6")), Band::V26);
        assert_eq!(Band::of(Some("2.8")), Band::V27);
        assert_eq!(Band::of(None), Band::V27);
        assert_eq!(Band::of(Some("x")), Band::V27);
    }

    #[test]
    fn counts_up_to_the_last_filled_component() {
        let message =
            Message::parse(b"MSH|^~\\&|A\rPID|1||a^^^^^^^^^^^^^^^^x~b^^^^^^^^^^^^^^^^^").unwrap();
        let pid = message.segment("PID").unwrap();
        let field = pid.field(3).unwrap();
        assert_eq!(used_components(&field.repetition(0).unwrap()), 17);
        assert_eq!(used_components(&field.repetition(1).unwrap()), 1);
        let mut out = Vec::new();
        check(&message, Some(Family::Adt), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].path.as_deref(), Some("PID.3[0]"));
        assert_eq!(out[0].message, "PID-3 has 17 components; CX has 12");
    }
}
