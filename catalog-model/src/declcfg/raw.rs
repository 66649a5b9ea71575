//! Free-form JSON values (property values) kept as their compact text.
//!
//! A `serde_json::Value` object costs a B-tree node of ~640 bytes however few keys it has;
//! the text of a typical property value is 50–200 bytes. Catalogs hold one value per
//! property of every bundle, so the text is what the documents and the model keep, and a
//! value is decoded only where a rule or an action reads it. Object keys are kept sorted, as
//! opm's render writes them (for JSON input too); writing a value transcodes the text
//! token by token into the output serializer, so pretty output is indented like the rest of
//! the document and no tree is built.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::Serializer;

use super::canonical::{KeyIs, canonical_text};
use super::transcode::Transcode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value as compact text (no whitespace outside strings).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// The compact text of `value` (its keys sorted, as `Value` keeps them).
    pub fn from_value(value: &Value) -> RawJson {
        // Serializing a `Value` cannot fail: its keys are strings.
        RawJson(serde_json::to_string(value).unwrap_or_default().into())
    }

    /// Checks that `text` is one JSON value and keeps it compacted, keys sorted.
    pub fn from_json(text: &str) -> Result<RawJson, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as a tree, for rules that inspect its shape.
    pub fn to_value(&self) -> Value {
        // The text was valid JSON when it was stored.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// Decodes the value into a typed struct.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// What kind of JSON value this is.
    pub fn kind(&self) -> Kind {
        match self.0.as_bytes().first() {
            Some(b'n') => Kind::Null,
            Some(b't' | b'f') => Kind::Bool,
            Some(b'"') => Kind::String,
            Some(b'[') => Kind::Array,
            Some(b'{') => Kind::Object,
            _ => match self.decode::<Value>() {
                Ok(Value::Number(n)) if n.is_f64() => Kind::Float,
                _ => Kind::Int,
            },
        }
    }

    /// For an object value, the kind held under each of `names`, the key matched ignoring
    /// ASCII case (the first such key: Go's decoder matches fields that way); nothing else
    /// is decoded.
    pub fn field_kinds(&self, names: &[&str]) -> Vec<Option<Kind>> {
        let mut found = vec![None; names.len()];
        let mut deserializer = serde_json::Deserializer::from_str(&self.0);
        let _ = deserializer.deserialize_any(FieldKinds {
            names,
            found: &mut found,
        });
        found
    }

    /// The string at key `name` of an object value (the last one when a key repeats, as a
    /// decoded object keeps it); `None` when the value is not an object, lacks the key, or
    /// holds something else than a string there.
    pub fn str_field(&self, name: &str) -> Option<String> {
        let [found] = self.str_fields([name]);
        found
    }

    /// [`RawJson::str_field`] for several keys in one pass.
    pub fn str_fields<const N: usize>(&self, names: [&str; N]) -> [Option<String>; N] {
        let mut deserializer = serde_json::Deserializer::from_str(&self.0);
        deserializer
            .deserialize_any(FieldVisitor { names })
            .unwrap_or([const { None }; N])
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> RawJson {
        RawJson::from_value(value)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawJson, D::Error> {
        if SORTED_COMPACT_INPUT.get() {
            // The text as written, which is already in the stored form.
            let text: Box<str> = Box::<RawValue>::deserialize(deserializer)?.into();
            return Ok(RawJson(text));
        }
        // opm writes property values with their keys sorted (its render output is what a
        // `Value` round trip gives); they are stored that way, written in one pass.
        canonical_text(deserializer).map(RawJson)
    }
}

thread_local! {
    /// Set while reading text known to be compact with the keys of every object strictly
    /// increasing (the YAML transcoder's output for a file opm wrote): values are then kept
    /// as they are read, without checking both again.
    static SORTED_COMPACT_INPUT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `read` with values taken as compact and sorted when `sorted_compact` says the input
/// is; the setting ends with `read`.
pub(super) fn reading_sorted_compact<R>(sorted_compact: bool, read: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SORTED_COMPACT_INPUT.set(self.0);
        }
    }
    let _restore = Restore(SORTED_COMPACT_INPUT.replace(sorted_compact));
    read()
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(&self.0);
        Transcode(Cell::new(Some(&mut deserializer))).serialize(serializer)
    }
}

