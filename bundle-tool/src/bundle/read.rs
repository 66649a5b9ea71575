//! What commands read from a bundle folder on disk besides validating it: its labels (the
//! keys of `metadata/annotations.yaml`) and its CSV's version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::manifest::{self, ManifestError};

/// Why a bundle folder's labels could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleReadError {
    /// `annotations.yaml` could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
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
    /// The package: the parent folder's name in `<package>/<version>/`, else the bundle
    /// folder's own name.
    pub package: String,
    /// The version: the folder's name in `<package>/<version>/`, else the CSV's version
    /// (`latest` when it has none).
    pub version: String,
    /// The bundle folder.
    pub dir: PathBuf,
}

/// Every bundle folder at most two levels below `dir` (bundles directly inside, or
/// `<package>/<version>/`), in path order.
pub fn folders(dir: &Path) -> std::io::Result<Vec<BundleFolder>> {
    let mut found = Vec::new();
    for entry in sorted_entries(dir)? {
        if crate::catalog::render::is_bundle_dir(&entry) {
            found.push(BundleFolder {
                package: file_name(&entry),
                version: csv_version(&entry).unwrap_or_else(|| "latest".into()),
                dir: entry,
            });
        } else if entry.is_dir() {
            let package = file_name(&entry);
            for version in sorted_entries(&entry)? {
                if crate::catalog::render::is_bundle_dir(&version) {
                    found.push(BundleFolder {
                        package: package.clone(),
                        version: file_name(&version),
                        dir: version,
                    });
                }
            }
        }
    }
    Ok(found)
}

/// The entries of a folder, sorted by path.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    Ok(entries)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}
