//! Why a command could not run. Each area's own error is kept whole, and printed as the
//! tool always printed it: the message, then each cause after `: `.

use crate::bundle::config::ConfigError;
use crate::bundle::generate::GenerateError;
use crate::bundle::inputs::InputsError;
use crate::bundle::read::BundleReadError;
use crate::catalog::declcfg::LoadError;
use crate::catalog::graph::GraphRunError;
use crate::catalog::package_file::EditError;
use crate::catalog::template::TemplateError;
use crate::image::{PlatformError, PullError};
use crate::location::LocationError;
use crate::manifest::ManifestError;
use crate::upgrade::UpgradeError;

/// A command failed (exit code 1).
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// Neither an existing path nor an image reference.
    #[error(transparent)]
    Location(#[from] LocationError),
    /// Manifests could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `bundle-tool.yaml` could not be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A bundle folder's labels could not be read.
    #[error(transparent)]
    Bundle(#[from] BundleReadError),
    /// The manifests, samples or icon of a bundle could not be read.
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// `init` could not write a config.
    #[error(transparent)]
    Init(#[from] crate::bundle::init::InitError),
    /// The manifests cannot make a bundle.
    #[error(transparent)]
    Generate(#[from] GenerateError),
    /// A catalog file could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// An image could not be pulled into a folder.
    #[error(transparent)]
    Pull(#[from] PullError),
    /// A platform, or a binary given for one, cannot be used (boxed to keep every
    /// command's `Result` small).
    #[error(transparent)]
    Platform(Box<PlatformError>),
    /// A bundle or catalog could not be read for the upgrade checks.
    #[error(transparent)]
    Upgrade(#[from] UpgradeError),
    /// Reading or writing files or standard streams.
    #[error("{}", crate::error_chain::with_causes(.0))]
    Io(#[from] std::io::Error),
    /// The areas that still report with anyhow (registry exchanges, unpacking, audit).
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
    /// A release stopped before it started (its settings).
    #[error(transparent)]
    Release(#[from] crate::release::ReleaseError),
    /// A catalog edit (`catalog add`, `catalog deprecate`); boxed, as are the next two, to
    /// keep every command's `Result` small.
    #[error(transparent)]
    CatalogEdit(Box<EditError>),
    /// `catalog template`.
    #[error(transparent)]
    Template(Box<TemplateError>),
    /// `catalog graph`.
    #[error(transparent)]
    Graph(Box<GraphRunError>),
    /// A bundle could not be rendered as OLM v1 renders it.
    #[error(transparent)]
    OlmV1(#[from] crate::olm_v1::OlmV1Error),
    /// The CSV could not be pinned to digests.
    #[error(transparent)]
    Pin(#[from] crate::bundle::pin::PinError),
    /// Some images could not be resolved to digests.
    #[error(transparent)]
    Digests(#[from] crate::image::DigestsError),
    /// A message already worded for the user by an area that reports errors as text.
    #[error("{0}")]
    Message(String),
}

impl From<EditError> for ActionError {
    fn from(error: EditError) -> Self {
        ActionError::CatalogEdit(Box::new(error))
    }
}

impl From<TemplateError> for ActionError {
    fn from(error: TemplateError) -> Self {
        ActionError::Template(Box::new(error))
    }
}

impl From<GraphRunError> for ActionError {
    fn from(error: GraphRunError) -> Self {
        ActionError::Graph(Box::new(error))
    }
}

impl ActionError {
    /// A message already worded for the user.
    pub fn message(text: impl Into<String>) -> ActionError {
        ActionError::Message(text.into())
    }

    /// Whether this is standard output closing early (`bundle-tool objects . | head`): the
    /// reader's choice, not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ActionError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

impl From<PlatformError> for ActionError {
    fn from(error: PlatformError) -> Self {
        ActionError::Platform(Box::new(error))
    }
}
