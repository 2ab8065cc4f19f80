//! The nodes of the local cluster: the `--node` flag, the node config file, the host's own
//! node, and the `Node` objects a kubelet would register for them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;

use super::quantity;
use crate::selectors::{Operator, Requirement};

/// The kubelet version the local nodes report.
pub const KUBELET_VERSION: &str = "v1.33.0-keelson";
/// The annotation marking a node as one of Keelson's local nodes.
pub const LOCAL_NODE_ANNOTATION: &str = "keelson.dev/local-node";
/// The name of the host's node when the host name gives no usable one.
pub const FALLBACK_NODE_NAME: &str = "keelson-node";
/// How many pods a node takes when not told otherwise (the kubelet's `--max-pods` default).
pub const DEFAULT_MAX_PODS: &str = "110";
/// The memory assumed where the host's cannot be read.
const FALLBACK_MEMORY: &str = "8Gi";
/// The root filesystem's size assumed where it cannot be read.
const FALLBACK_STORAGE: &str = "100Gi";
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One node of the local cluster, as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// The node's name (a DNS subdomain).
    pub name: String,
    /// Labels added to the ones every node carries.
    pub labels: BTreeMap<String, String>,
    /// The node's taints.
    pub taints: Vec<Taint>,
    /// Capacity (and allocatable) per resource, defaults filled in.
    pub capacity: BTreeMap<String, Quantity>,
}

/// What is wrong with a node's configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The node name is not a DNS subdomain.
    #[error("invalid node name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong and what would be right.
        reason: String,
    },
    /// One item of a node's configuration is wrong.
    #[error("node {node:?}: invalid {item:?}: {reason}")]
    InvalidItem {
        /// The node's name.
        node: String,
        /// The item, as written.
        item: String,
        /// What is wrong and what would be right.
        reason: String,
    },
    /// Two nodes have the same name.
    #[error("node {0:?} is configured more than once; node names must be unique")]
    DuplicateNode(String),
    /// The config file could not be read.
    #[error("cannot read node config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The config file is not valid YAML of the expected shape.
    #[error("node config file {path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message (with its location).
        message: String,
    },
    /// The config file lists no node.
    #[error("node config file {path} lists no nodes; add at least one entry under `nodes:`")]
    NoNodes {
        /// The file.
        path: PathBuf,
    },
    /// A node in the config file is not valid.
    #[error("node config file {path}: {source}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: Box<ConfigError>,
    },
}

impl NodeConfig {
    /// A node with only the default capacity (the host's cpu and memory, 110 pods).
    fn named(name: &str) -> Result<Self, ConfigError> {
        validate_node_name(name)
            .map_err(|reason| ConfigError::InvalidName { name: name.to_owned(), reason })?;
        Ok(NodeConfig {
            name: name.to_owned(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            capacity: BTreeMap::new(),
        })
    }

    fn invalid(&self, item: &str, reason: String) -> ConfigError {
        ConfigError::InvalidItem { node: self.name.clone(), item: item.to_owned(), reason }
    }

    fn add_capacity(&mut self, resource: &str, value: &str) -> Result<(), String> {
        validate_resource_name(resource)?;
        let milli = quantity::parse(value).map_err(|e| e.to_string())?;
        if milli < 0 {
            return Err(format!("{resource} must not be negative"));
        }
        let countable = resource == "pods" || resource.contains('/');
        if countable && milli % 1000 != 0 {
            return Err(format!("{resource} must be a whole number, e.g. {resource}=2"));
        }
        if self.capacity.insert(resource.to_owned(), Quantity(value.to_owned())).is_some() {
            return Err(format!("{resource} is given more than once"));
        }
        Ok(())
    }

    fn add_label(&mut self, key: &str, value: &str) -> Result<(), String> {
        Requirement::new(key, Operator::Equals, vec![value.to_owned()])
            .map_err(|e| e.to_string())?;
        if self.labels.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(format!("label {key:?} is given more than once"));
        }
        Ok(())
    }

