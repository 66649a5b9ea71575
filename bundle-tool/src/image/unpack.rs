//! Unpacking a layer safely: no absolute paths, no `..`, no links, bounded sizes.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Largest total of unpacked bytes accepted (bundles are limited to about 1 MiB compressed).
const MAX_TOTAL: u64 = 64 * 1024 * 1024;

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
    // Every member: a layer may be several gzip members one after the other (the catalog
    // image's server part is one, cached between builds), and a reader of the first alone
    // would see a shorter archive without any error.
    let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(layer));
    let mut written = Vec::new();
    let mut total = 0u64;
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
        if only.is_some_and(|only| !path.starts_with(only)) {
            continue;
        }
        let target = dir.join(&path);
        match entry.header().entry_type() {
            tar::EntryType::Directory => std::fs::create_dir_all(&target)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size()?;
                total += size;
                anyhow::ensure!(
                    total <= MAX_TOTAL,
                    "layer unpacks to more than {MAX_TOTAL} bytes"
                );
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut data = Vec::with_capacity(size as usize);
                entry.by_ref().take(size).read_to_end(&mut data)?;
                std::fs::write(&target, data)?;
                written.push(path);
            }
            other => anyhow::bail!(
                "refusing layer entry {} of type {other:?} (links and devices are not unpacked)",
                path.display()
            ),
        }
    }
    Ok(written)
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
        // the next entry and the end (how the catalog image is made).
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
}
