//! The catalog of resources the embedded API server serves: built-in kinds and
//! the kinds of established CustomResourceDefinitions.
//!
//! Everything here is pure data; discovery, OpenAPI and Table output are built
//! from [`ResourceInfo`] by the sibling modules.

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

mod builtins;
pub mod metrics;
mod schemas;
#[cfg(test)]
pub(crate) mod tests;

pub use schemas::{BuiltinSchema, Referenced};
pub(crate) use schemas::{object_meta_schema, referenced_schema_for, schema_for};

/// Verbs of a fully writable resource, in the order kube-apiserver lists them
/// for built-ins.
pub(crate) const ALL_VERBS: [&str; 8] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// Verbs kube-apiserver advertises for custom resources (its own order).
pub(crate) const CR_VERBS: [&str; 8] =
    ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];

/// Field selectors every resource supports, in addition to
/// [`ResourceInfo::selectable_fields`].
pub const COMMON_SELECTABLE_FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

/// A resource's schema: a CRD version's, or a built-in kind's, which is generated when it is
/// first asked for and then kept for the life of the process. Built-in schemas are large (several
/// carry a whole pod template) and most kinds are never written on a given machine, so building
/// them all at start would cost memory and start-up time for nothing.
#[derive(Clone)]
pub enum Schema {
    /// No schema: anything goes.
    None,
    /// A CRD version's schema.
    Custom(Arc<serde_json::Value>),
    /// A built-in kind's schema, from its generators.
    Builtin(BuiltinSchema),
}

impl Schema {
    /// The self-contained schema, generating a built-in one on first use.
    pub fn get(&self) -> Option<Arc<serde_json::Value>> {
        match self {
            Schema::None => None,
            Schema::Custom(schema) => Some(schema.clone()),
            Schema::Builtin(generate) => Some((generate.inlined)()),
        }
    }

    /// A built-in kind's schema with references to the named schemas of its fields' types, as
    /// the OpenAPI v3 documents serve it (generated on each call).
    pub fn referenced(&self) -> Option<Referenced> {
        match self {
            Schema::Builtin(generate) => Some((generate.referenced)()),
            Schema::None | Schema::Custom(_) => None,
        }
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schema::None => f.write_str("None"),
            Schema::Custom(schema) => f.debug_tuple("Custom").field(schema).finish(),
            Schema::Builtin(_) => f.write_str("Builtin"),
        }
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Schema::None, Schema::None) => true,
            (Schema::Custom(a), Schema::Custom(b)) => a == b,
            (Schema::Builtin(a), Schema::Builtin(b)) => {
                std::ptr::fn_addr_eq(a.inlined, b.inlined)
                    && std::ptr::fn_addr_eq(a.referenced, b.referenced)
            }
            _ => false,
        }
    }
}

/// One served resource in one group-version.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// API group; `""` for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in URLs.
    pub resource: String,
    /// Singular resource name.
    pub singular: String,
    /// Kind of the objects.
    pub kind: String,
    /// Kind of the lists, e.g. `ConfigMapList`.
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`cm`, `deploy`, ...).
    pub short_names: Vec<String>,
    /// Categories (`all`, ...).
    pub categories: Vec<String>,
    /// Verbs of the main resource.
    pub verbs: Vec<String>,
    /// Subresources served.
    pub subresources: Vec<Subresource>,
    /// Printer columns after the leading `Name` column (see `table`).
    pub printer_columns: Vec<PrinterColumn>,
    /// OpenAPI v3 schema of the whole object, self-contained (no `$ref`) as validation reads
    /// it: see [`Schema`].
    pub schema: Schema,
    /// Built-in kind: strategic merge patch is allowed.
    pub builtin: bool,
    /// Extra field-selector fields beyond [`COMMON_SELECTABLE_FIELDS`]
    /// (dotted paths without the leading `.`).
    pub selectable_fields: Vec<String>,
}