    fn add_taint(&mut self, key: &str, value: Option<&str>, effect: &str) -> Result<(), String> {
        Requirement::new(key, Operator::Equals, vec![value.unwrap_or_default().to_owned()])
            .map_err(|e| e.to_string().replacen("label", "taint", 1))?;
        if !TAINT_EFFECTS.contains(&effect) {
            return Err(format!(
                "unknown taint effect {effect:?}; expected NoSchedule, PreferNoSchedule or NoExecute"
            ));
        }
        if self.taints.iter().any(|t| t.key == key && t.effect == effect) {
            return Err(format!("taint {key}:{effect} is given more than once"));
        }
        self.taints.push(Taint {
            key: key.to_owned(),
            value: value.map(str::to_owned),
            effect: effect.to_owned(),
            time_added: None,
        });
        Ok(())
    }

    /// Fills in the capacity not given, as a kubelet reports it: the host's cpu, memory and
    /// root filesystem (`ephemeral-storage`), no huge pages, and 110 pods.
    fn with_defaults(mut self) -> Self {
        let host = host_resources();
        for (resource, value) in [
            ("cpu", host.cpu.as_str()),
            ("memory", host.memory.as_str()),
            ("ephemeral-storage", host.storage.as_str()),
            ("hugepages-1Gi", "0"),
            ("hugepages-2Mi", "0"),
            ("pods", DEFAULT_MAX_PODS),
        ] {
            self.capacity.entry(resource.to_owned()).or_insert_with(|| Quantity(value.to_owned()));
        }
        self
    }

    /// Applies one `--node` item (everything after the name).
    fn apply_flag_item(&mut self, item: &str) -> Result<(), String> {
        const EXPECTED: &str = "expected RESOURCE=QUANTITY (e.g. cpu=8, nvidia.com/gpu=2), \
             label:KEY=VALUE or taint:KEY[=VALUE]:EFFECT";
        if item.is_empty() {
            return Err(format!("empty item (a doubled or trailing comma?); {EXPECTED}"));
        }
        if let Some(label) = item.strip_prefix("label:") {
            let (key, value) = label
                .split_once('=')
                .ok_or_else(|| "a label needs a value: label:KEY=VALUE".to_owned())?;
            return self.add_label(key, value);
        }
        if let Some(taint) = item.strip_prefix("taint:") {
            let (key_value, effect) = taint.rsplit_once(':').ok_or_else(|| {
                "a taint needs an effect: taint:KEY[=VALUE]:NoSchedule|PreferNoSchedule|NoExecute"
                    .to_owned()
            })?;
            let (key, value) = match key_value.split_once('=') {
                Some((key, value)) => (key, Some(value)),
                None => (key_value, None),
            };
            return self.add_taint(key, value, effect);
        }
        match item.split_once('=') {
            Some((resource, _)) if resource.contains(':') => {
                Err(format!("unknown prefix in {resource:?}; {EXPECTED}"))
            }
            Some((resource, value)) => self.add_capacity(resource, value),
            None => Err(EXPECTED.to_owned()),
        }
    }

    /// The `Node` a kubelet would register for this node at `now`: the well-known labels
    /// (`kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`,
    /// `node.kubernetes.io/instance-type`) under the configured ones, the taints, capacity and
    /// allocatable, addresses, system info, and healthy conditions.
    pub fn to_node(&self, now: Timestamp) -> Node {
        let os = std::env::consts::OS;
        let arch = kubernetes_arch();
        let mut labels: BTreeMap<String, String> = [
            ("beta.kubernetes.io/arch", arch),
            ("beta.kubernetes.io/os", os),
            ("kubernetes.io/arch", arch),
            ("kubernetes.io/hostname", self.name.as_str()),
            ("kubernetes.io/os", os),
            ("node.kubernetes.io/instance-type", "keelson-local"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        labels.extend(self.labels.clone());
        let host = host_facts();
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(labels),
                annotations: Some(
                    [(LOCAL_NODE_ANNOTATION.to_owned(), "true".to_owned())].into_iter().collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                taints: (!self.taints.is_empty()).then(|| self.taints.clone()),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                capacity: Some(self.capacity.clone()),
                allocatable: Some(self.capacity.clone()),
                addresses: Some(vec![
                    NodeAddress { type_: "InternalIP".into(), address: "127.0.0.1".into() },
                    NodeAddress { type_: "Hostname".into(), address: self.name.clone() },
                ]),
                conditions: Some(ready_conditions(now, &[])),
                node_info: Some(NodeSystemInfo {
                    architecture: arch.to_owned(),
                    boot_id: host.boot_id.clone(),
                    container_runtime_version: format!("keelson://{}", env!("CARGO_PKG_VERSION")),
                    kernel_version: host.kernel_version.clone(),
                    kube_proxy_version: String::new(),
                    kubelet_version: KUBELET_VERSION.to_owned(),
                    machine_id: machine_id(&self.name),
                    operating_system: os.to_owned(),
                    os_image: host.os_image.clone(),
                    swap: None,
                    system_uuid: system_uuid(&self.name),
                }),
                ..NodeStatus::default()
            }),
        }
    }
}

