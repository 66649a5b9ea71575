//! An image pulled and unpacked into a temporary folder, so that commands read an image the
//! way they read a folder. What kind of image it is comes from its labels, as opm decides.

use std::path::{Path, PathBuf};

use super::unpack::unpack_layers;
use super::{CATALOG_CONFIGS_LABEL, RegistrySettings, Transport, TransportError, parse_reference};

/// The label every bundle image carries (opm checks it too).
pub const BUNDLE_PACKAGE_LABEL: &str = "operators.operatorframework.io.bundle.package.v1";

/// What an image holds, by its labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// A bundle image (`operators.operatorframework.io.bundle.package.v1`).
    Bundle,
    /// A catalog image (`operators.operatorframework.io.index.configs.v1`).
    Catalog,
}

/// Why an image could not be pulled into a folder; each step keeps its own words because
/// commands report them differently.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The text is not an image reference.
    #[error("{0:#}")]
    Reference(anyhow::Error),
    /// The registry exchange failed (after retries) or a digest did not match.
    #[error("{0:#}")]
    Registry(anyhow::Error),
    /// The layer could not be unpacked safely.
    #[error("{0:#}")]
    Unpack(anyhow::Error),
    /// The image config is not JSON.
    #[error("the image config is not JSON: {0}")]
    Config(#[from] serde_json::Error),
    /// A CA file cannot be used.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The temporary folder could not be made.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// An image unpacked into a temporary folder, removed when this value is dropped.
#[derive(Debug)]
pub struct PulledImage {
    /// Held for its `Drop`, which removes the folder.
    _folder: tempfile::TempDir,
    root: PathBuf,
    /// The kind the labels show, if any.
    pub kind: Option<ImageKind>,
}

impl PulledImage {
    /// The folder to read: the catalog folder an `index.configs.v1` label names, else the
    /// unpacked root (a bundle's `manifests/` and `metadata/` are there).
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Pulls `reference` (credentials from the auth files; mirrors from registries.conf) and
/// unpacks its layers.
pub fn pull_to_temp(reference: &str, transport: &Transport) -> Result<PulledImage, PullError> {
    let parsed = parse_reference(reference).map_err(PullError::Reference)?;
    // A CA file that cannot be used is its own error, before any request.
    transport.ca_certificates()?;
    let access = RegistrySettings {
        transport: transport.clone(),
        username: None,
    }
    .access()?;
    let image = block_on(
        access.pull_from_sources(&parsed, |client, reference| async move {
            client.pull(&reference).await
        }),
    )?
    .map_err(PullError::Registry)?;
    let config: serde_json::Value = serde_json::from_slice(&image.config)?;
    let folder = tempfile::tempdir()?;
    let labels = &config["config"]["Labels"];
    // A catalog image: its file-based catalog only (a runnable one also holds its server).
    let only = labels[CATALOG_CONFIGS_LABEL]
        .as_str()
        .map(|configs| std::path::PathBuf::from(configs.trim_start_matches('/')));
    unpack_layers(&image.layers, folder.path(), only.as_deref()).map_err(PullError::Unpack)?;
    let (root, kind) = match labels[CATALOG_CONFIGS_LABEL].as_str() {
        Some(configs) => (
            folder.path().join(configs.trim_start_matches('/')),
            Some(ImageKind::Catalog),
        ),
        None => (
            folder.path().to_path_buf(),
            labels[BUNDLE_PACKAGE_LABEL]
                .is_string()
                .then_some(ImageKind::Bundle),
        ),
    };
    Ok(PulledImage {
        _folder: folder,
        root,
        kind,
    })
}

/// Runs a pull to completion from synchronous code: on the caller's runtime when there is
/// one (the server pulls from its blocking threads), else on a runtime made for it.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, std::io::Error> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Ok(handle.block_on(future)),
        Err(_) => Ok(tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(future)),
    }
}

/// Pulls bundle images for `bundle-tool serve --inline-bundles`: the catalog server's seam
/// for the registry client it does not carry itself.
#[derive(Debug)]
pub struct BundleImagePuller {
    /// Plain HTTP or HTTPS, and whom HTTPS trusts.
    pub transport: Transport,
}

impl crate::serve::PullBundle for BundleImagePuller {
    fn pull(
        &self,
        reference: &str,
    ) -> Result<crate::serve::PulledBundle, crate::serve::BundleManifestsError> {
        use crate::serve::BundleManifestsError;
        let image = pull_to_temp(reference, &self.transport).map_err(|error| match error {
            PullError::Reference(_) => BundleManifestsError::Reference(error.into()),
            PullError::Unpack(_) => BundleManifestsError::Unpack {
                reference: reference.to_string(),
                error: error.into(),
            },
            _ => BundleManifestsError::Pull {
                reference: reference.to_string(),
                error: error.into(),
            },
        })?;
        Ok(crate::serve::PulledBundle {
            root: image.root.clone(),
            keep: Box::new(image),
        })
    }
}
