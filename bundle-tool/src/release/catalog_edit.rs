//! The catalog's side of a release: finding an already released version, and staging the
//! new catalog files (in a copy of the catalog folder, so the catalog image can be built and
//! validated before anything in the real folder changes).
//!
//! A catalog with an `olm.semver` `template.yaml` (the Redis operator's) is edited through
//! the template, which stays the source of truth: the bundle image is appended to the
//! archetype lists of the requested channels and the template is rendered again — the
//! catalog's own bundles from the catalog itself, the new one from the generated folder, so
//! nothing is pulled — into the package's file. The result is what `catalog template` makes
//! of the edited template, so the two cannot drift. A catalog without a template gets
//! `catalog add`'s edit: the new bundle replaces each channel's head.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Plan, ReleaseError};
use crate::catalog::add::{Replaces, add_bundle, current_head};
use crate::catalog::bundle_source::BundleSources;
use crate::catalog::declcfg::{Bundle, DeclarativeConfig, load_dir};
use crate::catalog::package_file::PackageFile;
use crate::catalog::template::{CatalogFormat, TemplateError, semver};
use crate::manifest::{ManifestError, read_stream};

/// The template file a catalog folder may hold.
pub const TEMPLATE_FILE: &str = "template.yaml";

/// The bundle named `name` in the catalog folder, if the folder exists and has it.
pub fn released_bundle(catalog: &Path, name: &str) -> Result<Option<Bundle>, ReleaseError> {
    if !catalog.exists() {
        return Ok(None);
    }
    let config = load_dir(catalog).map_err(|e| ReleaseError::Catalog {
        path: catalog.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(config.bundles.into_iter().find(|b| b.name == name))
}

/// The catalog's channels of `package` that contain `name`, each with that entry's
/// `skipRange`.
pub fn channels_with(catalog: &Path, package: &str, name: &str) -> Vec<(String, String)> {
    let Ok(config) = load_dir(catalog) else {
        return Vec::new();
    };
    config
        .channels
        .iter()
        .filter(|c| c.package == package)
        .filter_map(|c| {
            let entry = c.entries.iter().find(|e| e.name == name)?;
            Some((c.name.clone(), entry.skip_range.clone()))
        })
        .collect()
}

/// Each channel of `package` in `config` and its head (`""` when it has none or several).
pub fn heads(config: &DeclarativeConfig, package: &str) -> BTreeMap<String, String> {
    config
        .channels
        .iter()
        .filter(|c| c.package == package)
        .map(|c| {
            let head = current_head(c).ok().flatten().unwrap_or_default();
            (c.name.clone(), head)
        })
        .collect()
}

/// The catalog as it will be: a copy of the folder with the new files in place.
pub struct StagedCatalog {
    /// The copy (removed when dropped), until [`StagedCatalog::take_copy`].
    pub(super) copy: Option<tempfile::TempDir>,
    /// The real files to write and their new content, in the order to write them.
    pub files: Vec<(PathBuf, String)>,
    /// The channels' heads after the edit.
    pub heads: BTreeMap<String, String>,
    /// How the edit was made, for the summary.
    pub how: String,
}

impl StagedCatalog {
    /// The staged copy of the catalog folder (empty once taken).
    pub fn copy_path(&self) -> &Path {
        self.copy.as_ref().map_or(Path::new(""), |copy| copy.path())
    }

    /// The copy, for a caller done reading it to remove where it costs nothing.
    pub fn take_copy(&mut self) -> Option<tempfile::TempDir> {
        self.copy.take()
    }
}

/// Stages adding `bundle` to the catalog.
pub fn stage(plan: &Plan, bundle: Bundle) -> Result<StagedCatalog, ReleaseError> {
    let catalog = &plan.catalog_dir;
    let failed = |path: &Path, error: &dyn std::fmt::Display| ReleaseError::Catalog {
        path: path.to_path_buf(),
        message: error.to_string(),
    };
    let mut file =
        PackageFile::open_or_new(catalog, &plan.package).map_err(|e| failed(catalog, &e))?;
    let template_path = catalog.join(TEMPLATE_FILE);
    let mut files = Vec::new();
    let how;
    if template_path.is_file() {
        let template_text =
            std::fs::read_to_string(&template_path).map_err(|e| failed(&template_path, &e))?;
        let edited = edit_template(plan, &template_text, &mut file.config, bundle)
            .map_err(|e| failed(&template_path, &e))?;
        how = format!(
            "appended to {} and rendered into {}",
            template_path.display(),
            file.path.display()
        );
        let content = file
            .validated_content()
            .map_err(|e| failed(&file.path, &e))?;
        files.push((file.path.clone(), content));
        files.push((template_path, edited));
    } else {
        let skip_range = plan.skip_range.as_deref().unwrap_or_default();
        add_bundle(
            &mut file.config,
            bundle,
            &plan.channels,
            &Replaces::Auto,
            skip_range,
        )
        .map_err(|e| failed(&file.path, &e))?;
        how = format!("catalog add into {}", file.path.display());
        let content = file
            .validated_content()
            .map_err(|e| failed(&file.path, &e))?;
        files.push((file.path.clone(), content));
    }
    let heads = heads(&file.config, &plan.package);
    let copy = copy_with(catalog, &files).map_err(|e| failed(catalog, &e))?;
    Ok(StagedCatalog {
        copy: Some(copy),
        files,
        heads,
        how,
    })
}

/// Why the catalog's `template.yaml` cannot take the release.
#[derive(Debug, thiserror::Error)]
pub enum TemplateEditError {
    /// The release asks for a skipRange, which an `olm.semver` template cannot carry.
    #[error(
        "an olm.semver template derives every edge from the versions and has no skipRange; drop release.skipRange / --skip-range for this catalog, or release into a catalog without a template"
    )]
    SkipRange,
    /// The template file is not a YAML or JSON document.
    #[error(transparent)]
    Read(#[from] ManifestError),
    /// The template is not an `olm.semver` template opm would render, or does not render.
    #[error(transparent)]
    Template(#[from] Box<TemplateError>),
    /// The version is not semver (blang/semver's message).
    #[error("{0}")]
    Version(String),
    /// A channel asked for is not one the template puts this version in.
    #[error(
        "channel {channel:?} is not one this template generates for version {version}; it can put it in {}",
        possible.join(", ")
    )]
    Channel {
        /// The channel asked for.
        channel: String,
        /// The version released.
        version: String,
        /// The channels the template would put it in.
        possible: Vec<String>,
    },
    /// The template does not render from the catalog's own bundles.
    #[error("rendering the template from the catalog's own bundles: {0}")]
    RenderFromCatalog(Box<TemplateError>),
    /// The package file is not what the template renders.
    #[error(
        "the catalog's {0} package is not what this template renders (edited by hand?); re-render it with `bundle-tool catalog template` first"
    )]
    EditedByHand(String),
    /// The image could not be appended by editing the text.
    #[error(
        "could not append {image} to the {archetype} list by editing the file's text (an unusual layout?); add it by hand"
    )]
    Append {
        /// The bundle image.
        image: String,
        /// The list.
        archetype: String,
    },
}

