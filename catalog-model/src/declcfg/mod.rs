//! The declarative config: FBC documents as written (`document.rs`), read from a folder
//! like opm (`load.rs`, with the typed fast paths `one_pass.rs` and `json.rs`, the reference
//! reader `generic.rs` they fall back to, and `.indexignore` in `ignore.rs`), and written in
//! opm's order (`order.rs`, used by `write.rs` and `spool.rs`).

mod canonical;
mod document;
mod generic;
mod ignore;
mod json;
mod load;
mod one_pass;
mod order;
mod pretty;
mod raw;
mod spool;
mod transcode;
mod write;

pub use load::{
    Join, LoadError, catalog_files, load_dir, load_each, load_file, load_generic, load_str,
};
// The JSON fast paths on their own (`load_str` tries them before `load_generic`), for the
// differential fuzz targets: each returns `false` and adds nothing when it declines a file.
pub use generic::{BundleObjectsError, DocumentError, add_document};
pub use json::load_json as load_json_probing;
pub use one_pass::load_json_one_pass;
pub use pretty::numbers_are_plain;
pub use raw::{Kind, RawJson};
pub use spool::{JsonSpool, RenderedDocuments, SpoolIndex, SpoolText, StoredDocuments};
pub use write::{to_json, to_yaml, write_json};

pub use document::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Deprecation, DeprecationEntry, Icon, Meta,
    Package, PackageScopedReference, Property, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
