//! Operator settings of the serving controllers (backend images, gateway annotation prefix,
//! benchmark image) and the labels and owner references every child object carries.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use keelson_api_crds::serving::Backend;

/// API version of the serving kinds, used in owner references.
pub const API_VERSION: &str = "serving.keelson.dev/v1alpha1";

/// Value of the `app.kubernetes.io/managed-by` label on every child object.
pub const MANAGED_BY: &str = "keelson";

const DEFAULT_VLLM_IMAGE: &str = "vllm/vllm-openai:latest";
const DEFAULT_MLC_LLM_IMAGE: &str = "ghcr.io/mlc-ai/mlc-llm:cuda";
const DEFAULT_TEI_IMAGE: &str = "ghcr.io/huggingface/text-embeddings-inference:1.8";
const DEFAULT_TEI_CPU_IMAGE: &str = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.8";
/// The diffusers project's public CUDA image (PyTorch and diffusers). No public image serves
/// the diffusers backend's contract (`MODEL_ID`, `PORT`, `/health`,
/// `/v1/images/generations`) out of the box, so clusters that serve diffusers models set
/// `KEELSON_IMAGE_DIFFUSERS` to an image that does.
const DEFAULT_DIFFUSERS_IMAGE: &str = "huggingface/diffusers-pytorch-cuda:latest";
const DEFAULT_GATEWAY_ANNOTATION_PREFIX: &str = "litellm.keelson.dev";
const DEFAULT_BENCH_COMMAND: &str = "keelson";

/// Settings of the serving controllers; `Default` is the built-in values with no overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Image of the `vllm` backend (`KEELSON_IMAGE_VLLM`).
    pub vllm_image: String,
    /// Image of the `mlc-llm` backend (`KEELSON_IMAGE_MLC_LLM`).
    pub mlc_llm_image: String,
    /// Image of the `tei` backend when a GPU is requested (`KEELSON_IMAGE_TEI`).
    pub tei_image: String,
    /// Image of the `tei` backend without a GPU (`KEELSON_IMAGE_TEI_CPU`).
    pub tei_cpu_image: String,
    /// Image of the `diffusers` backend (`KEELSON_IMAGE_DIFFUSERS`).
    pub diffusers_image: String,
    /// Prefix of the gateway annotations on model Services
    /// (`KEELSON_GATEWAY_ANNOTATION_PREFIX`).
    pub gateway_annotation_prefix: String,
    /// Image of the benchmark Job, which holds the `keelson` binary (`KEELSON_BENCH_IMAGE`).
    pub bench_image: String,
    /// Program the benchmark Job runs (`KEELSON_BENCH_COMMAND`, default `keelson`); the
    /// embedded local node runs it as a local process, so `keelson up` may point it at its
    /// own executable.
    pub bench_command: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self::from_lookup(|_| None)
    }
}

impl Settings {
    /// Settings from a variable lookup; an unset or blank variable keeps the built-in value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |key: &str, default: &str| {
            lookup(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        Self {
            vllm_image: get("KEELSON_IMAGE_VLLM", DEFAULT_VLLM_IMAGE),
            mlc_llm_image: get("KEELSON_IMAGE_MLC_LLM", DEFAULT_MLC_LLM_IMAGE),
            tei_image: get("KEELSON_IMAGE_TEI", DEFAULT_TEI_IMAGE),
            tei_cpu_image: get("KEELSON_IMAGE_TEI_CPU", DEFAULT_TEI_CPU_IMAGE),
            diffusers_image: get("KEELSON_IMAGE_DIFFUSERS", DEFAULT_DIFFUSERS_IMAGE),
            gateway_annotation_prefix: get(
                "KEELSON_GATEWAY_ANNOTATION_PREFIX",
                DEFAULT_GATEWAY_ANNOTATION_PREFIX,
            ),
            bench_image: get("KEELSON_BENCH_IMAGE", &default_bench_image()),
            bench_command: get("KEELSON_BENCH_COMMAND", DEFAULT_BENCH_COMMAND),
        }
    }

    /// Settings from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    /// The image serving `backend`; `gpu` tells whether the pod requests a GPU (only `tei`
    /// has a CPU image).
    pub fn image(&self, backend: Backend, gpu: bool) -> &str {
        match backend {
            Backend::Vllm => &self.vllm_image,
            Backend::MlcLlm => &self.mlc_llm_image,
            Backend::Tei if gpu => &self.tei_image,
            Backend::Tei => &self.tei_cpu_image,
            Backend::Diffusers => &self.diffusers_image,
        }
    }
}

