//! `bundle-tool generate`: the config file with the flags laid over it, the manifests and
//! samples read, the icon encoded, the bundle folded and written (or compared, `--check`).

use std::path::{Path, PathBuf};

use super::{Action, ActionError, Outcome};
use crate::bundle::{self, GenerateConfig, GeneratedBundle};
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

/// What a bundle is generated from, read once: the config, the manifests, the samples and
/// the icon. `release` generates from it too, so both verbs make the same bundle.
pub struct BundleInputs {
    config: GenerateConfig,
    objects: Vec<KubeObject>,
    samples: Vec<KubeObject>,
    icon: Option<(String, String)>,
}

impl BundleInputs {
    /// Reads the manifests (`manifests` overrides the config's), samples and icon.
    pub fn read(config: &GenerateConfig, manifests: Option<&Path>) -> Result<Self, ActionError> {
        let manifests_path = manifests
            .map(Path::to_path_buf)
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
        Ok(BundleInputs {
            config: config.clone(),
            objects,
            samples,
            icon,
        })
    }

    /// The config the bundle is generated with.
    pub fn config(&self) -> &GenerateConfig {
        &self.config
    }

    /// The bundle, with `createdAt` set to `created_at`.
    pub fn generate(&self, created_at: &str) -> Result<GeneratedBundle, ActionError> {
        Ok(bundle::generate(
            &self.config,
            &self.objects,
            &self.samples,
            self.icon.clone(),
            created_at,
        )?)
    }

    /// The bundle generated again with the `createdAt` of the CSV already in `output`, when
    /// that CSV is what `generated` holds apart from `createdAt`: a regenerate of unchanged
    /// input then rewrites nothing. `None` when there is no such CSV or it differs otherwise.
    pub fn keeping_created_at(
        &self,
        generated: &GeneratedBundle,
        output: &Path,
    ) -> Result<Option<GeneratedBundle>, ActionError> {
        let Some(csv_path) = csv_file(generated) else {
            return Ok(None);
        };
        let Ok(existing) = std::fs::read_to_string(output.join(csv_path)) else {
            return Ok(None);
        };
        let Some(previous) = created_at_of_csv(&existing) else {
            return Ok(None);
        };
        let again = self.generate(&previous)?;
        let same = csv_file(&again).and_then(|f| again.files.get(f)) == Some(&existing);
        Ok(same.then_some(again))
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

/// The CSV's path inside a generated bundle.
fn csv_file(generated: &GeneratedBundle) -> Option<&str> {
    generated
        .files
        .keys()
        .map(String::as_str)
        .find(|f| f.starts_with("manifests/") && f.ends_with(".clusterserviceversion.yaml"))
}

/// `metadata.annotations.createdAt` of a CSV (YAML or JSON text).
pub fn created_at_of_csv(text: &str) -> Option<String> {
    let documents = manifest::read_stream(Path::new("csv"), text).ok()?;
    let value = &documents.first()?.value;
    value
        .pointer("/metadata/annotations/createdAt")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
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

/// Whether `SOURCE_DATE_EPOCH` pins `createdAt` (it wins over a kept value).
pub fn source_date_epoch_is_set() -> bool {
    std::env::var_os("SOURCE_DATE_EPOCH").is_some()
}

/// `createdAt`: `SOURCE_DATE_EPOCH` when set (reproducible builds), else now.
pub fn created_at() -> Result<String, ActionError> {
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
