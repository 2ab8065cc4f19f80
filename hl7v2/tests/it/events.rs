//! The reference's acceptance cases for events (ADT^A01 fields, PV1-2 classification,
//! MISSING_PV1, invalid inputs, lineage of an ORU with two OBX) and every warning code.

use keelson_hl7v2::{
    Event, LineageLink, MapOptions, Mapping, Message, ParseError, Phase, Severity, Warning,
    map_events, warning,
};

use crate::messages::{adt_a01, message, msh, oru_two_obx, pid, pv1, segment};

pub fn map(text: &str) -> Mapping {
    let message = Message::parse_str(text).unwrap();
    map_events(&message, &MapOptions::default()).unwrap()
}

pub fn only_event(mapping: &Mapping) -> &Event {
    assert!(mapping.mapped);
    assert_eq!(mapping.events.len(), 1);
    &mapping.events[0]
}

fn codes(warnings: &[Warning]) -> Vec<&'static str> {
    warnings.iter().map(|w| w.code).collect()
}

#[test]
fn adt_a01_fields() {
    let mapping = map(&adt_a01(Some("I")));
    assert!(mapping.warnings.is_empty(), "{:?}", mapping.warnings);
    let event = only_event(&mapping);
    assert_eq!(event.meta.event_type, "inpatient_admit");
    assert_eq!(event.meta.source_message_id.as_deref(), Some("MSG00001"));
    assert_eq!(event.meta.message_type, "ADT^A01");
    assert_eq!(event.meta.timestamp.as_deref(), Some("2024-01-15T10:30:00Z"));
    assert_eq!(event.meta.source_format, "hl7v2");
    assert_eq!(event.meta.sending_facility.as_deref(), Some("SENDING_FAC"));
    let patient = event.patient.as_ref().unwrap();
    assert_eq!(patient.mrn.as_deref(), Some("123456789"));
    let name = patient.name.as_ref().unwrap();
    assert_eq!(name.family.as_deref(), Some("DOE"));
    assert_eq!(name.given.as_deref(), Some("JOHN"));
    assert_eq!(patient.gender.as_deref(), Some("M"));
    assert_eq!(patient.birth_date.as_deref(), Some("1980-03-15"));
    assert_eq!(patient.identifiers.len(), 2);
    assert_eq!(patient.identifiers[0].assigner.as_deref(), Some("HOSP"));
    assert_eq!(patient.identifiers[0].system.as_deref(), Some("2.16.840.1.113883.19.5"));
    assert_eq!(patient.identifiers[1].kind.as_deref(), Some("SS"));
    assert_eq!(patient.addresses[0].line1.as_deref(), Some("123 MAIN ST"));
    assert_eq!(patient.phones[0].value.as_deref(), Some("5551234567"));
    assert_eq!(patient.phones[1].value.as_deref(), Some("15557654321 x22"));
    assert_eq!(patient.phones[1].usage.as_deref(), Some("WPN"));
    assert_eq!(patient.deceased, Some(false));
    let encounter = event.encounter.as_ref().unwrap();
    assert_eq!(encounter.class.as_deref(), Some("I"));
    assert_eq!(encounter.location.as_ref().unwrap().unit.as_deref(), Some("ICU"));
    assert_eq!(encounter.location.as_ref().unwrap().bed.as_deref(), Some("A"));
    assert_eq!(encounter.id.as_deref(), Some("V0001"));
    assert_eq!(encounter.attending.as_ref().unwrap().family.as_deref(), Some("SMITH"));
    assert_eq!(encounter.admit_time.as_deref(), Some("2024-01-15T10:00:00Z"));
    assert!(event.meta.id.starts_with("evt_") && event.meta.id.len() == 36);
    // Deterministic.
    assert_eq!(map(&adt_a01(Some("I"))).events[0].meta.id, event.meta.id);
}

