//! `Observation`s, one per entry of the event's `results`.

use serde_json::{Map, Number, Value, json};

use super::codes::{self, INTERPRETATION, OBSERVATION_CATEGORY, UCUM};
use super::patient::each;
use super::{fhir_date_time, put, put_text, text};

/// Builds one FHIR R4 `Observation` per `event.results[i]`, in order; `subject` is the patient
/// reference. Results without any value or code are still sent (the code becomes the panel's,
/// or the text `unspecified`).
pub fn observations(event: &Value, subject: Option<Value>) -> Vec<Value> {
    let lab = event.get("type").and_then(Value::as_str) == Some("lab_result");
    let test = event.get("test");
    each(event.get("results"))
        .filter(|result| result.is_object())
        .map(|result| observation(result, test, subject.clone(), lab))
        .collect()
}

fn observation(result: &Value, test: Option<&Value>, subject: Option<Value>, lab: bool) -> Value {
    let mut resource = Map::new();
    resource.insert("resourceType".into(), json!("Observation"));
    let status = text(result, "status")
        .or_else(|| test.and_then(|t| text(t, "status")))
        .map_or("unknown", |s| codes::observation_status(&s));
    resource.insert("status".into(), json!(status));
    if lab {
        resource.insert(
            "category".into(),
            json!([{"coding": [{"system": OBSERVATION_CATEGORY, "code": "laboratory", "display": "Laboratory"}]}]),
        );
    }
    let code = result
        .get("test")
        .and_then(concept)
        .or_else(|| test.and_then(|t| t.get("panel")).and_then(concept))
        .unwrap_or_else(|| json!({"text": "unspecified"}));
    resource.insert("code".into(), code);
    put(&mut resource, "subject", subject);
    let effective = text(result, "observed_at")
        .or_else(|| test.and_then(|t| text(t, "observed_at")))
        .and_then(|t| fhir_date_time(&t));
    put_text(&mut resource, "effectiveDateTime", effective);
    if let Some((key, value)) = value(result) {
        resource.insert(key.into(), value);
    }
    let interpretations: Vec<Value> = flags(result.get("abnormal_flags"))
        .into_iter()
        .map(|flag| match codes::interpretation(&flag) {
            Some((code, display)) => {
                json!({"coding": [{"system": INTERPRETATION, "code": code, "display": display}]})
            }
            None => json!({"text": flag}),
        })
        .collect();
    put(&mut resource, "interpretation", Some(Value::Array(interpretations)));
    put(
        &mut resource,
        "referenceRange",
        text(result, "reference_range").map(|range| json!([{"text": range}])),
    );
    Value::Object(resource)
}

/// A `CodeableConcept` from `{code, display, system}`.
fn concept(source: &Value) -> Option<Value> {
    let code = text(source, "code");
    let display = text(source, "display");
    if code.is_none() && display.is_none() {
        return None;
    }
    let mut concept = Map::new();
    if let Some(code) = &code {
        let mut coding = Map::new();
        put_text(
            &mut coding,
            "system",
            text(source, "system").and_then(|s| codes::coding_system(&s)),
        );
        coding.insert("code".into(), json!(code));
        put_text(&mut coding, "display", display.clone());
        concept.insert("coding".into(), json!([coding]));
    }
    put_text(&mut concept, "text", display);
    Some(Value::Object(concept))
}

/// The `value[x]` of a result.
fn value(result: &Value) -> Option<(&'static str, Value)> {
    let raw = text(result, "result")?;
    let value_type = text(result, "value_type").map(|t| t.to_ascii_uppercase());
    match value_type.as_deref() {
        Some("CE" | "CWE" | "CNE" | "CF") => {
            let parts: Vec<&str> = raw.split('^').collect();
            let source = json!({
                "code": parts.first().copied().unwrap_or(""),
                "display": parts.get(1).copied().unwrap_or(""),
                "system": parts.get(2).copied().unwrap_or(""),
            });
            concept(&source).map(|c| ("valueCodeableConcept", c))
        }
        None | Some("NM" | "SN") => match quantity(&raw, result) {
            Some(q) => Some(("valueQuantity", q)),
            None => Some(("valueString", json!(raw))),
        },
        Some(_) => Some(("valueString", json!(raw))),
    }
}

