//! A blob of an image with its digest and size, its bytes in memory or in a file of the
//! layer cache that is read, and checked against the digest, only when they are needed.
//!
//! A catalog image's server layer is ~10 MB: a warm release finds it in the layer cache, and
//! then needs its bytes only if the registry has to be sent it (not when it is there already
//! or can be mounted from another repository) or the OCI layout lacks it. Reading and hashing
//! it anyway was ~14 % of a warm release's samples (docs/benchmarks.md, `release`).

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

/// A blob: digest, size, and the bytes, now or on demand.
#[derive(Clone, Debug)]
pub struct Blob {
    digest: String,
    size: u64,
    content: Content,
}

#[derive(Clone, Debug)]
enum Content {
    Loaded(Bytes),
    File(Arc<LazyFile>),
}

#[derive(Debug)]
struct LazyFile {
    path: PathBuf,
    loaded: OnceLock<Result<Bytes, CachedBlobError>>,
}

/// Why a cached blob's file could not be used; kept with the file, so it is cloned to every
/// caller that asks (the I/O error is shared, `std::io::Error` is not `Clone`).
#[derive(Clone, Debug, thiserror::Error)]
enum CachedBlobError {
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: Arc<io::Error>,
    },
    /// The file does not hold the blob it is named for.
    #[error("{}: the cached layer {digest} is damaged (removed; run again to build it anew)", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The digest it should have.
        digest: String,
    },
}

/// Two blobs are the same blob when their digests are (and so their sizes).
impl PartialEq for Blob {
    fn eq(&self, other: &Blob) -> bool {
        self.digest == other.digest && self.size == other.size
    }
}

impl Eq for Blob {}

impl Blob {
    /// `bytes`, hashed now.
    pub fn new(bytes: impl Into<Bytes>) -> Blob {
        let bytes = bytes.into();
        Blob {
            digest: super::digest(&bytes),
            size: bytes.len() as u64,
            content: Content::Loaded(bytes),
        }
    }

    /// `bytes` whose `sha256:…` digest the caller has just computed or checked.
    pub(super) fn with_digest(digest: String, bytes: impl Into<Bytes>) -> Blob {
        let bytes = bytes.into();
        debug_assert!(digest.starts_with("sha256:"));
        Blob {
            digest,
            size: bytes.len() as u64,
            content: Content::Loaded(bytes),
        }
    }

    /// The file at `path`, said to hold `size` bytes with digest `digest`: read when its
    /// bytes are first asked for, and refused then (and removed: it is a cache entry) unless
    /// it does hold them.
    pub(super) fn in_file(digest: String, size: u64, path: PathBuf) -> Blob {
        debug_assert!(digest.starts_with("sha256:"));
        Blob {
            digest,
            size,
            content: Content::File(Arc::new(LazyFile {
                path,
                loaded: OnceLock::new(),
            })),
        }
    }

    /// `sha256:…` of the bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The number of bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The bytes (a cheap handle; a file is read and checked once).
    pub fn bytes(&self) -> io::Result<Bytes> {
        match &self.content {
            Content::Loaded(bytes) => Ok(bytes.clone()),
            Content::File(file) => file
                .loaded
                .get_or_init(|| self.read_checked(&file.path))
                .clone()
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error)),
        }
    }

    fn read_checked(&self, path: &std::path::Path) -> Result<Bytes, CachedBlobError> {
        let bytes = std::fs::read(path).map_err(|error| CachedBlobError::Read {
            path: path.to_path_buf(),
            error: Arc::new(error),
        })?;
        if bytes.len() as u64 == self.size && super::digest(&bytes) == self.digest {
            return Ok(Bytes::from(bytes));
        }
        // A damaged cache entry: gone, so that the next run builds the layer again.
        let _ = std::fs::remove_file(path);
        Err(CachedBlobError::Damaged {
            path: path.to_path_buf(),
            digest: self.digest.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_when_asked_and_refused_unless_it_holds_the_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blob");
        std::fs::write(&path, b"layer bytes").unwrap();
        let good = Blob::new(&b"layer bytes"[..]);
        let lazy = Blob::in_file(good.digest().to_string(), good.size(), path.clone());
        assert_eq!(lazy, good);
        assert_eq!(&lazy.bytes().unwrap()[..], b"layer bytes");
        // Read once: a later change of the file is not seen by this blob.
        std::fs::write(&path, b"layer bytez").unwrap();
        assert_eq!(&lazy.bytes().unwrap()[..], b"layer bytes");
        let damaged = Blob::in_file(good.digest().to_string(), good.size(), path.clone());
        let error = damaged.bytes().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("damaged"), "{error}");
        assert!(!path.exists(), "a damaged entry is removed");
        let missing = Blob::in_file(good.digest().to_string(), good.size(), path);
        assert!(missing.bytes().is_err());
    }
}
