//! What a release does, resolved once from `bundle-tool.yaml`'s `release:` section and the
//! [`Settings`] laid over it (the command's flags: a setting wins over the config).

use std::path::{Path, PathBuf};

use super::ReleaseError;
use crate::audit::CapabilityLevel;
use crate::audit::security::Risk;
use crate::bundle::GenerateConfig;
use crate::image::{Platform, RegistrySettings, parse_reference};

/// What the caller asks for, over the config file's `release:` section: each `Some` (or
/// `true`) wins over the config's setting.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The config file.
    pub config: PathBuf,
    /// The version to release (else the config's `version`).
    pub version: Option<String>,
    /// The catalog channels the release becomes the head of.
    pub channels: Option<Vec<String>>,
    /// The bundle image repository, without a tag.
    pub bundle_image: Option<String>,
    /// The catalog image reference.
    pub catalog_image: Option<String>,
    /// The catalog folder.
    pub catalog: Option<PathBuf>,
    /// `skipRange` of the new catalog entries.
    pub skip_range: Option<String>,
    /// The lowest acceptable level: 1-5 or a level name.
    pub min_level: Option<String>,
    /// The highest acceptable security-review risk.
    pub max_risk: Option<String>,
    /// Run the `olm-v1` validator too.
    pub olm_v1: bool,
    /// Pin the CSV's images to digests.
    pub pin_digests: bool,
    /// Push to registries.
    pub push: bool,
    /// The OCI image layout folder when not pushing.
    pub oci_layout: Option<PathBuf>,
    /// Transport and credentials.
    pub registry: RegistrySettings,
    /// Plan only, write nothing.
    pub dry_run: bool,
    /// The platforms, `os/arch[/variant]` (else the config's `release.platforms`).
    pub platforms: Option<Vec<String>>,
    /// `PLATFORM=PATH` catalog server binaries, over the config's `release.serverBinaries`.
    pub server_binaries: Vec<String>,
}

/// The OCI layout folder when neither the flag nor the config names one.
pub const DEFAULT_OCI_LAYOUT: &str = "target/oci";

/// The OLM v1 installer's RBAC file a release writes (`release.olmV1Installer`).
#[derive(Clone, Debug)]
pub struct InstallerRbacFile {
    /// The file, as the config names it relative to itself.
    pub file: PathBuf,
    /// The ServiceAccount, its namespace and the ClusterExtension.
    pub options: crate::olm_v1::RbacOptions,
}

/// Everything the steps need to know.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The config file.
    pub config_path: PathBuf,
    /// The generate config with the release's version set.
    pub config: GenerateConfig,
    /// The package.
    pub package: String,
    /// The version released.
    pub version: String,
    /// `<package>.v<version>`, the CSV and catalog bundle name.
    pub bundle_name: String,
    /// The bundle image repository (no tag).
    pub bundle_repository: String,
    /// The bundle image's tag, `v<version>`.
    pub bundle_tag: String,
    /// The catalog image reference, tag included.
    pub catalog_image: String,
    /// The catalog image's tag (its tag in the OCI layout too).
    pub catalog_tag: String,
    /// The catalog folder.
    pub catalog_dir: PathBuf,
    /// The catalog channels the release becomes the head of.
    pub channels: Vec<String>,
    /// The new channel entries' `skipRange`.
    pub skip_range: Option<String>,
    /// The lowest acceptable assessed level, and where it was set.
    pub min_level: Option<(u8, String)>,
    /// The highest acceptable security-review risk, and where it was set.
    pub max_risk: Option<(Risk, String)>,
    /// Run the `olm-v1` validator too (`--olm-v1` or `release.olmV1`).
    pub olm_v1: bool,
    /// Pin every image the CSV names to its digest (`--pin-digests` or `release.pinDigests`).
    pub pin_digests: bool,
    /// Where to write the OLM v1 installer's RBAC, and for whom (`release.olmV1Installer`).
    pub olm_v1_installer: Option<InstallerRbacFile>,
    /// Push to registries (else write the OCI layout).
    pub push: bool,
    /// The OCI layout folder when not pushing.
    pub oci_layout: PathBuf,
    /// Transport and credentials for pushes.
    pub registry: RegistrySettings,
    /// Print the plan and write nothing.
    pub dry_run: bool,
    /// The platforms the images are built for (one: single images, as always; several: an
    /// index each).
    pub platforms: Vec<Platform>,
    /// The catalog server of each platform that has one given, `PLATFORM=PATH`.
    pub server_binaries: Vec<String>,
}

