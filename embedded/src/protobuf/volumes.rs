//! Conversions of a pod's `volumes`: the kinds a pod copied by `kubectl debug --copy-to` commonly
//! carries (`hostPath`, `emptyDir`, `configMap`, `secret`, `projected`, `downwardAPI`,
//! `persistentVolumeClaim`). The storage plugins of clouds and networks are not read: a volume
//! of such a kind fails the decode, naming it.

use k8s_pb::api::core::v1::{
    ClusterTrustBundleProjection, ConfigMapProjection, ConfigMapVolumeSource,
    DownwardAPIProjection, DownwardAPIVolumeFile, DownwardAPIVolumeSource, EmptyDirVolumeSource,
    HostPathVolumeSource, KeyToPath, LocalObjectReference, PersistentVolumeClaimVolumeSource,
    ProjectedVolumeSource, SecretProjection, SecretVolumeSource, ServiceAccountTokenProjection,
    Volume, VolumeProjection, VolumeSource,
};
use serde_json::Value;

use super::core::{field_selector, resource_selector};
use super::fields::{Ctx, Object, item, join};

/// An item of a pod's `volumes`: its name and its source.
pub(crate) fn volume(volume: Volume, ctx: &mut Ctx, path: &str) -> Value {
    let Volume { name, volume_source } = volume;
    let VolumeSource {
        host_path,
        empty_dir,
        gce_persistent_disk,
        aws_elastic_block_store,
        git_repo,
        secret,
        nfs,
        iscsi,
        glusterfs,
        persistent_volume_claim,
        rbd,
        flex_volume,
        cinder,
        cephfs,
        flocker,
        downward_api,
        fc,
        azure_file,
        config_map,
        vsphere_volume,
        quobyte,
        azure_disk,
        photon_persistent_disk,
        projected,
        portworx_volume,
        scale_io,
        storageos,
        csi,
        ephemeral,
        image,
    } = volume_source.unwrap_or_default();
    ctx.unmapped_pointer(path, "gcePersistentDisk", &gce_persistent_disk);
    ctx.unmapped_pointer(path, "awsElasticBlockStore", &aws_elastic_block_store);
    ctx.unmapped_pointer(path, "gitRepo", &git_repo);
    ctx.unmapped_pointer(path, "nfs", &nfs);
    ctx.unmapped_pointer(path, "iscsi", &iscsi);
    ctx.unmapped_pointer(path, "glusterfs", &glusterfs);
    ctx.unmapped_pointer(path, "rbd", &rbd);
    ctx.unmapped_pointer(path, "flexVolume", &flex_volume);
    ctx.unmapped_pointer(path, "cinder", &cinder);
    ctx.unmapped_pointer(path, "cephfs", &cephfs);
    ctx.unmapped_pointer(path, "flocker", &flocker);
    ctx.unmapped_pointer(path, "fc", &fc);
    ctx.unmapped_pointer(path, "azureFile", &azure_file);
    ctx.unmapped_pointer(path, "vsphereVolume", &vsphere_volume);
    ctx.unmapped_pointer(path, "quobyte", &quobyte);
    ctx.unmapped_pointer(path, "azureDisk", &azure_disk);
    ctx.unmapped_pointer(path, "photonPersistentDisk", &photon_persistent_disk);
    ctx.unmapped_pointer(path, "portworxVolume", &portworx_volume);
    ctx.unmapped_pointer(path, "scaleIO", &scale_io);
    ctx.unmapped_pointer(path, "storageos", &storageos);
    ctx.unmapped_pointer(path, "csi", &csi);
    ctx.unmapped_pointer(path, "ephemeral", &ephemeral);
    ctx.unmapped_pointer(path, "image", &image);
    let mut out = Object::default();
    out.always("name", name);
    if let Some(HostPathVolumeSource { path: host, r#type }) = host_path {
        let mut source = Object::default();
        source.always("path", host);
        source.pointer("type", r#type);
        out.put("hostPath", source);
    }
    if let Some(EmptyDirVolumeSource { medium, size_limit }) = empty_dir {
        let mut source = Object::default();
        source.omitempty("medium", medium);
        source.pointer("sizeLimit", size_limit.map(|q| q.string.unwrap_or_default()));
        out.put("emptyDir", source);
    }
    if let Some(source) = config_map {
        out.put("configMap", config_map_volume(source));
    }
    if let Some(source) = secret {
        out.put("secret", secret_volume(source));
    }
    if let Some(source) = projected {
        out.put("projected", projected_volume(source, ctx, &join(path, "projected")));
    }
    if let Some(DownwardAPIVolumeSource { items, default_mode }) = downward_api {
        let mut source = Object::default();
        source.items("items", downward_files(items));
        source.pointer("defaultMode", default_mode);
        out.put("downwardAPI", source);
    }
    if let Some(PersistentVolumeClaimVolumeSource { claim_name, read_only }) =
        persistent_volume_claim
    {
        let mut source = Object::default();
        source.always("claimName", claim_name);
        source.omitempty("readOnly", read_only);
        out.put("persistentVolumeClaim", source);
    }
    out.into()
}

fn config_map_volume(source: ConfigMapVolumeSource) -> Value {
    let ConfigMapVolumeSource { local_object_reference, items, default_mode, optional } = source;
    let mut out = Object::default();
    out.omitempty("name", name_of(local_object_reference));
    out.items("items", keys_to_paths(items));
    out.pointer("defaultMode", default_mode);
    out.pointer("optional", optional);
    out.into()
}

fn secret_volume(source: SecretVolumeSource) -> Value {
    let SecretVolumeSource { secret_name, items, default_mode, optional } = source;
    let mut out = Object::default();
    out.omitempty("secretName", secret_name);
    out.items("items", keys_to_paths(items));
    out.pointer("defaultMode", default_mode);
    out.pointer("optional", optional);
    out.into()
}

/// A `projected` volume: its sources (ServiceAccount tokens, ConfigMaps, Secrets and the
/// downward API, what the token volume a cluster's admission adds is made of) and mode.
fn projected_volume(source: ProjectedVolumeSource, ctx: &mut Ctx, path: &str) -> Value {
    let ProjectedVolumeSource { sources, default_mode } = source;
    let sources: Vec<Value> = sources
        .into_iter()
        .enumerate()
        .map(|(i, projection)| self::projection(projection, ctx, &item(path, "sources", i)))
        .collect();
    let mut out = Object::default();
    // Not `omitempty` in Go: a nil slice is written as `null`.
    out.put("sources", if sources.is_empty() { Value::Null } else { sources.into() });
    out.pointer("defaultMode", default_mode);
    out.into()
}

/// An item of a projected volume's `sources`.
fn projection(projection: VolumeProjection, ctx: &mut Ctx, path: &str) -> Value {
    let VolumeProjection {
        secret,
        downward_api,
        config_map,
        service_account_token,
        cluster_trust_bundle,
        pod_certificate,
    } = projection;
    ctx.unmapped_pointer(path, "podCertificate", &pod_certificate);
    let mut out = Object::default();
    if let Some(SecretProjection { local_object_reference, items, optional }) = secret {
        out.put("secret", object_projection(local_object_reference, items, optional));
    }
    if let Some(DownwardAPIProjection { items }) = downward_api {
        let mut source = Object::default();
        source.items("items", downward_files(items));
        out.put("downwardAPI", source);
    }
    if let Some(ConfigMapProjection { local_object_reference, items, optional }) = config_map {
        out.put("configMap", object_projection(local_object_reference, items, optional));
    }
    if let Some(ServiceAccountTokenProjection { audience, expiration_seconds, path: file }) =
        service_account_token
    {
        let mut source = Object::default();
        source.omitempty("audience", audience);
        source.pointer("expirationSeconds", expiration_seconds);
        source.always("path", file);
        out.put("serviceAccountToken", source);
    }
    if let Some(bundle) = cluster_trust_bundle {
        let path = join(path, "clusterTrustBundle");
        out.put("clusterTrustBundle", trust_bundle(bundle, ctx, &path));
    }
    out.into()
}

/// A ConfigMap or Secret in a projected volume: its name, keys and whether it may be missing.
fn object_projection(
    reference: Option<LocalObjectReference>,
    items: Vec<KeyToPath>,
    optional: Option<bool>,
) -> Value {
    let mut out = Object::default();
    out.omitempty("name", name_of(reference));
    out.items("items", keys_to_paths(items));
    out.pointer("optional", optional);
    out.into()
}

/// A ClusterTrustBundle projection named by name or by signer; a label selector is not read.
fn trust_bundle(bundle: ClusterTrustBundleProjection, ctx: &mut Ctx, path: &str) -> Value {
    let ClusterTrustBundleProjection { name, signer_name, label_selector, optional, path: file } =
        bundle;
    ctx.unmapped_pointer(path, "labelSelector", &label_selector);
    let mut out = Object::default();
    out.pointer("name", name);
    out.pointer("signerName", signer_name);
    out.pointer("optional", optional);
    out.always("path", file);
    out.into()
}

/// The `items` of a ConfigMap or Secret volume: which key goes to which file.
fn keys_to_paths(items: Vec<KeyToPath>) -> Vec<Value> {
    let item = |KeyToPath { key, path, mode }| {
        let mut out = Object::default();
        out.always("key", key);
        out.always("path", path);
        out.pointer("mode", mode);
        Value::from(out)
    };
    items.into_iter().map(item).collect()
}

/// The `items` of a downward-API volume or projection: which field or resource goes to which
/// file.
fn downward_files(items: Vec<DownwardAPIVolumeFile>) -> Vec<Value> {
    let item = |DownwardAPIVolumeFile { path, field_ref, resource_field_ref, mode }| {
        let mut out = Object::default();
        out.always("path", path);
        out.pointer("fieldRef", field_ref.map(field_selector));
        out.pointer("resourceFieldRef", resource_field_ref.map(resource_selector));
        out.pointer("mode", mode);
        Value::from(out)
    };
    items.into_iter().map(item).collect()
}

fn name_of(reference: Option<LocalObjectReference>) -> Option<String> {
    reference.and_then(|reference| reference.name)
}
