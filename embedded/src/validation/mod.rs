//! Validation of custom resources against a CRD version's OpenAPI v3 schema, the way
//! the Kubernetes API server does it: prune unknown fields, apply defaults, check the
//! schema's value validations and list types, then run the `x-kubernetes-validations`
//! CEL rules.
//!
//! Why the schema walk, pruning and errors are hand-written instead of using a JSON
//! Schema crate: Kubernetes' structural schemas differ from plain JSON Schema in ways
//! that change results — `nullable`, `x-kubernetes-int-or-string`,
//! `x-kubernetes-preserve-unknown-fields`, embedded resources, pruning of undeclared
//! fields, `x-kubernetes-list-type` — and the API server reports go-openapi's
//! messages as `field.Error` causes (`FieldValueRequired`, `FieldValueTypeInvalid`,
//! ...), which clients match on. CEL itself is not hand-written: rules are compiled
//! and evaluated by `kube-cel`.

mod cel;
mod checks;
mod decode;
mod defaults;
mod errors;
mod formats;
mod list_type;
mod prune;
mod schema;
mod schema_walk;
mod structural;
mod tree;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_cel::RootContext;
use serde_json::Value;

pub(crate) use decode::type_mismatch;
pub(crate) use errors::{Bad, duplicate, forbidden, invalid, not_found, not_supported, required};
pub use errors::{FieldError, FieldErrorKind, FieldErrors};
pub(crate) use list_type::ListType;
pub(crate) use prune::prune;
pub use structural::structural_problems;

use errors::type_invalid;
use schema::json_type;

/// Why a [`SchemaValidator`] could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("openAPIV3Schema must be an object")]
    NotAnObject,
    /// A `pattern` is not a valid regular expression.
    #[error(
        "{path}: Invalid value: {pattern:?}: must be a valid regular expression, but isn't: {message}"
    )]
    InvalidPattern {
        /// Schema path of the `pattern` keyword.
        path: String,
        /// The pattern.
        pattern: String,
        /// The regex compiler's complaint.
        message: String,
    },
    /// The CRD has no version of that name.
    #[error("CustomResourceDefinition {crd:?} has no version {version:?}")]
    VersionNotFound {
        /// The CRD's name.
        crd: String,
        /// The requested version.
        version: String,
    },
    /// The CRD version has no `schema.openAPIV3Schema`.
    #[error("version {version:?} of CustomResourceDefinition {crd:?} has no openAPIV3Schema")]
    MissingSchema {
        /// The CRD's name.
        crd: String,
        /// The version.
        version: String,
    },
    /// The CRD's schema could not be turned into JSON.
    #[error("cannot serialize the openAPIV3Schema: {0}")]
    Serialize(String),
}

/// An object that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// The object after pruning and defaulting: what the API server would store.
    pub object: Value,
    /// Paths of the fields pruning removed, in the API server's unknown-field notation
    /// (`spec.foo`, `spec.items[0].bar`, `metadata.bogus`; map keys also use `.`).
    /// `fieldValidation=Strict` refuses each as `unknown field "<path>"`; `Warn` warns.
    pub pruned_fields: Vec<String>,
}

/// Compiled validator for one CRD version.
#[derive(Debug)]
pub struct SchemaValidator {
    /// The schema compiled for pruning, defaulting and value validation.
    tree: tree::SchemaTree,
    rules: cel::CelRules,
}

impl SchemaValidator {
    /// `schema` is the version's openAPIV3Schema; group/version/kind bind CEL root variables.
    ///
    /// Compiles every `pattern` (an invalid one is an error) and every CEL rule (a
    /// rule that does not compile is not an error here, but makes every
    /// [`validate`](Self::validate) fail; see [`rule_compile_errors`](Self::rule_compile_errors)).
    pub fn new(
        schema: &Value,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Self, SchemaError> {
        if !schema.is_object() {
            return Err(SchemaError::NotAnObject);
        }
        let tree = tree::SchemaTree::new(schema)?;
        let root_context = RootContext {
            api_version: if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            },
            api_group: group.to_string(),
            kind: kind.to_string(),
        };
        let rules = cel::CelRules::new(schema, root_context);
        Ok(Self { tree, rules })
    }

