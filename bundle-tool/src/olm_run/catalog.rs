//! The catalog `run` ships: one package, one channel ([`super::objects::CHANNEL`]), the bundle
//! rendered inline (as `catalog render` renders a folder: every manifest an
//! `olm.bundle.object`, image ""), validated as `catalog validate` validates, built into the
//! same runnable catalog image `build --catalog` and `release` make, and pushed.
//!
//! `--upgrade` starts from the catalog the installed bundle came from (the image named on the
//! CatalogSource, pulled back, or the ConfigMaps it names, read back: see
//! [`super::configmap`]) and adds the new bundle as the channel's new head, replacing
//! the installed CSV: the upgrade edge OLM follows, whatever the new CSV's `spec.replaces`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::RunError;
use super::objects::CHANNEL;
use crate::catalog::add::{Replaces, add_bundle};
use crate::catalog::declcfg::{self, Bundle, DeclarativeConfig};
use crate::catalog::render::{is_bundle_dir, render_bundle_dir};
use crate::image::{self, RegistryAccess, parse_reference};

/// A bundle folder as `run` uses it: rendered, and its CSV.
pub struct RunBundle {
    /// The folder.
    pub dir: PathBuf,
    /// Its `olm.bundle`, manifests inline.
    pub bundle: Bundle,
    /// Its ClusterServiceVersion.
    pub csv: Value,
}

impl RunBundle {
    /// Renders the bundle folder `dir`.
    pub fn read(dir: &Path) -> Result<RunBundle, RunError> {
        if !is_bundle_dir(dir) {
            return Err(RunError::NotABundle(dir.to_path_buf()));
        }
        let bundle = render_bundle_dir(dir, "").map_err(|error| RunError::Render {
            dir: dir.to_path_buf(),
            error,
        })?;
        let csv = bundle
            .objects()
            .iter()
            .filter_map(|bytes| serde_json::from_slice::<Value>(bytes).ok())
            .find(|object| object["kind"] == "ClusterServiceVersion")
            .ok_or_else(|| RunError::NotABundle(dir.to_path_buf()))?;
        Ok(RunBundle {
            dir: dir.to_path_buf(),
            bundle,
            csv,
        })
    }

    /// The CSV's name (the bundle's name).
    pub fn csv_name(&self) -> &str {
        &self.bundle.name
    }

    /// The package.
    pub fn package(&self) -> &str {
        &self.bundle.package
    }

    /// The CSV's `spec.version`, for the image tag.
    pub fn version(&self) -> String {
        self.csv["spec"]["version"]
            .as_str()
            .unwrap_or("latest")
            .replace('+', "_")
    }
}

/// The first catalog: the bundle alone at the head of [`CHANNEL`].
pub fn first_catalog(bundle: &RunBundle) -> Result<DeclarativeConfig, RunError> {
    let mut config = DeclarativeConfig::default();
    add_bundle(
        &mut config,
        bundle.bundle.clone(),
        &[CHANNEL.to_string()],
        &Replaces::Nothing,
        "",
    )
    .map_err(|error| RunError::Catalog(Box::new(error)))?;
    Ok(config)
}

/// What an upgrade did to the catalog.
pub struct UpgradeEdge {
    /// The catalog with the new bundle heading the channel.
    pub config: DeclarativeConfig,
    /// Set when the new CSV's own `spec.replaces` does not name the installed CSV: the line
    /// that says the catalog's entry adds the edge.
    pub added_edge: Option<String>,
}

/// `image` pulled and unpacked into a temporary folder (a catalog image: its configs).
pub fn pull(image: &str, transport: &image::Transport) -> Result<image::PulledImage, RunError> {
    // pull_to_temp runs its own runtime: on a thread of its own, outside the caller's.
    std::thread::scope(|scope| {
        scope
            .spawn(|| image::pull_to_temp(image, transport))
            .join()
            .unwrap_or_else(|_| {
                Err(image::PullError::Io(std::io::Error::other(
                    "the pull panicked",
                )))
            })
    })
    .map_err(|error| RunError::Pull {
        image: image.to_string(),
        error,
    })
}

/// The catalog of the catalog image `previous`.
pub fn pulled_catalog(
    previous: &str,
    transport: &image::Transport,
) -> Result<DeclarativeConfig, RunError> {
    let pulled = pull(previous, transport)?;
    declcfg::load_dir(pulled.root()).map_err(|error| RunError::Load {
        image: previous.to_string(),
        error,
    })
}

/// `config` (the catalog of the image `previous`) with `bundle` as the channel's head,
/// replacing `installed`.
pub fn with_upgrade(
    mut config: DeclarativeConfig,
    previous: &str,
    bundle: &RunBundle,
    installed: &str,
) -> Result<UpgradeEdge, RunError> {
    if config.bundles.iter().any(|b| b.name == bundle.csv_name()) {
        return Err(RunError::AlreadyInCatalog {
            bundle: bundle.csv_name().to_string(),
            image: previous.to_string(),
        });
    }
    add_bundle(
        &mut config,
        bundle.bundle.clone(),
        &[CHANNEL.to_string()],
        &Replaces::Bundle(installed.to_string()),
        "",
    )
    .map_err(|error| RunError::Catalog(Box::new(error)))?;
    let replaces = bundle.csv["spec"]["replaces"].as_str().unwrap_or_default();
    let added_edge = (replaces != installed).then(|| {
        format!(
            "{} names {} in spec.replaces; the catalog's channel entry adds the edge {} -> {}",
            bundle.csv_name(),
            if replaces.is_empty() {
                "no bundle".to_string()
            } else {
                replaces.to_string()
            },
            installed,
            bundle.csv_name()
        )
    });
    Ok(UpgradeEdge { config, added_edge })
}

