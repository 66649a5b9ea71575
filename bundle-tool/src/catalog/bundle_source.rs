//! Where a bundle's contents come from when a catalog names it by image reference.
//!
//! Templates and `catalog add` name bundles by the pull spec OLM will use, but rendering an
//! `olm.bundle` needs the manifests. They come from the registry (pulled and unpacked into a
//! temporary folder), or — for bundles not pushed yet, or in CI without a registry — from a
//! local bundle folder declared with `--bundle-source REF=DIR`. Either way the rendered
//! `image` is REF, so the catalog is the same as if the image had been pulled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::declcfg::Bundle;
use super::render::{RenderError, is_bundle_dir, render_bundle_dir};
use crate::image::{BUNDLE_PACKAGE_LABEL, PullError};
pub use catalog_model::bundle_mapping::{MappingSyntaxError, parse_mapping};

/// A `--bundle-source` argument that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MappingError {
    /// Not `REF=DIR`.
    #[error(transparent)]
    Syntax(#[from] MappingSyntaxError),
    /// DIR is not a bundle folder.
    #[error("--bundle-source {spec:?}: {} is not a bundle folder (no manifests/ and metadata/)", .dir.display())]
    NotABundle {
        /// The argument.
        spec: String,
        /// The folder, relative to the template's.
        dir: PathBuf,
    },
}

/// Why a bundle image reference could not be rendered, in opm's words.
#[derive(Debug, thiserror::Error)]
pub enum BundleSourceError {
    /// Its mapped folder does not render.
    #[error("render reference {reference:?}: {}: {error}", .dir.display())]
    Folder {
        /// The image reference.
        reference: String,
        /// The folder standing in for it.
        dir: PathBuf,
        /// Why.
        error: RenderError,
    },
    /// The image could not be pulled.
    #[error("render reference {reference:?}: {error}")]
    Pull {
        /// The image reference.
        reference: String,
        /// Why.
        error: PullError,
    },
    /// The image is not a bundle image.
    #[error(
        "render reference {0:?}: image type could not be determined: not a bundle image (no {BUNDLE_PACKAGE_LABEL} label)"
    )]
    NotABundle(String),
    /// The pulled image does not render.
    #[error("render reference {reference:?}: {error}")]
    Render {
        /// The image reference.
        reference: String,
        /// Why.
        error: RenderError,
    },
}

/// How bundle image references are turned into rendered bundles.
#[derive(Clone, Debug, Default)]
pub struct BundleSources {
    /// Image reference → local bundle folder with the same contents.
    local: BTreeMap<String, PathBuf>,
    /// Image reference → its bundle as a catalog already renders it (re-rendering a
    /// catalog's own bundles needs neither a registry nor their folders).
    known: BTreeMap<String, Bundle>,
    /// Plain HTTP (local registries, like opm's `--use-http`) or HTTPS and whom it trusts.
    transport: crate::image::Transport,
}

impl BundleSources {
    /// Sources that pull every image over `transport`.
    pub fn new(transport: crate::image::Transport) -> Self {
        BundleSources {
            local: BTreeMap::new(),
            known: BTreeMap::new(),
            transport,
        }
    }

    /// Adds a `REF=DIR` mapping: the image REF is rendered from the bundle folder DIR.
    /// Relative folders are taken relative to `base` (the template's folder, so that a
    /// template and its mappings move together).
    pub fn add_mapping(&mut self, spec: &str, base: &Path) -> Result<(), MappingError> {
        let (reference, dir) = parse_mapping(spec)?;
        let dir = base.join(dir);
        if !is_bundle_dir(&dir) {
            return Err(MappingError::NotABundle {
                spec: spec.to_string(),
                dir,
            });
        }
        self.local.insert(reference, dir);
        Ok(())
    }

    /// Renders `bundle.image` as `bundle` itself: a bundle already rendered into a catalog.
    pub fn add_rendered(&mut self, bundle: Bundle) {
        self.known.insert(bundle.image.clone(), bundle);
    }

    /// The `REF → DIR` mappings, for writing them down next to a rendered catalog.
    pub fn mappings(&self) -> &BTreeMap<String, PathBuf> {
        &self.local
    }

    /// Renders the bundle image `reference`: from its mapped folder if there is one, else
    /// pulled from its registry. The rendered `image` is `reference` either way.
    pub fn render_image(&self, reference: &str) -> Result<Bundle, BundleSourceError> {
        if let Some(bundle) = self.known.get(reference) {
            return Ok(bundle.clone());
        }
        if let Some(dir) = self.local.get(reference) {
            return render_bundle_dir(dir, reference).map_err(|error| BundleSourceError::Folder {
                reference: reference.to_string(),
                dir: dir.clone(),
                error,
            });
        }
        let pulled = self.pull(reference)?;
        render_bundle_dir(pulled.root(), reference).map_err(|error| BundleSourceError::Render {
            reference: reference.to_string(),
            error,
        })
    }

    /// Pulls a bundle image into a temporary folder (removed when the value is dropped).
    fn pull(&self, reference: &str) -> Result<crate::image::PulledImage, BundleSourceError> {
        let image = crate::image::pull_to_temp(reference, &self.transport).map_err(|error| {
            BundleSourceError::Pull {
                reference: reference.to_string(),
                error,
            }
        })?;
        if image.kind != Some(crate::image::ImageKind::Bundle) {
            return Err(BundleSourceError::NotABundle(reference.to_string()));
        }
        Ok(image)
    }
}
