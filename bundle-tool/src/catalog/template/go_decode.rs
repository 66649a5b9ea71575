//! Reading template objects with the rules of Go's `encoding/json`, which opm's templates are
//! decoded with: keys match struct fields case-insensitively (`Schema:` works like
//! `schema:`), the last of two matching keys wins, and — for the semver template, decoded
//! strictly — a key that matches no field is an error worded as Go words it.

use serde_json::{Map, Value};

/// Go's `encoding/json` refusing a template object, in its words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GoDecodeError {
    /// The value is not an object.
    #[error("json: cannot unmarshal {found} into Go value of type {type_name}")]
    NotAnObject {
        /// The JSON kind found.
        found: &'static str,
        /// The Go type.
        type_name: &'static str,
    },
    /// A key that matches no field (strict decoding).
    #[error("json: unknown field {0:?}")]
    UnknownField(String),
    /// A field of the wrong JSON kind.
    #[error(
        "json: cannot unmarshal {found} into Go struct field {type_name}.{field} of type {go_type}"
    )]
    FieldType {
        /// The JSON kind found.
        found: &'static str,
        /// The Go struct.
        type_name: &'static str,
        /// The field.
        field: String,
        /// The field's Go type.
        go_type: String,
    },
}

/// The fields of one JSON object, looked up the way Go's decoder matches them.
pub struct GoObject<'a> {
    map: &'a Map<String, Value>,
    /// The Go type name used in error messages (`semver.SemverTemplateData`, …).
    type_name: &'static str,
}

impl<'a> GoObject<'a> {
    /// Wraps `value`, which must be an object (or null, read as an empty object).
    pub fn new(value: &'a Value, type_name: &'static str) -> Result<Self, GoDecodeError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match value {
            Value::Object(map) => Ok(GoObject { map, type_name }),
            Value::Null => Ok(GoObject {
                map: EMPTY.get_or_init(Map::new),
                type_name,
            }),
            other => Err(GoDecodeError::NotAnObject {
                found: go_kind(other),
                type_name,
            }),
        }
    }

    /// Fails on the first key that matches none of `fields` (strict decoding).
    pub fn reject_unknown(&self, fields: &[&str]) -> Result<(), GoDecodeError> {
        match self
            .map
            .keys()
            .find(|k| !fields.iter().any(|f| f.eq_ignore_ascii_case(k)))
        {
            Some(key) => Err(GoDecodeError::UnknownField(key.clone())),
            None => Ok(()),
        }
    }

    /// The value of `field` (the last key matching it case-insensitively), if present and
    /// not null.
    pub fn get(&self, field: &str) -> Option<&'a Value> {
        self.map
            .iter()
            .rfind(|(k, _)| k.eq_ignore_ascii_case(field))
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    }

    /// A string field ("" when absent).
    pub fn string(&self, field: &str) -> Result<String, GoDecodeError> {
        match self.get(field) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.mismatch(field, other, "string")),
        }
    }

    /// A boolean field (false when absent).
    pub fn boolean(&self, field: &str) -> Result<bool, GoDecodeError> {
        match self.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.mismatch(field, other, "bool")),
        }
    }

    /// A list field (empty when absent).
    pub fn list(&self, field: &str, element: &str) -> Result<&'a [Value], GoDecodeError> {
        match self.get(field) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.mismatch(field, other, &format!("[]{element}"))),
        }
    }

    fn mismatch(&self, field: &str, value: &Value, go_type: &str) -> GoDecodeError {
        GoDecodeError::FieldType {
            found: go_kind(value),
            type_name: self.type_name,
            field: field.to_string(),
            go_type: go_type.to_string(),
        }
    }
}

/// The JSON kind as Go's error messages name it.
fn go_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