impl Plan {
    /// The bundle image reference the catalog records, `<repository>:v<version>`.
    pub fn bundle_image(&self) -> String {
        format!("{}:{}", self.bundle_repository, self.bundle_tag)
    }

    /// The bundle image by `digest` (`<repository>@sha256:…`): what the catalog records
    /// when images are pinned, so that a cluster pulling from a digest-only mirror can
    /// unpack the bundle as well as run its images.
    pub fn bundle_image_by_digest(&self, digest: &str) -> String {
        format!("{}@{digest}", self.bundle_repository)
    }

    /// Resolves the settings over the config file.
    pub fn resolve(args: &Settings) -> Result<Plan, ReleaseError> {
        let config_error = |message: String| ReleaseError::Config {
            path: args.config.clone(),
            message,
        };
        let mut config = GenerateConfig::load(&args.config)?;
        let release = config.release.clone().unwrap_or_default();
        if let Some(version) = &args.version {
            config.version = version.clone();
        }
        let version = config.version.clone();
        crate::version_range::parse_version(&version)
            .map_err(|e| config_error(format!("version {version:?} is not semver: {e}")))?;
        let bundle_repository = args
            .bundle_image
            .clone()
            .or(release.bundle_image.clone())
            .ok_or_else(|| {
                config_error(
                    "no bundle image: set release.bundleImage or give --bundle-image".into(),
                )
            })?;
        let last = bundle_repository.rsplit('/').next().unwrap_or_default();
        if last.contains(':') || last.contains('@') {
            return Err(config_error(format!(
                "bundle image {bundle_repository:?}: name the repository without a tag or digest; release tags it v<version>"
            )));
        }
        // Tags allow [A-Za-z0-9_.-]: a version's `+build` becomes `_build`.
        let bundle_tag = format!("v{}", version.replace('+', "_"));
        parse_reference(&format!("{bundle_repository}:{bundle_tag}"))
            .map_err(|e| config_error(format!("bundle image {bundle_repository:?}: {e:#}")))?;
        let catalog_image = args
            .catalog_image
            .clone()
            .or(release.catalog_image.clone())
            .ok_or_else(|| {
                config_error(
                    "no catalog image: set release.catalogImage or give --catalog-image".into(),
                )
            })?;
        let catalog_reference = parse_reference(&catalog_image)
            .map_err(|e| config_error(format!("catalog image {catalog_image:?}: {e:#}")))?;
        if catalog_reference.digest().is_some() {
            return Err(config_error(format!(
                "catalog image {catalog_image:?}: a release makes a new catalog image, so it needs a tag, not a digest"
            )));
        }
        let catalog_tag = catalog_reference.tag().unwrap_or("latest").to_string();
        if catalog_tag == bundle_tag {
            return Err(config_error(format!(
                "the catalog image's tag {catalog_tag:?} is the bundle's; they would overwrite each other in the OCI layout"
            )));
        }
        let channels = match &args.channels {
            Some(channels) => channels.clone(),
            None => release.channels.clone(),
        };
        if channels.is_empty() || channels.iter().any(|c| c.trim().is_empty()) {
            return Err(config_error(
                "no catalog channels: set release.channels or give --channels a,b".into(),
            ));
        }
        let min_level = match (&args.min_level, &release.min_level) {
            (Some(text), _) => Some((
                level_number(text).map_err(config_error)?,
                "--min-level".into(),
            )),
            (None, Some(value)) => {
                let text = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Some((
                    level_number(&text)
                        .map_err(|e| config_error(format!("release.minLevel: {e}")))?,
                    format!("release.minLevel in {}", args.config.display()),
                ))
            }
            (None, None) => None,
        };
        let max_risk = match (&args.max_risk, &release.max_risk) {
            (Some(text), _) => Some((
                text.parse::<Risk>()
                    .map_err(|e| config_error(format!("--max-risk: {e}")))?,
                "--max-risk".to_string(),
            )),
            (None, Some(text)) => Some((
                text.parse::<Risk>()
                    .map_err(|e| config_error(format!("release.maxRisk: {e}")))?,
                format!("release.maxRisk in {}", args.config.display()),
            )),
            (None, None) => None,
        };
        let platform_texts = match &args.platforms {
            Some(texts) => texts.clone(),
            None => release.platforms.clone(),
        };
        let platforms = if platform_texts.is_empty() {
            vec![Platform::linux_amd64()]
        } else {
            Platform::parse_list(&platform_texts)
                .map_err(|e| config_error(format!("release.platforms: {e}")))?
        };
        // The CSV's platform labels follow the platforms released.
        if let Some(section) = config.release.as_mut() {
            section.platforms = platforms.iter().map(Platform::to_string).collect();
        } else if platforms.len() > 1 {
            config.release = Some(crate::bundle::config::ReleaseConfig {
                platforms: platforms.iter().map(Platform::to_string).collect(),
                ..Default::default()
            });
        }
        let mut server_binaries = args.server_binaries.clone();
        for (platform, path) in &release.server_binaries {
            if !server_binaries
                .iter()
                .any(|given| given.starts_with(&format!("{platform}=")))
            {
                server_binaries.push(format!("{platform}={}", path.display()));
            }
        }
        let catalog_dir = args
            .catalog
            .clone()
            .or(release.catalog.clone())
            .unwrap_or_else(|| base(&args.config).join("catalog"));
        let oci_layout = args
            .oci_layout
            .clone()
            .or(release.oci_layout.clone())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_OCI_LAYOUT));
        let package = config.package.clone();
        Ok(Plan {
            config_path: args.config.clone(),
            package: config.package.clone(),
            bundle_name: format!("{}.v{version}", config.package),
            version,
            config,
            bundle_repository,
            bundle_tag,
            catalog_image,
            catalog_tag,
            catalog_dir,
            channels,
            skip_range: args.skip_range.clone().or(release.skip_range.clone()),
            min_level,
            max_risk,
            olm_v1: args.olm_v1 || release.olm_v1,
            pin_digests: args.pin_digests || release.pin_digests,
            olm_v1_installer: release.olm_v1_installer.as_ref().map(|installer| {
                InstallerRbacFile {
                    file: base(&args.config).join(&installer.file),
                    options: crate::olm_v1::RbacOptions {
                        namespace: installer.namespace.clone(),
                        service_account: installer.service_account.clone(),
                        extension: installer
                            .extension
                            .clone()
                            .unwrap_or_else(|| package.clone()),
                    },
                }
            }),
            push: args.push || release.push,
            oci_layout,
            registry: args.registry.clone(),
            dry_run: args.dry_run,
            platforms,
            server_binaries,
        })
    }

    /// The command that repeats this release (what to re-run after a late failure).
    pub fn command(&self) -> String {
        let mut words = vec![
            "bundle-tool release".to_string(),
            format!("--config {}", self.config_path.display()),
            format!("--version {}", self.version),
            format!("--channels {}", self.channels.join(",")),
            format!("--bundle-image {}", self.bundle_repository),
            format!("--catalog-image {}", self.catalog_image),
            format!("--catalog {}", self.catalog_dir.display()),
        ];
        if let Some(range) = &self.skip_range {
            words.push(format!("--skip-range '{range}'"));
        }
        if self.platforms != [Platform::linux_amd64()] {
            let list: Vec<String> = self.platforms.iter().map(Platform::to_string).collect();
            words.push(format!("--platform {}", list.join(",")));
        }
        for server in &self.server_binaries {
            words.push(format!("--server-binary {server}"));
        }
        if self.push {
            words.push("--push".into());
        } else {
            words.push(format!("--oci-layout {}", self.oci_layout.display()));
        }
        words.extend(self.registry.transport.flags());
        if let Some(user) = &self.registry.username {
            words.push(format!("--username {user} --password-stdin"));
        }
        words.join(" ")
    }
}

/// The folder of the config file (its relative paths are relative to it).
fn base(config: &Path) -> &Path {
    config.parent().unwrap_or(Path::new(""))
}

/// A capability level given as a number (1-5) or a name (`Full Lifecycle`).
pub fn level_number(text: &str) -> Result<u8, String> {
    let text = text.trim();
    if let Ok(number) = text.parse::<u8>() {
        return CapabilityLevel::from_number(number)
            .map(CapabilityLevel::number)
            .ok_or_else(|| format!("level {number} is not 1 to 5"));
    }
    CapabilityLevel::from_annotation(text)
        .map(CapabilityLevel::number)
        .ok_or_else(|| {
            format!(
                "{text:?} is not a level: give 1-5 or Basic Install, Seamless Upgrades, Full Lifecycle, Deep Insights, Auto Pilot"
            )
        })
}
