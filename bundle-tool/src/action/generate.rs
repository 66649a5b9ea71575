//! `bundle-tool generate`: the config file with the flags laid over it, the manifests and
//! samples read, the icon encoded, the bundle folded and written (or compared, `--check`).

use std::path::{Path, PathBuf};

use super::{Action, ActionError, Outcome};
use crate::bundle::{self, GenerateConfig};
use crate::manifest::{self, KubeObject};

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
        let manifests_path = self
            .manifests
            .clone()
            .or_else(|| config.manifests.clone())
            .ok_or_else(|| {
                ActionError::message("no manifests: give --manifests or `manifests:` in the config")
            })?;
        let objects = read_objects(&manifests_path)?;
        let samples = match &config.samples {
            Some(path) => read_objects(path)?,
            None => Vec::new(),
        };
        let icon = config.csv.icon.as_deref().map(icon).transpose()?;
        let generated = bundle::generate(&config, &objects, &samples, icon, &created_at()?)?;
        let mut notes: Vec<String> = generated
            .warnings
            .iter()
            .map(|w| format!("warning: {}", w.0))
            .collect();
        let output = self
            .output
            .clone()
            .or(config.output.clone())
            .unwrap_or_else(|| PathBuf::from("bundle"));
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

/// The Kubernetes objects in a file or folder (`-`: standard input).
fn read_objects(path: &Path) -> Result<Vec<KubeObject>, ActionError> {
    let documents = if path.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin())?;
        manifest::read_stream(path, &text)?
    } else {
        manifest::read_path(path)?
    };
    documents
        .into_iter()
        .map(|d| {
            let location = d.location.clone();
            KubeObject::from_document(d).map_err(|why| {
                ActionError::message(format!("{location}: not a Kubernetes object: {why}"))
            })
        })
        .collect()
}

/// The icon file as base64 and its media type (by extension, the four OLM shows).
fn icon(path: &Path) -> Result<(String, String), ActionError> {
    let data = std::fs::read(path)
        .map_err(|e| ActionError::message(format!("reading the icon {}: {e}", path.display())))?;
    let media_type = match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        _ => {
            return Err(ActionError::message(format!(
                "{}: the icon must be .svg, .png, .jpg or .gif",
                path.display()
            )));
        }
    };
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data);
    Ok((encoded, media_type.to_string()))
}

/// `createdAt`: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
fn created_at() -> Result<String, ActionError> {
    let seconds = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => epoch.trim().parse().map_err(|e| {
            ActionError::message(format!("SOURCE_DATE_EPOCH={epoch:?} is not a number: {e}"))
        })?,
        Err(_) => jiff::Timestamp::now().as_second(),
    };
    let timestamp =
        jiff::Timestamp::from_second(seconds).map_err(|e| ActionError::message(e.to_string()))?;
    Ok(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}
