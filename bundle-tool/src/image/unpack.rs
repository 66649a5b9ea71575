//! Unpacking an image's layers safely: no absolute paths, no `..`, no links, bounded sizes.
//! Layers are applied lowest first, with the OCI whiteouts of later layers (`.wh.<name>`
//! removes `<name>`, `.wh..wh..opq` empties its folder of what lower layers put there), as a
//! container runtime would, so an image built with `docker build` (a bundle.Dockerfile's two
//! COPYs are two layers) unpacks to what runs.
//!
//! A layer whose tar stream stops right after an entry (without the padding of its last
//! block or the two zero blocks that end an archive) is read to that point, as Go's
//! `archive/tar` reads it (its `Next` takes such an end for the end of the archive): umoci
//! 0.4.7, Debian's, writes its layers so, and opm renders them. A stream that stops inside a
//! file's data is refused.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::Blob;

/// Largest total of unpacked bytes accepted (bundles are limited to about 1 MiB compressed).
const MAX_TOTAL: u64 = 64 * 1024 * 1024;

/// The prefix of a whiteout entry's name.
const WHITEOUT: &str = ".wh.";
/// The name of an opaque-folder whiteout.
const OPAQUE: &str = ".wh..wh..opq";

/// Unpacks the gzip tar `layer` into `dir`, refusing anything that could escape it.
pub fn unpack_layer(layer: &[u8], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    unpack_layer_part(layer, dir, None)
}

/// Unpacks only the entries below `only` (a relative path, e.g. `configs` of a catalog image,
/// whose server binary and links are none of the reader's business); with `None`, all.
pub fn unpack_layer_part(
    layer: &[u8],
    dir: &Path,
    only: Option<&Path>,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut unpacked = Unpacked::default();
    unpacked.apply(layer, dir, only)?;
    Ok(unpacked.files.into_iter().collect())
}

/// Unpacks every layer of an image, lowest first, below `only` when given; the files
/// unpacked, sorted.
pub fn unpack_layers(
    layers: &[Blob],
    dir: &Path,
    only: Option<&Path>,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut unpacked = Unpacked::default();
    for layer in layers {
        let bytes = layer.bytes()?;
        unpacked
            .apply(&bytes, dir, only)
            .map_err(|e| e.context(format!("layer {}", layer.digest())))?;
    }
    Ok(unpacked.files.into_iter().collect())
}

/// One entry of a layer, read whole before anything of the layer is written: its whiteouts
/// apply to the layers below it only, wherever they stand in its archive.
enum Change {
    Folder(PathBuf),
    File(PathBuf, Vec<u8>),
    Remove(PathBuf),
    Empty(PathBuf),
}

/// What the layers applied so far have unpacked.
#[derive(Default)]
struct Unpacked {
    files: BTreeSet<PathBuf>,
    total: u64,
}

impl Unpacked {
    fn apply(&mut self, layer: &[u8], dir: &Path, only: Option<&Path>) -> anyhow::Result<()> {
        let concerns = |path: &Path| only.is_none_or(|only| path.starts_with(only));
        let mut changes = Vec::new();
        // Every member: a layer may be several gzip members one after the other (catalog images
        // of bundle-tool before 2026-12-03 are), and a reader of the first alone would see a
        // shorter archive without any error.
        let ended = Rc::new(Cell::new(None));
        let mut archive = tar::Archive::new(EndedAsGoReadsIt {
            inner: flate2::read::MultiGzDecoder::new(layer),
            read: 0,
            ended: ended.clone(),
            zeros: 0,
        });
        for entry in archive.entries()? {
            let mut entry = entry?;
            let path = entry.path()?.into_owned();
            let safe = path
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            anyhow::ensure!(
                safe,
                "refusing layer entry {}: absolute or parent path",
                path.display()
            );
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if let Some(hidden) = name.strip_prefix(WHITEOUT) {
                let parent = path.parent().unwrap_or(Path::new("")).to_path_buf();
                let (change, target) = if name == OPAQUE {
                    (Change::Empty(parent.clone()), parent)
                } else {
                    // `.wh..` would name the folder above: only a plain name is removed.
                    let plain = Path::new(hidden).components().count() == 1
                        && matches!(
                            Path::new(hidden).components().next(),
                            Some(Component::Normal(_))
                        );
                    anyhow::ensure!(
                        plain,
                        "refusing layer entry {}: a whiteout of no plain name",
                        path.display()
                    );
                    let target = parent.join(hidden);
                    (Change::Remove(target.clone()), target)
                };
                // A folder above `only` removed takes what is below `only` with it.
                if concerns(&target) || only.is_some_and(|only| only.starts_with(&target)) {
                    changes.push(change);
                }
                continue;
            }
            if !concerns(&path) {
                continue;
            }
            match entry.header().entry_type() {
                tar::EntryType::Directory => changes.push(Change::Folder(path)),
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let size = entry.header().size()?;
                    self.total += size;
                    anyhow::ensure!(
                        self.total <= MAX_TOTAL,
                        "the image unpacks to more than {MAX_TOTAL} bytes"
                    );
                    let mut data = Vec::with_capacity(size as usize);
                    entry.by_ref().take(size).read_to_end(&mut data)?;
                    let data_end = entry.raw_file_position() + size;
                    anyhow::ensure!(
                        data.len() as u64 == size
                            && ended.get().is_none_or(|length| data_end <= length),
                        "the layer ends inside the data of {}",
                        path.display()
                    );
                    changes.push(Change::File(path, data));
                }
                other => anyhow::bail!(
                    "refusing layer entry {} of type {other:?} (links and devices are not unpacked)",
                    path.display()
                ),
            }
        }
        changes.sort_by_key(|change| !matches!(change, Change::Remove(_) | Change::Empty(_)));
        for change in changes {
            match change {
                Change::Remove(path) => {
                    remove(&dir.join(&path))?;
                    self.files.retain(|file| !file.starts_with(&path));
                }
                Change::Empty(path) => {
                    let folder = dir.join(&path);
                    if folder.is_dir() {
                        for child in std::fs::read_dir(&folder)? {
                            remove(&child?.path())?;
                        }
                    }
                    self.files.retain(|file| !file.starts_with(&path));
                }
                Change::Folder(path) => {
                    let target = dir.join(&path);
                    if target.is_file() {
                        std::fs::remove_file(&target)?;
                        self.files.remove(&path);
                    }
                    std::fs::create_dir_all(&target)?;
                }
                Change::File(path, data) => {
                    let target = dir.join(&path);
                    if target.is_dir() {
                        std::fs::remove_dir_all(&target)?;
                        self.files.retain(|file| !file.starts_with(&path));
                    }
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::fs::write(&target, data)?;
                    self.files.insert(path);
                }
            }
        }
        Ok(())
    }
}

