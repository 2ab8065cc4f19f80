//! Strategic merge patch (`application/strategic-merge-patch+json`).
//!
//! Hand-written because no Rust crate implements Kubernetes' strategic merge patch: it is
//! defined only by upstream Go code (k8s.io/apimachinery/pkg/util/strategicpatch), whose list
//! handling depends on per-field patch strategies and merge keys of the Go types. Here those
//! come from [`ListSemantics`]: map lists merge by their first key (upstream `patchMergeKey`),
//! set lists are unioned, everything else is replaced.
//!
//! Deviations from upstream, all on inputs kubectl never sends: `$patch: merge` is accepted
//! as a no-op instead of rejected, `$patch: delete` on a map field removes the field instead
//! of leaving `{}`, and values added from the patch (new keys, new list items) have their
//! own `null`s and directives resolved instead of being stored verbatim.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::PatchError;
use super::lists::{ListKind, ListSemantics};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge patch to `doc` (both JSON objects). Maps merge recursively and
/// `null` deletes; lists follow `lists`; the directives `$patch` (`replace`, `delete`,
/// `merge`), `$setElementOrder/<field>`, `$retainKeys` and `$deleteFromPrimitiveList/<field>`
/// are honoured. Errors are [`PatchError::Invalid`].
pub fn strategic_merge_patch(
    doc: &Value,
    patch: &Value,
    lists: &dyn ListSemantics,
) -> Result<Value, PatchError> {
    let Value::Object(doc) = doc else {
        return Err(invalid("the object to patch is not a JSON object"));
    };
    let Value::Object(patch) = patch else {
        return Err(invalid("a strategic merge patch must be a JSON object"));
    };
    let mut smp = Smp { lists, path: Vec::new() };
    Ok(Value::Object(smp.merge_map(doc.clone(), patch.clone())?.unwrap_or_default()))
}

fn invalid(msg: impl Into<String>) -> PatchError {
    PatchError::Invalid(msg.into())
}

fn directive_of(v: &Value) -> Option<&Value> {
    v.as_object().and_then(|m| m.get(DIRECTIVE))
}

struct Smp<'a> {
    lists: &'a dyn ListSemantics,
    /// The abstract path of the value being merged (`*` for list items).
    path: Vec<String>,
}

