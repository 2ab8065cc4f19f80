//! Which segment ids each mapped message family defines (`UNKNOWN_SEGMENT`), and repeated
//! MSH segments (`MULTIPLE_MSH`).
//!
//! The lists are the union of the segments of every message structure of the family in
//! HL7 v2.3 to v2.8, plus `SFT` and `UAC`, which may head any message from v2.5 on. Segments
//! whose id starts with `Z` are local extensions and always allowed.

use crate::event::catalog::Family;
use crate::message::Message;
use crate::warning::{self, Phase, Severity, Warning};

/// Segment ids of every message of a family (sorted, for a binary search).
fn known(family: Family) -> &'static [&'static str] {
    match family {
        Family::Adt => &[
            "ACC", "AL1", "ARV", "AUT", "DB1", "DG1", "DRG", "EVN", "GT1", "IAM", "IAR", "IN1",
            "IN2", "IN3", "MRG", "MSH", "NK1", "NPU", "NTE", "OBX", "PD1", "PDA", "PID", "PR1",
            "PV1", "PV2", "RF1", "ROL", "SFT", "UAC", "UB1", "UB2",
        ],
        Family::Oru => &[
            "ARV", "CTD", "CTI", "DSC", "FT1", "MSH", "NK1", "NTE", "OBR", "OBX", "ORC", "PD1",
            "PID", "PRT", "PV1", "PV2", "ROL", "SFT", "SPM", "TQ1", "TQ2", "TXA", "UAC",
        ],
        Family::Rde => &[
            "AL1", "ARV", "BLG", "CDO", "CTI", "FT1", "GT1", "IN1", "IN2", "IN3", "MSH", "NTE",
            "OBX", "ORC", "PD1", "PID", "PRT", "PV1", "PV2", "RXC", "RXE", "RXO", "RXR", "RXV",
            "SFT", "TQ1", "TQ2", "UAC",
        ],
        Family::Vxu => &[
            "ARV", "GT1", "IN1", "IN2", "IN3", "MSH", "NK1", "NTE", "OBX", "ORC", "PD1", "PID",
            "PRT", "PV1", "PV2", "RXA", "RXR", "SFT", "TQ1", "TQ2", "UAC",
        ],
        Family::Siu => &[
            "AIG", "AIL", "AIP", "AIS", "DG1", "MSH", "NTE", "OBX", "PD1", "PID", "PV1", "PV2",
            "RGS", "SCH", "SFT", "TQ1", "UAC",
        ],
        Family::Mdm => &[
            "CON", "EVN", "MSH", "NTE", "OBR", "OBX", "ORC", "PID", "PV1", "SFT", "TQ1", "TQ2",
            "TXA", "UAC",
        ],
        Family::Dft => &[
            "ACC", "DB1", "DG1", "DRG", "EVN", "FT1", "GT1", "IN1", "IN2", "IN3", "MSH", "NTE",
            "OBR", "OBX", "ORC", "PD1", "PID", "PR1", "PRT", "PV1", "PV2", "ROL", "SFT", "TQ1",
            "TQ2", "UAC",
        ],
    }
}

/// Whether `id` may appear in a message of `family`.
pub(crate) fn is_known(family: Family, id: &str) -> bool {
    id.starts_with('Z') || known(family).binary_search(&id).is_ok()
}

/// `MULTIPLE_MSH` for every MSH after the first, and `UNKNOWN_SEGMENT` for every segment the
/// family does not define (when the family is mapped), in segment order.
pub(crate) fn check(message: &Message<'_>, family: Option<Family>, out: &mut Vec<Warning>) {
    let mut occurrences = std::collections::HashMap::<&str, usize>::new();
    for segment in message.segments() {
        let id = segment.id();
        let occurrence = occurrences.entry(id).or_default();
        let path = crate::event::context::segment_label(id, *occurrence);
        *occurrence += 1;
        if id == "MSH" && segment.index() > 0 {
            out.push(Warning::new(
                Phase::Syntactic,
                Severity::Warning,
                warning::MULTIPLE_MSH,
                "another MSH segment follows the first: one input must hold one message",
                Some(path),
            ));
        } else if family.is_some_and(|family| !is_known(family, id)) {
            out.push(Warning::new(
                Phase::Syntactic,
                Severity::Warning,
                warning::UNKNOWN_SEGMENT,
                format!("segment {id} is not defined for this message type"),
                Some(path),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_and_hold_the_header() {
        for family in [
            Family::Adt,
            Family::Oru,
            Family::Rde,
            Family::Vxu,
            Family::Siu,
            Family::Mdm,
            Family::Dft,
        ] {
            let list = known(family);
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{family:?}");
            assert!(is_known(family, "MSH") && is_known(family, "PID") && is_known(family, "ZX1"));
        }
        assert!(!is_known(Family::Adt, "TXA"));
        assert!(is_known(Family::Mdm, "TXA"));
    }
}
