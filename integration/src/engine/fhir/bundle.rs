//! Transaction `Bundle`s.

use serde_json::{Value, json};

use super::{FhirError, encounter, observations, patient};

/// Builds a FHIR R4 transaction `Bundle` of the event's Patient (a conditional create on its
/// first identifier, so a replay does not duplicate it), Encounter and Observations. Entries are
/// linked by `urn:uuid:` full URLs derived from the event id, so the same event always gives the
/// same bundle.
pub fn transaction_bundle(event: &Value) -> Result<Value, FhirError> {
    let mut entries: Vec<(&'static str, Value, Option<String>)> = Vec::new();
    let mut subject = None;
    if let Ok(patient) = patient(event) {
        subject = Some(json!({"reference": full_url(event, 0)}));
        let condition = if_none_exist(&patient);
        entries.push(("Patient", patient, condition));
    }
    if let Ok(encounter) = encounter(event, subject.clone()) {
        entries.push(("Encounter", encounter, None));
    }
    for observation in observations(event, subject) {
        entries.push(("Observation", observation, None));
    }
    if entries.is_empty() {
        return Err(FhirError::EmptyBundle);
    }
    Ok(transaction_of(event, entries.into_iter()))
}

/// A transaction bundle of `(resource type, resource, ifNoneExist)` entries; the first entry gets
/// full URL index 0.
pub(super) fn transaction_of(
    event: &Value,
    entries: impl Iterator<Item = (&'static str, Value, Option<String>)>,
) -> Value {
    let entries: Vec<Value> = entries
        .enumerate()
        .map(|(index, (resource_type, resource, condition))| {
            let mut request = json!({"method": "POST", "url": resource_type});
            if let Some(condition) = condition {
                request["ifNoneExist"] = json!(condition);
            }
            json!({"fullUrl": full_url(event, index as u64), "resource": resource, "request": request})
        })
        .collect();
    json!({"resourceType": "Bundle", "type": "transaction", "entry": entries})
}

/// `identifier=system|value` (or `identifier=value`) of the resource's first identifier.
fn if_none_exist(resource: &Value) -> Option<String> {
    let identifier = resource.get("identifier")?.get(0)?;
    let value = identifier.get("value")?.as_str()?;
    let token = match identifier.get("system").and_then(Value::as_str) {
        Some(system) => format!("{system}|{value}"),
        None => value.to_owned(),
    };
    Some(format!("identifier={}", percent_encode(&token)))
}

/// Percent-encodes everything but unreserved characters and `|` (the token separator).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'|' | b':' | b'/')
        {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A deterministic `urn:uuid:` (RFC 9562 version 8) from the event id and the entry index.
fn full_url(event: &Value, index: u64) -> String {
    let id = event.get("id").and_then(Value::as_str).unwrap_or("");
    let high = fnv1a(id.as_bytes(), 0xcbf2_9ce4_8422_2325 ^ index);
    let low = fnv1a(id.as_bytes(), 0x8422_2325_cbf2_9ce4 ^ index.rotate_left(32));
    let bytes =
        ((u128::from(high) << 64) | u128::from(low)) & !(0xF_u128 << 76) & !(0x3_u128 << 62);
    let bytes = bytes | (0x8_u128 << 76) | (0x2_u128 << 62);
    let hex = format!("{bytes:032x}");
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// 64-bit FNV-1a with a chosen offset basis.
fn fnv1a(bytes: &[u8], basis: u64) -> u64 {
    bytes
        .iter()
        .fold(basis, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_links_entries() {
        let event = json!({
            "id": "evt_0123456789abcdef0123456789abcdef",
            "type": "lab_result",
            "patient": {"identifiers": [{"value": "MR 1", "type": "MR", "system": "urn:oid:1.2.3"}], "gender": "F"},
            "encounter": {"class": "O"},
            "results": [{"test": {"code": "1"}, "result": "5"}]
        });
        let bundle = transaction_bundle(&event).unwrap();
        assert_eq!(bundle["type"], "transaction");
        let entries = bundle["entry"].as_array().unwrap();
        assert_eq!(entries.len(), 3);
        let patient_url = entries[0]["fullUrl"].as_str().unwrap();
        assert!(patient_url.starts_with("urn:uuid:"));
        assert_eq!(patient_url.len(), "urn:uuid:".len() + 36);
        assert_eq!(&patient_url[23..24], "8", "version 8 UUID");
        assert_eq!(
            entries[0]["request"],
            json!({"method": "POST", "url": "Patient", "ifNoneExist": "identifier=urn:oid:1.2.3|MR%201"})
        );
        assert_eq!(entries[1]["resource"]["subject"]["reference"], patient_url);
        assert_eq!(entries[2]["resource"]["subject"]["reference"], patient_url);
        assert_eq!(entries[2]["request"], json!({"method": "POST", "url": "Observation"}));
        let urls: std::collections::HashSet<_> =
            entries.iter().map(|e| e["fullUrl"].clone()).collect();
        assert_eq!(urls.len(), 3, "distinct full URLs");
        assert_eq!(transaction_bundle(&event).unwrap(), bundle, "deterministic");
        assert_eq!(transaction_bundle(&json!({"type": "x"})), Err(FhirError::EmptyBundle));
    }
}
