//! ModelCache: its children (volume claim, download Job, per-node syncer DaemonSet) and status.
//!
//! - `SharedPVC`: a claim `<cache>` (unless `existingClaimName` names one) and, with a `source`,
//!   a Job `<cache>-downloader` that fills `/models/<modelPath>` on it.
//! - `Memory` and `NodeLocal`: a DaemonSet `<cache>-ram-syncer` whose pod on every targeted node
//!   fills a host directory (RAM-backed `/dev/shm/keelson/<cache>` or on-disk
//!   `/var/lib/keelson/models/<cache>`), either by copying from `existingClaimName` or by
//!   downloading `source`, and is ready once the copy is complete.
//!
//! Values from the spec reach the shell scripts only as environment variables; the scripts
//! themselves are constants.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, DaemonSetStatus};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ExecAction, HostPathVolumeSource, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SecretKeySelector, Toleration, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use keelson_api_crds::conditions::{self, READY, REASON_INVALID_SPEC, Status, Update};
use keelson_api_crds::serving::{ModelCache, ModelCachePhase, ModelCacheStatus, StorageStrategy};

use crate::serving::settings::{labels, owner_reference};

const KIND: &str = "ModelCache";

/// `app.kubernetes.io/name` of a cache's volume claim.
const CLAIM_LABEL: &str = "modelcache";
/// `app.kubernetes.io/name` of a cache's download Job.
const DOWNLOADER_LABEL: &str = "modelcache-downloader";
/// `app.kubernetes.io/name` of a cache's syncer DaemonSet, for both node strategies (the spec
/// names both DaemonSets `-ram-syncer`; one label keeps the immutable selector stable when the
/// strategy changes).
pub const SYNCER_COMPONENT: &str = "modelcache-ram-syncer";

/// Where the download Job mounts the cache's claim.
pub const MOUNT_PATH: &str = "/models";
/// Where a syncer mounts `existingClaimName`, read-only.
const SOURCE_MOUNT_PATH: &str = "/source";
/// Host directory of the `Memory` strategy (tmpfs).
pub const MEMORY_BASE: &str = "/dev/shm/keelson";
/// Host directory of the `NodeLocal` strategy.
pub const NODE_LOCAL_BASE: &str = "/var/lib/keelson/models";
/// File written into a model directory once it is complete; downloads and syncs skip work
/// when it exists, and a syncer pod is ready only when it exists (the copy script spells it
/// out too).
pub const MARKER: &str = ".keelson-synced";
/// Hugging Face's git host, which MLC models are cloned from.
const HUGGING_FACE_URL: &str = "https://huggingface.co";

const MLC_IMAGE: &str = "debian:bookworm-slim";
const HUGGING_FACE_IMAGE: &str = "python:3.10-slim";
const OCI_IMAGE: &str = "ghcr.io/oras-project/oras:v1.2.2";
const COPY_IMAGE: &str = "alpine:3.20";

/// Secret key holding the Hugging Face token.
const HF_TOKEN_KEY: &str = "HF_TOKEN";
/// Retries of a failed download Job.
const DOWNLOAD_BACKOFF_LIMIT: i32 = 3;

/// What a cache downloads, parsed from `spec.source`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// An MLC-compiled model, cloned with git-lfs from Hugging Face: the repository id.
    Mlc(String),
    /// A Hugging Face model, fetched with `snapshot_download`: the repository id.
    HuggingFace(String),
    /// An OCI artifact pulled with `oras`: the reference (`registry/repo:tag` or `@sha256:…`).
    Oci(String),
}

impl Source {
    /// Parses `huggingface://`, `hf://`, `HF://`, `mlc://`, `oci://`, `oras://` or a bare
    /// Hugging Face id. Hugging Face ids under `mlc-ai/` or containing `-MLC` are MLC models.
    pub fn parse(source: &str) -> Option<Source> {
        let (scheme, id) = match source.split_once("://") {
            Some((scheme, id)) => (Some(scheme), id),
            None => (None, source),
        };
        if !is_safe_reference(id) {
            return None;
        }
        let id = id.to_owned();
        match scheme {
            Some("mlc") => Some(Source::Mlc(id)),
            Some("oci" | "oras") => Some(Source::Oci(id)),
            None | Some("huggingface" | "hf" | "HF") if is_mlc_id(&id) => Some(Source::Mlc(id)),
            None | Some("huggingface" | "hf" | "HF") => Some(Source::HuggingFace(id)),
            Some(_) => None,
        }
    }
}

/// Whether a Hugging Face id names an MLC-compiled model.
fn is_mlc_id(id: &str) -> bool {
    id.starts_with("mlc-ai/") || id.contains("-MLC")
}

/// A reference that starts with a letter or digit (so no tool reads it as an option) and uses
/// only the characters of repository ids, tags and digests.
fn is_safe_reference(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
}

/// Why a cache's spec cannot be acted on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidCache {
    /// `source` is not a form this controller can download.
    #[error(
        "source {0:?} is not a Hugging Face id or a huggingface://, hf://, mlc://, oci:// or oras:// reference"
    )]
    Source(String),
    /// `modelPath` is not a relative path of plain segments.
    #[error(
        "modelPath {0:?} must be '/'-separated segments of letters, digits, '.', '_' and '-', none of them '.' or '..'"
    )]
    ModelPath(String),
    /// Neither `source` nor `existingClaimName` is set.
    #[error("set source to download from, or existingClaimName to copy from an existing claim")]
    NothingToCache,
}

/// Checks what the builders rely on: a parseable `source`, a plain relative `modelPath`, and
/// something to cache. The CRD schema checks most of it; this guards objects that bypassed it.
pub fn validate(cache: &ModelCache) -> Result<(), InvalidCache> {
    let spec = &cache.spec;
    if let Some(source) = &spec.source
        && Source::parse(source).is_none()
    {
        return Err(InvalidCache::Source(source.clone()));
    }
    if let Some(path) = &spec.model_path
        && !is_plain_relative_path(path)
    {
        return Err(InvalidCache::ModelPath(path.clone()));
    }
    if spec.source.is_none() && spec.existing_claim_name.is_none() {
        return Err(InvalidCache::NothingToCache);
    }
    Ok(())
}

