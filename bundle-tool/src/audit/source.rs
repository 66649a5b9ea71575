//! What an audit argument points at — a bundle folder, a folder of bundle folders
//! (`<package>/<version>/`), a file-based catalog folder or an image — and the list of
//! bundles to audit in it.

use std::path::{Path, PathBuf};

use super::evidence::CapabilityEvidence;
use crate::bundle::read::{self, Layout, file_name, is_bundle_dir};
use crate::catalog::declcfg;
use crate::manifest;

/// One bundle to audit.
#[derive(Clone, Debug)]
pub enum AuditTarget {
    /// A bundle folder: the whole manifests can be read.
    Folder {
        /// The package, when the layout or `annotations.yaml` says it.
        package: Option<String>,
        /// The folder.
        dir: PathBuf,
        /// How to name it in reports (the folder, or the image it was pulled from).
        source: String,
    },
    /// A catalog entry: only what the FBC carries (already turned into evidence).
    Catalog(Box<CapabilityEvidence>),
}

/// The bundle package named by `metadata/annotations.yaml`, if any.
pub fn annotated_package(dir: &Path) -> Option<String> {
    let documents = manifest::read_path(&dir.join("metadata").join("annotations.yaml")).ok()?;
    documents
        .first()?
        .value
        .get("annotations")?
        .get("operators.operatorframework.io.bundle.package.v1")?
        .as_str()
        .map(str::to_string)
}

/// Version order of folder names: semver when both parse (a leading `v` allowed), else text.
fn version_key(name: &str) -> (Option<semver::Version>, String) {
    (
        semver::Version::parse(name.trim_start_matches('v')).ok(),
        name.to_string(),
    )
}

/// The bundle folders below `dir` (a bundle folder itself, bundles directly inside, or
/// `<package>/<version>/`), keeping only the newest version of each package unless `all`.
pub fn bundle_folders(dir: &Path, all: bool) -> anyhow::Result<Vec<AuditTarget>> {
    let target = |package: Option<String>, dir: PathBuf| AuditTarget::Folder {
        package,
        source: dir.display().to_string(),
        dir,
    };
    if is_bundle_dir(dir) {
        return Ok(vec![target(None, dir.to_path_buf())]);
    }
    let mut found = Vec::new();
    // One package's versions come together (the folders are in path order).
    let mut package: Option<(String, Vec<PathBuf>)> = None;
    let finish = |package: Option<(String, Vec<PathBuf>)>, found: &mut Vec<AuditTarget>| {
        if let Some((name, mut versions)) = package {
            versions.sort_by_key(|v| version_key(&file_name(v)));
            if !all {
                versions = versions.pop().into_iter().collect();
            }
            found.extend(versions.into_iter().map(|v| target(Some(name.clone()), v)));
        }
    };
    for folder in read::folders(dir)? {
        match folder.layout {
            Layout::Direct => {
                finish(package.take(), &mut found);
                found.push(target(None, folder.dir));
            }
            Layout::Versioned { package: name, .. } => match &mut package {
                Some((current, versions)) if *current == name => versions.push(folder.dir),
                _ => {
                    finish(package.take(), &mut found);
                    package = Some((name, vec![folder.dir]));
                }
            },
        }
    }
    finish(package, &mut found);
    Ok(found)
}

/// The bundles of a file-based catalog folder: the newest of each package (by its
/// `olm.package` version), or all of them.
pub fn catalog_entries(dir: &Path, all: bool) -> anyhow::Result<Vec<AuditTarget>> {
    let config = declcfg::load_dir(dir).map_err(|e| {
        anyhow::anyhow!(
            "{}{}: {}",
            e.path.display(),
            e.line.map(|l| format!(":{l}")).unwrap_or_default(),
            e.message
        )
    })?;
    let source = dir.display().to_string();
    let mut evidence: Vec<CapabilityEvidence> = config
        .bundles
        .iter()
        .map(|b| CapabilityEvidence::from_catalog(b, &config.channels, &source))
        .collect();
    evidence.sort_by(|a, b| {
        (&a.package, version_key(&a.version)).cmp(&(&b.package, version_key(&b.version)))
    });
    if !all {
        // Sorted by package then version: the last of each package is its newest.
        let mut newest: Vec<CapabilityEvidence> = Vec::new();
        for e in evidence {
            match newest.last_mut() {
                Some(last) if last.package == e.package => *last = e,
                _ => newest.push(e),
            }
        }
        evidence = newest;
    }
    Ok(evidence
        .into_iter()
        .map(|e| AuditTarget::Catalog(Box::new(e)))
        .collect())
}

/// The targets of a local path: bundle folders if there are any, else a catalog.
pub fn targets_in(path: &Path, all: bool) -> anyhow::Result<Vec<AuditTarget>> {
    anyhow::ensure!(path.exists(), "{}: no such file or folder", path.display());
    if path.is_dir() {
        let folders = bundle_folders(path, all)?;
        if !folders.is_empty() {
            return Ok(folders);
        }
    }
    let entries = catalog_entries(path, all)?;
    anyhow::ensure!(
        !entries.is_empty(),
        "{}: neither a bundle folder, a folder of bundle folders nor a catalog with bundles",
        path.display()
    );
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(root: &Path, package: &str, version: &str) {
        let dir = root.join(package).join(version);
        std::fs::create_dir_all(dir.join("manifests")).expect("mkdir");
        std::fs::create_dir_all(dir.join("metadata")).expect("mkdir");
        std::fs::write(dir.join("metadata/annotations.yaml"), "annotations: {}\n").expect("write");
    }

    fn versions(targets: &[AuditTarget]) -> Vec<String> {
        targets
            .iter()
            .map(|t| match t {
                AuditTarget::Folder { dir, .. } => file_name(dir),
                AuditTarget::Catalog(e) => e.version.clone(),
            })
            .collect()
    }

    #[test]
    fn newest_version_folder_is_chosen_in_semver_order() {
        let root = tempfile::tempdir().expect("tempdir");
        for version in ["0.9.0", "0.10.0", "0.10.0-rc.1"] {
            bundle(root.path(), "a", version);
        }
        bundle(root.path(), "b", "v1.2.3");
        let newest = bundle_folders(root.path(), false).expect("folders");
        assert_eq!(versions(&newest), ["0.10.0", "v1.2.3"]);
        let all = bundle_folders(root.path(), true).expect("folders");
        assert_eq!(versions(&all), ["0.9.0", "0.10.0-rc.1", "0.10.0", "v1.2.3"]);
    }

    #[test]
    fn an_empty_folder_is_an_error_naming_it() {
        let root = tempfile::tempdir().expect("tempdir");
        let error = targets_in(root.path(), false).expect_err("nothing to audit");
        assert!(
            error
                .to_string()
                .contains(&root.path().display().to_string()),
            "{error}"
        );
    }
}
