//! The `olm.template.basic` template: a list of FBC documents written by hand, where an
//! `olm.bundle` may be just `{schema, image}` and is replaced by the rendered bundle, as
//! `opm alpha render-template basic` does. Channels and edges are the author's; nothing is
//! validated here (`catalog validate` does that on the result).

use serde_json::Value;

use super::TemplateError;
use super::go_decode::GoObject;
use crate::catalog::bundle_source::BundleSources;
use crate::catalog::declcfg::{DeclarativeConfig, add_document};

/// The template's `schema`.
pub const SCHEMA: &str = "olm.template.basic";

/// Renders the template document: its entries loaded like catalog documents, every bundle
/// rendered from its image.
pub fn render(
    document: &Value,
    sources: &BundleSources,
) -> Result<DeclarativeConfig, TemplateError> {
    let top =
        GoObject::new(document, "basic.BasicTemplateData").map_err(TemplateError::BasicDecode)?;
    let entries = top
        .list("entries", "*declcfg.Meta")
        .map_err(TemplateError::BasicDecode)?;
    let schema = top.string("schema").map_err(TemplateError::BasicDecode)?;
    if schema != SCHEMA {
        return Err(TemplateError::BasicSchema(schema));
    }
    let mut config = DeclarativeConfig::default();
    for entry in entries {
        add_document(entry.clone(), &mut config)?;
    }
    let mut rendered = Vec::with_capacity(config.bundles.len());
    for bundle in &config.bundles {
        // Only a bare reference is expanded; a bundle written out in full is a mistake opm
        // refuses rather than silently keeps.
        let bare = !bundle.schema.is_empty()
            && !bundle.image.is_empty()
            && bundle.package.is_empty()
            && bundle.properties.is_empty()
            && bundle.related_images.is_empty();
        if !bare {
            return Err(TemplateError::BasicBundleFields);
        }
        rendered.push(sources.render_image(&bundle.image)?);
    }
    config.bundles = rendered;
    Ok(config)
}
