//! Server-side apply and managed-fields tracking (`metadata.managedFields`).
//!
//! Hand-written because no Rust implementation of upstream's structured-merge-diff exists.
//! Follows sigs.k8s.io/structured-merge-diff `merge.Updater` (Apply, Update, prune) and the
//! apiserver's fieldmanager layers (stripped metadata fields, manager identity, conflict
//! messages, the cap of ten Update managers).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::PatchError;
use super::fieldpath::{FieldSet, Pe, display_path};
use super::lists::ListSemantics;
use super::typed::Walker;

/// Upstream `DefaultMaxUpdateManagers`: older Update entries merge into a bucket beyond it.
const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager name of that bucket.
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Metadata fields the server owns: ignored in an applied configuration.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// One server-side apply request.
pub struct ApplyRequest<'a> {
    /// The stored object, `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration as JSON (parse request bodies with [`parse_apply_body`]).
    /// Its `metadata.resourceVersion`, a precondition, is the caller's to check: server-owned
    /// metadata (`uid`, `resourceVersion`, `creationTimestamp`, ...) in it is ignored here.
    pub applied: &'a Value,
    /// The `fieldManager` query parameter.
    pub manager: &'a str,
    /// The `force` query parameter: take over conflicting fields instead of failing.
    pub force: bool,
    /// List semantics of the kind.
    pub lists: &'a dyn ListSemantics,
    /// The request's `group/version` (`v1` for the core group); the applied config must match.
    pub api_version: &'a str,
    /// The subresource applied to (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The current time, RFC 3339, recorded in the manager's entry.
    pub now: &'a str,
}

/// A field another manager owns with a different value than the one applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// The field, in upstream's form (`.spec.replicas`, `.spec.containers[name="a"].image`).
    pub field: String,
    /// The other manager's operation, `Apply` or `Update`.
    pub operation: String,
    /// The API version of the other manager's entry.
    pub api_version: String,
    /// The other manager's subresource, if any.
    pub subresource: Option<String>,
}

impl Conflict {
    /// The manager as upstream prints it: `"kubectl"`, `"m" with subresource "status"`,
    /// `"kubectl-client-side-apply" using v1` (Update managers name their API version).
    pub fn manager_display(&self) -> String {
        let mut s = Value::String(self.manager.clone()).to_string();
        if let Some(sub) = &self.subresource {
            s = format!("{s} with subresource {}", Value::String(sub.clone()));
        }
        if self.operation == "Update" {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }

    /// The message of the `FieldManagerConflict` status cause for this conflict.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.manager_display())
    }
}

fn conflicts_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.manager_display(),
            c.field
        );
    }
    let mut by_manager: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        by_manager.entry(c.manager_display()).or_default().push(&c.field);
    }
    let mut lines = Vec::new();
    for (manager, fields) in by_manager {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// Why an apply failed. Callers answer `Conflicts` with 409 (a `Status` with reason
/// `Conflict` and one `FieldManagerConflict` cause per conflict) and `Invalid` with 400/422.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change; retry with `force` to take them.
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied configuration is unusable.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry, decoded.
#[derive(Clone, Debug)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: Option<String>,
    time: Option<String>,
    set: FieldSet,
}

impl Entry {
    /// The Update entry of `manager` at `now`, owning `set`.
    fn update(
        manager: &str,
        api_version: &str,
        subresource: Option<&str>,
        now: &str,
        set: FieldSet,
    ) -> Entry {
        Entry {
            manager: manager.to_owned(),
            operation: Operation::Update,
            api_version: api_version.to_owned(),
            subresource: subresource.map(str::to_owned),
            time: Some(now.to_owned()),
            set,
        }
    }

    /// Upstream's manager identity: Apply entries ignore the API version.
    fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    fn encode(&self) -> Value {
        self.encode_with(self.set.to_fields_v1())
    }

    /// The entry with `fields_v1` as its fields (`self.set` is not read).
    fn encode_with(&self, fields_v1: Value) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.as_str().into()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), fields_v1);
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), Value::String(s.clone()));
        }
        Value::Object(m)
    }

    fn decode(v: &Value) -> Result<Entry, String> {
        let str_field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let operation = match v.get("operation").and_then(Value::as_str) {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".into()),
        };
        let api_version = str_field("apiVersion")
            .filter(|s| !s.is_empty())
            .ok_or("apiVersion must not be empty")?;
        match v.get("fieldsType").and_then(Value::as_str) {
            Some("FieldsV1") => {}
            _ => return Err("fieldsType must be FieldsV1".into()),
        }
        let set = match v.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        Ok(Entry {
            manager: str_field("manager").unwrap_or_default(),
            operation,
            api_version,
            subresource: str_field("subresource").filter(|s| !s.is_empty()),
            time: str_field("time"),
            set,
        })
    }
}

