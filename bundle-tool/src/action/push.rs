//! The registry verbs: `push` (a folder, a layout or another image), `push-all` (every
//! bundle folder below a folder, several at a time), `pull` and `inspect`.

use std::path::{Path, PathBuf};

use super::build::ManifestFormat;
use super::build::bundle_image;
use super::registry_args::runtime;
use super::{Action, ActionError, Outcome, RegistryArgs};
use crate::image::{self, Platform, parse_reference};
use crate::location::Location;

/// `bundle-tool push`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// A bundle folder, an OCI layout folder (`DIR` or `DIR:TAG`), or an image reference to
    /// copy.
    pub source: String,
    /// Where to push, e.g. `quay.io/me/redis-operator-bundle:v0.1.0`.
    pub reference: String,
    /// Manifest format when building from a folder: OCI (default) or Docker v2 schema 2.
    #[arg(long, value_enum, default_value = "oci")]
    pub format: ManifestFormat,
    /// Transport and credentials.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl Action for PushArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let target = parse_reference(&self.reference)?;
        let (path, tag) = match self.source.rsplit_once(':') {
            Some((path, tag)) if Path::new(path).join("index.json").is_file() => {
                (PathBuf::from(path), Some(tag.to_string()))
            }
            _ => (PathBuf::from(&self.source), None),
        };
        let image = if path.join("index.json").is_file() {
            image::read_layout(&path, tag.as_deref())?
        } else {
            match Location::of(&self.source)? {
                Location::Local(dir) => bundle_image(&dir)?.with_format(self.format.into()),
                Location::Image(reference) => {
                    // A copy: credentials for the source come from the auth files.
                    let from = parse_reference(&reference)?;
                    let access = self.registry.from_auth_files().access()?;
                    // An index is copied whole, every platform's image.
                    runtime()?.block_on(
                        access.pull_from_sources(&from, |client, from| async move {
                            client.pull_for(&from, None).await
                        }),
                    )?
                }
            }
        };
        let client = self.registry.client(&target)?;
        let digest = runtime()?.block_on(client.push(&target, &image))?;
        let pushed = target.whole();
        Ok(Outcome::line(format!(
            "{}@{digest}",
            pushed.split('@').next().unwrap_or_default()
        )))
    }
}

/// `bundle-tool push-all`.
#[derive(Debug, clap::Args)]
pub struct PushAllArgs {
    /// The folder of bundle folders.
    pub dir: PathBuf,
    /// Where to push, e.g. `quay.io/me` (each bundle goes to `<prefix>/<package>:<version>`).
    pub prefix: String,
    /// Pushes at the same time.
    #[arg(long, default_value_t = 8)]
    pub jobs: usize,
    /// Transport and credentials.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl Action for PushAllArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let bundles = crate::bundle::read::folders(&self.dir)?;
        if bundles.is_empty() {
            return Err(ActionError::message(format!(
                "{}: no bundle folders found",
                self.dir.display()
            )));
        }
        let first = parse_reference(&format!("{}/probe:latest", self.prefix))?;
        let client = std::sync::Arc::new(self.registry.client(&first)?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let jobs = self.jobs.max(1);
        let results = runtime.block_on(async {
            let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(jobs));
            let mut tasks = Vec::new();
            for bundle in bundles {
                let (client, limit) = (client.clone(), limit.clone());
                let prefix = self.prefix.clone();
                tasks.push(tokio::spawn(async move {
                    let _permit = limit
                        .acquire_owned()
                        .await
                        .map_err(|e| ActionError::message(e.to_string()))?;
                    // Tags allow [A-Za-z0-9_.-]: a version's `+build` becomes `_build`.
                    let (package, version) = bundle.package_and_version();
                    let tag = version.replace('+', "_");
                    let reference = parse_reference(&format!("{prefix}/{package}:{tag}"))?;
                    let folder = bundle.dir;
                    let image = tokio::task::spawn_blocking(move || bundle_image(&folder))
                        .await
                        .map_err(|e| ActionError::message(e.to_string()))??;
                    let digest = client.push(&reference, &image).await?;
                    Ok::<_, ActionError>(format!("{}@{digest}", reference.whole()))
                }));
            }
            let mut lines = Vec::new();
            for task in tasks {
                let joined = task.await.map_err(|e| ActionError::message(e.to_string()));
                lines.push(joined.and_then(|r| r));
            }
            lines
        });
        let mut text = String::new();
        let mut notes = Vec::new();
        for result in results {
            match result {
                Ok(line) => {
                    text.push_str(&line);
                    text.push('\n');
                }
                Err(error) => notes.push(format!("error: {error}")),
            }
        }
        Ok(Outcome::with_errors(text, notes))
    }
}

/// `bundle-tool pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The image.
    pub reference: String,
    /// Where to unpack.
    pub dir: PathBuf,
    /// Of an image index, the platform's image to unpack (`os/arch[/variant]`; default:
    /// this machine's, linux/amd64 on x86-64).
    #[arg(long)]
    pub platform: Option<String>,
    /// Transport and credentials.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl Action for PullArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let source = parse_reference(&self.reference)?;
        let access = self.registry.access()?;
        let platform = match &self.platform {
            Some(text) => Platform::parse(text)?,
            None => Platform::host(),
        };
        let image = runtime()?.block_on(access.pull_from_sources(&source, |client, source| {
            let platform = platform.clone();
            async move { client.pull_for(&source, Some(&platform)).await }
        }))?;
        let files = image::unpack_layers(&image.layers, &self.dir, None)?;
        Ok(Outcome::line(format!(
            "unpacked {} files of {}@{} into {}",
            files.len(),
            self.reference,
            image.digest(),
            self.dir.display()
        )))
    }
}

/// `bundle-tool inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The image.
    pub reference: String,
    /// Transport and credentials.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl Action for InspectArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let source = parse_reference(&self.reference)?;
        let access = self.registry.access()?;
        let image = runtime()?.block_on(
            access.pull_from_sources(&source, |client, source| async move {
                client.pull_for(&source, None).await
            }),
        )?;
        let json = |bytes: &[u8]| -> Result<serde_json::Value, ActionError> {
            serde_json::from_slice(bytes).map_err(|e| ActionError::message(e.to_string()))
        };
        let manifest = json(&image.manifest)?;
        let report = if image.is_index() {
            let mut platforms = Vec::new();
            for child in &image.children {
                let (config, child_manifest) = (json(&child.config)?, json(&child.manifest)?);
                platforms.push(serde_json::json!({
                    "platform": child.platform().map(|p| p.to_string()),
                    "digest": child.digest(),
                    "labels": config["config"]["Labels"],
                    "layers": child_manifest["layers"],
                }));
            }
            serde_json::json!({
                "reference": self.reference,
                "digest": image.digest(),
                "mediaType": manifest["mediaType"],
                "platforms": platforms,
            })
        } else {
            let config = json(&image.config)?;
            serde_json::json!({
                "reference": self.reference,
                "digest": image.digest(),
                "mediaType": manifest["mediaType"],
                "platform": image.platform().map(|p| p.to_string()),
                "labels": config["config"]["Labels"],
                "layers": manifest["layers"],
            })
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| ActionError::message(e.to_string()))?;
        Ok(Outcome::line(text))
    }
}