/// A subresource of a [`ResourceInfo`].
#[derive(Clone, Debug, PartialEq)]
pub enum Subresource {
    /// `/status`: reads and writes only `.status`.
    Status,
    /// `/scale`: an `autoscaling/v1` `Scale` view of the object.
    Scale {
        /// JSONPath (`.spec.replicas`) of the desired replicas.
        spec_replicas_path: String,
        /// JSONPath of the observed replicas.
        status_replicas_path: String,
        /// JSONPath of the label selector: a string in selector syntax, or a
        /// `metav1.LabelSelector` object (built-in workloads use `.spec.selector`).
        label_selector_path: Option<String>,
    },
    /// `/log` (pods only).
    Log,
    /// `/token` (service accounts only): creates a `TokenRequest`.
    Token,
    /// `/eviction` (pods only): deletes the pod if its disruption budget allows.
    Eviction,
    /// `/attach` (pods only): a stream to a container's process, served by a route of its own.
    Attach,
    /// `/exec` (pods only): a command beside a container's process, served by a route of its
    /// own.
    Exec,
    /// `/portforward` (pods only): connections to a pod's ports, served by a route of its own.
    PortForward,
    /// `/proxy` (pods and services): HTTP requests relayed to a port, served by a route of its
    /// own; the kind of its options (`PodProxyOptions`, `ServiceProxyOptions`).
    Proxy(&'static str),
    /// `/ephemeralcontainers` (pods only): the pod, whose ephemeral containers writes add to.
    EphemeralContainers,
    /// `/finalize` (namespaces only): the namespace, whose `spec.finalizers` alone change.
    Finalize,
    /// `/approval` (CertificateSigningRequests only): the request, whose `Approved` and
    /// `Denied` conditions alone change.
    Approval,
}

impl Subresource {
    /// The URL segment of the subresource (`status`, `scale`, `log`, `token`, `eviction`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale { .. } => "scale",
            Subresource::Log => "log",
            Subresource::Token => "token",
            Subresource::Eviction => "eviction",
            Subresource::Attach => "attach",
            Subresource::Exec => "exec",
            Subresource::PortForward => "portforward",
            Subresource::Proxy(_) => "proxy",
            Subresource::EphemeralContainers => "ephemeralcontainers",
            Subresource::Finalize => "finalize",
            Subresource::Approval => "approval",
        }
    }

    /// The group, version and kind the subresource reads and writes, when it is not the
    /// resource's own kind.
    pub fn other_kind(&self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            Subresource::Scale { .. } => Some(("autoscaling", "v1", "Scale")),
            Subresource::Token => Some(("authentication.k8s.io", "v1", "TokenRequest")),
            Subresource::Eviction => Some(("policy", "v1", "Eviction")),
            Subresource::Attach => Some(("", "v1", "PodAttachOptions")),
            Subresource::Exec => Some(("", "v1", "PodExecOptions")),
            Subresource::PortForward => Some(("", "v1", "PodPortForwardOptions")),
            Subresource::Proxy(kind) => Some(("", "v1", kind)),
            Subresource::Status
            | Subresource::Log
            | Subresource::EphemeralContainers
            | Subresource::Finalize
            | Subresource::Approval => None,
        }
    }

    /// Verbs served on the subresource.
    pub fn verbs(&self) -> &'static [&'static str] {
        match self {
            Subresource::Status
            | Subresource::Scale { .. }
            | Subresource::EphemeralContainers
            | Subresource::Approval => &["get", "patch", "update"],
            Subresource::Log => &["get"],
            Subresource::Finalize => &["update"],
            Subresource::Token | Subresource::Eviction => &["create"],
            // WebSocket upgrades are GETs; SPDY's were POSTs.
            Subresource::Attach | Subresource::Exec | Subresource::PortForward => {
                &["create", "get"]
            }
            Subresource::Proxy(_) => &["create", "delete", "get", "patch", "update"],
        }
    }
}

/// A Table column (`additionalPrinterColumns` of a CRD, or a built-in one).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// OpenAPI format hint (`name`, `date-time`, ...).
    pub format: Option<String>,
    /// Column description.
    pub description: String,
    /// 0 = always shown, >0 = only with `-o wide`.
    pub priority: i32,
    /// Kubernetes JSONPath (`.status.replicas`), or `computed:<name>` for a
    /// cell computed in Rust like kubectl's printers (see `table`).
    pub json_path: String,
}

impl PrinterColumn {
    pub(crate) fn new(name: &str, type_: &str, json_path: &str, description: &str) -> Self {
        PrinterColumn {
            name: name.to_owned(),
            type_: type_.to_owned(),
            format: None,
            description: description.to_owned(),
            priority: 0,
            json_path: json_path.to_owned(),
        }
    }

    pub(crate) fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    pub(crate) fn with_format(mut self, format: &str) -> Self {
        self.format = Some(format.to_owned());
        self
    }
}

