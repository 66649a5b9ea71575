//! Reading Kubernetes objects from files, folders and streams.
//!
//! Every object keeps the [`SourceLocation`] it came from: the validators, the bundle
//! generator and the catalog loader all report problems by file and line.

mod object;
mod stream;
pub mod yaml;

pub use object::{KubeObject, NotAnObject, ObjectRef, text};
pub use stream::{
    Document, ManifestError, SourceLocation, read_path, read_stream, read_stream_generic,
};
