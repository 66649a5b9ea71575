//! The bundle generator's configuration: what cannot be derived from the manifests.
//!
//! Read from a YAML file (`bundle-tool.yaml` at a project's root); paths in it are relative to
//! the file's folder.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// Everything `bundle-tool generate` needs besides the manifests themselves.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GenerateConfig {
    /// The OLM package name; the CSV is named `<package>.v<version>`.
    pub package: String,
    /// The operator version (strict semver).
    pub version: String,
    /// The manifests to package: a file of YAML documents or a folder of them.
    #[serde(default)]
    pub manifests: Option<PathBuf>,
    /// Folder (or file) of sample custom resources for `alm-examples`.
    #[serde(default)]
    pub samples: Option<PathBuf>,
    /// Where to write the bundle (default `bundle`).
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Channels the bundle joins.
    pub channels: Vec<String>,
    /// The package's default channel.
    #[serde(default)]
    pub default_channel: Option<String>,
    /// `spec.replaces`.
    #[serde(default)]
    pub replaces: Option<String>,
    /// `spec.skips`.
    #[serde(default)]
    pub skips: Vec<String>,
    /// The `olm.skipRange` annotation.
    #[serde(default)]
    pub skip_range: Option<String>,
    /// Extra service accounts whose RBAC folds into the CSV (beyond the Deployments').
    #[serde(default)]
    pub extra_service_accounts: Vec<String>,
    /// The human-facing CSV fields.
    pub csv: CsvMetadata,
    /// What `bundle-tool release` publishes and where (generate ignores it).
    #[serde(default)]
    pub release: Option<ReleaseConfig>,
}

/// The `release:` section: where a release's images and catalog go.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseConfig {
    /// The bundle image repository, without a tag (`v<version>` is added).
    #[serde(default)]
    pub bundle_image: Option<String>,
    /// The catalog image reference, with its tag.
    #[serde(default)]
    pub catalog_image: Option<String>,
    /// The catalog folder (relative to the config file).
    #[serde(default)]
    pub catalog: Option<PathBuf>,
    /// The catalog channels the release becomes the head of.
    #[serde(default)]
    pub channels: Vec<String>,
    /// The lowest capability level the audit may assess: a number (1-5) or a level name
    /// (`Full Lifecycle`).
    #[serde(default)]
    pub min_level: Option<Value>,
    /// The highest security-review risk a release may have (`low`, `medium`, `high`,
    /// `critical`); a finding above it fails the audit step.
    #[serde(default)]
    pub max_risk: Option<String>,
    /// Also validate with the `olm-v1` validator (docs/olm-v1.md): a bundle OLM v1 would
    /// refuse stops the release.
    #[serde(default, rename = "olmV1")]
    pub olm_v1: bool,
    /// Pin every image the CSV names to its digest, resolved through the registries, so that
    /// a disconnected cluster's digest-only mirror serves them (`--pin-digests`).
    #[serde(default)]
    pub pin_digests: bool,
    /// For OLM v1: the installer ServiceAccount's RBAC for the released bundle, and for the
    /// upgrades into it, written to a file for the cluster admin (docs/olm-v1.md).
    #[serde(default, rename = "olmV1Installer")]
    pub olm_v1_installer: Option<OlmV1Installer>,
    /// The `skipRange` of the release's catalog entries.
    #[serde(default)]
    pub skip_range: Option<String>,
    /// Push to the registries named by the image references instead of writing the local
    /// OCI layout.
    #[serde(default)]
    pub push: bool,
    /// The OCI image layout folder when not pushing (relative to the config file).
    #[serde(default)]
    pub oci_layout: Option<PathBuf>,
    /// The platforms the images are built for, `os/arch[/variant]` (default linux/amd64);
    /// several make each image an OCI image index.
    #[serde(default)]
    pub platforms: Vec<String>,
    /// The catalog server binary of each platform, by platform (relative to the config
    /// file); this machine's platform defaults to the running bundle-tool.
    #[serde(default)]
    pub server_binaries: std::collections::BTreeMap<String, PathBuf>,
    /// Whether a release for several platforms labels its CSV with them
    /// (`operatorframework.io/arch.<arch>`; default true).
    #[serde(default)]
    pub platform_labels: Option<bool>,
}

/// `release.olmV1Installer`: whose RBAC `release` writes, and where.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OlmV1Installer {
    /// The ClusterExtension's `spec.namespace`, where the ServiceAccount lives.
    pub namespace: String,
    /// The installer ServiceAccount's name (`spec.serviceAccount.name`).
    pub service_account: String,
    /// The ClusterExtension's name (default: the package's).
    #[serde(default)]
    pub extension: Option<String>,
    /// The file written (relative to the config file), as YAML documents.
    pub file: PathBuf,
}

