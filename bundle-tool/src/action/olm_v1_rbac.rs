//! `bundle-tool olm-v1 rbac`: the installer ServiceAccount and RBAC a ClusterExtension needs
//! to install, upgrade and remove given bundles with operator-controller v1.5.1.

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, pulled};
use crate::location::Location;
use crate::olm_v1::{self, RbacOptions, RegistryV1};

/// Output format of `olm-v1 rbac`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RbacFormat {
    /// YAML documents separated by `---`.
    Yaml,
    /// One `v1` `List` object.
    Json,
}

/// `bundle-tool olm-v1 rbac`.
#[derive(Debug, clap::Args)]
pub struct OlmV1RbacArgs {
    /// Bundle folders or bundle images: the one to install and, for upgrades, the ones it may
    /// be upgraded to (the RBAC covers all of them).
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// The ClusterExtension's `spec.namespace`, where the operator and the ServiceAccount live.
    #[arg(short, long)]
    pub namespace: String,
    /// The installer ServiceAccount's name (`spec.serviceAccount.name`).
    #[arg(long)]
    pub service_account: String,
    /// The ClusterExtension's name; the first bundle's package name if not given.
    #[arg(long)]
    pub extension: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "yaml")]
    pub output: RbacFormat,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for OlmV1RbacArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut bundles = Vec::new();
        let mut package = None;
        for argument in &self.bundles {
            // A pulled image's folder lives as long as `_image`; the bundle is read into memory.
            let (dir, _image) = match Location::of_path(argument)? {
                Location::Local(dir) => (dir, None),
                Location::Image(reference) => {
                    let image = pulled(&reference, &self.transport.transport())?;
                    (image.root().to_path_buf(), Some(image))
                }
            };
            if package.is_none() {
                package = crate::bundle::read::labels(&dir)
                    .ok()
                    .and_then(|l| l.get(crate::image::BUNDLE_PACKAGE_LABEL).cloned());
            }
            bundles.push(RegistryV1::read(&dir)?);
        }
        let extension = match self.extension.clone().or(package) {
            Some(name) => name,
            None => {
                return Err(ActionError::message(
                    "the first bundle names no package (metadata/annotations.yaml); pass --extension",
                ));
            }
        };
        let options = RbacOptions {
            namespace: self.namespace.clone(),
            service_account: self.service_account.clone(),
            extension,
        };
        let rbac = olm_v1::derive(&bundles, &options)?;
        let text = match self.output {
            RbacFormat::Json => {
                let mut text = serde_json::to_string_pretty(&rbac.to_list())
                    .map_err(|e| ActionError::message(format!("cannot write JSON: {e}")))?;
                text.push('\n');
                text
            }
            RbacFormat::Yaml => rbac
                .to_yaml()
                .map_err(|e| ActionError::message(format!("cannot write YAML: {e}")))?,
        };
        Ok(Outcome::text(text))
    }
}
