//! `bundle-tool init`: a first `bundle-tool.yaml`, from what the inputs say. Every key the
//! inputs carry a fact for is filled in, with a comment naming the fact; every key only the
//! author can fill in (who provides the operator, who maintains it, what it does) is written
//! commented out under an `AUTHOR:` comment and listed, so that `generate` and `validate`
//! pass on the file as written and the author knows what is left.
//!
//! Three kinds of input: the operator's manifests (`manifests.rs`: plain YAML, `kustomize
//! build` or `helm template` output), a published bundle (`from_bundle.rs`: the config and the
//! manifest set that give back its CSV), and the config's layout itself (`draft.rs`).

pub mod draft;
pub mod from_bundle;
pub mod install_modes;
pub mod manifests;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::manifest::{KubeObject, ManifestError};
pub use draft::{Entry, EntryValue};

/// Why no config could be written.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The config file is there already.
    #[error("{}: already exists; give --force to replace it", path.display())]
    Exists {
        /// The config file.
        path: PathBuf,
    },
    /// A file `init` writes beside the config is there already.
    #[error("{}: already exists (init writes it beside the config); give --force to replace it", path.display())]
    FileExists {
        /// The file.
        path: PathBuf,
    },
    /// The manifests or bundle could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// Reading standard input failed.
    #[error("reading the manifests from standard input: {0}")]
    Stdin(#[source] std::io::Error),
    /// A document is not a Kubernetes object.
    #[error("{location}: not a Kubernetes object: {why}")]
    NotAnObject {
        /// Where the document starts.
        location: crate::manifest::SourceLocation,
        /// What it lacks.
        why: crate::manifest::NotAnObject,
    },
    /// The manifests deploy no operator.
    #[error("{}: no Deployment (apps/v1): init needs the operator's Deployment to package it", manifests.display())]
    NoDeployment {
        /// The manifests.
        manifests: PathBuf,
    },
    /// The package name found is not one OLM takes.
    #[error(
        "package name {name:?} (from {from}) is not a lowercase DNS-1123 label; give --package"
    )]
    PackageName {
        /// The name found.
        name: String,
        /// Where it was found.
        from: String,
    },
    /// `--version` is not semver.
    #[error("--version {version:?} is not a semantic version: {source}")]
    Version {
        /// The version given.
        version: String,
        /// Why it does not parse.
        source: semver::Error,
    },
    /// The folder is not a bundle.
    #[error("{}: {why}", path.display())]
    NotABundle {
        /// The folder or file.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// The config written would not be read back the same: a fault of `init`, caught before
    /// anything is written.
    #[error("the config init made does not load: {0}")]
    Unreadable(String),
    /// The config written would not generate a bundle.
    #[error("the config init made does not generate a bundle: {0}")]
    DoesNotGenerate(#[source] Box<super::generate::GenerateError>),
    /// Writing the config or a file beside it.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the author adds to what the inputs say.
#[derive(Clone, Debug, Default)]
pub struct InitOptions {
    /// The package name, over the one found.
    pub package: Option<String>,
    /// The version, over the one found.
    pub version: Option<String>,
    /// Where the release's images go: `release.bundleImage` is `<registry>/<package>-bundle`,
    /// `release.catalogImage` `<registry>/<package>-catalog:latest`.
    pub registry: Option<String>,
}

/// A config ready to write, and the files that go beside it.
#[derive(Debug)]
pub struct Plan {
    /// The config's text.
    pub config: String,
    /// Files written beside the config: path relative to the config's folder, content.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// What init found, one line each, for standard output.
    pub found: Vec<String>,
    /// The keys only the author can fill in, with what to write.
    pub for_the_author: Vec<(String, String)>,
    /// The objects and samples `generate` will read, to check the config before writing it.
    pub objects: Vec<KubeObject>,
    /// The samples.
    pub samples: Vec<KubeObject>,
}

impl Plan {
    /// Checks that the config loads and generates a bundle from the objects, then writes the
    /// files beside it and the config last (each atomically): a config on disk always has its
    /// files. Refuses to replace any of them without `force`.
    pub fn write(&self, config_path: &Path, force: bool) -> Result<(), InitError> {
        let folder = config_parent(config_path);
        if !force {
            if config_path.exists() {
                return Err(InitError::Exists {
                    path: config_path.to_path_buf(),
                });
            }
            for (file, _) in &self.files {
                let path = folder.join(file);
                if path.exists() {
                    return Err(InitError::FileExists { path });
                }
            }
        }
        self.check(config_path)?;
        std::fs::create_dir_all(folder).map_err(|source| InitError::Write {
            path: folder.to_path_buf(),
            source,
        })?;
        for (file, content) in &self.files {
            let path = folder.join(file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| InitError::Write {
                    path: parent.to_path_buf(),
                    source,
                })?;
            }
            crate::durable::write_file(&path, content)
                .map_err(|source| InitError::Write { path, source })?;
        }
        crate::durable::write_file(config_path, self.config.as_bytes()).map_err(|source| {
            InitError::Write {
                path: config_path.to_path_buf(),
                source,
            }
        })
    }

    /// The config parses as `generate` reads it, and generates a bundle from the objects.
    pub fn check(&self, config_path: &Path) -> Result<(), InitError> {
        let config = super::GenerateConfig::parse(&self.config, config_path)
            .map_err(|e| InitError::Unreadable(e.to_string()))?;
        super::generate(
            &config,
            &self.objects,
            &self.samples,
            None,
            "1970-01-01T00:00:00Z",
        )
        .map_err(|e| InitError::DoesNotGenerate(Box::new(e)))?;
        Ok(())
    }
}

/// The folder a config's relative paths are read from.
pub fn config_parent(config_path: &Path) -> &Path {
    match config_path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// `path` as the config writes it: relative to the config's folder where it can be.
pub fn relative_to_config(path: &Path, config_path: &Path) -> PathBuf {
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .ok()
            .map(|a| normalise(&a))
            .unwrap_or_else(|| p.to_path_buf())
    };
    let target = absolute(path);
    let base = absolute(config_parent(config_path));
    let target_parts: Vec<_> = target.components().collect();
    let base_parts: Vec<_> = base.components().collect();
    let common = target_parts
        .iter()
        .zip(&base_parts)
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return target;
    }
    let mut relative = PathBuf::new();
    for _ in common..base_parts.len() {
        relative.push("..");
    }
    for part in &target_parts[common..] {
        relative.push(part);
    }
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

/// `a/./b/../c` → `a/c`, without touching the file system (a path need not exist yet).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `name` is a lowercase RFC 1123 label, as OLM wants a package name.
pub fn is_package_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// The `release:` section for images under `registry`.
pub fn release_section(package: &str, channels: &[String], registry: &str) -> Entry {
    let registry = registry.trim_end_matches('/');
    Entry::section(
        "release",
        vec![
            Entry::value("bundleImage", format!("{registry}/{package}-bundle"))
                .noted("`release` tags it v<version>."),
            Entry::value("catalogImage", format!("{registry}/{package}-catalog:latest")),
            Entry::value("catalog", "catalog")
                .noted("The file-based catalog folder the release adds the bundle to."),
            Entry::value("channels", json!(channels))
                .noted("The catalog channels the release becomes the head of."),
        ],
    )
    .noted(
        "`bundle-tool release` (docs/release.md): without --push both images go to the OCI\nlayout target/oci and nothing leaves the machine.",
    )
}

/// The config keys only the author knows for a CSV, commented out with an example value.
pub fn author_csv_entries(package: &str) -> Vec<Entry> {
    vec![
        Entry::value(
            "description",
            format!("What {package} does, in markdown: the catalog's page for it.\n"),
        )
        .for_the_author("what the operator does (markdown), shown on its catalog page"),
        Entry::value(
            "shortDescription",
            format!("One line about {package} for catalog tiles."),
        )
        .for_the_author("one line for catalog tiles"),
        Entry::value("provider", json!({"name": "Example", "url": "https://example.com"}))
            .for_the_author(
                "who ships the operator; the operatorframework suite `release` validates with requires provider.name",
            ),
        Entry::value(
            "maintainers",
            json!([{"name": "Maintainers", "email": "maintainers@example.com"}]),
        )
        .for_the_author("who to write to, each with name and email"),
        Entry::value("links", json!([{"name": "Source", "url": "https://example.com/source"}]))
            .for_the_author("where to read more: the source, the documentation"),
        Entry::value("icon", "icon.svg")
            .for_the_author("an SVG or PNG file shown in catalogs (validate warns without one)"),
        Entry::value("keywords", json!([package])).for_the_author("search words for catalogs"),
        Entry::value("categories", json!(["Database"]))
            .for_the_author("OperatorHub categories (Database, Monitoring, Networking, ...)"),
        Entry::value("capabilities", "Basic Install").for_the_author(
            "the capability level you claim; `bundle-tool audit` assesses the one the bundle shows",
        ),
        Entry::value("maturity", "alpha").for_the_author("alpha, beta or stable"),
    ]
}

/// A package name as words: `redis-operator` → `Redis Operator`.
pub fn display_name(package: &str) -> String {
    package
        .split(['-', '_', '.'])
        .filter(|w| !w.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<String>>()
        .join(" ")
}

/// The documents of a YAML stream of `values`.
pub fn yaml_stream(values: &[&Value]) -> String {
    values
        .iter()
        .map(|v| serde_saphyr::to_string(v).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The objects of a file or folder, or of standard input for `-`.
pub fn read_objects(path: &Path) -> Result<Vec<KubeObject>, InitError> {
    let documents = if path.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin()).map_err(InitError::Stdin)?;
        crate::manifest::read_stream(path, &text)?
    } else {
        crate::manifest::read_path(path)?
    };
    objects_of(documents)
}

/// The documents that are objects (empty documents, as `helm template` writes between
/// templates, are skipped); one that is not is an error naming its line.
pub fn objects_of(documents: Vec<crate::manifest::Document>) -> Result<Vec<KubeObject>, InitError> {
    documents
        .into_iter()
        .filter(|d| !d.value.is_null())
        .map(|d| {
            let location = d.location.clone();
            KubeObject::from_document(d).map_err(|why| InitError::NotAnObject { location, why })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_relative_to_the_config() {
        let config = Path::new("/w/project/bundle-tool.yaml");
        assert_eq!(
            relative_to_config(Path::new("/w/project/deploy/all.yaml"), config),
            Path::new("deploy/all.yaml")
        );
        assert_eq!(
            relative_to_config(Path::new("/w/other/all.yaml"), config),
            Path::new("../other/all.yaml")
        );
        assert_eq!(
            relative_to_config(Path::new("/w/project"), config),
            Path::new(".")
        );
    }

    #[test]
    fn names_and_display_names() {
        assert!(is_package_name("redis-operator"));
        assert!(!is_package_name("Redis"));
        assert!(!is_package_name("-x"));
        assert_eq!(display_name("redis-operator"), "Redis Operator");
    }
}
