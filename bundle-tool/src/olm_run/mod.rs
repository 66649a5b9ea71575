//! `bundle-tool run`: a bundle folder installed on a cluster through OLM v0 (or OLM v1, see
//! [`olm_v1`]) in one command, upgraded (`--upgrade`) and removed (`run cleanup`), and, when
//! a step does not progress, the object and the reason read from the cluster (docs/run.md).
//!
//! The order is chosen for speed: the catalog image (the bundle inline) is pushed, its server
//! pod and Service are created and waited for **Ready before** the CatalogSource points OLM
//! at them by `spec.address`, so catalog-operator's first dial succeeds instead of backing off
//! while a registry pod it made itself starts (docs/benchmarks.md). Then the OperatorGroup
//! (only when the namespace has none), the Subscription (manual approval: `run` approves the
//! plan for its bundle and nothing else), and the CSV until `Succeeded`.
//!
//! - [`install_mode`]: the mode checked against the CSV and the namespace before anything is
//!   applied;
//! - [`objects`]: what `run` makes, labelled so that `run cleanup` finds exactly it;
//! - [`catalog`]: the one-package catalog, built and pushed as `build --catalog` builds one;
//! - [`configmap`]: with `--server-image`, the same catalog in ConfigMaps instead, mounted
//!   into a server pod running the image named (nothing pushed);
//! - [`diagnosis`]: why a step does not progress, a pure function over the objects read;
//! - [`cluster`]: the kube-rs client and the reads; [`request`]: what `run` is asked;
//!   [`install`] and [`cleanup`]: the verbs; [`steps`]: what they did, as it happens;
//!   [`wait`]: one stage waited for, through either OLM;
//! - [`olm_v1`]: the same install through operator-controller (ClusterCatalog, installer
//!   RBAC from `olm_v1::derive`, ClusterExtension);
//! - [`report`]: what happened, step by step, as text or JSON.

pub mod catalog;
pub mod cleanup;
pub mod cluster;
pub mod configmap;
pub mod diagnosis;
pub mod install;
pub mod install_mode;
pub mod objects;
pub mod olm_v1;
pub mod report;
pub mod request;
pub mod steps;
pub mod wait;

use std::path::PathBuf;
use std::time::Duration;

pub use cleanup::{CleanupRequest, cleanup};
pub use install::run;
pub use install_mode::InstallMode;
pub use objects::Approval;
pub use report::{Progress, Report, Step};
pub use request::{OlmChoice, RunRequest};