impl From<TemplateError> for TemplateEditError {
    fn from(error: TemplateError) -> Self {
        TemplateEditError::Template(Box::new(error))
    }
}

/// Edits the template for `bundle` and replaces `package` (the package file's documents)
/// with its rendering; the template's new text.
fn edit_template(
    plan: &Plan,
    text: &str,
    package: &mut DeclarativeConfig,
    bundle: Bundle,
) -> Result<String, TemplateEditError> {
    if plan.skip_range.is_some() {
        return Err(TemplateEditError::SkipRange);
    }
    let template = parse_template(text)?;
    let version =
        crate::version_range::parse_version(&plan.version).map_err(TemplateEditError::Version)?;
    let placements = template.channels_for(&version);
    let mut archetypes: Vec<&str> = Vec::new();
    for channel in &plan.channels {
        let Some((archetype, _)) = placements.iter().find(|(_, name)| name == channel) else {
            return Err(TemplateEditError::Channel {
                channel: channel.clone(),
                version: plan.version.clone(),
                possible: placements.iter().map(|(_, n)| n.clone()).collect(),
            });
        };
        if !archetypes.contains(archetype) {
            archetypes.push(archetype);
        }
    }
    // Known bundles render as the catalog has them: offline, and exactly what is released.
    let mut sources = BundleSources::new(Default::default());
    for known in &package.bundles {
        sources.add_rendered(known.clone());
    }
    // A first release: a template with no bundle yet renders nothing to compare with.
    let first_release = package.bundles.is_empty()
        && ["candidate", "fast", "stable"]
            .iter()
            .all(|archetype| template.images(archetype).is_empty());
    if !first_release {
        let before = semver::render(&template, &sources)
            .map_err(|e| TemplateEditError::RenderFromCatalog(Box::new(e)))?;
        if CatalogFormat::Json.write(&before) != CatalogFormat::Json.write(package) {
            return Err(TemplateEditError::EditedByHand(plan.package.clone()));
        }
    }
    let image = bundle.image.clone();
    let mut edited = text.to_string();
    for archetype in &archetypes {
        edited = append_image(&edited, archetype, &image);
    }
    let reparsed = parse_template(&edited)?;
    for archetype in ["candidate", "fast", "stable"] {
        let mut expected = template.images(archetype).to_vec();
        if archetypes.contains(&archetype) {
            expected.push(image.clone());
        }
        if reparsed.images(archetype) != expected {
            return Err(TemplateEditError::Append {
                image: image.clone(),
                archetype: archetype.to_string(),
            });
        }
    }
    sources.add_rendered(bundle);
    *package = semver::render(&reparsed, &sources)?;
    Ok(edited)
}