#[test]
fn pv1_2_classifies_adt_a01() {
    let cases = [
        (Some("I"), "inpatient_admit"),
        (Some("O"), "outpatient_registration"),
        (Some("E"), "emergency_registration"),
        (Some("P"), "preadmit"),
        (Some("R"), "recurring_patient"),
        (Some("X"), "patient_admit"),
        (Some(""), "patient_admit"),
        (None, "patient_admit"),
    ];
    for (class, expected) in cases {
        let mapping = map(&adt_a01(class));
        assert_eq!(only_event(&mapping).meta.event_type, expected, "{class:?}");
    }
    // Only A01 is classified.
    let a04 = adt_a01(Some("I")).replace("ADT^A01^ADT_A01", "ADT^A04^ADT_A01");
    assert_eq!(only_event(&map(&a04)).meta.event_type, "patient_registration");
}

#[test]
fn missing_pv1_still_gives_the_event() {
    let mapping = map(&adt_a01(None));
    let event = only_event(&mapping);
    assert_eq!(event.meta.event_type, "patient_admit");
    assert!(event.encounter.as_ref().and_then(|e| e.class.as_deref()).is_none());
    assert!(event.patient.is_some());
    let warning = &mapping.warnings[0];
    assert_eq!(warning.code, warning::MISSING_PV1);
    assert_eq!(warning.phase, Phase::Semantic);
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(warning.path.as_deref(), Some("PV1"));
    assert_eq!(mapping.warnings.len(), 1);
    // Triggers whose structure makes PV1 optional do not warn.
    let a40 = message(&[
        msh("ADT^A40^ADT_A39", "M40"),
        segment("EVN", &[(1, "A40")]),
        pid(),
        segment("MRG", &[(1, "555^^^HOSP^MR")]),
    ]);
    let mapping = map(&a40);
    assert!(mapping.warnings.is_empty(), "{:?}", mapping.warnings);
    let merge = only_event(&mapping).merge.as_ref().unwrap();
    assert_eq!(merge.prior_identifiers[0].value.as_deref(), Some("555"));
}

#[test]
fn missing_evn() {
    let text = adt_a01(Some("I")).replace("EVN|A01|20240115103000\r", "");
    let mapping = map(&text);
    assert_eq!(codes(&mapping.warnings), [warning::MISSING_EVN]);
    assert_eq!(mapping.warnings[0].path.as_deref(), Some("EVN"));
    assert_eq!(mapping.warnings[0].phase, Phase::Semantic);
    // ADT without MSH-9.2 takes its trigger from EVN-1.
    let old = adt_a01(Some("E")).replace("ADT^A01^ADT_A01", "ADT");
    assert_eq!(only_event(&map(&old)).meta.event_type, "emergency_registration");
}

#[test]
fn invalid_inputs_are_parse_errors() {
    assert_eq!(Message::parse_str(""), Err(ParseError::Empty));
    assert_eq!(Message::parse_str("PID|1||123"), Err(ParseError::MissingMsh));
    assert_eq!(Message::parse_str("not a valid message"), Err(ParseError::MissingMsh));
}

fn link(source: &str, target: &str, preview: &str) -> LineageLink {
    LineageLink {
        source: source.to_owned(),
        target: target.to_owned(),
        value_preview: preview.to_owned(),
    }
}

