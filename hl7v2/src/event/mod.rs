//! Canonical events: a parsed [`Message`] mapped to typed, JSON-serializable [`Event`]s with
//! warnings and lineage ([`map_events`]).
//!
//! # Event types
//! One event per message. The event type follows MSH-9 (message code and trigger; for ADT
//! messages without MSH-9.2, the trigger in EVN-1):
//!
//! | Message | Event type |
//! |---|---|
//! | ADT^A01 | by PV1-2: `I` `inpatient_admit`, `O` `outpatient_registration`, `E` `emergency_registration`, `P` `preadmit`, `R` `recurring_patient`; any other class or no PV1: `patient_admit` |
//! | ADT^A02 | `patient_transfer` |
//! | ADT^A03 | `patient_discharge` |
//! | ADT^A04 | `patient_registration` |
//! | ADT^A05 | `patient_preadmit` |
//! | ADT^A06 | `outpatient_to_inpatient` |
//! | ADT^A07 | `inpatient_to_outpatient` |
//! | ADT^A08 | `patient_update` |
//! | ADT^A09 | `patient_departing` |
//! | ADT^A10 | `patient_arriving` |
//! | ADT^A11 | `admit_cancelled` |
//! | ADT^A12 | `transfer_cancelled` |
//! | ADT^A13 | `discharge_cancelled` |
//! | ADT^A14 | `pending_admit` |
//! | ADT^A15 | `pending_transfer` |
//! | ADT^A16 | `pending_discharge` |
//! | ADT^A17 | `patients_swapped` |
//! | ADT^A18 | `patient_information_merged` |
//! | ADT^A20 | `bed_status_update` |
//! | ADT^A21 | `leave_of_absence_started` |
//! | ADT^A22 | `leave_of_absence_returned` |
//! | ADT^A23 | `visit_deleted` |
//! | ADT^A24 | `patients_linked` |
//! | ADT^A25 | `pending_discharge_cancelled` |
//! | ADT^A26 | `pending_transfer_cancelled` |
//! | ADT^A27 | `pending_admit_cancelled` |
//! | ADT^A28 | `person_added` |
//! | ADT^A29 | `person_deleted` |
//! | ADT^A30 | `person_id_merged` |
//! | ADT^A31 | `person_updated` |
//! | ADT^A32 | `arrival_cancelled` |
//! | ADT^A33 | `departure_cancelled` |
//! | ADT^A34 | `patient_id_merged` |
//! | ADT^A35 | `account_number_merged` |
//! | ADT^A36 | `patient_id_and_account_merged` |
//! | ADT^A37 | `patients_unlinked` |
//! | ADT^A38 | `preadmit_cancelled` |
//! | ADT^A39 | `person_merge` |
//! | ADT^A40 | `patient_merge` |
//! | ADT^A41 | `account_merge` |
//! | ADT^A42 | `visit_merge` |
//! | ADT^A43 | `patient_move` |
//! | ADT^A44 | `account_move` |
//! | ADT^A45 | `visit_move` |
//! | ADT^A46 | `patient_id_changed` |
//! | ADT^A47 | `patient_identifier_changed` |
//! | ADT^A48 | `alternate_patient_id_changed` |
//! | ADT^A49 | `account_number_changed` |
//! | ADT^A50 | `visit_number_changed` |
//! | ADT^A51 | `alternate_visit_id_changed` |
//! | ADT^A52 | `leave_of_absence_cancelled` |
//! | ADT^A53 | `leave_of_absence_return_cancelled` |
//! | ADT^A54 | `attending_doctor_changed` |
//! | ADT^A55 | `attending_doctor_change_cancelled` |
//! | ADT^A60 | `adverse_reaction_updated` |
//! | ADT^A61 | `consulting_doctor_changed` |
//! | ADT^A62 | `consulting_doctor_change_cancelled` |
//! | ORU^R01 | `lab_result` |
//! | RDE^O11 | `medication_order` |
//! | VXU^V04 | `vaccination_administered` |
//! | SIU^S12 | `appointment_booked` |
//! | SIU^S13 | `appointment_rescheduled` |
//! | SIU^S14 | `appointment_modified` |
//! | SIU^S15 | `appointment_cancelled` |
//! | SIU^S26 | `appointment_no_show` |
//! | MDM^T01 | `document_created` |
//! | MDM^T02 | `document_created_with_content` |
//! | MDM^T03 | `document_status_changed` |
//! | MDM^T04 | `document_status_changed_with_content` |
//! | MDM^T05 | `document_addendum` |
//! | MDM^T06 | `document_addendum_with_content` |
//! | MDM^T07 | `document_edited` |
//! | MDM^T08 | `document_edited_with_content` |
//! | MDM^T09 | `document_replaced` |
//! | MDM^T10 | `document_replaced_with_content` |
//! | MDM^T11 | `document_cancelled` |
//! | DFT^P03, DFT^P11 | `charge_posted` |
//!
//! Any other message (e.g. ORM^O01, SIU^S16, ADT^A19) is not an error: `mapped` is false,
//! `events` is empty and an info warning `NO_EVENT_MAPPING` says so.
//!
//! # Sections
//! Every event has the header fields of [`EventMeta`]; then, when the message holds them:
//! `patient` (PID) and `encounter` (PV1) for all types; `merge` (MRG) for ADT; `order`
//! (ORC, OBR) for ORU, RDE, VXU and MDM; `test` (OBR) for ORU; `results` (every OBX) for
//! ORU and VXU; `medication` (RXE, or RXA, and RXR) for RDE and VXU; `appointment` (SCH,
//! TQ1, AIS, AIL, AIP) for SIU; `document` (TXA, OBX) for MDM; `charges` (FT1) for DFT.
//! Empty values are left out of the JSON (never `null` nor `""`); text is unescaped and
//! trimmed; dates follow [`crate::datetime`].
//!
//! # Warnings
//! [`Mapping::warnings`] holds the parser's warnings, then the syntactic ones
//! (`MULTIPLE_MSH`, `UNKNOWN_SEGMENT` and `EXTRA_COMPONENTS`, see below), then the
//! semantic ones in mapping order: `MISSING_PV1` (path `PV1`, an ADT trigger whose message
//! structure requires PV1; the event has no encounter), `MISSING_EVN` (path `EVN`, any ADT
//! message), `INVALID_DTM` (a mapped date/time that does not parse, e.g. `MSH.7`,
//! `OBX[0].14`; the value is left out), `INVALID_SSN_AREA` (path `PID.19`) and
//! `NO_EVENT_MAPPING` (info, path `MSH.9`). Messages describe and never quote values.
//!
//! Unknown segments are judged against the union of the segment ids of the family's
//! message structures in HL7 v2.3–v2.8 (plus `SFT` and `UAC`; `Z` segments are always
//! allowed), for the seven families above whatever the trigger. Extra components are
//! judged for the MSH header fields and the fields the family's mapping reads, per
//! repetition, not counting trailing empty components, against the datatype's component
//! count in the version of MSH-12: up to v2.5 (older versions are held to the v2.5
//! counts), v2.6, and v2.7 and later (also when the version is missing). For example XPN
//! has 14, 14 and 15 components, CX 10, 10 and 12, XAD 14, 23 and 23, XTN 12, 17 and 18,
//! XCN 23, 23 and 25, CE/CWE 9, 9 and 22, PL 11; fields that were IS or ID before v2.7
//! and became CWE (PV1-2, PID-8, OBX-8, …) allow 1 and then 22.
//!
//! Paths use the dotted form: `PID.3[0]` is the first repetition of PID-3, `OBX[1].14`
//! OBX-14 of the second OBX, `NK1[1]` the second NK1 segment.
//!
//! # Strict mode
//! With [`MapOptions::strict`], for every message type, non-CR line endings, non-standard
//! delimiters, a second MSH, unknown segments and extra components are refused:
//! [`MapError::Strict`] lists every one of them with severity `error`.

