//! Field paths and field sets in upstream structured-merge-diff form, and their `FieldsV1`
//! encoding (`{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:image":{}}}}}`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Pe {
    /// A named field or map key (`f:name`).
    Field(String),
    /// An item of an associative list, by its key fields as canonical JSON (`k:{"name":"a"}`).
    Key(String),
    /// An item of a set list, by its value as canonical JSON (`v:"a"`).
    Value(String),
    /// An item of a list addressed by position (`i:0`), used only when an item has no key.
    Index(usize),
}

/// The `FieldsV1` key of the field or map key `name` (`f:name`), as [`Pe::encode`] gives it for
/// a [`Pe::Field`], without building one.
pub(crate) fn field_key(name: &str) -> String {
    prefixed("f:", name)
}

/// `prefix` + `text`, concatenated rather than `format!`ted: every managed field of every write
/// goes through here.
fn prefixed(prefix: &str, text: &str) -> String {
    let mut encoded = String::with_capacity(prefix.len() + text.len());
    encoded.push_str(prefix);
    encoded.push_str(text);
    encoded
}

impl Pe {
    /// The `FieldsV1` key of this element.
    pub(crate) fn encode(&self) -> String {
        match self {
            Pe::Field(f) => field_key(f),
            Pe::Key(k) => prefixed("k:", k),
            Pe::Value(v) => prefixed("v:", v),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key; key and value JSON are re-canonicalized.
    pub(crate) fn decode(s: &str) -> Option<Pe> {
        let (kind, rest) = s.split_at_checked(2)?;
        match kind {
            "f:" => Some(Pe::Field(rest.to_owned())),
            "k:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                v.is_object().then(|| Pe::Key(canonical_json(&v)))
            }
            "v:" => serde_json::from_str::<Value>(rest).ok().map(|v| Pe::Value(canonical_json(&v))),
            "i:" => rest.parse().ok().map(Pe::Index),
            _ => None,
        }
    }

    /// Upstream's path display form: `.name`, `[name="a"]`, `[="a"]`, `[0]`.
    pub(crate) fn display(&self) -> String {
        match self {
            Pe::Field(f) => format!(".{f}"),
            Pe::Key(k) => {
                let fields = match serde_json::from_str::<Value>(k) {
                    Ok(Value::Object(m)) => m,
                    _ => return format!("[{k}]"),
                };
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, v)| format!("{name}={}", canonical_json(v)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            Pe::Value(v) => format!("[={v}]"),
            Pe::Index(i) => format!("[{i}]"),
        }
    }

    /// A key element from `(field, value)` pairs.
    pub(crate) fn key(mut fields: Vec<(String, Value)>) -> Pe {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let parts: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
            .collect();
        Pe::Key(format!("{{{}}}", parts.join(",")))
    }
}

/// Displays a whole path the way upstream prints conflicts (`.spec.replicas`).
pub(crate) fn display_path(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

/// JSON text with object keys sorted, independent of serde_json's `preserve_order`.
pub(crate) fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => {
            format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(","))
        }
        other => other.to_string(),
    }
}

/// A set of field paths stored as a tree; `member` marks that the path itself is in the set
/// (`.` in `FieldsV1`), children hold longer paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    member: bool,
    children: BTreeMap<Pe, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether the set holds no path.
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Adds `path`.
    pub(crate) fn insert(&mut self, path: &[Pe]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }

    #[cfg(test)]
    fn node(&self, path: &[Pe]) -> Option<&FieldSet> {
        let mut node = self;
        for pe in path {
            node = node.children.get(pe)?;
        }
        Some(node)
    }

    /// Whether `path` itself is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, path: &[Pe]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// The subtree below `pe`, if any.
    pub(crate) fn child(&self, pe: &Pe) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// Whether the path itself is a member of this (sub)set's root.
    pub(crate) fn is_member(&self) -> bool {
        self.member
    }

    /// Paths in either set.
    pub(crate) fn union(mut self, other: &FieldSet) -> FieldSet {
        self.union_in(other);
        self
    }

    /// Adds every path of `other`.
    pub(crate) fn union_in(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, child) in &other.children {
            self.children.entry(pe.clone()).or_default().union_in(child);
        }
    }

    /// Paths in `self` that are not in `other` (exact paths, as upstream: a member of `other`
    /// does not remove longer paths below it).
    pub(crate) fn difference(mut self, other: &FieldSet) -> FieldSet {
        self.remove(other);
        self
    }

    /// Removes every path of `other` (exact paths, as [`FieldSet::difference`]).
    pub(crate) fn remove(&mut self, other: &FieldSet) {
        self.member &= !other.member;
        self.children.retain(|pe, child| {
            if let Some(o) = other.children.get(pe) {
                child.remove(o);
            }
            !child.is_empty()
        });
    }

    /// Paths in both sets.
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && other.member, children: BTreeMap::new() };
        for (pe, child) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let c = child.intersection(o);
                if !c.is_empty() {
                    out.children.insert(pe.clone(), c);
                }
            }
        }
        out
    }

    /// The set plus every named-field ancestor of its paths (upstream
    /// `EnsureNamedFieldsAreMembers`): list items are not added as ancestors.
    pub(crate) fn with_field_ancestors(&self) -> FieldSet {
        let mut out = FieldSet { member: self.member, children: BTreeMap::new() };
        for (pe, child) in &self.children {
            let mut c = child.with_field_ancestors();
            if matches!(pe, Pe::Field(_)) && !c.children.is_empty() {
                c.member = true;
            }
            out.children.insert(pe.clone(), c);
        }
        out
    }

    /// All member paths, in order.
    pub(crate) fn paths(&self) -> Vec<Vec<Pe>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<Pe>, out: &mut Vec<Vec<Pe>>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (pe, child) in &self.children {
            let mut c = match child.to_fields_v1() {
                Value::Object(c) => c,
                _ => Map::new(),
            };
            if child.member && !child.children.is_empty() {
                c.insert(".".to_owned(), Value::Object(Map::new()));
            }
            m.insert(pe.encode(), Value::Object(c));
        }
        Value::Object(m)
    }

    /// Parses `FieldsV1` JSON.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(m) = v else { return Err("fieldsV1 must be an object".to_owned()) };
        let mut out = FieldSet::new();
        for (k, child) in m {
            if k == "." {
                continue;
            }
            let pe = Pe::decode(k).ok_or_else(|| format!("invalid fieldsV1 path element {k:?}"))?;
            let Value::Object(cm) = child else {
                return Err(format!("fieldsV1 entry {k:?} must be an object"));
            };
            let mut c = FieldSet::from_fields_v1(child)?;
            c.member = cm.is_empty() || cm.contains_key(".");
            out.children.insert(pe, c);
        }
        Ok(out)
    }
}