#[test]
fn lineage_of_an_oru_with_two_obx() {
    let mapping = map(&oru_two_obx());
    let event = only_event(&mapping);
    assert_eq!(event.meta.event_type, "lab_result");
    let expected = [
        link("MSH-9", "event.type", "ORU^R01^ORU_R01"),
        link("MSH-10", "event.source_message_id", "MSG00002"),
        link("MSH-7", "event.timestamp", "20240115103000"),
        link("PID-3", "event.patient.identifiers", "[redacted]"),
        link("PID-5", "event.patient.name", "[redacted]"),
        link("PID-7", "event.patient.birth_date", "[redacted]"),
        link("PID-8", "event.patient.gender", "M"),
        link("PV1-2", "event.encounter.class", "O"),
        link("PV1-3", "event.encounter.location", "ICU^101^A^GENERAL"),
        link("PV1-19", "event.encounter.id", "V0001"),
        link("OBR-4", "event.test.panel", "CBC^Complete Blood Count^L"),
        link("OBX[0]-3", "event.results[0].test", "WBC^White Blood Count^L"),
        link("OBX[0]-5", "event.results[0].result", "7.5"),
        link("OBX[1]-3", "event.results[1].test", "NOTE^Comment^L"),
        link("OBX[1]-5", "event.results[1].result", "Sample & repeat"),
    ];
    assert_eq!(mapping.lineage, expected);
    let results = &event.results;
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].result.as_deref(), Some("7.5"));
    assert_eq!(results[0].units.as_deref(), Some("10*3/uL"));
    assert_eq!(results[0].observed_at.as_deref(), Some("2024-01-15T11:30:00Z"));
    assert_eq!(results[1].abnormal_flags, ["H", "A"]);
    let test = event.test.as_ref().unwrap();
    assert_eq!(test.panel.as_ref().unwrap().code.as_deref(), Some("CBC"));
    assert_eq!(test.status.as_deref(), Some("F"));
    let order = event.order.as_ref().unwrap();
    assert_eq!(order.placer_id.as_deref(), Some("ORD1"));
    assert_eq!(order.provider.as_ref().unwrap().family.as_deref(), Some("WELBY"));
}

#[test]
fn lineage_leaves_out_empty_fields_and_cuts_long_previews() {
    let long = "x".repeat(90);
    let text = message(&[
        msh("ORU^R01", ""),
        segment("PID", &[(1, "1"), (5, "DOE^JANE")]),
        segment("OBR", &[(1, "1")]),
        segment("OBX", &[(1, "1"), (2, "ST"), (5, &long)]),
        segment("OBX", &[(1, "2"), (2, "ST"), (3, "A^B^L")]),
    ]);
    let mapping = map(&text);
    let sources: Vec<_> = mapping.lineage.iter().map(|l| l.source.as_str()).collect();
    assert_eq!(sources, ["MSH-9", "MSH-7", "PID-5", "OBX[0]-5", "OBX[1]-3"]);
    let preview = &mapping.lineage[3].value_preview;
    assert_eq!(preview.len(), 80);
    assert!(preview.ends_with("xxx..."));
}

