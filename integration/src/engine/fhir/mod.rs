//! Pure builders of FHIR R4 resources from a canonical event (no I/O).
//!
//! | Resource | Built from |
//! |---|---|
//! | `Patient` | `patient`: identifiers, name, gender (`M` male, `F` female, `O`/`A` other, `U`/`N` unknown), birth date, addresses, phones, marital status, language, deceased |
//! | `Encounter` | `encounter`: visit number, class (v3 ActCode: `I` IMP, `O` AMB, `E` EMER, `P` PRENC, `R` AMB), status, period, location, attending, hospital service; subject |
//! | `Observation` | one per `results[i]`: code, value (`valueQuantity` when numeric, `valueCodeableConcept` for CE/CWE, else `valueString`), reference range text, interpretation from abnormal flags, status (`F` final, `P` preliminary, `C` corrected, …), effective time; subject |
//! | `Bundle` | a `transaction` of Patient (conditional create on its first identifier), Encounter and Observations, linked by `urn:uuid:` full URLs derived from the event id |
//!
//! Default resource by event type ([`default_resource`]):
//!
//! | Event type | Resource |
//! |---|---|
//! | `lab_result` | `Bundle` |
//! | `patient_*`, `person_*`, `*_admit`, `*_registration`, `preadmit`, `recurring_patient` | `Patient` |
//! | anything else (`medication_order`, `appointment_*`, `document_*`, `charge_posted`, …) | `Bundle` of what the event carries |
//!
//! Where they go ([`build`]): a single resource is POSTed to `{base}/{ResourceType}`; a
//! transaction `Bundle` is POSTed to `{base}` itself, as FHIR's transaction interaction requires
//! (a POST to `{base}/Bundle` would merely store the bundle). `resource: Observation` on an event
//! with several results sends them as one transaction of Observations, so a retry never creates
//! half of them twice.
//!
//! Deliberately left out: the SSN (data minimisation: it is not needed to identify the patient
//! at a FHIR server that has the MRN), race and ethnicity (US Core extensions need code-system
//! mappings the event does not carry).

mod bundle;
mod codes;
mod encounter;
mod observation;
mod patient;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

pub use bundle::transaction_bundle;
pub use encounter::encounter;
pub use observation::observations;
pub use patient::{patient, patient_reference};

/// The FHIR resources the `fhir` action can build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ResourceType {
    /// `Patient`.
    Patient,
    /// `Encounter`.
    Encounter,
    /// `Observation` (one per result).
    Observation,
    /// A transaction `Bundle`.
    Bundle,
}

impl ResourceType {
    /// The FHIR resource type name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Patient => "Patient",
            Self::Encounter => "Encounter",
            Self::Observation => "Observation",
            Self::Bundle => "Bundle",
        }
    }
}

impl fmt::Display for ResourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ResourceType {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "Patient" => Ok(Self::Patient),
            "Encounter" => Ok(Self::Encounter),
            "Observation" => Ok(Self::Observation),
            "Bundle" => Ok(Self::Bundle),
            other => Err(format!(
                "unknown resource `{other}`; expected Patient, Encounter, Observation or Bundle"
            )),
        }
    }
}

/// Why a resource could not be built. Messages name sections, never values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FhirError {
    /// The event lacks the section the resource is built from.
    #[error("{resource} needs the event's `{section}` section, which is missing")]
    MissingSection {
        /// The resource asked for.
        resource: ResourceType,
        /// The missing event section.
        section: &'static str,
    },
    /// The event carries nothing a Bundle could hold.
    #[error("the event has no patient, encounter or results to put in a Bundle")]
    EmptyBundle,
}

impl FhirError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::MissingSection { .. } => "fhir_missing_section",
            Self::EmptyBundle => "fhir_empty_bundle",
        }
    }
}

/// A resource ready to POST.
#[derive(Clone, Debug, PartialEq)]
pub struct FhirRequest {
    /// The resource type of `body`.
    pub resource_type: ResourceType,
    /// Path below the base URL (`Patient`); `None` for a transaction posted to the base itself.
    pub path: Option<&'static str>,
    /// The resource JSON.
    pub body: Value,
}

/// The resource built for an event type when the action names none (table in the module docs).
pub fn default_resource(event_type: &str) -> ResourceType {
    let patient = event_type.starts_with("patient_")
        || event_type.starts_with("person_")
        || event_type.ends_with("_admit")
        || event_type.ends_with("_registration")
        || matches!(event_type, "preadmit" | "recurring_patient");
    if patient { ResourceType::Patient } else { ResourceType::Bundle }
}

