//! `bundle-tool build`: a bundle folder, a catalog folder or a static binary into a
//! deterministic image in an OCI image layout.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::bundle::read;
use crate::image::{self, BuiltImage, ImageFormat};

/// The manifest format of an image, as `--format` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ManifestFormat {
    /// OCI image manifest (the default).
    #[default]
    Oci,
    /// Docker image manifest v2, schema 2 (for registries or tools that want it).
    Docker,
}

impl From<ManifestFormat> for ImageFormat {
    fn from(format: ManifestFormat) -> ImageFormat {
        match format {
            ManifestFormat::Oci => ImageFormat::Oci,
            ManifestFormat::Docker => ImageFormat::Docker,
        }
    }
}

/// `bundle-tool build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The bundle folder (or, with --catalog, the catalog folder).
    #[arg(required_unless_present = "binary")]
    pub dir: Option<PathBuf>,
    /// Build an operator image from this statically linked binary instead (as `ko` does):
    /// the binary alone, run as a non-root user.
    #[arg(long, conflicts_with_all = ["dir", "catalog"])]
    pub binary: Option<PathBuf>,
    /// Build a catalog image that OLM can run: the folder at /configs, labelled for opm and
    /// OLM, served by this bundle-tool (or `$BUNDLE_TOOL_SERVER_BINARY`) on :50051, with
    /// `grpc_health_probe` for the registry pod's probes.
    #[arg(long)]
    pub catalog: bool,
    /// The tag in the layout (default `v<version>` from the CSV).
    #[arg(long)]
    pub tag: Option<String>,
    /// The OCI image layout folder.
    #[arg(long, default_value = "target/oci")]
    pub oci_layout: PathBuf,
    /// Manifest format: OCI (default) or Docker v2 schema 2.
    #[arg(long, value_enum, default_value = "oci")]
    pub format: ManifestFormat,
}

/// The image of a bundle folder, labelled with its annotations.
pub(super) fn bundle_image(dir: &std::path::Path) -> Result<BuiltImage, ActionError> {
    let labels = read::labels(dir)?;
    Ok(image::build_bundle_image(dir, &labels)?)
}

/// The catalog image of a catalog folder, refused unless the folder validates as opm would
/// load it; with the validated model (dropping it is the caller's choice) and the warning
/// about a dynamically linked server, if any.
fn catalog_image(
    dir: &std::path::Path,
) -> Result<(BuiltImage, crate::catalog::model::Model, Option<String>), ActionError> {
    let (_, valid) = crate::catalog::model::validate_dir(dir)
        .map_err(|e| ActionError::message(format!("{}: {e}", dir.display())))?;
    let server = image::server_binary()?;
    let server_layer = image::ServerLayer::prepare(&server)?;
    let built = image::build_catalog_image_with(dir, &server_layer)?;
    let warning = built.warning(&server);
    Ok((built.image, valid, warning))
}

impl Action for BuildArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        // A catalog's validated model, handed to the binary rather than freed here.
        let mut model = None;
        let mut notes = Vec::new();
        let (image, tag) = match (&self.binary, &self.dir) {
            (Some(binary), _) => {
                let name = binary
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let tag = self.tag.clone().unwrap_or_else(|| "latest".into());
                let labels = BTreeMap::from([
                    ("org.opencontainers.image.title".to_string(), name),
                    ("org.opencontainers.image.version".to_string(), tag.clone()),
                ]);
                (image::build_binary_image(binary, &labels)?, tag)
            }
            (None, Some(dir)) => {
                let image = if self.catalog {
                    let (image, valid, warning) = catalog_image(dir)?;
                    model = Some(valid);
                    notes.extend(warning);
                    image
                } else {
                    bundle_image(dir)?
                };
                let tag = self
                    .tag
                    .clone()
                    .or_else(|| read::csv_version(dir).map(|v| format!("v{v}")))
                    .unwrap_or_else(|| "latest".into());
                (image, tag)
            }
            (None, None) => return Err(ActionError::message("a folder to build is needed")),
        };
        let image = image.with_format(self.format.into());
        image::write_layout(&self.oci_layout, &tag, &image)?;
        let line = format!("{}:{tag}@{}", self.oci_layout.display(), image.digest());
        let mut outcome = Outcome::line(line);
        outcome.notes = notes;
        Ok(outcome.keeping(model))
    }
}