impl ResourceInfo {
    /// `v1` for the core group, otherwise `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            // Concatenated rather than `format!`ted: every write asks for it.
            [self.group.as_str(), "/", self.version.as_str()].concat()
        }
    }

    /// Whether this is resource `resource` of `group/version`.
    pub fn is(&self, group: &str, version: &str, resource: &str) -> bool {
        self.group == group && self.version == version && self.resource == resource
    }

    /// Whether `api_version` is this resource's [`ResourceInfo::api_version`] (no allocation).
    pub fn is_api_version(&self, api_version: &str) -> bool {
        match api_version.split_once('/') {
            None => self.group.is_empty() && api_version == self.version,
            Some((group, version)) => {
                !group.is_empty() && group == self.group && version == self.version
            }
        }
    }

    /// `Namespaced` or `Cluster`, as discovery spells it.
    pub fn scope(&self) -> &'static str {
        if self.namespaced { "Namespaced" } else { "Cluster" }
    }

    /// The subresource with URL segment `name`, if served.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name() == name)
    }

    /// Whether `/status` is a subresource (then main writes ignore `.status`).
    pub fn has_status(&self) -> bool {
        self.subresource("status").is_some()
    }

    /// Whether `field` may be used in a field selector on this resource.
    pub fn supports_field(&self, field: &str) -> bool {
        COMMON_SELECTABLE_FIELDS.contains(&field)
            || self.selectable_fields.iter().any(|f| f == field)
    }

    /// One entry per *served* version of a CRD.
    pub fn from_crd(crd: &CustomResourceDefinition) -> Vec<ResourceInfo> {
        let spec = &crd.spec;
        let names = &spec.names;
        spec.versions
            .iter()
            .filter(|v| v.served)
            .map(|v| {
                let mut subresources = Vec::new();
                if let Some(sub) = &v.subresources {
                    if sub.status.is_some() {
                        subresources.push(Subresource::Status);
                    }
                    if let Some(scale) = &sub.scale {
                        subresources.push(Subresource::Scale {
                            spec_replicas_path: scale.spec_replicas_path.clone(),
                            status_replicas_path: scale.status_replicas_path.clone(),
                            label_selector_path: scale.label_selector_path.clone(),
                        });
                    }
                }
                let printer_columns = v
                    .additional_printer_columns
                    .iter()
                    .flatten()
                    .map(|c| PrinterColumn {
                        name: c.name.clone(),
                        type_: c.type_.clone(),
                        format: c.format.clone().filter(|f| !f.is_empty()),
                        description: c.description.clone().unwrap_or_default(),
                        priority: c.priority.unwrap_or(0),
                        json_path: c.json_path.clone(),
                    })
                    .collect();
                let schema = v
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .and_then(|s| serde_json::to_value(s).ok())
                    .map_or(Schema::None, |s| Schema::Custom(Arc::new(s)));
                ResourceInfo {
                    group: spec.group.clone(),
                    version: v.name.clone(),
                    resource: names.plural.clone(),
                    singular: names
                        .singular
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| names.kind.to_lowercase()),
                    kind: names.kind.clone(),
                    list_kind: names
                        .list_kind
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("{}List", names.kind)),
                    namespaced: spec.scope == "Namespaced",
                    short_names: names.short_names.clone().unwrap_or_default(),
                    categories: names.categories.clone().unwrap_or_default(),
                    verbs: CR_VERBS.iter().map(|s| (*s).to_owned()).collect(),
                    subresources,
                    printer_columns,
                    schema,
                    builtin: false,
                    selectable_fields: v
                        .selectable_fields
                        .iter()
                        .flatten()
                        .map(|f| f.json_path.trim_start_matches('.').to_owned())
                        .collect(),
                }
            })
            .collect()
    }
}

/// The built-in resources, computed once.
pub(crate) fn builtins() -> &'static [ResourceInfo] {
    static CACHE: OnceLock<Vec<ResourceInfo>> = OnceLock::new();
    CACHE.get_or_init(builtins::all)
}

/// The built-in resources Keelson serves (computed once, then cloned).
pub fn builtin_resources() -> Vec<ResourceInfo> {
    builtins().to_vec()
}

/// The built-in `resource` of `group` (`""` for core).
pub fn builtin_resource(group: &str, resource: &str) -> Option<&'static ResourceInfo> {
    builtins().iter().find(|r| r.group == group && r.resource == resource)
}

/// Orders Kubernetes version strings by preference, like apimachinery's
/// `CompareKubeAwareVersionStrings`: GA (`v2` > `v1`), then beta, then alpha
/// (each by major then minor level, highest first), then non-Kube versions
/// alphabetically. `Ordering::Less` means `a` is preferred.
pub(crate) fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (rank, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (2, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (1, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let minor: u64 = minor.parse().ok()?;
        Some((rank, major, minor))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}