/// The kind of a JSON value, numbers split as a decoder sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// A number that decodes as an integer.
    Int,
    /// Any other number.
    Float,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Kind {
    /// The name Go's decoder gives it in its messages.
    pub fn go_name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Int | Kind::Float => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

/// Names the kind of the value it visits, skipping what is inside.
struct KindVisitor;

impl<'de> DeserializeSeed<'de> for KindVisitor {
    type Value = Kind;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Kind, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Kind, E> {
        Ok(Kind::Bool)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Kind, E> {
        Ok(Kind::Int)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Kind, E> {
        Ok(Kind::Int)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Kind, E> {
        Ok(Kind::Float)
    }
    fn visit_str<E>(self, _: &str) -> Result<Kind, E> {
        Ok(Kind::String)
    }
    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(Kind::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Kind::Object)
    }
}

/// Records the kinds of some fields of an object.
struct FieldKinds<'a> {
    names: &'a [&'a str],
    found: &'a mut Vec<Option<Kind>>,
}

impl<'de> Visitor<'de> for FieldKinds<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<KeyIs>()? {
            let slot = self
                .names
                .iter()
                .zip(self.found.iter())
                .position(|(name, found)| found.is_none() && key.0.eq_ignore_ascii_case(name));
            match slot {
                Some(i) => self.found[i] = Some(map.next_value_seed(KindVisitor)?),
                None => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Finds one string field of an object without decoding the others.
struct FieldVisitor<'n, const N: usize> {
    names: [&'n str; N],
}

impl<'de, const N: usize> Visitor<'de> for FieldVisitor<'_, N> {
    type Value = [Option<String>; N];
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [const { None }; N];
        while let Some(key) = map.next_key::<KeyIs>()? {
            match self.names.iter().position(|name| key.0 == *name) {
                Some(i) => {
                    found[i] = match map.next_value::<Value>()? {
                        Value::String(s) => Some(s),
                        _ => None,
                    }
                }
                None => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok([const { None }; N])
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok([const { None }; N])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_like_opm_and_drops_whitespace() {
        let raw: RawJson =
            serde_json::from_str("{ \"a\" : [1, 2.5, \"x y\"],\n \"b\": {\"c\": null} }").unwrap();
        assert_eq!(raw.as_str(), r#"{"a":[1,2.5,"x y"],"b":{"c":null}}"#);
        let raw: RawJson = serde_json::from_str(r#"{"b":1,"a":{"d":2,"c":3},"b":4}"#).unwrap();
        assert_eq!(raw.as_str(), r#"{"a":{"c":3,"d":2},"b":4}"#);
        let raw: RawJson = serde_json::from_str(r#"[{"x":1},{"b":1,"a":2}]"#).unwrap();
        assert_eq!(raw.as_str(), r#"[{"x":1},{"a":2,"b":1}]"#);
        assert_eq!(serde_json::to_string(&raw).unwrap(), raw.as_str());
    }

    #[test]
    fn pretty_output_is_indented_with_the_document() {
        #[derive(Serialize)]
        struct Doc {
            value: RawJson,
        }
        let doc = Doc {
            value: RawJson::from_json(r#"{"a":[true],"z":1}"#).unwrap(),
        };
        assert_eq!(
            serde_json::to_string_pretty(&doc).unwrap(),
            "{\n  \"value\": {\n    \"a\": [\n      true\n    ],\n    \"z\": 1\n  }\n}"
        );
    }

    #[test]
    fn from_a_value_and_string_fields() {
        let value = serde_json::json!({"data": "e30=", "n": 1});
        let raw: RawJson = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(raw.to_value(), value);
        assert_eq!(raw.str_field("data").as_deref(), Some("e30="));
        assert_eq!(raw.str_field("n"), None);
        assert_eq!(RawJson::from_json("[1]").unwrap().str_field("data"), None);
        let escaped = RawJson::from_json(r#"{"d\u0061ta":"x","data":"y"}"#).unwrap();
        assert_eq!(escaped.str_field("data").as_deref(), Some("y"));
        let both = RawJson::from_json(r#"{"a":"1","b":2,"c":"3","c":"4"}"#).unwrap();
        assert_eq!(
            both.str_fields(["c", "b", "a", "z"]),
            [Some("4".into()), None, Some("1".into()), None]
        );
        assert!(RawJson::from_json("{").is_err());
        let raw = RawJson::from_json(r#"{"Data":1.5,"data":"x","n":[{"a":1}],"p":7}"#).unwrap();
        assert_eq!(
            raw.field_kinds(&["data", "n", "p", "q"]),
            [Some(Kind::Float), Some(Kind::Array), Some(Kind::Int), None]
        );
        assert_eq!(raw.kind(), Kind::Object);
        assert_eq!(RawJson::from_json("-2").unwrap().kind(), Kind::Int);
        assert_eq!(RawJson::from_json("2e3").unwrap().kind(), Kind::Float);
    }
}
