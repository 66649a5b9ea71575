//! OLM v1 (operator-controller) as it installs a registry+v1 bundle, and the RBAC the
//! ClusterExtension's installer ServiceAccount needs for it.
//!
//! operator-controller has no cluster-admin rights of its own: it installs, upgrades and
//! removes a bundle's objects as the ServiceAccount named in `spec.serviceAccount`
//! (operator-controller v1.5.1 `api/v1/clusterextension_types.go`, a required field). What it
//! creates from a bundle is fixed by its renderer, read from v1.5.1's
//! `internal/operator-controller/rukpak/render/registryv1/generators/generators.go` and
//! `render/certproviders/certmanager.go`; [`rendered`] lists those objects by name, and
//! [`installer_rbac`] turns the list into least-privilege rules.

pub mod installer_rbac;
pub mod registry_v1;
pub mod rendered;

pub use installer_rbac::{InstallerRbac, RbacOptions, derive};
pub use registry_v1::RegistryV1;

use std::path::PathBuf;

use crate::manifest::{ManifestError, SourceLocation};

/// Why a bundle cannot be rendered as OLM v1 renders it.
#[derive(Debug, thiserror::Error)]
pub enum OlmV1Error {
    /// The bundle's manifests could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The folder has no ClusterServiceVersion.
    #[error("{}: no ClusterServiceVersion in the bundle's manifests", .dir.display())]
    NoCsv {
        /// The folder read.
        dir: PathBuf,
    },
    /// More than one ClusterServiceVersion.
    #[error("{location}: a second ClusterServiceVersion (a bundle has exactly one)")]
    SecondCsv {
        /// Where the second one starts.
        location: SourceLocation,
    },
    /// A field operator-controller reads has the wrong shape.
    #[error("{location}: {field}: {why}")]
    Field {
        /// The document holding it.
        location: SourceLocation,
        /// The field's path.
        field: String,
        /// What is wrong.
        why: String,
    },
    /// Neither AllNamespaces nor OwnNamespace is supported: operator-controller v1.5.1 then
    /// needs a watch namespace in the ClusterExtension's configuration, which this derivation
    /// does not take.
    #[error(
        "{location}: the CSV supports neither AllNamespaces nor OwnNamespace; operator-controller v1.5.1 installs such a bundle only with a watch namespace, which is not supported here"
    )]
    InstallModes {
        /// The CSV.
        location: SourceLocation,
    },
    /// A kind operator-controller refuses in a bundle (operator-registry's supported list).
    #[error("{location}: {kind} is not a kind OLM installs from a bundle")]
    UnsupportedKind {
        /// Where the object starts.
        location: SourceLocation,
        /// Its kind.
        kind: String,
    },
}