pub(crate) mod appointment;
pub(crate) mod catalog;
pub(crate) mod charges;
pub(crate) mod context;
pub(crate) mod document;
pub(crate) mod encounter;
pub(crate) mod medication;
pub(crate) mod merge;
pub(crate) mod meta;
pub(crate) mod order;
pub(crate) mod patient;
pub(crate) mod results;
pub(crate) mod text;
pub(crate) mod values;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::message::Message;
use crate::warning::{self, Phase, Severity, Warning};
use crate::{checks, lineage};

pub use appointment::Appointment;
pub use catalog::event_types;
pub use charges::Charge;
pub use document::Document;
pub use encounter::Encounter;
pub use medication::Medication;
pub use merge::Merge;
pub use meta::{EventMeta, SOURCE_FORMAT, event_id};
pub use order::Order;
pub use patient::{Address, Patient, PersonName, Phone};
pub use results::{Observation, Test};
pub use values::{Coded, Identifier, Location, Person};

use catalog::{Family, MedicationSource, Route};
use context::Ctx;

/// A canonical event: the JSON shape shared with the integration engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Id, type, timestamp and header fields (top-level keys in JSON).
    #[serde(flatten)]
    pub meta: EventMeta,
    /// The patient (PID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patient: Option<Patient>,
    /// The visit (PV1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encounter: Option<Encounter>,
    /// The replaced record of a merge or move (MRG; an addition to the shared shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<Merge>,
    /// The order (ORC, OBR-2/3/16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// The test ordered (OBR-4/7/25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<Test>,
    /// One result per OBX, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Observation>,
    /// The medication or vaccine (RXE or RXA, RXR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medication: Option<Medication>,
    /// The appointment (SCH and resources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appointment: Option<Appointment>,
    /// The document (TXA and OBX content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<Document>,
    /// Financial transactions (FT1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charges: Vec<Charge>,
}

