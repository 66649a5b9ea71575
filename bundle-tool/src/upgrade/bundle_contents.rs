//! What the upgrade checks read from a bundle: its CSV and its CRDs, from a bundle folder or
//! from a catalog's `olm.bundle` document that carries its objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::crd_rules::Crd;
use crate::catalog::bundle_source::{BundleSourceError, MappingError};
use crate::catalog::declcfg::LoadError;
use crate::manifest::{self, ManifestError};

/// Why a bundle could not be read for the upgrade checks.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    /// A manifest could not be read or parsed.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The folder is not a bundle (no `manifests/`).
    #[error("{}: not a bundle folder (no manifests/ folder)", .0.display())]
    NotBundle(PathBuf),
    /// The bundle has no ClusterServiceVersion.
    #[error("{0}: no ClusterServiceVersion in the bundle")]
    NoCsv(String),
    /// The bundle has more than one ClusterServiceVersion.
    #[error("{0}: more than one ClusterServiceVersion in the bundle")]
    SeveralCsvs(String),
    /// A catalog bundle's inline object is not a Kubernetes object.
    #[error("{bundle}: olm.bundle.object {index} is not a JSON or YAML object: {message}")]
    BadObject {
        /// The bundle's name.
        bundle: String,
        /// Which object (0-based).
        index: usize,
        /// What the parser said.
        message: String,
    },
    /// The catalog could not be loaded.
    #[error(transparent)]
    Load(Box<LoadError>),
    /// The catalog has no such package.
    #[error("{}: no package {package:?} in the catalog", catalog.display())]
    NoPackage {
        /// The catalog folder.
        catalog: PathBuf,
        /// The package asked for.
        package: String,
    },
    /// A `--bundle-source` is malformed.
    #[error(transparent)]
    Mapping(#[from] MappingError),
    /// A `--bundle-source` folder could not be read as the bundle its image names.
    #[error("--bundle-source: {0}")]
    BundleSource(Box<BundleSourceError>),
    /// What was read for an image is another bundle than the catalog's.
    #[error("{image}: the bundle read for it is {read:?}, the catalog's is {catalog:?}")]
    OtherBundle {
        /// The image reference.
        image: String,
        /// The bundle name read.
        read: String,
        /// The catalog's bundle name.
        catalog: String,
    },
    /// The cluster of `--kubeconfig` could not be read.
    #[error("{}: {error}", kubeconfig.display())]
    Cluster {
        /// The kubeconfig file.
        kubeconfig: PathBuf,
        /// What failed.
        error: Box<ClusterError>,
    },
}

impl From<LoadError> for UpgradeError {
    fn from(error: LoadError) -> Self {
        UpgradeError::Load(Box::new(error))
    }
}

/// What could not be read from the cluster of `--kubeconfig`.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The runtime for the client could not start.
    #[error("{0}")]
    Runtime(#[source] std::io::Error),
    /// The kubeconfig file could not be read.
    #[error("{0}")]
    Read(#[source] kube::config::KubeconfigError),
    /// The kubeconfig does not give a usable configuration.
    #[error("unusable kubeconfig: {0}")]
    Unusable(#[source] kube::config::KubeconfigError),
    /// No client could be made from it.
    #[error("{0}")]
    Client(#[source] kube::Error),
    /// A CRD could not be read.
    #[error("reading CRD {name}: {error}")]
    ReadCrd {
        /// The CRD.
        name: String,
        /// The API error.
        error: kube::Error,
    },
    /// The custom resources of a CRD version could not be listed.
    #[error("listing {name} at {version}: {error}")]
    List {
        /// The CRD.
        name: String,
        /// The version.
        version: String,
        /// The API error.
        error: kube::Error,
    },
}

/// A bundle as the upgrade checks read it.
#[derive(Clone, Debug)]
pub struct BundleContents {
    /// The CSV's `metadata.name` (the bundle name in a catalog).
    pub name: String,
    /// Where it came from, for messages.
    pub source: String,
    /// The CSV.
    pub csv: Value,
    /// The CRDs by name.
    pub crds: BTreeMap<String, Crd>,
}

impl BundleContents {
    /// Reads the bundle folder `dir` (its `manifests/`).
    pub fn from_dir(dir: &Path) -> Result<BundleContents, UpgradeError> {
        let manifests = dir.join("manifests");
        if !manifests.is_dir() {
            return Err(UpgradeError::NotBundle(dir.to_path_buf()));
        }
        let objects = manifest::read_path(&manifests)?
            .into_iter()
            .map(|document| document.value)
            .collect();
        BundleContents::from_objects(objects, dir.display().to_string())
    }

    /// A catalog bundle's inline objects (`olm.bundle.object`), each JSON or YAML text.
    pub fn from_inline(name: &str, objects: &[Vec<u8>]) -> Result<BundleContents, UpgradeError> {
        let mut values = Vec::new();
        for (index, data) in objects.iter().enumerate() {
            let text = String::from_utf8_lossy(data);
            let label = PathBuf::from(format!("{name}/olm.bundle.object[{index}]"));
            let documents =
                manifest::read_stream(&label, &text).map_err(|e| UpgradeError::BadObject {
                    bundle: name.to_string(),
                    index,
                    message: e.to_string(),
                })?;
            values.extend(documents.into_iter().map(|d| d.value));
        }
        BundleContents::from_objects(values, name.to_string())
    }

    fn from_objects(objects: Vec<Value>, source: String) -> Result<BundleContents, UpgradeError> {
        let mut csv = None;
        let mut crds = BTreeMap::new();
        for object in objects {
            match object["kind"].as_str() {
                Some("ClusterServiceVersion") if csv.is_some() => {
                    return Err(UpgradeError::SeveralCsvs(source));
                }
                Some("ClusterServiceVersion") => csv = Some(object),
                Some("CustomResourceDefinition") => {
                    let crd = Crd::from_object(&object);
                    crds.insert(crd.name.clone(), crd);
                }
                _ => {}
            }
        }
        let csv = csv.ok_or_else(|| UpgradeError::NoCsv(source.clone()))?;
        let name = csv["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(BundleContents {
            name,
            source,
            csv,
            crds,
        })
    }

    /// `spec.version` of the CSV.
    pub fn version(&self) -> Option<semver::Version> {
        self.csv["spec"]["version"]
            .as_str()
            .and_then(|v| crate::version_range::parse_version_tolerant(v).ok())
    }
}
