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
use super::render::{is_bundle_dir, render_bundle_dir};
use crate::image::BUNDLE_PACKAGE_LABEL;

/// Reads a `--bundle-source REF=DIR` argument (`catalog template` and `serve` alike). An
/// image reference has no `=`, so the first one ends it.
pub fn parse_mapping(spec: &str) -> Result<(String, PathBuf), String> {
    spec.split_once('=')
        .filter(|(r, d)| !r.is_empty() && !d.is_empty())
        .map(|(r, d)| (r.to_string(), PathBuf::from(d)))
        .ok_or_else(|| format!("--bundle-source {spec:?}: expected REF=DIR"))
}

/// How bundle image references are turned into rendered bundles.
#[derive(Clone, Debug, Default)]
pub struct BundleSources {
    /// Image reference → local bundle folder with the same contents.
    local: BTreeMap<String, PathBuf>,
    /// Image reference → its bundle as a catalog already renders it (re-rendering a
    /// catalog's own bundles needs neither a registry nor their folders).
    known: BTreeMap<String, Bundle>,
    /// Pull over plain HTTP (local registries), like opm's `--use-http`.
    plain_http: bool,
}

impl BundleSources {
    /// Sources that pull every image (over plain HTTP when `plain_http`).
    pub fn new(plain_http: bool) -> Self {
        BundleSources {
            local: BTreeMap::new(),
            known: BTreeMap::new(),
            plain_http,
        }
    }

    /// Adds a `REF=DIR` mapping: the image REF is rendered from the bundle folder DIR.
    /// Relative folders are taken relative to `base` (the template's folder, so that a
    /// template and its mappings move together).
    pub fn add_mapping(&mut self, spec: &str, base: &Path) -> Result<(), String> {
        let (reference, dir) = parse_mapping(spec)?;
        let dir = base.join(dir);
        if !is_bundle_dir(&dir) {
            return Err(format!(
                "--bundle-source {spec:?}: {} is not a bundle folder (no manifests/ and metadata/)",
                dir.display()
            ));
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
    pub fn render_image(&self, reference: &str) -> Result<Bundle, String> {
        if let Some(bundle) = self.known.get(reference) {
            return Ok(bundle.clone());
        }
        if let Some(dir) = self.local.get(reference) {
            return render_bundle_dir(dir, reference)
                .map_err(|e| format!("render reference {reference:?}: {}: {e}", dir.display()));
        }
        let pulled = self
            .pull(reference)
            .map_err(|e| format!("render reference {reference:?}: {e}"))?;
        render_bundle_dir(pulled.root(), reference)
            .map_err(|e| format!("render reference {reference:?}: {e}"))
    }

    /// Pulls a bundle image into a temporary folder (removed when the value is dropped).
    fn pull(&self, reference: &str) -> Result<crate::image::PulledImage, String> {
        let image =
            crate::image::pull_to_temp(reference, self.plain_http).map_err(|e| e.to_string())?;
        if image.kind != Some(crate::image::ImageKind::Bundle) {
            return Err(format!(
                "image type could not be determined: not a bundle image (no {BUNDLE_PACKAGE_LABEL} label)"
            ));
        }
        Ok(image)
    }
}
