//! Events over the public corpus: every file maps to its expected event type or says
//! `NO_EVENT_MAPPING`; non-standard delimiter twins give the same events; strict mode.

use keelson_hl7v2::{Delimiters, MapError, MapOptions, Message, Severity, map_events, warning};

use crate::support::{corpus, corpus_file};

/// The event type of every corpus file (`None`: no event mapping for its message type).
const EXPECTED: &[(&str, Option<&str>)] = &[
    ("ADT-A01-01.hl7", Some("preadmit")),
    ("ADT-A01-02.hl7", Some("preadmit")),
    ("ADT-A02-01.hl7", Some("patient_transfer")),
    ("ADT-A02-02.hl7", Some("patient_transfer")),
    ("ADT-A03-01.hl7", Some("patient_discharge")),
    ("ADT-A03-02.hl7", Some("patient_discharge")),
    ("ADT-A04-01.hl7", Some("patient_registration")),
    ("ADT-A04-02.hl7", Some("patient_registration")),
    ("ADT-A05-01.hl7", Some("patient_preadmit")),
    ("ADT-A05-02.hl7", Some("patient_preadmit")),
    ("ADT-A06-01.hl7", Some("outpatient_to_inpatient")),
    ("ADT-A06-02.hl7", Some("outpatient_to_inpatient")),
    ("ADT-A07-01.hl7", Some("inpatient_to_outpatient")),
    ("ADT-A07-02.hl7", Some("inpatient_to_outpatient")),
    ("ADT-A08-01.hl7", Some("patient_update")),
    ("ADT-A08-02.hl7", Some("patient_update")),
    ("ADT-A09-01.hl7", Some("patient_departing")),
    ("ADT-A09-02.hl7", Some("patient_departing")),
    ("ADT-A10-01.hl7", Some("patient_arriving")),
    ("ADT-A10-02.hl7", Some("patient_arriving")),
    ("ADT-A11-01.hl7", Some("admit_cancelled")),
    ("ADT-A11-02.hl7", Some("admit_cancelled")),
    ("ADT-A13-01.hl7", Some("discharge_cancelled")),
    ("ADT-A13-02.hl7", Some("discharge_cancelled")),
    ("ADT-A14-01.hl7", Some("pending_admit")),
    ("ADT-A14-02.hl7", Some("pending_admit")),
    ("ADT-A15-01.hl7", Some("pending_transfer")),
    ("ADT-A15-02.hl7", Some("pending_transfer")),
    ("ADT-A16-01.hl7", Some("pending_discharge")),
    ("ADT-A16-02.hl7", Some("pending_discharge")),
    ("ADT-A25-01.hl7", Some("pending_discharge_cancelled")),
    ("ADT-A25-02.hl7", Some("pending_discharge_cancelled")),
    ("ADT-A26-01.hl7", Some("pending_transfer_cancelled")),
    ("ADT-A26-02.hl7", Some("pending_transfer_cancelled")),
    ("ADT-A27-01.hl7", Some("pending_admit_cancelled")),
    ("ADT-A27-02.hl7", Some("pending_admit_cancelled")),
    ("ADT-A28-01.hl7", Some("person_added")),
    ("ADT-A28-02.hl7", Some("person_added")),
    ("ADT-A29-01.hl7", Some("person_deleted")),
    ("ADT-A29-02.hl7", Some("person_deleted")),
    ("ADT-A31-01.hl7", Some("person_updated")),
    ("ADT-A31-02.hl7", Some("person_updated")),
    ("ADT-A40-01.hl7", Some("patient_merge")),
    ("ADT-A40-02.hl7", Some("patient_merge")),
    ("ADT-A41-01.hl7", Some("account_merge")),
    ("ADT-A41-02.hl7", Some("account_merge")),
    ("ADT-A45-01.hl7", Some("visit_move")),
    ("ADT-A45-02.hl7", Some("visit_move")),
    ("ADT-A47-01.hl7", Some("patient_identifier_changed")),
    ("ADT-A47-02.hl7", Some("patient_identifier_changed")),
    ("ADT-A60-01.hl7", Some("adverse_reaction_updated")),
    ("ADT-A60-02.hl7", Some("adverse_reaction_updated")),
    ("ADT01-23.hl7", Some("inpatient_admit")),
    ("ADT01-28.hl7", Some("inpatient_admit")),
    ("ADT04-23.hl7", Some("patient_registration")),
    ("ADT04-251.hl7", Some("patient_registration")),
    ("ADT04-28.hl7", Some("patient_registration")),
    ("BAR-P01-01.hl7", None),
    ("BAR-P01-02.hl7", None),
    ("BAR-P02-01.hl7", None),
    ("BAR-P02-02.hl7", None),
    ("BAR-P12-01.hl7", None),
    ("BAR-P12-02.hl7", None),
    ("DFT-P03-01.hl7", Some("charge_posted")),
    ("DFT-P03-02.hl7", Some("charge_posted")),
    ("DFT-P11-01.hl7", Some("charge_posted")),
    ("DFT-P11-02.hl7", Some("charge_posted")),
    ("IZ_1_1.1_Admin_Child_Max_Message.hl7", Some("vaccination_administered")),
    ("LAB-ORM-1.hl7", None),
    ("LAB-ORU-1.hl7", Some("lab_result")),
    ("LAB-ORU-2.hl7", Some("lab_result")),
    ("LRI_2.0-NG_CBC_Typ_Message.hl7", Some("lab_result")),
    ("MDHHS-OML-O21-1.hl7", None),
    ("MDHHS-OML-O21-2.hl7", None),
    ("MDM-T01-01.hl7", Some("document_created")),
    ("MDM-T01-02.hl7", Some("document_created")),
    ("MDM-T02-01.hl7", Some("document_created_with_content")),
    ("MDM-T02-02.hl7", Some("document_created_with_content")),
    ("MDM-T02-03.hl7", Some("document_created_with_content")),
    ("MDM-T05-01.hl7", Some("document_addendum")),
    ("MDM-T05-02.hl7", Some("document_addendum")),
    ("MDM-T06-01.hl7", Some("document_addendum_with_content")),
    ("MDM-T06-02.hl7", Some("document_addendum_with_content")),
    ("MDM-T09-01.hl7", Some("document_replaced")),
    ("MDM-T09-02.hl7", Some("document_replaced")),
    ("MDM-T10-01.hl7", Some("document_replaced_with_content")),
    ("MDM-T10-02.hl7", Some("document_replaced_with_content")),
    ("MDM_01.hl7", Some("preadmit")),
    ("OMG-O19-01.hl7", None),
    ("OMG-O19-02.hl7", None),
    ("OML-O21-01.hl7", None),
    ("OML-O21-02.hl7", None),
    ("OML-O21-03.hl7", None),
    ("ORM-O01-01.hl7", None),
    ("ORM-O01-02.hl7", None),
    ("ORM-O01-03.hl7", None),
    ("ORM-O01-04.hl7", None),
    ("ORM-O01-05.hl7", None),
    ("ORM-O01-06.hl7", None),
    ("ORU-R01-01.hl7", Some("lab_result")),
    ("ORU-R01-RMGEAD.hl7", Some("lab_result")),
    ("OUL-R22-01.hl7", None),
    ("OUL-R22-02.hl7", None),
    ("OUL-R23-01.hl7", None),
    ("OUL-R23-02.hl7", None),
    ("OUL-R24-01.hl7", None),
    ("OUL-R24-02.hl7", None),
    ("PC1-Problem-Add-v2.3.1.hl7", None),
    ("PC1-Problem-Delete-v2.3.1.hl7", None),
    ("PC1-Problem-Update-v2.3.1.hl7", None),
    ("RDE-O11-01.hl7", Some("medication_order")),
    ("RDE-O11-02.hl7", Some("medication_order")),
    ("RDE-O25-01.hl7", None),
    ("RDE-O25-02.hl7", None),
    ("RDS-O13-01.hl7", None),
    ("RDS-O13-02.hl7", None),
    ("REF-I12-01.hl7", None),
    ("REF-I12-02.hl7", None),
    ("REF-I14-01.hl7", None),
    ("REF-I14-02.hl7", None),
    ("SIU-S12-01.hl7", Some("appointment_booked")),
    ("SIU-S12-02.hl7", Some("appointment_booked")),
    ("SIU-S12_1.hl7", Some("appointment_booked")),
    ("SIU-S13-01.hl7", Some("appointment_rescheduled")),
    ("SIU-S13-02.hl7", Some("appointment_rescheduled")),
    ("SIU-S14-01.hl7", Some("appointment_modified")),
    ("SIU-S14-02.hl7", Some("appointment_modified")),
    ("SIU-S15-01.hl7", Some("appointment_cancelled")),
    ("SIU-S15-02.hl7", Some("appointment_cancelled")),
    ("SIU-S16-01.hl7", None),
    ("SIU-S16-02.hl7", None),
    ("SIU-S17-01.hl7", None),
    ("SIU-S17-02.hl7", None),
    ("SIU-S26-01.hl7", Some("appointment_no_show")),
    ("SIU-S26-02.hl7", Some("appointment_no_show")),
    ("SIU_12.hl7", Some("adverse_reaction_updated")),
    ("VXU-V04-01.hl7", Some("vaccination_administered")),
    ("VXU-V04-02.hl7", Some("vaccination_administered")),
    ("VXU.hl7", Some("vaccination_administered")),
];

