//! Catalog templates, rendered into FBC the way `opm alpha render-template` renders them:
//! [`basic`] (hand-written documents with bundles by image) and [`semver`] (channels and
//! edges generated from bundle versions). Bundle images are rendered through
//! [`BundleSources`], so a template can be rendered from local bundle folders
//! (`--bundle-source REF=DIR`) before the images exist.

pub mod basic;
mod error;
mod go_decode;
pub mod semver;

pub use error::{BundleInfoError, TemplateError};
pub use go_decode::GoDecodeError;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::bundle_source::BundleSources;
use super::declcfg::{DeclarativeConfig, to_json, to_yaml};
use crate::manifest::read_stream;

/// The template kinds, named as opm's `render-template` TYPE argument names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateKind {
    /// `olm.template.basic`.
    Basic,
    /// `olm.semver`.
    Semver,
}

impl TemplateKind {
    fn from_type(name: &str) -> Option<TemplateKind> {
        match name {
            "basic" => Some(TemplateKind::Basic),
            "semver" => Some(TemplateKind::Semver),
            _ => None,
        }
    }

    fn from_schema(schema: &str) -> Option<TemplateKind> {
        match schema {
            basic::SCHEMA => Some(TemplateKind::Basic),
            semver::SCHEMA => Some(TemplateKind::Semver),
            _ => None,
        }
    }
}

/// How a rendered catalog is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CatalogFormat {
    /// opm's JSON stream (4-space indent).
    #[default]
    Json,
    /// opm's YAML documents.
    Yaml,
}

impl CatalogFormat {
    /// `config` written in this format, in opm's document order.
    pub fn write(self, config: &DeclarativeConfig) -> String {
        match self {
            CatalogFormat::Json => to_json(config),
            CatalogFormat::Yaml => to_yaml(config),
        }
    }
}

/// How a rendered template is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TemplateFormat {
    /// opm's JSON stream.
    #[default]
    Json,
    /// opm's YAML documents.
    Yaml,
    /// The upgrade graph as mermaid, with OLMv0 semantics (as opm's `-o mermaid`).
    Mermaid,
}

/// Runs `catalog template`: the rendered catalog as text, or an error naming the file.
/// `args` is `[TYPE] FILE` as given (the type detected from the file's `schema` when left
/// out; `-` for standard input); bundle images are pulled over `transport` unless `bundle_sources` (`REF=DIR`) maps them to folders.
pub fn run(
    args: &[String],
    output: TemplateFormat,
    transport: &crate::image::Transport,
    bundle_sources: &[String],
) -> Result<String, TemplateError> {
    let (kind, file) = match args {
        [file] => match TemplateKind::from_type(file) {
            Some(kind) => (Some(kind), "-".to_string()),
            None => (None, file.clone()),
        },
        [kind, file] => (
            Some(
                TemplateKind::from_type(kind)
                    .ok_or_else(|| TemplateError::InvalidType(kind.clone()))?,
            ),
            file.clone(),
        ),
        _ => return Err(TemplateError::Usage),
    };
    let mut sources = BundleSources::new(transport.clone());
    for spec in bundle_sources {
        sources.add_mapping(spec, Path::new(""))?;
    }
    let path = PathBuf::from(&file);
    let config = render_file(kind, &path, &sources)?;
    Ok(match output {
        TemplateFormat::Json => CatalogFormat::Json.write(&config),
        TemplateFormat::Yaml => CatalogFormat::Yaml.write(&config),
        TemplateFormat::Mermaid => {
            let graph =
                super::graph::UpgradeGraph::from_declcfg(&config, None).map_err(|error| {
                    TemplateError::WritingGraph {
                        path: path.clone(),
                        error,
                    }
                })?;
            super::graph::mermaid::write(&graph, true)
        }
    })
}

/// Reads and renders the template at `path` (`-` is standard input); `kind` `None` detects
/// the type from the first document's `schema`.
pub fn render_file(
    kind: Option<TemplateKind>,
    path: &Path,
    sources: &BundleSources,
) -> Result<DeclarativeConfig, TemplateError> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(TemplateError::Stdin)?
    } else {
        std::fs::read_to_string(path).map_err(|error| TemplateError::Open {
            path: path.to_path_buf(),
            error,
        })?
    };
    let named = |error: TemplateError| TemplateError::In {
        path: path.to_path_buf(),
        error: Box::new(error),
    };
    // Like opm, only the first document of the file is the template.
    let document = read_stream(path, &text)?
        .into_iter()
        .next()
        .map(|d| d.value)
        .unwrap_or(Value::Null);
    let kind = match kind {
        Some(kind) => kind,
        None => {
            // Go's decoder: `Schema:` is found as well as `schema:`.
            let schema = go_decode::GoObject::new(&document, "struct { Schema string }")
                .and_then(|o| o.string("schema"))
                .map_err(|e| named(TemplateError::DetectDecode(e)))?;
            if schema.is_empty() {
                return Err(named(TemplateError::DetectMissing));
            }
            TemplateKind::from_schema(&schema)
                .ok_or_else(|| named(TemplateError::DetectUnknown(schema.clone())))?
        }
    };
    let rendered = match kind {
        TemplateKind::Basic => basic::render(&document, sources),
        TemplateKind::Semver => semver::parse(&document)
            .map_err(|e| TemplateError::ReadFile(Box::new(e)))
            .and_then(|template| semver::render(&template, sources)),
    };
    rendered.map_err(|e| named(TemplateError::Rendering(Box::new(e))))
}