/// The `--node` flag: `NAME[,ITEM...]`, where each ITEM is one of
///
/// - `RESOURCE=QUANTITY`: capacity, for `cpu`, `memory`, `pods`, `ephemeral-storage`,
///   `hugepages-<size>`, or an extended resource whose name has a domain
///   (`nvidia.com/gpu=2`);
/// - `label:KEY=VALUE`: a node label;
/// - `taint:KEY[=VALUE]:EFFECT`: a taint, EFFECT being `NoSchedule`, `PreferNoSchedule`
///   or `NoExecute`.
///
/// For example
/// `gpu-1,nvidia.com/gpu=2,memory=64Gi,label:accelerator=a100,taint:gpu=true:NoSchedule`.
/// The cpu and memory not given are the host's, and `pods` defaults to 110; extended
/// resources exist only when given.
impl FromStr for NodeConfig {
    type Err = ConfigError;

    /// Parses one `--node` flag (syntax above).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut items = s.split(',');
        let name = items.next().unwrap_or_default();
        let mut node = NodeConfig::named(name)?;
        for item in items {
            node.apply_flag_item(item).map_err(|reason| node.invalid(item, reason))?;
        }
        Ok(node.with_defaults())
    }
}

/// The shape of the node config file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    nodes: Vec<FileNode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNode {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, Scalar>,
    #[serde(default)]
    taints: Vec<FileTaint>,
    #[serde(default)]
    capacity: BTreeMap<String, Scalar>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTaint {
    key: String,
    #[serde(default)]
    value: Option<Scalar>,
    effect: String,
}

/// A YAML scalar read as text, so `gpu: 2`, `cpu: 0.5` and `enabled: true` all work.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl FileNode {
    fn into_config(self) -> Result<NodeConfig, ConfigError> {
        let mut node = NodeConfig::named(&self.name)?;
        for (key, Scalar(value)) in &self.labels {
            node.add_label(key, value)
                .map_err(|reason| node.invalid(&format!("labels.{key}"), reason))?;
        }
        for (i, taint) in self.taints.iter().enumerate() {
            let value = taint.value.as_ref().map(|Scalar(v)| v.as_str());
            node.add_taint(&taint.key, value, &taint.effect)
                .map_err(|reason| node.invalid(&format!("taints[{i}]"), reason))?;
        }
        for (resource, Scalar(value)) in &self.capacity {
            node.add_capacity(resource, value)
                .map_err(|reason| node.invalid(&format!("capacity.{resource}"), reason))?;
        }
        Ok(node.with_defaults())
    }
}

/// Reads the node config file:
///
/// ```yaml
/// nodes:
///   - name: gpu-1
///     labels: {accelerator: a100}
///     taints: [{key: gpu, value: "true", effect: NoSchedule}]
///     capacity: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 2}
/// ```
///
/// Quantities may be strings or numbers; unknown keys are refused; nodes are validated as
/// the `--node` flag is, and get the same defaults.
pub fn load_file(path: &Path) -> Result<Vec<NodeConfig>, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    parse_file(&text).map_err(|error| match error {
        ConfigError::Syntax { message, .. } => {
            ConfigError::Syntax { path: path.to_owned(), message }
        }
        ConfigError::NoNodes { .. } => ConfigError::NoNodes { path: path.to_owned() },
        other => ConfigError::InFile { path: path.to_owned(), source: Box::new(other) },
    })
}

