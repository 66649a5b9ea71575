//! What commands read from bundle folders on disk besides validating them: whether a folder
//! is one, its labels (the keys of `metadata/annotations.yaml`), its CSV's version, and the
//! bundle folders below a folder of bundles (`push-all` and `audit` both walk them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::manifest::{self, ManifestError};

/// Why a bundle folder's labels could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleReadError {
    /// `annotations.yaml` could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A folder could not be listed.
    #[error("reading {}: {error}", path.display())]
    ReadDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `annotations.yaml` has no `annotations:` map.
    #[error("{}: no `annotations:` map", .0.display())]
    NoAnnotations(PathBuf),
}

/// The bundle labels: every key of `metadata/annotations.yaml`, values as text.
pub fn labels(dir: &Path) -> Result<BTreeMap<String, String>, BundleReadError> {
    let path = dir.join("metadata").join("annotations.yaml");
    let documents = manifest::read_path(&path)?;
    let annotations = documents
        .first()
        .and_then(|d| d.value.get("annotations"))
        .and_then(serde_json::Value::as_object)
        .ok_or(BundleReadError::NoAnnotations(path.clone()))?;
    Ok(annotations
        .iter()
        .map(|(k, v)| {
            let text = v.as_str().map(str::to_string);
            (k.clone(), text.unwrap_or_else(|| v.to_string()))
        })
        .collect())
}

/// `spec.version` of the CSV in `dir/manifests`, if it can be read.
pub fn csv_version(dir: &Path) -> Option<String> {
    let documents = manifest::read_path(&dir.join("manifests")).ok()?;
    documents
        .iter()
        .find(|d| d.value["kind"] == "ClusterServiceVersion")
        .and_then(|d| d.value.pointer("/spec/version"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

/// A bundle folder found below a folder of bundles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleFolder {
    /// The bundle folder.
    pub dir: PathBuf,
    /// Where it sits.
    pub layout: Layout,
}

/// How a bundle folder sits in the folder of bundles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Directly inside.
    Direct,
    /// In `<package>/<version>/`.
    Versioned {
        /// The parent folder's name.
        package: String,
        /// The folder's name.
        version: String,
    },
}

impl BundleFolder {
    /// Package and version as names: from `<package>/<version>/`, else the folder's name and
    /// the CSV's version (`latest` when it has none).
    pub fn package_and_version(&self) -> (String, String) {
        match &self.layout {
            Layout::Versioned { package, version } => (package.clone(), version.clone()),
            Layout::Direct => (
                file_name(&self.dir),
                csv_version(&self.dir).unwrap_or_else(|| "latest".into()),
            ),
        }
    }
}

/// Every bundle folder at most two levels below `dir` (bundles directly inside, or
/// `<package>/<version>/`), in path order.
pub fn folders(dir: &Path) -> Result<Vec<BundleFolder>, BundleReadError> {
    let mut found = Vec::new();
    for entry in sorted_entries(dir)? {
        if is_bundle_dir(&entry) {
            found.push(BundleFolder {
                dir: entry,
                layout: Layout::Direct,
            });
        } else if entry.is_dir() {
            let package = file_name(&entry);
            for version in sorted_entries(&entry)? {
                if is_bundle_dir(&version) {
                    found.push(BundleFolder {
                        layout: Layout::Versioned {
                            package: package.clone(),
                            version: file_name(&version),
                        },
                        dir: version,
                    });
                }
            }
        }
    }
    Ok(found)
}

/// Whether `dir` is a bundle folder (it has `manifests/` and `metadata/`), as opm decides.
pub fn is_bundle_dir(dir: &Path) -> bool {
    dir.join("manifests").is_dir() && dir.join("metadata").is_dir()
}

/// The entries of a folder, sorted by path.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, BundleReadError> {
    let read = |error| BundleReadError::ReadDir {
        path: dir.to_path_buf(),
        error,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    Ok(entries)
}

/// The last component of `path`, as text.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}