/// Decodes a `managedFields` list; any invalid entry invalidates the list, as upstream.
fn decode_entries(list: Option<&Value>) -> Result<Vec<Entry>, String> {
    let items = match list {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("managedFields must be a list".into()),
    };
    let mut out: Vec<Entry> = Vec::with_capacity(items.len());
    for item in items {
        let e = Entry::decode(item)?;
        out.retain(|o| !o.is(&e.manager, e.operation, &e.api_version, e.subresource.as_deref()));
        out.push(e);
    }
    Ok(out)
}

/// `managedFields` as upstream stores them: sorted by operation, time, manager, version.
fn encode_entries(entries: &mut [Entry]) -> Value {
    entries.sort_by(|a, b| {
        (a.operation, a.time.as_deref().unwrap_or(""), &a.manager, &a.api_version, &a.subresource)
            .cmp(&(
                b.operation,
                b.time.as_deref().unwrap_or(""),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    Value::Array(entries.iter().map(Entry::encode).collect())
}

fn field(name: &str) -> Pe {
    Pe::Field(name.to_owned())
}

/// Fields never recorded as owned (upstream `stripMetaManager`).
static STRIPPED_FIELDS: LazyLock<FieldSet> = LazyLock::new(|| {
    let mut s = FieldSet::new();
    s.insert(&[field("apiVersion")]);
    s.insert(&[field("kind")]);
    s.insert(&[field("metadata")]);
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[field("metadata"), field(f)]);
    }
    s
});

/// Fields apply never removes from the object.
static PROTECTED_FIELDS: LazyLock<FieldSet> = LazyLock::new(|| {
    let mut s = FieldSet::new();
    s.insert(&[field("apiVersion")]);
    s.insert(&[field("kind")]);
    s.insert(&[field("metadata")]);
    s.insert(&[field("metadata"), field("name")]);
    s.insert(&[field("metadata"), field("namespace")]);
    s
});

/// A copy of `obj` without `metadata.managedFields` (or `{}`), and those managed fields.
fn split_managed_fields(obj: Option<&Value>) -> (Value, Option<Value>) {
    let mut v = obj.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mf = take_managed_fields(&mut v);
    (v, mf)
}

/// Removes and returns `metadata.managedFields`.
fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove("managedFields"))
}

/// Stores `entries` in `obj.metadata.managedFields` (removes the field when there are none).
fn set_managed_fields(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.set.is_empty());
    cap_update_managers(&mut entries);
    let Value::Object(o) = obj else { return };
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = o.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    }
    put_managed_fields(o, encode_entries(&mut entries));
}

/// Sets `metadata.managedFields` of `obj` to `list`.
fn put_managed_fields(obj: &mut Map<String, Value>, list: Value) {
    let meta = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("managedFields".into(), list);
    }
}

/// Upstream `capManagersManager`: beyond ten Update entries, the oldest merge into
/// `ancient-changes` (one per API version).
fn cap_update_managers(entries: &mut Vec<Entry>) {
    let mut updaters: Vec<usize> = (0..entries.len())
        .filter(|&i| {
            entries[i].operation == Operation::Update && entries[i].manager != ANCIENT_CHANGES
        })
        .collect();
    let mut count = entries.iter().filter(|e| e.operation == Operation::Update).count();
    if count <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| {
        let (ea, eb) = (&entries[a], &entries[b]);
        (ea.time.as_deref().unwrap_or(""), &ea.manager)
            .cmp(&(eb.time.as_deref().unwrap_or(""), &eb.manager))
    });
    let mut merged = Vec::new();
    for i in updaters {
        if count <= MAX_UPDATE_MANAGERS {
            break;
        }
        let e = entries[i].clone();
        match entries
            .iter()
            .position(|b| b.is(ANCIENT_CHANGES, Operation::Update, &e.api_version, None))
        {
            Some(b) => {
                let bucket = &mut entries[b];
                bucket.set.union_in(&e.set);
                if bucket.time.as_deref().unwrap_or("") < e.time.as_deref().unwrap_or("") {
                    bucket.time = e.time.clone();
                }
            }
            None => {
                entries.push(Entry { manager: ANCIENT_CHANGES.into(), subresource: None, ..e });
                count += 1;
            }
        }
        merged.push(i);
        count -= 1;
    }
    merged.sort_unstable_by(|a, b| b.cmp(a));
    for i in merged {
        entries.remove(i);
    }
}

