//! One pass over a JSON stream of the four OLM schemas, for files without irregularities.
//!
//! The probe of [`super::json`] reads every document twice: once to learn its schema and
//! check its keys, once into the typed struct. Here each document is read once, into a
//! struct with the fields of all four schemas; the keys are checked as they go by, and the
//! document is then moved into the struct its schema names. Anything this reader is not
//! sure of — a key that matches a meta key only when case is folded, a repeated field, an
//! unknown schema, a field of the wrong type, even one the schema's own struct would ignore
//! — fails the whole file, which then takes the probing path. So a file read here gives
//! exactly what that path gives.

use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::generic::check_bundle_objects;
use super::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Deprecation, DeprecationEntry, Icon, Package,
    PackageScopedReference, Property, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};

/// An entry of a channel or of a deprecation.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyEntry {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    replaces: Option<String>,
    #[serde(default, deserialize_with = "present")]
    skips: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    skip_range: Option<String>,
    #[serde(default)]
    reference: Option<PackageScopedReference>,
    #[serde(default, deserialize_with = "present")]
    message: Option<String>,
}

/// The fields of all four schemas; which are present decides whether the document is one
/// this reader may take.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyDocument {
    schema: Option<String>,
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    package: Option<String>,
    #[serde(default, deserialize_with = "present")]
    default_channel: Option<String>,
    #[serde(default)]
    icon: Option<Icon>,
    #[serde(default, deserialize_with = "present")]
    description: Option<String>,
    #[serde(default, deserialize_with = "present")]
    image: Option<String>,
    #[serde(default, deserialize_with = "super::document::exact_vec_option")]
    properties: Option<Vec<Property>>,
    #[serde(default, deserialize_with = "super::document::exact_vec_option")]
    related_images: Option<Vec<RelatedImage>>,
    #[serde(default, deserialize_with = "present")]
    entries: Option<Vec<AnyEntry>>,
}

/// A field that is there: `null` is refused, as the typed structs refuse it for their
/// non-optional fields (absent fields are `None` through `default`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// Why a document is not taken here (the text is never shown: the file is read again).
fn refuse<T>() -> Option<T> {
    None
}

impl AnyDocument {
    /// Adds the document to `config` if it is one of the four schemas, with no field of
    /// another schema; `None` otherwise.
    fn add_to(self, config: &mut DeclarativeConfig) -> Option<()> {
        let schema = self.schema?;
        match schema.as_str() {
            SCHEMA_PACKAGE => {
                if self.package.is_some()
                    || self.image.is_some()
                    || self.related_images.is_some()
                    || self.entries.is_some()
                {
                    return refuse();
                }
                config.packages.push(Package {
                    schema,
                    name: self.name.unwrap_or_default(),
                    default_channel: self.default_channel.unwrap_or_default(),
                    icon: self.icon,
                    description: self.description.unwrap_or_default(),
                    properties: self.properties.unwrap_or_default(),
                });
            }
            SCHEMA_CHANNEL => {
                if self.default_channel.is_some()
                    || self.icon.is_some()
                    || self.description.is_some()
                    || self.image.is_some()
                    || self.related_images.is_some()
                {
                    return refuse();
                }
                let mut entries = Vec::new();
                for entry in self.entries.unwrap_or_default() {
                    if entry.reference.is_some() || entry.message.is_some() {
                        return refuse();
                    }
                    entries.push(ChannelEntry {
                        name: entry.name.unwrap_or_default(),
                        replaces: entry.replaces.unwrap_or_default(),
                        skips: entry.skips.unwrap_or_default(),
                        skip_range: entry.skip_range.unwrap_or_default(),
                    });
                }
                config.channels.push(Channel {
                    schema,
                    name: self.name.unwrap_or_default(),
                    package: self.package.unwrap_or_default(),
                    entries,
                    properties: self.properties.unwrap_or_default(),
                });
            }
            SCHEMA_BUNDLE => {
                if self.default_channel.is_some()
                    || self.icon.is_some()
                    || self.description.is_some()
                    || self.entries.is_some()
                {
                    return refuse();
                }
                let bundle = Bundle {
                    schema,
                    name: self.name.unwrap_or_default(),
                    package: self.package.unwrap_or_default(),
                    image: self.image.unwrap_or_default(),
                    properties: self.properties.unwrap_or_default(),
                    related_images: self.related_images.unwrap_or_default(),
                };
                check_bundle_objects(&bundle).ok()?;
                config.bundles.push(bundle);
            }
            SCHEMA_DEPRECATIONS => {
                if self.name.is_some()
                    || self.default_channel.is_some()
                    || self.icon.is_some()
                    || self.description.is_some()
                    || self.image.is_some()
                    || self.properties.is_some()
                    || self.related_images.is_some()
                {
                    return refuse();
                }
                let mut entries = Vec::new();
                for entry in self.entries.unwrap_or_default() {
                    if entry.name.is_some()
                        || entry.replaces.is_some()
                        || entry.skips.is_some()
                        || entry.skip_range.is_some()
                    {
                        return refuse();
                    }
                    entries.push(DeprecationEntry {
                        reference: entry.reference?,
                        message: entry.message.unwrap_or_default(),
                    });
                }
                config.deprecations.push(Deprecation {
                    schema,
                    package: self.package.unwrap_or_default(),
                    entries,
                });
            }
            _ => return refuse(),
        }
        Some(())
    }
}

/// Whether a top-level key equals a meta key only when case is folded (opm accepts it; the
/// probing path handles it).
fn is_folded_meta_key(key: &str) -> bool {
    ["schema", "package", "name"].iter().any(|meta| {
        key != *meta
            && if key.is_ascii() {
                key.eq_ignore_ascii_case(meta)
            } else {
                key.to_lowercase() == *meta
            }
    })
}

