//! Which message types map to which event types (the table is in the `event` module docs).

/// A message family: the message types this crate maps, by MSH-9.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    Adt,
    Oru,
    Rde,
    Vxu,
    Siu,
    Mdm,
    Dft,
}

impl Family {
    /// The family of a message code (MSH-9.1).
    pub(crate) fn of(message_type: &str) -> Option<Self> {
        Some(match message_type {
            "ADT" => Self::Adt,
            "ORU" => Self::Oru,
            "RDE" => Self::Rde,
            "VXU" => Self::Vxu,
            "SIU" => Self::Siu,
            "MDM" => Self::Mdm,
            "DFT" => Self::Dft,
            _ => return None,
        })
    }
}

/// Where the medication section comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MedicationSource {
    /// RXE: a pharmacy order.
    Rxe,
    /// RXA: an administration.
    Rxa,
}

/// The optional sections a family's events carry (besides patient and encounter, which
/// every family maps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sections {
    pub(crate) merge: bool,
    pub(crate) order: bool,
    pub(crate) test: bool,
    pub(crate) results: bool,
    pub(crate) medication: Option<MedicationSource>,
    pub(crate) appointment: bool,
    pub(crate) document: bool,
    pub(crate) charges: bool,
}

impl Sections {
    /// The segments (besides MSH) whose fields these sections read.
    pub(crate) fn segments(&self) -> Vec<&'static str> {
        let mut ids = vec!["PID", "PV1"];
        let parts: [(bool, &[&'static str]); 7] = [
            (self.merge, &["MRG"]),
            (self.order, &["ORC", "OBR"]),
            (self.test, &["OBR"]),
            (self.results, &["OBX"]),
            (self.appointment, &["SCH", "TQ1", "AIS", "AIL", "AIP"]),
            (self.document, &["TXA", "OBX"]),
            (self.charges, &["FT1"]),
        ];
        for (on, segments) in parts {
            if on {
                ids.extend(segments);
            }
        }
        match self.medication {
            Some(MedicationSource::Rxe) => ids.extend(["RXE", "RXR"]),
            Some(MedicationSource::Rxa) => ids.extend(["RXA", "RXR"]),
            None => {}
        }
        ids
    }
}

impl Family {
    /// The sections of this family's events.
    pub(crate) fn sections(self) -> Sections {
        let none = Sections::default();
        match self {
            Self::Adt => Sections { merge: true, ..none },
            Self::Oru => Sections { order: true, test: true, results: true, ..none },
            Self::Rde => Sections { order: true, medication: Some(MedicationSource::Rxe), ..none },
            Self::Vxu => Sections {
                order: true,
                results: true,
                medication: Some(MedicationSource::Rxa),
                ..none
            },
            Self::Siu => Sections { appointment: true, ..none },
            Self::Mdm => Sections { order: true, document: true, ..none },
            Self::Dft => Sections { charges: true, ..none },
        }
    }
}

/// What a mapped trigger gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) family: Family,
    /// The event type; for ADT^A01 the fallback when PV1-2 does not classify it.
    pub(crate) event_type: &'static str,
    /// Whether the message structure requires PV1 (`MISSING_PV1` when absent).
    pub(crate) needs_pv1: bool,
    /// ADT^A01: the event type follows PV1-2.
    pub(crate) classify_by_class: bool,
}

/// ADT triggers: (trigger, event type, PV1 required by the message structure).
const ADT: &[(&str, &str, bool)] = &[
    ("A01", "patient_admit", true),
    ("A02", "patient_transfer", true),
    ("A03", "patient_discharge", true),
    ("A04", "patient_registration", true),
    ("A05", "patient_preadmit", true),
    ("A06", "outpatient_to_inpatient", true),
    ("A07", "inpatient_to_outpatient", true),
    ("A08", "patient_update", true),
    ("A09", "patient_departing", true),
    ("A10", "patient_arriving", true),
    ("A11", "admit_cancelled", true),
    ("A12", "transfer_cancelled", true),
    ("A13", "discharge_cancelled", true),
    ("A14", "pending_admit", true),
    ("A15", "pending_transfer", true),
    ("A16", "pending_discharge", true),
    ("A17", "patients_swapped", true),
    ("A18", "patient_information_merged", true),
    ("A20", "bed_status_update", false),
    ("A21", "leave_of_absence_started", true),
    ("A22", "leave_of_absence_returned", true),
    ("A23", "visit_deleted", true),
    ("A24", "patients_linked", false),
    ("A25", "pending_discharge_cancelled", true),
    ("A26", "pending_transfer_cancelled", true),
    ("A27", "pending_admit_cancelled", true),
    ("A28", "person_added", true),
    ("A29", "person_deleted", true),
    ("A30", "person_id_merged", false),
    ("A31", "person_updated", true),
    ("A32", "arrival_cancelled", true),
    ("A33", "departure_cancelled", true),
    ("A34", "patient_id_merged", false),
    ("A35", "account_number_merged", false),
    ("A36", "patient_id_and_account_merged", false),
    ("A37", "patients_unlinked", false),
    ("A38", "preadmit_cancelled", true),
    ("A39", "person_merge", false),
    ("A40", "patient_merge", false),
    ("A41", "account_merge", false),
    ("A42", "visit_merge", false),
    ("A43", "patient_move", false),
    ("A44", "account_move", false),
    ("A45", "visit_move", true),
    ("A46", "patient_id_changed", false),
    ("A47", "patient_identifier_changed", false),
    ("A48", "alternate_patient_id_changed", false),
    ("A49", "account_number_changed", false),
    ("A50", "visit_number_changed", true),
    ("A51", "alternate_visit_id_changed", true),
    ("A52", "leave_of_absence_cancelled", true),
    ("A53", "leave_of_absence_return_cancelled", true),
    ("A54", "attending_doctor_changed", true),
    ("A55", "attending_doctor_change_cancelled", true),
    ("A60", "adverse_reaction_updated", false),
    ("A61", "consulting_doctor_changed", true),
    ("A62", "consulting_doctor_change_cancelled", true),
];

