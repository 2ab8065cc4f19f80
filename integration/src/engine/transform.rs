//! Route transforms: edits of the route's copy of the event. Pure functions.

use serde_json::Value;

use super::definition::Transform;
use super::path::PathError;

/// A transform that could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("transforms[{index}] ({operation}): {source}")]
pub struct TransformError {
    /// Position of the transform in the route.
    pub index: usize,
    /// `set`, `remove` or `rename`.
    pub operation: &'static str,
    /// What went wrong (names paths, never values).
    #[source]
    pub source: PathError,
}

impl TransformError {
    /// Short stable label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        self.source.metric_label()
    }
}

/// Applies `transforms` in order to `event`; returns how many were applied. Stops at the first
/// failure (the event is then partly edited: callers work on a copy).
pub fn apply(transforms: &[Transform], event: &mut Value) -> Result<usize, TransformError> {
    for (index, transform) in transforms.iter().enumerate() {
        let (operation, result) = match transform {
            Transform::Set { field, value } => ("set", field.set(event, value.clone())),
            Transform::Remove { fields } => {
                for field in fields {
                    field.remove(event);
                }
                ("remove", Ok(()))
            }
            Transform::Rename { from, to } => ("rename", rename(event, from, to)),
        };
        result.map_err(|source| TransformError { index, operation, source })?;
    }
    Ok(transforms.len())
}

fn rename(
    event: &mut Value,
    from: &super::path::FieldPath,
    to: &super::path::FieldPath,
) -> Result<(), PathError> {
    // Check the destination first so a failure leaves the source in place.
    let mut probe = event.clone();
    to.set(&mut probe, Value::Null)?;
    if let Some(value) = from.take(event)? {
        to.set(event, value)?;
    }
    Ok(())
}
