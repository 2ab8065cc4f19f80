//! `Encounter` from the event's `encounter` section.

use serde_json::{Map, Value, json};

use super::codes::{self, ACT_CODE, NULL_FLAVOR};
use super::{FhirError, ResourceType, fhir_date_time, put, put_text, text};

/// Builds a FHIR R4 `Encounter` from `event.encounter`; `subject` is the patient reference.
///
/// Status: `cancelled` for `*_cancelled` events, `finished` when a discharge time is known or
/// the event is a discharge, `planned` for pre-admissions, `in-progress` for admissions,
/// registrations, transfers, updates or a known admit time, else `unknown`.
pub fn encounter(event: &Value, subject: Option<Value>) -> Result<Value, FhirError> {
    let source =
        event.get("encounter").filter(|e| e.is_object()).ok_or(FhirError::MissingSection {
            resource: ResourceType::Encounter,
            section: "encounter",
        })?;
    let event_type = event.get("type").and_then(Value::as_str).unwrap_or("");
    let admit = text(source, "admit_time").and_then(|t| fhir_date_time(&t));
    let discharge = text(source, "discharge_time").and_then(|t| fhir_date_time(&t));

    let mut resource = Map::new();
    resource.insert("resourceType".into(), json!("Encounter"));
    put(&mut resource, "identifier", text(source, "id").map(|id| json!([{"value": id}])));
    resource
        .insert("status".into(), json!(status(event_type, admit.is_some(), discharge.is_some())));
    let class = match text(source, "class").and_then(|c| codes::encounter_class(&c)) {
        Some((code, display)) => json!({"system": ACT_CODE, "code": code, "display": display}),
        None => json!({"system": NULL_FLAVOR, "code": "UNK", "display": "unknown"}),
    };
    resource.insert("class".into(), class);
    put(
        &mut resource,
        "serviceType",
        text(source, "hospital_service")
            .map(|code| json!({"coding": [{"system": codes::HOSPITAL_SERVICE, "code": code}]})),
    );
    put(&mut resource, "subject", subject);
    put(
        &mut resource,
        "participant",
        source.get("attending").and_then(attending).map(|p| json!([p])),
    );
    let mut period = Map::new();
    put_text(&mut period, "start", admit);
    put_text(&mut period, "end", discharge);
    put(&mut resource, "period", Some(Value::Object(period)));
    put(&mut resource, "location", source.get("location").and_then(location).map(|l| json!([l])));
    Ok(Value::Object(resource))
}

fn status(event_type: &str, admitted: bool, discharged: bool) -> &'static str {
    if event_type.ends_with("_cancelled") {
        "cancelled"
    } else if discharged || event_type == "patient_discharge" {
        "finished"
    } else if matches!(event_type, "preadmit" | "patient_preadmit") {
        "planned"
    } else if admitted
        || event_type.ends_with("_admit")
        || event_type.ends_with("_registration")
        || matches!(event_type, "patient_transfer" | "patient_update" | "recurring_patient")
    {
        "in-progress"
    } else {
        "unknown"
    }
}

fn attending(source: &Value) -> Option<Value> {
    let display: Vec<_> = ["given", "family"].iter().filter_map(|k| text(source, k)).collect();
    let mut individual = Map::new();
    put(&mut individual, "identifier", text(source, "id").map(|id| json!({"value": id})));
    put(&mut individual, "display", (!display.is_empty()).then(|| json!(display.join(" "))));
    (!individual.is_empty()).then(|| {
        json!({
            "type": [{"coding": [{"system": codes::PARTICIPATION_TYPE, "code": "ATND", "display": "attender"}]}],
            "individual": individual,
        })
    })
}

fn location(source: &Value) -> Option<Value> {
    let parts: Vec<_> =
        ["facility", "unit", "room", "bed"].iter().filter_map(|k| text(source, k)).collect();
    (!parts.is_empty()).then(|| json!({"location": {"display": parts.join(" / ")}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_an_inpatient_encounter() {
        let event = json!({
            "type": "inpatient_admit",
            "encounter": {
                "id": "V100", "class": "I", "hospital_service": "MED",
                "location": {"unit": "ICU", "room": "101", "bed": "A"},
                "attending": {"id": "1234", "family": "SMITH", "given": "JANE"},
                "admit_time": "2024-01-01T12:00:00Z"
            }
        });
        let subject = json!({"reference": "urn:uuid:x"});
        assert_eq!(
            encounter(&event, Some(subject.clone())).unwrap(),
            json!({
                "resourceType": "Encounter",
                "identifier": [{"value": "V100"}],
                "status": "in-progress",
                "class": {"system": ACT_CODE, "code": "IMP", "display": "inpatient encounter"},
                "serviceType": {"coding": [{"system": codes::HOSPITAL_SERVICE, "code": "MED"}]},
                "subject": subject,
                "participant": [{
                    "type": [{"coding": [{"system": codes::PARTICIPATION_TYPE, "code": "ATND", "display": "attender"}]}],
                    "individual": {"identifier": {"value": "1234"}, "display": "JANE SMITH"}
                }],
                "period": {"start": "2024-01-01T12:00:00Z"},
                "location": [{"location": {"display": "ICU / 101 / A"}}]
            })
        );
    }

    #[test]
    fn classes_and_statuses() {
        for (class, code) in [("O", "AMB"), ("E", "EMER"), ("P", "PRENC")] {
            let event = json!({"type": "patient_admit", "encounter": {"class": class}});
            assert_eq!(encounter(&event, None).unwrap()["class"]["code"], code);
        }
        let unknown = json!({"type": "x", "encounter": {"id": "1"}});
        let built = encounter(&unknown, None).unwrap();
        assert_eq!(built["class"]["code"], "UNK");
        assert_eq!(built["status"], "unknown");
        let discharge =
            json!({"type": "patient_discharge", "encounter": {"discharge_time": "2024-01-02"}});
        let built = encounter(&discharge, None).unwrap();
        assert_eq!(built["status"], "finished");
        assert_eq!(built["period"], json!({"end": "2024-01-02"}));
        assert_eq!(status("admit_cancelled", true, false), "cancelled");
        assert_eq!(status("preadmit", false, false), "planned");
    }
}
