//! HorizontalPodAutoscalers are stored as `autoscaling/v2` and shown through `autoscaling/v1`
//! too (`kubectl autoscale` writes v1), converted as upstream converts them: v1's one CPU target
//! is v2's CPU utilization metric, and what v1 has no field for (other metrics, scaling
//! behavior, current metrics, conditions) travels in upstream's annotations, so that an object
//! read through v1 and written back loses nothing. The annotations hold v2's JSON; one that does
//! not parse as such stays an ordinary annotation.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

/// The CPU utilization an autoscaler aims at when it names no metric (upstream's default).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The metrics of an autoscaler that names none: upstream's CPU utilization target.
pub(crate) fn default_metrics() -> Value {
    json!([cpu_metric("target", json!(DEFAULT_CPU_UTILIZATION))])
}

/// Whether `metric` is a CPU utilization target or measurement (`part` is `target` or
/// `current`), the one kind of metric v1 has a field for.
fn cpu_utilization(metric: &Value, part: &str) -> Option<Value> {
    let resource = metric.get("resource").filter(|_| metric["type"] == "Resource")?;
    if resource["name"] != "cpu" {
        return None;
    }
    if part == "target" && resource.pointer("/target/type") != Some(&json!("Utilization")) {
        return None;
    }
    resource.pointer(&format!("/{part}/averageUtilization")).cloned()
}

fn cpu_metric(part: &str, utilization: Value) -> Value {
    let mut value = json!({ "averageUtilization": utilization });
    if part == "target" {
        value["type"] = json!("Utilization");
    }
    json!({ "type": "Resource", "resource": { "name": "cpu", part: value } })
}

/// The fields of a spec or status both versions have, as they are.
const SHARED_SPEC: [&str; 3] = ["scaleTargetRef", "minReplicas", "maxReplicas"];
const SHARED_STATUS: [&str; 4] =
    ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"];

fn pick(object: &Value, fields: &[&str]) -> Map<String, Value> {
    fields
        .iter()
        .filter_map(|field| Some(((*field).to_owned(), object.get(*field)?.clone())))
        .collect()
}

/// Splits `metrics` into v1's CPU utilization and the rest.
fn split(metrics: Option<&Value>, part: &str) -> (Option<Value>, Vec<Value>) {
    let mut cpu = None;
    let mut rest = Vec::new();
    for metric in metrics.and_then(Value::as_array).into_iter().flatten() {
        match cpu_utilization(metric, part).filter(|_| cpu.is_none()) {
            Some(utilization) => cpu = Some(utilization),
            None => rest.push(metric.clone()),
        }
    }
    (cpu, rest)
}

/// A stored v2 autoscaler as `autoscaling/v1` shows it.
pub(crate) fn to_v1(v2: &Value) -> Value {
    let mut v1 = v2.clone();
    v1["apiVersion"] = json!("autoscaling/v1");
    let mut annotations = Map::new();
    let spec = v2.get("spec").cloned().unwrap_or_else(|| json!({}));
    let (cpu, others) = split(spec.get("metrics"), "target");
    let mut v1_spec = pick(&spec, &SHARED_SPEC);
    if let Some(cpu) = cpu {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), cpu);
    }
    if !others.is_empty() {
        annotations.insert(METRICS.into(), json!(Value::Array(others).to_string()));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        annotations.insert(BEHAVIOR.into(), json!(behavior.to_string()));
    }
    v1["spec"] = Value::Object(v1_spec);

    if let Some(status) = v2.get("status").filter(|s| s.is_object()) {
        let (cpu, others) = split(status.get("currentMetrics"), "current");
        let mut v1_status = pick(status, &SHARED_STATUS);
        if let Some(cpu) = cpu {
            v1_status.insert("currentCPUUtilizationPercentage".into(), cpu);
        }
        if !others.is_empty() {
            annotations.insert(CURRENT_METRICS.into(), json!(Value::Array(others).to_string()));
        }
        if let Some(conditions) = status.get("conditions").filter(|c| !c.is_null()) {
            annotations.insert(CONDITIONS.into(), json!(conditions.to_string()));
        }
        v1["status"] = Value::Object(v1_status);
    }
    if let (false, Some(metadata)) = (annotations.is_empty(), v1["metadata"].as_object_mut()) {
        let existing = metadata.entry("annotations").or_insert_with(|| json!({}));
        if let Some(existing) = existing.as_object_mut() {
            existing.extend(annotations);
        }
    }
    v1
}

