//! Every upgrade edge of a file-based catalog — `replaces`, `skips` and `skipRange` of each
//! channel entry — checked as `check-upgrade` checks a pair, from the objects the bundles
//! carry (`olm.bundle.object`), or for bundles that are image references only, from a local
//! folder (`--bundle-source REF=DIR`) or the pulled image (`--pull`), through the catalog's
//! one [`BundleSources`]. The edge itself is the catalog's, so the graph rule is off.

use std::collections::BTreeMap;
use std::path::Path;

use super::bundle_contents::{BundleContents, UpgradeError};
use super::finding::Report;
use super::{Checks, check_pair};
use crate::catalog::bundle_source::{BundleSourceError, BundleSources};
use crate::catalog::declcfg::{self, DeclarativeConfig};
use crate::version_range::{VersionRange, parse_version_tolerant};

/// One upgrade edge with its report.
#[derive(Clone, Debug)]
pub struct Edge {
    /// The package.
    pub package: String,
    /// The channels that have the edge.
    pub channels: Vec<String>,
    /// The findings, OLD (`from`) to NEW (`to`).
    pub report: Report,
}

/// All edges of a catalog (or of one package).
#[derive(Clone, Debug, Default)]
pub struct CatalogReport {
    /// Checked edges, by package, then from and to bundle.
    pub edges: Vec<Edge>,
    /// Edges that could not be checked and why (a bundle without its objects).
    pub not_checked: Vec<String>,
}

impl CatalogReport {
    /// Whether any edge has an error-level finding.
    pub fn has_errors(&self) -> bool {
        self.edges.iter().any(|e| e.report.has_errors())
    }

    /// `N edges checked, M unsafe` (and how many could not be checked).
    pub fn summary(&self) -> String {
        let unsafe_edges = self.edges.iter().filter(|e| e.report.has_errors()).count();
        let mut text = format!(
            "{} upgrade edges checked, {unsafe_edges} unsafe",
            self.edges.len()
        );
        if !self.not_checked.is_empty() {
            text.push_str(&format!(", {} not checked", self.not_checked.len()));
        }
        text
    }
}

/// Where the contents of a catalog bundle without `olm.bundle.object`s come from.
#[derive(Debug, Default)]
pub struct ImageBundles {
    /// `--bundle-source` mappings (and pulls when `pull`).
    pub sources: BundleSources,
    /// Whether to pull image references no mapping covers.
    pub pull: bool,
}

/// Checks every edge of the catalog at `root`, or of `package` only.
pub fn check_catalog(
    root: &Path,
    package: Option<&str>,
    images: &ImageBundles,
) -> Result<CatalogReport, UpgradeError> {
    check_edges(root, package, None, Some(images))
}

/// Checks the edges of `package` that lead into the bundle `to`: what a release of `to`
/// asks of the users it upgrades.
pub fn check_edges_into(
    root: &Path,
    package: &str,
    to: &str,
) -> Result<CatalogReport, UpgradeError> {
    check_edges(root, Some(package), Some(to), None)
}

/// The bundles of `package` with an upgrade edge (`replaces`, `skips`, `skipRange`) into
/// `to`, in any channel: whom a release of `to` upgrades. Sorted, each once.
pub fn upgrades_into(config: &DeclarativeConfig, package: &str, to: &str) -> Vec<String> {
    let mut from: Vec<String> = edges(config, Some(package))
        .into_keys()
        .filter(|(_, _, into)| into == to)
        .map(|(_, from, _)| from)
        .collect();
    from.sort();
    from.dedup();
    from
}

/// Why an edge was not checked: one of its bundles could not be read (it is listed as not
/// checked, and the others go on).
#[derive(Debug, thiserror::Error)]
pub enum NotChecked {
    /// The catalog names a bundle it does not have.
    #[error("{0}: no such bundle in the catalog")]
    NoSuchBundle(String),
    /// The bundle carries no objects and nothing says where to read it.
    #[error("{NO_OBJECTS}; render the catalog with its objects")]
    NoObjects,
    /// The bundle carries no objects; a folder or a pull would read it.
    #[error("{NO_OBJECTS}; give --bundle-source {0}=DIR or --pull")]
    NoSource(String),
    /// Pulling the bundle's image failed.
    #[error("{name}: {error}")]
    Pull {
        /// The bundle.
        name: String,
        /// Why.
        error: BundleSourceError,
    },
}

/// What the bundles of an unchecked edge lack.
const NO_OBJECTS: &str = "a bundle without olm.bundle.object properties";

