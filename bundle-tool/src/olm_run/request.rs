//! What `run` is asked to do, and which OLM it goes through.

use std::path::PathBuf;
use std::time::Duration;

use super::install_mode::InstallMode;
use super::objects::Approval;
use super::report::Progress;
use crate::image::RegistryAccess;

/// What `run` is asked to do.
pub struct RunRequest {
    /// The bundle folder.
    pub bundle: PathBuf,
    /// Where the catalog image goes: `<registry>/<package>-run-catalog:<version>`.
    pub registry: String,
    /// Instead of pushing: the catalog in ConfigMaps, served by a pod running this image
    /// (see [`configmap`](super::configmap)).
    pub server_image: Option<String>,
    /// How to push there (and pull back from there on `--upgrade`).
    pub access: RegistryAccess,
    /// How the registry is reached (for the pull back).
    pub transport: crate::image::Transport,
    /// The namespace (else the kubeconfig's).
    pub namespace: Option<String>,
    /// The install mode asked for.
    pub install_mode: Option<InstallMode>,
    /// InstallPlan approval.
    pub approval: Approval,
    /// The bound on the whole command.
    pub timeout: Duration,
    /// The kubeconfig (else the usual inference).
    pub kubeconfig: Option<PathBuf>,
    /// Move the installed package to this bundle.
    pub upgrade: bool,
    /// Which OLM to install through.
    pub olm: OlmChoice,
    /// Where each step and each change of what a wait shows go as they happen.
    pub progress: Option<Progress>,
}

/// `--olm`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OlmChoice {
    /// OLM v0 when its CRDs are served, else OLM v1 when operator-controller's are.
    #[default]
    Auto,
    /// OLM v0.
    V0,
    /// OLM v1.
    V1,
}

/// The CRD that shows OLM v1 (operator-controller) is installed.
pub(super) const OLM_V1_CRD: &str = "clusterextensions.olm.operatorframework.io";
