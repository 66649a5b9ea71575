//! Property values as opm serves them, read from the compact text the catalog keeps.
//!
//! The catalog stores each value as compact JSON with every object's keys sorted
//! (`RawJson`). opm sends a property's value as Go encodes its decoded tree: compact, keys
//! sorted, Go's number format, no HTML escaping. For most values that is the stored text
//! itself, so it is copied; only values with escapes or numbers Go could print differently
//! take the round trip through a tree.

use std::borrow::Cow;
use std::fmt;

use base64::Engine;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use catalog_model::declcfg::numbers_are_plain;
use catalog_model::go_json::{go_json, go_numbers};

/// opm's text for the property value stored as `raw` (compact, keys sorted).
pub fn opm_property_json(raw: &str) -> Cow<'_, str> {
    if is_opm_canonical(raw) {
        return Cow::Borrowed(raw);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value) => Cow::Owned(serde_json::to_string(&go_numbers(value)).unwrap_or_default()),
        Err(_) => Cow::Borrowed(raw),
    }
}

/// True when compact, key-sorted JSON `raw` is byte-equal to what a round trip through a
/// tree writes: strings without escapes print the same, and so do plain integers (the same
/// number test as render's direct writer).
fn is_opm_canonical(raw: &str) -> bool {
    !raw.contains('\\') && numbers_are_plain(raw.as_bytes())
}

