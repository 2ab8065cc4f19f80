//! PersistentVolumeClaim binding on the local node: there is no storage provisioner, so every
//! claim is bound at once to a volume named after it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimStatus};

/// How to bind a claim: the volume to write to `spec.volumeName` and the claim's new status.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// `spec.volumeName`: the one the claim names already, else `pvc-<uid>`.
    pub volume_name: String,
    /// The claim's status: phase `Bound`, the requested access modes, and a capacity of the
    /// requested storage.
    pub status: PersistentVolumeClaimStatus,
}

/// Binds a claim that is not `Bound` yet; `None` when it is (or, as never happens to a stored
/// claim, when it has no uid to name its volume after). A `volumeName` the claim already has is
/// kept, as the API server refuses to change it.
pub fn bind(pvc: &PersistentVolumeClaim) -> Option<Binding> {
    let status = pvc.status.clone().unwrap_or_default();
    if status.phase.as_deref() == Some("Bound") {
        return None;
    }
    let spec = pvc.spec.clone().unwrap_or_default();
    let volume_name = match spec.volume_name.filter(|name| !name.is_empty()) {
        Some(name) => name,
        None => format!("pvc-{}", pvc.metadata.uid.as_deref().filter(|uid| !uid.is_empty())?),
    };
    let capacity: BTreeMap<_, _> = spec
        .resources
        .and_then(|r| r.requests)
        .and_then(|mut requests| requests.remove("storage"))
        .map(|storage| ("storage".to_owned(), storage))
        .into_iter()
        .collect();
    let status = PersistentVolumeClaimStatus {
        phase: Some("Bound".into()),
        access_modes: spec.access_modes,
        capacity: (!capacity.is_empty()).then_some(capacity),
        ..status
    };
    Some(Binding { volume_name, status })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, VolumeResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn claim(volume_name: Option<&str>, phase: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".into()),
                uid: Some("3f2a".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_owned(), Quantity("5Gi".into()))].into()),
                    limits: None,
                }),
                volume_name: volume_name.map(Into::into),
                ..PersistentVolumeClaimSpec::default()
            }),
            status: phase.map(|p| PersistentVolumeClaimStatus {
                phase: Some(p.into()),
                ..PersistentVolumeClaimStatus::default()
            }),
        }
    }

    #[test]
    fn a_pending_claim_is_bound_with_what_it_asked_for() {
        let binding = bind(&claim(None, Some("Pending"))).expect("a pending claim binds");
        assert_eq!(binding.volume_name, "pvc-3f2a");
        assert_eq!(binding.status.phase.as_deref(), Some("Bound"));
        assert_eq!(binding.status.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
        let capacity = binding.status.capacity.expect("capacity is reported");
        assert_eq!(capacity.get("storage"), Some(&Quantity("5Gi".into())));
        assert_eq!(capacity.len(), 1);
        // A claim without any status yet binds the same way.
        assert_eq!(bind(&claim(None, None)).map(|b| b.volume_name).as_deref(), Some("pvc-3f2a"));
    }

    #[test]
    fn a_bound_claim_is_left_alone() {
        assert_eq!(bind(&claim(Some("pvc-3f2a"), Some("Bound"))), None);
    }

    #[test]
    fn a_volume_the_claim_names_is_kept() {
        let binding = bind(&claim(Some("my-volume"), Some("Pending"))).expect("binds");
        assert_eq!(binding.volume_name, "my-volume");
    }
}