/// Builds the request for `resource` (or the event type's default) from `event`.
pub fn build(resource: Option<ResourceType>, event: &Value) -> Result<FhirRequest, FhirError> {
    let resource = resource.unwrap_or_else(|| {
        default_resource(event.get("type").and_then(Value::as_str).unwrap_or(""))
    });
    let single =
        |body| FhirRequest { resource_type: resource, path: Some(resource.as_str()), body };
    match resource {
        ResourceType::Patient => Ok(single(patient(event)?)),
        ResourceType::Encounter => Ok(single(encounter(event, patient_reference(event))?)),
        ResourceType::Observation => {
            let mut list = observations(event, patient_reference(event));
            match list.len() {
                0 => Err(FhirError::MissingSection { resource, section: "results" }),
                1 => Ok(single(list.remove(0))),
                _ => Ok(FhirRequest {
                    resource_type: ResourceType::Bundle,
                    path: None,
                    body: bundle::transaction_of(
                        event,
                        list.into_iter().map(|o| ("Observation", o, None)),
                    ),
                }),
            }
        }
        ResourceType::Bundle => Ok(FhirRequest {
            resource_type: ResourceType::Bundle,
            path: None,
            body: transaction_bundle(event)?,
        }),
    }
}

/// A non-empty, trimmed string at `key` of `value` (numbers are written as text).
pub(crate) fn text<'a>(value: &'a Value, key: &str) -> Option<std::borrow::Cow<'a, str>> {
    match value.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(std::borrow::Cow::Borrowed(s.trim())),
        Value::Number(n) => Some(std::borrow::Cow::Owned(n.to_string())),
        _ => None,
    }
}

/// Inserts `key: value` when `value` is present (and not an empty array or object).
pub(crate) fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        None => {}
        Some(Value::Array(items)) if items.is_empty() => {}
        Some(Value::Object(fields)) if fields.is_empty() => {}
        Some(value) => {
            map.insert(key.to_owned(), value);
        }
    }
}

/// Inserts a string field when present.
pub(crate) fn put_text(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<String>>) {
    put(map, key, value.map(|v| Value::String(v.into())));
}

/// The date-time text of the event as a FHIR `dateTime` (`YYYY`, `YYYY-MM`, `YYYY-MM-DD` or
/// RFC 3339 with offset); other spellings are dropped rather than sent invalid.
pub(crate) fn fhir_date_time(text: &str) -> Option<String> {
    let date_only = |t: &str| {
        let bytes = t.as_bytes();
        matches!(bytes.len(), 4 | 7 | 10)
            && bytes
                .iter()
                .enumerate()
                .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
    };
    if date_only(text) {
        return Some(text.to_owned());
    }
    text.parse::<jiff::Timestamp>().ok().map(|_| text.to_owned())
}

/// The date part of a date or date-time (`birthDate` is a FHIR `date`).
pub(crate) fn fhir_date(text: &str) -> Option<String> {
    let candidate = text.get(..10).unwrap_or(text);
    fhir_date_time(candidate).filter(|d| d.len() == candidate.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn default_resources() {
        assert_eq!(default_resource("lab_result"), ResourceType::Bundle);
        for t in [
            "patient_admit",
            "inpatient_admit",
            "outpatient_registration",
            "patient_update",
            "preadmit",
            "person_added",
        ] {
            assert_eq!(default_resource(t), ResourceType::Patient, "{t}");
        }
        assert_eq!(default_resource("medication_order"), ResourceType::Bundle);
    }

    #[test]
    fn dates() {
        assert_eq!(fhir_date_time("2024-01-01").as_deref(), Some("2024-01-01"));
        assert_eq!(fhir_date_time("2024-01-01T12:00:00Z").as_deref(), Some("2024-01-01T12:00:00Z"));
        assert_eq!(
            fhir_date_time("2024-01-01T12:00:00-05:00").as_deref(),
            Some("2024-01-01T12:00:00-05:00")
        );
        assert_eq!(fhir_date_time("20240101"), None);
        assert_eq!(fhir_date("1980-03-15T10:00:00Z").as_deref(), Some("1980-03-15"));
        assert_eq!(fhir_date("1980").as_deref(), Some("1980"));
        assert_eq!(fhir_date("19800315"), None);
    }

    #[test]
    fn observation_resource_with_several_results_is_a_transaction() {
        let event = json!({"id": "evt_1", "type": "lab_result", "results": [
            {"test": {"code": "1"}, "result": "a"}, {"test": {"code": "2"}, "result": "b"}]});
        let request = build(Some(ResourceType::Observation), &event).unwrap();
        assert_eq!(request.path, None);
        assert_eq!(request.body["type"], "transaction");
        assert_eq!(request.body["entry"].as_array().unwrap().len(), 2);
        let one = json!({"id": "evt_1", "type": "lab_result", "results": [{"test": {"code": "1"}, "result": "a"}]});
        assert_eq!(build(Some(ResourceType::Observation), &one).unwrap().path, Some("Observation"));
        assert_eq!(
            build(Some(ResourceType::Encounter), &one),
            Err(FhirError::MissingSection {
                resource: ResourceType::Encounter,
                section: "encounter"
            })
        );
    }
}
