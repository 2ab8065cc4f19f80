//! `meta.k8s.io/v1` `Table` output (`kubectl get`), like kube-apiserver's
//! table convertors.
//!
//! Columns: `Name` (unless a built-in's printer column already has format
//! `name`, as Events' does), then [`ResourceInfo::printer_columns`]. Custom resources
//! without columns get upstream's default `Age` column; built-ins without
//! columns get the default table's `Created At`.
//!
//! Cells of a JSONPath column follow the apiextensions table convertor: the
//! first JSONPath result converted to the column type; `date` columns as a
//! human duration (`5m`, `2d3h`; `<invalid>` for an unparsable time); a missing
//! value is a `null` cell for custom resources, and `0`/`""` for built-ins.
//! Columns `computed:<name>` are rendered by kubectl's printer logic (see
//! `computed`).

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::catalog::{PrinterColumn, ResourceInfo};
use crate::discovery::media_ranges;

mod computed;
mod jsonpath;
mod pod;
#[cfg(test)]
mod tests;

use computed::human_duration;

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// `?includeObject=`: what each row's `object` carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the query value; absent means `Metadata`, unknown is `None`
    /// (the caller answers 400).
    pub fn from_query(value: Option<&str>) -> Option<Self> {
        match value {
            None | Some("") | Some("Metadata") => Some(IncludeObject::Metadata),
            Some("None") => Some(IncludeObject::None),
            Some("Object") => Some(IncludeObject::Object),
            Some(_) => None,
        }
    }
}

/// A Table was asked for in `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRequest {
    /// `true` for `v=v1beta1`.
    pub v1beta1: bool,
}

impl TableRequest {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub fn api_version(&self) -> &'static str {
        if self.v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" }
    }
}

/// Recognises `application/json;as=Table;v=v1;g=meta.k8s.io` (or v1beta1)
/// in an Accept header. Ranges are tried by `q` then order; the first JSON
/// range decides, so `application/json` before any Table range means no Table.
pub fn parse_table_accept(accept: &str) -> Option<TableRequest> {
    for range in media_ranges(accept) {
        let json_like = matches!(range.mime.as_str(), "application/json" | "application/*" | "*/*");
        if !json_like {
            continue;
        }
        match (range.param("as"), range.param("g"), range.param("v")) {
            (None, _, _) => return None,
            (Some("Table"), Some("meta.k8s.io"), Some("v1")) => {
                return Some(TableRequest { v1beta1: false });
            }
            (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) => {
                return Some(TableRequest { v1beta1: true });
            }
            _ => continue,
        }
    }
    None
}

/// Rewrites a table built by [`table`] to `meta.k8s.io/v1beta1`.
pub fn set_table_version(table: &mut Value, request: TableRequest) {
    let api_version = json!(request.api_version());
    table["apiVersion"] = api_version.clone();
    for row in table["rows"].as_array_mut().into_iter().flatten() {
        if row.pointer("/object/kind").and_then(Value::as_str) == Some("PartialObjectMetadata") {
            row["object"]["apiVersion"] = api_version.clone();
        }
    }
}

enum Cell {
    Name,
    Path(jsonpath::ColumnPath),
    Computed(String),
}

fn columns(info: &ResourceInfo) -> Vec<PrinterColumn> {
    let mut columns = Vec::new();
    // Built-in Events put their (wide) Name column last, like kubectl's printer.
    if !(info.builtin && info.printer_columns.iter().any(|c| c.format.as_deref() == Some("name"))) {
        columns.push(
            PrinterColumn::new("Name", "string", ".metadata.name", NAME_DESCRIPTION)
                .with_format("name"),
        );
    }
    if info.printer_columns.is_empty() {
        columns.push(if info.builtin {
            PrinterColumn::new("Created At", "date", "computed:created-at", CREATION_DESCRIPTION)
        } else {
            PrinterColumn::new("Age", "date", ".metadata.creationTimestamp", CREATION_DESCRIPTION)
        });
    }
    columns.extend(info.printer_columns.iter().cloned());
    columns
}

/// Builds a `meta.k8s.io/v1` `Table` of `objects`. `metadata` is left empty
/// for the caller to fill (`resourceVersion`, `continue`); with
/// `with_headers == false` (later watch events) `columnDefinitions` is empty.
pub fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    include_object: IncludeObject,
    now: Timestamp,
    with_headers: bool,
) -> Value {
    let columns = columns(info);
    let cells: Vec<Cell> = columns
        .iter()
        .map(|c| match c.json_path.strip_prefix("computed:") {
            _ if c.json_path == ".metadata.name" => Cell::Name,
            Some(name) => Cell::Computed(name.to_owned()),
            None => Cell::Path(jsonpath::ColumnPath::new(&c.json_path)),
        })
        .collect();
    let definitions: Vec<Value> = if with_headers {
        columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.type_,
                    "format": c.format.clone().unwrap_or_default(),
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let row_cells: Vec<Value> = columns
                .iter()
                .zip(&cells)
                .map(|(column, cell)| match cell {
                    Cell::Name => json!(object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()),
                    Cell::Computed(name) => computed::cell(name, object, now).unwrap_or(Value::Null),
                    Cell::Path(path) => path_cell(column, path.first(object), info.builtin, now),
                })
                .collect();
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(row_cells));
            match include_object {
                IncludeObject::None => {}
                IncludeObject::Object => {
                    row.insert("object".into(), (*object).clone());
                }
                IncludeObject::Metadata => {
                    row.insert(
                        "object".into(),
                        json!({
                            "kind": "PartialObjectMetadata",
                            "apiVersion": "meta.k8s.io/v1",
                            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
                        }),
                    );
                }
            }
            Value::Object(row)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// `cellForJSONValue` of the apiextensions table convertor.
fn path_cell(
    column: &PrinterColumn,
    value: Option<&Value>,
    builtin: bool,
    now: Timestamp,
) -> Value {
    let missing = || match column.type_.as_str() {
        "integer" | "number" if builtin => json!(0),
        "string" if builtin => json!(""),
        _ => Value::Null,
    };
    let Some(value) = value.filter(|v| !v.is_null()) else { return missing() };
    match (column.type_.as_str(), value) {
        ("string", Value::String(_)) => value.clone(),
        ("string", Value::Number(n)) => json!(n.to_string()),
        ("string", Value::Bool(b)) => json!(b.to_string()),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => {
            n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, |i| json!(i))
        }
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match s.parse::<Timestamp>() {
            Ok(ts) => json!(human_duration(now.as_nanosecond() - ts.as_nanosecond())),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// Whether `computed:<name>` is a column name this module renders.
#[cfg(test)]
pub(crate) fn is_known_computed(name: &str) -> bool {
    computed::cell(name, &json!({}), Timestamp::UNIX_EPOCH).is_some()
}
