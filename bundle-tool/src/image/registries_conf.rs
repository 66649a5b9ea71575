//! containers' `registries.conf` for pulls: where an image may be pulled from instead of the
//! registry its name says (mirrors, a `location` that moves a prefix), which registries are
//! blocked, and which may be reached without verified TLS. A user behind a mirror, or on a
//! disconnected network, then names images by their public names, as podman, skopeo, CRI-O
//! and OpenShift's mirror sets (which write this file on every node) let them.
//!
//! Read as containers/image v5.36.1 reads it (`pkg/sysregistriesv2`): the same files in the
//! same order, the same rules, the refusals it makes. Only pulls look at it: pushes always
//! go to the registry named, as in containers/image (containers-registries.conf(5), "Mirrors
//! and redirection apply only when pulling"). Short-name search and aliases are not read:
//! a name without a registry means Docker Hub here, as in opm.

use std::path::{Path, PathBuf};

use oci_client::Reference;
use serde::Deserialize;

use super::parse_reference;

/// The system-wide main file and drop-in folder (containers/image's built-in paths on Linux).
const SYSTEM_FILE: &str = "/etc/containers/registries.conf";
const SYSTEM_DROP_INS: &str = "/etc/containers/registries.conf.d";
/// The per-user main file and drop-in folder, under `$HOME`.
const USER_FILE: &str = ".config/containers/registries.conf";
const USER_DROP_INS: &str = ".config/containers/registries.conf.d";

/// Why the configuration cannot be read, or forbids a pull.
#[derive(Debug, thiserror::Error)]
pub enum RegistriesConfError {
    /// A file that must be read could not be.
    #[error("registries configuration {path}: {source}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not TOML, or not of the shape the format has (line and column in `message`).
    #[error("registries configuration {path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's words, with the line.
        message: String,
    },
    /// A file breaks one of the format's rules.
    #[error("registries configuration {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which rule.
        message: String,
    },
    /// The registry the image is in is blocked.
    #[error("registry {prefix} is blocked in {files}")]
    Blocked {
        /// The `prefix` of the `[[registry]]` table that blocks it.
        prefix: String,
        /// The files read, for the user to find the table.
        files: String,
    },
    /// A `location` made a name that is not an image reference.
    #[error("{reference} rewritten by {files} to {rewritten}: {message}")]
    Rewrite {
        /// The reference pulled.
        reference: String,
        /// What the table made of it.
        rewritten: String,
        /// The files read.
        files: String,
        /// Why it is no reference.
        message: String,
    },
}

/// Which mirrors serve which references (`pull-from-mirror`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MirrorUse {
    /// Pulls by tag and by digest (`all`, the default).
    All,
    /// Pulls by digest only (`digest-only`): what a mirror made by oc-mirror can serve.
    DigestOnly,
    /// Pulls by tag only (`tag-only`).
    TagOnly,
}

/// One `[[registry.mirror]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mirror {
    location: String,
    insecure: bool,
    serves: MirrorUse,
}

/// One `[[registry]]` table, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RegistryTable {
    /// What references it applies to: a registry, a namespace or a repository, or
    /// `*.example.com` for every subdomain.
    prefix: String,
    /// Where the prefix really is; empty only with a wildcard prefix (the name unchanged).
    location: String,
    insecure: bool,
    blocked: bool,
    mirrors: Vec<Mirror>,
    /// Mirrors only for pulls by digest (`mirror-by-digest-only`).
    mirror_by_digest_only: bool,
}

/// One place to try a pull from, in the order they are tried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullSource {
    /// The reference there.
    pub reference: Reference,
    /// HTTPS without certificate checks, or plain HTTP, is allowed there (`insecure`).
    pub insecure: bool,
    /// A mirror, not the registry's own location.
    pub mirror: bool,
}

/// The files to read: the main one, whether it must exist, and the drop-in folders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfFiles {
    main: PathBuf,
    main_required: bool,
    drop_in_folders: Vec<PathBuf>,
}