/// How to map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapOptions {
    /// Refuse the deviations listed under "Strict mode" in the module docs.
    pub strict: bool,
}

/// The result of mapping one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// The events (one for a mapped message type, none otherwise).
    pub events: Vec<Event>,
    /// Parser warnings, then syntactic and semantic ones.
    pub warnings: Vec<Warning>,
    /// Which message field became which event field.
    pub lineage: Vec<crate::lineage::LineageLink>,
    /// Whether the message type has an event mapping.
    pub mapped: bool,
}

/// Why a message could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MapError {
    /// Strict mode refused the message; every violation is listed with severity `error`.
    #[error("the message breaks {} strict rule(s)", .diagnostics.len())]
    Strict {
        /// The violations, in the order of the warnings they come from.
        diagnostics: Vec<Warning>,
    },
}

/// Maps a parsed message to its event, warnings and lineage (see the module docs).
///
/// # Errors
/// [`MapError::Strict`] when `options.strict` is set and the message breaks a strict rule.
pub fn map_events(message: &Message<'_>, options: &MapOptions) -> Result<Mapping, MapError> {
    let code = message.message_type().unwrap_or_default().trim();
    let mut trigger = message.trigger_event().unwrap_or_default().trim();
    if code == "ADT" && trigger.is_empty() {
        // Before v2.3.1 an ADT message may name its trigger only in EVN-1.
        trigger = message.get("EVN-1").unwrap_or_default().trim();
    }
    let mut warnings = message.warnings().to_vec();
    warnings.extend(checks::syntactic(message, Family::of(code)));
    let mut ctx = Ctx::new(message);
    let event = catalog::route(code, trigger).map(|route| build_event(&mut ctx, route, trigger));
    warnings.append(&mut ctx.warnings);
    if event.is_none() {
        warnings.push(no_mapping(code, trigger));
    }
    if options.strict {
        let diagnostics = checks::strict_violations(&warnings);
        if !diagnostics.is_empty() {
            return Err(MapError::Strict { diagnostics });
        }
    }
    let lineage = event.as_ref().map(|e| lineage::build(message, e)).unwrap_or_default();
    let mapped = event.is_some();
    Ok(Mapping { events: event.into_iter().collect(), warnings, lineage, mapped })
}

fn build_event(ctx: &mut Ctx<'_, '_>, route: Route, trigger: &str) -> Event {
    let pv1 = ctx.first("PV1");
    if route.family == Family::Adt {
        if route.needs_pv1 && pv1.is_none() {
            ctx.semantic(
                warning::MISSING_PV1,
                "the message has no PV1 segment; the event has no encounter".into(),
                "PV1".into(),
            );
        }
        if ctx.first("EVN").is_none() {
            ctx.semantic(
                warning::MISSING_EVN,
                "the ADT message has no EVN segment".into(),
                "EVN".into(),
            );
        }
    }
    let event_type = match pv1.and_then(|pv1| pv1.value(2, 1)) {
        Some(class) if route.classify_by_class => {
            catalog::a01_by_class(&class).unwrap_or(route.event_type)
        }
        _ => route.event_type,
    };
    let sections = route.family.sections();
    Event {
        meta: meta::build(ctx, event_type, trigger, 0),
        patient: patient::build(ctx),
        encounter: encounter::build(ctx),
        merge: if sections.merge { merge::merge(ctx) } else { None },
        order: if sections.order { order::build(ctx) } else { None },
        test: if sections.test { results::test(ctx) } else { None },
        results: if sections.results { results::results(ctx) } else { Vec::new() },
        medication: match sections.medication {
            Some(MedicationSource::Rxe) => medication::from_rxe(ctx),
            Some(MedicationSource::Rxa) => medication::from_rxa(ctx),
            None => None,
        },
        appointment: if sections.appointment { appointment::build(ctx) } else { None },
        document: if sections.document { document::build(ctx) } else { None },
        charges: if sections.charges { charges::build(ctx) } else { Vec::new() },
    }
}

/// Whether a message code or trigger may be named in a warning: a short code, not free
/// text from the message.
fn is_code(text: &str) -> bool {
    (1..=8).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn no_mapping(code: &str, trigger: &str) -> Warning {
    let name = match (is_code(code), is_code(trigger)) {
        (true, true) => format!("{code}^{trigger}"),
        (true, false) if trigger.is_empty() => code.to_owned(),
        _ => "this message type".to_owned(),
    };
    Warning::new(
        Phase::Semantic,
        Severity::Info,
        warning::NO_EVENT_MAPPING,
        format!("no event mapping for {name}; the message was parsed structurally"),
        Some("MSH.9".into()),
    )
}