/// Whether `path` is `/`-separated segments of `[A-Za-z0-9._-]`, none empty, `.` or `..`.
fn is_plain_relative_path(path: &str) -> bool {
    path.split('/').all(|segment| {
        !matches!(segment, "" | "." | "..")
            && segment.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    })
}

fn cache_name(cache: &ModelCache) -> &str {
    cache.metadata.name.as_deref().unwrap_or_default()
}

/// The model directory inside the cache: `spec.modelPath`, or the cache name.
pub fn model_path(cache: &ModelCache) -> &str {
    cache.spec.model_path.as_deref().unwrap_or(cache_name(cache))
}

/// The claim a `SharedPVC` cache lives on: `existingClaimName`, or the cache name.
pub fn claim_name(cache: &ModelCache) -> Option<String> {
    if cache.spec.storage_strategy != StorageStrategy::SharedPVC {
        return None;
    }
    Some(cache.spec.existing_claim_name.clone().unwrap_or_else(|| cache_name(cache).to_owned()))
}

/// Name of the download Job: `<cache>-downloader`.
pub fn download_job_name(cache: &ModelCache) -> String {
    format!("{}-downloader", cache_name(cache))
}

/// Name of the syncer DaemonSet: `<cache>-ram-syncer` (the spec's name for both strategies).
pub fn syncer_name(cache: &ModelCache) -> String {
    format!("{}-ram-syncer", cache_name(cache))
}

/// The host directory a `Memory` or `NodeLocal` cache fills on every targeted node.
pub fn host_path(cache: &ModelCache) -> Option<String> {
    let base = match cache.spec.storage_strategy {
        StorageStrategy::SharedPVC => return None,
        StorageStrategy::Memory => MEMORY_BASE,
        StorageStrategy::NodeLocal => NODE_LOCAL_BASE,
    };
    Some(format!("{base}/{}", cache_name(cache)))
}

fn child_meta(cache: &ModelCache, name: String, kind_name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: cache.metadata.namespace.clone(),
        labels: Some(labels(kind_name, cache_name(cache))),
        owner_references: Some(vec![owner_reference(KIND, &cache.metadata)]),
        ..ObjectMeta::default()
    }
}

/// The claim a `SharedPVC` cache creates: `<cache>`, ReadWriteMany, `spec.size`, the spec's
/// storage class. None for the other strategies or when `existingClaimName` is set.
///
/// It does not depend on the rest of the spec being valid, so a mistyped `source` never makes
/// the reconciler prune a claim full of weights.
pub fn claim(cache: &ModelCache) -> Option<PersistentVolumeClaim> {
    if cache.spec.storage_strategy != StorageStrategy::SharedPVC
        || cache.spec.existing_claim_name.is_some()
    {
        return None;
    }
    Some(PersistentVolumeClaim {
        metadata: child_meta(cache, cache_name(cache).to_owned(), CLAIM_LABEL),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteMany".to_owned()]),
            storage_class_name: cache.spec.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(cache.spec.size.clone()),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    })
}

/// The Job that downloads a `SharedPVC` cache's `source` into `/models/<modelPath>` on its
/// claim, skipping the download when the model is already there. None for the other
/// strategies, without a source, or for an invalid spec.
pub fn download_job(cache: &ModelCache) -> Option<Job> {
    let claim = claim_name(cache)?;
    let source = parsed_source(cache)?;
    let target = format!("{MOUNT_PATH}/{}", model_path(cache));
    let mut env = target_env(&target);
    env.extend(source_env(&source, cache));
    let container = Container {
        name: "downloader".to_owned(),
        image: Some(source_image(&source).to_owned()),
        command: Some(shell(&[FETCH_HEADER, fetch_function(&source), DOWNLOAD_ONCE])),
        env: Some(env),
        volume_mounts: Some(vec![VolumeMount {
            name: "model-cache".to_owned(),
            mount_path: MOUNT_PATH.to_owned(),
            ..VolumeMount::default()
        }]),
        resources: Some(resources("512Mi", "2Gi")),
        ..Container::default()
    };
    let volume = Volume {
        name: "model-cache".to_owned(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim,
            read_only: None,
        }),
        ..Volume::default()
    };
    let meta = child_meta(cache, download_job_name(cache), DOWNLOADER_LABEL);
    Some(Job {
        spec: Some(JobSpec {
            backoff_limit: Some(DOWNLOAD_BACKOFF_LIMIT),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: meta.labels.clone(),
                    annotations: Some(simulated_on_local_node()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("OnFailure".to_owned()),
                    containers: vec![container],
                    volumes: Some(vec![volume]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        metadata: meta,
        status: None,
    })
}

/// The source of a valid cache, if it has one.
fn parsed_source(cache: &ModelCache) -> Option<Source> {
    validate(cache).ok()?;
    Source::parse(cache.spec.source.as_deref()?)
}

/// The per-node syncer of a `Memory` or `NodeLocal` cache: on every node matching
/// `spec.nodeSelector` (all nodes when it is empty) it fills the cache's host directory, by
/// copying from `existingClaimName` (kept in sync every 300 s) or by downloading `source`,
/// then stays up; it is ready once the directory holds the [`MARKER`]. None for `SharedPVC`
/// or an invalid spec.
pub fn syncer(cache: &ModelCache) -> Option<DaemonSet> {
    validate(cache).ok()?;
    let target = host_path(cache)?;
    let base = match cache.spec.storage_strategy {
        StorageStrategy::Memory => MEMORY_BASE,
        _ => NODE_LOCAL_BASE,
    };
    let mut volumes = vec![Volume {
        name: "model-cache".to_owned(),
        host_path: Some(HostPathVolumeSource {
            path: base.to_owned(),
            type_: Some("DirectoryOrCreate".to_owned()),
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![VolumeMount {
        name: "model-cache".to_owned(),
        mount_path: base.to_owned(),
        ..VolumeMount::default()
    }];
    let mut env = target_env(&target);
    let (image, script) = match (&cache.spec.existing_claim_name, parsed_source(cache)) {
        (Some(claim), _) => {
            volumes.push(Volume {
                name: "source".to_owned(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.clone(),
                    read_only: Some(true),
                }),
                ..Volume::default()
            });
            mounts.push(VolumeMount {
                name: "source".to_owned(),
                mount_path: SOURCE_MOUNT_PATH.to_owned(),
                read_only: Some(true),
                ..VolumeMount::default()
            });
            env.push(plain_env("SOURCE", &copy_source_dir(cache)));
            (COPY_IMAGE, shell(&[COPY_AND_WATCH]))
        }
        (None, Some(source)) => {
            env.extend(source_env(&source, cache));
            (
                source_image(&source),
                shell(&[FETCH_HEADER, fetch_function(&source), DOWNLOAD_AND_STAY]),
            )
        }
        (None, None) => return None,
    };
    let copying = cache.spec.existing_claim_name.is_some();
    let container = Container {
        name: "syncer".to_owned(),
        image: Some(image.to_owned()),
        command: Some(script),
        env: Some(env),
        volume_mounts: Some(mounts),
        readiness_probe: Some(marker_probe(&target)),
        resources: Some(syncer_resources(cache.spec.storage_strategy, copying)),
        ..Container::default()
    };
    let meta = child_meta(cache, syncer_name(cache), SYNCER_COMPONENT);
    let selector = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), SYNCER_COMPONENT.to_owned()),
        ("app.kubernetes.io/instance".to_owned(), cache_name(cache).to_owned()),
    ]);
    let node_selector = &cache.spec.node_selector;
    Some(DaemonSet {
        spec: Some(DaemonSetSpec {
            selector: LabelSelector { match_labels: Some(selector), match_expressions: None },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: meta.labels.clone(), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    node_selector: (!node_selector.is_empty()).then(|| node_selector.clone()),
                    tolerations: Some(gpu_tolerations()),
                    containers: vec![container],
                    volumes: Some(volumes),
                    ..PodSpec::default()
                }),
            },
            ..DaemonSetSpec::default()
        }),
        metadata: meta,
        status: None,
    })
}

