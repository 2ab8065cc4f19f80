//! `Patient` from the event's `patient` section.

use serde_json::{Map, Value, json};

use super::codes::{self, IDENTIFIER_TYPE};
use super::{FhirError, ResourceType, fhir_date, fhir_date_time, put, put_text, text};

/// Builds a FHIR R4 `Patient` from `event.patient`.
pub fn patient(event: &Value) -> Result<Value, FhirError> {
    let source = event
        .get("patient")
        .filter(|p| p.is_object())
        .ok_or(FhirError::MissingSection { resource: ResourceType::Patient, section: "patient" })?;
    let mut resource = Map::new();
    resource.insert("resourceType".into(), json!("Patient"));
    put(&mut resource, "identifier", Some(Value::Array(identifiers(source))));
    let names: Vec<Value> = each(source.get("name")).filter_map(human_name).collect();
    put(&mut resource, "name", Some(Value::Array(names)));
    put(&mut resource, "telecom", Some(Value::Array(telecoms(source))));
    put_text(&mut resource, "gender", text(source, "gender").and_then(|g| codes::gender(&g)));
    put_text(&mut resource, "birthDate", text(source, "birth_date").and_then(|d| fhir_date(&d)));
    deceased(source, &mut resource);
    let addresses: Vec<Value> = each(source.get("addresses")).filter_map(address).collect();
    put(&mut resource, "address", Some(Value::Array(addresses)));
    put(
        &mut resource,
        "maritalStatus",
        text(source, "marital_status").map(|code| match codes::marital_status(&code) {
            Some((fhir, display)) => json!({
                "coding": [{"system": codes::MARITAL_STATUS, "code": fhir, "display": display}]
            }),
            None => json!({"text": code}),
        }),
    );
    put(
        &mut resource,
        "communication",
        text(source, "language").map(|language| json!([{"language": {"text": language}}])),
    );
    Ok(Value::Object(resource))
}

/// A logical reference to the event's patient by its first identifier (MR preferred), for
/// resources sent on their own: `{"type": "Patient", "identifier": {...}}`.
pub fn patient_reference(event: &Value) -> Option<Value> {
    let source = event.get("patient")?;
    let identifiers = identifiers(source);
    let chosen = identifiers
        .iter()
        .find(|id| id.pointer("/type/coding/0/code") == Some(&json!("MR")))
        .or_else(|| identifiers.first())?;
    let mut identifier = Map::new();
    put(&mut identifier, "system", chosen.get("system").cloned());
    put(&mut identifier, "value", chosen.get("value").cloned());
    Some(json!({"type": "Patient", "identifier": identifier}))
}

/// Items of an array, or the value itself when it is a single object or string.
pub(super) fn each(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    let items: &[Value] = match value {
        Some(Value::Array(items)) => items,
        Some(single) => std::slice::from_ref(single),
        None => &[],
    };
    items.iter()
}

/// FHIR identifiers from `patient.identifiers`, or from `patient.mrn` alone.
fn identifiers(source: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = each(source.get("identifiers")).filter_map(identifier).collect();
    if out.is_empty()
        && let Some(mrn) = text(source, "mrn")
    {
        out.push(json!({
            "use": "usual",
            "type": {"coding": [{"system": IDENTIFIER_TYPE, "code": "MR"}]},
            "value": mrn,
        }));
    }
    out
}

fn identifier(source: &Value) -> Option<Value> {
    let value = text(source, "value")?;
    let kind = text(source, "type");
    let assigner = text(source, "assigner");
    let system = text(source, "system")
        .and_then(|s| codes::identifier_system(&s))
        .or_else(|| assigner.as_deref().and_then(codes::identifier_system));
    let mut out = Map::new();
    if kind.as_deref() == Some("MR") {
        out.insert("use".into(), json!("usual"));
    }
    put(
        &mut out,
        "type",
        kind.map(|k| json!({"coding": [{"system": IDENTIFIER_TYPE, "code": k}]})),
    );
    put_text(&mut out, "system", system);
    out.insert("value".into(), json!(value));
    put(&mut out, "assigner", assigner.map(|a| json!({"display": a})));
    Some(Value::Object(out))
}

/// A `HumanName` from `{family, given, middle, suffix, prefix}`.
pub(super) fn human_name(source: &Value) -> Option<Value> {
    let mut name = Map::new();
    name.insert("use".into(), json!("official"));
    put_text(&mut name, "family", text(source, "family"));
    let given: Vec<Value> =
        ["given", "middle"].iter().filter_map(|k| text(source, k)).map(|g| json!(g)).collect();
    put(&mut name, "given", Some(Value::Array(given)));
    for (from, to) in [("prefix", "prefix"), ("suffix", "suffix")] {
        put(&mut name, to, text(source, from).map(|v| json!([v])));
    }
    (name.len() > 1).then_some(Value::Object(name))
}

fn address(source: &Value) -> Option<Value> {
    let mut address = Map::new();
    let lines: Vec<Value> =
        ["line1", "line2"].iter().filter_map(|k| text(source, k)).map(|l| json!(l)).collect();
    put(&mut address, "line", Some(Value::Array(lines)));
    for (from, to) in [
        ("city", "city"),
        ("state", "state"),
        ("postal_code", "postalCode"),
        ("country", "country"),
    ] {
        put_text(&mut address, to, text(source, from));
    }
    (!address.is_empty()).then_some(Value::Object(address))
}

