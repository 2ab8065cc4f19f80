//! Filters and transforms: pure functions over the event JSON.

use keelson_integration::engine::definition::Route;
use keelson_integration::engine::{filter, transform};
use serde_json::json;

use crate::support::{admit_event, lab_event, workflow};

/// The first route of a one-route workflow built from a filter and transforms in YAML.
fn route(filter: &str, transforms: &str) -> Route {
    let yaml = format!(
        "workflow:\n  name: w\n  routes:\n    - name: r\n      filter: {filter}\n      transforms: {transforms}\n      actions: [{{id: a, type: log}}]\n"
    );
    workflow(&yaml).routes.remove(0)
}

fn matches(filter: &str, event: &serde_json::Value) -> bool {
    filter::evaluate(&route(filter, "[]").filter, event).is_ok()
}

#[test]
fn event_type_one_list_or_any() {
    let event = admit_event();
    assert!(matches("{event_type: inpatient_admit}", &event));
    assert!(matches("{event_type: [patient_admit, inpatient_admit]}", &event));
    assert!(matches("{}", &event));
    assert!(!matches("{event_type: lab_result}", &event));
    let reason =
        filter::evaluate(&route("{event_type: [lab_result]}", "[]").filter, &event).unwrap_err();
    assert_eq!(reason, "event type `inpatient_admit` is not one of [lab_result]");
    let untyped = json!({"id": "x"});
    assert_eq!(
        filter::evaluate(&route("{event_type: x}", "[]").filter, &untyped).unwrap_err(),
        "the event has no type"
    );
    assert!(!matches("{}", &json!([1, 2])), "non-objects never match");
}

#[test]
fn operators() {
    let event = admit_event();
    let lab = lab_event();
    let cases: &[(&str, &serde_json::Value, bool)] = &[
        ("{field: patient.gender, operator: eq, value: M}", &event, true),
        ("{field: patient.gender, operator: eq, value: F}", &event, false),
        ("{field: patient.gender, operator: ne, value: F}", &event, true),
        ("{field: patient.religion, operator: ne, value: F}", &event, true),
        ("{field: patient.gender, operator: in, value: [F, M]}", &event, true),
        ("{field: patient.gender, operator: not_in, value: [F, U]}", &event, true),
        ("{field: patient.religion, operator: not_in, value: [F]}", &event, true),
        ("{field: patient.religion, operator: in, value: [F]}", &event, false),
        ("{field: encounter.location.unit, operator: exists}", &event, true),
        ("{field: encounter.location.floor, operator: exists}", &event, false),
        ("{field: encounter.location.floor, operator: not_exists}", &event, true),
        ("{field: patient.name.family, operator: starts_with, value: DO}", &event, true),
        ("{field: patient.name.family, operator: starts_with, value: OE}", &event, false),
        ("{field: patient.name.family, operator: contains, value: OE}", &event, true),
        ("{field: 'patient.identifiers[0].type', operator: eq, value: MR}", &event, true),
        ("{field: patient.mrn, operator: eq, value: 123456789}", &event, true),
        ("{field: patient.mrn, operator: gt, value: 100}", &event, true),
        ("{field: patient.mrn, operator: lt, value: 100}", &event, false),
        ("{field: encounter.admit_time, operator: gt, value: '2023-12-31'}", &event, true),
        ("{field: encounter.admit_time, operator: lt, value: '2023-12-31'}", &event, false),
        ("{field: 'results[0].result', operator: gt, value: 180}", &lab, true),
        ("{field: 'results[*].abnormal_flags', operator: eq, value: H}", &lab, true),
        ("{field: 'results[*].status', operator: eq, value: P}", &lab, true),
        ("{field: 'results[*].status', operator: ne, value: P}", &lab, false),
        ("{field: 'results[*].status', operator: not_in, value: [X, C]}", &lab, true),
        ("{field: 'results[*].units', operator: exists}", &lab, true),
        ("{field: 'results[*].comment', operator: not_exists}", &lab, true),
    ];
    for (condition, event, expected) in cases {
        let filter = format!("{{conditions: [{condition}]}}");
        assert_eq!(matches(&filter, event), *expected, "{condition}");
    }
    let contains_list = json!({"flags": ["H", "A"]});
    assert!(matches(
        "{conditions: [{field: flags, operator: contains, value: A}]}",
        &contains_list
    ));
}

#[test]
fn all_conditions_must_hold_and_reasons_hide_values() {
    let filter = "{event_type: inpatient_admit, conditions: [{field: patient.gender, operator: eq, value: M}, {field: patient.name.family, operator: eq, value: SMITH}]}";
    let reason = filter::evaluate(&route(filter, "[]").filter, &admit_event()).unwrap_err();
    assert_eq!(reason, "condition 1 (`patient.name.family eq`) does not hold");
    assert!(!reason.contains("DOE"));
}

#[test]
fn transforms_edit_a_copy_in_order() {
    let route = route(
        "{}",
        "[{set: {field: meta.route, value: admit}}, {remove: {fields: [patient.ssn, patient.phones]}}, {rename: {from: patient.mrn, to: patient.medical_record_number}}, {set: {field: 'patient.identifiers[0].use', value: {primary: true}}}, {rename: {from: not.there, to: x.y}}]",
    );
    let original = admit_event();
    let mut copy = original.clone();
    assert_eq!(transform::apply(&route.transforms, &mut copy), Ok(5));
    assert_eq!(copy["meta"], json!({"route": "admit"}));
    assert!(copy["patient"].get("ssn").is_none());
    assert!(copy["patient"].get("phones").is_none());
    assert!(copy["patient"].get("mrn").is_none());
    assert_eq!(copy["patient"]["medical_record_number"], "123456789");
    assert_eq!(copy["patient"]["identifiers"][0]["use"], json!({"primary": true}));
    assert!(copy.get("x").is_none(), "renaming an absent field does nothing");
    assert_eq!(original, admit_event(), "the original is untouched");

    let wildcard = route_with_remove();
    let mut lab = lab_event();
    transform::apply(&wildcard.transforms, &mut lab).unwrap();
    assert!(lab["results"].as_array().unwrap().iter().all(|r| r.get("reference_range").is_none()));
}

fn route_with_remove() -> Route {
    route("{}", "[{remove: {fields: ['results[*].reference_range']}}]")
}

#[test]
fn transform_failures_name_the_transform_and_path() {
    let route = route(
        "{}",
        "[{set: {field: a, value: 1}}, {set: {field: patient.name.family.first, value: x}}]",
    );
    let mut event = admit_event();
    let error = transform::apply(&route.transforms, &mut event).unwrap_err();
    assert_eq!(error.index, 1);
    assert_eq!(error.to_string(), "transforms[1] (set): `patient.name.family` is not an object");
    assert!(!error.to_string().contains("DOE"));

    let rename = self::route("{}", "[{rename: {from: patient.mrn, to: patient.gender.code}}]");
    let mut event = admit_event();
    assert!(transform::apply(&rename.transforms, &mut event).is_err());
    assert_eq!(event["patient"]["mrn"], "123456789", "a failed rename keeps the source");
}
