//! Admission of writes: custom resources are pruned, defaulted and validated against their CRD
//! schema and CEL rules, then Keelson's own checks run in process; CRDs themselves must be
//! structural and correctly named. `fieldValidation` decides what unknown fields do.

use serde_json::Value;

use crate::catalog::ResourceInfo;
use crate::validation::{structural_problems, type_mismatch};

use super::errors::{ApiError, ApiResult, Cause};
use super::objects::{is_crd, meta_str};
use super::registry::Served;

/// What to do with fields the schema does not know (`?fieldValidation=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default, as upstream).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter; unknown values are a 400.
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Ignore, Warn or Strict, not {other:?}"
            ))),
        }
    }
}

/// An admitted object and the warnings to send back.
pub struct Admitted {
    /// The object to store.
    pub object: Value,
    /// `Warning` header texts.
    pub warnings: Vec<String>,
}

/// Runs admission for `object` (and the stored `old` one on update).
pub fn admit(
    served: &Served,
    info: &ResourceInfo,
    object: Value,
    old: Option<&Value>,
    field_validation: FieldValidation,
) -> ApiResult<Admitted> {
    let name = meta_str(&object, "name").unwrap_or_default().to_owned();
    if is_crd(info) {
        check_crd(&object, &name)?;
        return Ok(Admitted { object, warnings: Vec::new() });
    }
    let Some(validator) = served.validator(info) else {
        return admit_builtin(info, object, field_validation);
    };
    let admitted = validator
        .validate(object, old)
        .map_err(|errors| ApiError::from_field_errors(&info.group, &info.kind, &name, &errors))?;
    let warnings = unknown_fields(info, &admitted.pruned_fields, field_validation)?;
    let problems = keelson_webhooks::check(&info.group, &info.kind, &admitted.object, old);
    if !problems.is_empty() {
        let causes = problems
            .into_iter()
            .map(|p| Cause {
                reason: "FieldValueInvalid".into(),
                message: p.message,
                field: p.field,
            })
            .collect();
        return Err(ApiError::invalid(&info.group, &info.kind, &name, causes));
    }
    Ok(Admitted { object: admitted.object, warnings })
}

/// A built-in object loses the fields its type does not have, as decoding it does upstream
/// (`fieldValidation` says whether that is an error, a warning or silent), and is refused when
/// a value does not decode into its field's type.
fn admit_builtin(
    info: &ResourceInfo,
    mut object: Value,
    field_validation: FieldValidation,
) -> ApiResult<Admitted> {
    let Some(schema) = info.schema.get() else {
        return Ok(Admitted { object, warnings: Vec::new() });
    };
    let pruned = crate::validation::prune(&mut object, schema.as_ref());
    refuse_undecodable(info, &object)?;
    let warnings = unknown_fields(info, &pruned, field_validation)?;
    Ok(Admitted { object, warnings })
}

/// Refuses a built-in object with a value its kind's type cannot decode, as upstream's `400`.
pub(super) fn refuse_undecodable(info: &ResourceInfo, object: &Value) -> ApiResult<()> {
    let schema = info.schema.get().filter(|_| info.builtin);
    match schema.and_then(|schema| type_mismatch(object, &schema)) {
        Some(mismatch) => Err(undecodable(info, &format!("json: {mismatch}"))),
        None => Ok(()),
    }
}

/// The `400` of a body that does not decode as `info`'s kind, as upstream words it.
fn undecodable(info: &ResourceInfo, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {detail}",
        info.kind, info.version, info.kind
    ))
}

/// What pruned fields mean under `field_validation`: a `400` when strict, else warnings (none
/// when ignored).
fn unknown_fields(
    info: &ResourceInfo,
    pruned: &[String],
    field_validation: FieldValidation,
) -> ApiResult<Vec<String>> {
    let unknown: Vec<String> =
        pruned.iter().map(|field| format!("unknown field \"{field}\"")).collect();
    Ok(match field_validation {
        FieldValidation::Strict if !unknown.is_empty() => {
            let detail = ["strict decoding error: ", &unknown.join(", ")].concat();
            return Err(undecodable(info, &detail));
        }
        FieldValidation::Ignore => Vec::new(),
        _ => unknown,
    })
}

/// A CRD must be named `<plural>.<group>` and have a structural schema in every version.
fn check_crd(crd: &Value, name: &str) -> ApiResult<()> {
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            vec![Cause { reason: "FieldValueInvalid".into(), message, field: field.into() }],
        )
    };
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
    let plural = crd.pointer("/spec/names/plural").and_then(Value::as_str).unwrap_or_default();
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let versions =
        crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    if versions.is_empty() {
        return Err(invalid(
            "spec.versions",
            "Required value: must have exactly one version marked as storage version".into(),
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
            let problems = structural_problems(schema);
            if let Some(first) = problems.first() {
                return Err(invalid(
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    format!("Invalid value: the schema is not structural: {first}"),
                ));
            }
        }
    }
    Ok(())
}

/// The finalizer that holds a deleted CRD until its custom resources are gone.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Fills the status the API server owns on a CRD: names accepted, established, and, once it is
/// marked for deletion, terminating.
pub fn establish_crd(crd: &mut Value, now: &str) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(Value::Null);
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let condition = |type_: &str, reason: &str, message: &str| {
        let previous = crd
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|list| list.iter().find(|c| c["type"] == type_))
            .and_then(|c| c.get("lastTransitionTime").cloned());
        serde_json::json!({
            "type": type_, "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": previous.unwrap_or_else(|| Value::String(now.to_owned())),
        })
    };
    let mut conditions = vec![
        condition("NamesAccepted", "NoConflicts", "no conflicts found"),
        condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ];
    if crd.pointer("/metadata/deletionTimestamp").is_some() {
        conditions.push(condition(
            "Terminating",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    crd["status"] = serde_json::json!({
        "acceptedNames": names,
        "storedVersions": stored,
        "conditions": conditions,
    });
}
