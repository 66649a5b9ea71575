//! `bundle-tool catalog add` and `catalog deprecate`: the options, made into the edit
//! `catalog/add.rs` and `catalog/deprecate.rs` carry out; the line they print.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::catalog::add::{self, Addition, Replaces};
use crate::catalog::deprecate::{self, Target};

/// `bundle-tool catalog add`.
#[derive(clap::Args, Debug)]
pub struct AddArgs {
    /// The catalog folder (`<catalog>/<package>/catalog.json|yaml` per package).
    pub catalog: PathBuf,
    /// The bundle: a bundle folder (with `manifests/` and `metadata/`) or a bundle image
    /// reference.
    pub bundle: String,
    /// The channels the bundle becomes the head of, comma-separated (created if missing).
    #[arg(long, value_delimiter = ',', required = true)]
    pub channels: Vec<String>,
    /// What the new entry replaces: `auto` (each channel's current head), `none`, or a
    /// bundle name.
    #[arg(long, default_value = "auto")]
    pub replaces: String,
    /// An `olm.skipRange` for the new entries (e.g. `<0.3.0`).
    #[arg(long)]
    pub skip_range: Option<String>,
    /// For a bundle folder: the pull spec to record as the bundle's `image` (without it the
    /// bundle is carried inline, image "", as `opm render` does for folders).
    #[arg(long)]
    pub image: Option<String>,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for AddArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let addition = Addition {
            catalog: self.catalog.clone(),
            bundle: self.bundle.clone(),
            channels: self.channels.clone(),
            replaces: Replaces::parse(&self.replaces),
            skip_range: self.skip_range.clone(),
            image: self.image.clone(),
            transport: self.transport.transport(),
        };
        Ok(Outcome::text(add::run(&addition)?))
    }
}

/// `bundle-tool catalog deprecate`.
#[derive(clap::Args, Debug)]
#[command(group = clap::ArgGroup::new("target").required(true).multiple(false))]
pub struct DeprecateArgs {
    /// The catalog folder (`<catalog>/<package>/catalog.json|yaml` per package).
    pub catalog: PathBuf,
    /// The package.
    #[arg(long)]
    pub package: String,
    /// Deprecate this bundle.
    #[arg(long, group = "target")]
    pub bundle: Option<String>,
    /// Deprecate this channel.
    #[arg(long, group = "target")]
    pub channel: Option<String>,
    /// Deprecate the whole package.
    #[arg(long, group = "target")]
    pub package_level: bool,
    /// What users see, e.g. "0.1.x is end of life; use the stable channel".
    #[arg(long)]
    pub message: String,
}

impl Action for DeprecateArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let target = match (&self.bundle, &self.channel) {
            (Some(bundle), _) => Target::Bundle(bundle.clone()),
            (None, Some(channel)) => Target::Channel(channel.clone()),
            (None, None) => Target::Package,
        };
        let line = deprecate::run(&self.catalog, &self.package, &target, &self.message)?;
        Ok(Outcome::text(line))
    }
}
