//! Code tables from HL7 v2 values to FHIR R4 codes.

/// `http://terminology.hl7.org/CodeSystem/v3-ActCode`.
pub(crate) const ACT_CODE: &str = "http://terminology.hl7.org/CodeSystem/v3-ActCode";
/// `http://terminology.hl7.org/CodeSystem/v3-NullFlavor`.
pub(crate) const NULL_FLAVOR: &str = "http://terminology.hl7.org/CodeSystem/v3-NullFlavor";
/// `http://terminology.hl7.org/CodeSystem/v2-0203` (identifier type).
pub(crate) const IDENTIFIER_TYPE: &str = "http://terminology.hl7.org/CodeSystem/v2-0203";
/// `http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation`.
pub(crate) const INTERPRETATION: &str =
    "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation";
/// `http://terminology.hl7.org/CodeSystem/observation-category`.
pub(crate) const OBSERVATION_CATEGORY: &str =
    "http://terminology.hl7.org/CodeSystem/observation-category";
/// `http://terminology.hl7.org/CodeSystem/v3-MaritalStatus`.
pub(crate) const MARITAL_STATUS: &str = "http://terminology.hl7.org/CodeSystem/v3-MaritalStatus";
/// `http://terminology.hl7.org/CodeSystem/v3-ParticipationType`.
pub(crate) const PARTICIPATION_TYPE: &str =
    "http://terminology.hl7.org/CodeSystem/v3-ParticipationType";
/// `http://terminology.hl7.org/CodeSystem/v2-0069` (hospital service).
pub(crate) const HOSPITAL_SERVICE: &str = "http://terminology.hl7.org/CodeSystem/v2-0069";
/// UCUM.
pub(crate) const UCUM: &str = "http://unitsofmeasure.org";

/// PID-8 (HL7 table 0001) to FHIR `AdministrativeGender`; FHIR codes pass through.
pub(crate) fn gender(code: &str) -> Option<&'static str> {
    match code.trim().to_ascii_uppercase().as_str() {
        "M" | "MALE" => Some("male"),
        "F" | "FEMALE" => Some("female"),
        "O" | "A" | "OTHER" => Some("other"),
        "U" | "N" | "UNKNOWN" => Some("unknown"),
        _ => None,
    }
}

/// PV1-2 patient class to a v3 ActCode `(code, display)`.
pub(crate) fn encounter_class(code: &str) -> Option<(&'static str, &'static str)> {
    match code.trim().to_ascii_uppercase().as_str() {
        "I" => Some(("IMP", "inpatient encounter")),
        "O" | "R" => Some(("AMB", "ambulatory")),
        "E" => Some(("EMER", "emergency")),
        "P" => Some(("PRENC", "pre-admission")),
        _ => None,
    }
}

/// OBX-11 result status to FHIR `ObservationStatus`.
pub(crate) fn observation_status(code: &str) -> &'static str {
    match code.trim().to_ascii_uppercase().as_str() {
        "F" | "FINAL" => "final",
        "P" | "R" | "S" | "PRELIMINARY" => "preliminary",
        "C" | "CORRECTED" => "corrected",
        "A" | "AMENDED" => "amended",
        "I" | "O" | "REGISTERED" => "registered",
        "X" | "CANCELLED" => "cancelled",
        "W" | "D" => "entered-in-error",
        _ => "unknown",
    }
}

/// OBX-8 abnormal flag (table 0078) to a v3 ObservationInterpretation `(code, display)`.
pub(crate) fn interpretation(flag: &str) -> Option<(&'static str, &'static str)> {
    Some(match flag.trim() {
        "H" => ("H", "High"),
        "HH" | "HU" => ("HH", "Critical high"),
        "L" => ("L", "Low"),
        "LL" | "LU" => ("LL", "Critical low"),
        "N" => ("N", "Normal"),
        "A" => ("A", "Abnormal"),
        "AA" => ("AA", "Critical abnormal"),
        "<" => ("<", "Off scale low"),
        ">" => (">", "Off scale high"),
        "S" => ("S", "Susceptible"),
        "R" => ("R", "Resistant"),
        "I" => ("I", "Intermediate"),
        "POS" => ("POS", "Positive"),
        "NEG" => ("NEG", "Negative"),
        "IND" => ("IND", "Indeterminate"),
        "DET" => ("DET", "Detected"),
        "ND" => ("ND", "Not detected"),
        _ => return None,
    })
}

