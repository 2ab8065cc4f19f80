//! The JSON of events, warnings and lineage against the shared event shape
//! (scratch/briefs/event-shape.md): key names, no `null` or `""`, lower-case phase and
//! severity, `path` omitted when absent.

use std::collections::BTreeSet;

use keelson_hl7v2::{Event, MapOptions, Message, Phase, Severity, Warning, map_events};
use serde_json::{Value, json};

use crate::events::{map, only_event};
use crate::messages::{adt_a01, message, msh, oru_two_obx, segment};

/// Panics when `value` holds `null`, `""`, `[]` or `{}` anywhere.
pub fn assert_no_empty_values(value: &Value, context: &str) {
    match value {
        Value::Null => panic!("{context}: null"),
        Value::String(s) => assert!(!s.is_empty(), "{context}: empty string"),
        Value::Array(items) => {
            assert!(!items.is_empty(), "{context}: empty array");
            for item in items {
                assert_no_empty_values(item, context);
            }
        }
        Value::Object(map) => {
            assert!(!map.is_empty(), "{context}: empty object");
            for (key, item) in map {
                assert_no_empty_values(item, &format!("{context}.{key}"));
            }
        }
        Value::Bool(_) | Value::Number(_) => {}
    }
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value.as_object().expect("an object").keys().map(String::as_str).collect()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

fn event_json(text: &str) -> Value {
    serde_json::to_value(only_event(&map(text))).unwrap()
}

#[test]
fn adt_event_keys_follow_the_shape() {
    let json = event_json(&adt_a01(Some("I")));
    assert_no_empty_values(&json, "adt");
    assert_eq!(
        keys(&json),
        set(&[
            "id",
            "type",
            "timestamp",
            "source_format",
            "source_message_id",
            "message_type",
            "version",
            "sending_application",
            "sending_facility",
            "receiving_application",
            "receiving_facility",
            "patient",
            "encounter",
        ])
    );
    assert_eq!(json["type"], "inpatient_admit");
    assert_eq!(json["source_format"], "hl7v2");
    assert_eq!(json["message_type"], "ADT^A01");
    assert_eq!(json["version"], "2.5.1");
    let patient = &json["patient"];
    assert_eq!(
        keys(patient),
        set(&[
            "mrn",
            "identifiers",
            "name",
            "birth_date",
            "gender",
            "addresses",
            "phones",
            "ssn",
            "marital_status",
            "race",
            "ethnicity",
            "language",
            "deceased",
        ])
    );
    assert_eq!(
        patient["identifiers"][0],
        json!({"value": "123456789", "type": "MR", "assigner": "HOSP", "system": "2.16.840.1.113883.19.5"})
    );
    assert_eq!(
        patient["name"],
        json!({"family": "DOE", "given": "JOHN", "middle": "Q", "suffix": "JR", "prefix": "MR"})
    );
    assert_eq!(
        patient["addresses"][0],
        json!({"line1": "123 MAIN ST", "line2": "APT 4", "city": "SPRINGFIELD", "state": "IL",
               "postal_code": "62701", "country": "USA", "type": "H"})
    );
    assert_eq!(patient["phones"][0], json!({"value": "5551234567", "use": "PRN", "type": "PH"}));
    assert_eq!(patient["deceased"], json!(false));
    assert_eq!(patient["race"], "2106-3");
    assert_eq!(patient["language"], "en");
    assert_eq!(
        json["encounter"],
        json!({
            "id": "V0001",
            "class": "I",
            "location": {"unit": "ICU", "room": "101", "bed": "A", "facility": "GENERAL"},
            "attending": {"id": "1234", "family": "SMITH", "given": "JANE"},
            "admit_time": "2024-01-15T10:00:00Z",
            "hospital_service": "MED",
            "admission_type": "E"
        })
    );
}

#[test]
fn oru_event_keys_follow_the_shape() {
    let json = event_json(&oru_two_obx());
    assert_no_empty_values(&json, "oru");
    assert_eq!(
        keys(&json),
        set(&[
            "id",
            "type",
            "timestamp",
            "source_format",
            "source_message_id",
            "message_type",
            "version",
            "sending_application",
            "sending_facility",
            "receiving_application",
            "receiving_facility",
            "patient",
            "encounter",
            "order",
            "test",
            "results",
        ])
    );
    assert_eq!(json["type"], "lab_result");
    assert_eq!(json["message_type"], "ORU^R01");
    assert_eq!(
        json["order"],
        json!({
            "placer_id": "ORD1",
            "filler_id": "FIL1",
            "control": "RE",
            "status": "CM",
            "ordered_at": "2024-01-15T11:30:00Z",
            "provider": {"id": "555", "family": "WELBY", "given": "MARCUS"}
        })
    );
    assert_eq!(
        json["test"],
        json!({
            "panel": {"code": "CBC", "display": "Complete Blood Count", "system": "L"},
            "observed_at": "2024-01-15T11:00:00Z",
            "status": "F"
        })
    );
    assert_eq!(
        json["results"][0],
        json!({
            "set_id": "1",
            "value_type": "NM",
            "test": {"code": "WBC", "display": "White Blood Count", "system": "L"},
            "result": "7.5",
            "units": "10*3/uL",
            "reference_range": "4.0-11.0",
            "abnormal_flags": ["N"],
            "status": "F",
            "observed_at": "2024-01-15T11:30:00Z"
        })
    );
    assert_eq!(json["results"][1]["result"], "Sample & repeat");
}

#[test]
fn events_round_trip_through_json() {
    for text in [adt_a01(Some("I")), adt_a01(None), oru_two_obx()] {
        let event = only_event(&map(&text)).clone();
        let back: Event = serde_json::from_value(serde_json::to_value(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }
}

#[test]
fn other_families_have_their_sections() {
    let cases = [
        (
            message(&[
                msh("SIU^S12^SIU_S12", "S1"),
                segment(
                    "SCH",
                    &[
                        (1, "A1"),
                        (2, "F1"),
                        (7, "^Checkup"),
                        (9, "30"),
                        (10, "min"),
                        (25, "Booked"),
                    ],
                ),
                segment("TQ1", &[(1, "1"), (7, "202401201000-0500")]),
                segment("PID", &[(1, "1"), (3, "1^^^H^MR")]),
                segment("RGS", &[(1, "1")]),
                segment("AIL", &[(1, "1"), (3, "CLINIC^12")]),
                segment("AIP", &[(1, "1"), (3, "77^HOUSE^GREGORY")]),
            ]),
            "appointment",
            json!({
                "id": "A1", "filler_id": "F1", "reason": "Checkup",
                "start": "2024-01-20T10:00:00-05:00", "duration": "30", "duration_units": "min",
                "status": "Booked", "location": {"unit": "CLINIC", "room": "12"},
                "provider": {"id": "77", "family": "HOUSE", "given": "GREGORY"}
            }),
        ),
        (
            message(&[
                msh("MDM^T02^MDM_T02", "D1"),
                segment("EVN", &[(1, "T02")]),
                segment("PID", &[(1, "1"), (3, "1^^^H^MR")]),
                segment("PV1", &[(1, "1"), (2, "O")]),
                segment(
                    "TXA",
                    &[
                        (1, "1"),
                        (2, "DS"),
                        (4, "20240101"),
                        (9, "9^WHO^DOCTOR"),
                        (12, "DOC-1"),
                        (17, "AU"),
                    ],
                ),
                segment("OBX", &[(1, "1"), (2, "TX"), (5, "Line one\\.br\\still one")]),
                segment("OBX", &[(1, "2"), (2, "TX"), (5, "Line two")]),
            ]),
            "document",
            json!({
                "id": "DOC-1", "type": "DS", "status": "AU", "created_at": "2024-01-01",
                "author": {"id": "9", "family": "WHO", "given": "DOCTOR"},
                "content": "Line one\nstill one\nLine two"
            }),
        ),
        (
            message(&[
                msh("DFT^P03^DFT_P03", "F1"),
                segment("EVN", &[(1, "P03")]),
                segment("PID", &[(1, "1"), (3, "1^^^H^MR")]),
                segment(
                    "FT1",
                    &[
                        (1, "1"),
                        (2, "T1"),
                        (4, "20240102"),
                        (6, "CG"),
                        (7, "99213^Office visit^CPT"),
                        (10, "1"),
                        (11, "125.50&USD"),
                    ],
                ),
            ]),
            "charges",
            json!([{
                "transaction_id": "T1", "date": "2024-01-02", "type": "CG", "code": "99213",
                "description": "Office visit", "quantity": "1", "amount": "125.50", "currency": "USD"
            }]),
        ),
        (
            message(&[
                msh("RDE^O11^RDE_O11", "R1"),
                segment("PID", &[(1, "1"), (3, "1^^^H^MR")]),
                segment("ORC", &[(1, "NW"), (2, "P1")]),
                segment(
                    "RXE",
                    &[(2, "197361^Amlodipine 5 MG^RXNORM"), (3, "5"), (5, "mg"), (10, "30")],
                ),
                segment("RXR", &[(1, "PO^Oral^HL70162")]),
            ]),
            "medication",
            json!({
                "code": "197361", "display": "Amlodipine 5 MG", "system": "RXNORM", "dose": "5",
                "dose_units": "mg", "route": "PO", "quantity": "30"
            }),
        ),
        (
            message(&[
                msh("VXU^V04^VXU_V04", "V1"),
                segment("PID", &[(1, "1"), (3, "1^^^H^MR")]),
                segment("ORC", &[(1, "RE")]),
                segment(
                    "RXA",
                    &[
                        (1, "0"),
                        (2, "1"),
                        (3, "20240105"),
                        (5, "08^HepB^CVX"),
                        (6, "0.5"),
                        (7, "mL^mL^UCUM"),
                        (15, "LOT1"),
                        (17, "MSD^Merck^MVX"),
                        (20, "CP"),
                    ],
                ),
                segment("RXR", &[(1, "C28161^Intramuscular^NCIT")]),
            ]),
            "medication",
            json!({
                "code": "08", "display": "HepB", "system": "CVX", "dose": "0.5", "dose_units": "mL",
                "route": "C28161", "administered_at": "2024-01-05", "lot_number": "LOT1",
                "manufacturer": "Merck", "status": "CP"
            }),
        ),
    ];
    for (text, section, expected) in cases {
        let mapping = map(&text);
        assert!(mapping.warnings.is_empty(), "{section}: {:?}", mapping.warnings);
        let json = serde_json::to_value(only_event(&mapping)).unwrap();
        assert_no_empty_values(&json, section);
        assert_eq!(json[section], expected, "{section}");
    }
}

#[test]
fn warning_and_lineage_json() {
    let warning = Warning {
        phase: Phase::Semantic,
        code: "MISSING_PV1",
        message: "m".into(),
        path: Some("PV1".into()),
        severity: Severity::Warning,
    };
    assert_eq!(
        serde_json::to_value(&warning).unwrap(),
        json!({"phase": "semantic", "code": "MISSING_PV1", "message": "m", "path": "PV1", "severity": "warning"})
    );
    let no_path = Warning { path: None, phase: Phase::Byte, severity: Severity::Info, ..warning };
    assert_eq!(
        serde_json::to_value(&no_path).unwrap(),
        json!({"phase": "byte", "code": "MISSING_PV1", "message": "m", "severity": "info"})
    );
    let mapping = map(&oru_two_obx());
    let json = serde_json::to_value(&mapping).unwrap();
    assert_eq!(
        json["lineage"][4],
        json!({"source": "PID-5", "target": "event.patient.name", "value_preview": "[redacted]"})
    );
    assert_eq!(json["mapped"], true);
    assert_eq!(json["warnings"], json!([]));
}

#[test]
fn unmapped_messages_serialize_without_events() {
    let message_text = message(&[msh("ORM^O01", "O1"), segment("PID", &[(1, "1")])]);
    let parsed = Message::parse_str(&message_text).unwrap();
    let mapping = map_events(&parsed, &MapOptions::default()).unwrap();
    let json = serde_json::to_value(&mapping).unwrap();
    assert_eq!(json["events"], json!([]));
    assert_eq!(json["warnings"][0]["code"], "NO_EVENT_MAPPING");
    assert_eq!(json["warnings"][0]["severity"], "info");
}