impl ConfFiles {
    /// The files containers/image reads: `explicit` (the command line's `--registries-conf`),
    /// else `$CONTAINERS_REGISTRIES_CONF`, else `$REGISTRIES_CONFIG_PATH`, all three
    /// required to exist; else `~/.config/containers/registries.conf` when it exists, with
    /// only the user's drop-ins; else `/etc/containers/registries.conf` (missing is empty).
    /// Unless the user's own file was taken, the system's and then the user's drop-in
    /// folders follow.
    pub fn standard(explicit: Option<&Path>) -> ConfFiles {
        let from_environment = ["CONTAINERS_REGISTRIES_CONF", "REGISTRIES_CONFIG_PATH"]
            .iter()
            .find_map(|name| std::env::var_os(name).filter(|value| !value.is_empty()))
            .map(PathBuf::from);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::choose(
            explicit.map(Path::to_path_buf).or(from_environment),
            home.as_deref(),
            Path::new("/"),
        )
    }

    /// [`ConfFiles::standard`] with its inputs given, `root` standing for `/`.
    fn choose(explicit: Option<PathBuf>, home: Option<&Path>, root: &Path) -> ConfFiles {
        let system = |path: &str| root.join(path.trim_start_matches('/'));
        let user_drop_ins = home.map(|home| home.join(USER_DROP_INS));
        if explicit.is_none()
            && let Some(user_file) = home.map(|home| home.join(USER_FILE))
            && user_file.exists()
        {
            return ConfFiles {
                main: user_file,
                main_required: false,
                drop_in_folders: user_drop_ins.into_iter().collect(),
            };
        }
        let main_required = explicit.is_some();
        ConfFiles {
            main: explicit.unwrap_or_else(|| system(SYSTEM_FILE)),
            main_required,
            drop_in_folders: std::iter::once(system(SYSTEM_DROP_INS))
                .chain(user_drop_ins)
                .collect(),
        }
    }

    /// The files and folders, as error messages name them.
    fn describe(&self) -> String {
        std::iter::once(&self.main)
            .chain(&self.drop_in_folders)
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The registries configuration, every file read and merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistriesConf {
    /// One table per prefix, sorted by prefix (as containers/image keeps them).
    registries: Vec<RegistryTable>,
    /// What was read, for messages.
    files: String,
}

impl RegistriesConf {
    /// Reads `files`: the main file, then each drop-in folder's `*.conf` files in name
    /// order, a later file's table replacing an earlier one of the same prefix.
    pub fn read(files: &ConfFiles) -> Result<RegistriesConf, RegistriesConfError> {
        let mut registries = match std::fs::read_to_string(&files.main) {
            Ok(text) => parse(&text, &files.main, Format::MainFile)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && !files.main_required => {
                Vec::new()
            }
            Err(source) => {
                return Err(RegistriesConfError::Read {
                    path: files.main.clone(),
                    source,
                });
            }
        };
        for folder in &files.drop_in_folders {
            for path in drop_ins(folder)? {
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    // Removed since the folder was listed: containers/image skips it too.
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(source) => return Err(RegistriesConfError::Read { path, source }),
                };
                for table in parse(&text, &path, Format::DropIn)? {
                    match registries.iter_mut().find(|t| t.prefix == table.prefix) {
                        Some(existing) => *existing = table,
                        None => registries.push(table),
                    }
                }
            }
        }
        registries.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        Ok(RegistriesConf {
            registries,
            files: files.describe(),
        })
    }

    /// The places to pull `reference` from, in order: the mirrors of the table with the
    /// longest matching prefix that serve this kind of reference (by tag or by digest),
    /// then the table's own location; `reference` alone when no table matches. A blocked
    /// registry is an error.
    pub fn pull_sources(
        &self,
        reference: &Reference,
    ) -> Result<Vec<PullSource>, RegistriesConfError> {
        let whole = reference.whole();
        let Some((table, matched)) = self
            .registries
            .iter()
            .filter_map(|table| matched_length(&whole, &table.prefix).map(|end| (table, end)))
            .max_by_key(|(table, _)| table.prefix.len())
        else {
            return Ok(vec![PullSource {
                reference: reference.clone(),
                insecure: false,
                mirror: false,
            }]);
        };
        if table.blocked {
            return Err(RegistriesConfError::Blocked {
                prefix: table.prefix.clone(),
                files: self.files.clone(),
            });
        }
        let by_digest = reference.digest().is_some();
        let mirrors = table.mirrors.iter().filter(|mirror| {
            if table.mirror_by_digest_only {
                return by_digest;
            }
            match mirror.serves {
                MirrorUse::All => true,
                MirrorUse::DigestOnly => by_digest,
                MirrorUse::TagOnly => !by_digest,
            }
        });
        let endpoints = mirrors
            .map(|mirror| (mirror.location.as_str(), mirror.insecure, true))
            .chain(std::iter::once((
                table.location.as_str(),
                table.insecure,
                false,
            )));
        endpoints
            .map(|(location, insecure, mirror)| {
                let rewritten = if location.is_empty() {
                    whole.clone()
                } else {
                    format!("{location}{}", &whole[matched..])
                };
                let reference =
                    parse_reference(&rewritten).map_err(|error| RegistriesConfError::Rewrite {
                        reference: whole.clone(),
                        rewritten: rewritten.clone(),
                        files: self.files.clone(),
                        message: format!("{error:#}"),
                    })?;
                Ok(PullSource {
                    reference,
                    insecure,
                    mirror,
                })
            })
            .collect()
    }

    /// The files read, as messages name them.
    pub fn files(&self) -> &str {
        &self.files
    }
}

/// The `*.conf` files of a drop-in folder, in name order; none when it does not exist.
fn drop_ins(folder: &Path) -> Result<Vec<PathBuf>, RegistriesConfError> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RegistriesConfError::Read {
                path: folder.to_path_buf(),
                source,
            });
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RegistriesConfError::Read {
            path: folder.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let is_file = entry.file_type().map(|t| !t.is_dir()).unwrap_or(false);
        if is_file && path.extension().is_some_and(|e| e == "conf") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// How long the part of `whole` that `prefix` matches is, if it matches: the prefix itself
/// followed by the end, `:`, `/` or `@`; a `*.example.com` prefix, any subdomain of
/// `example.com` in the registry part. (Like containers/image, `example.com` also matches
/// `example.com:5000/…`, which its authors say not to rely on.)
fn matched_length(whole: &str, prefix: &str) -> Option<usize> {
    let end = if let Some(domain) = prefix.strip_prefix('*') {
        let at = whole.find(domain)?;
        if whole[..at].contains('/') {
            return None;
        }
        at + domain.len()
    } else {
        if !whole.starts_with(prefix) {
            return None;
        }
        prefix.len()
    };
    match whole.as_bytes().get(end) {
        None | Some(b':' | b'/' | b'@') => Some(end),
        Some(_) => None,
    }
}

/// Which file is parsed: the main file may still be in the first format (v1); a drop-in may
/// not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    MainFile,
    DropIn,
}

