//! PersistentVolumes and their claims on the local node, as a cluster's volume controller and a
//! dynamic provisioner handle them. A claim gets the volume it names, or one provisioned for it
//! (`pvc-<uid>`, reclaimed by deletion), and is bound at once; a volume another claim holds is
//! not taken. A volume's phase follows its claim: `Available` while it has none, `Bound`, then,
//! once the claim is gone, `Released` (policy `Retain`) or deleted (policy `Delete`).
//!
//! No storage stands behind these volumes: the local node does not mount volumes into process
//! pods. They are kept so that claims, `kubectl get pv` and tools see what a cluster shows.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeSpec, PersistentVolumeStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The provisioner named on the volumes made for claims, as provisioners annotate theirs.
pub const PROVISIONER: &str = "keelson.dev/local-node";

/// How to bind a claim.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// `spec.volumeName`: the one the claim names already, else `pvc-<uid>`.
    pub volume_name: String,
    /// The claim's status: phase `Bound`, and the volume's access modes and capacity (those
    /// requested, for a volume provisioned for it).
    pub status: PersistentVolumeClaimStatus,
    /// The volume to create for the claim, when no volume of that name exists.
    pub provision: Option<PersistentVolume>,
    /// The claim reference to write on the existing volume, when it has none yet.
    pub claim_ref: Option<ObjectReference>,
}

/// Binds a claim that is not `Bound` yet to `volume`, the stored volume of the name it will
/// have (`None` if there is none). `None` when the claim is bound already, when another claim
/// holds that volume (the claim stays `Pending`, as upstream), or, as never happens to a stored
/// claim, when it has no uid. A `volumeName` the claim already has is kept, as the API server
/// refuses to change it.
pub fn bind(claim: &PersistentVolumeClaim, volume: Option<&PersistentVolume>) -> Option<Binding> {
    let status = claim.status.clone().unwrap_or_default();
    if status.phase.as_deref() == Some("Bound") {
        return None;
    }
    let uid = claim.metadata.uid.as_deref().filter(|uid| !uid.is_empty())?;
    let spec = claim.spec.clone().unwrap_or_default();
    let volume_name = match spec.volume_name.clone().filter(|name| !name.is_empty()) {
        Some(name) => name,
        None => format!("pvc-{uid}"),
    };
    let reference = claim_reference(claim);
    let requested: BTreeMap<_, _> = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|requests| requests.get("storage"))
        .map(|storage| ("storage".to_owned(), storage.clone()))
        .into_iter()
        .collect();
    let (capacity, access_modes, provision, claim_ref) = match volume {
        Some(volume) => {
            let volume_spec = volume.spec.clone().unwrap_or_default();
            match &volume_spec.claim_ref {
                Some(held) if !refers_to(held, claim) => return None,
                held => (
                    volume_spec.capacity.unwrap_or_default(),
                    volume_spec.access_modes,
                    None,
                    held.is_none().then(|| reference.clone()),
                ),
            }
        }
        None => {
            let provisioned = provisioned(claim, &volume_name, &requested, reference);
            (requested, spec.access_modes.clone(), Some(provisioned), None)
        }
    };
    let status = PersistentVolumeClaimStatus {
        phase: Some("Bound".into()),
        access_modes,
        capacity: (!capacity.is_empty()).then_some(capacity),
        ..status
    };
    Some(Binding { volume_name, status, provision, claim_ref })
}

/// A volume made for `claim`, with what it asked for, reclaimed by deletion.
fn provisioned(
    claim: &PersistentVolumeClaim,
    name: &str,
    capacity: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    reference: ObjectReference,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some(
                [("pv.kubernetes.io/provisioned-by".to_owned(), PROVISIONER.to_owned())].into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(capacity.clone()),
            access_modes: spec.access_modes,
            claim_ref: Some(reference),
            persistent_volume_reclaim_policy: Some("Delete".into()),
            storage_class_name: spec.storage_class_name,
            volume_mode: Some(spec.volume_mode.unwrap_or_else(|| "Filesystem".into())),
            ..PersistentVolumeSpec::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Bound".into()),
            ..PersistentVolumeStatus::default()
        }),
    }
}

fn claim_reference(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        name: claim.metadata.name.clone(),
        namespace: claim.metadata.namespace.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: None,
        field_path: None,
    }
}

/// Whether a volume's claim reference names `claim` (its uid too, when it has one).
fn refers_to(reference: &ObjectReference, claim: &PersistentVolumeClaim) -> bool {
    reference.name == claim.metadata.name
        && reference.namespace == claim.metadata.namespace
        && (reference.uid.is_none() || reference.uid == claim.metadata.uid)
}

/// What a volume's controller does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeStep {
    /// Write this phase to the volume's status.
    Phase(&'static str),
    /// Delete the volume: its claim is gone and its policy is `Delete`.
    Delete,
    /// Nothing: the volume is as it should be.
    Nothing,
}

