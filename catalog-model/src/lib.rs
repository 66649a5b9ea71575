//! `catalog-model`: OLM's file-based catalogs as data, with no network, runtime or CLI.
//!
//! The lowest crate of the workspace. The catalog server (`catalog-server`) serves what this
//! crate loads; `bundle-tool` renders, edits, validates and releases with it. Modules:
//!
//! - [`declcfg`]: the format as written — `olm.package`, `olm.channel`, `olm.bundle`,
//!   `olm.deprecations` and any other schema kept as is; loading a folder the way `opm` walks
//!   it, and writing JSON or YAML the way `opm render` does.
//! - [`model`]: one validated model — packages, channels, bundles, the upgrade graph — with
//!   every rule of `opm validate` in one place and opm's messages.
//! - [`manifest`]: reading streams of Kubernetes objects (YAML or JSON) with the file and line
//!   each one came from, so that every later error can point at its source.
//! - [`olm_property`]: OLM's property type names and the shapes of their values.
//! - [`version_range`]: OLM's version range grammar (blang/semver), for `olm.skipRange`.
//! - [`image_ref`]: image pull-spec checks with the docker reference grammar's messages.
//! - [`go_json`]: JSON text as Go and opm write it (escapes, numbers), for every writer.
//! - [`parallel`]: per-item work on every core, results in input order.
//! - [`bundle_mapping`]: `--bundle-source REF=DIR`, a folder standing in for a bundle image.

pub mod bundle_mapping;
pub mod declcfg;
pub mod go_json;
pub mod image_ref;
pub mod manifest;
pub mod model;
pub mod olm_property;
pub mod parallel;
pub mod version_range;