/// Phones as strings or objects (`value`/`number`, `use`, `equipment`/`type`), and emails.
fn telecoms(source: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for phone in each(source.get("phones")) {
        let (value, use_code, equipment) = match phone {
            Value::String(s) if !s.trim().is_empty() => (s.trim().to_owned(), None, None),
            Value::Object(_) => {
                let Some(value) = text(phone, "value")
                    .or_else(|| text(phone, "number"))
                    .or_else(|| text(phone, "email"))
                else {
                    continue;
                };
                let use_code = text(phone, "use");
                let equipment = text(phone, "equipment").or_else(|| text(phone, "type"));
                (value.into_owned(), use_code, equipment)
            }
            _ => continue,
        };
        let equipment = equipment.map(|e| e.to_ascii_uppercase());
        let system = match equipment.as_deref() {
            Some("INTERNET" | "X.400" | "EMAIL") => "email",
            Some("FX" | "FAX") => "fax",
            _ if value.contains('@') => "email",
            _ => "phone",
        };
        let mut point = Map::new();
        point.insert("system".into(), json!(system));
        point.insert("value".into(), json!(value));
        let fhir_use = match equipment.as_deref() {
            Some("CP" | "MOBILE") => Some("mobile"),
            _ => use_code.as_deref().and_then(codes::telecom_use),
        };
        put_text(&mut point, "use", fhir_use);
        out.push(Value::Object(point));
    }
    for email in each(source.get("emails")).filter_map(Value::as_str) {
        out.push(json!({"system": "email", "value": email}));
    }
    out
}

fn deceased(source: &Value, resource: &mut Map<String, Value>) {
    match source.get("deceased") {
        Some(Value::Bool(flag)) => {
            resource.insert("deceasedBoolean".into(), json!(flag));
        }
        Some(Value::String(s)) => match s.trim() {
            "Y" | "y" | "true" => {
                resource.insert("deceasedBoolean".into(), json!(true));
            }
            "N" | "n" | "false" => {
                resource.insert("deceasedBoolean".into(), json!(false));
            }
            other => put_text(resource, "deceasedDateTime", fhir_date_time(other)),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Value {
        json!({
            "id": "evt_0123456789abcdef0123456789abcdef",
            "type": "patient_admit",
            "patient": {
                "mrn": "123456789",
                "identifiers": [
                    {"value": "123456789", "type": "MR", "assigner": "HOSP"},
                    {"value": "555", "type": "PI", "system": "2.16.840.1.113883.19.5"}
                ],
                "name": {"family": "DOE", "given": "JOHN", "middle": "Q", "suffix": "JR"},
                "birth_date": "1980-03-15",
                "gender": "M",
                "addresses": [{"line1": "123 MAIN ST", "city": "SPRINGFIELD", "state": "IL", "postal_code": "62701", "country": "USA"}],
                "phones": ["5551234567", {"number": "5559876543", "use": "WPN"}, {"value": "j@example.org", "equipment": "Internet"}],
                "ssn": "123-45-6789",
                "marital_status": "M",
                "deceased": "N"
            }
        })
    }

    #[test]
    fn builds_a_patient() {
        let patient = patient(&event()).unwrap();
        assert_eq!(
            patient,
            json!({
                "resourceType": "Patient",
                "identifier": [
                    {"use": "usual", "type": {"coding": [{"system": IDENTIFIER_TYPE, "code": "MR"}]}, "value": "123456789", "assigner": {"display": "HOSP"}},
                    {"type": {"coding": [{"system": IDENTIFIER_TYPE, "code": "PI"}]}, "system": "urn:oid:2.16.840.1.113883.19.5", "value": "555"}
                ],
                "name": [{"use": "official", "family": "DOE", "given": ["JOHN", "Q"], "suffix": ["JR"]}],
                "telecom": [
                    {"system": "phone", "value": "5551234567"},
                    {"system": "phone", "value": "5559876543", "use": "work"},
                    {"system": "email", "value": "j@example.org"}
                ],
                "gender": "male",
                "birthDate": "1980-03-15",
                "deceasedBoolean": false,
                "address": [{"line": ["123 MAIN ST"], "city": "SPRINGFIELD", "state": "IL", "postalCode": "62701", "country": "USA"}],
                "maritalStatus": {"coding": [{"system": codes::MARITAL_STATUS, "code": "M", "display": "Married"}]}
            })
        );
        assert!(!patient.to_string().contains("123-45-6789"), "the SSN is not sent");
    }

    #[test]
    fn genders_and_missing_section() {
        for (code, fhir) in [("F", "female"), ("O", "other"), ("U", "unknown")] {
            let event = json!({"patient": {"gender": code}});
            assert_eq!(patient(&event).unwrap()["gender"], fhir);
        }
        assert!(patient(&json!({"type": "x"})).is_err());
    }

    #[test]
    fn reference_prefers_the_mrn() {
        assert_eq!(
            patient_reference(&event()),
            Some(json!({"type": "Patient", "identifier": {"value": "123456789"}}))
        );
        let only_mrn = json!({"patient": {"mrn": "42"}});
        assert_eq!(
            patient_reference(&only_mrn),
            Some(json!({"type": "Patient", "identifier": {"value": "42"}}))
        );
    }
}
