//! The FBC documents as written: `olm.package`, `olm.channel`, `olm.bundle`,
//! `olm.deprecations`, and any other schema kept whole. No rules beyond "this parses".

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::raw::RawJson;

/// The `schema` of a package document.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// The `schema` of a channel document.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// The `schema` of a bundle document.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// The `schema` of a deprecations document.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// Every document of a catalog, by kind, in the order they were read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclarativeConfig {
    /// `olm.package` documents.
    pub packages: Vec<Package>,
    /// `olm.channel` documents.
    pub channels: Vec<Channel>,
    /// `olm.bundle` documents.
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` documents.
    pub deprecations: Vec<Deprecation>,
    /// Documents of any other schema, kept whole.
    pub others: Vec<Meta>,
}

impl DeclarativeConfig {
    /// Adds every document of `other` after this config's own, kind by kind.
    pub fn append(&mut self, mut other: DeclarativeConfig) {
        self.packages.append(&mut other.packages);
        self.channels.append(&mut other.channels);
        self.bundles.append(&mut other.bundles);
        self.deprecations.append(&mut other.deprecations);
        self.others.append(&mut other.others);
    }
}

/// A package's icon: bytes and media type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    /// The image, base64 in the document.
    #[serde(rename = "base64data", with = "base64_bytes")]
    pub data: Vec<u8>,
    /// Its media type.
    #[serde(rename = "mediatype", default)]
    pub media_type: String,
}

/// An `olm.package` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// Always `olm.package`.
    pub schema: String,
    /// The package name.
    #[serde(default)]
    pub name: String,
    /// The channel subscriptions follow unless they name one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub default_channel: String,
    /// The icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    /// Markdown description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Properties.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// One entry of a channel: a bundle and its upgrade edges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// The bundle's name.
    #[serde(default)]
    pub name: String,
    /// The bundle this one replaces.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// Bundles this one skips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// A version range of bundles this one can upgrade from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
}

/// An `olm.channel` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    /// Always `olm.channel`.
    pub schema: String,
    /// The channel name.
    #[serde(default)]
    pub name: String,
    /// The package it belongs to.
    #[serde(default)]
    pub package: String,
    /// Its entries.
    #[serde(default)]
    pub entries: Vec<ChannelEntry>,
    /// Properties.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// A `{type, value}` property.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Property {
    /// The property type (`olm.package`, `olm.gvk`, …). The types OLM defines are kept as
    /// static text: catalogs have several properties per bundle, and a separate allocation
    /// for each type name was 80,000 of them in the generated 20,000-bundle catalog.
    #[serde(rename = "type", deserialize_with = "property_type")]
    pub type_: Cow<'static, str>,
    /// Its value, any JSON, as compact text: decoded only where a rule reads it.
    pub value: RawJson,
}

/// A related image of a bundle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelatedImage {
    /// Its name (may be empty).
    #[serde(default)]
    pub name: String,
    /// Its pull spec.
    #[serde(default)]
    pub image: String,
}

/// An `olm.bundle` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// Always `olm.bundle`.
    pub schema: String,
    /// The bundle name (the CSV name for registry+v1).
    #[serde(default)]
    pub name: String,
    /// Its package.
    #[serde(default)]
    pub package: String,
    /// The bundle image; written even when empty, as opm does.
    #[serde(default)]
    pub image: String,
    /// Properties.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "exact_vec"
    )]
    pub properties: Vec<Property>,
    /// Related images.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "exact_vec"
    )]
    pub related_images: Vec<RelatedImage>,
}

impl Bundle {
    /// The manifests carried inline in `olm.bundle.object` properties, decoded.
    pub fn objects(&self) -> Vec<Vec<u8>> {
        self.properties
            .iter()
            .filter(|p| p.type_ == crate::olm_property::BUNDLE_OBJECT)
            .filter_map(|p| p.value.str_field("data"))
            .filter_map(|data| {
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).ok()
            })
            .collect()
    }

    /// Names the bundle image `to` wherever the document names it: `image`, and the
    /// `relatedImages` entry that lists it (kept sorted by image, as `opm render` writes
    /// them). How a release records its bundle by digest once the image is built, when
    /// the render before it knew only the tag.
    pub fn rename_image(&mut self, to: &str) {
        let from = std::mem::replace(&mut self.image, to.to_string());
        for related in &mut self.related_images {
            if related.image == from {
                related.image = to.to_string();
            }
        }
        self.related_images.sort_by(|a, b| a.image.cmp(&b.image));
    }
}

/// What a deprecation entry points at.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PackageScopedReference {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    #[serde(default)]
    pub schema: String,
    /// The channel or bundle name (empty for the package).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// One deprecation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeprecationEntry {
    /// What is deprecated.
    pub reference: PackageScopedReference,
    /// Why, for users.
    #[serde(default)]
    pub message: String,
}

/// An `olm.deprecations` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Deprecation {
    /// Always `olm.deprecations`.
    pub schema: String,
    /// The package.
    #[serde(default)]
    pub package: String,
    /// The deprecations.
    #[serde(default)]
    pub entries: Vec<DeprecationEntry>,
}

/// A document of any schema, with the three fields every document may have.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// `schema`.
    pub schema: String,
    /// `package`, if any.
    pub package: String,
    /// `name`, if any.
    pub name: String,
    /// The whole document.
    pub blob: Value,
}

/// A property type: a known one as static text, any other owned.
fn property_type<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Cow<'static, str>, D::Error> {
    struct TypeVisitor;
    impl serde::de::Visitor<'_> for TypeVisitor {
        type Value = Cow<'static, str>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(
                match crate::olm_property::KNOWN_TYPES
                    .iter()
                    .find(|known| **known == text)
                {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(text.to_string()),
                },
            )
        }
        fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
            Ok(
                match crate::olm_property::KNOWN_TYPES
                    .iter()
                    .find(|known| **known == text)
                {
                    Some(known) => Cow::Borrowed(known),
                    None => Cow::Owned(text),
                },
            )
        }
    }
    deserializer.deserialize_str(TypeVisitor)
}

/// A vector decoded element by element, without the up to 3/4 slack its growth leaves: a
/// bundle's vectors live as long as the catalog (one related image used to hold room for 4).
fn exact_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut items = Vec::<T>::deserialize(deserializer)?;
    items.shrink_to_fit();
    Ok(items)
}

/// [`exact_vec`] for a field that may be absent (`null` is refused, as `exact_vec` does).
pub(super) fn exact_vec_option<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    exact_vec(deserializer).map(Some)
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text: Option<String> = Option::deserialize(deserializer)?;
        let text = text.unwrap_or_default();
        // Go's decoder skips line breaks inside base64.
        let compact: String = text.chars().filter(|c| *c != '\n' && *c != '\r').collect();
        STANDARD.decode(compact).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::{Bundle, RelatedImage};

    fn related(name: &str, image: &str) -> RelatedImage {
        RelatedImage {
            name: name.into(),
            image: image.into(),
        }
    }

    #[test]
    fn rename_image_renames_the_bundle_wherever_it_is_named_and_keeps_the_order() {
        let mut bundle = Bundle {
            schema: "olm.bundle".into(),
            name: "op.v1.0.0".into(),
            package: "op".into(),
            image: "reg.example/op-bundle:v1.0.0".into(),
            properties: Vec::new(),
            related_images: vec![
                related("", "reg.example/op-bundle:v1.0.0"),
                related("tools", "reg.example/op-bundle:v1.0.0-tools"),
            ],
        };
        bundle.rename_image("reg.example/op-bundle@sha256:ff");
        assert_eq!(bundle.image, "reg.example/op-bundle@sha256:ff");
        // ':' sorts before '@': the renamed entry moves after the tools image.
        assert_eq!(
            bundle.related_images,
            vec![
                related("tools", "reg.example/op-bundle:v1.0.0-tools"),
                related("", "reg.example/op-bundle@sha256:ff"),
            ]
        );
    }
}
