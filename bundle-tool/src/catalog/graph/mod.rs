//! `catalog graph`: a catalog's upgrade graph for people — [`mermaid`] text as
//! `opm alpha render-graph` prints it, or one self-contained [`html`] page with an SVG laid
//! out here (a column per channel, a node per bundle, replaces/skips/skipRange edges, heads
//! highlighted).
//!
//! Like opm, the graph is drawn from the documents as written, without validating them: a
//! broken catalog is exactly when one wants to look at its graph.

pub mod html;
pub mod mermaid;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use semver::Version;

use super::declcfg::{
    ChannelEntry, DeclarativeConfig, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, load_dir,
};
use crate::version_range::{VersionRange, parse_version};

/// How the graph is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GraphFormat {
    /// Mermaid flowchart text, as `opm alpha render-graph`.
    #[default]
    Mermaid,
    /// One HTML file with an inline SVG (no scripts, no network).
    Html,
}

/// A bundle's one `olm.package` property and the version it gives, as opm reads them for
/// the graph and for the semver template (same checks, same words).
pub fn package_and_version(
    bundle: &crate::catalog::declcfg::Bundle,
) -> Result<(&crate::catalog::declcfg::RawJson, Version), GraphError> {
    let packages: Vec<&crate::catalog::declcfg::RawJson> = bundle
        .properties
        .iter()
        .filter(|p| p.type_ == SCHEMA_PACKAGE)
        .map(|p| &p.value)
        .collect();
    let [property] = packages[..] else {
        return Err(GraphError::PackageProperties(bundle.name.clone()));
    };
    let text = property.str_field("version").unwrap_or_default();
    let version = parse_version(&text).map_err(|problem| GraphError::Version {
        bundle: bundle.name.clone(),
        version: text.clone(),
        problem,
    })?;
    Ok((property, version))
}

/// Why a catalog's bundles cannot be drawn: their versions, in opm's words.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// Not exactly one `olm.package` property.
    #[error("bundle {0:?} has multiple \"olm.package\" properties, expected exactly 1")]
    PackageProperties(String),
    /// The version is not semver.
    #[error("bundle {bundle:?} has invalid version {version:?}: {problem}")]
    Version {
        /// The bundle.
        bundle: String,
        /// The version as written.
        version: String,
        /// blang/semver's message.
        problem: String,
    },
}

