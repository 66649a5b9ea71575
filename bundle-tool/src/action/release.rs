//! `bundle-tool release`: the options, made into the release's [`Settings`], resolved into a
//! [`Plan`] and run by [`crate::release`]; the summary printed as text or JSON.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, Output, RegistryArgs, Status};
use crate::release::{self, Plan, Settings};

/// Summary formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReleaseFormat {
    /// A few lines for people.
    Text,
    /// One JSON object, for CI.
    Json,
}

/// `bundle-tool release`.
#[derive(Debug, clap::Args)]
pub struct ReleaseArgs {
    /// The config file (its `release:` section says where images and the catalog go).
    #[arg(long, default_value = "bundle-tool.yaml")]
    pub config: PathBuf,
    /// The version to release (overrides the config's `version`).
    #[arg(long)]
    pub version: Option<String>,
    /// The catalog channels the release becomes the head of, comma-separated (overrides
    /// `release.channels`).
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<String>>,
    /// The bundle image repository, without a tag; `v<version>` is added (overrides
    /// `release.bundleImage`).
    #[arg(long)]
    pub bundle_image: Option<String>,
    /// The catalog image reference (overrides `release.catalogImage`).
    #[arg(long)]
    pub catalog_image: Option<String>,
    /// The catalog folder (overrides `release.catalog`; default `catalog` beside the config).
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// `skipRange` of the new catalog entries (overrides `release.skipRange`).
    #[arg(long)]
    pub skip_range: Option<String>,
    /// Fail when the audit assesses a lower level: 1-5 or a level name (overrides
    /// `release.minLevel`).
    #[arg(long)]
    pub min_level: Option<String>,
    /// Fail when the security review finds a risk above this one: low, medium, high or
    /// critical (overrides `release.maxRisk`).
    #[arg(long)]
    pub max_risk: Option<String>,
    /// Also run the `olm-v1` validator in the validate step: errors (what OLM v1 refuses)
    /// fail the release (or `release.olmV1: true`).
    #[arg(long = "olm-v1")]
    pub olm_v1: bool,
    /// Pin every image the CSV names to its digest (`name@sha256:…`), resolved through the
    /// registries with the auth files' credentials; relatedImages lists each
    /// (`release.pinDigests`).
    #[arg(long)]
    pub pin_digests: bool,
    /// Push the images to the registries their references name (or `release.push: true`);
    /// without it they go to the OCI layout and nothing is pushed.
    #[arg(long)]
    pub push: bool,
    /// The OCI image layout folder when not pushing (overrides `release.ociLayout`).
    #[arg(long)]
    pub oci_layout: Option<PathBuf>,
    /// Print the plan: what would be generated, published and edited; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The platforms, `os/arch[/variant]`, comma-separated (overrides `release.platforms`):
    /// several make the bundle and catalog images OCI image indexes and label the CSV.
    #[arg(long, value_name = "PLATFORMS")]
    pub platform: Option<String>,
    /// The catalog server binary of a platform, `PLATFORM=PATH` (repeat the flag; overrides
    /// `release.serverBinaries`).
    #[arg(long, value_name = "PLATFORM=PATH")]
    pub server_binary: Vec<String>,
    /// Summary format.
    #[arg(short, long, value_enum, default_value = "text")]
    pub output: ReleaseFormat,
    /// Transport and credentials.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl ReleaseArgs {
    /// The flags as the release takes them.
    fn settings(&self) -> Settings {
        Settings {
            config: self.config.clone(),
            version: self.version.clone(),
            channels: self.channels.clone(),
            bundle_image: self.bundle_image.clone(),
            catalog_image: self.catalog_image.clone(),
            catalog: self.catalog.clone(),
            skip_range: self.skip_range.clone(),
            min_level: self.min_level.clone(),
            max_risk: self.max_risk.clone(),
            olm_v1: self.olm_v1,
            pin_digests: self.pin_digests,
            push: self.push,
            oci_layout: self.oci_layout.clone(),
            registry: self.registry.settings(),
            dry_run: self.dry_run,
            platforms: self.platform.clone().map(|list| vec![list]),
            server_binaries: self.server_binary.clone(),
        }
    }
}

impl Action for ReleaseArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let plan = Plan::resolve(&self.settings())?;
        let render = |summary: &release::Summary| match self.output {
            ReleaseFormat::Text => summary.to_text(),
            ReleaseFormat::Json => summary.to_json(),
        };
        match release::run(&plan) {
            Ok(summary) => {
                let mut outcome = Outcome::text(render(&summary));
                outcome.notes = summary.notes;
                Ok(outcome)
            }
            Err(failed) => {
                let mut notes = failed.summary.notes.clone();
                notes.push(format!("error: {}", failed.error));
                Ok(Outcome {
                    output: Output::Text(render(&failed.summary)),
                    notes,
                    status: Status::Failure,
                    loaded: None,
                })
            }
        }
    }
}
