//! The reconcilers of PersistentVolumeClaims and PersistentVolumes.

use super::*;

pub(super) async fn reconcile_claim(
    claim: Arc<PersistentVolumeClaim>,
    ctx: Arc<Context>,
) -> Result<Action> {
    if claim.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let volumes: Api<PersistentVolume> = Api::all(ctx.client.clone());
    let named = claim.spec.as_ref().and_then(|s| s.volume_name.clone()).filter(|n| !n.is_empty());
    let uid = uid(&*claim);
    let volume = volumes.get_opt(&named.unwrap_or_else(|| format!("pvc-{uid}"))).await?;
    let Some(binding) = pvc::bind(&claim, volume.as_ref()) else {
        return Ok(Action::await_change());
    };
    if let Some(new) = &binding.provision {
        done_if_exists(volumes.create(&PostParams::default(), new).await)?;
    }
    if let Some(reference) = &binding.claim_ref {
        let patch = json!({ "spec": { "claimRef": reference } });
        volumes.patch(&binding.volume_name, &PatchParams::default(), &Patch::Merge(patch)).await?;
    }
    let api: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &claim.namespace().unwrap_or_default());
    let name = claim.name_any();
    let spec = json!({ "spec": { "volumeName": binding.volume_name } });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(spec)).await?;
    let status = json!({ "status": binding.status });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status)).await?;
    Ok(Action::await_change())
}

pub(super) async fn reconcile_volume(
    volume: Arc<PersistentVolume>,
    ctx: Arc<Context>,
) -> Result<Action> {
    let reference = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let claim = match reference.and_then(|r| Some((r.namespace.as_deref()?, r.name.as_deref()?))) {
        Some((namespace, name)) => {
            Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), namespace)
                .get_opt(name)
                .await?
        }
        None => None,
    };
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    match pvc::volume_step(&volume, claim.as_ref()) {
        pvc::VolumeStep::Phase(phase) => {
            let status = json!({ "status": { "phase": phase } });
            api.patch_status(&volume.name_any(), &PatchParams::default(), &Patch::Merge(status))
                .await?;
        }
        pvc::VolumeStep::Delete => {
            done_if_gone(api.delete(&volume.name_any(), &DeleteParams::default()).await)?;
        }
        pvc::VolumeStep::Nothing => {}
    }
    Ok(Action::await_change())
}
