//! `catalog deprecate`: marks a bundle, a channel or a whole package deprecated with an
//! `olm.deprecations` entry, which OLM shows on Subscriptions (`BundleDeprecated`,
//! `ChannelDeprecated`, `PackageDeprecated`). Deprecating the same thing again replaces its
//! message. The catalog is validated before the package's file is replaced, so a reference
//! to a bundle or channel that does not exist is refused with opm's message.

use std::path::PathBuf;

use super::declcfg::{
    DeclarativeConfig, Deprecation, DeprecationEntry, PackageScopedReference, SCHEMA_BUNDLE,
    SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
use super::package_file::{EditError, PackageFile};

/// `bundle-tool catalog deprecate`.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("target").required(true).multiple(false))]
pub struct DeprecateArgs {
    /// The catalog folder (`<catalog>/<package>/catalog.json|yaml` per package).
    pub catalog: PathBuf,
    /// The package.
    #[arg(long)]
    pub package: String,
    /// Deprecate this bundle.
    #[arg(long, group = "target")]
    pub bundle: Option<String>,
    /// Deprecate this channel.
    #[arg(long, group = "target")]
    pub channel: Option<String>,
    /// Deprecate the whole package.
    #[arg(long, group = "target")]
    pub package_level: bool,
    /// What users see, e.g. "0.1.x is end of life; use the stable channel".
    #[arg(long)]
    pub message: String,
}

/// Runs `catalog deprecate`; the line to print on success.
pub fn run(args: &DeprecateArgs) -> Result<String, EditError> {
    let reference = match (&args.bundle, &args.channel) {
        (Some(bundle), _) => PackageScopedReference {
            schema: SCHEMA_BUNDLE.into(),
            name: bundle.clone(),
        },
        (None, Some(channel)) => PackageScopedReference {
            schema: SCHEMA_CHANNEL.into(),
            name: channel.clone(),
        },
        (None, None) => PackageScopedReference {
            schema: SCHEMA_PACKAGE.into(),
            name: String::new(),
        },
    };
    let mut file = PackageFile::open(&args.catalog, &args.package)?;
    if file.config.packages.is_empty() {
        return Err(EditError::UnknownPackage {
            package: args.package.clone(),
            catalog: args.catalog.clone(),
        });
    }
    let described = describe(&reference);
    deprecate(&mut file.config, &args.package, reference, &args.message)?;
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
