//! One package's file in a catalog folder, for the edits CI makes (`catalog add`,
//! `catalog deprecate`).
//!
//! Edits work on catalogs laid out the way `opm` documents and `catalog template` output is
//! usually stored: `<catalog>/<package>/catalog.json` (or `.yaml`/`.yml`) holding every
//! document of that package. The edit is applied to that file's documents, the whole catalog
//! (the other packages as they are plus the edited one) is validated with every `opm validate`
//! rule, and only then is the file replaced — in a staged copy of the catalog folder that is
//! exchanged with the folder in one rename ([`crate::durable::commit_files`]), so a rejected
//! edit or a kill leaves the catalog as it was. (A temporary file inside the catalog would
//! not do: catalog loaders read every file whatever its name, and a killed run's leftover
//! would be loaded as a second copy of the package, or as a truncated document.)

use std::path::{Path, PathBuf};

use super::declcfg::{DeclarativeConfig, load_dir, load_str};
use super::model::Model;
use super::template::CatalogFormat;
use crate::durable;

/// Why a catalog edit (`catalog add`, `catalog deprecate`, a release's catalog step) was
/// refused or could not be written; nothing was written when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The catalog could not be loaded.
    #[error(transparent)]
    Load(#[from] super::declcfg::LoadError),
    /// The package's file could not be read.
    #[error("{}: {error}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The package's documents are spread over several files.
    #[error(
        "package {package:?}: its documents are not all in {} (and only there); \
         edits need one file per package, <catalog>/<package>/catalog.json or .yaml",
        .path.display()
    )]
    Scattered {
        /// The package.
        package: String,
        /// The file that should hold them all.
        path: PathBuf,
    },
    /// The edited catalog does not make a model.
    #[error("the edit would make the catalog invalid: {0}")]
    Model(super::model::ModelError),
    /// The edited catalog breaks graph or bundle rules.
    #[error("the edit would make the catalog invalid; nothing was written:\n{0}")]
    Invalid(super::model::ValidationTree),
    /// The catalog folder could not be replaced.
    #[error("{}: {error}", .path.display())]
    Commit {
        /// The package's file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The bundle argument is a folder but not a bundle folder.
    #[error("{}: not a bundle folder (no manifests/ and metadata/)", .0.display())]
    NotABundleFolder(PathBuf),
    /// The bundle folder does not render.
    #[error("{}: {error}", .path.display())]
    Render {
        /// The bundle folder.
        path: PathBuf,
        /// Why.
        error: super::render::RenderError,
    },
    /// `--image` given for an image reference.
    #[error(
        "--image is for bundle folders; {0} is not a folder here, so it is taken as an image reference, which is already the pull spec"
    )]
    ImageForReference(String),
    /// The bundle argument is neither a path nor a reference.
    #[error(transparent)]
    Location(#[from] crate::location::LocationError),
    /// The bundle image could not be rendered.
    #[error(transparent)]
    BundleSource(#[from] super::bundle_source::BundleSourceError),
    /// `--channels` is empty or names an empty channel.
    #[error("--channels: name at least one channel, without empty names")]
    NoChannels,
    /// The bundle is in the package already.
    #[error("bundle {bundle:?} is already in package {package:?}")]
    BundleExists {
        /// The bundle.
        bundle: String,
        /// The package.
        package: String,
    },
    /// `--replaces auto` on a channel with several heads or none.
    #[error("channel {channel:?} has no single head ({}); name the bundle to replace with --replaces", if .heads.is_empty() { "none".to_string() } else { .heads.join(", ") })]
    NoSingleHead {
        /// The channel.
        channel: String,
        /// Its heads.
        heads: Vec<String>,
    },
    /// The package to deprecate something of is not in the catalog.
    #[error("package {package:?} is not in {}", .catalog.display())]
    UnknownPackage {
        /// The package.
        package: String,
        /// The catalog folder.
        catalog: PathBuf,
    },
    /// An empty deprecation message.
    #[error("--message: a deprecation needs a message for users")]
    NoMessage,
}

/// The file names a package's documents may live in, in order of preference.
const FILE_NAMES: [&str; 3] = ["catalog.json", "catalog.yaml", "catalog.yml"];

/// A package's documents, loaded from its file, with the rest of the catalog beside them.
#[derive(Debug)]
pub struct PackageFile {
    /// The file the package is (or will be) written to.
    pub path: PathBuf,
    /// The catalog folder, the unit a commit replaces.
    catalog: PathBuf,
    /// The package's documents; edits change these.
    pub config: DeclarativeConfig,
    /// Every other document of the catalog, for validating the result as a whole.
    rest: DeclarativeConfig,
    format: CatalogFormat,
}

impl PackageFile {
    /// Opens `package`'s file in the catalog folder `catalog`. A package the catalog does
    /// not have yet gets a new `catalog.json`; a package whose documents are spread over
    /// other files is refused (an edit could not be written back faithfully).
    pub fn open(catalog: &Path, package: &str) -> Result<PackageFile, EditError> {
        let whole = load_dir(catalog)?;
        let folder = catalog.join(package);
        let existing = FILE_NAMES
            .iter()
            .map(|name| folder.join(name))
            .find(|path| path.is_file());
        let path = existing
            .clone()
            .unwrap_or_else(|| folder.join(FILE_NAMES[0]));
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => CatalogFormat::Json,
            _ => CatalogFormat::Yaml,
        };
        let mut config = DeclarativeConfig::default();
        if let Some(path) = &existing {
            let text = std::fs::read_to_string(path).map_err(|error| EditError::Read {
                path: path.clone(),
                error,
            })?;
            load_str(path, &text, &mut config)?;
        }
        let (mine, rest) = split_by_package(whole, package);
        let in_file = split_by_package(config.clone(), package).0;
        if document_count(&mine) != document_count(&in_file)
            || document_count(&in_file) != document_count(&config)
        {
            return Err(EditError::Scattered {
                package: package.to_string(),
                path,
            });
        }
        Ok(PackageFile {
            path,
            catalog: catalog.to_path_buf(),
            config,
            rest,
            format,
        })
    }

    /// [`PackageFile::open`], or for a catalog folder that does not exist yet an empty
    /// package that will be `<catalog>/<package>/catalog.json`.
    pub fn open_or_new(catalog: &Path, package: &str) -> Result<PackageFile, EditError> {
        if catalog.exists() {
            return PackageFile::open(catalog, package);
        }
        Ok(PackageFile {
            path: catalog.join(package).join(FILE_NAMES[0]),
            catalog: catalog.to_path_buf(),
            config: DeclarativeConfig::default(),
            rest: DeclarativeConfig::default(),
            format: CatalogFormat::Json,
        })
    }

    /// Validates the catalog with the edited package and, if it is valid, writes the
    /// package's file atomically. On error nothing is written; the error is opm's message
    /// (or its tree of problems).
    pub fn commit(self) -> Result<PathBuf, EditError> {
        let content = self.validated_content()?;
        durable::commit_files(&self.catalog, &[(self.path.clone(), content.into_bytes())])
            .map_err(|error| EditError::Commit {
                path: self.path.clone(),
                error,
            })?;
        Ok(self.path)
    }

    /// The file's new content, once the catalog with the edited package validates; nothing
    /// is written (`release` stages it with the rest of its changes).
    pub fn validated_content(&self) -> Result<String, EditError> {
        let mut whole = self.rest.clone();
        whole.append(self.config.clone());
        let model = Model::from_declcfg(whole).map_err(EditError::Model)?;
        if let Some(tree) = model.validate() {
            return Err(EditError::Invalid(tree));
        }
        Ok(self.format.write(&self.config))
    }
}

/// (documents of `package`, all the others).
fn split_by_package(
    config: DeclarativeConfig,
    package: &str,
) -> (DeclarativeConfig, DeclarativeConfig) {
    let (mut mine, mut rest) = (DeclarativeConfig::default(), DeclarativeConfig::default());
    for p in config.packages {
        if p.name == package {
            mine.packages.push(p)
        } else {
            rest.packages.push(p)
        }
    }
    for c in config.channels {
        if c.package == package {
            mine.channels.push(c)
        } else {
            rest.channels.push(c)
        }
    }
    for b in config.bundles {
        if b.package == package {
            mine.bundles.push(b)
        } else {
            rest.bundles.push(b)
        }
    }
    for d in config.deprecations {
        if d.package == package {
            mine.deprecations.push(d)
        } else {
            rest.deprecations.push(d)
        }
    }
    for o in config.others {
        if o.package == package {
            mine.others.push(o)
        } else {
            rest.others.push(o)
        }
    }
    (mine, rest)
}

fn document_count(config: &DeclarativeConfig) -> usize {
    config.packages.len()
        + config.channels.len()
        + config.bundles.len()
        + config.deprecations.len()
        + config.others.len()
}