/// Pushes `image` to `repository:tag`; returns the digest.
pub async fn push_image(
    image: &image::BuiltImage,
    repository: &str,
    tag: &str,
    access: &RegistryAccess,
) -> Result<String, RunError> {
    let target = format!("{repository}:{tag}");
    let reference = parse_reference(&target).map_err(|error| RunError::Push {
        image: target.clone(),
        error,
    })?;
    access
        .client(&reference)
        .map_err(|error| RunError::Push {
            image: target.clone(),
            error: error.into(),
        })?
        .push(&reference, image)
        .await
        .map_err(|error| RunError::Push {
            image: target.clone(),
            error,
        })
}

/// A catalog image pushed.
#[derive(Clone, Debug)]
pub struct PushedCatalog {
    /// `repository@sha256:…`, what the server pod runs.
    pub image: String,
    /// The digest.
    pub digest: String,
}

/// `config` written as a catalog folder (`<package>/catalog.json` in a temporary folder) and
/// validated as `catalog validate` validates.
pub fn validated_folder(
    config: &DeclarativeConfig,
    package: &str,
) -> Result<tempfile::TempDir, RunError> {
    let folder = tempfile::tempdir().map_err(RunError::Io)?;
    let package_dir = folder.path().join(package);
    std::fs::create_dir_all(&package_dir).map_err(RunError::Io)?;
    std::fs::write(package_dir.join("catalog.json"), declcfg::to_json(config))
        .map_err(RunError::Io)?;
    crate::catalog::model::validate_dir(folder.path())
        .map_err(|error| RunError::InvalidCatalog(Box::new(error)))?;
    Ok(folder)
}

/// Writes `config` as a catalog folder, validates it, builds the runnable catalog image and
/// pushes it to `repository:tag`; with the warning about a dynamically linked server, if any.
pub async fn build_and_push(
    config: &DeclarativeConfig,
    package: &str,
    repository: &str,
    tag: &str,
    access: &RegistryAccess,
) -> Result<(PushedCatalog, Option<String>), RunError> {
    let folder = validated_folder(config, package)?;
    let server = image::server_binary().map_err(RunError::Io)?;
    let layer = image::ServerLayer::prepare(&server).map_err(RunError::Io)?;
    let built = image::build_catalog_image_with(folder.path(), &layer).map_err(RunError::Io)?;
    let warning = built.warning(&server);
    let digest = push_image(&built.image, repository, tag, access).await?;
    Ok((
        PushedCatalog {
            image: format!("{repository}@{digest}"),
            digest,
        },
        warning,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_bundle() -> RunBundle {
        RunBundle::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")).unwrap()
    }

    #[test]
    fn the_first_catalog_is_the_bundle_alone_and_valid() {
        let bundle = repo_bundle();
        assert_eq!(bundle.package(), "redis-operator");
        assert_eq!(bundle.csv["kind"], "ClusterServiceVersion");
        let config = first_catalog(&bundle).unwrap();
        assert_eq!(config.packages[0].default_channel, CHANNEL);
        assert_eq!(config.channels[0].entries[0].name, bundle.csv_name());
        assert!(config.bundles[0].image.is_empty(), "served inline");
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join("redis-operator")).unwrap();
        std::fs::write(
            folder.path().join("redis-operator/catalog.json"),
            declcfg::to_json(&config),
        )
        .unwrap();
        crate::catalog::model::validate_dir(folder.path()).unwrap();
    }

    #[test]
    fn an_upgrade_adds_the_edge_from_the_installed_csv_and_says_so() {
        let old = repo_bundle();
        let mut new = repo_bundle();
        new.bundle.name = "redis-operator.v0.2.0".into();
        new.csv["spec"]["replaces"] = Value::Null;
        let edge = with_upgrade(first_catalog(&old).unwrap(), "img", &new, old.csv_name()).unwrap();
        let entry = edge.config.channels[0]
            .entries
            .iter()
            .find(|e| e.name == "redis-operator.v0.2.0")
            .unwrap();
        assert_eq!(entry.replaces, old.csv_name());
        assert_eq!(
            edge.added_edge.as_deref(),
            Some(
                "redis-operator.v0.2.0 names no bundle in spec.replaces; the catalog's channel entry adds the edge redis-operator.v0.1.0 -> redis-operator.v0.2.0"
            )
        );
        new.csv["spec"]["replaces"] = Value::from(old.csv_name());
        let edge = with_upgrade(first_catalog(&old).unwrap(), "img", &new, old.csv_name()).unwrap();
        assert_eq!(edge.added_edge, None);
        let again = with_upgrade(first_catalog(&old).unwrap(), "img", &old, old.csv_name());
        assert!(matches!(again, Err(RunError::AlreadyInCatalog { .. })));
    }
}
