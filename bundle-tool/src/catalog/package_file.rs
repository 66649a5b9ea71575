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
    pub fn open(catalog: &Path, package: &str) -> Result<PackageFile, String> {
        let whole = load_dir(catalog).map_err(|e| e.to_string())?;
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
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            load_str(path, &text, &mut config).map_err(|e| e.to_string())?;
        }
        let (mine, rest) = split_by_package(whole, package);
        let in_file = split_by_package(config.clone(), package).0;
        if document_count(&mine) != document_count(&in_file)
            || document_count(&in_file) != document_count(&config)
        {
            return Err(format!(
                "package {package:?}: its documents are not all in {} (and only there); \
                 edits need one file per package, <catalog>/<package>/catalog.json or .yaml",
                path.display()
            ));
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
    pub fn open_or_new(catalog: &Path, package: &str) -> Result<PackageFile, String> {
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
    pub fn commit(self) -> Result<PathBuf, String> {
        let content = self.validated_content()?;
        durable::commit_files(&self.catalog, &[(self.path.clone(), content.into_bytes())])
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(self.path)
    }

    /// The file's new content, once the catalog with the edited package validates; nothing
    /// is written (`release` stages it with the rest of its changes).
    pub fn validated_content(&self) -> Result<String, String> {
        let mut whole = self.rest.clone();
        whole.append(self.config.clone());
        let model = Model::from_declcfg(whole)
            .map_err(|e| format!("the edit would make the catalog invalid: {e}"))?;
        if let Some(tree) = model.validate() {
            return Err(format!(
                "the edit would make the catalog invalid; nothing was written:\n{tree}"
            ));
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