fn name_of(v: Option<&Value>) -> Option<&str> {
    v?.get("metadata")?.get("name")?.as_str()
}

fn invalid(msg: impl Into<String>) -> ApplyError {
    ApplyError::Invalid(msg.into())
}

/// Server-side apply: merges `req.applied` into `req.live` (or creates the object), makes the
/// applied fields the manager's Apply set, removes fields the manager applied before and no
/// longer applies (unless another manager owns them), and fails with
/// [`ApplyError::Conflicts`] when fields owned by others would change (unless `force`, which
/// takes them over). Returns the new object with `metadata.managedFields` updated.
pub fn apply(req: ApplyRequest) -> Result<Value, ApplyError> {
    let Value::Object(applied_map) = req.applied else {
        return Err(invalid("the apply patch must be an object"));
    };
    let version = applied_map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if version != req.api_version {
        return Err(invalid(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            req.api_version
        )));
    }
    let kind = applied_map.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty());
    let Some(kind) = kind else {
        return Err(invalid("Object 'Kind' is missing in the apply patch"));
    };
    let live_kind = req.live.and_then(|l| l.get("kind")).and_then(Value::as_str);
    if let Some(lk) = live_kind.filter(|lk| *lk != kind) {
        return Err(invalid(format!(
            "the apply patch's kind {kind:?} does not match the object's kind {lk:?}"
        )));
    }
    let meta = applied_map.get("metadata");
    if meta.and_then(|m| m.get("managedFields")).is_some_and(|mf| !mf.is_null()) {
        return Err(invalid("metadata.managedFields must be nil"));
    }
    if let (Some(a), Some(l)) = (name_of(Some(req.applied)), name_of(req.live))
        && a != l
    {
        return Err(invalid(format!(
            "the name of the object ({a}) does not match the name on the URL ({l})"
        )));
    }

    let mut applied = req.applied.clone();
    if let Some(Value::Object(m)) = applied.get_mut("metadata") {
        for f in SERVER_METADATA {
            m.remove(*f);
        }
    }
    let (live, live_fields) = split_managed_fields(req.live);
    let mut entries = decode_entries(live_fields.as_ref()).unwrap_or_default();
    let mut w = Walker::new(req.lists);
    let mut merged = w.merge(Some(&live), &applied).map_err(ApplyError::Invalid)?;
    let applied_set = w.field_set(&applied, true).map_err(ApplyError::Invalid)?;

    let me = match entries
        .iter()
        .position(|e| e.is(req.manager, Operation::Apply, req.api_version, req.subresource))
    {
        Some(i) => i,
        None => {
            entries.push(Entry {
                manager: req.manager.to_owned(),
                operation: Operation::Apply,
                api_version: req.api_version.to_owned(),
                subresource: req.subresource.map(str::to_owned),
                time: None,
                set: FieldSet::new(),
            });
            entries.len() - 1
        }
    };
    let last = std::mem::replace(&mut entries[me].set, applied_set.clone());
    entries[me].api_version = req.api_version.to_owned();

    if !last.is_empty() {
        let keep =
            entries.iter().fold(FieldSet::new(), |acc, e| acc.union(&e.set)).with_field_ancestors();
        let remove = last.with_field_ancestors().difference(&keep).difference(&PROTECTED_FIELDS);
        w.remove_items(&mut merged, &remove);
    }

    let cmp = w.compare(&live, &merged);
    let changed = cmp.added.union(&cmp.modified);
    let mut conflicts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if i == me {
            continue;
        }
        let owned = e.set.intersection(&changed);
        if !owned.is_empty() {
            conflicts.push((i, owned));
        }
    }
    if !req.force && !conflicts.is_empty() {
        let mut list = Vec::new();
        for (i, owned) in &conflicts {
            let e = &entries[*i];
            for path in owned.paths() {
                list.push(Conflict {
                    manager: e.manager.clone(),
                    field: display_path(&path),
                    operation: e.operation.as_str().to_owned(),
                    api_version: e.api_version.clone(),
                    subresource: e.subresource.clone(),
                });
            }
        }
        return Err(ApplyError::Conflicts(list));
    }
    for (i, owned) in conflicts {
        entries[i].set.remove(&owned);
    }
    for (i, e) in entries.iter_mut().enumerate() {
        if i != me {
            e.set.remove(&cmp.removed);
        }
        e.set.remove(&STRIPPED_FIELDS);
    }
    if entries[me].time.is_none() || entries[me].set != last || live != merged {
        entries[me].time = Some(req.now.to_owned());
    }
    set_managed_fields(&mut merged, entries);
    Ok(merged)
}

