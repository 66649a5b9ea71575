//! What a bundle is generated from, read once: the config, the manifests, the samples and
//! the icon, and the `createdAt` it is stamped with. `generate` and `release` both start
//! here, so both verbs make the same bundle from the same files.

use std::path::Path;

use super::{GenerateConfig, GeneratedBundle, generate::GenerateError};
use crate::manifest::{self, KubeObject, ManifestError, NotAnObject, SourceLocation};

/// Why the inputs of a bundle could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// Neither the flag nor the config names the manifests.
    #[error("no manifests: give --manifests or `manifests:` in the config")]
    NoManifests,
    /// The manifests or samples could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// Reading the manifests from standard input failed.
    #[error("{0}")]
    Stdin(#[source] std::io::Error),
    /// A document is not a Kubernetes object.
    #[error("{location}: not a Kubernetes object: {why}")]
    NotAnObject {
        /// Where the document starts.
        location: SourceLocation,
        /// What it lacks.
        why: NotAnObject,
    },
    /// The icon file could not be read.
    #[error("reading the icon {}: {source}", path.display())]
    IconRead {
        /// The icon file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The icon is of a type OLM does not show.
    #[error("{}: the icon must be .svg, .png, .jpg or .gif", path.display())]
    IconType {
        /// The icon file.
        path: std::path::PathBuf,
    },
    /// `SOURCE_DATE_EPOCH` is set but not a number of seconds.
    #[error("SOURCE_DATE_EPOCH={value:?} is not a number: {source}")]
    SourceDateEpoch {
        /// The variable's value.
        value: String,
        /// Why it does not parse.
        source: std::num::ParseIntError,
    },
    /// The time is out of the range a timestamp can hold.
    #[error("{0}")]
    Timestamp(#[source] jiff::Error),
}

/// The inputs of a bundle.
pub struct BundleInputs {
    config: GenerateConfig,
    objects: Vec<KubeObject>,
    samples: Vec<KubeObject>,
    icon: Option<(String, String)>,
}

impl BundleInputs {
    /// Reads the manifests (`manifests` overrides the config's), samples and icon.
    pub fn read(config: &GenerateConfig, manifests: Option<&Path>) -> Result<Self, InputsError> {
        let manifests_path = manifests
            .map(Path::to_path_buf)
            .or_else(|| config.manifests.clone())
            .ok_or(InputsError::NoManifests)?;
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
    pub fn generate(&self, created_at: &str) -> Result<GeneratedBundle, GenerateError> {
        super::generate(
            &self.config,
            &self.objects,
            &self.samples,
            self.icon.clone(),
            created_at,
        )
    }

    /// The bundle generated again with the `createdAt` of the CSV already in `output`, when
    /// that CSV is what `generated` holds apart from `createdAt`: a regenerate of unchanged
    /// input then rewrites nothing. `None` when there is no such CSV or it differs otherwise.
    pub fn keeping_created_at(
        &self,
        generated: &GeneratedBundle,
        output: &Path,
    ) -> Result<Option<GeneratedBundle>, GenerateError> {
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

/// The CSV's path inside a generated bundle.
pub fn csv_file(generated: &GeneratedBundle) -> Option<&str> {
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
fn read_objects(path: &Path) -> Result<Vec<KubeObject>, InputsError> {
    let documents = if path.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin()).map_err(InputsError::Stdin)?;
        manifest::read_stream(path, &text)?
    } else {
        manifest::read_path(path)?
    };
    documents
        .into_iter()
        .map(|d| {
            let location = d.location.clone();
            KubeObject::from_document(d).map_err(|why| InputsError::NotAnObject { location, why })
        })
        .collect()
}

/// The icon file as base64 and its media type (by extension, the four OLM shows).
fn icon(path: &Path) -> Result<(String, String), InputsError> {
    let data = std::fs::read(path).map_err(|source| InputsError::IconRead {
        path: path.to_path_buf(),
        source,
    })?;
    let media_type = match path.extension().and_then(|e| e.to_str()) {
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        _ => {
            return Err(InputsError::IconType {
                path: path.to_path_buf(),
            });
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
pub fn created_at() -> Result<String, InputsError> {
    let seconds = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => epoch
            .trim()
            .parse()
            .map_err(|source| InputsError::SourceDateEpoch {
                value: epoch.clone(),
                source,
            })?,
        Err(_) => jiff::Timestamp::now().as_second(),
    };
    let timestamp = jiff::Timestamp::from_second(seconds).map_err(InputsError::Timestamp)?;
    Ok(timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}
