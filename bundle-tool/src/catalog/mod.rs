//! File-based catalogs (FBC), following operator-registry's split:
//!
//! - [`declcfg`]: the format as written — `olm.package`, `olm.channel`, `olm.bundle`,
//!   `olm.deprecations` and any other schema kept as is; loading a folder the way `opm` walks
//!   it, and writing JSON or YAML the way `opm render` does.
//! - [`model`]: one validated model — packages, channels, bundles, the upgrade graph — with
//!   every rule of `opm validate` in one place and opm's messages.
//!
//! Actions over them each have a file: [`render`] (bundle folder → `olm.bundle`),
//! [`bundle_source`] (bundle image references → rendered bundles, pulled or from local
//! folders), [`template`] (`olm.template.basic` and `olm.semver` → FBC), [`add`] and
//! [`deprecate`] (release edits of one package's file, through [`package_file`]), [`graph`]
//! (the upgrade graph as mermaid or HTML).

pub mod add;
pub mod bundle_source;
pub mod deprecate;
pub mod graph;
pub mod package_file;
pub mod render;
pub mod template;

// The format and the model are the `catalog-model` crate, shared with the catalog server.
pub use catalog_model::{declcfg, model};
