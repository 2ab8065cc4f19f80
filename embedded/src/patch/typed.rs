//! Structured-merge-diff operations on JSON objects, guided by [`ListSemantics`]: field sets,
//! merge of an applied configuration, comparison, and removal of fields.
//!
//! Hand-written after upstream sigs.k8s.io/structured-merge-diff (no Rust implementation
//! exists). Objects are plain JSON: maps are always granular, lists follow [`ListKind`].

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, Pe, canonical_json, field_key};
use super::lists::{ListKind, ListSemantics};

/// Added, modified and removed fields between two objects (upstream `typed.Comparison`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Fields only in the new object.
    pub(crate) added: FieldSet,
    /// Fields whose value changed.
    pub(crate) modified: FieldSet,
    /// Fields only in the old object.
    pub(crate) removed: FieldSet,
}

/// Walks objects while tracking the path to where it is.
pub(crate) struct Walker<'a> {
    lists: &'a dyn ListSemantics,
    pes: Vec<Pe>,
}

impl<'a> Walker<'a> {
    /// A walker at the root of an object.
    pub(crate) fn new(lists: &'a dyn ListSemantics) -> Self {
        Self { lists, pes: Vec::new() }
    }

    /// The abstract path to here: field names, and `*` for list items.
    fn abs_path(&self) -> Vec<&str> {
        let segments = self.pes.iter().map(|pe| match pe {
            Pe::Field(name) => name.as_str(),
            _ => "*",
        });
        segments.collect()
    }

    fn list_kind(&self) -> ListKind {
        self.lists.list_kind(&self.abs_path())
    }

    fn push_field(&mut self, name: &str) {
        self.pes.push(Pe::Field(name.to_owned()));
    }

    /// Steps into a list item; `pe` is never a field.
    fn push_item(&mut self, pe: Pe) {
        self.pes.push(pe);
    }

    fn pop(&mut self) {
        self.pes.pop();
    }

    /// The path element of a list item. Strict: an error for a map-list item without its key
    /// fields; lenient: such items fall back to their index.
    fn item_pe(
        &self,
        kind: &ListKind,
        item: &Value,
        index: usize,
        strict: bool,
    ) -> Result<Pe, String> {
        match kind {
            ListKind::Atomic => Ok(Pe::Index(index)),
            ListKind::Set => Ok(Pe::Value(canonical_json(item))),
            ListKind::Map(keys) => {
                let Some(obj) = item.as_object() else {
                    return if strict {
                        Err(format!(
                            "{}: associative list with keys may not have non-map elements",
                            self.where_()
                        ))
                    } else {
                        Ok(Pe::Index(index))
                    };
                };
                let mut fields = Vec::with_capacity(keys.len());
                for key in keys {
                    match obj.get(key).filter(|v| !v.is_null()) {
                        Some(v) => fields.push((key.clone(), v.clone())),
                        None => match self.lists.key_default(&self.abs_path(), key) {
                            Some(d) => fields.push((key.clone(), d)),
                            None if strict => {
                                return Err(format!(
                                    "{}: associative list with keys has an element that omits key \
                                     field {key:?} (and doesn't have default value)",
                                    self.where_()
                                ));
                            }
                            None => return Ok(Pe::Index(index)),
                        },
                    }
                }
                Ok(Pe::key(fields))
            }
        }
    }

    fn where_(&self) -> String {
        let p = super::fieldpath::display_path(&self.pes);
        if p.is_empty() { ".".to_owned() } else { p }
    }

