//! The FHIR action against a real local HTTP server standing in for a FHIR base.

use keelson_integration::engine::{ActionKind, ActionStatus};
use serde_json::json;

use crate::support::{Destination, admit_event, engine, lab_event, workflow};

fn fhir_workflow(base: &str, resource: Option<&str>) -> keelson_integration::engine::Workflow {
    let resource = resource.map(|r| format!(", resource: {r}")).unwrap_or_default();
    workflow(&format!(
        "workflow: {{name: fhir, retry: {{max_attempts: 1}}, routes: [{{name: r, actions: [{{id: send-fhir, type: fhir, base_url: '{base}'{resource}, headers: {{Authorization: Bearer x}}}}]}}]}}"
    ))
}

#[tokio::test]
async fn posts_a_patient_by_default_for_admissions() {
    let server = Destination::start(201).await;
    let (engine, _registry) = engine();
    let outcome = engine.process(&fhir_workflow(&server.url("/r4"), None), admit_event()).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!(action.kind, ActionKind::Fhir);
    assert_eq!((action.status, action.http_status), (ActionStatus::Succeeded, Some(201)));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/r4/Patient");
    assert_eq!(request.header("content-type"), Some("application/fhir+json"));
    assert_eq!(request.header("accept"), Some("application/fhir+json"));
    assert_eq!(request.header("authorization"), Some("Bearer x"));
    let patient = request.json();
    assert_eq!(patient["resourceType"], "Patient");
    assert_eq!(patient["gender"], "male");
    assert_eq!(patient["birthDate"], "1980-03-15");
    assert_eq!(
        patient["name"],
        json!([{"use": "official", "family": "DOE", "given": ["JOHN", "Q"]}])
    );
    assert_eq!(patient["identifier"][0]["value"], "123456789");
    assert_eq!(patient["identifier"][0]["type"]["coding"][0]["code"], "MR");
    assert_eq!(patient["address"][0]["postalCode"], "62701");
    assert_eq!(patient["telecom"], json!([{"system": "phone", "value": "5551234567"}]));
    assert!(!request.json().to_string().contains("123-45-6789"), "no SSN");
}

#[tokio::test]
async fn posts_an_encounter_when_asked() {
    let server = Destination::start(201).await;
    let (engine, _registry) = engine();
    engine.process(&fhir_workflow(&server.url("/r4/"), Some("Encounter")), admit_event()).await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/r4/Encounter");
    let encounter = request.json();
    assert_eq!(encounter["class"]["code"], "IMP");
    assert_eq!(encounter["status"], "in-progress");
    assert_eq!(
        encounter["subject"],
        json!({"type": "Patient", "identifier": {"value": "123456789"}})
    );
    assert_eq!(encounter["period"]["start"], "2024-01-01T11:30:00Z");
}

#[tokio::test]
async fn posts_a_transaction_bundle_for_lab_results() {
    let server = Destination::start(200).await;
    let (engine, _registry) = engine();
    let outcome = engine.process(&fhir_workflow(&server.url("/r4"), None), lab_event()).await;
    assert_eq!(outcome.routes[0].actions[0].status, ActionStatus::Succeeded);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/r4", "a transaction goes to the base URL");
    assert_eq!(request.header("content-type"), Some("application/fhir+json"));
    let bundle = request.json();
    assert_eq!(bundle["resourceType"], "Bundle");
    assert_eq!(bundle["type"], "transaction");
    let entries = bundle["entry"].as_array().unwrap();
    let types: Vec<_> =
        entries.iter().map(|e| e["resource"]["resourceType"].as_str().unwrap()).collect();
    assert_eq!(types, ["Patient", "Observation", "Observation"]);
    assert_eq!(
        entries[0]["request"],
        json!({"method": "POST", "url": "Patient", "ifNoneExist": "identifier=urn:oid:2.16.840.1.113883.19.5|555"})
    );
    let patient_url = entries[0]["fullUrl"].as_str().unwrap();
    let glucose = &entries[1]["resource"];
    assert_eq!(glucose["subject"]["reference"], patient_url);
    assert_eq!(glucose["status"], "final");
    assert_eq!(
        glucose["code"]["coding"][0],
        json!({"system": "http://loinc.org", "code": "2345-7", "display": "Glucose"})
    );
    assert_eq!(glucose["valueQuantity"], json!({"value": 182, "unit": "mg/dL"}));
    assert_eq!(glucose["referenceRange"], json!([{"text": "70-105"}]));
    assert_eq!(glucose["interpretation"][0]["coding"][0]["code"], "H");
    assert_eq!(glucose["effectiveDateTime"], "2024-01-01T08:00:00Z");
    let note = &entries[2]["resource"];
    assert_eq!(note["status"], "preliminary");
    assert_eq!(note["valueString"], "fasting");
}

#[tokio::test]
async fn an_unbuildable_resource_is_dead_lettered_without_a_request() {
    let server = Destination::start(200).await;
    let (engine, _registry) = engine();
    let outcome =
        engine.process(&fhir_workflow(&server.url("/r4"), Some("Encounter")), lab_event()).await;
    let action = &outcome.routes[0].actions[0];
    assert_eq!((action.status, action.attempts), (ActionStatus::Failed, 0));
    assert_eq!(
        action.error.as_deref(),
        Some(
            "cannot build the FHIR resource: Encounter needs the event's `encounter` section, which is missing"
        )
    );
    assert!(outcome.dead_lettered);
    assert_eq!(server.count(), 0);
}
