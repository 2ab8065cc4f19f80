//! Whether a ModelDeployment has rolled out its current settings.

use k8s_openapi::api::apps::v1::Deployment;
use keelson_api_crds::serving::ModelDeployment;

/// How far a rollout is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// Every replica runs the current settings and is available.
    Done,
    /// Not yet, and why.
    Waiting(String),
}

/// Whether `md`'s serving Deployment runs `md`'s current spec everywhere: the controller saw
/// this generation of `md`, the Deployment controller saw the Deployment's, and every desired
/// replica is updated, ready and available.
pub fn state(md: &ModelDeployment, deployment: Option<&Deployment>) -> Rollout {
    let seen = md.status.as_ref().and_then(|s| s.observed.observed_generation);
    if seen < md.metadata.generation {
        return Rollout::Waiting(
            "the ModelDeployment controller has not seen the change yet".into(),
        );
    }
    let Some(deployment) = deployment else {
        return Rollout::Waiting("its Deployment does not exist yet".into());
    };
    let status = deployment.status.clone().unwrap_or_default();
    if status.observed_generation < deployment.metadata.generation {
        return Rollout::Waiting("the Deployment controller has not seen the change yet".into());
    }
    let desired = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    if desired == 0 {
        return Rollout::Waiting("it is scaled to zero".into());
    }
    let counts = [
        status.updated_replicas,
        status.ready_replicas,
        status.available_replicas,
        status.replicas,
    ];
    if counts.iter().all(|c| c.unwrap_or(0) == desired) {
        Rollout::Done
    } else {
        Rollout::Waiting(format!(
            "{} of {desired} replicas updated, {} available",
            status.updated_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(generation: i64, seen: i64) -> ModelDeployment {
        serde_saphyr::from_str(&format!(
            "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata: {{name: m, namespace: d, generation: {generation}}}\nspec: {{backend: vllm, model: m}}\nstatus: {{observedGeneration: {seen}}}\n"
        ))
        .unwrap()
    }

    fn deployment(generation: i64, seen: i64, desired: i32, counts: [i32; 4]) -> Deployment {
        let [replicas, updated, ready, available] = counts;
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "m", "generation": generation },
            "spec": { "replicas": desired, "selector": {}, "template": {} },
            "status": { "observedGeneration": seen, "replicas": replicas, "updatedReplicas": updated,
                        "readyReplicas": ready, "availableReplicas": available },
        }))
        .unwrap()
    }

    #[test]
    fn done_only_when_every_replica_runs_the_current_spec() {
        assert_eq!(state(&md(3, 3), Some(&deployment(5, 5, 1, [1, 1, 1, 1]))), Rollout::Done);
        assert!(matches!(
            state(&md(3, 2), Some(&deployment(5, 5, 1, [1, 1, 1, 1]))),
            Rollout::Waiting(_)
        ));
        assert!(matches!(
            state(&md(3, 3), Some(&deployment(5, 4, 1, [1, 1, 1, 1]))),
            Rollout::Waiting(_)
        ));
        let surge = state(&md(3, 3), Some(&deployment(5, 5, 1, [2, 1, 1, 1])));
        assert!(matches!(surge, Rollout::Waiting(_)), "old pods still run");
        assert_eq!(
            state(&md(3, 3), Some(&deployment(5, 5, 2, [2, 1, 2, 1]))),
            Rollout::Waiting("1 of 2 replicas updated, 1 available".into())
        );
        assert!(matches!(state(&md(3, 3), None), Rollout::Waiting(_)));
        assert!(matches!(
            state(&md(3, 3), Some(&deployment(5, 5, 0, [0; 4]))),
            Rollout::Waiting(_)
        ));
    }
}