#[test]
fn invalid_dtm() {
    let text = message(&[
        msh("ORU^R01", "M1").replace("20240115103000", "2024011510"),
        segment("PID", &[(1, "1"), (5, "DOE^JANE"), (7, "19800230")]),
        segment("OBR", &[(1, "1"), (7, "2024-01-15")]),
        segment("OBX", &[(1, "1"), (14, "20240115")]),
        segment("OBX", &[(1, "2"), (14, "202401151261")]),
    ]);
    let mapping = map(&text);
    let found: Vec<_> = mapping
        .warnings
        .iter()
        .map(|w| (w.code, w.phase, w.path.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        found,
        [
            (warning::INVALID_DTM, Phase::Semantic, "PID.7"),
            (warning::INVALID_DTM, Phase::Semantic, "OBR.7"),
            (warning::INVALID_DTM, Phase::Semantic, "OBX[1].14"),
        ]
    );
    for warning in &mapping.warnings {
        for value in ["19800230", "2024-01-15", "202401151261"] {
            assert!(!warning.message.contains(value), "{warning}");
        }
    }
    let event = only_event(&mapping);
    assert_eq!(event.meta.timestamp.as_deref(), Some("2024-01-15T10:00:00Z"));
    assert!(event.patient.as_ref().unwrap().birth_date.is_none());
    assert_eq!(event.results[0].observed_at.as_deref(), Some("2024-01-15"));
    assert!(event.results[1].observed_at.is_none());

    let bad_header = adt_a01(Some("I")).replace("20240115103000||ADT", "not a date||ADT");
    let mapping = map(&bad_header);
    assert_eq!(codes(&mapping.warnings), [warning::INVALID_DTM]);
    assert_eq!(mapping.warnings[0].path.as_deref(), Some("MSH.7"));
    let event = only_event(&mapping);
    assert!(event.meta.timestamp.is_none());
    assert!(!mapping.lineage.iter().any(|l| l.source == "MSH-7"));
}

#[test]
fn invalid_ssn_area() {
    for (ssn, invalid) in
        [("666-12-3456", true), ("000123456", true), ("912-34-5678", true), ("123-45-6789", false)]
    {
        let text = adt_a01(Some("I")).replace("123-45-6789", ssn);
        let mapping = map(&text);
        let found: Vec<_> =
            mapping.warnings.iter().filter(|w| w.code == warning::INVALID_SSN_AREA).collect();
        assert_eq!(found.len(), usize::from(invalid), "{ssn}");
        if let Some(warning) = found.first() {
            assert_eq!(warning.path.as_deref(), Some("PID.19"));
            assert_eq!(warning.phase, Phase::Semantic);
            assert!(!warning.message.contains(ssn));
        }
        assert_eq!(only_event(&mapping).patient.as_ref().unwrap().ssn.as_deref(), Some(ssn));
    }
}

#[test]
fn unknown_segments() {
    let text = message(&[
        msh("ADT^A01", "M1"),
        segment("EVN", &[(1, "A01")]),
        pid(),
        segment("ZPI", &[(1, "local")]),
        pv1("I"),
        segment("OBR", &[(1, "1")]),
        segment("OBR", &[(1, "2")]),
    ]);
    let mapping = map(&text);
    let found: Vec<_> =
        mapping.warnings.iter().map(|w| (w.code, w.phase, w.path.as_deref())).collect();
    assert_eq!(
        found,
        [
            (warning::UNKNOWN_SEGMENT, Phase::Syntactic, Some("OBR")),
            (warning::UNKNOWN_SEGMENT, Phase::Syntactic, Some("OBR[1]")),
        ]
    );
    assert!(only_event(&mapping).encounter.is_some());
    // OBR belongs to ORU messages.
    assert!(map(&oru_two_obx()).warnings.is_empty());
}

#[test]
fn extra_components() {
    // XPN has 14 components in v2.5.1; PV1-2 (IS) has one.
    let name = format!("DOE^JOHN{}^X", "^".repeat(13));
    let text =
        adt_a01(Some("I")).replace("DOE^JOHN^Q^JR^MR", &name).replace("|I|ICU", "|I^Inpatient|ICU");
    let mapping = map(&text);
    let found: Vec<_> = mapping
        .warnings
        .iter()
        .map(|w| (w.code, w.phase, w.path.as_deref().unwrap_or_default(), w.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                warning::EXTRA_COMPONENTS,
                Phase::Syntactic,
                "PID.5[0]",
                "PID-5 has 16 components; XPN has 14"
            ),
            (
                warning::EXTRA_COMPONENTS,
                Phase::Syntactic,
                "PV1.2[0]",
                "PV1-2 has 2 components; a primitive datatype has 1"
            ),
        ]
    );
    // From v2.7 XPN has 15 components and PV1-2 is a CWE.
    let v28 = text.replace("|P|2.5.1", "|P|2.8");
    let mapping = map(&v28);
    assert_eq!(codes(&mapping.warnings), [warning::EXTRA_COMPONENTS]);
    assert_eq!(mapping.warnings[0].message, "PID-5 has 16 components; XPN has 15");
    // Trailing empty components do not count.
    let trailing =
        adt_a01(Some("I")).replace("DOE^JOHN^Q^JR^MR", &format!("DOE{}", "^".repeat(20)));
    assert!(map(&trailing).warnings.is_empty());
}