fn parse_template(text: &str) -> Result<semver::SemverTemplate, TemplateEditError> {
    let document = read_stream(Path::new(TEMPLATE_FILE), text)?
        .into_iter()
        .next()
        .map(|d| d.value)
        .unwrap_or_default();
    Ok(semver::parse(&document)?)
}

/// `text` with `- image: IMAGE` appended to `archetype`'s `bundles` list, keeping every
/// other line (and comment) as it is; a missing archetype is added at the end.
pub fn append_image(text: &str, archetype: &str, image: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let top_level = |line: &str| {
        !line.is_empty() && !line.starts_with([' ', '\t', '#', '-']) && !line.starts_with("...")
    };
    let Some(start) = lines
        .iter()
        .position(|l| l.trim_end() == format!("{archetype}:"))
    else {
        lines.extend([
            format!("{archetype}:"),
            "  bundles:".into(),
            format!("  - image: {image}"),
        ]);
        return lines.join("\n") + "\n";
    };
    let end = (start + 1..lines.len())
        .find(|&i| top_level(&lines[i]))
        .unwrap_or(lines.len());
    let bundles = (start + 1..end).find(|&i| lines[i].trim() == "bundles:");
    match bundles {
        None => {
            lines.insert(start + 1, "  bundles:".into());
            lines.insert(start + 2, format!("  - image: {image}"));
        }
        Some(at) => {
            let indent: String =
                match (at + 1..end).find(|&i| lines[i].trim_start().starts_with("- ")) {
                    Some(item) => lines[item].chars().take_while(|c| *c == ' ').collect(),
                    None => lines[at].chars().take_while(|c| *c == ' ').collect(),
                };
            // After the list's last line (trailing blank lines and comments stay after it).
            let last = (at + 1..end)
                .rev()
                .find(|&i| {
                    let trimmed = lines[i].trim_start();
                    !trimmed.is_empty() && !trimmed.starts_with('#')
                })
                .unwrap_or(at);
            lines.insert(last + 1, format!("{indent}- image: {image}"));
        }
    }
    lines.join("\n") + "\n"
}

/// A temporary copy of the catalog folder (empty if it does not exist yet) with `files`
/// written into it at the same relative places.
fn copy_with(catalog: &Path, files: &[(PathBuf, String)]) -> std::io::Result<tempfile::TempDir> {
    let copy = tempfile::Builder::new()
        .prefix("bundle-tool-release-catalog-")
        .tempdir()?;
    if catalog.exists() {
        // The files about to be written are not copied first (catalog.json is most of it).
        let replaced: Vec<&Path> = files.iter().map(|(path, _)| path.as_path()).collect();
        copy_tree(catalog, copy.path(), &replaced)?;
    }
    for (path, content) in files {
        let relative = path.strip_prefix(catalog).map_err(std::io::Error::other)?;
        let target = copy.path().join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, content)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", target.display())))?;
    }
    Ok(copy)
}

/// Copies the tree `from` into `to`, but for the files named in `except`.
fn copy_tree(from: &Path, to: &Path, except: &[&Path]) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target, except)?;
        } else if except.contains(&entry.path().as_path()) {
            continue;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::append_image;

    const TEMPLATE: &str = "# comment\nschema: olm.semver\ncandidate:\n  bundles:\n  - image: r:v0.1.0\n  - image: r:v0.2.0\nstable:\n  bundles:\n  - image: r:v0.1.0\n";

    #[test]
    fn an_image_goes_after_the_last_item_of_its_archetype_and_nothing_else_moves() {
        assert_eq!(
            append_image(TEMPLATE, "candidate", "r:v0.3.0"),
            "# comment\nschema: olm.semver\ncandidate:\n  bundles:\n  - image: r:v0.1.0\n  - image: r:v0.2.0\n  - image: r:v0.3.0\nstable:\n  bundles:\n  - image: r:v0.1.0\n"
        );
        assert_eq!(
            append_image(TEMPLATE, "stable", "r:v0.3.0"),
            TEMPLATE.to_string() + "  - image: r:v0.3.0\n"
        );
        assert_eq!(
            append_image(TEMPLATE, "fast", "r:v0.3.0"),
            TEMPLATE.to_string() + "fast:\n  bundles:\n  - image: r:v0.3.0\n"
        );
    }
}