    /// Convenience: from a k8s_openapi CustomResourceDefinition and a served version name.
    ///
    /// The version is looked up by name; whether it is served is the caller's concern.
    pub fn for_crd(crd: &CustomResourceDefinition, version: &str) -> Result<Self, SchemaError> {
        let crd_name = crd.metadata.name.clone().unwrap_or_default();
        let found = crd.spec.versions.iter().find(|v| v.name == version).ok_or_else(|| {
            SchemaError::VersionNotFound { crd: crd_name.clone(), version: version.to_string() }
        })?;
        let schema =
            found.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()).ok_or_else(|| {
                SchemaError::MissingSchema { crd: crd_name, version: version.to_string() }
            })?;
        let schema =
            serde_json::to_value(schema).map_err(|e| SchemaError::Serialize(e.to_string()))?;
        Self::new(&schema, &crd.spec.group, version, &crd.spec.names.kind)
    }

    /// CEL rules of the schema that did not compile (the API server would have refused
    /// the CRD). Each is also reported by every [`validate`](Self::validate) call.
    pub fn rule_compile_errors(&self) -> &[FieldError] {
        self.rules.compile_errors()
    }

    /// The list type of the list at `path` (field names or map keys, `*` for list items), when
    /// it constrains items.
    pub(crate) fn list_type(&self, path: &[&str]) -> Option<&ListType> {
        self.tree.at(path)?.checks.list_type.as_ref()
    }

    /// The `default` of field `key` of the items of the list at `path`.
    pub(crate) fn item_default(&self, path: &[&str], key: &str) -> Option<&Value> {
        self.tree.at(path)?.items.as_ref()?.properties.get(key)?.default.as_ref()
    }

    /// Only the decoding steps: prune unknown fields, then apply defaults. Lets a
    /// server refuse unknown fields (`fieldValidation=Strict`) before validating.
    pub fn prune_and_default(&self, mut object: Value) -> Admitted {
        let pruned_fields = prune::prune(&mut object, &self.tree);
        defaults::apply_defaults(&mut object, &self.tree);
        Admitted { object, pruned_fields }
    }

    /// Prune, default, validate, run CEL. `old` is the stored object on update (enables oldSelf rules).
    ///
    /// CEL rules are skipped when the schema validation found a wrong type or an
    /// unsupported enum value, with the API server's notice that some rules were not
    /// checked. Transition rules (those using `oldSelf`) run only when `old` has a
    /// value at the rule's field.
    pub fn validate(&self, object: Value, old: Option<&Value>) -> Result<Admitted, FieldErrors> {
        let admitted = self.prune_and_default(object);
        let mut errors = Vec::new();
        if !admitted.object.is_object() {
            let actual = json_type(&admitted.object);
            let detail = format!("body must be of type object: \"{actual}\"");
            errors.push(type_invalid("", Bad::Str(actual), &detail));
            return Err(FieldErrors(errors));
        }
        schema_walk::validate(&self.tree, &admitted.object, "", &mut errors);
        let blocking = errors
            .iter()
            .any(|e| matches!(e.kind, FieldErrorKind::TypeInvalid | FieldErrorKind::NotSupported));
        errors.extend_from_slice(self.rules.compile_errors());
        if !self.rules.is_empty() {
            if blocking {
                errors.push(invalid(
                    "",
                    Bad::Json(&Value::Null),
                    "some validation rules were not checked because the object was invalid; \
                     correct the existing errors to complete validation",
                ));
            } else {
                let old = old.map(|o| self.prune_and_default(o.clone()).object);
                self.rules.evaluate(&admitted.object, old.as_ref(), &mut errors);
            }
        }
        if errors.is_empty() { Ok(admitted) } else { Err(FieldErrors::deduplicated(errors)) }
    }
}

#[cfg(test)]
mod tests;
