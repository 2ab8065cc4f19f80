//! Defaults the API server fills into new built-in objects where clients depend on them, as the
//! Kubernetes API server does: a Job's selector, pod labels and counts; a pod's restart policy,
//! grace period and scheduler.

use serde_json::{Value, json};

use crate::catalog::ResourceInfo;

/// Fills the defaults of a new built-in object (after its uid is set).
pub fn on_create(info: &ResourceInfo, object: &mut Value) {
    if !info.builtin {
        return;
    }
    match (info.group.as_str(), info.resource.as_str()) {
        ("batch", "jobs") => job(object),
        ("", "pods") => {
            if let Some(spec) = object.get_mut("spec") {
                pod_spec(spec);
            }
        }
        _ => {}
    }
}

fn job(object: &mut Value) {
    let uid =
        object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name =
        object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual {
        spec.entry("selector").or_insert_with(
            || json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": uid } }),
        );
        let labels = &mut spec.entry("template").or_insert_with(|| json!({}))["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            for (key, value) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec.insert("completions".into(), json!(1));
    }
    spec.entry("parallelism").or_insert(json!(1));
    spec.entry("backoffLimit").or_insert(json!(6));
    spec.entry("completionMode").or_insert(json!("NonIndexed"));
    spec.entry("suspend").or_insert(json!(false));
    if let Some(pod) = spec.get_mut("template").and_then(|t| t.get_mut("spec")) {
        pod_spec(pod);
    }
}

fn pod_spec(spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    spec.entry("restartPolicy").or_insert(json!("Always"));
    spec.entry("terminationGracePeriodSeconds").or_insert(json!(30));
    spec.entry("dnsPolicy").or_insert(json!("ClusterFirst"));
    spec.entry("schedulerName").or_insert(json!("default-scheduler"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin_resources;

    fn info(resource: &str) -> ResourceInfo {
        builtin_resources().into_iter().find(|r| r.resource == resource).unwrap()
    }

    #[test]
    fn a_job_gets_a_selector_matching_its_pod_labels_and_upstream_counts() {
        let mut job = json!({"metadata": {"name": "hello", "uid": "u-1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}});
        on_create(&info("jobs"), &mut job);
        assert_eq!(
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u-1"
        );
        let labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(
            (labels["job-name"].as_str(), labels["controller-uid"].as_str()),
            (Some("hello"), Some("u-1"))
        );
        assert_eq!(
            (job["spec"]["completions"].as_i64(), job["spec"]["backoffLimit"].as_i64()),
            (Some(1), Some(6))
        );
        assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never", "given values stay");
        assert_eq!(job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 30);
    }

    #[test]
    fn a_manual_selector_is_left_alone_and_work_queues_keep_null_completions() {
        let mut job = json!({"metadata": {"name": "q", "uid": "u"},
            "spec": {"manualSelector": true, "parallelism": 3, "template": {"spec": {}}}});
        on_create(&info("jobs"), &mut job);
        assert!(job["spec"].get("selector").is_none());
        assert!(job["spec"].get("completions").is_none());
    }
}
