//! Compressed layers kept between runs, so that a release does not compress the same server
//! binary again. Compressing a 30 MB static `bundle-tool` at the server layer's pinned gzip
//! level takes about 0.4 s of CPU (1.6 s at the level of other layers), most of a whole
//! release of the Redis operator (docs/benchmarks.md, `release`); reading it back and
//! checking it takes milliseconds. It is what `docker build` gets from reusing a pulled base
//! image's layers.
//!
//! A layer is found by the digest of its *uncompressed* bytes and a fingerprint of the
//! compressor (the gzip of a fixed sample): a cached layer is only used when this program
//! would have compressed those bytes to exactly the same blob, so a catalog image has the
//! same digest with or without the cache, on any machine. Each file is named after the digest
//! and size of its own content too: a file of another size is removed and built again when
//! it is looked up, and its content is checked against the digest when it is read, which a
//! warm release needs only when a registry or layout lacks the layer (see [`Blob`]); an
//! altered file is refused then, removed, and built again by the next run. Nothing else here
//! is precious: every failure to read or write the cache falls back to compressing.
//!
//! So that a warm release need not even read and hash the server to find its layer, the
//! cache also remembers, under an *identity* of the layer's inputs (the caller's key: the
//! files' inode, size and times, see `rootfs::entries_identity`), the digest of the
//! uncompressed layer they made.
//!
//! And it remembers where large blobs were pushed (registry and repository), so that a push
//! of the same blob to another repository of that registry can ask the registry to mount it
//! from there instead of sending it again, as `docker push` does for base layers and skopeo
//! for every blob its blob-info cache has seen.
//!
//! Where: `$BUNDLE_TOOL_CACHE_DIR/layers`, else `$XDG_CACHE_HOME/bundle-tool/layers`, else
//! `~/.cache/bundle-tool/layers`; `BUNDLE_TOOL_CACHE_DIR=` (empty) turns the cache off. The
//! newest [`KEEP`] layers and [`KEEP_IDENTITIES`] identities are kept.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::Blob;

/// The variable that moves (or, empty, turns off) the cache.
pub const CACHE_DIR_VARIABLE: &str = "BUNDLE_TOOL_CACHE_DIR";

/// How many entries are kept: a few builds of the server side by side (a developer switching
/// between two builds, a release job building for two tags).
const KEEP: usize = 4;

/// How many identities are kept (each is a 64-byte file), and as many blob locations.
const KEEP_IDENTITIES: usize = 32;

/// How many repositories are remembered for one blob.
const LOCATIONS_PER_BLOB: usize = 8;

/// A temporary file older than this was left by a process that died while writing it.
const STALE_TEMPORARY: Duration = Duration::from_secs(600);

/// The cache folder, when the cache is on.
#[derive(Debug, Clone)]
pub struct LayerCache {
    dir: PathBuf,
}