impl Smp<'_> {
    fn list_kind(&self) -> ListKind {
        let path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        self.lists.list_kind(&path)
    }

    /// The strategic merge key of the list at the current path, if it merges by key.
    fn merge_key(&self) -> Option<String> {
        match self.list_kind() {
            ListKind::Map(keys) => keys.into_iter().next(),
            _ => None,
        }
    }

    /// Merges `patch` into `original`; `None` when the map is deleted by `$patch: delete`.
    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, PatchError> {
        if let Some(d) = patch.remove(DIRECTIVE) {
            match d.as_str() {
                Some("replace") => return self.merge_map(Map::new(), patch),
                Some("delete") => return Ok(None),
                Some("merge") => {}
                _ => return Err(invalid(format!("Unknown patch type: {d} in map"))),
            }
        }
        if let Some(retain) = patch.remove(RETAIN_KEYS) {
            apply_retain_keys(&mut original, &patch, &retain)?;
        }
        let order_keys: Vec<String> =
            patch.keys().filter(|k| k.starts_with(SET_ORDER)).cloned().collect();
        for key in order_keys {
            let order = patch.remove(&key).unwrap_or_default();
            self.set_element_order(&mut original, &mut patch, &key[SET_ORDER.len()..], order)?;
        }

        let mut deletions = Vec::new();
        for (k, pv) in patch {
            if let Some(field) = k.strip_prefix(DELETE_PRIMITIVE) {
                deletions.push((field.to_owned(), pv));
                continue;
            }
            if pv.is_null() {
                original.remove(&k);
                continue;
            }
            self.path.push(k.clone());
            let merged = match (original.remove(&k), pv) {
                (Some(Value::Object(o)), Value::Object(p)) => {
                    self.merge_map(o, p)?.map(Value::Object)
                }
                (Some(Value::Array(o)), Value::Array(p)) => {
                    Some(Value::Array(self.merge_list(o, p)?))
                }
                (_, pv) => self.normalize(pv)?,
            };
            self.path.pop();
            if let Some(v) = merged {
                original.insert(k, v);
            }
        }

        for (field, del) in deletions {
            let Value::Array(del) = del else {
                return Err(invalid(format!(
                    "invalid patch: {DELETE_PRIMITIVE}{field} must be a list"
                )));
            };
            if let Some(Value::Array(items)) = original.get_mut(&field) {
                items.retain(|v| !del.contains(v));
            }
        }
        Ok(Some(original))
    }

    /// A value taken from the patch where there is nothing to merge it with: its own nulls
    /// and directives are resolved against an empty value.
    fn normalize(&mut self, v: Value) -> Result<Option<Value>, PatchError> {
        Ok(match v {
            Value::Object(p) => self.merge_map(Map::new(), p)?.map(Value::Object),
            Value::Array(p) => Some(Value::Array(self.merge_list(Vec::new(), p)?)),
            other => Some(other),
        })
    }

    /// Handles `$setElementOrder/<field>`: merges the field's patch list (if any), then orders
    /// the result by the given order, keeping server-only items near their old neighbours.
    fn set_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        field: &str,
        order: Value,
    ) -> Result<(), PatchError> {
        if field.is_empty() {
            return Err(invalid("invalid patch: $setElementOrder needs a field name"));
        }
        let Value::Array(order) = order else {
            return Err(invalid(format!("invalid patch: {SET_ORDER}{field} must be a list")));
        };
        let orig_list = match original.get(field) {
            Some(Value::Array(a)) => Some(a.clone()),
            None | Some(Value::Null) => None,
            Some(_) => return Err(invalid(format!("{field} is not a list in the object"))),
        };
        let patch_list = match patch.remove(field) {
            Some(Value::Array(a)) => Some(a),
            None => None,
            Some(_) => return Err(invalid(format!("invalid patch: {field} must be a list"))),
        };
        self.path.push(field.to_owned());
        let mk = self.merge_key();
        let result = (|| {
            if let Some(p) = &patch_list {
                validate_set_order(p, &order, mk.as_deref())?;
            }
            let server_order = orig_list.clone().unwrap_or_default();
            let merged = match (orig_list, patch_list) {
                (None, None) => return Ok(None),
                (Some(o), None) => o,
                (o, Some(p)) => self.merge_list(o.unwrap_or_default(), p)?,
            };
            let (in_order, server_only) = partition(merged, &order, mk.as_deref());
            Ok(Some(normalize_order(in_order, server_only, &order, &server_order, mk.as_deref())))
        })();
        self.path.pop();
        if let Some(list) = result? {
            original.insert(field.to_owned(), Value::Array(list));
        }
        Ok(())
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
    ) -> Result<Vec<Value>, PatchError> {
        match self.list_kind() {
            ListKind::Atomic => Ok(patch),
            ListKind::Set => merge_set(original, patch),
            ListKind::Map(keys) => {
                let mk = keys.into_iter().next().unwrap_or_default();
                self.merge_keyed(original, patch, &mk)
            }
        }
    }

    fn merge_keyed(
        &mut self,
        mut original: Vec<Value>,
        patch: Vec<Value>,
        mk: &str,
    ) -> Result<Vec<Value>, PatchError> {
        let mut replace = false;
        let mut items = Vec::with_capacity(patch.len());
        for item in patch {
            let Value::Object(m) = item else {
                return Err(invalid(format!(
                    "list with merge key {mk:?} has an element that is not a map: {item}"
                )));
            };
            match m.get(DIRECTIVE).map(|d| d.as_str()) {
                None => items.push(m),
                Some(Some("delete")) => {
                    let Some(kv) = m.get(mk) else {
                        return Err(invalid(format!(
                            "map: {} does not contain declared merge key: {mk}",
                            Value::Object(m)
                        )));
                    };
                    original.retain(|o| o.get(mk) != Some(kv));
                }
                Some(Some("replace")) => replace = true,
                Some(Some("merge")) if m.contains_key(mk) => items.push(m),
                Some(Some("merge")) => {}
                Some(_) => {
                    return Err(invalid(format!("Unknown patch type: {} in list", m[DIRECTIVE])));
                }
            }
        }
        self.path.push("*".to_owned());
        let result = (|| {
            if replace {
                let mut out = Vec::with_capacity(items.len());
                for m in items {
                    if let Some(m) = self.merge_map(Map::new(), m)? {
                        out.push(Value::Object(m));
                    }
                }
                return Ok(out);
            }
            let server_order = original.clone();
            let mut merged = original;
            let mut patch_order = Vec::with_capacity(items.len());
            for p in items {
                let Some(kv) = p.get(mk).cloned() else {
                    return Err(invalid(format!(
                        "map: {} does not contain declared merge key: {mk}",
                        Value::Object(p)
                    )));
                };
                patch_order.push(Value::Object(Map::from_iter([(mk.to_owned(), kv.clone())])));
                match merged.iter().position(|o| o.get(mk) == Some(&kv)) {
                    Some(pos) => {
                        let o = match std::mem::take(&mut merged[pos]) {
                            Value::Object(o) => o,
                            _ => Map::new(),
                        };
                        match self.merge_map(o, p)? {
                            Some(m) => merged[pos] = Value::Object(m),
                            None => {
                                merged.remove(pos);
                            }
                        }
                    }
                    None => {
                        if let Some(m) = self.merge_map(Map::new(), p)? {
                            merged.push(Value::Object(m));
                        }
                    }
                }
            }
            let (in_patch, server_only) = partition(merged, &patch_order, Some(mk));
            Ok(normalize_order(in_patch, server_only, &patch_order, &server_order, Some(mk)))
        })();
        self.path.pop();
        result
    }
}

