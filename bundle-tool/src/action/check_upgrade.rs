//! `bundle-tool check-upgrade OLD NEW` and `bundle-tool catalog check-upgrades CATALOG`:
//! whether installed users can upgrade, before the release is published. Exit 1 on an
//! error-level finding.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, Output, Status, pulled};
use crate::catalog::bundle_source::BundleSources;
use crate::location::Location;
use crate::upgrade::{self, BundleContents, Checks, Format};

/// Output formats of `check-upgrade` and `catalog check-upgrades`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UpgradeFormat {
    /// Findings one block each, then a verdict line.
    Text,
    /// `{old, new, passed, counts, findings}`.
    Json,
    /// A Markdown table.
    Md,
}

impl From<UpgradeFormat> for Format {
    fn from(format: UpgradeFormat) -> Format {
        match format {
            UpgradeFormat::Text => Format::Text,
            UpgradeFormat::Json => Format::Json,
            UpgradeFormat::Md => Format::Md,
        }
    }
}

/// `bundle-tool check-upgrade`.
#[derive(Debug, clap::Args)]
pub struct CheckUpgradeArgs {
    /// The bundle installed users run: a bundle folder or a bundle image reference.
    pub old: PathBuf,
    /// The bundle to release: a bundle folder or a bundle image reference.
    pub new: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: UpgradeFormat,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
    /// Read the stored versions of OLD's CRDs from this cluster (`status.storedVersions`)
    /// instead of assuming them from OLD's files, and validate its existing custom resources
    /// against NEW's schemas, as OLM v0 does before updating a CRD.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

impl Action for CheckUpgradeArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut old = self.read(&self.old)?;
        let new = self.read(&self.new)?;
        let mut notes = Vec::new();
        let mut live_findings = Vec::new();
        if let Some(kubeconfig) = &self.kubeconfig {
            let live = upgrade::read_cluster(kubeconfig, &old, &new)?;
            for (name, crd) in &mut old.crds {
                match live.stored_versions.get(name) {
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
            notes.extend(live.notes);
            live_findings = live.findings;
        }
        let mut report = upgrade::check_pair(&old, &new, Checks { graph: true });
        if !live_findings.is_empty() {
            let mut findings = std::mem::take(&mut report.findings);
            findings.extend(live_findings);
            report = upgrade::Report::new(report.old, report.new, findings);
        }
        Ok(Outcome {
            output: Output::Text(upgrade::render_report(&report, self.output.into())),
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
                let image = pulled(&reference, &self.transport.transport())?;
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
    /// The catalog folder. Bundles that carry their objects (`olm.bundle.object`) are read
    /// from it; the others from `--bundle-source` folders or, with `--pull`, their images.
    pub dir: PathBuf,
    /// Only this package's edges.
    #[arg(short, long)]
    pub package: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: UpgradeFormat,
    /// Read the bundle image REF from the local bundle folder DIR (repeatable), for bundles
    /// the catalog names by image only.
    #[arg(long = "bundle-source", value_name = "REF=DIR")]
    pub bundle_sources: Vec<String>,
    /// Pull the bundle images of edges whose bundles have no objects in the catalog and no
    /// `--bundle-source`.
    #[arg(long)]
    pub pull: bool,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for CatalogCheckUpgradesArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut images = upgrade::ImageBundles {
            sources: BundleSources::new(self.transport.transport()),
            pull: self.pull,
        };
        for spec in &self.bundle_sources {
            images
                .sources
                .add_mapping(spec, std::path::Path::new(""))
                .map_err(upgrade::UpgradeError::from)?;
        }
        let report = upgrade::check_catalog(&self.dir, self.package.as_deref(), &images)?;
        Ok(Outcome {
            output: Output::Text(upgrade::render_catalog(&report, self.output.into())),
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