/// The directory a copying syncer reads: `/source/<modelPath>`, or the claim's root when
/// `modelPath` is unset.
fn copy_source_dir(cache: &ModelCache) -> String {
    match &cache.spec.model_path {
        Some(path) => format!("{SOURCE_MOUNT_PATH}/{path}"),
        None => SOURCE_MOUNT_PATH.to_owned(),
    }
}

/// Tolerations that let a syncer onto GPU nodes tainted by the NVIDIA or AMD device plugins.
fn gpu_tolerations() -> Vec<Toleration> {
    ["nvidia.com/gpu", "amd.com/gpu"]
        .into_iter()
        .map(|key| Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some("NoSchedule".to_owned()),
            ..Toleration::default()
        })
        .collect()
}

/// A syncer's resources: 1Gi/12Gi when it copies from a claim or writes to tmpfs (whose pages
/// count against the pod's memory limit), 512Mi/2Gi otherwise.
fn syncer_resources(strategy: StorageStrategy, copying: bool) -> ResourceRequirements {
    if copying || strategy == StorageStrategy::Memory {
        resources("1Gi", "12Gi")
    } else {
        resources("512Mi", "2Gi")
    }
}

/// Requests 100m CPU and `memory_request`; limits memory to `memory_limit`.
fn resources(memory_request: &str, memory_limit: &str) -> ResourceRequirements {
    let quantity = |value: &str| Quantity(value.to_owned());
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), quantity("100m")),
            ("memory".to_owned(), quantity(memory_request)),
        ])),
        limits: Some(BTreeMap::from([("memory".to_owned(), quantity(memory_limit))])),
        claims: None,
    }
}

/// Ready once `<target>/.keelson-synced` exists (no shell: the path is one argument).
fn marker_probe(target: &str) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec!["test".to_owned(), "-f".to_owned(), format!("{target}/{MARKER}")]),
        }),
        initial_delay_seconds: Some(5),
        period_seconds: Some(10),
        ..Probe::default()
    }
}

fn source_image(source: &Source) -> &'static str {
    match source {
        Source::Mlc(_) => MLC_IMAGE,
        Source::HuggingFace(_) => HUGGING_FACE_IMAGE,
        Source::Oci(_) => OCI_IMAGE,
    }
}

fn plain_env(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.to_owned(), value: Some(value.to_owned()), value_from: None }
}

/// `TARGET` (the model directory) and `MARKER` (its completion marker).
fn target_env(target: &str) -> Vec<EnvVar> {
    vec![plain_env("TARGET", target), plain_env("MARKER", &format!("{target}/{MARKER}"))]
}

/// What a fetch script needs to know about its source.
fn source_env(source: &Source, cache: &ModelCache) -> Vec<EnvVar> {
    match source {
        Source::Mlc(id) => vec![plain_env("REPO_URL", &format!("{HUGGING_FACE_URL}/{id}"))],
        Source::Oci(reference) => vec![plain_env("OCI_REF", reference)],
        Source::HuggingFace(id) => {
            let mut env =
                vec![plain_env("MODEL_ID", id), plain_env("HF_HUB_ENABLE_HF_TRANSFER", "0")];
            env.extend(cache.spec.secret_ref.as_deref().map(hf_token_env));
            env
        }
    }
}

