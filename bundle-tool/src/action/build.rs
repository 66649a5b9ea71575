//! `bundle-tool build`: a bundle folder, a catalog folder or a static binary into a
//! deterministic image in an OCI image layout.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Action, ActionError, Outcome};
use crate::bundle::read;
use crate::image::{self, BuiltImage, ImageFormat, Platform};

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
    /// the binary alone, run as a non-root user. `PLATFORM=PATH` gives each platform's
    /// binary (repeat the flag): `--binary linux/arm64=target/aarch64-unknown-linux-gnu/release/NAME`.
    #[arg(long, value_name = "[PLATFORM=]PATH", conflicts_with_all = ["dir", "catalog"])]
    pub binary: Vec<String>,
    /// The platforms to build, `os/arch[/variant]`, comma-separated: several make an OCI
    /// image index of one image per platform (default: those `--binary` names, else
    /// linux/amd64).
    #[arg(long, value_name = "PLATFORMS")]
    pub platform: Vec<String>,
    /// With --catalog: the server binary of a platform, `PLATFORM=PATH` (repeat the flag);
    /// this machine's platform defaults to this bundle-tool (or `$BUNDLE_TOOL_SERVER_BINARY`).
    #[arg(long, value_name = "PLATFORM=PATH", requires = "catalog")]
    pub server_binary: Vec<String>,
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
    platforms: &[Platform],
    server_binaries: &[String],
) -> Result<(BuiltImage, crate::catalog::model::Model, Option<String>), ActionError> {
    let (_, valid) = crate::catalog::model::validate_dir(dir)
        .map_err(|e| ActionError::message(format!("{}: {e}", dir.display())))?;
    let servers = image::server_binaries(platforms, server_binaries)?;
    let layers = servers
        .iter()
        .map(|server| image::ServerLayer::prepare(server))
        .collect::<Result<Vec<_>, _>>()?;
    let pairs: Vec<(Platform, &image::ServerLayer)> =
        platforms.iter().cloned().zip(layers.iter()).collect();
    let built = image::build_catalog_images(dir, &pairs)?;
    let warning = built.warning(&servers[0]);
    Ok((built.image, valid, warning))
}

/// The platforms to build: `--platform`, else those the `PLATFORM=PATH` settings name, else
/// linux/amd64.
fn platforms(flag: &[String], settings: &[String]) -> Result<Vec<Platform>, ActionError> {
    if !flag.is_empty() {
        return Ok(Platform::parse_list(flag)?);
    }
    let named: Vec<String> = settings
        .iter()
        .filter_map(|s| s.split_once('=').map(|(p, _)| p.to_string()))
        .filter(|p| p.contains('/'))
        .collect();
    if named.is_empty() {
        return Ok(vec![Platform::linux_amd64()]);
    }
    Ok(Platform::parse_list(&named)?)
}

impl Action for BuildArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        // A catalog's validated model, handed to the binary rather than freed here.
        let mut model = None;
        let mut notes = Vec::new();
        let (image, tag) = match (self.binary.is_empty(), &self.dir) {
            (false, _) => {
                let platforms = platforms(&self.platform, &self.binary)?;
                let binaries = image::binaries_for(&platforms, &self.binary, "binary", "--binary")?;
                let name = binaries[0]
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let tag = self.tag.clone().unwrap_or_else(|| "latest".into());
                let labels = BTreeMap::from([
                    ("org.opencontainers.image.title".to_string(), name),
                    ("org.opencontainers.image.version".to_string(), tag.clone()),
                ]);
                let pairs: Vec<(Platform, &std::path::Path)> = platforms
                    .into_iter()
                    .zip(binaries.iter().map(PathBuf::as_path))
                    .collect();
                (image::build_binary_images(&pairs, &labels)?, tag)
            }
            (true, Some(dir)) => {
                let image = if self.catalog {
                    let platforms = platforms(&self.platform, &self.server_binary)?;
                    let (image, valid, warning) =
                        catalog_image(dir, &platforms, &self.server_binary)?;
                    model = Some(valid);
                    notes.extend(warning);
                    image
                } else {
                    let platforms = platforms(&self.platform, &[])?;
                    let labels = read::labels(dir)?;
                    image::build_bundle_image_for(dir, &labels, &platforms)?
                };
                let tag = self
                    .tag
                    .clone()
                    .or_else(|| read::csv_version(dir).map(|v| format!("v{v}")))
                    .unwrap_or_else(|| "latest".into());
                (image, tag)
            }
            (true, None) => return Err(ActionError::message("a folder to build is needed")),
        };
        let image = image.with_format(self.format.into());
        image::write_layout(&self.oci_layout, &tag, &image)?;
        let line = format!("{}:{tag}@{}", self.oci_layout.display(), image.digest());
        let mut outcome = Outcome::line(line);
        outcome.notes = notes;
        Ok(outcome.keeping(model))
    }
}