/// `$retainKeys`: drops keys of `original` not listed; every non-null patch key must be listed.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
) -> Result<(), PatchError> {
    let bad =
        || invalid("invalid patch: $retainKeys must be a list of field names present in the patch");
    let Value::Array(list) = retain else { return Err(bad()) };
    let mut keys = HashSet::new();
    for k in list {
        keys.insert(k.as_str().ok_or_else(bad)?);
    }
    for (k, v) in patch {
        if v.is_null() || k.starts_with(DELETE_PRIMITIVE) || k.starts_with(SET_ORDER) {
            continue;
        }
        if !keys.contains(k.as_str()) {
            return Err(bad());
        }
    }
    original.retain(|k, _| keys.contains(k.as_str()));
    Ok(())
}

/// Union of a set list, keeping `{"$patch":"replace"}` as "replace with the patch items".
fn merge_set(original: Vec<Value>, patch: Vec<Value>) -> Result<Vec<Value>, PatchError> {
    let mut replace = false;
    let mut items = Vec::with_capacity(patch.len());
    for item in patch {
        match directive_of(&item).map(|d| d.as_str()) {
            None => items.push(item),
            Some(Some("replace")) => replace = true,
            Some(Some("merge")) => {}
            Some(_) => return Err(invalid(format!("Unknown patch type in list: {item}"))),
        }
    }
    if replace {
        return Ok(dedup(items));
    }
    let mut all = original.clone();
    all.extend(items.iter().cloned());
    let (in_patch, server_only) = partition(dedup(all), &items, None);
    Ok(normalize_order(in_patch, server_only, &items, &original, None))
}

fn dedup(values: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Position of `item` in `list`, by merge key for map lists, by value otherwise.
fn index_of(list: &[Value], item: &Value, mk: Option<&str>) -> Option<usize> {
    match mk {
        Some(mk) => {
            let kv = item.get(mk)?;
            list.iter().position(|v| v.get(mk) == Some(kv))
        }
        None => list.iter().position(|v| v == item),
    }
}

/// Splits `items` into those present in `by` and the others, keeping relative order.
fn partition(items: Vec<Value>, by: &[Value], mk: Option<&str>) -> (Vec<Value>, Vec<Value>) {
    items.into_iter().partition(|v| index_of(by, v, mk).is_some())
}

/// Upstream `normalizeElementOrder`: patch items in patch order, server-only items in live
/// order, interleaved by their live positions.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    mk: Option<&str>,
) -> Vec<Value> {
    patch_items.sort_by_key(|v| index_of(patch_order, v, mk).unwrap_or(usize::MAX));
    server_only.sort_by_key(|v| index_of(server_order, v, mk).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (index_of(server_order, l, mk), index_of(server_order, r, mk)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Upstream `validatePatchWithSetOrderList`: the patch list's items must appear in the
/// `$setElementOrder` list in the same relative order (deletions ignored).
fn validate_set_order(
    patch: &[Value],
    order: &[Value],
    mk: Option<&str>,
) -> Result<(), PatchError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|v| mk.is_none() || directive_of(v).and_then(Value::as_str) != Some("delete"))
        .collect();
    let key_of = |v: &Value| -> Result<Value, PatchError> {
        match mk {
            None => Ok(v.clone()),
            Some(mk) => v.get(mk).cloned().ok_or_else(|| {
                invalid(format!("map: {v} does not contain declared merge key: {mk}"))
            }),
        }
    };
    let (mut pi, mut si) = (0, 0);
    while pi < items.len() && si < order.len() {
        if directive_of(items[pi]).is_some() {
            pi += 1;
            continue;
        }
        if key_of(items[pi])? == key_of(&order[si])? {
            pi += 1;
        }
        si += 1;
    }
    if pi < items.len() {
        return Err(invalid(format!(
            "The order in patch list: {} doesn't match {SET_ORDER} list: {}",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}