/// `HF_TOKEN` from key `HF_TOKEN` of `secret`, optional so public models need no secret.
fn hf_token_env(secret: &str) -> EnvVar {
    EnvVar {
        name: HF_TOKEN_KEY.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_owned(),
                key: HF_TOKEN_KEY.to_owned(),
                optional: Some(true),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// `sh -c` with the concatenated script parts.
fn shell(parts: &[&str]) -> Vec<String> {
    vec!["/bin/sh".to_owned(), "-c".to_owned(), parts.concat()]
}

fn fetch_function(source: &Source) -> &'static str {
    match source {
        Source::Mlc(_) => FETCH_MLC,
        Source::HuggingFace(_) => FETCH_HUGGING_FACE,
        Source::Oci(_) => FETCH_OCI,
    }
}

// The scripts read everything from the environment (`TARGET`, `MARKER`, `SOURCE`, `MODEL_ID`,
// `REPO_URL`, `OCI_REF`, `HF_TOKEN`) and always quote it. They avoid `$(NAME)` forms a kubelet
// would expand.

const FETCH_HEADER: &str = "set -eu\n";

/// The annotation by which `keelson up`'s local node simulates a Job pod instead of running it
/// as a local process: a download would fetch the weights onto the host with the host's own
/// tools (package installs, writes to `/models`), while the serving pods that would read them
/// are simulated anyway. Clusters ignore it.
const RUN_AS_PROCESS: &str = "keelson.dev/run-as-process";

fn simulated_on_local_node() -> BTreeMap<String, String> {
    [(RUN_AS_PROCESS.to_owned(), "false".to_owned())].into()
}

/// `fetch`: a Hugging Face snapshot into `$TARGET`; resumes an interrupted download.
const FETCH_HUGGING_FACE: &str = r#"fetch() {
  pip install --quiet --no-cache-dir --disable-pip-version-check huggingface_hub
  mkdir -p "$TARGET"
  echo "downloading $MODEL_ID into $TARGET"
  python - <<'PY'
import os
from huggingface_hub import snapshot_download
snapshot_download(repo_id=os.environ["MODEL_ID"], local_dir=os.environ["TARGET"])
PY
}
"#;

/// `fetch`: a git-lfs clone of `$REPO_URL` into `$TARGET`. A directory that already holds an
/// `mlc-chat-config.json` and no `.git` was placed there by other means and is kept; a `.git`
/// without the marker is an interrupted clone and is started over.
const FETCH_MLC: &str = r#"fetch() {
  if [ -f "$TARGET/mlc-chat-config.json" ] && [ ! -d "$TARGET/.git" ]; then
    echo "an MLC model is already in $TARGET"
    return 0
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends git git-lfs ca-certificates
  git lfs install --skip-repo
  if [ -d "$TARGET/.git" ]; then
    rm -rf "$TARGET"
  fi
  echo "cloning $REPO_URL into $TARGET"
  GIT_LFS_SKIP_SMUDGE=0 git clone --depth 1 "$REPO_URL" "$TARGET"
}
"#;

/// `fetch`: `oras pull` of `$OCI_REF` into `$TARGET`, three attempts.
const FETCH_OCI: &str = r#"fetch() {
  mkdir -p "$TARGET"
  attempt=1
  until oras pull --output "$TARGET" "$OCI_REF"; do
    if [ "$attempt" -ge 3 ]; then
      echo "oras pull failed $attempt times" >&2
      return 1
    fi
    attempt=$((attempt + 1))
    sleep 10
  done
}
"#;

/// The download Job: fetch unless the marker is there, then write it.
const DOWNLOAD_ONCE: &str = r#"if [ -f "$MARKER" ]; then
  echo "model already present in $TARGET"
  exit 0
fi
fetch
touch "$MARKER"
echo "model ready in $TARGET"
"#;

/// A downloading syncer: fetch unless the marker is there, write it, then stay up.
const DOWNLOAD_AND_STAY: &str = r#"trap 'exit 0' TERM INT
if [ ! -f "$MARKER" ]; then
  fetch
  touch "$MARKER"
fi
echo "model ready in $TARGET"
while true; do
  sleep 3600 &
  wait $!
done
"#;

/// A copying syncer: wait for the source (up to 600 s for its marker, then any content), copy
/// it with rsync, write the marker, and re-copy every 300 s when the marker is gone or the
/// source changed since it was written.
const COPY_AND_WATCH: &str = r#"set -eu
trap 'exit 0' TERM INT
apk add --no-cache --quiet rsync
waited=0
while [ ! -f "$SOURCE/.keelson-synced" ] && [ "$waited" -lt 600 ]; do
  echo "waiting for $SOURCE to be complete ($waited s)"
  sleep 5
  waited=$((waited + 5))
done
if [ -z "$(ls -A "$SOURCE" 2>/dev/null)" ]; then
  echo "no model found in $SOURCE" >&2
  exit 1
fi
sync_copy() {
  rm -f "$MARKER"
  mkdir -p "$TARGET"
  echo "copying $SOURCE to $TARGET"
  rsync -a --delete --exclude .keelson-synced "$SOURCE/" "$TARGET/"
  touch "$MARKER"
  echo "model ready in $TARGET"
}
if [ ! -f "$MARKER" ]; then
  sync_copy
fi
while true; do
  sleep 300 &
  wait $!
  if [ ! -f "$MARKER" ] || [ -n "$(find "$SOURCE" -newer "$MARKER" | head -n 1)" ]; then
    sync_copy
  fi
done
"#;

/// Reason of `Ready` for a `SharedPVC` cache on an existing claim with nothing to download.
pub const REASON_EXISTING_CLAIM: &str = "ExistingClaim";
/// Reason of `Ready`: the download Job completed.
pub const REASON_DOWNLOADED: &str = "Downloaded";
/// Reason of `Ready`: the download Job is missing or running.
pub const REASON_DOWNLOADING: &str = "Downloading";
/// Reason of `Ready`: the download Job failed.
pub const REASON_DOWNLOAD_FAILED: &str = "DownloadFailed";
/// Reason of `Ready`: every targeted node holds the model.
pub const REASON_SYNCED: &str = "Synced";
/// Reason of `Ready`: the syncer is missing or some nodes are still copying.
pub const REASON_SYNCING: &str = "Syncing";
/// Reason of `Ready`: no node matches the syncer's node selector.
pub const REASON_NO_NODES: &str = "NoNodes";

/// What the children say about the cache, before it becomes a status.
struct Observation {
    phase: ModelCachePhase,
    reason: &'static str,
    message: String,
    ready_nodes: i32,
    total_nodes: i32,
}

impl Observation {
    fn new(phase: ModelCachePhase, reason: &'static str, message: String) -> Self {
        Observation { phase, reason, message, ready_nodes: 0, total_nodes: 0 }
    }
}