/// The top-level map of a document, failing at a folded meta key; everything else passes
/// through to the derived deserializer.
struct CheckedKeys<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for CheckedKeys<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        struct Checked<K>(K);
        impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for Checked<K> {
            type Value = K::Value;
            fn deserialize<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<K::Value, D::Error> {
                // Keys without escapes are borrowed from the text: no allocation.
                let key = deserializer.deserialize_str(KeyText)?;
                if is_folded_meta_key(&key) {
                    return Err(de::Error::custom("folded meta key"));
                }
                self.0
                    .deserialize(de::IntoDeserializer::<D::Error>::into_deserializer(
                        key.as_ref(),
                    ))
            }
        }
        self.0.next_key_seed(Checked(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(seed)
    }
}

/// A key as text, borrowed when the input allows.
struct KeyText;

impl<'de> Visitor<'de> for KeyText {
    type Value = std::borrow::Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(key))
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(key.to_string()))
    }
}

/// One document of the stream, read in one pass.
struct OnePass(AnyDocument);

impl<'de> Deserialize<'de> for OnePass {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<OnePass, D::Error> {
        struct DocumentVisitor;
        impl<'de> Visitor<'de> for DocumentVisitor {
            type Value = OnePass;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OnePass, A::Error> {
                AnyDocument::deserialize(MapAccessDeserializer::new(CheckedKeys(map))).map(OnePass)
            }
        }
        deserializer.deserialize_map(DocumentVisitor)
    }
}

/// Loads a JSON stream in one pass per document; `false` (nothing added) when any document
/// is not one this reader takes, or the stream has an error.
pub fn load_json_one_pass(text: &str, config: &mut DeclarativeConfig) -> bool {
    if crate::go_json::may_hold_a_number_out_of_range(text) {
        return false;
    }
    let text = &*crate::go_json::lone_surrogates_replaced(text);
    let mut part = DeclarativeConfig::default();
    for document in serde_json::Deserializer::from_str(text).into_iter::<OnePass>() {
        let Ok(OnePass(document)) = document else {
            return false;
        };
        if document.add_to(&mut part).is_none() {
            return false;
        }
    }
    config.append(part);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the probing path (and behind it the generic loader) gives.
    fn probed(text: &str) -> Option<DeclarativeConfig> {
        let mut config = DeclarativeConfig::default();
        super::super::json::load_json(text, &mut config).then_some(config)
    }

    fn one_pass(text: &str) -> Option<DeclarativeConfig> {
        let mut config = DeclarativeConfig::default();
        let taken = load_json_one_pass(text, &mut config);
        if !taken {
            assert_eq!(
                config,
                DeclarativeConfig::default(),
                "nothing added on refusal"
            );
        }
        taken.then_some(config)
    }

    #[test]
    fn regular_documents_are_read_as_the_probing_path_reads_them() {
        let text = [
            r#"{"schema":"olm.package","name":"p","defaultChannel":"s","icon":{"base64data":"aGk=","mediatype":"image/png"},"description":"d","properties":[{"type":"x","value":1}]}"#,
            r#"{"schema":"olm.channel","name":"s","package":"p","entries":[{"name":"b","replaces":"a","skips":["z"],"skipRange":"<1.0.0"},{"name":"a"}],"properties":[]}"#,
            r#"{"image":"i","schema":"olm.bundle","name":"b","package":"p","properties":[{"type":"olm.package","value":{"version":"1.0.0","packageName":"p"}},{"type":"olm.bundle.object","value":{"data":"e30="}}],"relatedImages":[{"name":"x","image":"y"}],"extra":{"any":["thing"]}}"#,
            r#"{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.bundle","name":"b"},"message":"m"}]}"#,
            r#"{"schema":"olm.package","name":"q","icon":null}"#,
        ]
        .join("\n");
        let read = one_pass(&text).expect("taken");
        assert_eq!(Some(read.clone()), probed(&text));
        assert_eq!(read.bundles[0].image, "i");
        assert_eq!(read.channels[0].entries[0].skips, ["z"]);
    }

    #[test]
    fn anything_irregular_is_refused_and_left_to_the_probing_path() {
        let regular = r#"{"schema":"olm.package","name":"p"}"#;
        for irregular in [
            // Meta keys whose case differs, repeated keys, a repeated schema.
            r#"{"schema":"olm.package","Name":"p"}"#,
            r#"{"Schema":"olm.package","name":"p"}"#,
            r#"{"schema":"olm.package","name":"p","name":"q"}"#,
            r#"{"schema":"olm.package","schema":"olm.package","name":"p"}"#,
            // Unknown or missing schema, nulls where the typed structs refuse them.
            r#"{"schema":"custom","name":"p"}"#,
            r#"{"name":"p"}"#,
            r#"{"schema":null,"name":"p"}"#,
            r#"{"schema":"olm.package","name":null}"#,
            r#"{"schema":"olm.channel","name":"c","package":"p","entries":[{"name":null}]}"#,
            // A field of another schema, wrong types, bad inline objects, not an object.
            r#"{"schema":"olm.package","name":"p","image":"i"}"#,
            r#"{"schema":"olm.bundle","name":"b","entries":5}"#,
            r#"{"schema":"olm.bundle","name":"b","properties":[{"type":"olm.bundle.object","value":{"data":"!"}}]}"#,
            r#"{"schema":"olm.deprecations","package":"p","entries":[{"message":"m"}]}"#,
            r#"["schema"]"#,
        ] {
            let text = format!("{regular}\n{irregular}");
            assert_eq!(one_pass(&text), None, "{irregular}");
        }
    }
}
