//! Ephemeral containers (`kubectl debug <pod>`) on the local node: added to a running pod, run
//! once and never restarted, and no part of the pod's phase or readiness. Pure: no I/O.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

use super::status;

/// The pod's ephemeral containers as the containers they run as (an ephemeral container has a
/// container's fields, and a target that the local node has no use for: its processes share
/// the machine anyway).
pub fn containers(pod: &Pod) -> Vec<Container> {
    let listed = pod.spec.as_ref().and_then(|s| s.ephemeral_containers.as_ref());
    listed
        .into_iter()
        .flatten()
        .filter_map(|ephemeral| {
            let mut fields = serde_json::to_value(ephemeral).ok()?;
            fields.as_object_mut()?.remove("targetContainerName");
            serde_json::from_value(fields).ok()
        })
        .collect()
}

/// The statuses a running simulated pod shows for its ephemeral containers: each running since
/// it was first seen.
pub fn simulated(pod: &Pod, id: impl Fn(&str) -> String, now: Timestamp) -> Vec<ContainerStatus> {
    let reported = pod.status.as_ref().and_then(|s| s.ephemeral_container_statuses.as_ref());
    containers(pod)
        .iter()
        .map(|container| {
            let previous = reported.into_iter().flatten().find(|s| s.name == container.name);
            let since = previous
                .and_then(|s| s.state.as_ref()?.running.as_ref()?.started_at.as_ref())
                .map_or(now, |t| t.0);
            let initial = previous.cloned().unwrap_or_else(|| super::worker::initial(container));
            let mut running =
                status::running(&container.name, id(&container.name), since, &initial);
            // Ephemeral containers are never ready: they serve nothing.
            running.ready = false;
            running
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "web" },
            "spec": {
                "containers": [{ "name": "main", "image": "nginx" }],
                "ephemeralContainers": [
                    { "name": "debugger", "image": "busybox", "targetContainerName": "main", "stdin": true },
                ],
            },
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn an_ephemeral_container_runs_as_a_container_with_its_fields() {
        let containers = containers(&pod(json!({})));
        assert_eq!(containers.len(), 1);
        assert_eq!((containers[0].name.as_str(), containers[0].stdin), ("debugger", Some(true)));
    }

    #[test]
    fn a_simulated_one_runs_since_it_was_first_seen_and_is_never_ready() {
        let first = Timestamp::from_second(1_000).unwrap();
        let statuses = simulated(&pod(json!({})), |name| format!("simulated://{name}"), first);
        let running = statuses[0].state.as_ref().unwrap().running.as_ref().unwrap();
        assert_eq!(running.started_at.as_ref().unwrap().0, first);
        assert!(!statuses[0].ready);
        let later = pod(json!({ "ephemeralContainerStatuses": statuses }));
        let again = simulated(&later, |name| format!("simulated://{name}"), Timestamp::now());
        let running = again[0].state.as_ref().unwrap().running.as_ref().unwrap();
        assert_eq!(running.started_at.as_ref().unwrap().0, first);
    }
}
