//! One parsed document added to a config by its schema: the reference reader. The loader's
//! generic path, the JSON fast path's fallback for a document it declines, and the templates'
//! inline entries all come here, so it sits below all of them.

use serde_json::Value;

use super::{
    Bundle, Channel, DeclarativeConfig, Deprecation, Meta, Package, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
use crate::olm_property;

/// Why one document cannot be added, with opm's wording.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The document is not a JSON object.
    #[error("document is not an object: {0}")]
    NotAnObject(Value),
    /// `schema`, `package` or `name` appears under more than one spelling.
    #[error("duplicate keys for key {key:?}: {spellings:?}")]
    DuplicateKeys {
        /// The key, lower case.
        key: &'static str,
        /// Every spelling found.
        spellings: Vec<String>,
    },
    /// `schema`, `package` or `name` is not a string.
    #[error("expected value for key {key:?} to be a string, got {value}")]
    MetaNotString {
        /// The key, lower case.
        key: &'static str,
        /// Its value.
        value: Value,
    },
    /// The document has no schema.
    #[error("object '{0}' is missing root schema field")]
    MissingSchema(Value),
    /// A document of a known schema does not decode into its type.
    #[error("parse {what}: {error}")]
    Parse {
        /// `package`, `channel`, `bundle` or `deprecation`.
        what: &'static str,
        /// serde's message.
        error: serde_json::Error,
    },
    /// An inline `olm.bundle.object` is not base64.
    #[error(transparent)]
    BundleObjects(#[from] BundleObjectsError),
}

/// An `olm.bundle.object` property whose data is not base64 (opm decodes each one when it
/// loads a bundle).
#[derive(Debug, thiserror::Error)]
#[error("read bundle objects: {0}")]
pub struct BundleObjectsError(base64::DecodeError);

/// Decodes every inline `olm.bundle.object` once, as opm does when it loads a bundle: bad
/// base64 fails the load.
pub(super) fn check_bundle_objects(bundle: &Bundle) -> Result<(), BundleObjectsError> {
    for property in bundle
        .properties
        .iter()
        .filter(|p| p.type_ == olm_property::BUNDLE_OBJECT)
    {
        let data = property.value.str_field("data").unwrap_or_default();
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
            .map_err(BundleObjectsError)?;
    }
    Ok(())
}

/// Finds `schema`, `package` and `name` case-insensitively, as opm does, and makes their
/// keys lower case.
fn normalize_meta_keys(
    document: &mut serde_json::Map<String, Value>,
) -> Result<(String, String, String), DocumentError> {
    let mut found = [String::new(), String::new(), String::new()];
    for (slot, wanted) in ["schema", "package", "name"].iter().enumerate() {
        // ASCII keys (all of them in practice) are compared without allocating.
        let keys: Vec<String> = document
            .keys()
            .filter(|k| {
                if k.is_ascii() {
                    k.eq_ignore_ascii_case(wanted)
                } else {
                    k.to_lowercase() == *wanted
                }
            })
            .cloned()
            .collect();
        if keys.len() > 1 {
            return Err(DocumentError::DuplicateKeys {
                key: wanted,
                spellings: keys,
            });
        }
        if let Some(key) = keys.into_iter().next() {
            let value = document.remove(&key).unwrap_or(Value::Null);
            match &value {
                Value::String(s) => found[slot] = s.clone(),
                Value::Null => {}
                other => {
                    return Err(DocumentError::MetaNotString {
                        key: wanted,
                        value: other.clone(),
                    });
                }
            }
            document.insert(wanted.to_string(), value);
        }
    }
    let [schema, package, name] = found;
    Ok((schema, package, name))
}

/// Adds one parsed document to `config` by its schema (schema, package and name matched
/// case-insensitively), with opm's messages; templates use it for their inline entries.
pub fn add_document(document: Value, config: &mut DeclarativeConfig) -> Result<(), DocumentError> {
    let Value::Object(mut map) = document else {
        return Err(DocumentError::NotAnObject(document));
    };
    let (schema, package, name) = normalize_meta_keys(&mut map)?;
    let blob = Value::Object(map);
    let parse = |what: &'static str| move |error| DocumentError::Parse { what, error };
    match schema.as_str() {
        "" => return Err(DocumentError::MissingSchema(blob)),
        SCHEMA_PACKAGE => config
            .packages
            .push(serde_json::from_value::<Package>(blob).map_err(parse("package"))?),
        SCHEMA_CHANNEL => config
            .channels
            .push(serde_json::from_value::<Channel>(blob).map_err(parse("channel"))?),
        SCHEMA_BUNDLE => {
            let bundle = serde_json::from_value::<Bundle>(blob).map_err(parse("bundle"))?;
            check_bundle_objects(&bundle)?;
            config.bundles.push(bundle)
        }
        SCHEMA_DEPRECATIONS => config
            .deprecations
            .push(serde_json::from_value::<Deprecation>(blob).map_err(parse("deprecation"))?),
        _ => config.others.push(Meta {
            schema,
            package,
            name,
            blob,
        }),
    }
    Ok(())
}