/// The uncompressed layer, and after its end the zeros that complete its last block and end
/// the archive; `ended` gets the layer's real length when its end is reached, so that a
/// file whose data the zeros would complete is refused.
struct EndedAsGoReadsIt<R> {
    inner: R,
    read: u64,
    ended: Rc<Cell<Option<u64>>>,
    zeros: u64,
}

impl<R: Read> Read for EndedAsGoReadsIt<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ended.get().is_none() {
            let n = self.inner.read(buf)?;
            if n > 0 || buf.is_empty() {
                self.read += n as u64;
                return Ok(n);
            }
            self.ended.set(Some(self.read));
            self.zeros = (512 - self.read % 512) % 512 + 1024;
        }
        let n = buf.len().min(self.zeros as usize);
        buf[..n].fill(0);
        self.zeros -= n as u64;
        Ok(n)
    }
}

/// Removes a file or a folder with all it holds; nothing there is not an error.
fn remove(path: &Path) -> std::io::Result<()> {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    };
    match removed {
        // Nothing there, or a file where a folder of the path would be: nothing to remove.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn layer(entries: &[(&str, tar::EntryType)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, kind) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(if *kind == tar::EntryType::Regular {
                2
            } else {
                0
            });
            header.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            // Write the raw name so that unsafe paths reach the unpacker.
            let bytes = name.as_bytes();
            header.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            header.set_cksum();
            builder
                .append(
                    &header,
                    &b"hi"[..usize::from(*kind == tar::EntryType::Regular) * 2],
                )
                .unwrap();
        }
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn reads_every_gzip_member_of_a_layer() {
        // Two members: the first holds one entry and no end-of-archive blocks, the second
        // the next entry and the end (how catalog images were made before their server had
        // a layer of its own).
        let one = layer(&[("a/first", tar::EntryType::Regular)]);
        let mut whole = Vec::new();
        flate2::read::GzDecoder::new(&one[..])
            .read_to_end(&mut whole)
            .unwrap();
        let first_entry = &whole[..1024]; // one header block and one data block
        let second = layer(&[("a/second", tar::EntryType::Regular)]);
        let mut two = Vec::new();
        let mut gz = flate2::write::GzEncoder::new(&mut two, flate2::Compression::default());
        gz.write_all(first_entry).unwrap();
        gz.finish().unwrap();
        two.extend_from_slice(&second);
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_layer(&two, dir.path()).unwrap();
        assert_eq!(
            files,
            vec![PathBuf::from("a/first"), PathBuf::from("a/second")]
        );
    }

    #[test]
    fn unpacks_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_layer(
            &layer(&[("manifests/a.yaml", tar::EntryType::Regular)]),
            dir.path(),
        )
        .unwrap();
        assert_eq!(files, vec![PathBuf::from("manifests/a.yaml")]);
        assert_eq!(
            std::fs::read(dir.path().join("manifests/a.yaml")).unwrap(),
            b"hi"
        );
    }

    #[test]
    fn refuses_escapes_and_links() {
        let dir = tempfile::tempdir().unwrap();
        assert!(unpack_layer(&layer(&[("../evil", tar::EntryType::Regular)]), dir.path()).is_err());
        assert!(
            unpack_layer(
                &layer(&[("/etc/evil", tar::EntryType::Regular)]),
                dir.path()
            )
            .is_err()
        );
        assert!(
            unpack_layer(
                &layer(&[("manifests/link", tar::EntryType::Symlink)]),
                dir.path()
            )
            .is_err()
        );
        assert!(!dir.path().parent().unwrap().join("evil").exists());
    }

    #[test]
    fn only_the_named_part_is_unpacked_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let layer = layer(&[
            ("usr/bin/link", tar::EntryType::Symlink),
            ("configs/pkg", tar::EntryType::Directory),
            ("configs/pkg/catalog.json", tar::EntryType::Regular),
        ]);
        let files = unpack_layer_part(&layer, dir.path(), Some(Path::new("configs"))).unwrap();
        assert_eq!(files, vec![PathBuf::from("configs/pkg/catalog.json")]);
        assert!(!dir.path().join("usr").exists());
        // Unpacked whole, the link is refused as before.
        assert!(unpack_layer(&layer, tempfile::tempdir().unwrap().path()).is_err());
    }

    fn blobs(layers: &[Vec<u8>]) -> Vec<Blob> {
        layers.iter().map(|l| Blob::new(l.clone())).collect()
    }

    #[test]
    fn later_layers_win_and_their_whiteouts_remove_what_is_below() {
        let lower = layer(&[
            ("manifests/a.yaml", tar::EntryType::Regular),
            ("manifests/b.yaml", tar::EntryType::Regular),
            ("metadata/old/x", tar::EntryType::Regular),
            ("metadata/keep", tar::EntryType::Regular),
        ]);
        // The whiteouts stand after the entries they sit beside: they still only remove what
        // lower layers made.
        let upper = layer(&[
            ("metadata/old/.wh..wh..opq", tar::EntryType::Regular),
            ("metadata/old/y", tar::EntryType::Regular),
            ("manifests/.wh.b.yaml", tar::EntryType::Regular),
            ("manifests/c.yaml", tar::EntryType::Regular),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_layers(&blobs(&[lower, upper]), dir.path(), None).unwrap();
        let expected: Vec<PathBuf> = [
            "manifests/a.yaml",
            "manifests/c.yaml",
            "metadata/keep",
            "metadata/old/y",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(files, expected);
        assert!(!dir.path().join("manifests/b.yaml").exists());
        assert!(!dir.path().join("metadata/old/x").exists());
        assert!(dir.path().join("metadata/old/y").is_file());
        assert!(!dir.path().join("manifests/.wh.b.yaml").exists());
    }

    #[test]
    fn a_whiteout_above_the_unpacked_part_removes_it() {
        let lower = layer(&[("configs/pkg/catalog.json", tar::EntryType::Regular)]);
        let upper = layer(&[
            (".wh.configs", tar::EntryType::Regular),
            ("configs/new/catalog.json", tar::EntryType::Regular),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let files = unpack_layers(
            &blobs(&[lower, upper]),
            dir.path(),
            Some(Path::new("configs")),
        )
        .unwrap();
        assert_eq!(files, vec![PathBuf::from("configs/new/catalog.json")]);
        assert!(!dir.path().join("configs/pkg").exists());
    }

    #[test]
    fn a_whiteout_may_not_name_what_is_above_its_folder() {
        let base = tempfile::tempdir().unwrap();
        let out = base.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(base.path().join("precious"), b"x").unwrap();
        for name in ["a/.wh...", "a/.wh..", "a/.wh."] {
            let bad = layer(&[(name, tar::EntryType::Regular)]);
            assert!(unpack_layer(&bad, &out).is_err(), "{name}");
        }
        assert!(base.path().join("precious").exists());
    }

    /// A gzipped tar stream cut at `keep` bytes of its uncompressed archive.
    fn cut(layer: &[u8], keep: usize) -> Vec<u8> {
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(layer)
            .read_to_end(&mut tar)
            .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar[..keep]).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_layer_that_stops_after_its_last_file_is_read_as_go_reads_it() {
        // One header block and the 2 bytes of data, without padding or end blocks (umoci).
        let whole = layer(&[("manifests/a.yaml", tar::EntryType::Regular)]);
        for keep in [514, 600, 1024, 1536] {
            let dir = tempfile::tempdir().unwrap();
            let files = unpack_layer(&cut(&whole, keep), dir.path()).unwrap();
            assert_eq!(
                files,
                vec![PathBuf::from("manifests/a.yaml")],
                "cut at {keep}"
            );
            assert_eq!(
                std::fs::read(dir.path().join("manifests/a.yaml")).unwrap(),
                b"hi"
            );
        }
        // Cut inside the data: refused, nothing written.
        let dir = tempfile::tempdir().unwrap();
        let error = unpack_layer(&cut(&whole, 513), dir.path()).unwrap_err();
        assert!(error.to_string().contains("ends inside"), "{error}");
        assert!(!dir.path().join("manifests/a.yaml").exists());
    }
}