/// Other families: (message code, trigger, family, event type).
const OTHERS: &[(&str, &str, Family, &str)] = &[
    ("ORU", "R01", Family::Oru, "lab_result"),
    ("RDE", "O11", Family::Rde, "medication_order"),
    ("VXU", "V04", Family::Vxu, "vaccination_administered"),
    ("SIU", "S12", Family::Siu, "appointment_booked"),
    ("SIU", "S13", Family::Siu, "appointment_rescheduled"),
    ("SIU", "S14", Family::Siu, "appointment_modified"),
    ("SIU", "S15", Family::Siu, "appointment_cancelled"),
    ("SIU", "S26", Family::Siu, "appointment_no_show"),
    ("MDM", "T01", Family::Mdm, "document_created"),
    ("MDM", "T02", Family::Mdm, "document_created_with_content"),
    ("MDM", "T03", Family::Mdm, "document_status_changed"),
    ("MDM", "T04", Family::Mdm, "document_status_changed_with_content"),
    ("MDM", "T05", Family::Mdm, "document_addendum"),
    ("MDM", "T06", Family::Mdm, "document_addendum_with_content"),
    ("MDM", "T07", Family::Mdm, "document_edited"),
    ("MDM", "T08", Family::Mdm, "document_edited_with_content"),
    ("MDM", "T09", Family::Mdm, "document_replaced"),
    ("MDM", "T10", Family::Mdm, "document_replaced_with_content"),
    ("MDM", "T11", Family::Mdm, "document_cancelled"),
    ("DFT", "P03", Family::Dft, "charge_posted"),
    ("DFT", "P11", Family::Dft, "charge_posted"),
];

/// ADT^A01 by PV1-2 (patient class): (class, event type); any other class, or no PV1,
/// gives `patient_admit`.
const A01_BY_CLASS: &[(&str, &str)] = &[
    ("I", "inpatient_admit"),
    ("O", "outpatient_registration"),
    ("E", "emergency_registration"),
    ("P", "preadmit"),
    ("R", "recurring_patient"),
];

/// The route of a message code and trigger, if they are mapped.
pub(crate) fn route(message_type: &str, trigger: &str) -> Option<Route> {
    if message_type == "ADT" {
        let &(_, event_type, needs_pv1) = ADT.iter().find(|(t, ..)| *t == trigger)?;
        return Some(Route {
            family: Family::Adt,
            event_type,
            needs_pv1,
            classify_by_class: trigger == "A01",
        });
    }
    OTHERS.iter().find(|(m, t, ..)| *m == message_type && *t == trigger).map(
        |&(_, _, family, event_type)| Route {
            family,
            event_type,
            needs_pv1: false,
            classify_by_class: false,
        },
    )
}

/// The ADT^A01 event type for a patient class (PV1-2), if it classifies.
pub(crate) fn a01_by_class(class: &str) -> Option<&'static str> {
    A01_BY_CLASS.iter().find(|(c, _)| *c == class).map(|&(_, event_type)| event_type)
}

/// Every mapped (message code, trigger, event type), for documentation and tests; ADT^A01
/// is listed with its unclassified type.
pub fn event_types() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    let adt = ADT.iter().map(|&(trigger, event_type, _)| ("ADT", trigger, event_type));
    adt.chain(OTHERS.iter().map(|&(m, t, _, event_type)| (m, t, event_type)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_are_snake_case_and_unique_per_trigger() {
        let all: Vec<_> = event_types().collect();
        assert_eq!(all.len(), ADT.len() + OTHERS.len());
        let mut keys = std::collections::HashSet::new();
        for (m, t, event_type) in all {
            assert!(keys.insert((m, t)), "{m}^{t} twice");
            assert!(
                event_type.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{event_type}"
            );
        }
        let mdm: std::collections::HashSet<_> =
            OTHERS.iter().filter(|o| o.2 == Family::Mdm).map(|o| o.3).collect();
        assert_eq!(mdm.len(), 11);
    }

    #[test]
    fn module_docs_list_every_event_type() {
        let docs: Vec<&str> =
            include_str!("mod.rs").lines().filter(|l| l.starts_with("//! | ")).collect();
        for (m, t, event_type) in event_types() {
            let row = format!("{m}^{t}");
            let tick = format!("`{event_type}`");
            assert!(
                docs.iter().any(|l| l.contains(&row) && l.contains(&tick)),
                "{row} {event_type} missing from the event module docs"
            );
        }
        for (class, event_type) in A01_BY_CLASS {
            let entry = format!("`{class}` `{event_type}`");
            assert!(docs.iter().any(|l| l.contains(&entry)), "{entry}");
        }
    }

    #[test]
    fn routes() {
        assert_eq!(route("ADT", "A01").map(|r| r.classify_by_class), Some(true));
        assert_eq!(
            route("ADT", "A40").map(|r| (r.event_type, r.needs_pv1)),
            Some(("patient_merge", false))
        );
        assert_eq!(route("SIU", "S26").map(|r| r.event_type), Some("appointment_no_show"));
        assert!(route("ORM", "O01").is_none());
        assert!(route("SIU", "S16").is_none());
        assert_eq!(a01_by_class("X"), None);
        assert_eq!(a01_by_class("R"), Some("recurring_patient"));
    }
}