/// CSV fields written as given.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CsvMetadata {
    /// `spec.displayName`.
    pub display_name: String,
    /// `spec.description` (markdown).
    #[serde(default)]
    pub description: Option<String>,
    /// The short `description` annotation shown on catalog tiles.
    #[serde(default)]
    pub short_description: Option<String>,
    /// An icon file (SVG or PNG), embedded as base64.
    #[serde(default)]
    pub icon: Option<PathBuf>,
    /// `spec.keywords`.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// `spec.maintainers`.
    #[serde(default)]
    pub maintainers: Vec<Value>,
    /// `spec.provider`.
    #[serde(default)]
    pub provider: Option<Value>,
    /// `spec.links`.
    #[serde(default)]
    pub links: Vec<Value>,
    /// `spec.maturity`.
    #[serde(default)]
    pub maturity: Option<String>,
    /// `spec.installModes` as `{Type: supported}`; all four are written.
    #[serde(default)]
    pub install_modes: std::collections::BTreeMap<String, bool>,
    /// The `categories` annotation.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The `capabilities` annotation (one of the five level names).
    #[serde(default)]
    pub capabilities: Option<String>,
    /// `spec.minKubeVersion`.
    #[serde(default)]
    pub min_kube_version: Option<String>,
    /// The `repository` annotation.
    #[serde(default)]
    pub repository: Option<String>,
    /// The `support` annotation.
    #[serde(default)]
    pub support: Option<String>,
    /// Extra CSV annotations.
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The file is not a valid config.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// What is wrong.
        message: String,
    },
}

/// The YAML reader's message without the position it repeats ("error: line L column C: "),
/// which the error's `path:line:column` already gives; for an unknown key, the known key
/// nearest to it (a misspelling is the usual cause).
fn config_message(raw: &str) -> String {
    let mut message = raw.strip_prefix("error: ").unwrap_or(raw);
    if let Some(rest) = message.strip_prefix("line ")
        && let Some((_, after)) = rest.split_once(": ")
    {
        message = after;
    }
    let mut message = message.to_string();
    if let Some((unknown, expected)) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once("`, expected one of "))
    {
        let nearest = expected
            .split(", ")
            .map(|known| known.trim_matches('`'))
            .map(|known| (edit_distance(unknown, known), known))
            .min();
        // Within a third of the key's length: a typo, not another word.
        if let Some((distance, known)) = nearest
            && distance * 3 <= unknown.len().max(3)
        {
            message.push_str(&format!(" (did you mean `{known}`?)"));
        }
    }
    message
}

/// Levenshtein distance: insertions, deletions and substitutions of characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

impl GenerateConfig {
    /// Reads a config file; relative paths in it are resolved against its folder.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
            path: path.into(),
            error,
        })?;
        Self::parse(&text, path)
    }

    /// Reads a config's text as if from the file `path` (which need not exist yet: `init`
    /// checks what it is about to write); relative paths are resolved against its folder.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut config: GenerateConfig = serde_saphyr::from_str(text).map_err(|e| {
            let location = e.location();
            ConfigError::Invalid {
                path: path.into(),
                line: location.as_ref().map(|l| l.line()).unwrap_or(1),
                column: location.as_ref().map(|l| l.column()).unwrap_or(1),
                message: config_message(e.to_string().lines().next().unwrap_or_default()),
            }
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut Option<PathBuf>| {
            if let Some(inner) = p.as_mut()
                && inner.is_relative()
            {
                *inner = base.join(&*inner);
            }
        };
        resolve(&mut config.manifests);
        resolve(&mut config.samples);
        resolve(&mut config.output);
        resolve(&mut config.csv.icon);
        if let Some(release) = config.release.as_mut() {
            resolve(&mut release.catalog);
            resolve(&mut release.oci_layout);
            for path in release.server_binaries.values_mut() {
                let mut some = Some(path.clone());
                resolve(&mut some);
                if let Some(resolved) = some {
                    *path = resolved;
                }
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_named_at_its_line_with_the_nearest_known_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bundle-tool.yaml");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle-tool.yaml"),
        )
        .unwrap()
        .replace("  maxRisk: high", "  maxRisc: high");
        std::fs::write(&path, &text).unwrap();
        let line = text.lines().position(|l| l.contains("maxRisc")).unwrap() + 1;
        let error = GenerateConfig::load(&path).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "{}:{line}:3: unknown field `maxRisc`",
                path.display()
            )),
            "{error}"
        );
        assert!(error.ends_with("(did you mean `maxRisk`?)"), "{error}");
        // A key like no known one gets no guess.
        std::fs::write(&path, text.replace("  maxRisc: high", "  zzzzzzzz: high")).unwrap();
        let error = GenerateConfig::load(&path).unwrap_err().to_string();
        assert!(!error.contains("did you mean"), "{error}");
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("maxRisc", "maxRisk"), 1);
        assert_eq!(edit_distance("chanels", "channels"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_repository_config_asks_release_for_the_olm_v1_validator() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle-tool.yaml");
        let config = GenerateConfig::load(&path).expect("bundle-tool.yaml loads");
        assert!(config.release.expect("a release section").olm_v1);
        assert!(!ReleaseConfig::default().olm_v1);
    }
}