    /// Path elements of all items; strict mode rejects duplicates.
    fn item_pes(&self, kind: &ListKind, items: &[Value], strict: bool) -> Result<Vec<Pe>, String> {
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let pe = self.item_pe(kind, item, i, strict)?;
            if strict && !seen.insert(pe.clone()) {
                return Err(format!(
                    "{}: duplicate entries for key {}",
                    self.where_(),
                    pe.encode()
                ));
            }
            out.push(pe);
        }
        Ok(out)
    }

    /// The fields set by `v` (upstream `ToFieldSet`): leaves, empty maps, atomic lists, and
    /// every item of set and map lists.
    pub(crate) fn field_set(&mut self, v: &Value, strict: bool) -> Result<FieldSet, String> {
        let mut out = FieldSet::new();
        if let Value::Object(m) = v {
            self.fields_of_map(m, strict, &mut out)?;
        }
        Ok(out)
    }

    fn fields_of_map(
        &mut self,
        m: &Map<String, Value>,
        strict: bool,
        out: &mut FieldSet,
    ) -> Result<(), String> {
        for (k, child) in m {
            self.push_field(k);
            let r = self.fields_of(child, strict, out);
            self.pop();
            r?;
        }
        Ok(())
    }

    fn fields_of(&mut self, v: &Value, strict: bool, out: &mut FieldSet) -> Result<(), String> {
        match v {
            Value::Object(m) if !m.is_empty() => self.fields_of_map(m, strict, out),
            Value::Array(items) => {
                let kind = self.list_kind();
                if kind == ListKind::Atomic {
                    out.insert(&self.pes);
                    return Ok(());
                }
                let pes = self.item_pes(&kind, items, strict)?;
                for (item, pe) in items.iter().zip(pes) {
                    self.push_item(pe);
                    out.insert(&self.pes);
                    let r = match item {
                        Value::Object(m) if matches!(kind, ListKind::Map(_)) => {
                            self.fields_of_map(m, strict, out)
                        }
                        _ => Ok(()),
                    };
                    self.pop();
                    r?;
                }
                Ok(())
            }
            _ => {
                out.insert(&self.pes);
                Ok(())
            }
        }
    }

    /// Merges an applied configuration into a live object (upstream `TypedValue.Merge`):
    /// maps recursively, scalars and atomic lists from `rhs`, set and map lists item by item.
    /// `null` in `rhs` removes the field.
    pub(crate) fn merge(&mut self, lhs: Option<&Value>, rhs: &Value) -> Result<Value, String> {
        match rhs {
            Value::Object(rm) => {
                let mut out = match lhs {
                    Some(Value::Object(lm)) => lm.clone(),
                    _ => Map::new(),
                };
                for (k, rv) in rm {
                    if rv.is_null() {
                        out.remove(k);
                        continue;
                    }
                    self.push_field(k);
                    let merged = self.merge(out.get(k), rv);
                    self.pop();
                    out.insert(k.clone(), merged?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(ritems) => {
                let kind = self.list_kind();
                if kind == ListKind::Atomic {
                    return Ok(rhs.clone());
                }
                let litems = match lhs {
                    Some(Value::Array(l)) => l.as_slice(),
                    _ => &[],
                };
                self.merge_list(&kind, litems, ritems).map(Value::Array)
            }
            scalar => Ok(scalar.clone()),
        }
    }

    /// Upstream's list merge: shared items keep the applied order, live-only items keep their
    /// position relative to them.
    fn merge_list(
        &mut self,
        kind: &ListKind,
        lhs: &[Value],
        rhs: &[Value],
    ) -> Result<Vec<Value>, String> {
        let rpes = self.item_pes(kind, rhs, true)?;
        let lpes = self.item_pes(kind, lhs, false)?;
        let mut observed_l: HashMap<&Pe, usize> = HashMap::new();
        for (i, pe) in lpes.iter().enumerate() {
            observed_l.entry(pe).or_insert(i);
        }
        let observed_r: HashMap<&Pe, usize> =
            rpes.iter().enumerate().map(|(i, pe)| (pe, i)).collect();
        let mut shared = rpes.iter().filter(|pe| observed_l.contains_key(pe));
        let mut next_shared = shared.next();
        let mut merged_r: HashSet<&Pe> = HashSet::new();
        let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
        let (mut li, mut ri) = (0, 0);
        while li < lpes.len() || ri < rpes.len() {
            if li < lpes.len() && ri < rpes.len() {
                let pe = &lpes[li];
                if *pe == rpes[ri] {
                    merged_r.insert(pe);
                    out.push(self.merge_item(
                        kind,
                        pe,
                        observed_l.get(pe).map(|&i| &lhs[i]),
                        &rhs[ri],
                    )?);
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if observed_r.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < lpes.len() {
                let pe = &lpes[li];
                if !observed_r.contains_key(pe) {
                    out.push(lhs[li].clone());
                    li += 1;
                    continue;
                } else if merged_r.contains(pe) {
                    li += 1;
                    continue;
                }
            }
            if ri < rpes.len() {
                let pe = &rpes[ri];
                merged_r.insert(pe);
                out.push(self.merge_item(
                    kind,
                    pe,
                    observed_l.get(pe).map(|&i| &lhs[i]),
                    &rhs[ri],
                )?);
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.next();
                }
            }
        }
        Ok(out)
    }

    fn merge_item(
        &mut self,
        kind: &ListKind,
        pe: &Pe,
        lhs: Option<&Value>,
        rhs: &Value,
    ) -> Result<Value, String> {
        if !matches!(kind, ListKind::Map(_)) {
            return Ok(rhs.clone());
        }
        self.push_item(pe.clone());
        let r = self.merge(lhs, rhs);
        self.pop();
        r
    }

    /// Compares two objects (upstream `TypedValue.Compare`).
    pub(crate) fn compare(&mut self, old: &Value, new: &Value) -> Comparison {
        let mut c = Comparison::default();
        self.compare_at(Some(old), Some(new), &mut c);
        c
    }

    /// The fields below `v` (at the walker's position) as `FieldsV1`, less the paths of
    /// `excluded`: what [`Walker::compare`] finds added when nothing was there, every field and
    /// item, maps and granular lists included. Built bottom-up and straight into `FieldsV1`, as
    /// a create's managed fields are: no field set in between, whose every node and path element
    /// is an allocation of its own.
    pub(crate) fn added_fields_v1(
        &mut self,
        v: &Value,
        excluded: Option<&FieldSet>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        match v {
            Value::Object(fields) => {
                for (name, child) in fields {
                    self.push_field(name);
                    // Looked up by the step just taken, rather than by a copy of the name.
                    let excluded = excluded.zip(self.pes.last()).and_then(|(e, pe)| e.child(pe));
                    let below = self.added_fields_v1(child, excluded);
                    self.pop();
                    add_fields_v1(&mut out, field_key(name), below, excluded);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let kind = self.list_kind();
                if kind == ListKind::Atomic {
                    return out;
                }
                let pes = self.item_pes(&kind, items, false).unwrap_or_default();
                for (item, pe) in items.iter().zip(pes) {
                    let excluded = excluded.and_then(|e| e.child(&pe));
                    let key = pe.encode();
                    self.push_item(pe);
                    let below = self.added_fields_v1(item, excluded);
                    self.pop();
                    add_fields_v1(&mut out, key, below, excluded);
                }
            }
            _ => {}
        }
        out
    }

    fn compare_at(&mut self, l: Option<&Value>, r: Option<&Value>, c: &mut Comparison) {
        let empty = |v: Option<&Value>| match v {
            None => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        let container =
            |v: Option<&Value>| matches!(v, None | Some(Value::Object(_) | Value::Array(_)));
        let same_shape = match (l, r) {
            (Some(Value::Object(_)), Some(Value::Object(_)))
            | (Some(Value::Array(_)), Some(Value::Array(_))) => true,
            (None, Some(v)) | (Some(v), None) => v.is_object() || v.is_array(),
            _ => false,
        };
        let is_list = matches!(l, Some(Value::Array(_))) || matches!(r, Some(Value::Array(_)));
        let atomic = is_list && self.list_kind() == ListKind::Atomic;
        if !same_shape || atomic || (empty(l) && empty(r)) || !container(l) || !container(r) {
            if !same_shape && l.is_some() && r.is_some() {
                // A change of type: what was below the old value is gone, the new one is added.
                self.compare_children(l, None, c);
                self.compare_children(None, r, c);
            }
            match (l, r) {
                (None, Some(_)) => c.added.insert(&self.pes),
                (Some(_), None) => c.removed.insert(&self.pes),
                (Some(a), Some(b)) if a != b => c.modified.insert(&self.pes),
                _ => {}
            }
            return;
        }
        self.compare_children(l, r, c);
        match (l, r) {
            (None, Some(_)) => c.added.insert(&self.pes),
            (Some(_), None) => c.removed.insert(&self.pes),
            _ => {}
        }
    }

    fn compare_children(&mut self, l: Option<&Value>, r: Option<&Value>, c: &mut Comparison) {
        match (l, r) {
            (Some(Value::Object(_)) | None, Some(Value::Object(_)) | None) => {
                let lm = l.and_then(Value::as_object);
                let rm = r.and_then(Value::as_object);
                if let Some(rm) = rm {
                    for (k, rv) in rm {
                        self.push_field(k);
                        self.compare_at(lm.and_then(|m| m.get(k)), Some(rv), c);
                        self.pop();
                    }
                }
                if let Some(lm) = lm {
                    for (k, lv) in lm {
                        if rm.is_some_and(|m| m.contains_key(k)) {
                            continue;
                        }
                        self.push_field(k);
                        self.compare_at(Some(lv), None, c);
                        self.pop();
                    }
                }
            }
            (Some(Value::Array(_)) | None, Some(Value::Array(_)) | None) => {
                let kind = self.list_kind();
                if kind == ListKind::Atomic {
                    return;
                }
                let la: &[Value] = l.and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let ra: &[Value] = r.and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let lpes = self.item_pes(&kind, la, false).unwrap_or_default();
                let rpes = self.item_pes(&kind, ra, false).unwrap_or_default();
                let mut observed_l: HashMap<&Pe, usize> = HashMap::new();
                for (i, pe) in lpes.iter().enumerate() {
                    observed_l.entry(pe).or_insert(i);
                }
                let observed_r: HashSet<&Pe> = rpes.iter().collect();
                for (item, pe) in ra.iter().zip(&rpes) {
                    self.push_item(pe.clone());
                    self.compare_at(observed_l.get(pe).map(|&i| &la[i]), Some(item), c);
                    self.pop();
                }
                for (item, pe) in la.iter().zip(&lpes) {
                    if observed_r.contains(pe) {
                        continue;
                    }
                    self.push_item(pe.clone());
                    self.compare_at(Some(item), None, c);
                    self.pop();
                }
            }
            _ => {}
        }
    }

    /// Removes every member path of `set`, with everything below it, from `v`.
    pub(crate) fn remove_items(&mut self, v: &mut Value, set: &FieldSet) {
        match v {
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    let Some(node) = set.child(&Pe::Field(k.clone())) else { continue };
                    if node.is_member() {
                        m.remove(&k);
                    } else if let Some(child) = m.get_mut(&k) {
                        self.push_field(&k);
                        self.remove_items(child, node);
                        self.pop();
                    }
                }
            }
            Value::Array(items) => {
                let kind = self.list_kind();
                if kind == ListKind::Atomic {
                    return;
                }
                let pes = self.item_pes(&kind, items, false).unwrap_or_default();
                let mut kept = Vec::with_capacity(items.len());
                for (mut item, pe) in std::mem::take(items).into_iter().zip(pes) {
                    match set.child(&pe) {
                        Some(node) if node.is_member() => continue,
                        Some(node) => {
                            self.push_item(pe.clone());
                            self.remove_items(&mut item, node);
                            self.pop();
                        }
                        None => {}
                    }
                    kept.push(item);
                }
                *items = kept;
            }
            _ => {}
        }
    }
}

/// Adds the `FieldsV1` entry `key` with `below` under it to `out`. It is a member unless
/// `excluded` holds its path (a member with children gets `.`); one that is neither a member nor
/// has children is left out. Items with the same key merge, as in a field set.
fn add_fields_v1(
    out: &mut Map<String, Value>,
    key: String,
    mut below: Map<String, Value>,
    excluded: Option<&FieldSet>,
) {
    let member = !excluded.is_some_and(FieldSet::is_member);
    if member && !below.is_empty() {
        below.insert(".".to_owned(), Value::Object(Map::new()));
    } else if !member && below.is_empty() {
        return;
    }
    match out.entry(key) {
        serde_json::map::Entry::Vacant(slot) => {
            slot.insert(Value::Object(below));
        }
        serde_json::map::Entry::Occupied(mut slot) => {
            if let Value::Object(into) = slot.get_mut() {
                union_fields_v1(into, below);
            }
        }
    }
}

/// Adds the paths of `from` to `into`, both `FieldsV1` of the same path (so both members or
/// neither).
fn union_fields_v1(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(into)), Value::Object(from)) => union_fields_v1(into, from),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}
