//! Bulky, rarely read parts of a snapshot (CSV metadata, inline manifests, the documents of
//! the HTTP view) written to an unnamed temporary file and read back on request.
//!
//! opm keeps the same parts in an on-disk cache; here the file lives exactly as long as its
//! snapshot (it is unlinked from the start, so nothing can go stale or leak), and the kernel's
//! page cache, not the process, holds what is hot.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

/// Where one blob is in a [`SpillFile`].
#[derive(Clone, Copy, Debug, Default)]
pub struct BlobRef {
    offset: u64,
    length: u32,
}

impl BlobRef {
    /// The blob's size in bytes.
    pub fn len(&self) -> usize {
        self.length as usize
    }

    /// Whether the blob is empty.
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// This blob and the `next.len()` bytes after it, for a blob written right after this
    /// one (`next` may be elsewhere: only its length counts). `None` past 4 GiB.
    pub fn followed_by(self, next: BlobRef) -> Option<BlobRef> {
        Some(BlobRef {
            offset: self.offset,
            length: self.length.checked_add(next.length)?,
        })
    }
}

/// Blobs from this size on are large ([`SpillFile::drop_pages_once_written`]).
const LARGE_BLOB: usize = 8 << 10;

/// An anonymous file in memory: the pages count against the process's memory cgroup as the
/// page cache of a disk file would.
fn memory_file() -> std::io::Result<File> {
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a NUL-terminated literal; a non-negative result is a new descriptor
    // that nothing else owns.
    let fd = unsafe { libc::memfd_create(c"bundle-tool-spill".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Collects blobs while a snapshot is built.
pub struct SpillWriter {
    writer: BufWriter<File>,
    file: File,
    offset: u64,
    /// The bytes in blobs of at least [`LARGE_BLOB`] bytes.
    large: u64,
}

/// The blobs of a built snapshot; more can be appended while it is served (results computed
/// on first request).
#[derive(Debug)]
pub struct SpillFile {
    file: File,
    end: std::sync::Mutex<u64>,
    /// As in [`SpillWriter`].
    large: u64,
}

impl SpillWriter {
    /// A new, empty, already unlinked temporary file; in memory (`memfd_create`) where no
    /// temporary folder is writable, as in a catalog pod with a read-only root file system.
    pub fn new() -> std::io::Result<Self> {
        let file = match tempfile::tempfile() {
            Ok(file) => file,
            Err(on_disk) => memory_file().map_err(|in_memory| {
                std::io::Error::other(format!(
                    "no temporary file for the catalog's bulky parts: {on_disk} (and in memory: {in_memory})"
                ))
            })?,
        };
        Self::to_file(file)
    }

    fn to_file(file: File) -> std::io::Result<Self> {
        Ok(SpillWriter {
            writer: BufWriter::with_capacity(1 << 20, file.try_clone()?),
            file,
            offset: 0,
            large: 0,
        })
    }

    /// Appends a blob.
    pub fn append(&mut self, bytes: &[u8]) -> std::io::Result<BlobRef> {
        let length = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
        self.writer.write_all(bytes)?;
        let blob = BlobRef {
            offset: self.offset,
            length,
        };
        if bytes.len() >= LARGE_BLOB {
            self.large += u64::from(length);
        }
        self.offset += u64::from(length);
        Ok(blob)
    }

    /// Flushes and closes the writing side.
    pub fn finish(mut self) -> std::io::Result<SpillFile> {
        self.writer.flush()?;
        Ok(SpillFile {
            file: self.file,
            end: std::sync::Mutex::new(self.offset),
            large: self.large,
        })
    }
}

impl SpillFile {
    /// Reads a blob.
    pub fn read(&self, blob: BlobRef) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.read_into(blob, &mut bytes)?;
        Ok(bytes)
    }

    /// Reads a blob that was written from a `str`.
    pub fn read_string(&self, blob: BlobRef) -> std::io::Result<String> {
        String::from_utf8(self.read(blob)?).map_err(std::io::Error::other)
    }

    /// Appends a blob to the served file.
    pub fn append(&self, bytes: &[u8]) -> std::io::Result<BlobRef> {
        let length = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
        let mut end = self.end.lock().unwrap_or_else(|p| p.into_inner());
        self.file.write_all_at(bytes, *end)?;
        let blob = BlobRef {
            offset: *end,
            length,
        };
        *end += u64::from(length);
        Ok(blob)
    }

    /// Appends a blob's bytes to `out`.
    pub fn read_into(&self, blob: BlobRef, out: &mut Vec<u8>) -> std::io::Result<()> {
        // Read straight into the spare capacity: zero-filling first showed as 3 % of the
        // server's CPU when it sent large answers.
        out.reserve(blob.len());
        let spare = &mut out.spare_capacity_mut()[..blob.len()];
        let mut done = 0;
        while done < spare.len() {
            let rest = &mut spare[done..];
            // SAFETY: pread writes at most `rest.len()` bytes into `rest`, which is allocated
            // (spare capacity of `out`); the descriptor stays open for the call.
            let read = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    rest.as_mut_ptr().cast(),
                    rest.len(),
                    (blob.offset + done as u64) as libc::off_t,
                )
            };
            match read {
                n if n > 0 => done += n as usize,
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                _ => {
                    let error = std::io::Error::last_os_error();
                    if error.kind() != std::io::ErrorKind::Interrupted {
                        return Err(error);
                    }
                }
            }
        }
        // SAFETY: the loop above initialized all `blob.len()` bytes after the old length.
        unsafe { out.set_len(out.len() + blob.len()) };
        Ok(())
    }

    /// Appends the bytes of every blob in turn to `out`, with one read per run of blobs that
    /// follow each other in the file.
    pub fn read_all_into(&self, blobs: &[BlobRef], out: &mut Vec<u8>) -> std::io::Result<()> {
        let mut run: Option<BlobRef> = None;
        for blob in blobs {
            run = match run {
                Some(r)
                    if r.offset + u64::from(r.length) == blob.offset
                        && u32::try_from(r.len() + blob.len()).is_ok() =>
                {
                    Some(BlobRef {
                        offset: r.offset,
                        length: r.length + blob.length,
                    })
                }
                Some(r) => {
                    self.read_into(r, out)?;
                    Some(*blob)
                }
                None => Some(*blob),
            };
        }
        match run {
            Some(r) => self.read_into(r, out),
            None => Ok(()),
        }
    }

    /// When most of the file is in large blobs (CSV metadata with icons, manifests: from
    /// [`LARGE_BLOB`] bytes on), writes it back and drops its pages from the page cache, on a
    /// thread of its own; in any case it is read from then on with no read-ahead. Such
    /// blobs are read a bundle at a time, and otherwise stay in the page cache from their
    /// writing on, counted against the memory cgroup of the registry pod: 14.2 of its
    /// 21.7 MiB on the corpus catalogs merged. A file of small blobs keeps its pages:
    /// dropped, every first GetBundle of the generated catalog's 2.2 KB answers was a disk
    /// read (22 % fewer answers per second). The whole file, not the large blobs' ranges:
    /// the page cache holds a file in folios larger than a page, which span neighbouring
    /// blobs, and dropping by ranges left 12.2 of those 14.8 MB in the cache. A file in
    /// memory (`memfd_create`) keeps its pages.
    ///
    /// Written back first because dirty pages are not dropped; with `fdatasync`, which
    /// overlayfs (a container's root) passes to the file below it as it passes `fadvise`.
    pub fn drop_pages_once_written(self) -> Self {
        let advise = |file: &File, advice| {
            // SAFETY: plain advice on an open descriptor; offset 0 and length 0 mean the
            // whole file, and what is appended later.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) }
        };
        advise(&self.file, libc::POSIX_FADV_RANDOM);
        let written = *self.end.lock().unwrap_or_else(|p| p.into_inner());
        if self.large * 2 > written
            && let Ok(file) = self.file.try_clone()
        {
            std::thread::spawn(move || {
                if let Err(error) = file.sync_data() {
                    tracing::debug!(%error, "spill file not written back");
                }
                advise(&file, libc::POSIX_FADV_DONTNEED);
            });
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_read_back_as_written() {
        let mut writer = SpillWriter::new().unwrap();
        let a = writer.append(b"first").unwrap();
        let empty = writer.append(b"").unwrap();
        let b = writer.append("zweite ✓".as_bytes()).unwrap();
        let file = writer.finish().unwrap();
        assert_eq!(file.read(a).unwrap(), b"first");
        assert!(empty.is_empty());
        assert_eq!(file.read_string(b).unwrap(), "zweite ✓");
        let mut both = Vec::new();
        file.read_into(a, &mut both).unwrap();
        file.read_into(b, &mut both).unwrap();
        assert_eq!(both, "firstzweite ✓".as_bytes());
        let mut all = Vec::new();
        file.read_all_into(&[a, empty, b, a, b], &mut all).unwrap();
        assert_eq!(all, "firstzweite ✓firstzweite ✓".as_bytes());
        let later = file.append(b"later").unwrap();
        assert_eq!(file.read(later).unwrap(), b"later");
        assert_eq!(file.read(a).unwrap(), b"first");
    }

    /// How many of the file's pages are in the page cache.
    fn resident_pages(file: &File) -> usize {
        let len = file.metadata().unwrap().len() as usize;
        let page = 4096;
        // SAFETY: a read-only shared mapping of an open file, unmapped below; mincore writes
        // one byte per page into a vector of that many bytes.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let mut pages = vec![0u8; len.div_ceil(page)];
            assert_eq!(libc::mincore(map, len, pages.as_mut_ptr()), 0);
            libc::munmap(map, len);
            pages.iter().filter(|p| **p & 1 == 1).count()
        }
    }

    #[test]
    fn a_file_of_large_blobs_leaves_the_page_cache_and_blobs_still_read_back() {
        // On disk, as in a registry pod (target/ rather than /tmp, which may be tmpfs,
        // where pages cannot be dropped).
        let dir = tempfile::tempdir_in(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")).unwrap();
        let on_disk = || SpillWriter::to_file(tempfile::tempfile_in(dir.path()).unwrap()).unwrap();
        // Small blobs only: kept.
        let mut writer = on_disk();
        for _ in 0..1000 {
            writer.append(&[b'.'; 1000]).unwrap();
        }
        let file = writer.finish().unwrap().drop_pages_once_written();
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(resident_pages(&file.file) >= 240);
        // Mostly large blobs: dropped, small ones among them too.
        let mut writer = on_disk();
        let small = writer.append(b"small").unwrap();
        let blob: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let refs: Vec<BlobRef> = (0..4).map(|_| writer.append(&blob).unwrap()).collect();
        let file = writer.finish().unwrap();
        let written = resident_pages(&file.file);
        assert!(
            written >= 1000,
            "{written} pages in the cache after writing 4 MiB"
        );
        let file = file.drop_pages_once_written();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let left = resident_pages(&file.file);
            if left == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{left} of {written} pages still in the page cache after 20 s (is {} on a file system that keeps pages, like tmpfs?)",
                dir.path().display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Read back with no read-ahead: small reads one after the other (bundles stored
        // side by side, asked for in turn) bring in their own pages only.
        let mut whole = b"small".to_vec();
        for _ in 0..4 {
            whole.extend_from_slice(&blob);
        }
        for page in 0..8 {
            let offset = (2 << 20) + page * 4096;
            let mut read = Vec::new();
            file.read_into(
                BlobRef {
                    offset,
                    length: 4096,
                },
                &mut read,
            )
            .unwrap();
            assert_eq!(read, whole[offset as usize..][..4096]);
        }
        assert_eq!(resident_pages(&file.file), 8);
        assert_eq!(file.read(small).unwrap(), b"small");
        for r in refs {
            assert_eq!(file.read(r).unwrap(), blob);
        }
    }
}
