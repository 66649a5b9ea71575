//! `catalog deprecate`: marks a bundle, a channel or a whole package deprecated with an
//! `olm.deprecations` entry, which OLM shows on Subscriptions (`BundleDeprecated`,
//! `ChannelDeprecated`, `PackageDeprecated`). Deprecating the same thing again replaces its
//! message. The catalog is validated before the package's file is replaced, so a reference
//! to a bundle or channel that does not exist is refused with opm's message.

use std::path::Path;

use super::declcfg::{
    DeclarativeConfig, Deprecation, DeprecationEntry, PackageScopedReference, SCHEMA_BUNDLE,
    SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
use super::package_file::{EditError, PackageFile};

/// What `catalog deprecate` marks deprecated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// This bundle.
    Bundle(String),
    /// This channel.
    Channel(String),
    /// The whole package.
    Package,
}

/// Runs `catalog deprecate`; the line to print on success.
/// `target` of `package` in the catalog folder `catalog`, with `message` for users.
pub fn run(
    catalog: &Path,
    package: &str,
    target: &Target,
    message: &str,
) -> Result<String, EditError> {
    let reference = match target {
        Target::Bundle(bundle) => PackageScopedReference {
            schema: SCHEMA_BUNDLE.into(),
            name: bundle.clone(),
        },
        Target::Channel(channel) => PackageScopedReference {
            schema: SCHEMA_CHANNEL.into(),
            name: channel.clone(),
        },
        Target::Package => PackageScopedReference {
            schema: SCHEMA_PACKAGE.into(),
            name: String::new(),
        },
    };
    let mut file = PackageFile::open(catalog, package)?;
    if file.config.packages.is_empty() {
        return Err(EditError::UnknownPackage {
            package: package.to_string(),
            catalog: catalog.to_path_buf(),
        });
    }
    let described = describe(&reference);
    deprecate(&mut file.config, package, reference, message)?;
    let path = file.commit()?;
    Ok(format!("deprecated {described} in {}\n", path.display()))
}

fn describe(reference: &PackageScopedReference) -> String {
    if reference.name.is_empty() {
        reference.schema.clone()
    } else {
        format!("{}/{}", reference.schema, reference.name)
    }
}

/// Adds (or updates) the deprecation of `reference` in `package`'s `olm.deprecations`.
pub fn deprecate(
    config: &mut DeclarativeConfig,
    package: &str,
    reference: PackageScopedReference,
    message: &str,
) -> Result<(), EditError> {
    if message.trim().is_empty() {
        return Err(EditError::NoMessage);
    }
    let index = match config
        .deprecations
        .iter()
        .position(|d| d.package == package)
    {
        Some(index) => index,
        None => {
            config.deprecations.push(Deprecation {
                schema: SCHEMA_DEPRECATIONS.into(),
                package: package.to_string(),
                entries: Vec::new(),
            });
            config.deprecations.len() - 1
        }
    };
    let entries = &mut config.deprecations[index].entries;
    match entries.iter_mut().find(|e| e.reference == reference) {
        Some(entry) => entry.message = message.to_string(),
        None => entries.push(DeprecationEntry {
            reference,
            message: message.to_string(),
        }),
    }
    Ok(())
}
