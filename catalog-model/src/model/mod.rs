//! The validated catalog model: packages → channels → bundles, with every rule of
//! `opm validate` and opm's messages. This file holds the model's types; each job has its
//! own file:
//!
//! - `bundle_document.rs`: what one bundle document alone must satisfy (its properties'
//!   shapes, one `olm.package`, version, image references), checked on every core;
//! - `build.rs`: building the model ([`Model::from_declcfg`]), which stops at the first
//!   structural problem, as opm's `ConvertToModel` does;
//! - `rules.rs`: [`Model::validate`], every graph and bundle problem collected into a
//!   [`ValidationTree`] (`error.rs`, printed as opm prints it);
//! - `validate_dir.rs`: a folder loaded, built and validated ([`validate_dir`]).

mod build;
mod bundle_document;
mod error;
mod rules;
mod validate_dir;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::declcfg::{Icon, Property, RelatedImage};
pub use build::ModelError;
pub use bundle_document::{BundleDocumentError, PropertyValueError};
pub use error::ValidationTree;
pub use rules::HeadError;
pub use validate_dir::{CatalogError, ValidCatalog, validate_dir};

/// A catalog: packages by name.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The packages.
    pub packages: BTreeMap<String, Package>,
}

/// A package.
#[derive(Clone, Debug, Default)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its icon.
    pub icon: Option<Icon>,
    /// The default channel's name, if one is set.
    pub default_channel: Option<String>,
    /// Its channels by name.
    pub channels: BTreeMap<String, Channel>,
    /// A deprecation message.
    pub deprecation: Option<String>,
}

/// A channel: the bundles in it and their edges.
#[derive(Clone, Debug, Default)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Its bundles by name.
    pub bundles: BTreeMap<String, Bundle>,
    /// A deprecation message.
    pub deprecation: Option<String>,
    /// Its properties.
    pub properties: Vec<Property>,
}

/// A bundle as a member of one channel.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    /// Its name.
    pub name: String,
    /// Its image ("" when served inline).
    pub image: String,
    /// The bundle it replaces in this channel.
    pub replaces: String,
    /// Bundles it skips.
    pub skips: Vec<String>,
    /// The range of versions it can upgrade from.
    pub skip_range: String,
    /// Its properties, shared by its members of every channel (one bundle document is in
    /// the model once, however many channels list it).
    pub properties: Arc<Vec<Property>>,
    /// Related images, shared like the properties.
    pub related_images: Arc<Vec<RelatedImage>>,
    /// Its version (from the `olm.package` property).
    pub version: Option<semver::Version>,
    /// Whether a document for it was found (a channel entry may lack one).
    pub has_document: bool,
    /// How many `olm.bundle.object` manifests it carries.
    pub object_count: usize,
    /// A deprecation message.
    pub deprecation: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declcfg::{self, DeclarativeConfig};

    fn validate_text(documents: &[&str]) -> Result<Model, String> {
        let mut config = DeclarativeConfig::default();
        declcfg::load_str(
            std::path::Path::new("c.json"),
            &documents.join("\n"),
            &mut config,
        )
        .map_err(|e| e.to_string())?;
        let model = Model::from_declcfg(config).map_err(|e| e.to_string())?;
        match model.validate() {
            Some(tree) => Err(tree.to_string()),
            None => Ok(model),
        }
    }

    const PACKAGE: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"a"}"#;
    const CHANNEL_A: &str = r#"{"schema":"olm.channel","name":"a","package":"p","entries":[{"name":"x"},{"name":"y","replaces":"x"}]}"#;
    const CHANNEL_B: &str =
        r#"{"schema":"olm.channel","name":"b","package":"p","entries":[{"name":"x"}]}"#;
    const BUNDLE_X: &str = r#"{"schema":"olm.bundle","name":"x","package":"p","image":"quay.io/e/x:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#;

    /// opm checks for entries without a bundle document only in the channel it read last
    /// (checked against opm v1.73.0 on these two catalogs).
    #[test]
    fn entries_without_documents_are_checked_in_the_last_channel_only() {
        let last_is_a = validate_text(&[PACKAGE, CHANNEL_B, CHANNEL_A, BUNDLE_X]).unwrap_err();
        assert_eq!(
            last_is_a,
            "no olm.bundle blobs found in package \"p\" for olm.channel entries [y]"
        );
        let last_is_b = validate_text(&[PACKAGE, CHANNEL_A, CHANNEL_B, BUNDLE_X]).unwrap_err();
        assert_eq!(
            last_is_b,
            "invalid index:\n└── invalid package \"p\":\n    └── invalid channel \"a\":\n        └── invalid bundle \"y\":\n            ├── must be exactly one property with type \"olm.package\"\n            └── bundle image must be set"
        );
    }

    /// The checks run on every core report the first failing document, as a sequential
    /// pass does, and duplicate versions are listed sorted as text.
    #[test]
    fn the_first_bad_document_is_reported_and_duplicates_are_sorted() {
        let bundle = |name: &str, version: &str| {
            format!(
                r#"{{"schema":"olm.bundle","name":"{name}","package":"p","image":"quay.io/e/{name}:1","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"{version}"}}}}]}}"#
            )
        };
        let mut documents = vec![PACKAGE.to_string()];
        let entries: Vec<String> = (0..300)
            .map(|i| {
                if i == 0 {
                    r#"{"name":"b0"}"#.to_string()
                } else {
                    format!(r#"{{"name":"b{i}","replaces":"b{}"}}"#, i - 1)
                }
            })
            .collect();
        documents.push(format!(
            r#"{{"schema":"olm.channel","name":"a","package":"p","entries":[{}]}}"#,
            entries.join(",")
        ));
        for i in 0..300 {
            let version = match i {
                120 => "not-a-version".to_string(),
                250 => "also bad".to_string(),
                _ => format!("1.0.{i}"),
            };
            documents.push(bundle(&format!("b{i}"), &version));
        }
        let texts: Vec<&str> = documents.iter().map(String::as_str).collect();
        let error = validate_text(&texts).unwrap_err();
        assert!(
            error.starts_with("error parsing bundle \"b120\" version \"not-a-version\""),
            "{error}"
        );

        documents[122] = bundle("b120", "1.0.10");
        documents[252] = bundle("b250", "1.0.9");
        let texts: Vec<&str> = documents.iter().map(String::as_str).collect();
        let error = validate_text(&texts).unwrap_err();
        assert!(
            error.ends_with(
                "duplicate versions found in bundles: [{1.0.10: [b10, b120]} {1.0.9: [b250, b9]}]"
            ),
            "{error}"
        );
    }
}