/// The Keelson image of this build's version.
fn default_bench_image() -> String {
    format!("ghcr.io/keelson-dev/keelson:{}", env!("CARGO_PKG_VERSION"))
}

/// A controller owner reference to a serving resource of `kind` (e.g. `ModelDeployment`)
/// described by `meta`; name and uid come from `meta` (empty when absent, as in an object
/// that was never stored).
pub fn owner_reference(kind: &str, meta: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: API_VERSION.to_owned(),
        kind: kind.to_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The labels of every child object: managed by Keelson, `app.kubernetes.io/name` set to
/// `kind_name` (what the child is, e.g. `model-server`), `app.kubernetes.io/instance` set to
/// the parent's name.
pub fn labels(kind_name: &str, instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/managed-by".to_owned(), MANAGED_BY.to_owned()),
        ("app.kubernetes.io/name".to_owned(), kind_name.to_owned()),
        ("app.kubernetes.io/instance".to_owned(), instance.to_owned()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn defaults_are_the_public_images() {
        let s = Settings::default();
        assert_eq!(s.image(Backend::Vllm, true), "vllm/vllm-openai:latest");
        assert_eq!(s.image(Backend::MlcLlm, true), "ghcr.io/mlc-ai/mlc-llm:cuda");
        assert_eq!(
            s.image(Backend::Tei, true),
            "ghcr.io/huggingface/text-embeddings-inference:1.8"
        );
        assert_eq!(
            s.image(Backend::Tei, false),
            "ghcr.io/huggingface/text-embeddings-inference:cpu-1.8"
        );
        assert_eq!(s.image(Backend::Diffusers, true), "huggingface/diffusers-pytorch-cuda:latest");
        assert_eq!(s.gateway_annotation_prefix, "litellm.keelson.dev");
        assert_eq!(
            s.bench_image,
            format!("ghcr.io/keelson-dev/keelson:{}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(s.bench_command, "keelson");
    }

    #[test]
    fn every_setting_can_be_overridden() {
        let s = Settings::from_lookup(lookup(&[
            ("KEELSON_IMAGE_VLLM", "r/vllm:1"),
            ("KEELSON_IMAGE_MLC_LLM", "r/mlc:1"),
            ("KEELSON_IMAGE_TEI", "r/tei:gpu"),
            ("KEELSON_IMAGE_TEI_CPU", "r/tei:cpu"),
            ("KEELSON_IMAGE_DIFFUSERS", "r/diffusers:1"),
            ("KEELSON_GATEWAY_ANNOTATION_PREFIX", "gw.example.com"),
            ("KEELSON_BENCH_IMAGE", "r/keelson:dev"),
            ("KEELSON_BENCH_COMMAND", "/usr/local/bin/keelson"),
        ]));
        assert_eq!(s.image(Backend::Vllm, false), "r/vllm:1");
        assert_eq!(s.image(Backend::MlcLlm, false), "r/mlc:1");
        assert_eq!(s.image(Backend::Tei, true), "r/tei:gpu");
        assert_eq!(s.image(Backend::Tei, false), "r/tei:cpu");
        assert_eq!(s.image(Backend::Diffusers, false), "r/diffusers:1");
        assert_eq!(s.gateway_annotation_prefix, "gw.example.com");
        assert_eq!(s.bench_image, "r/keelson:dev");
        assert_eq!(s.bench_command, "/usr/local/bin/keelson");
    }

    #[test]
    fn blank_values_keep_the_default() {
        let s = Settings::from_lookup(lookup(&[("KEELSON_IMAGE_VLLM", "  "), ("X", "y")]));
        assert_eq!(s, Settings::default());
    }

    #[test]
    fn owner_reference_is_a_blocking_controller_reference() {
        let meta = ObjectMeta {
            name: Some("qwen".into()),
            uid: Some("u-1".into()),
            ..ObjectMeta::default()
        };
        let r = owner_reference("ModelDeployment", &meta);
        assert_eq!(r.api_version, "serving.keelson.dev/v1alpha1");
        assert_eq!(r.kind, "ModelDeployment");
        assert_eq!((r.name.as_str(), r.uid.as_str()), ("qwen", "u-1"));
        assert_eq!((r.controller, r.block_owner_deletion), (Some(true), Some(true)));
    }

    #[test]
    fn common_labels() {
        let l = labels("model-server", "qwen");
        assert_eq!(l["app.kubernetes.io/managed-by"], "keelson");
        assert_eq!(l["app.kubernetes.io/name"], "model-server");
        assert_eq!(l["app.kubernetes.io/instance"], "qwen");
        assert_eq!(l.len(), 3);
    }
}