/// The keys read; others (`unqualified-search-registries`, `[aliases]`,
/// `credential-helpers`, …) are left alone, as containers/image leaves keys it does not know.
#[derive(Deserialize, Default)]
struct FileText {
    #[serde(default)]
    registry: Vec<TableText>,
    /// The first format's `[registries.search|insecure|block]` lists.
    #[serde(default)]
    registries: Option<V1Text>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct TableText {
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror: Vec<MirrorText>,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    pull_from_mirror: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct MirrorText {
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    pull_from_mirror: String,
}

#[derive(Deserialize, Default)]
struct V1Text {
    #[serde(default)]
    search: V1List,
    #[serde(default)]
    insecure: V1List,
    #[serde(default)]
    block: V1List,
}

#[derive(Deserialize, Default)]
struct V1List {
    #[serde(default)]
    registries: Vec<String>,
}

/// One file's tables, checked, one per prefix (the first of a repeated prefix wins, as in
/// containers/image).
fn parse(
    text: &str,
    path: &Path,
    format: Format,
) -> Result<Vec<RegistryTable>, RegistriesConfError> {
    let invalid = |message: String| RegistriesConfError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let file: FileText = toml::from_str(text).map_err(|error| RegistriesConfError::Syntax {
        path: path.to_path_buf(),
        message: error.to_string().trim_end().replace('\n', " "),
    })?;
    let v1 = file.registries.as_ref().filter(|v1| {
        !(v1.search.registries.is_empty()
            && v1.insecure.registries.is_empty()
            && v1.block.registries.is_empty())
    });
    let texts = match v1 {
        Some(_) if format == Format::DropIn => {
            return Err(invalid(
                "a drop-in file must be in the v2 format ([[registry]] tables), not v1 \
                 ([registries.search], [registries.insecure], [registries.block])"
                    .into(),
            ));
        }
        Some(_) if !file.registry.is_empty() => {
            return Err(invalid(
                "mixes the v1 format ([registries.*] lists) with v2 [[registry]] tables".into(),
            ));
        }
        Some(v1) => from_v1(v1),
        None => file.registry,
    };
    let mut tables: Vec<RegistryTable> = Vec::new();
    for text in texts {
        let table = check_table(text).map_err(invalid)?;
        // A wildcard table without a location stands for its prefix.
        let key = |t: &RegistryTable| {
            if t.location.is_empty() {
                t.prefix.clone()
            } else {
                t.location.clone()
            }
        };
        if let Some(other) = tables.iter().find(|t| key(t) == key(&table)) {
            for (setting, differs) in [
                ("insecure", other.insecure != table.insecure),
                ("blocked", other.blocked != table.blocked),
            ] {
                if differs {
                    return Err(invalid(format!(
                        "registry {:?} is defined more than once with different {setting:?} settings",
                        key(&table)
                    )));
                }
            }
        }
        if !tables.iter().any(|t| t.prefix == table.prefix) {
            tables.push(table);
        }
    }
    Ok(tables)
}

/// The v1 lists as v2 tables: each registry named, blocked or insecure as listed (search
/// registries are for short names, which are not read).
fn from_v1(v1: &V1Text) -> Vec<TableText> {
    let mut tables: Vec<TableText> = Vec::new();
    let lists = [
        (&v1.block.registries, true),
        (&v1.insecure.registries, false),
    ];
    for (names, blocked) in lists {
        for name in names {
            let index = match tables.iter().position(|t| &t.location == name) {
                Some(index) => index,
                None => {
                    tables.push(TableText {
                        location: name.clone(),
                        ..Default::default()
                    });
                    tables.len() - 1
                }
            };
            if blocked {
                tables[index].blocked = true;
            } else {
                tables[index].insecure = true;
            }
        }
    }
    tables
}

/// A location without a trailing `/`; a URL scheme is refused (a location is `host[:port][/path]`).
fn location(text: &str) -> Result<String, String> {
    let trimmed = text.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Err(format!(
            "location {text:?}: no URL scheme (http:// or https://) is allowed, only \
             host[:port][/path]; insecure = true allows plain HTTP"
        ));
    }
    Ok(trimmed.to_string())
}

/// One table, checked against the format's rules.
fn check_table(text: TableText) -> Result<RegistryTable, String> {
    let location_text = location(&text.location)?;
    let prefix = if text.prefix.is_empty() {
        if location_text.is_empty() {
            return Err("a [[registry]] table has neither prefix nor location".into());
        }
        location_text.clone()
    } else {
        let prefix = location(&text.prefix)?;
        if !prefix.starts_with("*.") && location_text.is_empty() {
            return Err(format!(
                "[[registry]] prefix {prefix:?} has no location (only a *.example.com prefix may leave it out)"
            ));
        }
        prefix
    };
    if prefix.starts_with("*.") && prefix.contains(['/', '@', ':']) {
        return Err(format!(
            "wildcard prefix {prefix:?}: only *.example.com is allowed (no port, path, tag or digest)"
        ));
    }
    if !text.pull_from_mirror.is_empty() {
        return Err(format!(
            "[[registry]] {prefix:?}: pull-from-mirror belongs in a [[registry.mirror]] table, not in the registry's own"
        ));
    }
    let mut mirrors = Vec::new();
    for mirror in text.mirror {
        let mirror_location = location(&mirror.location)?;
        if mirror_location.is_empty() {
            return Err(format!("[[registry]] {prefix:?}: a mirror has no location"));
        }
        if text.mirror_by_digest_only && !mirror.pull_from_mirror.is_empty() {
            return Err(format!(
                "[[registry]] {prefix:?}: mirror-by-digest-only and the pull-from-mirror of mirror \
                 {mirror_location:?} cannot both be set"
            ));
        }
        let serves = match mirror.pull_from_mirror.as_str() {
            "" | "all" => MirrorUse::All,
            "digest-only" => MirrorUse::DigestOnly,
            "tag-only" => MirrorUse::TagOnly,
            other => {
                return Err(format!(
                    "mirror {mirror_location:?}: pull-from-mirror {other:?} is not one of all, digest-only, tag-only"
                ));
            }
        };
        mirrors.push(Mirror {
            location: mirror_location,
            insecure: mirror.insecure,
            serves,
        });
    }
    Ok(RegistryTable {
        prefix,
        location: location_text,
        insecure: text.insecure,
        blocked: text.blocked,
        mirrors,
        mirror_by_digest_only: text.mirror_by_digest_only,
    })
}

#[cfg(test)]
mod tests;
