//! `bundle-tool release`: one version published end to end — generate, validate, audit,
//! build the bundle image, publish it, add it to the catalog, validate and build the catalog
//! image, publish it — so that a failure at any step leaves the catalog and the image layout
//! as they were.
//!
//! Every step is the function an existing verb calls, in the area that owns it (generate,
//! validate, audit, build, push, `catalog add`, `catalog template`); this module only orders
//! them and stages their results, and imports nothing from `action/` (the command builds the
//! plain [`Settings`] and prints the [`Summary`]): [`plan`] is what the settings and the
//! config resolve to, [`bundle_diff`] tells an identical re-release from a changed one,
//! [`catalog_edit`] stages the catalog's new files, [`steps`] runs the pipeline, one function
//! a step, `layout` writes the OCI layout (put back when the catalog cannot be written),
//! [`publish`] pushes to registries, `commit` swaps the staged catalog in (both publish
//! paths end with it), and [`summary`] is the report (text or JSON).

pub mod bundle_diff;
pub mod catalog_edit;
mod commit;
mod installer_rbac;
mod layout;
pub mod plan;
pub mod publish;
pub mod steps;
pub mod summary;

use std::path::PathBuf;

use crate::bundle::config::ConfigError;
use crate::bundle::generate::GenerateError;
use crate::bundle::inputs::InputsError;
use crate::bundle::read::BundleReadError;
use crate::upgrade::UpgradeError;

pub use plan::{Plan, Settings};
pub use steps::run;
pub use summary::{Step, StepStatus, Summary};

/// What a release publishes, once every step before has passed: both images, and the
/// catalog edit (none when the release is already in the catalog).
#[derive(Clone, Copy)]
pub struct Outputs<'a> {
    /// The bundle image.
    pub bundle: &'a crate::image::BuiltImage,
    /// The catalog image.
    pub catalog: &'a crate::image::BuiltImage,
    /// The catalog's new files.
    pub staged: Option<&'a catalog_edit::StagedCatalog>,
}

/// Why a step's own work failed: the error of the area that did it, printed as the verb
/// that does the same work prints it.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The manifests, samples or icon could not be read.
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// The manifests cannot make a bundle.
    #[error(transparent)]
    Generate(#[from] GenerateError),
    /// The generated bundle's labels could not be read.
    #[error(transparent)]
    Bundle(#[from] BundleReadError),
    /// A bundle or the catalog could not be read for the upgrade checks.
    #[error(transparent)]
    Upgrade(#[from] UpgradeError),
    /// Reading or writing files.
    #[error("{}", crate::error_chain::with_causes(.0))]
    Io(#[from] std::io::Error),
    /// The audit's reading of the bundle.
    #[error("{0:#}")]
    Audit(#[from] anyhow::Error),
    /// The CSV could not be pinned to digests.
    #[error(transparent)]
    Pin(#[from] crate::bundle::pin::PinError),
    /// Some images could not be resolved to digests.
    #[error(transparent)]
    Digests(#[from] crate::image::DigestsError),
    /// A worker thread of the step panicked, or the audit failed on a file.
    #[error("{0}")]
    Message(String),
}

/// Why a release stopped. Each names the file, image or version concerned.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The OLM v1 installer's RBAC could not be derived or written (the catalog and images
    /// are published already; re-running the release writes it).
    #[error("{}: the OLM v1 installer RBAC (release.olmV1Installer): {message}", .path.display())]
    InstallerRbac {
        /// The file it goes to.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A setting is missing or unusable.
    #[error("{path}: {message}")]
    Config {
        /// The config file (or the flag's setting).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `bundle-tool.yaml` could not be used.
    #[error("config: {0}")]
    ConfigFile(#[from] ConfigError),
    /// A step's own work failed (generate, audit, build).
    #[error("{step}: {source}")]
    Step {
        /// The step.
        step: Step,
        /// The area's error.
        source: Box<StepError>,
    },
    /// The generated bundle does not pass validation.
    #[error(
        "the generated bundle {name} does not pass validation (suite=operatorframework):\n{report}"
    )]
    Invalid {
        /// The bundle name.
        name: String,
        /// The findings, grouped by file.
        report: String,
    },
    /// The audit assessed a level below the minimum.
    #[error("{name} reaches capability level {level}, below the minimum level {min} ({setting})")]
    BelowLevel {
        /// The bundle name.
        name: String,
        /// The assessed (independent) level.
        level: u8,
        /// The minimum.
        min: u8,
        /// Where the minimum was set.
        setting: String,
    },
    /// The security review found a risk above the maximum.
    #[error(
        "{name}'s security review finds risks above {max} ({setting}):\n  {}",
        findings.join("\n  ")
    )]
    AboveRisk {
        /// The bundle name.
        name: String,
        /// The maximum.
        max: crate::audit::security::Risk,
        /// Where the maximum was set.
        setting: String,
        /// Each finding above it: risk, rule, subject, evidence.
        findings: Vec<String>,
    },
    /// The version is already in the catalog with other content.
    #[error(
        "{name} is already released in {catalog} and this release differs from it; a release is immutable, so release a new version instead:\n  {}",
        differences.join("\n  ")
    )]
    Immutable {
        /// The bundle name.
        name: String,
        /// The package file holding the released bundle.
        catalog: PathBuf,
        /// What differs.
        differences: Vec<String>,
    },
    /// The version is released, but not in every channel asked for.
    #[error(
        "{name} is already released, in {present}, but not in {missing}; a release is immutable, so releasing it again does not change its channels (promote it with a catalog edit)"
    )]
    ChannelsOfARelease {
        /// The bundle name.
        name: String,
        /// The channels that have it.
        present: String,
        /// The channels asked for that do not.
        missing: String,
    },
    /// An upgrade edge into the new bundle would break installed users (`check-upgrade`).
    #[error(
        "upgrading to {name} is not safe for installed users (the checks of `bundle-tool check-upgrade`); nothing was published:\n{report}"
    )]
    UpgradeUnsafe {
        /// The bundle name.
        name: String,
        /// The unsafe edges' reports, as `check-upgrade` prints them.
        report: String,
    },
    /// The catalog edit cannot be made.
    #[error("{path}: {message}")]
    Catalog {
        /// The catalog file or folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Writing the OCI layout or the catalog failed; everything was put back.
    #[error("{path}: {message}")]
    Write {
        /// What was being written.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A push failed before the catalog was touched.
    #[error("pushing {reference}: {message}")]
    Push {
        /// The image reference.
        reference: String,
        /// What failed.
        message: String,
    },
    /// The catalog was updated, then pushing the catalog image failed.
    #[error(
        "the catalog was updated ({files}) and the bundle image pushed, but pushing the catalog image {reference} failed: {message}\nre-run (release is idempotent, it only pushes again): {command}"
    )]
    CatalogPushAfterCommit {
        /// The catalog files written.
        files: String,
        /// The catalog image reference.
        reference: String,
        /// What failed.
        message: String,
        /// The command that finishes the release.
        command: String,
    },
}

impl ReleaseError {
    /// A step's own error.
    pub fn step(step: Step, error: impl Into<StepError>) -> Self {
        ReleaseError::Step {
            step,
            source: Box::new(error.into()),
        }
    }
}