/// The nodes of a config file's text (errors carry an empty path, filled in by the caller).
fn parse_file(text: &str) -> Result<Vec<NodeConfig>, ConfigError> {
    let file: FileConfig = serde_saphyr::from_str(text)
        .map_err(|e| ConfigError::Syntax { path: PathBuf::new(), message: e.to_string() })?;
    if file.nodes.is_empty() {
        return Err(ConfigError::NoNodes { path: PathBuf::new() });
    }
    let mut nodes: Vec<NodeConfig> = Vec::with_capacity(file.nodes.len());
    for entry in file.nodes {
        let node = entry.into_config()?;
        if nodes.iter().any(|n| n.name == node.name) {
            return Err(ConfigError::DuplicateNode(node.name));
        }
        nodes.push(node);
    }
    Ok(nodes)
}

/// The node of the host itself: named after the host (lowercased and made a DNS subdomain,
/// `keelson-node` when nothing usable is left), with the host's cpu and memory and 110 pods.
pub fn host_node() -> NodeConfig {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    NodeConfig {
        name: sanitize_node_name(&hostname),
        labels: BTreeMap::new(),
        taints: Vec::new(),
        capacity: BTreeMap::new(),
    }
    .with_defaults()
}

/// The healthy conditions a kubelet posts (`MemoryPressure`, `DiskPressure` and `PIDPressure`
/// false, `Ready` true), heartbeat at `now`. A condition already in `previous` with the same
/// status keeps its `lastTransitionTime`; otherwise it transitions at `now`.
pub fn ready_conditions(now: Timestamp, previous: &[NodeCondition]) -> Vec<NodeCondition> {
    [
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    .into_iter()
    .map(|(type_, status, reason, message)| {
        let since = previous
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .and_then(|c| c.last_transition_time.clone())
            .unwrap_or(Time(now));
        NodeCondition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_heartbeat_time: Some(Time(now)),
            last_transition_time: Some(since),
        }
    })
    .collect()
}

/// A node name must be a lowercase RFC 1123 subdomain.
fn validate_node_name(name: &str) -> Result<(), String> {
    const RULE: &str = "a node name must be a lowercase RFC 1123 subdomain: labels of a-z, 0-9 \
         and '-', starting and ending with a letter or digit, joined by '.', at most 253 \
         characters (e.g. gpu-1)";
    if name.is_empty() {
        return Err(format!("the name is empty; {RULE}"));
    }
    if name.len() > 253 || !name.split('.').all(is_dns_label) {
        return Err(RULE.to_owned());
    }
    Ok(())
}

fn is_dns_label(label: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    label.len() <= 63
        && label.starts_with(alnum)
        && label.ends_with(alnum)
        && label.chars().all(|c| alnum(c) || c == '-')
}

/// Capacity may name the standard resources, huge pages, or an extended resource with a
/// domain; anything else is most likely a typo.
fn validate_resource_name(resource: &str) -> Result<(), String> {
    match resource {
        "cpu" | "memory" | "pods" | "ephemeral-storage" => return Ok(()),
        _ => {}
    }
    if let Some(size) = resource.strip_prefix("hugepages-") {
        return match quantity::parse(size) {
            Ok(bytes) if bytes > 0 => Ok(()),
            _ => {
                Err(format!("{resource:?} needs a page size after hugepages-, e.g. hugepages-2Mi"))
            }
        };
    }
    if let Some((domain, _)) = resource.split_once('/') {
        Requirement::new(resource, Operator::Exists, vec![]).map_err(|e| {
            format!("{e}; an extended resource is DOMAIN/NAME, e.g. nvidia.com/gpu")
        })?;
        if domain == "kubernetes.io" || domain.ends_with(".kubernetes.io") {
            return Err(format!(
                "{resource:?} is in the kubernetes.io domain, which extended resources may not use"
            ));
        }
        return Ok(());
    }
    Err(format!(
        "unknown resource {resource:?}; expected cpu, memory, pods, ephemeral-storage, \
         hugepages-<size>, or an extended resource with a domain such as nvidia.com/gpu"
    ))
}