/// A `catalog graph` failure.
#[derive(Debug, thiserror::Error)]
pub enum GraphRunError {
    /// The catalog could not be loaded.
    #[error(transparent)]
    Load(#[from] crate::catalog::declcfg::LoadError),
    /// Its bundles cannot be drawn.
    #[error("{}: {error}", .dir.display())]
    Graph {
        /// The catalog folder.
        dir: std::path::PathBuf,
        /// Why.
        error: GraphError,
    },
}

/// Runs `catalog graph` on the catalog folder `dir` (only `package`'s, when given): the
/// text to print. `draw_v0_semantics` (mermaid): mark bundles skipped by a newer entry and
/// the edges OLMv0 ignores.
pub fn run(
    dir: &Path,
    package: Option<&str>,
    format: GraphFormat,
    draw_v0_semantics: bool,
) -> Result<String, GraphRunError> {
    let config = load_dir(dir)?;
    let graph =
        UpgradeGraph::from_declcfg(&config, package).map_err(|error| GraphRunError::Graph {
            dir: dir.to_path_buf(),
            error,
        })?;
    Ok(match format {
        GraphFormat::Mermaid => mermaid::write(&graph, draw_v0_semantics),
        GraphFormat::Html => html::write(&graph, &dir.display().to_string()),
    })
}

/// One channel's entries, as written.
#[derive(Clone, Debug)]
pub struct GraphChannel {
    /// The package.
    pub package: String,
    /// The channel name.
    pub name: String,
    /// Its entries in document order.
    pub entries: Vec<ChannelEntry>,
}

/// What the drawings need: channels (sorted by name), bundle versions, deprecations.
#[derive(Clone, Debug, Default)]
pub struct UpgradeGraph {
    /// The channels drawn, sorted by name.
    pub channels: Vec<GraphChannel>,
    /// Every bundle's version, by bundle name (first bundle of a name wins, as in opm).
    pub versions: BTreeMap<String, Version>,
    /// Bundle images by bundle name.
    pub images: BTreeMap<String, String>,
    /// Packages with a package-level deprecation.
    pub deprecated_packages: BTreeSet<String>,
    /// Deprecated channel names.
    pub deprecated_channels: BTreeSet<String>,
    /// Deprecated bundle names.
    pub deprecated_bundles: BTreeSet<String>,
    /// Default channel per package.
    pub default_channels: BTreeMap<String, String>,
}

impl UpgradeGraph {
    /// Collects the graph of `config`, only `package`'s channels when given. Every bundle
    /// needs a strict semver version (opm's message otherwise).
    pub fn from_declcfg(
        config: &DeclarativeConfig,
        package: Option<&str>,
    ) -> Result<Self, GraphError> {
        let mut graph = UpgradeGraph::default();
        for bundle in &config.bundles {
            if graph.versions.contains_key(&bundle.name) {
                continue;
            }
            let (_, version) = package_and_version(bundle)?;
            graph.versions.insert(bundle.name.clone(), version);
            graph
                .images
                .insert(bundle.name.clone(), bundle.image.clone());
        }
        for deprecation in &config.deprecations {
            for entry in &deprecation.entries {
                match entry.reference.schema.as_str() {
                    SCHEMA_PACKAGE => {
                        graph
                            .deprecated_packages
                            .insert(deprecation.package.clone());
                    }
                    SCHEMA_CHANNEL => {
                        graph
                            .deprecated_channels
                            .insert(entry.reference.name.clone());
                    }
                    SCHEMA_BUNDLE => {
                        graph
                            .deprecated_bundles
                            .insert(entry.reference.name.clone());
                    }
                    _ => {}
                }
            }
        }
        for p in &config.packages {
            graph
                .default_channels
                .insert(p.name.clone(), p.default_channel.clone());
        }
        graph.channels = config
            .channels
            .iter()
            .filter(|c| package.is_none_or(|p| c.package == p))
            // With a package filter opm drops channels left without entries.
            .filter(|c| package.is_none() || !c.entries.is_empty())
            .map(|c| GraphChannel {
                package: c.package.clone(),
                name: c.name.clone(),
                entries: c.entries.clone(),
            })
            .collect();
        graph.channels.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(graph)
    }

    /// A bundle's version; 0.0.0 for a name with no bundle, as opm treats it.
    pub fn version_of(&self, name: &str) -> Version {
        self.versions
            .get(name)
            .cloned()
            .unwrap_or_else(|| Version::new(0, 0, 0))
    }
}

impl GraphChannel {
    /// The entries, highest version first (equal versions keep document order).
    pub fn entries_by_descending_version(&self, graph: &UpgradeGraph) -> Vec<&ChannelEntry> {
        let mut entries: Vec<&ChannelEntry> = self.entries.iter().collect();
        entries.sort_by(|a, b| {
            graph
                .version_of(&b.name)
                .cmp_precedence(&graph.version_of(&a.name))
        });
        entries
    }

    /// The names no other entry replaces or skips: the channel's heads (one when valid).
    pub fn heads(&self) -> BTreeSet<&str> {
        let targets: BTreeSet<&str> = self
            .entries
            .iter()
            .flat_map(|e| {
                std::iter::once(e.replaces.as_str()).chain(e.skips.iter().map(String::as_str))
            })
            .collect();
        self.entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| !targets.contains(n))
            .collect()
    }
}

/// Helpers on one channel entry.
pub trait EntryRange {
    /// The entry's skipRange, if it has one that parses (opm ignores one that does not).
    fn parsed_skip_range(&self) -> Option<VersionRange>;
}

impl EntryRange for ChannelEntry {
    fn parsed_skip_range(&self) -> Option<VersionRange> {
        if self.skip_range.is_empty() {
            return None;
        }
        VersionRange::parse(&self.skip_range).ok()
    }
}
