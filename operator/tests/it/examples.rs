//! `examples/`: every example is admitted by its CRD (schema, CEL rules, Keelson's checks), every
//! kind has an example, and a broken copy of each example is refused with the field at fault.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{admit, crd_for, workspace};

/// Every YAML document under `examples/`, as `(file relative to examples/, document)`.
fn documents() -> Vec<(String, Value)> {
    let root = workspace().join("examples");
    let mut files = Vec::new();
    collect_yaml(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path.strip_prefix(&root).unwrap().display().to_string();
            docs.into_iter().map(move |d| (name.clone(), d))
        })
        .collect()
}

fn collect_yaml(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_yaml(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The Keelson example named `kind/name`.
fn example(kind: &str, name: &str) -> Value {
    documents()
        .into_iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no example {kind}/{name}"))
}

fn is_keelson(doc: &Value) -> bool {
    doc["apiVersion"].as_str().is_some_and(|v| v.contains(".keelson.dev/"))
}

#[test]
fn every_example_is_admitted() {
    let mut refused = Vec::new();
    for (file, doc) in documents().iter().filter(|(_, d)| is_keelson(d)) {
        if let Err(problems) = admit(doc, None) {
            refused.push(format!("{file} {}: {problems:?}", doc["metadata"]["name"]));
        }
    }
    assert!(refused.is_empty(), "{refused:#?}");
}

#[test]
fn every_kind_has_an_example_in_its_group_folder() {
    let mut covered = BTreeSet::new();
    for (file, doc) in documents() {
        let api_version = doc["apiVersion"].as_str().unwrap();
        let kind = doc["kind"].as_str().unwrap();
        if let Some(crd) = crd_for(api_version, kind) {
            let folder = crd.spec.group.trim_end_matches(".keelson.dev");
            assert!(
                file.starts_with(&format!("{folder}/")),
                "{file}: {kind} belongs in examples/{folder}/"
            );
            covered.insert(kind.to_owned());
        }
    }
    let all: BTreeSet<_> =
        keelson_api_crds::all_crds().into_iter().map(|c| c.spec.names.kind).collect();
    assert_eq!(covered, all);
}

/// A change to an example: set the value at a JSON pointer (`-` appends to a list), or remove it.
enum Edit {
    Set(&'static str, Value),
    Remove(&'static str),
}

fn apply(mut doc: Value, edits: &[Edit]) -> Value {
    for edit in edits {
        match edit {
            Edit::Set(pointer, value) => {
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                let target = doc.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent}"));
                match target {
                    Value::Array(items) if key == "-" => items.push(value.clone()),
                    Value::Array(items) => items[key.parse::<usize>().unwrap()] = value.clone(),
                    Value::Object(map) => {
                        map.insert(key.to_owned(), value.clone());
                    }
                    other => panic!("{parent} is {other}"),
                }
            }
            Edit::Remove(pointer) => {
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                let removed = doc
                    .pointer_mut(parent)
                    .and_then(Value::as_object_mut)
                    .and_then(|m| m.remove(key));
                assert!(removed.is_some(), "nothing at {pointer}");
            }
        }
    }
    doc
}

/// Asserts that `doc` is refused with a problem at `field` whose text contains `needle`.
fn assert_refused(doc: &Value, old: Option<&Value>, field: &str, needle: &str) {
    let problems = admit(doc, old).expect_err(&format!("accepted, but {field} is wrong: {doc:#}"));
    let prefix = format!("{field}: ");
    assert!(
        problems.iter().any(|p| p.starts_with(&prefix) && p.contains(needle)),
        "expected a problem at {field} mentioning {needle:?}, got {problems:#?}"
    );
}

#[test]
fn a_broken_copy_of_each_example_is_refused_with_its_field() {
    use Edit::{Remove, Set};
    let cases: Vec<(&str, &str, Vec<Edit>, &str, &str)> = vec![
        (
            "ModelCache",
            "llama-3-1-8b-mlc",
            vec![Set("/spec/storageStrategy", json!("Ephemeral"))],
            "spec.storageStrategy",
            "Unsupported value",
        ),
        ("ModelCache", "qwen2-5-7b", vec![Remove("/spec/source")], "spec", "set source"),
        (
            "ModelDeployment",
            "qwen2-5-7b",
            vec![Set("/spec/vllm/gpuMemoryUtilization", json!("90%"))],
            "spec.vllm.gpuMemoryUtilization",
            "should match",
        ),
        (
            "ModelDeployment",
            "llama-3-1-8b",
            vec![Set("/spec/backend", json!("vllm"))],
            "spec.mlcllm",
            "mlcllm settings need backend mlc-llm",
        ),
        (
            "GPUGroup",
            "gpu-node-1",
            vec![Set("/spec/models/1/name", json!("llama-3-1-8b"))],
            "spec.models[1]",
            "Duplicate",
        ),
        (
            "ModelAutotune",
            "qwen2-5-7b-tune",
            vec![Set("/spec/searchSpace/gpuMemoryUtilization", json!(["0.90", "0.99"]))],
            "spec.searchSpace.gpuMemoryUtilization",
            "safety cap",
        ),
        (
            "ModelRouting",
            "weaver",
            vec![Set("/spec/roles/0/fallbacks", json!(["llama-3.1-8b"]))],
            "spec.roles[0].fallbacks[0]",
            "primary",
        ),
        (
            "Agent",
            "fetch-report",
            vec![Set("/spec/version", json!("one"))],
            "spec.version",
            "should match",
        ),
        ("Agent", "summarize", vec![Remove("/spec/image")], "spec.image", "Required value"),
        (
            "Flow",
            "weekly-report",
            vec![Set("/spec/edges/1/to", json!("publish"))],
            "spec.edges[1].to",
            "\"publish\"",
        ),
        (
            "Run",
            "weekly-report-2026-w47",
            vec![Remove("/spec/flowRef")],
            "spec",
            "exactly one of flowRef, plan and cloneOf",
        ),
        (
            "Schedule",
            "weekly-report-monday",
            vec![Set("/spec/cron", json!("0 8 * * 1 2026"))],
            "spec.cron",
            "",
        ),
        (
            "Webhook",
            "weekly-report",
            vec![Set("/spec/tokenSecretRef/name", json!("Weekly_Report"))],
            "spec.tokenSecretRef.name",
            "should match",
        ),
        ("Integration", "st-example-adt", vec![Set("/spec/tenant", json!(""))], "spec.tenant", ""),
        (
            "IntegrationSession",
            "adt-discharge-mapping",
            vec![Set("/spec/title", json!("   "))],
            "spec.title",
            "",
        ),
    ];
    let mut kinds = BTreeSet::new();
    for (kind, name, edits, field, needle) in cases {
        let broken = apply(example(kind, name), &edits);
        assert_refused(&broken, None, field, needle);
        kinds.insert(kind);
    }
    assert_eq!(kinds.len(), 12, "every kind has a broken copy");
}

#[test]
fn a_flow_with_a_cycle_is_refused() {
    let flow = apply(
        example("Flow", "weekly-report"),
        &[Edit::Set("/spec/edges/-", json!({"from": "approve", "to": "fetch"}))],
    );
    assert_refused(&flow, None, "spec.edges[2]", "cycle");
}

#[test]
fn a_schedule_in_an_unknown_time_zone_is_refused() {
    let schedule = apply(
        example("Schedule", "weekly-report-monday"),
        &[Edit::Set("/spec/timeZone", json!("Europe/Atlantis"))],
    );
    assert_refused(&schedule, None, "spec.timeZone", "Europe/Atlantis");
}

#[test]
fn a_schedule_can_only_be_suspended_or_resumed() {
    let old = example("Schedule", "weekly-report-monday");
    let suspended = apply(old.clone(), &[Edit::Set("/spec/suspend", json!(true))]);
    assert_eq!(admit(&suspended, Some(&old)), Ok(()));
    let recron = apply(old.clone(), &[Edit::Set("/spec/cron", json!("0 9 * * 1"))]);
    assert_refused(&recron, Some(&old), "spec", "cannot be updated");
    let new_param =
        apply(old.clone(), &[Edit::Set("/spec/parameters", json!({"WEEK": "2026-W48"}))]);
    assert_refused(&new_param, Some(&old), "spec", "cannot be updated");
}

#[test]
fn an_integration_is_immutable() {
    let old = example("Integration", "st-example-adt");
    assert_eq!(admit(&old, Some(&old)), Ok(()));
    let moved = apply(old.clone(), &[Edit::Set("/spec/workflow/id", json!("adt-to-archive"))]);
    assert_refused(&moved, Some(&old), "spec", "immutable");
}

#[test]
fn a_run_takes_gate_decisions_but_keeps_them() {
    let plan = json!({"nodes": [{"id": "check", "gate": {}}]});
    let mut old = example("Run", "weekly-report-2026-w47");
    old["spec"] = json!({"plan": plan, "start": true});
    assert_eq!(admit(&old, None), Ok(()));
    let approved = apply(
        old.clone(),
        &[Edit::Set(
            "/spec/decisions",
            json!([{"node": "check", "decision": "approve", "by": "ana"}]),
        )],
    );
    assert_eq!(admit(&approved, Some(&old)), Ok(()));
    let flipped =
        apply(approved.clone(), &[Edit::Set("/spec/decisions/0/decision", json!("reject"))]);
    assert_refused(&flipped, Some(&approved), "spec.decisions", "cannot be changed");
    let unstarted = apply(old.clone(), &[Edit::Set("/spec/start", json!(false))]);
    assert_refused(&unstarted, Some(&old), "spec.start", "un-started");
    let stranger = apply(
        old.clone(),
        &[Edit::Set("/spec/decisions", json!([{"node": "nope", "decision": "approve"}]))],
    );
    assert_refused(&stranger, Some(&old), "spec.decisions[0].node", "nope");
}
