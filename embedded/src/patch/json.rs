//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386), via the `json-patch` crate.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

use super::PatchError;

/// Upstream's limit on the number of operations in one JSON patch.
const MAX_OPERATIONS: usize = 10_000;

/// Applies an RFC 6902 JSON patch (including `test` and the `-` append index) to `doc`.
///
/// As upstream (evanphx/json-patch), a `test` for `null` passes when the path is absent,
/// which `kube_runtime::finalizer` relies on. A failed `test` is [`PatchError::TestFailed`];
/// a malformed patch or an operation that cannot apply is [`PatchError::Invalid`].
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: Patch = serde_json::from_value(patch.clone())
        .map_err(|e| PatchError::Invalid(format!("invalid JSON patch: {e}")))?;
    if ops.0.len() > MAX_OPERATIONS {
        return Err(PatchError::Invalid(format!(
            "the allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            ops.0.len()
        )));
    }
    let mut out = doc.clone();
    for (i, op) in ops.0.iter().enumerate() {
        if let PatchOperation::Test(t) = op
            && t.value.is_null()
            && out.pointer(t.path.as_str()).is_none()
        {
            continue;
        }
        if let Err(e) = json_patch::patch(&mut out, std::slice::from_ref(op)) {
            return Err(match op {
                PatchOperation::Test(_) => PatchError::TestFailed(format!(
                    "testing value {} failed: test failed (operation {i})",
                    e.path
                )),
                _ => PatchError::Invalid(format!(
                    "{} operation {i} does not apply at path '{}': {}",
                    op_name(op),
                    e.path,
                    e.kind
                )),
            });
        }
    }
    Ok(out)
}

fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}

/// Applies an RFC 7386 JSON merge patch to `doc`; `patch` must be a JSON object.
pub fn merge_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    if !patch.is_object() {
        return Err(PatchError::Invalid("a JSON merge patch must be a JSON object".to_owned()));
    }
    let mut out = doc.clone();
    json_patch::merge(&mut out, patch);
    Ok(out)
}