#[test]
fn multiple_msh_and_no_event_mapping() {
    let text = message(&[
        msh("ORM^O01^ORM_O01", "M1"),
        pid(),
        segment("ORC", &[(1, "NW")]),
        msh("ORM^O01^ORM_O01", "M2"),
    ]);
    let mapping = map(&text);
    assert!(!mapping.mapped);
    assert!(mapping.events.is_empty());
    assert!(mapping.lineage.is_empty());
    let found: Vec<_> = mapping
        .warnings
        .iter()
        .map(|w| (w.code, w.phase, w.severity, w.path.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        found,
        [
            (warning::MULTIPLE_MSH, Phase::Syntactic, Severity::Warning, "MSH[1]"),
            (warning::NO_EVENT_MAPPING, Phase::Semantic, Severity::Info, "MSH.9"),
        ]
    );
    assert_eq!(
        mapping.warnings[1].message,
        "no event mapping for ORM^O01; the message was parsed structurally"
    );
    // Free text in MSH-9 is not echoed.
    let odd = message(&[msh("SECRET PATIENT^X", "M1")]);
    let warning = map(&odd).warnings.pop().unwrap();
    assert_eq!(warning.code, warning::NO_EVENT_MAPPING);
    assert!(!warning.message.contains("SECRET"), "{warning}");
}

#[test]
fn parser_warnings_come_first() {
    let text = adt_a01(None).replace('\r', "\n");
    let mapping = map(&text);
    assert_eq!(codes(&mapping.warnings), [warning::NON_STANDARD_LINE_ENDING, warning::MISSING_PV1]);
}

#[test]
fn strict_mode_lists_every_violation() {
    let name = format!("DOE^JOHN{}^X", "^".repeat(13));
    let standard = message(&[
        msh("ADT^A01^ADT_A01", "M1"),
        segment("EVN", &[(1, "A01")]),
        pid().replace("DOE^JOHN^Q^JR^MR", &name),
        pv1("I"),
        segment("OBR", &[(1, "1")]),
        msh("ADT^A01^ADT_A01", "M2"),
    ]);
    let hash = keelson_hl7v2::Delimiters::new('|', '#', '~', '\\', '&').unwrap();
    let text = Message::parse_str(&standard).unwrap().encode_with(&hash).replace('\r', "\n");
    let parsed = Message::parse_str(&text).unwrap();
    let expected = [
        warning::NON_STANDARD_LINE_ENDING,
        warning::NON_STANDARD_DELIMITERS,
        warning::UNKNOWN_SEGMENT,
        warning::MULTIPLE_MSH,
        warning::EXTRA_COMPONENTS,
    ];
    let lenient = map_events(&parsed, &MapOptions::default()).unwrap();
    assert_eq!(codes(&lenient.warnings), expected);
    assert!(lenient.warnings.iter().all(|w| w.severity != Severity::Error));
    assert_eq!(only_event(&lenient).meta.event_type, "inpatient_admit");

    let error = map_events(&parsed, &MapOptions { strict: true }).unwrap_err();
    assert_eq!(error.to_string(), "the message breaks 5 strict rule(s)");
    let keelson_hl7v2::MapError::Strict { diagnostics } = error;
    assert_eq!(codes(&diagnostics), expected);
    assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
    let paths: Vec<_> = diagnostics.iter().map(|d| d.path.as_deref()).collect();
    assert_eq!(paths, [None, Some("MSH-2"), Some("OBR"), Some("MSH[1]"), Some("PID.5[0]")]);
}

#[test]
fn strict_mode_applies_to_every_message_type_and_only_to_its_rules() {
    // Unmapped type: line endings are still refused.
    let orm = message(&[msh("ORM^O01", "O1"), pid()]).replace('\r', "\n");
    let parsed = Message::parse_str(&orm).unwrap();
    let Err(keelson_hl7v2::MapError::Strict { diagnostics }) =
        map_events(&parsed, &MapOptions { strict: true })
    else {
        panic!("strict mode accepted LF line endings");
    };
    assert_eq!(codes(&diagnostics), [warning::NON_STANDARD_LINE_ENDING]);
    // Semantic warnings are not strict violations.
    let text = adt_a01(None);
    let parsed = Message::parse_str(&text).unwrap();
    let mapping = map_events(&parsed, &MapOptions { strict: true }).unwrap();
    assert_eq!(codes(&mapping.warnings), [warning::MISSING_PV1]);
    let text = adt_a01(Some("I"));
    let parsed = Message::parse_str(&text).unwrap();
    assert!(map_events(&parsed, &MapOptions { strict: true }).unwrap().warnings.is_empty());
}
