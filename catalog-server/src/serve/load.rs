//! Loading a catalog folder into a servable snapshot: the same load and validation as
//! `catalog validate`, then the index, and for `--inline-bundles` each bundle's manifests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::index::{CatalogIndex, IndexBuildError, Inline};
use super::metas::MetaStore;
use catalog_model::manifest::ManifestError;
use catalog_model::{declcfg, model};

/// Why a catalog folder cannot be served: what `catalog validate` would print, or what
/// stopped the index.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file could not be loaded.
    #[error(transparent)]
    Load(#[from] declcfg::LoadError),
    /// The documents could not be kept for the HTTP view.
    #[error("store documents: {0}")]
    StoreDocuments(std::io::Error),
    /// The documents do not make a model.
    #[error(transparent)]
    Model(#[from] model::ModelError),
    /// The model breaks graph or bundle rules.
    #[error("{0}")]
    Invalid(model::ValidationTree),
    /// The index could not be built.
    #[error(transparent)]
    Index(#[from] IndexBuildError<BundleManifestsError>),
}

/// Why a bundle's manifests could not be read for inline serving.
#[derive(Debug, thiserror::Error)]
pub enum BundleManifestsError {
    /// The `manifests/` folder could not be listed.
    #[error("{}: {error}", .path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A manifest file could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A manifest could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The folder holds no manifests.
    #[error("{}: no manifests", .0.display())]
    Empty(PathBuf),
    /// The reference is not an image reference.
    #[error(transparent)]
    Reference(BoxedError),
    /// The image could not be unpacked.
    #[error("unpack {reference}: {error}")]
    Unpack {
        /// The image.
        reference: String,
        /// Why.
        error: BoxedError,
    },
    /// The image could not be pulled.
    #[error("pull {reference}: {error}")]
    Pull {
        /// The image.
        reference: String,
        /// Why.
        error: BoxedError,
    },
    /// The bundle has to be pulled and this server pulls no images.
    #[error(
        "bundle {reference}: its manifests are neither in the catalog (olm.bundle.object properties) nor in a --bundle-source folder, and this server does not pull images (bundle-tool serve does)"
    )]
    NoPuller {
        /// The bundle image.
        reference: String,
    },
}

/// An error of the image code behind [`PullBundle`], kept whole for its text and causes.
pub type BoxedError = Box<dyn std::error::Error + Send + Sync>;

/// A pulled bundle image unpacked in a folder that lives as long as the value.
pub struct PulledBundle {
    /// The unpacked image's root (`manifests/`, `metadata/`).
    pub root: PathBuf,
    /// Whatever keeps `root` on disk (a temporary folder), dropped with the value.
    pub keep: Box<dyn std::any::Any + Send>,
}

/// Pulls bundle images for `--inline-bundles`. The image code (registry client, unpacking)
/// lives above this crate, in bundle-tool; the catalog image's server has none, and a bundle
/// it would need to pull is refused with [`BundleManifestsError::NoPuller`].
pub trait PullBundle: std::fmt::Debug + Send + Sync {
    /// Pulls and unpacks `reference`.
    fn pull(&self, reference: &str) -> Result<PulledBundle, BundleManifestsError>;
}

/// How the catalog is turned into a snapshot.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Serve bundles inline (empty `bundlePath`, CSV and objects embedded) so that OLM needs
    /// no unpack Job.
    pub inline_bundles: bool,
    /// Bundle folders standing in for bundle images (image reference → folder).
    pub bundle_sources: BTreeMap<String, PathBuf>,
    /// Pulls the bundle images neither the catalog nor `bundle_sources` has the manifests of.
    pub bundle_images: Option<Arc<dyn PullBundle>>,
    /// Keep the documents for the HTTP view.
    pub keep_documents: bool,
    /// Bytes of repeated single-bundle answers each snapshot may keep in memory (the rest
    /// are kept in its spill file).
    pub answer_memory: usize,
}

/// A loaded catalog, ready to swap in.
pub struct Snapshot {
    /// The index the RPCs read.
    pub index: CatalogIndex,
    /// The documents, when kept.
    pub metas: Option<MetaStore>,
}

/// Loads and validates `root`; `Err` holds what `catalog validate` would print.
pub fn load_snapshot(root: &Path, options: &LoadOptions) -> Result<Snapshot, SnapshotError> {
    // Stage times go to the log: start-up work is split between the catalog loader and the
    // index, and only the second is serve's own.
    let started = Instant::now();
    let config = declcfg::load_dir(root)?;
    let loaded = started.elapsed();
    let metas = if options.keep_documents {
        Some(MetaStore::write(&config).map_err(SnapshotError::StoreDocuments)?)
    } else {
        None
    };
    let model = model::Model::from_declcfg(config)?;
    if let Some(tree) = model.validate() {
        return Err(SnapshotError::Invalid(tree));
    }
    let validated = started.elapsed();
    let mut inline = |bundle: &model::Bundle| -> Result<Inline, BundleManifestsError> {
        if !options.inline_bundles {
            return Ok(Inline::No);
        }
        if bundle.object_count > 0 {
            return Ok(Inline::FromProperties);
        }
        if let Some(dir) = options.bundle_sources.get(&bundle.image) {
            return bundle_dir_objects(dir).map(Inline::Rendered);
        }
        if bundle.image.is_empty() {
            return Ok(Inline::No);
        }
        match &options.bundle_images {
            Some(puller) => {
                let pulled = puller.pull(&bundle.image)?;
                bundle_dir_objects(&pulled.root).map(Inline::Rendered)
            }
            None => Err(BundleManifestsError::NoPuller {
                reference: bundle.image.clone(),
            }),
        }
    };
    let index = CatalogIndex::build(model, &mut inline, options.answer_memory)?;
    let indexed = started.elapsed();
    // Loading parsed every document into short-lived trees; give those pages back so that a
    // long-running server's footprint is its index, not its start-up peak.
    crate::heap::trim_heap();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    tracing::info!(
        load_ms = ms(loaded),
        model_and_validate_ms = ms(validated - loaded),
        index_ms = ms(indexed - validated),
        trim_ms = ms(started.elapsed() - indexed),
        "catalog loaded"
    );
    Ok(Snapshot { index, metas })
}

/// A bundle folder's manifests as compact JSON, in file-name order (as opm renders them).
pub fn bundle_dir_objects(dir: &Path) -> Result<Vec<String>, BundleManifestsError> {
    let manifests = dir.join("manifests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&manifests)
        .map_err(|error| BundleManifestsError::Folder {
            path: manifests.clone(),
            error,
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let mut objects = Vec::new();
    for file in files {
        let documents = catalog_model::manifest::read_path(&file)?;
        for document in documents {
            if document.value.is_object() {
                objects.push(serde_json::to_string(&document.value)?);
            }
        }
    }
    if objects.is_empty() {
        return Err(BundleManifestsError::Empty(manifests));
    }
    Ok(objects)
}