/// A host name made into a node name: lowercase, other characters as '-', each label
/// trimmed to start and end with a letter or digit.
fn sanitize_node_name(hostname: &str) -> String {
    let lowered: String = hostname
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' })
        .collect();
    let labels: Vec<String> = lowered
        .split('.')
        .map(|label| {
            let label = label.trim_matches('-');
            label[..label.len().min(63)].trim_end_matches('-').to_owned()
        })
        .filter(|label| !label.is_empty())
        .collect();
    let mut name = labels.join(".");
    if name.len() > 253 {
        name.truncate(253);
        name = name.trim_end_matches(['-', '.']).to_owned();
    }
    if validate_node_name(&name).is_ok() { name } else { FALLBACK_NODE_NAME.to_owned() }
}

/// The architecture as Kubernetes names it (`GOARCH`).
fn kubernetes_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}

/// The host's cpu count, memory and root filesystem size, as capacity quantities.
struct HostResources {
    cpu: String,
    memory: String,
    storage: String,
}

fn host_resources() -> &'static HostResources {
    static HOST: OnceLock<HostResources> = OnceLock::new();
    HOST.get_or_init(|| HostResources {
        cpu: std::thread::available_parallelism().map_or(1, |n| n.get()).to_string(),
        memory: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_total_bytes(&text))
            .map_or_else(|| FALLBACK_MEMORY.to_owned(), quantity::format_bytes),
        storage: rustix::fs::statvfs("/")
            .ok()
            .and_then(|fs| fs.f_blocks.checked_mul(fs.f_frsize))
            .map_or_else(|| FALLBACK_STORAGE.to_owned(), quantity::format_bytes),
    })
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Facts of the host the node info reports.
struct HostFacts {
    kernel_version: String,
    os_image: String,
    boot_id: String,
}

fn host_facts() -> &'static HostFacts {
    static FACTS: OnceLock<HostFacts> = OnceLock::new();
    FACTS.get_or_init(|| {
        let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_owned());
        let os_image = read("/etc/os-release")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_owned())
            })
            .unwrap_or_else(|| std::env::consts::OS.to_owned());
        HostFacts {
            kernel_version: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
            os_image,
            boot_id: read("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        }
    })
}

/// A stable 32-hex-digit machine id per node name (FNV-1a, twice with different seeds), so
/// the local nodes, which share one host, tell apart.
fn machine_id(name: &str) -> String {
    let fnv = |seed: u64| {
        name.bytes().fold(seed, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3))
    };
    format!("{:016x}{:016x}", fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142))
}