/// The string fields `names` of the JSON object `raw`, matched as Go's decoder matches struct
/// fields here: the first key (in sorted order) equal to the name ignoring ASCII case. A
/// missing field, a field that is not a string, or a value that is not an object gives "".
pub fn string_fields<const N: usize>(raw: &str, names: [&str; N]) -> [String; N] {
    if let Some(found) = plain_string_fields(raw, names) {
        return found;
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    deserializer
        .deserialize_any(StringFields { names })
        .unwrap_or_else(|_| std::array::from_fn(|_| String::new()))
}

/// [`string_fields`] for the common shape, an object whose keys and values are all strings
/// without escapes (`{"group":"example.com","kind":"Thing","version":"v1"}`), read with a
/// byte scan; `None` for anything else, which takes the decoder.
fn plain_string_fields<const N: usize>(raw: &str, names: [&str; N]) -> Option<[String; N]> {
    let bytes = raw.as_bytes();
    let mut found: [Option<&str>; N] = [None; N];
    let mut at = 1;
    if bytes.first() != Some(&b'{') {
        return None;
    }
    // A string starting at `at` (its opening quote), without escapes: its text and the
    // position after its closing quote.
    let string = |at: usize| -> Option<(&str, usize)> {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let length = bytes[at + 1..].iter().position(|&b| b == b'"')?;
        let text = &raw[at + 1..at + 1 + length];
        (!text.contains('\\')).then_some((text, at + length + 2))
    };
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key, next) = string(at)?;
            if bytes.get(next) != Some(&b':') {
                return None;
            }
            let (value, next) = string(next + 1)?;
            if let Some(i) = names.iter().position(|name| key.eq_ignore_ascii_case(name))
                && found[i].is_none()
            {
                found[i] = Some(value);
            }
            match bytes.get(next) {
                Some(b',') => at = next + 1,
                Some(b'}') => {
                    at = next + 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (at == bytes.len()).then(|| found.map(|text| text.unwrap_or_default().to_string()))
}

/// Reads the fields of an object; any other value is an error, which [`string_fields`] reads
/// as "no fields".
struct StringFields<'n, const N: usize> {
    names: [&'n str; N],
}

impl<'de, const N: usize> Visitor<'de> for StringFields<'_, N> {
    type Value = [String; N];

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<[String; N], A::Error> {
        let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let slot = self
                .names
                .iter()
                .position(|name| key.eq_ignore_ascii_case(name))
                .filter(|&i| found[i].is_none());
            match slot {
                Some(i) => {
                    // A value that is not a string reads as "".
                    found[i] = Some(match map.next_value::<Value>()? {
                        Value::String(text) => text,
                        _ => String::new(),
                    })
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found.map(Option::unwrap_or_default))
    }
}

/// Why an `olm.bundle.object` cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum BundleObjectError {
    /// The stored value is not JSON (a bug of the loader if it happens).
    #[error("{0}")]
    Value(serde_json::Error),
    /// No `data` string.
    #[error("olm.bundle.object without data")]
    NoData,
    /// `data` is not base64.
    #[error("olm.bundle.object data is not base64: {0}")]
    Base64(base64::DecodeError),
    /// The decoded data is not UTF-8.
    #[error("olm.bundle.object: {0}")]
    Utf8(std::string::FromUtf8Error),
    /// The decoded data is neither JSON nor YAML.
    #[error("olm.bundle.object is neither JSON nor YAML: {0}")]
    Yaml(serde_saphyr::Error),
}

/// An `olm.bundle.object` as opm serves it: JSON data passes through as written, YAML becomes
/// JSON (keys sorted, Go's escaping).
pub fn bundle_object_json(raw: &str) -> Result<String, BundleObjectError> {
    let value: Value = serde_json::from_str(raw).map_err(BundleObjectError::Value)?;
    let data = value
        .get("data")
        .and_then(Value::as_str)
        .ok_or(BundleObjectError::NoData)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(BundleObjectError::Base64)?;
    let text = String::from_utf8(bytes).map_err(BundleObjectError::Utf8)?;
    if text.trim_start().starts_with('{') {
        return Ok(text);
    }
    let value: Value = serde_saphyr::from_str(&text).map_err(BundleObjectError::Yaml)?;
    Ok(go_json(&value))
}

/// Whether a manifest (JSON) is a ClusterServiceVersion.
pub fn is_csv(object: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow)]
        kind: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Kind>(object)
        .ok()
        .and_then(|k| k.kind)
        .is_some_and(|kind| kind == "ClusterServiceVersion")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The round trip the fast path must agree with.
    fn round_trip(raw: &str) -> String {
        let value: Value = serde_json::from_str(raw).unwrap();
        serde_json::to_string(&go_numbers(value)).unwrap()
    }

    #[test]
    fn values_are_copied_only_when_the_round_trip_would_not_change_them() {
        for raw in [
            r#"{"group":"example.com","kind":"Thing","version":"v1"}"#,
            r#"{"a":[1,-2,3],"b":{"c":null,"d":true}}"#,
            r#"{"n":1.0}"#,
            r#"{"n":1e3}"#,
            r#"{"n":-0}"#,
            r#"{"n":12345678901234567890}"#,
            r#"{"s":"a\"b\u003c"}"#,
            r#"{"s":"<&>"}"#,
            r#""plain""#,
            "42",
        ] {
            assert_eq!(opm_property_json(raw), round_trip(raw), "{raw}");
        }
        assert!(matches!(
            opm_property_json(r#"{"k":"v"}"#),
            Cow::Borrowed(_)
        ));
        assert!(matches!(opm_property_json(r#"{"n":1.5e1}"#), Cow::Owned(_)));
    }

    #[test]
    fn string_fields_match_keys_ignoring_case_and_skip_non_strings() {
        let [group, version, kind] = string_fields(
            r#"{"Group":"g","kind":{"x":1},"version":"v1","zz":[1,2]}"#,
            ["group", "version", "kind"],
        );
        assert_eq!(
            (group.as_str(), version.as_str(), kind.as_str()),
            ("g", "v1", "")
        );
        // The first matching key in sorted order wins, as it did on a decoded tree.
        let [name] = string_fields(r#"{"NAME":"first","name":"second"}"#, ["name"]);
        assert_eq!(name, "first");
        let [missing] = string_fields("[1,2]", ["name"]);
        assert_eq!(missing, "");
        let [escaped] = string_fields(r#"{"name":"a\nb"}"#, ["name"]);
        assert_eq!(escaped, "a\nb");
        // The byte scan and the decoder agree, on the shapes the scan reads and the ones
        // it hands over.
        for raw in [
            r#"{"group":"example.com","kind":"Thing","version":"v1"}"#,
            r#"{"Group":"g","group":"h","kind":"K"}"#,
            r#"{}"#,
            r#"{"group":"a\"b","kind":"K"}"#,
            r#"{"group":1,"kind":"K"}"#,
            r#"{"k\u0067":"x"}"#,
            r#""text""#,
            r#"{"group":"g"} "#,
        ] {
            let names = ["group", "version", "kind"];
            let mut deserializer = serde_json::Deserializer::from_str(raw);
            let decoded = deserializer
                .deserialize_any(StringFields { names })
                .unwrap_or_else(|_| std::array::from_fn(|_| String::new()));
            assert_eq!(string_fields(raw, names), decoded, "{raw}");
        }
    }

    #[test]
    fn csv_manifests_are_recognized_by_kind() {
        assert!(is_csv(
            r#"{"apiVersion":"v1","kind":"ClusterServiceVersion"}"#
        ));
        assert!(!is_csv(r#"{"kind":"CustomResourceDefinition"}"#));
        assert!(!is_csv("not json"));
    }
}
