//! gnostic's protobuf encoding of an OpenAPI v2 document (`openapi.v2.Document`), the form
//! kubectl's discovery client reads from `/openapi/v2`.
//!
//! The messages are declared by hand with `prost`'s derive because no crate carries gnostic's
//! types for Rust. Only the part of the schema this server writes is declared: `swagger`, `info`,
//! `paths` (empty) and `definitions`. Field numbers are gnostic's `OpenAPIv2.proto`. Values of
//! arbitrary JSON (`default`, `enum`, `example`, vendor extensions) travel as gnostic's `Any`
//! with YAML text; JSON text is YAML, so they are written as JSON.

use prost::Message;
use serde_json::{Map, Value};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Paths {}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct AdditionalPropertiesItem {
    #[prost(oneof = "AdditionalProperties", tags = "1, 2")]
    pub oneof: Option<AdditionalProperties>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum AdditionalProperties {
    #[prost(message, boxed, tag = "1")]
    Schema(Box<Schema>),
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Schema {
    #[prost(string, tag = "1")]
    pub xref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// Encodes a document of `definitions` (v2 schemas as JSON), one definition at a time: the
/// `Definitions` message is the concatenation of its `NamedSchema` fields, so each is encoded and
/// dropped before the next is built.
pub(super) fn encode(
    title: &str,
    version: &str,
    definitions: impl Iterator<Item = (String, Value)>,
) -> Vec<u8> {
    let mut named_schemas = Vec::new();
    for (name, schema) in definitions {
        prost::encoding::message::encode(1, &named(&name, &schema), &mut named_schemas);
    }
    let mut out = Document {
        swagger: "2.0".into(),
        info: Some(Info { title: title.into(), version: version.into() }),
        paths: Some(Paths {}),
        definitions: None,
    }
    .encode_to_vec();
    prost::encoding::encode_key(9, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(named_schemas.len() as u64, &mut out);
    out.extend_from_slice(&named_schemas);
    out
}

fn named(name: &str, schema: &Value) -> NamedSchema {
    NamedSchema { name: name.to_owned(), value: Some(schema_message(schema)) }
}

fn any(value: &Value) -> Any {
    Any { yaml: value.to_string() }
}

/// One schema; keys v2 has no field for are left out, except vendor extensions (`x-…`).
fn schema_message(value: &Value) -> Schema {
    let empty = Map::new();
    let map = value.as_object().unwrap_or(&empty);
    let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let float = |key: &str| map.get(key).and_then(Value::as_f64).unwrap_or_default();
    let int = |key: &str| map.get(key).and_then(Value::as_i64).unwrap_or_default();
    let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or_default();
    let strings = |key: &str| -> Vec<String> {
        map.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    Schema {
        xref: text("$ref"),
        format: text("format"),
        title: text("title"),
        description: text("description"),
        default: map.get("default").map(any),
        multiple_of: float("multipleOf"),
        maximum: float("maximum"),
        exclusive_maximum: flag("exclusiveMaximum"),
        minimum: float("minimum"),
        exclusive_minimum: flag("exclusiveMinimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: text("pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: flag("uniqueItems"),
        max_properties: int("maxProperties"),
        min_properties: int("minProperties"),
        required: strings("required"),
        r#enum: map.get("enum").and_then(Value::as_array).into_iter().flatten().map(any).collect(),
        additional_properties: map.get("additionalProperties").map(|extra| {
            Box::new(AdditionalPropertiesItem {
                oneof: Some(match extra {
                    Value::Bool(allowed) => AdditionalProperties::Boolean(*allowed),
                    schema => AdditionalProperties::Schema(Box::new(schema_message(schema))),
                }),
            })
        }),
        r#type: map.get("type").and_then(Value::as_str).map(|t| TypeItem { value: vec![t.into()] }),
        items: map.get("items").map(|items| ItemsItem { schema: vec![schema_message(items)] }),
        properties: map.get("properties").and_then(Value::as_object).map(|properties| Properties {
            additional_properties: properties.iter().map(|(k, v)| named(k, v)).collect(),
        }),
        read_only: flag("readOnly"),
        example: map.get("example").map(any),
        vendor_extension: map
            .iter()
            .filter(|(key, _)| key.starts_with("x-"))
            .map(|(key, value)| NamedAny { name: key.clone(), value: Some(any(value)) })
            .collect(),
    }
}
