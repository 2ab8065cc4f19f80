//! Label selectors: the string syntax of `?labelSelector=` and
//! `metav1.LabelSelector` objects.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::Value;

use super::SelectorError;
use super::parse::{Parser, lex, validate_label_key, validate_label_value};

/// Operator of a label [`Requirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value` (also true when the label is absent)
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)` (also true when the label is absent)
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>3` (integer comparison)
    GreaterThan,
    /// `key<3` (integer comparison)
    LessThan,
}

/// One comma-separated term of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub operator: Operator,
    /// Values, sorted and deduplicated (empty for `Exists`/`DoesNotExist`).
    pub values: Vec<String>,
}

/// A parsed label selector: the AND of its requirements. Empty selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl Requirement {
    /// Validates key and values and builds the requirement.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        validate_label_key(key)?;
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(SelectorError::Syntax(format!(
                    "for 'in', 'notin' operators, values set can't be empty (key {key:?})"
                )));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                return Err(SelectorError::Syntax(format!(
                    "exact-match compatibility requires one single value (key {key:?})"
                )));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(SelectorError::Syntax(format!(
                    "values set must be empty for exists and does not exist (key {key:?})"
                )));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err(SelectorError::Syntax(format!(
                        "for 'Gt', 'Lt' operators, exactly one value is required (key {key:?})"
                    )));
                }
                if values[0].parse::<i64>().is_err() {
                    return Err(SelectorError::InvalidValue {
                        value: values[0].clone(),
                        reason: "for 'Gt', 'Lt' operators, the value must be an integer".into(),
                    });
                }
            }
            _ => {}
        }
        if !matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for value in &values {
                validate_label_value(value)?;
            }
        }
        let mut values = values;
        values.sort();
        values.dedup();
        Ok(Requirement { key: key.to_owned(), operator, values })
    }

    /// Whether `labels` satisfy the requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_value(labels.get(&self.key).map(String::as_str))
    }

    /// Whether an object whose label [`Requirement::key`] has `value` (`None`: absent)
    /// satisfies the requirement.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let int_cmp = |pred: fn(i64, i64) -> bool| match (value, self.values.first()) {
            (Some(have), Some(want)) => match (have.parse::<i64>(), want.parse::<i64>()) {
                (Ok(h), Ok(w)) => pred(h, w),
                _ => false,
            },
            _ => false,
        };
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.values.iter().any(|want| want == v))
            }
            Operator::NotEquals | Operator::NotIn => {
                !value.is_some_and(|v| self.values.iter().any(|want| want == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan => int_cmp(|h, w| h > w),
            Operator::LessThan => int_cmp(|h, w| h < w),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.values.first().map(String::as_str).unwrap_or_default();
        match self.operator {
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{first}", self.key),
            Operator::LessThan => write!(f, "{}<{first}", self.key),
        }
    }
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// Builds a selector from requirements (sorted by key like upstream).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements }
    }

    /// Parses the string syntax (`a=b,c in (x,y),!d`).
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        Parser { tokens: lex(input), pos: 0 }.parse().map(Self::from_requirements)
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector has no requirement (selects everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches against a JSON object's `metadata.labels` (absent = no labels).
    pub fn matches_object(&self, object: &Value) -> bool {
        if self.is_empty() {
            return true;
        }
        let labels = object.get("metadata").and_then(|m| m.get("labels"));
        let value = |key: &str| labels.and_then(|labels| labels.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.matches_value(value(&r.key)))
    }

    /// A `label=value` pair that every selected object carries, if a requirement demands one:
    /// a list need only read the objects the store indexes under it.
    pub fn required_label(&self) -> Option<(&str, &str)> {
        self.requirements.iter().find_map(|r| match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => {
                Some((r.key.as_str(), value.as_str()))
            }
            _ => None,
        })
    }

    /// Converts a `metav1.LabelSelector`. An empty one selects everything; a
    /// *null* selector (selects nothing upstream) is for the caller to handle.
    pub fn from_metav1(selector: &metav1::LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(key, Operator::Equals, vec![value.clone()])?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::Syntax(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            requirements.push(Requirement::new(
                &expr.key,
                operator,
                expr.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Converts a JSON `metav1.LabelSelector` object (`matchLabels`,
    /// `matchExpressions`) or a string in selector syntax (as found at a CRD's
    /// scale `labelSelectorPath`).
    pub fn from_label_selector(value: &Value) -> Result<Self, SelectorError> {
        match value {
            Value::String(s) => Self::parse(s),
            Value::Object(_) => {
                let selector: metav1::LabelSelector = serde_json::from_value(value.clone())
                    .map_err(|e| {
                        SelectorError::Syntax(format!("invalid label selector object: {e}"))
                    })?;
                Self::from_metav1(&selector)
            }
            other => Err(SelectorError::Syntax(format!(
                "a label selector must be an object or string, not {other}"
            ))),
        }
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Formats like apimachinery's `Selector.String()` (`""` when empty).
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}