/// The cache's status from its download Job (SharedPVC) or syncer DaemonSet (Memory,
/// NodeLocal) as read from the cluster, keeping the existing conditions' transition times;
/// `now` dates a `Ready` condition whose status changes.
pub fn status(
    cache: &ModelCache,
    job: Option<&Job>,
    syncer: Option<&DaemonSet>,
    now: Timestamp,
) -> ModelCacheStatus {
    let observation = match validate(cache) {
        Err(invalid) => {
            Observation::new(ModelCachePhase::Failed, REASON_INVALID_SPEC, invalid.to_string())
        }
        Ok(()) if cache.spec.storage_strategy == StorageStrategy::SharedPVC => {
            observe_download(cache, job)
        }
        Ok(()) => observe_syncer(cache, syncer),
    };
    let mut status = cache.status.clone().unwrap_or_default();
    let generation = cache.metadata.generation;
    status.observed.set(
        Update {
            type_: READY,
            status: Status::from(observation.phase == ModelCachePhase::Ready),
            reason: observation.reason,
            message: &observation.message,
        },
        generation,
        now,
    );
    status.observed.observed_generation = generation;
    status.phase = Some(observation.phase);
    status.path = status_path(cache);
    status.ready_nodes = observation.ready_nodes;
    status.total_nodes = observation.total_nodes;
    status
}

/// `<claim>:<modelPath>` for SharedPVC, the host directory otherwise.
fn status_path(cache: &ModelCache) -> Option<String> {
    match claim_name(cache) {
        Some(claim) => Some(format!("{claim}:{}", model_path(cache))),
        None => host_path(cache),
    }
}

fn observe_download(cache: &ModelCache, job: Option<&Job>) -> Observation {
    use ModelCachePhase::*;
    if cache.spec.source.is_none() {
        let message =
            format!("the model is read from claim {}", claim_name(cache).unwrap_or_default());
        return Observation::new(Ready, REASON_EXISTING_CLAIM, message);
    }
    let name = download_job_name(cache);
    let Some(job) = job else {
        return Observation::new(
            Pending,
            REASON_DOWNLOADING,
            format!("creating download job {name}"),
        );
    };
    let job_conditions = job.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let true_condition =
        |type_: &str| job_conditions.iter().find(|c| c.type_ == type_ && c.status == "True");
    if true_condition("Complete").is_some() {
        return Observation::new(
            Ready,
            REASON_DOWNLOADED,
            format!("download job {name} completed"),
        );
    }
    if let Some(failed) = true_condition("Failed") {
        let detail = failed.message.as_deref().or(failed.reason.as_deref()).unwrap_or("failed");
        return Observation::new(
            Failed,
            REASON_DOWNLOAD_FAILED,
            format!("download job {name} failed: {detail}"),
        );
    }
    let failures = job.status.as_ref().and_then(|s| s.failed).unwrap_or(0);
    let message = match failures {
        0 => format!("download job {name} is running"),
        n => format!("download job {name} is running after {n} failed attempt(s)"),
    };
    Observation::new(Provisioning, REASON_DOWNLOADING, message)
}

fn observe_syncer(cache: &ModelCache, syncer: Option<&DaemonSet>) -> Observation {
    use ModelCachePhase::*;
    let name = syncer_name(cache);
    let Some(ds) = syncer else {
        return Observation::new(Pending, REASON_SYNCING, format!("creating syncer {name}"));
    };
    let Some(ds_status) = ds.status.as_ref().filter(|s| is_current(ds, s)) else {
        return Observation::new(
            Provisioning,
            REASON_SYNCING,
            format!("syncer {name} is rolling out"),
        );
    };
    let total = ds_status.desired_number_scheduled;
    let ready = ds_status.number_ready;
    let updated = ds_status.updated_number_scheduled.unwrap_or(0);
    let mut observation = if total == 0 {
        let message = format!("no node matches the node selector of syncer {name}");
        Observation::new(Provisioning, REASON_NO_NODES, message)
    } else if ready == total && updated == total {
        Observation::new(Ready, REASON_SYNCED, format!("{ready}/{total} nodes hold the model"))
    } else {
        Observation::new(
            Provisioning,
            REASON_SYNCING,
            format!("{ready}/{total} nodes hold the model"),
        )
    };
    observation.ready_nodes = ready;
    observation.total_nodes = total;
    observation
}

/// Whether a DaemonSet's status describes its current spec.
fn is_current(ds: &DaemonSet, status: &DaemonSetStatus) -> bool {
    status.observed_generation.unwrap_or(0) >= ds.metadata.generation.unwrap_or(0)
}

