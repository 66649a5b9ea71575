//! `bundle-tool catalog validate` and `catalog render`; template, add, deprecate and graph
//! have files of their own (`catalog_template.rs`, `catalog_edit.rs`, `catalog_graph.rs`).

use std::path::PathBuf;

use super::{Action, ActionError, Outcome, Output, Status, pulled};
use crate::catalog::declcfg::{self, DeclarativeConfig, JsonSpool, RenderedDocuments};
use crate::catalog::render::{is_bundle_dir, render_bundle_dir};
use crate::location::Location;

/// `bundle-tool catalog validate`.
#[derive(Debug, clap::Args)]
pub struct CatalogValidateArgs {
    /// The catalog folder.
    pub dir: PathBuf,
}

impl Action for CatalogValidateArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        Ok(match crate::catalog::model::validate_dir(&self.dir) {
            Ok((valid, model)) => Outcome::line(format!(
                "{}: valid ({} packages, {} channel entries)",
                self.dir.display(),
                valid.packages,
                valid.channel_entries
            ))
            .keeping(model),
            // opm's message or tree, as opm prints it (no `error:` prefix).
            Err(error) => Outcome::failure(vec![error.to_string()]),
        })
    }
}

/// `catalog render` output formats.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RenderFormat {
    /// opm's JSON stream.
    Json,
    /// opm's YAML documents.
    Yaml,
}

/// `bundle-tool catalog render`.
#[derive(Debug, clap::Args)]
pub struct CatalogRenderArgs {
    /// Catalog folders, bundle folders (with `manifests/` and `metadata/`), or catalog and
    /// bundle image references.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "json")]
    pub output: RenderFormat,
    /// How to reach registries: plain HTTP, or HTTPS and the CAs it trusts.
    #[command(flatten)]
    pub transport: super::TransportArgs,
}

impl Action for CatalogRenderArgs {
    fn run(&self) -> Result<Outcome, ActionError> {
        let mut all = DeclarativeConfig::default();
        let mut spool = JsonSpool::new();
        let json = matches!(self.output, RenderFormat::Json);
        // Pulled images' folders live until everything is rendered.
        let mut pulled_images = Vec::new();
        for argument in &self.dirs {
            let (dir, image) = match Location::of_path(argument)? {
                Location::Local(dir) => (dir, String::new()),
                Location::Image(reference) => {
                    let image = pulled(&reference, &self.transport.transport())?;
                    let root = image.root().to_path_buf();
                    pulled_images.push(image);
                    (root, reference)
                }
            };
            if is_bundle_dir(&dir) {
                let bundle = render_bundle_dir(&dir, &image)
                    .map_err(|e| ActionError::message(format!("{}: {e}", argument.display())))?;
                if json {
                    let config = DeclarativeConfig {
                        bundles: vec![bundle],
                        ..Default::default()
                    };
                    spool.append(RenderedDocuments::of(&config)?)?;
                } else {
                    all.bundles.push(bundle);
                }
                continue;
            }
            if !image.is_empty() && !dir.is_dir() {
                return Err(ActionError::message(format!(
                    "{}: neither a bundle nor a catalog image",
                    argument.display()
                )));
            }
            if json {
                spool_catalog(&dir, &mut spool)?;
            } else {
                all.append(declcfg::load_dir(&dir)?);
            }
        }
        let output = if json {
            Output::Spool(spool)
        } else {
            Output::Text(declcfg::to_yaml(&all))
        };
        Ok(Outcome {
            output,
            notes: Vec::new(),
            status: Status::Success,
            loaded: None,
        }
        .keeping(all))
    }
}

/// Renders a catalog folder file by file, each written out as soon as it is parsed (see
/// `declcfg::spool`), so memory does not grow with the catalog.
fn spool_catalog(dir: &std::path::Path, spool: &mut JsonSpool) -> Result<(), ActionError> {
    let (text, index) = spool.parts();
    // Workers store the text themselves and hand back only where it is, so files can be
    // rendered in any order: largest first.
    let render_file = |_: &std::path::Path, config: DeclarativeConfig| {
        Ok::<_, ActionError>(text.store(RenderedDocuments::of(&config)?)?)
    };
    declcfg::load_each(dir, declcfg::Join::AsParsed, render_file, |stored| {
        index.append(stored);
        Ok(())
    })
}