/// Takes the annotation `name` out of `object` if it holds JSON of the shape `expected` checks.
fn take_annotation(object: &mut Value, name: &str, expected: fn(&Value) -> bool) -> Option<Value> {
    let annotations = object.pointer_mut("/metadata/annotations")?.as_object_mut()?;
    let parsed: Value = serde_json::from_str(annotations.get(name)?.as_str()?).ok()?;
    if !expected(&parsed) {
        return None;
    }
    annotations.remove(name);
    if annotations.is_empty() {
        object["metadata"].as_object_mut()?.remove("annotations");
    }
    Some(parsed)
}

/// A v1 autoscaler in the v2 form it is stored in.
pub(crate) fn from_v1(v1: Value) -> Value {
    let mut v2 = v1;
    let others = take_annotation(&mut v2, METRICS, Value::is_array);
    let behavior = take_annotation(&mut v2, BEHAVIOR, Value::is_object);
    let current_others = take_annotation(&mut v2, CURRENT_METRICS, Value::is_array);
    let conditions = take_annotation(&mut v2, CONDITIONS, Value::is_array);
    v2["apiVersion"] = json!("autoscaling/v2");

    let v1_spec = v2.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut spec = pick(&v1_spec, &SHARED_SPEC);
    let mut metrics = Vec::new();
    if let Some(cpu) = v1_spec.get("targetCPUUtilizationPercentage").filter(|c| !c.is_null()) {
        metrics.push(cpu_metric("target", cpu.clone()));
    }
    metrics.extend(others.and_then(|o| o.as_array().cloned()).unwrap_or_default());
    let metrics = if metrics.is_empty() { default_metrics() } else { Value::Array(metrics) };
    spec.insert("metrics".into(), metrics);
    if let Some(behavior) = behavior {
        spec.insert("behavior".into(), behavior);
    }
    v2["spec"] = Value::Object(spec);

    if let Some(v1_status) = v2.get("status").filter(|s| s.is_object()).cloned() {
        let mut status = pick(&v1_status, &SHARED_STATUS);
        let mut current = Vec::new();
        if let Some(cpu) = v1_status.get("currentCPUUtilizationPercentage").filter(|c| !c.is_null())
        {
            current.push(cpu_metric("current", cpu.clone()));
        }
        current.extend(current_others.and_then(|o| o.as_array().cloned()).unwrap_or_default());
        if !current.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = conditions {
            status.insert("conditions".into(), conditions);
        }
        v2["status"] = Value::Object(status);
    }
    v2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"team": "a"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 75}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]
            }
        })
    }

    #[test]
    fn v1_shows_the_cpu_target_and_carries_the_rest_in_annotations() {
        let v1 = to_v1(&stored());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["spec"]["minReplicas"], 2);
        assert!(v1["spec"].get("metrics").is_none());
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 75);
        assert_eq!(v1["status"]["desiredReplicas"], 3);
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["team"], "a");
        let others: Value = serde_json::from_str(annotations[METRICS].as_str().unwrap()).unwrap();
        assert_eq!(others[0]["resource"]["name"], "memory");
        assert!(annotations.get(BEHAVIOR).is_some() && annotations.get(CONDITIONS).is_some());
        assert!(annotations.get(CURRENT_METRICS).is_none(), "the only current metric is CPU");
    }

    #[test]
    fn an_autoscaler_read_through_v1_and_written_back_is_unchanged() {
        assert_eq!(from_v1(to_v1(&stored())), stored());
    }

    #[test]
    fn a_v1_autoscaler_without_a_target_aims_at_upstreams_default() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {METRICS: "not json"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        let v2 = from_v1(v1);
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert_eq!(
            v2["metadata"]["annotations"][METRICS], "not json",
            "an annotation that is not v2's JSON is the user's"
        );
        assert!(v2.get("status").is_none());
    }
}