/// Whether a request's `managedFields` asks to reset them (`[]` or `[{}]`).
fn is_reset(fields: Option<&Value>) -> bool {
    match fields {
        Some(Value::Array(a)) => {
            a.is_empty() || (a.len() == 1 && a[0].as_object().is_some_and(Map::is_empty))
        }
        _ => false,
    }
}

/// For non-apply writes (create, update, merge/json/strategic patch): records that `manager`
/// (operation Update) now owns the fields it added or changed, removing them from other
/// managers' sets (and removed fields from everyone's). Managed fields sent in `new` replace
/// the stored ones (`[]` or `[{}]` clears them), except on a subresource.
pub fn track_update(
    old: Option<&Value>,
    mut new: Value,
    manager: &str,
    lists: &dyn ListSemantics,
    api_version: &str,
    subresource: Option<&str>,
    now: &str,
) -> Value {
    let (old_obj, old_fields) = split_managed_fields(old);
    let new_fields = take_managed_fields(&mut new);
    let mut entries = if subresource.is_some() {
        decode_entries(old_fields.as_ref()).unwrap_or_default()
    } else if is_reset(new_fields.as_ref()) {
        Vec::new()
    } else {
        match decode_entries(new_fields.as_ref()) {
            Ok(e) if !e.is_empty() => e,
            _ => decode_entries(old_fields.as_ref()).unwrap_or_default(),
        }
    };

    let mut walker = Walker::new(lists);
    if old.is_none() && entries.is_empty() {
        // A create that sends no managed fields: the manager owns every field it sent.
        let fields = walker.added_fields_v1(&new, Some(&STRIPPED_FIELDS));
        if let (Value::Object(o), false) = (&mut new, fields.is_empty()) {
            // Its set stays empty: `encode_with` takes the fields already encoded.
            let entry = Entry::update(manager, api_version, subresource, now, FieldSet::new());
            put_managed_fields(o, Value::Array(vec![entry.encode_with(Value::Object(fields))]));
        }
        return new;
    }
    let (changed, removed) = match old {
        // On create everything is added: no comparison needed.
        None => {
            let added = Value::Object(walker.added_fields_v1(&new, None));
            (FieldSet::from_fields_v1(&added).unwrap_or_default(), FieldSet::new())
        }
        Some(_) => {
            let cmp = walker.compare(&old_obj, &new);
            (cmp.added.union(&cmp.modified), cmp.removed)
        }
    };
    for e in &mut entries {
        e.set.remove(&changed);
        e.set.remove(&removed);
    }
    let taken = changed.difference(&STRIPPED_FIELDS);
    if !taken.is_empty() {
        match entries
            .iter()
            .position(|e| e.is(manager, Operation::Update, api_version, subresource))
        {
            Some(i) => {
                entries[i].set.union_in(&taken);
                entries[i].time = Some(now.to_owned());
            }
            None => entries.push(Entry::update(manager, api_version, subresource, now, taken)),
        }
    }
    set_managed_fields(&mut new, entries);
    new
}

/// Parses a server-side apply body (`application/apply-patch+yaml`): JSON or YAML, one
/// document, which must be an object.
pub fn parse_apply_body(body: &[u8]) -> Result<Value, PatchError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| PatchError::Invalid(format!("the apply patch is not UTF-8: {e}")))?;
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(PatchError::Invalid("the apply patch is empty".into()));
    }
    let parsed: Value = if trimmed.starts_with('{') {
        match serde_json::from_str(text) {
            Ok(v) => v,
            Err(json_err) => serde_saphyr::from_str(text).map_err(|_| {
                PatchError::Invalid(format!("the apply patch is not valid JSON: {json_err}"))
            })?,
        }
    } else {
        serde_saphyr::from_str(text)
            .map_err(|e| PatchError::Invalid(format!("the apply patch is not valid YAML: {e}")))?
    };
    if !parsed.is_object() {
        return Err(PatchError::Invalid("the apply patch must be an object".into()));
    }
    Ok(parsed)
}