/// A `Quantity` from numeric text (`7.2`, `<0.5`, `>=10`, SN `<^0.5`) and the result's units.
fn quantity(raw: &str, result: &Value) -> Option<Value> {
    let compact: String = if raw.contains('^') {
        // SN: comparator ^ number [^ separator ^ number]; ranges and ratios stay text.
        let parts: Vec<&str> = raw.split('^').collect();
        if parts.len() > 2 && parts[2..].iter().any(|p| !p.is_empty()) {
            return None;
        }
        format!("{}{}", parts[0], parts.get(1).copied().unwrap_or(""))
    } else {
        raw.to_owned()
    };
    let compact = compact.trim();
    let (comparator, number) = ["<=", ">=", "<", ">"]
        .iter()
        .find_map(|c| compact.strip_prefix(c).map(|rest| (Some(*c), rest.trim())))
        .unwrap_or((None, compact));
    let number = decimal(number)?;
    let mut quantity = Map::new();
    quantity.insert("value".into(), Value::Number(number));
    put_text(&mut quantity, "comparator", comparator);
    if let Some(units) = text(result, "units") {
        let parts: Vec<&str> = units.split('^').collect();
        let unit = parts.get(1).filter(|d| !d.is_empty()).unwrap_or(&parts[0]);
        quantity.insert("unit".into(), json!(unit));
        if parts.get(2).is_some_and(|s| s.eq_ignore_ascii_case("UCUM")) {
            quantity.insert("system".into(), json!(UCUM));
            quantity.insert("code".into(), json!(parts[0]));
        }
    }
    Some(Value::Object(quantity))
}

/// A JSON number from plain decimal text (`-1`, `7.25`, `.5`); no exponents, `inf` or `NaN`.
fn decimal(text: &str) -> Option<Number> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let well_formed = !(int.is_empty() && frac.is_empty())
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if !well_formed {
        return None;
    }
    if frac.is_empty()
        && let Ok(whole) = text.trim_start_matches('+').parse::<i64>()
    {
        return Some(whole.into());
    }
    Number::from_f64(text.parse().ok()?)
}

/// Abnormal flags as a list (an array, or text with `~` between repetitions).
fn flags(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => {
            s.split('~').map(str::trim).filter(|f| !f.is_empty()).map(str::to_owned).collect()
        }
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab_event() -> Value {
        json!({
            "type": "lab_result",
            "test": {"panel": {"code": "24323-8", "display": "Comprehensive metabolic panel", "system": "LN"}, "observed_at": "2024-01-01T08:00:00Z", "status": "F"},
            "results": [
                {"set_id": "1", "value_type": "NM", "test": {"code": "2345-7", "display": "Glucose", "system": "LN"}, "result": "182", "units": "mg/dL", "reference_range": "70-105", "abnormal_flags": "H", "status": "F"},
                {"set_id": "2", "value_type": "ST", "test": {"code": "X1", "display": "Comment", "system": "99LOCAL"}, "result": "see note", "status": "P"},
                {"set_id": "3", "value_type": "SN", "test": {"code": "2160-0", "system": "LN"}, "result": "<^0.5", "units": "mg/dL^^UCUM", "status": "C"},
                {"set_id": "4", "value_type": "CWE", "test": {"code": "600-7", "system": "LN"}, "result": "260385009^Negative^SCT"}
            ]
        })
    }

    #[test]
    fn builds_observations() {
        let subject = json!({"reference": "urn:uuid:p"});
        let list = observations(&lab_event(), Some(subject.clone()));
        assert_eq!(list.len(), 4);
        assert_eq!(
            list[0],
            json!({
                "resourceType": "Observation",
                "status": "final",
                "category": [{"coding": [{"system": OBSERVATION_CATEGORY, "code": "laboratory", "display": "Laboratory"}]}],
                "code": {"coding": [{"system": "http://loinc.org", "code": "2345-7", "display": "Glucose"}], "text": "Glucose"},
                "subject": subject,
                "effectiveDateTime": "2024-01-01T08:00:00Z",
                "valueQuantity": {"value": 182, "unit": "mg/dL"},
                "interpretation": [{"coding": [{"system": INTERPRETATION, "code": "H", "display": "High"}]}],
                "referenceRange": [{"text": "70-105"}]
            })
        );
        assert_eq!(list[1]["status"], "preliminary");
        assert_eq!(list[1]["valueString"], "see note");
        assert_eq!(list[1]["code"]["coding"][0], json!({"code": "X1", "display": "Comment"}));
        assert_eq!(list[2]["status"], "corrected");
        assert_eq!(
            list[2]["valueQuantity"],
            json!({"value": 0.5, "comparator": "<", "unit": "mg/dL", "system": UCUM, "code": "mg/dL"})
        );
        assert_eq!(
            list[3]["valueCodeableConcept"],
            json!({"coding": [{"system": "http://snomed.info/sct", "code": "260385009", "display": "Negative"}], "text": "Negative"})
        );
        // OBR-25 status when the OBX has none.
        assert_eq!(list[3]["status"], "final");
    }

    #[test]
    fn numbers() {
        assert_eq!(decimal("7"), Some(7.into()));
        assert_eq!(decimal("-7.25"), Number::from_f64(-7.25));
        assert_eq!(decimal(".5"), Number::from_f64(0.5));
        for bad in ["", ".", "1e5", "inf", "NaN", "1.2.3", "12a", "- 1"] {
            assert_eq!(decimal(bad), None, "{bad}");
        }
        let result = json!({"result": "5^1^:^2"});
        assert_eq!(quantity("5^1^:^2", &result), None);
    }
}