/// The machine id in UUID form.
fn system_uuid(name: &str) -> String {
    let id = machine_id(name);
    format!("{}-{}-{}-{}-{}", &id[..8], &id[8..12], &id[12..16], &id[16..20], &id[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantity(node: &NodeConfig, resource: &str) -> Option<String> {
        node.capacity.get(resource).map(|q| q.0.clone())
    }

    #[test]
    fn the_flag_reads_capacity_labels_and_taints() {
        let node: NodeConfig =
            "gpu-1,nvidia.com/gpu=2,memory=64Gi,label:accelerator=a100,taint:gpu=true:NoSchedule"
                .parse()
                .unwrap();
        assert_eq!(node.name, "gpu-1");
        assert_eq!(quantity(&node, "nvidia.com/gpu").as_deref(), Some("2"));
        assert_eq!(quantity(&node, "memory").as_deref(), Some("64Gi"));
        assert_eq!(quantity(&node, "pods").as_deref(), Some("110"));
        assert!(quantity(&node, "cpu").is_some_and(|cpu| quantity::parse(&cpu).unwrap() >= 1000));
        assert_eq!(node.labels.get("accelerator").map(String::as_str), Some("a100"));
        assert_eq!(node.taints.len(), 1);
        assert_eq!(node.taints[0].key, "gpu");
        assert_eq!(node.taints[0].value.as_deref(), Some("true"));
        assert_eq!(node.taints[0].effect, "NoSchedule");

        let plain: NodeConfig =
            "worker,taint:dedicated:NoExecute,hugepages-2Mi=1Gi".parse().unwrap();
        assert_eq!(plain.taints[0].value, None);
        assert!(plain.capacity.contains_key("hugepages-2Mi"));
        assert!(!plain.capacity.contains_key("nvidia.com/gpu"), "no GPU unless given");
    }

    #[test]
    fn bad_flags_name_the_item_and_what_is_right() {
        let cases = [
            ("Gpu_1", "RFC 1123"),
            ("", "empty"),
            ("n,gpu=2", "nvidia.com/gpu"),
            ("n,cpus=2", "unknown resource \"cpus\""),
            ("n,memory=64GB", "unknown suffix"),
            ("n,memory=-1Gi", "negative"),
            ("n,nvidia.com/gpu=0.5", "whole number"),
            ("n,pods=1.5", "whole number"),
            ("n,kubernetes.io/foo=1", "kubernetes.io domain"),
            ("n,label:a=b c", "invalid label value"),
            ("n,label:-a=b", "invalid label key"),
            ("n,label:a", "label:KEY=VALUE"),
            ("n,taint:gpu=true", "effect"),
            ("n,taint:gpu=true:Never", "NoSchedule, PreferNoSchedule or NoExecute"),
            ("n,taint:a:NoSchedule,taint:a=b:NoSchedule", "more than once"),
            ("n,cpu=1,cpu=2", "more than once"),
            ("n,labels:a=b", "unknown prefix"),
            ("n,,cpu=1", "empty item"),
            ("n,cpu", "RESOURCE=QUANTITY"),
        ];
        for (flag, expected) in cases {
            let message = flag.parse::<NodeConfig>().unwrap_err().to_string();
            assert!(message.contains(expected), "{flag}: {message}");
        }
        let message = "n,cpus=2".parse::<NodeConfig>().unwrap_err().to_string();
        assert!(message.contains("\"cpus=2\""), "the item is named: {message}");
    }

    #[test]
    fn the_file_accepts_numbers_and_strings_and_validates_like_the_flag() {
        let nodes = parse_file(
            "nodes:\n\
             - name: gpu-1\n  labels: {accelerator: a100, fast: true}\n  \
               taints: [{key: gpu, value: true, effect: NoSchedule}]\n  \
               capacity: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: 2, ephemeral-storage: 1e11}\n\
             - name: small\n  capacity: {cpu: 0.5}\n",
        )
        .unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(quantity(&nodes[0], "nvidia.com/gpu").as_deref(), Some("2"));
        assert_eq!(quantity(&nodes[0], "cpu").as_deref(), Some("8"));
        assert_eq!(nodes[0].labels.get("fast").map(String::as_str), Some("true"));
        assert_eq!(nodes[0].taints[0].value.as_deref(), Some("true"));
        assert_eq!(quantity::parse(&quantity(&nodes[1], "cpu").unwrap()), Ok(500));
        assert_eq!(quantity(&nodes[1], "pods").as_deref(), Some("110"));

        let unknown = parse_file("nodes:\n- name: a\n  capacty: {cpu: 1}\n").unwrap_err();
        assert!(unknown.to_string().contains("capacty"), "{unknown}");
        let bad = parse_file("nodes:\n- name: a\n  capacity: {gpu: 1}\n").unwrap_err();
        let message = bad.to_string();
        assert!(
            message.contains("capacity.gpu") && message.contains("nvidia.com/gpu"),
            "{message}"
        );
        assert!(matches!(
            parse_file("nodes:\n- name: a\n- name: a\n"),
            Err(ConfigError::DuplicateNode(_))
        ));
        assert!(matches!(parse_file("nodes: []\n"), Err(ConfigError::NoNodes { .. })));
    }

    #[test]
    fn load_file_names_the_file_in_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.yaml");
        std::fs::write(&path, "nodes:\n- name: a\n  taints: [{key: k, effect: Sometimes}]\n")
            .unwrap();
        let message = load_file(&path).unwrap_err().to_string();
        assert!(message.contains("nodes.yaml") && message.contains("taints[0]"), "{message}");
        std::fs::write(&path, "nodes:\n- name: a\n").unwrap();
        assert_eq!(load_file(&path).unwrap()[0].name, "a");
        assert!(matches!(load_file(&dir.path().join("missing")), Err(ConfigError::Read { .. })));
    }

    #[test]
    fn host_names_become_valid_node_names() {
        assert_eq!(sanitize_node_name("My_Laptop.local\n"), "my-laptop.local");
        assert_eq!(sanitize_node_name("-weird--.-"), "weird");
        assert_eq!(sanitize_node_name("___"), FALLBACK_NODE_NAME);
        assert_eq!(sanitize_node_name(""), FALLBACK_NODE_NAME);
        let host = host_node();
        assert!(validate_node_name(&host.name).is_ok(), "{}", host.name);
        assert!(host.capacity.contains_key("cpu") && host.capacity.contains_key("memory"));
        assert!(host.taints.is_empty());
    }

    #[test]
    fn memory_comes_from_meminfo_in_kibibytes() {
        let meminfo = "MemTotal:       16318412 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total_bytes(meminfo), Some(16_318_412 * 1024));
        assert_eq!(mem_total_bytes("nothing"), None);
    }

    #[test]
    fn nodes_look_like_kubelet_registered_ones() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let config: NodeConfig =
            "gpu-1,nvidia.com/gpu=2,label:accelerator=a100,taint:gpu=true:NoSchedule"
                .parse()
                .unwrap();
        let node = config.to_node(now);
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "gpu-1");
        assert_eq!(labels["kubernetes.io/os"], std::env::consts::OS);
        assert!(!labels["kubernetes.io/arch"].contains('_'));
        assert_eq!(labels["node.kubernetes.io/instance-type"], "keelson-local");
        assert_eq!(labels["accelerator"], "a100");
        assert_eq!(node.metadata.annotations.as_ref().unwrap()[LOCAL_NODE_ANNOTATION], "true");
        assert_eq!(node.spec.as_ref().unwrap().taints.as_ref().unwrap()[0].key, "gpu");
        let status = node.status.as_ref().unwrap();
        assert_eq!(status.capacity, status.allocatable);
        assert_eq!(status.capacity.as_ref().unwrap()["nvidia.com/gpu"].0, "2");
        let info = status.node_info.as_ref().unwrap();
        assert_eq!(info.kubelet_version, KUBELET_VERSION);
        assert!(info.container_runtime_version.starts_with("keelson://"));
        assert_eq!(info.machine_id.len(), 32);
        assert_ne!(info.machine_id, machine_id("other"));
        let addresses = status.addresses.as_ref().unwrap();
        assert!(addresses.iter().any(|a| a.type_ == "InternalIP" && a.address == "127.0.0.1"));
        let conditions = status.conditions.as_ref().unwrap();
        let ready = conditions.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("True", Some("KubeletReady"))
        );
        assert!(conditions.iter().all(|c| c.last_heartbeat_time == Some(Time(now))));
    }

    #[test]
    fn heartbeats_keep_the_transition_time() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let later = start + jiff::SignedDuration::from_secs(40);
        let first = ready_conditions(start, &[]);
        let second = ready_conditions(later, &first);
        for condition in &second {
            assert_eq!(condition.last_transition_time, Some(Time(start)));
            assert_eq!(condition.last_heartbeat_time, Some(Time(later)));
        }
        let mut not_ready = first.clone();
        not_ready[3].status = "False".into();
        let recovered = ready_conditions(later, &not_ready);
        assert_eq!(recovered[3].last_transition_time, Some(Time(later)));
        assert_eq!(recovered[0].last_transition_time, Some(Time(start)));
    }
}