/// The next step for `volume`, given the claim its reference names (`None` if that claim does
/// not exist).
pub fn volume_step(volume: &PersistentVolume, claim: Option<&PersistentVolumeClaim>) -> VolumeStep {
    if volume.metadata.deletion_timestamp.is_some() {
        return VolumeStep::Nothing;
    }
    let spec = volume.spec.clone().unwrap_or_default();
    let phase = volume.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    let wanted = match (&spec.claim_ref, claim) {
        (None, _) => "Available",
        (Some(reference), Some(claim)) if refers_to(reference, claim) => "Bound",
        (Some(_), _) if spec.persistent_volume_reclaim_policy.as_deref() == Some("Delete") => {
            return VolumeStep::Delete;
        }
        (Some(_), _) => "Released",
    };
    if phase == wanted { VolumeStep::Nothing } else { VolumeStep::Phase(wanted) }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, VolumeResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    use super::*;

    fn claim(volume_name: Option<&str>, phase: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".into()),
                namespace: Some("ns".into()),
                uid: Some("3f2a".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_owned(), Quantity("5Gi".into()))].into()),
                    limits: None,
                }),
                storage_class_name: Some("fast".into()),
                volume_name: volume_name.map(Into::into),
                ..PersistentVolumeClaimSpec::default()
            }),
            status: phase.map(|p| PersistentVolumeClaimStatus {
                phase: Some(p.into()),
                ..PersistentVolumeClaimStatus::default()
            }),
        }
    }

    fn volume(claim_ref: Option<(&str, &str)>, policy: &str, phase: &str) -> PersistentVolume {
        PersistentVolume {
            metadata: ObjectMeta { name: Some("pv1".into()), ..ObjectMeta::default() },
            spec: Some(PersistentVolumeSpec {
                capacity: Some([("storage".to_owned(), Quantity("10Gi".into()))].into()),
                access_modes: Some(vec!["ReadWriteMany".into()]),
                claim_ref: claim_ref.map(|(namespace, name)| ObjectReference {
                    name: Some(name.into()),
                    namespace: Some(namespace.into()),
                    ..ObjectReference::default()
                }),
                persistent_volume_reclaim_policy: Some(policy.into()),
                ..PersistentVolumeSpec::default()
            }),
            status: Some(PersistentVolumeStatus {
                phase: Some(phase.into()),
                ..PersistentVolumeStatus::default()
            }),
        }
    }

    #[test]
    fn a_pending_claim_gets_a_volume_provisioned_with_what_it_asked_for() {
        let binding = bind(&claim(None, Some("Pending")), None).expect("a pending claim binds");
        assert_eq!(binding.volume_name, "pvc-3f2a");
        assert_eq!(binding.status.phase.as_deref(), Some("Bound"));
        assert_eq!(binding.status.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
        let capacity = binding.status.capacity.expect("capacity is reported");
        assert_eq!(capacity.get("storage"), Some(&Quantity("5Gi".into())));
        let volume = binding.provision.expect("a volume is provisioned");
        assert_eq!(volume.metadata.name.as_deref(), Some("pvc-3f2a"));
        let spec = volume.spec.unwrap();
        assert_eq!(spec.persistent_volume_reclaim_policy.as_deref(), Some("Delete"));
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        let reference = spec.claim_ref.unwrap();
        assert_eq!(
            (reference.namespace.as_deref(), reference.name.as_deref(), reference.uid.as_deref()),
            (Some("ns"), Some("data"), Some("3f2a"))
        );
        // A claim without any status yet binds the same way.
        let again = bind(&claim(None, None), None).map(|b| b.volume_name);
        assert_eq!(again.as_deref(), Some("pvc-3f2a"));
    }

    #[test]
    fn a_bound_claim_is_left_alone() {
        assert_eq!(bind(&claim(Some("pvc-3f2a"), Some("Bound")), None), None);
    }

    #[test]
    fn a_claim_naming_a_volume_takes_it_unless_another_claim_holds_it() {
        let free = volume(None, "Retain", "Available");
        let binding = bind(&claim(Some("pv1"), Some("Pending")), Some(&free)).expect("binds");
        assert_eq!(binding.volume_name, "pv1");
        assert!(binding.provision.is_none());
        assert_eq!(binding.claim_ref.unwrap().name.as_deref(), Some("data"));
        assert_eq!(binding.status.access_modes, Some(vec!["ReadWriteMany".to_owned()]));
        assert_eq!(binding.status.capacity.unwrap()["storage"], Quantity("10Gi".into()));

        let held = volume(Some(("ns", "other")), "Retain", "Bound");
        assert_eq!(bind(&claim(Some("pv1"), Some("Pending")), Some(&held)), None);
        let ours = volume(Some(("ns", "data")), "Retain", "Available");
        let binding = bind(&claim(Some("pv1"), None), Some(&ours)).expect("pre-bound to it");
        assert!(binding.claim_ref.is_none(), "its reference is already there");
    }

    #[test]
    fn a_volume_follows_its_claim_and_is_reclaimed_by_its_policy() {
        let bound = claim(Some("pv1"), Some("Bound"));
        assert_eq!(volume_step(&volume(None, "Retain", ""), None), VolumeStep::Phase("Available"));
        let claimed = volume(Some(("ns", "data")), "Retain", "Available");
        assert_eq!(volume_step(&claimed, Some(&bound)), VolumeStep::Phase("Bound"));
        let steady = volume(Some(("ns", "data")), "Retain", "Bound");
        assert_eq!(volume_step(&steady, Some(&bound)), VolumeStep::Nothing);
        assert_eq!(volume_step(&steady, None), VolumeStep::Phase("Released"));
        let provisioned = volume(Some(("ns", "data")), "Delete", "Bound");
        assert_eq!(volume_step(&provisioned, None), VolumeStep::Delete);
    }
}
