//! The fast path for JSON catalog files: documents are parsed straight into the typed
//! structs, without building a `serde_json::Value` tree per document first.
//!
//! Each document is scanned once for its `schema` (a probe that allocates nothing but the
//! schema string), then its bytes are deserialized into `Package`, `Channel`, `Bundle` or
//! `Deprecation`. Anything irregular — a key that only matches `schema`/`package`/`name` when
//! case is folded, a non-string schema, an unknown schema, a document the typed struct
//! rejects — goes through the generic path ([`super::generic::add_document`]), which keeps opm's
//! behaviour and messages. A file with any error is read again by the generic loader, so
//! which error is reported, its text and its line are exactly what that loader gives.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::generic::check_bundle_objects;
use super::{
    Bundle, Channel, DeclarativeConfig, Deprecation, Package, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};

/// What the probe learned about one document.
enum Probe {
    /// An object whose only meta key spelled `schema` (exactly) holds this string.
    Regular(String),
    /// Anything else: the generic path decides.
    Irregular,
}

/// How a key of a document's top-level object relates to the meta keys.
enum Key {
    Schema,
    /// `package` or `name` spelled exactly: the typed structs read them.
    Meta,
    /// A key that equals a meta key only case-insensitively (opm accepts it).
    Folded,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "schema" => Key::Schema,
                    "package" | "name" => Key::Meta,
                    // Only ASCII keys are compared without allocating: a non-ASCII key can
                    // fold to a meta key of another length (the Kelvin sign folds to `k`).
                    _ if ["schema", "package", "name"].iter().any(|m| {
                        if key.is_ascii() {
                            key.eq_ignore_ascii_case(m)
                        } else {
                            key.to_lowercase() == *m
                        }
                    }) =>
                    {
                        Key::Folded
                    }
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Probe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Probe, D::Error> {
        struct ProbeVisitor;
        impl<'de> Visitor<'de> for ProbeVisitor {
            type Value = Probe;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a document")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe, A::Error> {
                let mut schema = None;
                let mut regular = true;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Schema => match map.next_value::<Value>()? {
                            Value::String(s) if schema.is_none() => schema = Some(s),
                            _ => regular = false,
                        },
                        Key::Folded => {
                            regular = false;
                            map.next_value::<IgnoredAny>()?;
                        }
                        // opm reads `package` and `name` into strings whatever the schema (a
                        // package document has no `package` field to reject it otherwise), so
                        // any other value is the generic path's to refuse.
                        Key::Meta => {
                            if !matches!(map.next_value::<Value>()?, Value::String(_)) {
                                regular = false;
                            }
                        }
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(match schema {
                    Some(s) if regular => Probe::Regular(s),
                    _ => Probe::Irregular,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Probe, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Probe::Irregular)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Probe, E> {
                Ok(Probe::Irregular)
            }
        }
        deserializer.deserialize_any(ProbeVisitor)
    }
}

/// Adds a document that the probe found regular, when its typed struct accepts it; `false`
/// sends it down the generic path.
fn add_typed(schema: &str, raw: &str, config: &mut DeclarativeConfig) -> bool {
    match schema {
        SCHEMA_PACKAGE => match serde_json::from_str::<Package>(raw) {
            Ok(p) => config.packages.push(p),
            Err(_) => return false,
        },
        SCHEMA_CHANNEL => match serde_json::from_str::<Channel>(raw) {
            Ok(c) => config.channels.push(c),
            Err(_) => return false,
        },
        SCHEMA_BUNDLE => match serde_json::from_str::<Bundle>(raw) {
            Ok(b) if check_bundle_objects(&b).is_ok() => config.bundles.push(b),
            Ok(_) => return false,
            Err(_) => return false,
        },
        SCHEMA_DEPRECATIONS => match serde_json::from_str::<Deprecation>(raw) {
            Ok(d) => config.deprecations.push(d),
            Err(_) => return false,
        },
        _ => return false,
    }
    true
}

/// Loads a JSON stream (concatenated objects) into `config`; `false` when the file has any
/// error (nothing is added then), so the caller reports what the generic loader reports.
pub fn load_json(text: &str, config: &mut DeclarativeConfig) -> bool {
    if crate::go_json::may_hold_a_number_out_of_range(text) {
        return false;
    }
    let text = &*crate::go_json::lone_surrogates_replaced(text);
    let mut part = DeclarativeConfig::default();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Probe>();
    loop {
        let offset = stream.byte_offset();
        let probe = match stream.next() {
            None => break,
            Some(Ok(probe)) => probe,
            Some(Err(_)) => return false,
        };
        let raw = &text[offset..stream.byte_offset()];
        let done = match &probe {
            Probe::Regular(schema) => add_typed(schema, raw, &mut part),
            Probe::Irregular => false,
        };
        if !done {
            let Ok(value) = serde_json::from_str::<Value>(raw) else {
                return false;
            };
            if super::generic::add_document(value, &mut part).is_err() {
                return false;
            }
        }
    }
    config.append(part);
    true
}
