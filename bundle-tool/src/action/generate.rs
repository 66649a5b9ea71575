//! `bundle-tool generate`: the config file with the flags laid over it, the manifests and
//! samples read, the icon encoded, the bundle folded and written (or compared, `--check`).

use std::path::{Path, PathBuf};

use super::registry_args::TransportArgs;
use super::{Action, ActionError, Outcome};
use crate::bundle::inputs::{created_at, csv_file, source_date_epoch_is_set};
use crate::bundle::{self, BundleInputs, GenerateConfig, GeneratedBundle};

/// `bundle-tool generate`.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// The config file (package, version, channels, CSV metadata).
    #[arg(long, default_value = "bundle-tool.yaml")]
    pub config: PathBuf,
    /// The manifests: a file, a folder, or `-` for standard input (overrides the config).
    #[arg(long)]
    pub manifests: Option<PathBuf>,
    /// Where to write the bundle (overrides the config; default `bundle`).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The operator version (overrides the config).
    #[arg(long)]
    pub version: Option<String>,
    /// Channels, comma-separated (override the config).
    #[arg(long, value_delimiter = ',')]
    pub channels: Option<Vec<String>>,
    /// The default channel (overrides the config).
    #[arg(long)]
    pub default_channel: Option<String>,
    /// `spec.replaces` (overrides the config).
    #[arg(long)]
    pub replaces: Option<String>,
    /// The `olm.skipRange` annotation (overrides the config).
    #[arg(long)]
    pub skip_range: Option<String>,
    /// Check that the bundle on disk is what would be generated, write nothing; exit 1 if not.
    #[arg(long)]
    pub check: bool,
    /// Pin every image the CSV names to its digest (`name@sha256:…`), resolved through the
    /// registries with the auth files' credentials; relatedImages lists each. Nothing is
    /// written when an image cannot be resolved.
    #[arg(long)]
    pub use_image_digests: bool,
    /// How to reach the registries (with --use-image-digests).
    #[command(flatten)]
    pub transport: TransportArgs,
}

impl GenerateArgs {
    /// The config file with the flags that override it.
    fn config(&self) -> Result<GenerateConfig, ActionError> {
        let mut config = GenerateConfig::load(&self.config)?;
        if let Some(version) = &self.version {
            config.version = version.clone();
        }
        if let Some(channels) = &self.channels {
            config.channels = channels.clone();
        }
        if self.default_channel.is_some() {
            config.default_channel = self.default_channel.clone();
        }
        if self.replaces.is_some() {
            config.replaces = self.replaces.clone();
        }
        if self.skip_range.is_some() {
            config.skip_range = self.skip_range.clone();
        }
        Ok(config)
    }
}

impl Action for GenerateArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let config = self.config()?;
        let inputs = BundleInputs::read(&config, self.manifests.as_deref())?;
        let output = self
            .output
            .clone()
            .or(config.output.clone())
            .unwrap_or_else(|| PathBuf::from("bundle"));
        let mut generated = inputs.generate(&created_at()?)?;
        if !source_date_epoch_is_set()
            && let Some(kept) = inputs.keeping_created_at(&generated, &output)?
        {
            generated = kept;
        }
        let mut notes: Vec<String> = generated
            .warnings
            .iter()
            .map(|w| format!("warning: {}", w.0))
            .collect();
        if self.use_image_digests {
            let transport = self.transport.transport();
            let pinned = generated.pin_images(|images| {
                crate::image::resolve_digests(images, &transport).map_err(ActionError::from)
            })?;
            notes.push(format!("pinned {pinned} image(s) to digests"));
        }
        if self.check {
            let differences = bundle::write::compare(&generated, &output)?;
            if differences.is_empty() {
                let mut outcome = Outcome::line(format!("{} is up to date", output.display()));
                outcome.notes = notes;
                return Ok(outcome);
            }
            notes.extend(differences.iter().map(|d| format!("out of date: {d}")));
            notes.push("run `bundle-tool generate` and commit the result".into());
            return Ok(Outcome::failure(notes));
        }
        if is_on_disk(&generated, &output)? {
            let mut outcome = Outcome::line(format!(
                "{} is up to date; nothing written",
                output.display()
            ));
            outcome.notes = notes;
            return Ok(outcome);
        }
        let dockerfile = bundle::write::write_bundle(&generated, &output)?;
        let mut outcome = Outcome::line(format!(
            "wrote {} ({} files) and {}",
            output.display(),
            generated.files.len(),
            dockerfile.display()
        ));
        outcome.notes = notes;
        Ok(outcome)
    }
}

/// Whether `output` already holds exactly `generated`, `createdAt` included (`compare`
/// ignores it, so the CSV is compared byte for byte here).
fn is_on_disk(generated: &GeneratedBundle, output: &Path) -> Result<bool, ActionError> {
    if !bundle::write::compare(generated, output)?.is_empty() {
        return Ok(false);
    }
    Ok(match csv_file(generated) {
        Some(file) => {
            std::fs::read_to_string(output.join(file)).ok().as_ref() == generated.files.get(file)
        }
        None => true,
    })
}
