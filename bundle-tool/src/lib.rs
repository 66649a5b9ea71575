//! `bundle-tool`: OLM packaging for operators.
//!
//! The library holds everything; the `bundle-tool` binary is a thin command line over it.
//! The file-based catalog model lives in the `catalog-model` crate and the registry server in
//! `catalog-server` (re-exported here under their old names); modules each do one job:
//!
//! - [`manifest`]: reading streams of Kubernetes objects (YAML or JSON) with the file and line
//!   each one came from, so that every later error can point at its source.
//! - [`olm_property`]: OLM's property type names and the shapes of their values, for every
//!   module that reads or writes properties.
//! - [`version_range`]: OLM's version range grammar (blang/semver), for `olm.skipRange`.
//! - [`catalog`]: file-based catalogs: the format as written (`declcfg`), one validated
//!   model with every rule of `opm validate` (`model`), and render.
//! - [`validate`]: bundle validation with operator-framework/api's checks and messages.
//! - [`image`]: deterministic OCI bundle images; OCI layouts; push and pull.
//! - [`serve`]: the OLM registry gRPC API over a catalog, like `opm serve`, with hot reload.
//! - [`bundle`]: the registry+v1 bundle layout, generating one from an operator's manifests
//!   (CSV folding) and writing it atomically.
//! - [`durable`]: replacing output files and folders so that a kill leaves the old or the new.
//! - [`go_json`]: JSON text as Go and opm write it (escapes, numbers), for every writer.
//! - [`heap`]: allocator settings for commands that hold whole catalogs, and the server.
//! - [`parallel`]: per-item work on every core, results in input order.
//! - [`audit`]: the capability level a bundle's evidence supports, against the one it declares.
//! - [`action`]: every command of the binary as options with a `run` returning an outcome.
//! - [`location`]: whether a command's argument is a local path or an image reference.
//! - [`olm_run`]: `run`: a bundle installed, upgraded and removed through OLM v0, and why a
//!   step is stuck, read from the cluster.
//! - [`olm_v1`]: what OLM v1's operator-controller makes from a bundle, and the RBAC its
//!   installer ServiceAccount needs.
//! - [`upgrade`]: whether users of one bundle can upgrade to the next (CRD preflight rules,
//!   the upgrade edge, the CSV's changes), for a pair or every edge of a catalog.
//! - [`release`]: one version published end to end (generate, validate, audit, build, the
//!   catalog edit, the images), leaving the catalog and the layout as they were on failure.
//! - [`health_probe`]: `grpc_health_probe` built in, for the catalog image's probes.
//! - [`image_ref`]: image pull-spec checks with the docker reference grammar's messages.
//! - [`go_quote`]: Go's `%q` of a string, for opm's mermaid graphs and the preflight messages.
//! - [`markdown`]: what the Markdown reports share (a table cell).
//! - [`error_chain`]: an error printed with its causes on one line.

pub mod action;
pub mod audit;
pub mod bundle;
pub mod catalog;
pub mod durable;
pub mod error_chain;
pub mod go_quote;
pub mod image;
pub mod location;
pub mod markdown;
pub mod olm_run;
pub mod olm_v1;
pub mod release;
pub mod upgrade;
pub mod validate;

// The crates below this one, under the names the rest of the tool (and its users) know them
// by, as kube re-exports kube-core and kube-client.
pub use catalog_model::{go_json, image_ref, manifest, olm_property, parallel, version_range};
pub use catalog_server::{health_probe, heap, serve};
