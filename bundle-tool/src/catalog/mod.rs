//! File-based catalogs (FBC), following operator-registry's split:
//!
//! - [`declcfg`]: the format as written — `olm.package`, `olm.channel`, `olm.bundle`,
//!   `olm.deprecations` and any other schema kept as is; loading a folder the way `opm` walks
//!   it, and writing JSON or YAML the way `opm render` does.
//! - [`model`]: one validated model — packages, channels, bundles, the upgrade graph — with
//!   every rule of `opm validate` in one place and opm's messages.

pub mod declcfg;
pub mod model;
pub mod render;
