//! Test messages written for the event tests: the reference's ADT^A01 and an ORU^R01 with
//! two OBX, built field by field so positions are explicit.

/// A segment from its id and fields 1.. (for MSH, fields 3.. after `MSH|^~\&`), with the
/// given fields set and the others empty.
pub fn segment(id: &str, fields: &[(usize, &str)]) -> String {
    let last = fields.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let first = if id == "MSH" { 3 } else { 1 };
    let mut out = if id == "MSH" { "MSH|^~\\&".to_owned() } else { id.to_owned() };
    for n in first..=last {
        out.push('|');
        if let Some((_, value)) = fields.iter().find(|(k, _)| *k == n) {
            out.push_str(value);
        }
    }
    out
}

/// Segments joined with CR, with a final CR.
pub fn message(segments: &[String]) -> String {
    let mut out = segments.join("\r");
    out.push('\r');
    out
}

pub fn msh(message_type: &str, control_id: &str) -> String {
    segment(
        "MSH",
        &[
            (3, "SENDING_APP"),
            (4, "SENDING_FAC^1.2.3^ISO"),
            (5, "RECEIVING_APP"),
            (6, "RECEIVING_FAC"),
            (7, "20240115103000"),
            (9, message_type),
            (10, control_id),
            (11, "P"),
            (12, "2.5.1"),
        ],
    )
}

/// The reference's PID: MRN 123456789, DOE^JOHN, born 19800315, male, 123 MAIN ST…,
/// home phone 5551234567.
pub fn pid() -> String {
    segment(
        "PID",
        &[
            (1, "1"),
            (3, "123456789^^^HOSP&2.16.840.1.113883.19.5&ISO^MR~987-65-4320^^^SSA^SS"),
            (5, "DOE^JOHN^Q^JR^MR"),
            (7, "19800315"),
            (8, "M"),
            (10, "2106-3^White^CDCREC"),
            (11, "123 MAIN ST^APT 4^SPRINGFIELD^IL^62701^USA^H"),
            (13, "5551234567^PRN^PH"),
            (14, "^WPN^PH^^1^555^7654321^22"),
            (15, "en^English^ISO639"),
            (16, "M^Married^HL70002"),
            (19, "123-45-6789"),
            (22, "N^Not Hispanic or Latino^HL70189"),
            (30, "N"),
        ],
    )
}

/// A PV1 of patient class `class` in ICU, visit V0001, admitted 2024-01-15 10:00.
pub fn pv1(class: &str) -> String {
    segment(
        "PV1",
        &[
            (1, "1"),
            (2, class),
            (3, "ICU^101^A^GENERAL"),
            (4, "E"),
            (7, "1234^SMITH^JANE^^^DR"),
            (10, "MED"),
            (19, "V0001"),
            (44, "20240115100000"),
        ],
    )
}

/// The reference's ADT^A01, with PV1-2 `class` (no PV1 when `None`).
pub fn adt_a01(class: Option<&str>) -> String {
    let mut segments = vec![
        msh("ADT^A01^ADT_A01", "MSG00001"),
        segment("EVN", &[(1, "A01"), (2, "20240115103000")]),
        pid(),
    ];
    segments.extend(class.map(pv1));
    message(&segments)
}

/// An ORU^R01 with one OBR and two OBX.
pub fn oru_two_obx() -> String {
    message(&[
        msh("ORU^R01^ORU_R01", "MSG00002"),
        pid(),
        pv1("O"),
        segment(
            "ORC",
            &[
                (1, "RE"),
                (2, "ORD1"),
                (3, "FIL1"),
                (5, "CM"),
                (9, "20240115113000"),
                (12, "555^WELBY^MARCUS"),
            ],
        ),
        segment(
            "OBR",
            &[
                (1, "1"),
                (2, "ORD1"),
                (3, "FIL1"),
                (4, "CBC^Complete Blood Count^L"),
                (7, "20240115110000"),
                (25, "F"),
            ],
        ),
        segment(
            "OBX",
            &[
                (1, "1"),
                (2, "NM"),
                (3, "WBC^White Blood Count^L"),
                (5, "7.5"),
                (6, "10*3/uL^thousand per microliter^UCUM"),
                (7, "4.0-11.0"),
                (8, "N"),
                (11, "F"),
                (14, "20240115113000"),
            ],
        ),
        segment(
            "OBX",
            &[
                (1, "2"),
                (2, "ST"),
                (3, "NOTE^Comment^L"),
                (5, "Sample \\T\\ repeat"),
                (8, "H~A"),
                (11, "F"),
            ],
        ),
    ])
}