/// The event to record when the phase changed from `previous`: `CacheReady` or
/// `CacheFailed` with the `Ready` condition's message; none otherwise.
pub fn phase_event(
    previous: Option<ModelCachePhase>,
    status: &ModelCacheStatus,
) -> Option<(&'static str, String)> {
    if status.phase == previous {
        return None;
    }
    let reason = match status.phase? {
        ModelCachePhase::Ready => "CacheReady",
        ModelCachePhase::Failed => "CacheFailed",
        ModelCachePhase::Pending | ModelCachePhase::Provisioning => return None,
    };
    let message = conditions::find(&status.observed.conditions, READY)
        .map(|c| c.message.clone())
        .unwrap_or_default();
    Some((reason, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};

    fn cache(yaml: &str) -> ModelCache {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    const HF_SHARED: &str = "
apiVersion: serving.keelson.dev/v1alpha1
kind: ModelCache
metadata: {name: qwen, namespace: ml, uid: u-1, generation: 2}
spec:
  source: hf://Qwen/Qwen2.5-7B-Instruct
  storageClassName: nfs
  secretRef: hf-token
";

    const MEMORY_FROM_CLAIM: &str = "
apiVersion: serving.keelson.dev/v1alpha1
kind: ModelCache
metadata: {name: qwen-ram, namespace: ml, uid: u-2, generation: 1}
spec:
  storageStrategy: Memory
  existingClaimName: qwen
  modelPath: Qwen2.5-7B-Instruct
";

    fn job_container(job: &Job) -> &Container {
        &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0]
    }

    fn ds_pod(ds: &DaemonSet) -> &PodSpec {
        ds.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
    }

    fn env<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
        c.env.as_ref().unwrap().iter().find(|e| e.name == name)
    }

    fn env_value<'a>(c: &'a Container, name: &str) -> &'a str {
        env(c, name).and_then(|e| e.value.as_deref()).unwrap()
    }

    fn script(c: &Container) -> &str {
        &c.command.as_ref().unwrap()[2]
    }

    fn quantity<'a>(list: &'a Option<BTreeMap<String, Quantity>>, key: &str) -> &'a str {
        &list.as_ref().unwrap()[key].0
    }

    #[test]
    fn sources_are_classified_as_the_reference_does() {
        let mlc = |id: &str| Some(Source::Mlc(id.to_owned()));
        let hf = |id: &str| Some(Source::HuggingFace(id.to_owned()));
        let oci = |id: &str| Some(Source::Oci(id.to_owned()));
        assert_eq!(
            Source::parse("mlc://mlc-ai/Qwen3-8B-q4f16_1-MLC"),
            mlc("mlc-ai/Qwen3-8B-q4f16_1-MLC")
        );
        assert_eq!(Source::parse("HF://mlc-ai/gemma-2b"), mlc("mlc-ai/gemma-2b"));
        assert_eq!(Source::parse("org/Llama-3-8B-q4f16_1-MLC"), mlc("org/Llama-3-8B-q4f16_1-MLC"));
        assert_eq!(Source::parse("huggingface://BAAI/bge-m3"), hf("BAAI/bge-m3"));
        assert_eq!(Source::parse("hf://BAAI/bge-m3"), hf("BAAI/bge-m3"));
        assert_eq!(Source::parse("BAAI/bge-m3"), hf("BAAI/bge-m3"));
        assert_eq!(Source::parse("oci://ghcr.io/acme/m:v1"), oci("ghcr.io/acme/m:v1"));
        assert_eq!(Source::parse("oras://ghcr.io/acme/m:v1"), oci("ghcr.io/acme/m:v1"));
        assert_eq!(Source::parse("s3://bucket/model"), None);
        assert_eq!(Source::parse("oci://--output=/etc"), None);
        assert_eq!(Source::parse("org/model;reboot"), None);
        assert_eq!(Source::parse("hf://"), None);
    }

    #[test]
    fn shared_pvc_cache_gets_a_claim_named_after_it() {
        let c = cache(HF_SHARED);
        let pvc = claim(&c).unwrap();
        assert_eq!(pvc.metadata.name.as_deref(), Some("qwen"));
        assert_eq!(pvc.metadata.namespace.as_deref(), Some("ml"));
        let spec = pvc.spec.unwrap();
        assert_eq!(spec.access_modes, Some(vec!["ReadWriteMany".to_owned()]));
        assert_eq!(spec.storage_class_name.as_deref(), Some("nfs"));
        assert_eq!(quantity(&spec.resources.unwrap().requests, "storage"), "50Gi");
        let labels = pvc.metadata.labels.unwrap();
        assert_eq!(labels["app.kubernetes.io/managed-by"], "keelson");
        assert_eq!(labels["app.kubernetes.io/name"], "modelcache");
        assert_eq!(labels["app.kubernetes.io/instance"], "qwen");
        let owner = &pvc.metadata.owner_references.unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("ModelCache", "u-1"));
        assert_eq!(owner.controller, Some(true));
        assert_eq!(claim_name(&c).as_deref(), Some("qwen"));
    }

    #[test]
    fn download_job_fetches_from_hugging_face_onto_the_claim() {
        let job = download_job(&cache(HF_SHARED)).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("qwen-downloader"));
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.backoff_limit, Some(3));
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("OnFailure"));
        let volume = &pod.volumes.as_ref().unwrap()[0];
        assert_eq!(volume.persistent_volume_claim.as_ref().unwrap().claim_name, "qwen");
        let c = job_container(&job);
        assert_eq!(c.image.as_deref(), Some("python:3.10-slim"));
        assert_eq!(c.volume_mounts.as_ref().unwrap()[0].mount_path, "/models");
        assert_eq!(env_value(c, "TARGET"), "/models/qwen");
        assert_eq!(env_value(c, "MARKER"), "/models/qwen/.keelson-synced");
        assert_eq!(env_value(c, "MODEL_ID"), "Qwen/Qwen2.5-7B-Instruct");
        assert_eq!(env_value(c, "HF_HUB_ENABLE_HF_TRANSFER"), "0");
        let token = env(c, "HF_TOKEN").unwrap().value_from.as_ref().unwrap();
        let key = token.secret_key_ref.as_ref().unwrap();
        assert_eq!(
            (key.name.as_str(), key.key.as_str(), key.optional),
            ("hf-token", "HF_TOKEN", Some(true))
        );
        assert!(script(c).contains("snapshot_download"));
        let resources = c.resources.as_ref().unwrap();
        assert_eq!(quantity(&resources.requests, "cpu"), "100m");
        assert_eq!(quantity(&resources.requests, "memory"), "512Mi");
        assert_eq!(quantity(&resources.limits, "memory"), "2Gi");
    }

    #[test]
    fn spec_values_reach_the_scripts_only_through_the_environment() {
        let yaml = HF_SHARED.replace("Qwen/Qwen2.5-7B-Instruct", "acme/model").to_owned()
            + "  modelPath: weights/model-dir\n";
        let job = download_job(&cache(&yaml)).unwrap();
        let c = job_container(&job);
        assert!(!script(c).contains("acme"));
        assert!(!script(c).contains("weights"));
        assert_eq!(env_value(c, "TARGET"), "/models/weights/model-dir");
    }

    #[test]
    fn mlc_and_oci_sources_use_git_lfs_and_oras() {
        let mlc = cache(
            &HF_SHARED
                .replace("hf://Qwen/Qwen2.5-7B-Instruct", "mlc://mlc-ai/Qwen3-8B-q4f16_1-MLC"),
        );
        let job = download_job(&mlc).unwrap();
        let c = job_container(&job);
        assert_eq!(c.image.as_deref(), Some("debian:bookworm-slim"));
        assert_eq!(env_value(c, "REPO_URL"), "https://huggingface.co/mlc-ai/Qwen3-8B-q4f16_1-MLC");
        assert!(script(c).contains("git clone") && script(c).contains("mlc-chat-config.json"));
        assert!(env(c, "HF_TOKEN").is_none());

        let oci = cache(
            &HF_SHARED.replace("hf://Qwen/Qwen2.5-7B-Instruct", "oci://ghcr.io/acme/qwen:v1"),
        );
        let job = download_job(&oci).unwrap();
        let c = job_container(&job);
        assert_eq!(c.image.as_deref(), Some("ghcr.io/oras-project/oras:v1.2.2"));
        assert_eq!(env_value(c, "OCI_REF"), "ghcr.io/acme/qwen:v1");
        assert!(script(c).contains("oras pull"));
    }

    #[test]
    fn an_existing_claim_without_source_is_ready_at_once() {
        let c = cache(
            "
metadata: {name: shared, namespace: ml}
spec: {existingClaimName: models-nfs, modelPath: llama}
",
        );
        assert!(claim(&c).is_none());
        assert!(download_job(&c).is_none());
        assert!(syncer(&c).is_none());
        assert_eq!(claim_name(&c).as_deref(), Some("models-nfs"));
        let s = status(&c, None, None, at(10));
        assert_eq!(s.phase, Some(ModelCachePhase::Ready));
        assert_eq!(s.path.as_deref(), Some("models-nfs:llama"));
        let ready = conditions::find(&s.observed.conditions, READY).unwrap();
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("True", "ExistingClaim"));
    }

    fn job_with(condition: Option<(&str, &str)>, failed: i32) -> Job {
        Job {
            status: Some(JobStatus {
                failed: Some(failed),
                conditions: condition.map(|(type_, message)| {
                    vec![JobCondition {
                        type_: type_.to_owned(),
                        status: "True".to_owned(),
                        message: Some(message.to_owned()),
                        ..JobCondition::default()
                    }]
                }),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    fn ready_of(s: &ModelCacheStatus) -> (String, String, String) {
        let c = conditions::find(&s.observed.conditions, READY).unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    #[test]
    fn shared_pvc_status_follows_the_download_job() {
        let c = cache(HF_SHARED);
        let s = status(&c, None, None, at(1));
        assert_eq!(s.phase, Some(ModelCachePhase::Pending));
        assert_eq!(ready_of(&s).1, "Downloading");
        assert_eq!(s.observed.observed_generation, Some(2));

        let s = status(&c, Some(&job_with(None, 1)), None, at(2));
        assert_eq!(s.phase, Some(ModelCachePhase::Provisioning));
        assert_eq!(
            ready_of(&s).2,
            "download job qwen-downloader is running after 1 failed attempt(s)"
        );

        let s = status(&c, Some(&job_with(Some(("Complete", "")), 0)), None, at(3));
        assert_eq!(s.phase, Some(ModelCachePhase::Ready));
        assert_eq!(s.path.as_deref(), Some("qwen:qwen"));
        assert_eq!(ready_of(&s).0, "True");
        assert_eq!(ready_of(&s).1, "Downloaded");
        assert_eq!(phase_event(Some(ModelCachePhase::Provisioning), &s).unwrap().0, "CacheReady");
        assert_eq!(phase_event(Some(ModelCachePhase::Ready), &s), None);

        let failed = job_with(Some(("Failed", "Job has reached the specified backoff limit")), 4);
        let s = status(&c, Some(&failed), None, at(4));
        assert_eq!(s.phase, Some(ModelCachePhase::Failed));
        let (ready, reason, message) = ready_of(&s);
        assert_eq!((ready.as_str(), reason.as_str()), ("False", "DownloadFailed"));
        assert!(message.ends_with("backoff limit"));
        assert_eq!(phase_event(Some(ModelCachePhase::Provisioning), &s).unwrap().0, "CacheFailed");
    }

    #[test]
    fn memory_cache_copies_an_existing_claim_into_ram_on_every_node() {
        let ds = syncer(&cache(MEMORY_FROM_CLAIM)).unwrap();
        assert_eq!(ds.metadata.name.as_deref(), Some("qwen-ram-ram-syncer"));
        let pod = ds_pod(&ds);
        assert_eq!(pod.node_selector, None);
        let tolerations: Vec<_> = pod
            .tolerations
            .as_ref()
            .unwrap()
            .iter()
            .map(|t| (t.key.as_deref().unwrap(), t.operator.as_deref().unwrap()))
            .collect();
        assert_eq!(tolerations, [("nvidia.com/gpu", "Exists"), ("amd.com/gpu", "Exists")]);
        let volumes = pod.volumes.as_ref().unwrap();
        let host = volumes[0].host_path.as_ref().unwrap();
        assert_eq!(
            (host.path.as_str(), host.type_.as_deref()),
            ("/dev/shm/keelson", Some("DirectoryOrCreate"))
        );
        let source = volumes[1].persistent_volume_claim.as_ref().unwrap();
        assert_eq!((source.claim_name.as_str(), source.read_only), ("qwen", Some(true)));
        let c = &pod.containers[0];
        assert_eq!(c.name, "syncer");
        assert_eq!(c.image.as_deref(), Some("alpine:3.20"));
        let mounts = c.volume_mounts.as_ref().unwrap();
        assert_eq!((mounts[1].mount_path.as_str(), mounts[1].read_only), ("/source", Some(true)));
        assert_eq!(env_value(c, "SOURCE"), "/source/Qwen2.5-7B-Instruct");
        assert_eq!(env_value(c, "TARGET"), "/dev/shm/keelson/qwen-ram");
        assert!(script(c).contains("rsync -a --delete --exclude .keelson-synced"));
        assert!(script(c).contains("sleep 300"));
        let probe = c.readiness_probe.as_ref().unwrap().exec.as_ref().unwrap();
        assert_eq!(
            probe.command.as_deref().unwrap(),
            ["test", "-f", "/dev/shm/keelson/qwen-ram/.keelson-synced"]
        );
        let resources = c.resources.as_ref().unwrap();
        assert_eq!(quantity(&resources.requests, "memory"), "1Gi");
        assert_eq!(quantity(&resources.limits, "memory"), "12Gi");
        let selector = ds.spec.as_ref().unwrap().selector.match_labels.as_ref().unwrap();
        assert_eq!(selector["app.kubernetes.io/instance"], "qwen-ram");
        assert!(claim(&cache(MEMORY_FROM_CLAIM)).is_none());
        assert!(claim_name(&cache(MEMORY_FROM_CLAIM)).is_none());
    }

    #[test]
    fn node_local_cache_downloads_onto_node_disks_of_the_selected_nodes() {
        let c = cache(
            "
metadata: {name: bge, namespace: ml}
spec:
  source: BAAI/bge-m3
  storageStrategy: NodeLocal
  nodeSelector: {kubernetes.io/hostname: gpu-1}
",
        );
        assert!(download_job(&c).is_none());
        let ds = syncer(&c).unwrap();
        assert_eq!(ds.metadata.name.as_deref(), Some("bge-ram-syncer"));
        let pod = ds_pod(&ds);
        assert_eq!(pod.node_selector.as_ref().unwrap()["kubernetes.io/hostname"], "gpu-1");
        assert_eq!(
            pod.volumes.as_ref().unwrap()[0].host_path.as_ref().unwrap().path,
            "/var/lib/keelson/models"
        );
        let c2 = &pod.containers[0];
        assert_eq!(c2.image.as_deref(), Some("python:3.10-slim"));
        assert_eq!(env_value(c2, "TARGET"), "/var/lib/keelson/models/bge");
        assert!(script(c2).contains("snapshot_download") && script(c2).contains("sleep 3600"));
        let resources = c2.resources.as_ref().unwrap();
        assert_eq!(quantity(&resources.limits, "memory"), "2Gi");
        assert_eq!(
            status(&c, None, None, at(1)).path.as_deref(),
            Some("/var/lib/keelson/models/bge")
        );
    }

    fn ds_with(
        generation: i64,
        observed: i64,
        desired: i32,
        ready: i32,
        updated: i32,
    ) -> DaemonSet {
        DaemonSet {
            metadata: ObjectMeta { generation: Some(generation), ..ObjectMeta::default() },
            status: Some(DaemonSetStatus {
                desired_number_scheduled: desired,
                number_ready: ready,
                updated_number_scheduled: Some(updated),
                observed_generation: Some(observed),
                ..DaemonSetStatus::default()
            }),
            ..DaemonSet::default()
        }
    }

    #[test]
    fn node_strategies_are_ready_when_every_targeted_node_holds_the_model() {
        let c = cache(MEMORY_FROM_CLAIM);
        let s = status(&c, None, Some(&ds_with(1, 1, 0, 0, 0)), at(1));
        assert_eq!(
            (s.phase, ready_of(&s).1.as_str()),
            (Some(ModelCachePhase::Provisioning), "NoNodes")
        );

        let s = status(&c, None, Some(&ds_with(1, 1, 2, 1, 2)), at(2));
        assert_eq!(
            (s.phase, ready_of(&s).1.as_str()),
            (Some(ModelCachePhase::Provisioning), "Syncing")
        );
        assert_eq!((s.ready_nodes, s.total_nodes), (1, 2));

        let s = status(&c, None, Some(&ds_with(1, 1, 2, 2, 2)), at(3));
        assert_eq!((s.phase, ready_of(&s).1.as_str()), (Some(ModelCachePhase::Ready), "Synced"));
        assert_eq!((s.ready_nodes, s.total_nodes), (2, 2));
        assert_eq!(s.path.as_deref(), Some("/dev/shm/keelson/qwen-ram"));

        let stale = status(&c, None, Some(&ds_with(2, 1, 2, 2, 2)), at(4));
        assert_eq!(stale.phase, Some(ModelCachePhase::Provisioning));
        let rolling = status(&c, None, Some(&ds_with(2, 2, 2, 2, 1)), at(4));
        assert_eq!(rolling.phase, Some(ModelCachePhase::Provisioning));
    }

    #[test]
    fn an_unchanged_status_keeps_its_transition_time() {
        let mut c = cache(MEMORY_FROM_CLAIM);
        let ds = ds_with(1, 1, 1, 1, 1);
        c.status = Some(status(&c, None, Some(&ds), at(100)));
        let again = status(&c, None, Some(&ds), at(500));
        assert_eq!(Some(&again), c.status.as_ref());
    }

    #[test]
    fn unsafe_specs_get_no_workloads_and_fail_with_invalid_spec() {
        for yaml in [
            HF_SHARED.to_owned() + "  modelPath: ../../etc\n",
            HF_SHARED.replace("hf://Qwen/Qwen2.5-7B-Instruct", "\"hf://a/b$(reboot)\""),
            "metadata: {name: empty}\nspec: {storageStrategy: Memory}\n".to_owned(),
        ] {
            let c = cache(&yaml);
            assert!(validate(&c).is_err(), "{yaml}");
            assert!(download_job(&c).is_none());
            let s = status(&c, None, None, at(1));
            assert_eq!(s.phase, Some(ModelCachePhase::Failed));
            assert_eq!(ready_of(&s).1, "InvalidSpec");
        }
        let mut memory = cache(MEMORY_FROM_CLAIM);
        memory.spec.model_path = Some("a/./b".to_owned());
        assert!(syncer(&memory).is_none());
        // The claim never depends on the rest of the spec, so a typo does not prune weights.
        assert!(claim(&cache(&(HF_SHARED.to_owned() + "  modelPath: ..\n"))).is_some());
    }

    #[test]
    fn builders_are_deterministic() {
        let c = cache(HF_SHARED);
        let json = |c: &ModelCache| {
            serde_json::to_string(&(claim(c), download_job(c), syncer(&cache(MEMORY_FROM_CLAIM))))
                .unwrap()
        };
        assert_eq!(json(&c), json(&c.clone()));
    }
}
