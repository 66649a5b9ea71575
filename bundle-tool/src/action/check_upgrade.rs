//! `bundle-tool check-upgrade OLD NEW` and `bundle-tool catalog check-upgrades CATALOG`:
//! whether installed users can upgrade, before the release is published. Exit 1 on an
//! error-level finding.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, Output, Status, pulled};
use crate::location::Location;
use crate::upgrade::{self, BundleContents, Checks, Format};

/// `bundle-tool check-upgrade`.
#[derive(Debug, clap::Args)]
pub struct CheckUpgradeArgs {
    /// The bundle installed users run: a bundle folder or a bundle image reference.
    pub old: PathBuf,
    /// The bundle to release: a bundle folder or a bundle image reference.
    pub new: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: Format,
    /// Pull image references over plain HTTP.
    #[arg(long)]
    pub plain_http: bool,
    /// Read the stored versions of OLD's CRDs from this cluster (`status.storedVersions`)
    /// instead of assuming them from OLD's files.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

impl Action for CheckUpgradeArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut old = self.read(&self.old)?;
        let new = self.read(&self.new)?;
        let mut notes = Vec::new();
        if let Some(kubeconfig) = &self.kubeconfig {
            let names: Vec<String> = old.crds.keys().cloned().collect();
            let live = upgrade::stored_versions(kubeconfig, &names)?;
            for (name, crd) in &mut old.crds {
                match live.get(name) {
                    Some(stored) => {
                        notes.push(format!(
                            "{name}: stored versions from the cluster: {}",
                            stored.join(", ")
                        ));
                        crd.stored_versions = stored.clone();
                    }
                    None => notes.push(format!(
                        "{name}: not on the cluster; stored versions from {}",
                        old.source
                    )),
                }
            }
        }
        let report = upgrade::check_pair(&old, &new, Checks { graph: true });
        Ok(Outcome {
            output: Output::Text(upgrade::render_report(&report, self.output)),
            notes,
            status: if report.has_errors() {
                Status::Failure
            } else {
                Status::Success
            },
            loaded: None,
        })
    }
}

impl CheckUpgradeArgs {
    /// A bundle folder as it is, an image pulled into a temporary folder first.
    fn read(&self, argument: &std::path::Path) -> Result<BundleContents, ActionError> {
        match Location::of_path(argument)? {
            Location::Local(dir) => Ok(BundleContents::from_dir(&dir)?),
            Location::Image(reference) => {
                let image = pulled(&reference, self.plain_http)?;
                let mut contents = BundleContents::from_dir(image.root())?;
                contents.source = reference;
                Ok(contents)
            }
        }
    }
}

/// `bundle-tool catalog check-upgrades`.
#[derive(Debug, clap::Args)]
pub struct CatalogCheckUpgradesArgs {
    /// The catalog folder; its bundles must carry their objects (`olm.bundle.object`).
    pub dir: PathBuf,
    /// Only this package's edges.
    #[arg(short, long)]
    pub package: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: Format,
}

impl Action for CatalogCheckUpgradesArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let report = upgrade::check_catalog(&self.dir, self.package.as_deref())?;
        Ok(Outcome {
            output: Output::Text(upgrade::render_catalog(&report, self.output)),
            notes: report.not_checked.clone(),
            status: if report.has_errors() {
                Status::Failure
            } else {
                Status::Success
            },
            loaded: None,
        })
    }
}