#[test]
fn every_corpus_file_maps_to_its_event_type() {
    let files = corpus();
    assert_eq!(files.len(), EXPECTED.len());
    for ((name, bytes), (expected_name, expected_type)) in files.iter().zip(EXPECTED) {
        assert_eq!(name, expected_name);
        let message = Message::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mapping = map_events(&message, &MapOptions::default()).unwrap();
        let event_type = mapping.events.first().map(|e| e.meta.event_type.as_str());
        assert_eq!(event_type, *expected_type, "{name}");
        assert_eq!(mapping.mapped, expected_type.is_some(), "{name}");
        let no_mapping = mapping.warnings.iter().filter(|w| w.code == warning::NO_EVENT_MAPPING);
        assert_eq!(no_mapping.count(), usize::from(expected_type.is_none()), "{name}");
        // The parser's warnings come first, unchanged.
        assert_eq!(&mapping.warnings[..message.warnings().len()], message.warnings(), "{name}");
        for event in &mapping.events {
            assert_eq!(event.meta.source_message_id.as_deref(), message.control_id(), "{name}");
            crate::event_json::assert_no_empty_values(&serde_json::to_value(event).unwrap(), name);
        }
        for link in &mapping.lineage {
            assert!(!link.value_preview.is_empty(), "{name}: {link:?}");
        }
    }
}