/// Why `run` or `run cleanup` stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The argument is not a bundle folder.
    #[error("{}: not a bundle folder (manifests/ with a ClusterServiceVersion and metadata/annotations.yaml)", .0.display())]
    NotABundle(PathBuf),
    /// The bundle could not be rendered.
    #[error("{}: {error}", .dir.display())]
    Render {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        error: crate::catalog::render::RenderError,
    },
    /// The catalog edit (the bundle as the channel's head) failed.
    #[error("the catalog for run: {0}")]
    Catalog(#[source] Box<crate::catalog::package_file::EditError>),
    /// The catalog made does not validate.
    #[error("the catalog for run does not validate: {0}")]
    InvalidCatalog(#[source] Box<crate::catalog::model::CatalogError>),
    /// The previous catalog image could not be pulled back.
    #[error("pulling the installed catalog {image}: {error}")]
    Pull {
        /// The image.
        image: String,
        /// Why.
        #[source]
        error: crate::image::PullError,
    },
    /// The previous catalog could not be read.
    #[error("reading the installed catalog {image}: {error}")]
    Load {
        /// The image.
        image: String,
        /// Why.
        #[source]
        error: crate::catalog::declcfg::LoadError,
    },
    /// `--upgrade` to a bundle the catalog has already.
    #[error("{bundle} is in the installed catalog {image} already: nothing to upgrade to")]
    AlreadyInCatalog {
        /// The bundle.
        bundle: String,
        /// The catalog image.
        image: String,
    },
    /// The catalog image could not be pushed.
    #[error("pushing the catalog image {image}: {error:#}")]
    Push {
        /// Where.
        image: String,
        /// Why.
        error: anyhow::Error,
    },
    /// Local files.
    #[error("{}", crate::error_chain::with_causes(.0))]
    Io(#[source] std::io::Error),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// An API request failed.
    #[error("{what}: {error}")]
    Api {
        /// What was being done.
        what: String,
        /// Why.
        #[source]
        error: kube::Error,
    },
    /// The cluster has no OLM v0 CRDs.
    #[error(
        "OLM is not installed on this cluster: {missing} is not served (install OLM v0, e.g. `operator-sdk olm install`, or its quickstart's crds.yaml and olm.yaml)"
    )]
    NoOlm {
        /// The first missing CustomResourceDefinition.
        missing: String,
    },
    /// The cluster has OLM v1 and not OLM v0.
    #[error(
        "this cluster runs OLM v1 (operator-controller) and not OLM v0 ({missing} is not served): run installs through OLM v0 only; install with a ClusterCatalog and a ClusterExtension (olm/clustercatalog.yaml, olm/clusterextension.yaml, bundle-tool olm-v1 rbac)"
    )]
    OnlyOlmV1 {
        /// The first missing OLM v0 CRD.
        missing: String,
    },
    /// A catalog document too large for a ConfigMap (`--server-image`).
    #[error(
        "{}: the catalog's {document} is {bytes} bytes of JSON, more than one ConfigMap holds ({} bytes; the API server takes at most 1 MiB of data per ConfigMap): serve this catalog from a registry instead (--registry PREFIX); nothing was applied",
        .bundle.display(),
        configmap::PART_LIMIT
    )]
    CatalogTooLarge {
        /// The bundle folder being run.
        bundle: PathBuf,
        /// The document (`schema name`).
        document: String,
        /// Its size.
        bytes: usize,
    },
    /// A ConfigMap of the installed catalog could not be read back (`--upgrade`).
    #[error("reading the installed catalog from ConfigMap {config_map}: {why}")]
    InstalledCatalog {
        /// `namespace/name`.
        config_map: String,
        /// Why.
        why: String,
    },
    /// `--server-image` on OLM v1.
    #[error(
        "--server-image serves the catalog to a CatalogSource, which OLM v1 does not have: catalogd reads catalogs from images only; use --registry PREFIX (nothing was applied)"
    )]
    ServerImageOnOlmV1,
    /// A flag `run` does not support on OLM v1 yet.
    #[error("{0} is not supported on OLM v1 by run yet")]
    NotOnOlmV1(&'static str),
    /// An install mode other than AllNamespaces on OLM v1.
    #[error(
        "install mode {0} on OLM v1 needs a watch namespace in the ClusterExtension's configuration, which run does not set; nothing was applied"
    )]
    InstallModeOnOlmV1(String),
    /// The bundle image could not be built.
    #[error("the bundle image: {0}")]
    BundleImage(String),
    /// An object `run` built could not be sent (a kind it does not know, a shape the API
    /// types refuse).
    #[error("{0}")]
    Object(String),
    /// The bundle cannot be installed as OLM v1 renders it.
    #[error(transparent)]
    OlmV1(#[from] crate::olm_v1::OlmV1Error),
    /// The namespace does not exist.
    #[error("namespace {0} does not exist: create it first (kubectl create namespace {0})")]
    NoNamespace(String),
    /// The install mode cannot be used; nothing was applied.
    #[error("{0}; nothing was applied")]
    InstallMode(#[from] install_mode::InstallModeError),
    /// The namespace has several OperatorGroups (OLM refuses to install into it).
    #[error(
        "namespace {namespace} has {count} OperatorGroups ({names}): OLM installs nothing there until one is left"
    )]
    OperatorGroups {
        /// The namespace.
        namespace: String,
        /// How many.
        count: usize,
        /// Their names.
        names: String,
    },
    /// The package is installed by `run` at another bundle.
    #[error(
        "{package} is installed by run at {installed}; use `run --upgrade` to move it to {wanted}, or `run cleanup {package}` first"
    )]
    OtherBundleInstalled {
        /// The package.
        package: String,
        /// What is installed.
        installed: String,
        /// What was asked for.
        wanted: String,
    },
    /// `--upgrade` with nothing installed by `run`.
    #[error(
        "no Subscription made by run for {package} in {namespace}: install it first with `run` (without --upgrade)"
    )]
    NothingToUpgrade {
        /// The package.
        package: String,
        /// The namespace.
        namespace: String,
    },
    /// `--upgrade` to another package.
    #[error("{bundle} is of package {new}, not {installed}")]
    OtherPackage {
        /// The new bundle.
        bundle: String,
        /// Its package.
        new: String,
        /// The installed package.
        installed: String,
    },
    /// An object deleted by `run cleanup` is still there at the deadline (a finalizer).
    #[error(
        "{object} is still there {seconds} s after its deletion (kubectl get -o yaml shows its finalizers)"
    )]
    NotGone {
        /// `Kind namespace/name`.
        object: String,
        /// Seconds since the command started.
        seconds: u64,
    },
    /// A step did not progress: the object and the cluster's reason.
    #[error("{}", stuck_text(.stage, .elapsed, .stuck.as_ref(), .timed_out))]
    Stuck {
        /// What was waited for.
        stage: diagnosis::Stage,
        /// How long.
        elapsed: Duration,
        /// The reason read from the cluster, when one was found.
        stuck: Option<diagnosis::Stuck>,
        /// Whether the timeout ran out (else a terminal reason stopped the wait).
        timed_out: bool,
    },
}

fn stuck_text(
    stage: &diagnosis::Stage,
    elapsed: &Duration,
    stuck: Option<&diagnosis::Stuck>,
    timed_out: &bool,
) -> String {
    let head = if *timed_out {
        format!(
            "timed out after {:.0} s waiting for {stage}",
            elapsed.as_secs_f64()
        )
    } else {
        format!(
            "gave up after {:.0} s waiting for {stage}",
            elapsed.as_secs_f64()
        )
    };
    match stuck {
        Some(stuck) => format!("{head}: {stuck}"),
        None => format!("{head}: the cluster shows no reason yet"),
    }
}
