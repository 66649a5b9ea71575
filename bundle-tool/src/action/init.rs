//! `bundle-tool init`: a first `bundle-tool.yaml` from an operator's manifests or from a
//! published bundle (folder or image), written atomically and never over an existing one
//! without `--force`.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, pulled};
use crate::bundle::init::{self, InitOptions, manifests::ManifestSource};
use crate::location::Location;

/// `bundle-tool init`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("input").required(true))]
pub struct InitArgs {
    /// The operator's manifests: a file, a folder, or `-` for standard input (plain YAML,
    /// `kustomize build` or `helm template` output).
    #[arg(long, group = "input")]
    pub manifests: Option<PathBuf>,
    /// A published bundle, folder or image: the config (and the manifests beside it) that
    /// give back its CSV.
    #[arg(long, group = "input")]
    pub from_bundle: Option<PathBuf>,
    /// The samples (custom resources for `alm-examples`): a file or folder, when they are
    /// not among the manifests (kubebuilder's `config/samples`).
    #[arg(long, requires = "manifests")]
    pub samples: Option<PathBuf>,
    /// The config file to write.
    #[arg(long, default_value = "bundle-tool.yaml")]
    pub config: PathBuf,
    /// Fill the `release:` section with images under this prefix
    /// (`PREFIX/<package>-bundle`, `PREFIX/<package>-catalog:latest`).
    #[arg(long, value_name = "PREFIX")]
    pub registry: Option<String>,
    /// The package name, over the one found.
    #[arg(long)]
    pub package: Option<String>,
    /// The version, over the one found.
    #[arg(long)]
    pub version: Option<String>,
    /// Replace the config (and the files init writes beside it) if they exist.
    #[arg(long)]
    pub force: bool,
    /// How to reach the registry of a bundle image: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for InitArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        // Refused before reading anything (standard input included).
        if !self.force && self.config.exists() {
            return Err(init::InitError::Exists {
                path: self.config.clone(),
            }
            .into());
        }
        let options = InitOptions {
            package: self.package.clone(),
            version: self.version.clone(),
            registry: self.registry.clone(),
        };
        let plan = match (&self.manifests, &self.from_bundle) {
            (Some(path), _) => {
                let objects = init::read_objects(path)?;
                let source = if path.as_os_str() == "-" {
                    ManifestSource::Stdin
                } else {
                    ManifestSource::Path(path)
                };
                let samples = match &self.samples {
                    Some(path) => Some((path.as_path(), init::read_objects(path)?)),
                    None => None,
                };
                init::manifests::plan(objects, source, samples, &self.config, &options)?
            }
            (None, Some(bundle)) => match Location::of_path(bundle)? {
                Location::Local(dir) => init::from_bundle::plan(&dir, &options)?,
                Location::Image(reference) => {
                    let image = pulled(&reference, &self.transport.transport())?;
                    init::from_bundle::plan(image.root(), &options)?
                }
            },
            (None, None) => {
                return Err(ActionError::message(
                    "give --manifests FILE|DIR|- or --from-bundle DIR|IMAGE",
                ));
            }
        };
        plan.write(&self.config, self.force)?;
        let folder = init::config_parent(&self.config);
        let mut written = vec![self.config.display().to_string()];
        written.extend(
            plan.files
                .iter()
                .map(|(file, _)| folder.join(file).display().to_string()),
        );
        let mut text = format!("wrote {}\n", written.join(", "));
        for line in &plan.found {
            text.push_str(line);
            text.push('\n');
        }
        let mut notes = Vec::new();
        if !plan.for_the_author.is_empty() {
            notes.push(format!(
                "only you can say these; they are commented out under `# AUTHOR:` in {}:",
                self.config.display()
            ));
            for (key, why) in &plan.for_the_author {
                notes.push(format!("  {key}: {why}"));
            }
        }
        let mut outcome = Outcome::text(text);
        outcome.notes = notes;
        Ok(outcome)
    }
}