#[test]
fn corpus_warnings_are_the_expected_ones() {
    let mut found = Vec::new();
    for (name, bytes) in corpus() {
        let message = Message::parse(&bytes).unwrap();
        let mapping = map_events(&message, &MapOptions::default()).unwrap();
        for w in mapping.warnings.iter().skip(message.warnings().len()) {
            if w.code != warning::NO_EVENT_MAPPING {
                found.push(format!("{name} {} {}", w.code, w.path.as_deref().unwrap_or_default()));
            }
        }
    }
    let mut expected = vec![
        "ADT04-251.hl7 MISSING_EVN EVN".to_owned(),
        "ORU-R01-01.hl7 EXTRA_COMPONENTS OBX[2].8[0]".to_owned(),
        "SIU_12.hl7 MISSING_EVN EVN".to_owned(),
    ];
    // MDM_01.hl7 is an ADT^A01 carrying document segments; SIU_12.hl7 an ADT^A60 carrying
    // scheduling segments.
    for path in ["ORC", "TQ1", "OBR", "TXA", "ORC[1]", "OBR[1]"] {
        expected.push(format!("MDM_01.hl7 UNKNOWN_SEGMENT {path}"));
    }
    for path in
        ["SCH", "RGS", "AIS", "AIG", "AIL", "AIP", "RGS[1]", "AIS[1]", "AIG[1]", "AIL[1]", "AIP[1]"]
    {
        expected.push(format!("SIU_12.hl7 UNKNOWN_SEGMENT {path}"));
    }
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn non_standard_delimiters_give_the_same_events() {
    let sets = [
        Delimiters::new('|', '#', '~', '\\', '&').unwrap(),
        Delimiters::new('!', '#', '~', '\\', '&').unwrap(),
        Delimiters::new('*', '@', '!', '%', '$').unwrap(),
    ];
    let mut compared = 0;
    for ((name, bytes), (_, expected_type)) in corpus().iter().zip(EXPECTED) {
        if expected_type.is_none() {
            continue;
        }
        let original = Message::parse(bytes).unwrap();
        let standard_text = original.encode_with(&Delimiters::default());
        let standard = Message::parse_str(&standard_text).unwrap();
        let expected = map_events(&standard, &MapOptions::default()).unwrap();
        let expected_json = serde_json::to_value(&expected.events).unwrap();
        // The original (LF line endings, maybe a byte order mark) gives the same events.
        let from_original = map_events(&original, &MapOptions::default()).unwrap();
        assert_eq!(serde_json::to_value(&from_original.events).unwrap(), expected_json, "{name}");
        for set in &sets {
            let text = standard.encode_with(set);
            let twin = Message::parse_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mapping = map_events(&twin, &MapOptions::default()).unwrap();
            assert_eq!(serde_json::to_value(&mapping.events).unwrap(), expected_json, "{name}");
            assert_eq!(mapping.lineage, expected.lineage, "{name}");
            let (delimiters, rest): (Vec<_>, Vec<_>) = mapping
                .warnings
                .into_iter()
                .partition(|w| w.code == warning::NON_STANDARD_DELIMITERS);
            assert_eq!(delimiters.len(), 1, "{name}");
            assert_eq!(rest, expected.warnings, "{name}");
            compared += 1;
        }
    }
    assert_eq!(compared, 98 * sets.len());
}

#[test]
fn strict_mode_refuses_lf_line_endings_and_unknown_segments() {
    let bytes = corpus_file("MDM_01.hl7");
    let message = Message::parse(&bytes).unwrap();
    let Err(MapError::Strict { diagnostics }) = map_events(&message, &MapOptions { strict: true })
    else {
        panic!("strict mode accepted MDM_01.hl7");
    };
    let codes: Vec<_> = diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes[0], warning::NON_STANDARD_LINE_ENDING);
    assert_eq!(codes.iter().filter(|c| **c == warning::UNKNOWN_SEGMENT).count(), 6);
    assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
    // The same message with CR endings is refused for its segments only.
    let cr = Message::parse_str(&message.encode()).map(|m| m.encode()).unwrap();
    let cr = Message::parse_str(&cr).unwrap();
    let Err(MapError::Strict { diagnostics }) = map_events(&cr, &MapOptions { strict: true })
    else {
        panic!("strict mode accepted unknown segments");
    };
    assert!(diagnostics.iter().all(|d| d.code == warning::UNKNOWN_SEGMENT));
    // A clean corpus message passes once its line endings are CR.
    let clean = Message::parse(&corpus_file("ADT-A01-02.hl7")).unwrap().encode();
    let clean = Message::parse_str(&clean).unwrap();
    assert!(map_events(&clean, &MapOptions { strict: true }).is_ok());
}