fn check_edges(
    root: &Path,
    package: Option<&str>,
    into: Option<&str>,
    images: Option<&ImageBundles>,
) -> Result<CatalogReport, UpgradeError> {
    let config = declcfg::load_dir(root)?;
    if let Some(package) = package
        && !config.packages.iter().any(|p| p.name == package)
    {
        return Err(UpgradeError::NoPackage {
            catalog: root.to_path_buf(),
            package: package.to_string(),
        });
    }
    let edges = edges(&config, package);
    // Each bundle is read once, however many edges it is on.
    let mut contents: BTreeMap<(String, String), Result<BundleContents, NotChecked>> =
        BTreeMap::new();
    let mut report = CatalogReport::default();
    for ((package, from, to), channels) in edges {
        if into.is_some_and(|into| into != to) {
            continue;
        }
        for name in [&from, &to] {
            let key = (package.clone(), name.clone());
            if contents.contains_key(&key) {
                continue;
            }
            let bundle = config
                .bundles
                .iter()
                .find(|b| b.package == package && b.name == *name);
            let loaded = match bundle {
                None => Err(NotChecked::NoSuchBundle(name.clone())),
                Some(b) => {
                    let objects = b.objects();
                    if !objects.is_empty() {
                        Ok(BundleContents::from_inline(name, &objects)?)
                    } else {
                        from_image(name, &b.image, images)?
                    }
                }
            };
            contents.insert(key, loaded);
        }
        let old = &contents[&(package.clone(), from.clone())];
        let new = &contents[&(package.clone(), to.clone())];
        match (old, new) {
            (Ok(old), Ok(new)) => report.edges.push(Edge {
                package,
                channels,
                report: check_pair(old, new, Checks { graph: false }),
            }),
            (Err(why), _) | (_, Err(why)) => report
                .not_checked
                .push(format!("{package}: {from} -> {to}: not checked ({why})")),
        }
    }
    Ok(report)
}

/// A bundle with no objects in the catalog, from its image: a `--bundle-source` folder, or
/// pulled with `--pull`. `Ok(Err(why))` when neither applies or the pull fails (the edge is
/// then listed as not checked); `Err` when the bundle's contents are malformed.
fn from_image(
    name: &str,
    image: &str,
    images: Option<&ImageBundles>,
) -> Result<Result<BundleContents, NotChecked>, UpgradeError> {
    let Some(images) = images.filter(|_| !image.is_empty()) else {
        return Ok(Err(NotChecked::NoObjects));
    };
    if !images.pull && !images.sources.mappings().contains_key(image) {
        return Ok(Err(NotChecked::NoSource(image.to_string())));
    }
    let mapped = images.sources.mappings().contains_key(image);
    let rendered = match images.sources.render_image(image) {
        Ok(rendered) => rendered,
        // A folder the user named must be right: that is an error, not a skipped edge.
        Err(e) if mapped => return Err(UpgradeError::BundleSource(Box::new(e))),
        Err(error) => {
            return Ok(Err(NotChecked::Pull {
                name: name.to_string(),
                error,
            }));
        }
    };
    if rendered.name != name {
        return Err(UpgradeError::OtherBundle {
            image: image.to_string(),
            read: rendered.name,
            catalog: name.to_string(),
        });
    }
    let mut contents = BundleContents::from_inline(name, &rendered.objects())?;
    contents.source = image.to_string();
    Ok(Ok(contents))
}

/// `(package, from, to)` of every edge, with the channels that have it.
fn edges(
    config: &DeclarativeConfig,
    package: Option<&str>,
) -> BTreeMap<(String, String, String), Vec<String>> {
    let version_of = |package: &str, name: &str| {
        config
            .bundles
            .iter()
            .find(|b| b.package == package && b.name == name)
            .and_then(|b| {
                b.properties
                    .iter()
                    .find(|p| p.type_ == crate::olm_property::PACKAGE)
                    .and_then(|p| p.value.str_field("version"))
            })
            .and_then(|v| parse_version_tolerant(&v).ok())
    };
    let mut edges: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    for channel in &config.channels {
        if package.is_some_and(|p| p != channel.package) {
            continue;
        }
        let mut add = |from: &str, to: &str| {
            let channels = edges
                .entry((channel.package.clone(), from.to_string(), to.to_string()))
                .or_default();
            if !channels.contains(&channel.name) {
                channels.push(channel.name.clone());
            }
        };
        for entry in &channel.entries {
            if !entry.replaces.is_empty() {
                add(&entry.replaces, &entry.name);
            }
            for skipped in &entry.skips {
                add(skipped, &entry.name);
            }
            // A range that does not parse draws no edge here.
            if entry.skip_range.is_empty() {
                continue;
            }
            let Ok(range) = VersionRange::parse(&entry.skip_range) else {
                continue;
            };
            for other in &channel.entries {
                if other.name != entry.name
                    && version_of(&channel.package, &other.name).is_some_and(|v| range.contains(&v))
                {
                    add(&other.name, &entry.name);
                }
            }
        }
    }
    edges
}