/// A coding system name from an HL7 v2 coded element to a FHIR system URI. Names without a
/// known URI give `None` (the coding is sent without a system rather than with an invalid one).
pub(crate) fn coding_system(name: &str) -> Option<String> {
    let name = name.trim();
    match name.to_ascii_uppercase().as_str() {
        "LN" | "LOINC" => Some("http://loinc.org".to_owned()),
        "SCT" | "SNM" | "SNOMED" | "SNOMEDCT" | "SNM3" => Some("http://snomed.info/sct".to_owned()),
        "UCUM" => Some(UCUM.to_owned()),
        "CVX" => Some("http://hl7.org/fhir/sid/cvx".to_owned()),
        "NDC" => Some("http://hl7.org/fhir/sid/ndc".to_owned()),
        "RXNORM" => Some("http://www.nlm.nih.gov/research/umls/rxnorm".to_owned()),
        "I10" | "ICD10" => Some("http://hl7.org/fhir/sid/icd-10".to_owned()),
        _ => identifier_system(name),
    }
}

/// An assigning authority to an `Identifier.system`: URIs stay, OIDs become `urn:oid:`, plain
/// namespaces give `None`.
pub(crate) fn identifier_system(name: &str) -> Option<String> {
    let name = name.trim();
    if name.starts_with("http://") || name.starts_with("https://") || name.starts_with("urn:") {
        return Some(name.to_owned());
    }
    let is_oid = name.contains('.')
        && name.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    is_oid.then(|| format!("urn:oid:{name}"))
}

/// PID-16 marital status (table 0002) to v3 MaritalStatus.
pub(crate) fn marital_status(code: &str) -> Option<(&'static str, &'static str)> {
    Some(match code.trim().to_ascii_uppercase().as_str() {
        "S" => ("S", "Never Married"),
        "M" => ("M", "Married"),
        "D" => ("D", "Divorced"),
        "W" => ("W", "Widowed"),
        "A" => ("L", "Legally Separated"),
        "P" => ("T", "Domestic partner"),
        "U" => ("UNK", "unknown"),
        _ => return None,
    })
}

/// XTN-2 telecommunication use (table 0201) or a FHIR use to `ContactPoint.use`.
pub(crate) fn telecom_use(code: &str) -> Option<&'static str> {
    match code.trim().to_ascii_uppercase().as_str() {
        "PRN" | "ORN" | "VHN" | "HOME" => Some("home"),
        "WPN" | "WORK" => Some("work"),
        "MOBILE" => Some("mobile"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        assert_eq!(gender("M"), Some("male"));
        assert_eq!(gender("f"), Some("female"));
        assert_eq!(gender("O"), Some("other"));
        assert_eq!(gender("U"), Some("unknown"));
        assert_eq!(gender("Z"), None);
        assert_eq!(encounter_class("I"), Some(("IMP", "inpatient encounter")));
        assert_eq!(encounter_class("O").unwrap().0, "AMB");
        assert_eq!(encounter_class("E").unwrap().0, "EMER");
        assert_eq!(encounter_class("P").unwrap().0, "PRENC");
        assert_eq!(observation_status("F"), "final");
        assert_eq!(observation_status("P"), "preliminary");
        assert_eq!(observation_status("C"), "corrected");
        assert_eq!(observation_status("?"), "unknown");
        assert_eq!(interpretation("H"), Some(("H", "High")));
        assert_eq!(coding_system("LN").as_deref(), Some("http://loinc.org"));
        assert_eq!(coding_system("99LOCAL"), None);
        assert_eq!(
            identifier_system("2.16.840.1.113883.19").as_deref(),
            Some("urn:oid:2.16.840.1.113883.19")
        );
        assert_eq!(identifier_system("HOSP"), None);
    }
}