impl LayerCache {
    /// The cache at its configured place, or `None` when it is turned off or no place is
    /// known.
    pub fn from_env() -> Option<LayerCache> {
        let dir = match std::env::var_os(CACHE_DIR_VARIABLE) {
            Some(dir) if dir.is_empty() => return None,
            Some(dir) => PathBuf::from(dir),
            None => match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
                Some(dir) => PathBuf::from(dir).join("bundle-tool"),
                None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/bundle-tool"),
            },
        };
        Some(LayerCache::at(&dir))
    }

    /// The cache in `dir` (its entries in `dir/layers`).
    pub fn at(dir: &Path) -> LayerCache {
        LayerCache {
            dir: dir.join("layers"),
        }
    }

    /// The gzip of `uncompressed` made by `compress`, from the cache when an entry
    /// for the same bytes and the same compressor is there, else made now and stored.
    pub fn layer(
        &self,
        uncompressed: &[u8],
        compress: impl Fn(&[u8]) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<Blob> {
        self.layer_of_digested(uncompressed, Sha256::digest(uncompressed).into(), compress)
    }

    /// [`layer`](Self::layer) for a caller that has the SHA-256 of `uncompressed` already
    /// (the catalog image hashes its server layer for the layer's diff ID anyway: one pass
    /// over the 29 MB server instead of two, ~18 ms).
    pub fn layer_of_digested(
        &self,
        uncompressed: &[u8],
        uncompressed_digest: [u8; 32],
        compress: impl Fn(&[u8]) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<Blob> {
        let key = key(uncompressed_digest, &compress)?;
        if let Some(found) = self.get(&key) {
            return Ok(found);
        }
        let member = Blob::new(compress(uncompressed)?);
        // A cache that cannot be written costs the next run the compression, nothing else.
        let _ = self.put(&key, &member);
        Ok(member)
    }

    /// The stored gzip of the bytes whose SHA-256 is `uncompressed_digest`, as `compress`
    /// would make it, if the cache has it.
    pub fn stored_layer(
        &self,
        uncompressed_digest: [u8; 32],
        compress: impl Fn(&[u8]) -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<Option<Blob>> {
        Ok(self.get(&key(uncompressed_digest, &compress)?))
    }

    /// The uncompressed digest remembered for `identity`, if any.
    pub fn recall(&self, identity: [u8; 32]) -> Option<[u8; 32]> {
        let path = self.dir.join(format!("{}.id", hex(&identity)));
        let text = std::fs::read_to_string(&path).ok()?;
        match parse_hex(text.trim()) {
            Some(found) => {
                touch(&path);
                Some(found)
            }
            None => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Remembers that the inputs of `identity` made the uncompressed bytes whose SHA-256 is
    /// `uncompressed_digest` (best effort, like every write here).
    pub fn remember(&self, identity: [u8; 32], uncompressed_digest: [u8; 32]) {
        let name = format!("{}.id", hex(&identity));
        let _ = self.write_entry(&name, hex(&uncompressed_digest).as_bytes());
    }

    /// The repositories of `registry` (`host:port`) the blob `blob_digest` was last pushed
    /// to, the latest first.
    pub fn pushed_to(&self, blob_digest: &str, registry: &str) -> Vec<String> {
        let Some(name) = location_file(blob_digest) else {
            return Vec::new();
        };
        let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
        text.lines()
            .rev()
            .filter_map(|line| line.split_once(' '))
            .filter(|(host, _)| *host == registry)
            .map(|(_, repository)| repository.to_string())
            .collect()
    }

    /// Remembers that `registry` has `blob_digest` in `repository` (best effort).
    pub fn remember_push(&self, blob_digest: &str, registry: &str, repository: &str) {
        let Some(name) = location_file(blob_digest) else {
            return;
        };
        let line = format!("{registry} {repository}");
        if line.contains('\n') || registry.contains(' ') || repository.contains(' ') {
            return;
        }
        let text = std::fs::read_to_string(self.dir.join(&name)).unwrap_or_default();
        let mut lines: Vec<&str> = text.lines().filter(|l| *l != line).collect();
        lines.push(&line);
        let start = lines.len().saturating_sub(LOCATIONS_PER_BLOB);
        let content = format!("{}\n", lines[start..].join("\n"));
        // A release into the repository it released into last time changes nothing here.
        if content != text {
            let _ = self.write_entry(&name, content.as_bytes());
        }
    }

    /// The entry for `key`, named `<key>-<content digest>-<size>.gz`: a file of another size
    /// is removed now; its content is checked against the digest when it is read (see
    /// [`Blob::bytes`]: only if it is pushed or written into a layout).
    fn get(&self, key: &str) -> Option<Blob> {
        let prefix = format!("{key}-");
        for entry in std::fs::read_dir(&self.dir).ok()?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((content_digest, size)) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".gz"))
                .and_then(|rest| rest.split_once('-'))
            else {
                continue;
            };
            let path = entry.path();
            let size: Option<u64> = size.parse().ok();
            match (parse_hex(content_digest), size, entry.metadata()) {
                (Some(_), Some(size), Ok(meta)) if meta.len() == size => {
                    touch(&path);
                    return Some(Blob::in_file(
                        format!("sha256:{content_digest}"),
                        size,
                        path,
                    ));
                }
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        None
    }

    /// Stores `member` under `key`.
    fn put(&self, key: &str, member: &Blob) -> std::io::Result<()> {
        let hex = member.digest().trim_start_matches("sha256:");
        let name = format!("{key}-{hex}-{}.gz", member.size());
        self.write_entry(&name, &member.bytes()?)
    }

    /// Writes the entry `name`: to a temporary file, then renamed, so a reader never sees a
    /// part of it; then the oldest entries beyond what is kept are removed.
    fn write_entry(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let temporary = self.dir.join(format!(".tmp-{}-{name}", std::process::id()));
        std::fs::write(&temporary, bytes)?;
        std::fs::rename(&temporary, self.dir.join(name)).inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })?;
        self.prune();
        Ok(())
    }

    /// Keeps the newest [`KEEP`] layers and [`KEEP_IDENTITIES`] identities, and removes
    /// temporary files left by dead writers.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut layers: Vec<(SystemTime, PathBuf)> = Vec::new();
        let mut identities: Vec<(SystemTime, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if name.starts_with(".tmp-") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY {
                    let _ = std::fs::remove_file(entry.path());
                }
            } else if name.ends_with(".gz") {
                layers.push((modified, entry.path()));
            } else if name.ends_with(".id") || name.ends_with(".at") {
                identities.push((modified, entry.path()));
            }
        }
        for (mut kept, keep) in [(layers, KEEP), (identities, KEEP_IDENTITIES)] {
            kept.sort_by_key(|entry| std::cmp::Reverse(entry.0));
            for (_, path) in kept.into_iter().skip(keep) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// The file of a blob's locations, for a `sha256:<64 hex>` digest only.
fn location_file(blob_digest: &str) -> Option<String> {
    let hex = blob_digest.strip_prefix("sha256:")?;
    (parse_hex(hex).is_some()).then(|| format!("{hex}.at"))
}

/// Marks an entry as recently used, for pruning.
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// The 32 bytes written as 64 hex digits in `text`.
fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (index, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// The entry key: the digest of the uncompressed bytes, bound to the compressor's
/// fingerprint and to the size of the members a large layer is cut into (the fingerprint's
/// sample is smaller than one member, so it cannot tell).
fn key(
    uncompressed_digest: [u8; 32],
    compress: &impl Fn(&[u8]) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    hasher.update(b"bundle-tool layer part\0");
    hasher.update(super::build::MEMBER_BYTES.to_le_bytes());
    hasher.update(fingerprint(compress)?);
    hasher.update(uncompressed_digest);
    Ok(hex(&hasher.finalize()))
}

/// The digest of the compressor's output on a fixed sample of text and noise: a new
/// compressor build that writes other bytes (a new flate2 or miniz_oxide, another level) has
/// another fingerprint, so its parts are never mixed with older ones. About a millisecond.
fn fingerprint(compress: &impl Fn(&[u8]) -> std::io::Result<Vec<u8>>) -> std::io::Result<[u8; 32]> {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    let sample = SAMPLE.get_or_init(|| {
        let mut sample = Vec::with_capacity(64 * 1024);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        while sample.len() < 64 * 1024 {
            // Runs of repeated text between bytes of SplitMix64 noise, so that both literal
            // and match coding are exercised.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            sample.extend_from_slice(&z.to_le_bytes());
            sample.extend_from_slice(b"apiVersion: operators.coreos.com/v1alpha1\n");
        }
        sample
    });
    Ok(Sha256::digest(compress(sample)?).into())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        super::super::build::gzip_member(bytes)
    }

    /// The one layer file of the cache in `dir`.
    fn stored_layer_file(dir: &Path) -> PathBuf {
        std::fs::read_dir(dir.join("layers"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".gz"))
            .unwrap()
            .path()
    }

    #[test]
    fn a_second_request_is_answered_from_the_cache_with_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        let calls = Cell::new(0);
        let counting = |bytes: &[u8]| {
            calls.set(calls.get() + 1);
            gzip(bytes)
        };
        let data = b"server bytes".repeat(1000);
        let first = cache.layer(&data, counting).unwrap();
        // The fingerprint compresses the sample once per key: two calls for a miss.
        assert_eq!(calls.get(), 2);
        let second = cache.layer(&data, counting).unwrap();
        assert_eq!(
            calls.get(),
            3,
            "a hit compresses only the fingerprint sample"
        );
        assert_eq!(first, second);
        assert_eq!(first.bytes().unwrap(), gzip(&data).unwrap());
        assert_eq!(
            first.digest(),
            crate::image::digest(&first.bytes().unwrap())
        );
    }

    #[test]
    fn another_compressor_or_other_bytes_do_not_hit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        let data = b"server bytes".repeat(1000);
        cache.layer(&data, gzip).unwrap();
        let fast = |bytes: &[u8]| {
            let mut encoder = flate2::GzBuilder::new()
                .mtime(0)
                .write(Vec::new(), flate2::Compression::new(1));
            std::io::Write::write_all(&mut encoder, bytes)?;
            encoder.finish()
        };
        let other = cache.layer(&data, fast).unwrap();
        assert_eq!(other.bytes().unwrap(), fast(&data).unwrap());
        let more = b"other bytes".repeat(1000);
        assert_eq!(
            cache.layer(&more, gzip).unwrap().bytes().unwrap(),
            gzip(&more).unwrap()
        );
    }

    #[test]
    fn a_damaged_entry_is_removed_and_built_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        let data = b"server bytes".repeat(1000);
        let good = cache.layer(&data, gzip).unwrap();
        let entry = stored_layer_file(dir.path());
        std::fs::write(&entry, b"torn").unwrap();
        assert_eq!(cache.layer(&data, gzip).unwrap(), good);
        assert_eq!(std::fs::read(&entry).unwrap(), good.bytes().unwrap());
    }

    #[test]
    fn pushed_blobs_are_found_by_registry_latest_first() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        let blob = format!("sha256:{}", "ab".repeat(32));
        assert!(cache.pushed_to(&blob, "r:5000").is_empty());
        cache.remember_push(&blob, "r:5000", "one/catalog");
        cache.remember_push(&blob, "other:5000", "x");
        cache.remember_push(&blob, "r:5000", "two/catalog");
        cache.remember_push(&blob, "r:5000", "one/catalog");
        assert_eq!(
            cache.pushed_to(&blob, "r:5000"),
            ["one/catalog", "two/catalog"]
        );
        for n in 0..20 {
            cache.remember_push(&blob, "r:5000", &format!("repo{n}"));
        }
        assert_eq!(cache.pushed_to(&blob, "r:5000").len(), LOCATIONS_PER_BLOB);
        // Nothing is kept for what is not a digest.
        cache.remember_push("sha256:../../x", "r:5000", "a");
        assert!(cache.pushed_to("sha256:../../x", "r:5000").is_empty());
    }

    #[test]
    fn an_entry_altered_in_place_is_refused_when_read_and_built_again_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        let data = b"server bytes".repeat(1000);
        let good = cache.layer(&data, gzip).unwrap();
        let entry = stored_layer_file(dir.path());
        let mut altered = std::fs::read(&entry).unwrap();
        altered[20] ^= 0xff;
        std::fs::write(&entry, &altered).unwrap();
        let found = cache.layer(&data, gzip).unwrap();
        assert_eq!(found, good, "found by its name, not yet read");
        let error = found.bytes().unwrap_err();
        assert!(error.to_string().contains("damaged"), "{error}");
        assert!(!entry.exists());
        let again = cache.layer(&data, gzip).unwrap();
        assert_eq!(again.bytes().unwrap(), good.bytes().unwrap());
    }

    #[test]
    fn only_the_newest_entries_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        for n in 0..(KEEP + 3) {
            cache.layer(format!("part {n}").as_bytes(), gzip).unwrap();
        }
        for n in 0..(KEEP_IDENTITIES + 3) {
            cache.remember([n as u8; 32], [0; 32]);
        }
        let count = |suffix: &str| {
            std::fs::read_dir(dir.path().join("layers"))
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
                .count()
        };
        assert_eq!(count(".gz"), KEEP);
        assert_eq!(count(".id"), KEEP_IDENTITIES);
    }

    #[test]
    fn an_unwritable_cache_still_gives_the_member() {
        let cache = LayerCache::at(Path::new("/proc/no-such-cache"));
        let data = b"server bytes".repeat(10);
        assert_eq!(
            cache.layer(&data, gzip).unwrap().bytes().unwrap(),
            gzip(&data).unwrap()
        );
        cache.remember([1; 32], [2; 32]);
        assert_eq!(cache.recall([1; 32]), None);
    }

    #[test]
    fn an_identity_is_recalled_and_a_damaged_one_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(dir.path());
        assert_eq!(cache.recall([1; 32]), None);
        cache.remember([1; 32], [0xab; 32]);
        assert_eq!(cache.recall([1; 32]), Some([0xab; 32]));
        assert_eq!(cache.recall([3; 32]), None);
        let file = dir
            .path()
            .join("layers")
            .join(format!("{}.id", hex(&[1; 32])));
        std::fs::write(&file, "not hex").unwrap();
        assert_eq!(cache.recall([1; 32]), None);
        assert!(!file.exists(), "a damaged identity is removed");
        // A layer stored by its uncompressed digest is found without the bytes.
        let data = b"server bytes".repeat(100);
        let stored = cache.layer(&data, gzip).unwrap();
        let digest: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(cache.stored_layer(digest, gzip).unwrap(), Some(stored));
        assert_eq!(cache.stored_layer([9; 32], gzip).unwrap(), None);
    }
}
