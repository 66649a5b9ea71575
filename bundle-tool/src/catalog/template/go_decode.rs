//! Reading template objects with the rules of Go's `encoding/json`, which opm's templates are
//! decoded with: keys match struct fields case-insensitively (`Schema:` works like
//! `schema:`), the last of two matching keys wins, and — for the semver template, decoded
//! strictly — a key that matches no field is an error worded as Go words it.

use serde_json::{Map, Value};

/// The fields of one JSON object, looked up the way Go's decoder matches them.
pub struct GoObject<'a> {
    map: &'a Map<String, Value>,
    /// The Go type name used in error messages (`semver.SemverTemplateData`, …).
    type_name: &'static str,
}

impl<'a> GoObject<'a> {
    /// Wraps `value`, which must be an object (or null, read as an empty object).
    pub fn new(value: &'a Value, type_name: &'static str) -> Result<Self, String> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match value {
            Value::Object(map) => Ok(GoObject { map, type_name }),
            Value::Null => Ok(GoObject {
                map: EMPTY.get_or_init(Map::new),
                type_name,
            }),
            other => Err(format!(
                "json: cannot unmarshal {} into Go value of type {type_name}",
                go_kind(other)
            )),
        }
    }

    /// Fails on the first key that matches none of `fields` (strict decoding).
    pub fn reject_unknown(&self, fields: &[&str]) -> Result<(), String> {
        match self
            .map
            .keys()
            .find(|k| !fields.iter().any(|f| f.eq_ignore_ascii_case(k)))
        {
            Some(key) => Err(format!("json: unknown field {key:?}")),
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
    pub fn string(&self, field: &str) -> Result<String, String> {
        match self.get(field) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.mismatch(field, other, "string")),
        }
    }

    /// A boolean field (false when absent).
    pub fn boolean(&self, field: &str) -> Result<bool, String> {
        match self.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.mismatch(field, other, "bool")),
        }
    }

    /// A list field (empty when absent).
    pub fn list(&self, field: &str, element: &str) -> Result<&'a [Value], String> {
        match self.get(field) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.mismatch(field, other, &format!("[]{element}"))),
        }
    }

    fn mismatch(&self, field: &str, value: &Value, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{field} of type {go_type}",
            go_kind(value),
            self.type_name
        )
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
