//! Images of programs that are already built on this machine, without Docker: a binary and
//! every shared library it loads (as `ldd` resolves them, with the dynamic loader), or a
//! statically linked binary alone, plus the few folders, files and links a container needs.
//! The way `ko` images a Go binary, widened to programs that are not statically linked, such
//! as a distribution's `redis-server`.
//!
//! Same inputs, same bytes: entries sorted by path, owners 0, times 0, modes as given.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::BuiltImage;
use super::build::assemble;

/// One entry of the image's file system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootfsEntry {
    /// A folder with this mode.
    Dir {
        /// Its absolute path in the image.
        path: String,
        /// Permission bits, e.g. `0o1777` for `/tmp`.
        mode: u32,
    },
    /// A file copied from the build machine.
    File {
        /// Its absolute path in the image.
        path: String,
        /// Where its bytes are read from.
        source: PathBuf,
        /// Permission bits.
        mode: u32,
    },
    /// A file with the given bytes (a config file, `/etc/passwd`).
    Bytes {
        /// Its absolute path in the image.
        path: String,
        /// Its content.
        data: Vec<u8>,
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link.
    Symlink {
        /// Its absolute path in the image.
        path: String,
        /// What it points at.
        target: String,
    },
}

impl RootfsEntry {
    fn path(&self) -> &str {
        match self {
            RootfsEntry::Dir { path, .. }
            | RootfsEntry::File { path, .. }
            | RootfsEntry::Bytes { path, .. }
            | RootfsEntry::Symlink { path, .. } => path,
        }
    }
}

/// The image config's runtime part (what `ENTRYPOINT`, `CMD`, `USER`, `ENV` and `LABEL` set).
#[derive(Clone, Debug, Default)]
pub struct ContainerConfig {
    /// `Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `Cmd`.
    pub cmd: Vec<String>,
    /// `User`, e.g. `65532:65532`.
    pub user: String,
    /// `Env` entries, `NAME=value`.
    pub env: Vec<String>,
    /// `Labels`.
    pub labels: BTreeMap<String, String>,
}

/// Builds a one-layer image of `entries`; folders that hold an entry but are not listed are
/// added with mode 0755.
pub fn build_rootfs_image(
    entries: &[RootfsEntry],
    config: &ContainerConfig,
) -> io::Result<BuiltImage> {
    let mut tar = tar_part(entries)?;
    tar.extend_from_slice(&TAR_END);
    let image_config = image_config(
        config,
        &[super::digest(&tar)],
        &super::Platform::linux_amd64(),
    );
    assemble(tar, image_config)
}

/// The two zero blocks that end a tar archive.
pub(super) const TAR_END: [u8; 1024] = [0; 1024];

/// The tar entries of `entries`, sorted by path, with the folders that hold an entry but are
/// not listed added (mode 0755), and *without* the end-of-archive blocks: parts made this way
/// can follow one another in one archive ([`TAR_END`] ends it: the catalog image's configs
/// layer is its `/configs` folder and then the catalog's files).
pub(super) fn tar_part(entries: &[RootfsEntry]) -> io::Result<Vec<u8>> {
    let mut by_path: BTreeMap<String, &RootfsEntry> = BTreeMap::new();
    let mut implied: BTreeMap<String, RootfsEntry> = BTreeMap::new();
    for entry in entries {
        let path = entry.path();
        if !path.starts_with('/') || path.split('/').any(|part| part == "..") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path:?}: image paths are absolute and have no `..`"),
            ));
        }
        let mut parent = Path::new(path).parent();
        while let Some(dir) = parent.filter(|d| *d != Path::new("/")) {
            let name = dir.to_string_lossy().into_owned();
            implied.entry(name.clone()).or_insert(RootfsEntry::Dir {
                path: name,
                mode: 0o755,
            });
            parent = dir.parent();
        }
        if by_path.insert(path.to_string(), entry).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path:?} is in the image twice"),
            ));
        }
    }
    for (path, entry) in &implied {
        by_path.entry(path.clone()).or_insert(entry);
    }

    let mut builder = tar::Builder::new(Vec::new());
    builder.mode(tar::HeaderMode::Deterministic);
    for (path, entry) in by_path {
        // Tar names are relative, as `docker build` writes them.
        let name = path.trim_start_matches('/');
        let mut header = tar::Header::new_ustar();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match entry {
            RootfsEntry::Dir { mode, .. } => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(*mode);
                header.set_size(0);
                builder.append_data(&mut header, format!("{name}/"), io::empty())?;
            }
            RootfsEntry::File { source, mode, .. } => {
                let data = std::fs::read(source)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", source.display())))?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, name, &data[..])?;
            }
            RootfsEntry::Bytes { data, mode, .. } => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(*mode);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, name, &data[..])?;
            }
            RootfsEntry::Symlink { target, .. } => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, name, target)?;
            }
        }
    }
    // Taken before the builder is dropped: dropping it appends the end-of-archive blocks,
    // here to the empty vector left behind.
    Ok(std::mem::take(builder.get_mut()))
}

/// The image config of an image for `platform` whose uncompressed layers, lowest first, have
/// the digests `diff_ids`.
pub(super) fn image_config(
    config: &ContainerConfig,
    diff_ids: &[String],
    platform: &super::Platform,
) -> serde_json::Value {
    let mut runtime = serde_json::Map::new();
    runtime.insert("Labels".into(), json!(config.labels));
    if !config.entrypoint.is_empty() {
        runtime.insert("Entrypoint".into(), json!(config.entrypoint));
    }
    if !config.cmd.is_empty() {
        runtime.insert("Cmd".into(), json!(config.cmd));
    }
    if !config.user.is_empty() {
        runtime.insert("User".into(), json!(config.user));
    }
    if !config.env.is_empty() {
        runtime.insert("Env".into(), json!(config.env));
    }
    runtime.insert("WorkingDir".into(), json!("/"));
    super::build::with_platform(
        json!({
            "config": runtime,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }),
        platform,
    )
}

/// A file changed less than this long ago is not given an identity: file times come from a
/// coarse clock (a few milliseconds), so a file rewritten again within the same tick with
/// the same size would keep its identity.
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

/// A key that changes whenever the tar part of `entries` would: every entry as given, each
/// listed file's identity on disk (device, inode, size, modification and change times; the
/// change time cannot be set back by a program), and the tar part of a fixed sample, so that
/// another tar writer gives other keys. Stat-ing a few files instead of reading and hashing
/// them (29 MB for the static server: ~40 ms) is how `make` and git's index decide that a
/// file is unchanged. `None` when a file was changed in the last [`RACY`] seconds.
pub(super) fn entries_identity(entries: &[RootfsEntry]) -> io::Result<Option<[u8; 32]>> {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::MetadataExt;
    let sample = [
        RootfsEntry::Dir {
            path: "/d".into(),
            mode: 0o1777,
        },
        RootfsEntry::Bytes {
            path: "/d/f".into(),
            data: b"sample".to_vec(),
            mode: 0o644,
        },
        RootfsEntry::Symlink {
            path: "/d/l".into(),
            target: "f".into(),
        },
    ];
    let mut hasher = Sha256::new();
    hasher.update(b"bundle-tool rootfs identity 1\0");
    hasher.update(tar_part(&sample)?);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    for entry in entries {
        hasher.update(format!("{entry:?}\0").as_bytes());
        if let RootfsEntry::File { source, .. } = entry {
            let meta = std::fs::metadata(source)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", source.display())))?;
            let at = |seconds: i64, nanoseconds: i64| {
                std::time::Duration::new(
                    seconds.max(0) as u64,
                    nanoseconds.clamp(0, 999_999_999) as u32,
                )
            };
            let changed =
                at(meta.mtime(), meta.mtime_nsec()).max(at(meta.ctime(), meta.ctime_nsec()));
            if now.saturating_sub(changed) < RACY {
                return Ok(None);
            }
            for number in [
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime() as u64,
                meta.mtime_nsec() as u64,
                meta.ctime() as u64,
                meta.ctime_nsec() as u64,
            ] {
                hasher.update(number.to_le_bytes());
            }
        }
    }
    Ok(Some(hasher.finalize().into()))
}

/// `program` at `/usr/bin/<name>` (mode 0755) and, unless it is statically linked, every
/// shared library `ldd` says it loads, at the same paths as here, dynamic loader included.
pub fn program_with_libraries(program: &Path) -> io::Result<Vec<RootfsEntry>> {
    let name = program
        .file_name()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file", program.display()),
            )
        })?
        .to_string_lossy()
        .into_owned();
    let mut entries = vec![RootfsEntry::File {
        path: format!("/usr/bin/{name}"),
        source: program.to_path_buf(),
        mode: 0o755,
    }];
    for library in shared_libraries(program)? {
        // The real file, at the path the program asks for (a distribution's library paths are
        // often links: /lib64 -> /usr/lib64, libfoo.so.1 -> libfoo.so.1.2.3).
        let source = std::fs::canonicalize(&library)?;
        entries.push(RootfsEntry::File {
            path: library.to_string_lossy().into_owned(),
            source,
            mode: 0o755,
        });
    }
    Ok(entries)
}

/// Whether `program` is an ELF program that loads shared libraries.
pub(super) fn is_dynamic(program: &Path) -> io::Result<bool> {
    Ok(has_interpreter(program)? == Some(true))
}

/// Whether `program` is an ELF program for another machine than this one.
pub(super) fn is_foreign(program: &Path) -> io::Result<bool> {
    Ok(super::Platform::host().check_program(program).is_err())
}

/// Whether the ELF file `program` names a program interpreter (a `PT_INTERP` program
/// header: the dynamic loader), read from its headers; `None` when it is not a little-endian
/// ELF file (a script, say).
fn has_interpreter(program: &Path) -> io::Result<Option<bool>> {
    use std::io::{Read, Seek, SeekFrom};
    const PT_INTERP: u32 = 3;
    let mut file = std::fs::File::open(program)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
    let mut header = [0u8; 64];
    let read = file.read(&mut header)?;
    if read < 52 || &header[..4] != b"\x7fELF" || header[5] != 1 {
        return Ok(None);
    }
    let u16_at = |at: usize| u16::from_le_bytes([header[at], header[at + 1]]) as u64;
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let (offset, size, count) = match header[4] {
        1 => (u32_at(0x1c) as u64, u16_at(0x2a), u16_at(0x2c)),
        2 if read >= 64 => (
            u64::from_le_bytes(header[0x20..0x28].try_into().expect("8 bytes")),
            u16_at(0x36),
            u16_at(0x38),
        ),
        _ => return Ok(None),
    };
    if size < 4 {
        return Ok(None);
    }
    for index in 0..count {
        file.seek(SeekFrom::Start(offset + index * size))?;
        let mut kind = [0u8; 4];
        file.read_exact(&mut kind)?;
        if u32::from_le_bytes(kind) == PT_INTERP {
            return Ok(Some(true));
        }
    }
    Ok(Some(false))
}

/// The absolute paths of the shared objects `ldd` resolves for `program`; empty for a
/// statically linked one.
///
/// Whether it is static comes from its ELF headers, not from `ldd`: an `ldd` whose helper
/// process dies says "not a dynamic executable" too, and an image built on that would
/// silently lack the program's libraries (seen in the crash-safety harness, whose injected
/// SIGKILL can land in `ldd`'s child).
fn shared_libraries(program: &Path) -> io::Result<Vec<PathBuf>> {
    if has_interpreter(program)? != Some(true) {
        return Ok(Vec::new());
    }
    let output = Command::new("ldd")
        .arg(program)
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running ldd: {e}")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || text.contains("not a dynamic executable") {
        return Err(io::Error::other(format!(
            "ldd {}: {}",
            program.display(),
            stderr.trim()
        )));
    }
    let mut libraries = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.contains("=> not found") {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: {line}", program.display()),
            ));
        }
        // `libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x…)`, or the loader as
        // `/lib64/ld-linux-x86-64.so.2 (0x…)`; `linux-vdso.so.1 (0x…)` is the kernel's.
        let path = match line.split_once("=>") {
            Some((_, resolved)) => resolved.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libraries.push(PathBuf::from(path));
        }
    }
    libraries.sort();
    libraries.dedup();
    Ok(libraries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(image: &BuiltImage) -> Vec<(String, u32)> {
        let layer = image.layers[0].bytes().unwrap();
        let tar = flate2::read::GzDecoder::new(&layer[..]);
        let mut archive = tar::Archive::new(tar);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().mode().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn parents_are_implied_and_entries_sorted() {
        let entries = [
            RootfsEntry::Bytes {
                path: "/etc/app/app.conf".into(),
                data: b"x".to_vec(),
                mode: 0o644,
            },
            RootfsEntry::Dir {
                path: "/tmp".into(),
                mode: 0o1777,
            },
            RootfsEntry::Symlink {
                path: "/bin/sh".into(),
                target: "busybox".into(),
            },
        ];
        let image = build_rootfs_image(&entries, &ContainerConfig::default()).unwrap();
        assert_eq!(
            names(&image),
            vec![
                ("bin/".into(), 0o755),
                ("bin/sh".into(), 0o777),
                ("etc/".into(), 0o755),
                ("etc/app/".into(), 0o755),
                ("etc/app/app.conf".into(), 0o644),
                ("tmp/".into(), 0o1777),
            ]
        );
        let again = build_rootfs_image(&entries, &ContainerConfig::default()).unwrap();
        assert_eq!(image.digest(), again.digest());
    }

    #[test]
    fn relative_escaping_and_repeated_paths_are_refused() {
        for bad in ["etc/x", "/etc/../x"] {
            let entry = RootfsEntry::Dir {
                path: bad.into(),
                mode: 0o755,
            };
            assert!(build_rootfs_image(&[entry], &ContainerConfig::default()).is_err());
        }
        let twice = RootfsEntry::Dir {
            path: "/x".into(),
            mode: 0o755,
        };
        assert!(build_rootfs_image(&[twice.clone(), twice], &ContainerConfig::default()).is_err());
    }

    #[test]
    fn static_and_dynamic_programs_are_told_apart_by_their_headers() {
        assert_eq!(has_interpreter(Path::new("/bin/ls")).unwrap(), Some(true));
        // busybox-static (a test-command package) has no interpreter.
        assert_eq!(
            has_interpreter(Path::new("/bin/busybox")).unwrap(),
            Some(false)
        );
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(has_interpreter(&script).unwrap(), None);
        assert!(
            program_with_libraries(Path::new("/bin/busybox"))
                .unwrap()
                .len()
                == 1
        );
    }

    #[test]
    fn a_dynamic_program_brings_its_loader_and_libraries() {
        // `ls` is in coreutils on every Debian machine and links libc at least.
        let entries = program_with_libraries(Path::new("/bin/ls")).unwrap();
        let paths: Vec<&str> = entries.iter().map(RootfsEntry::path).collect();
        assert_eq!(paths[0], "/usr/bin/ls");
        assert!(paths.iter().any(|p| p.contains("libc.so")), "{paths:?}");
        assert!(paths.iter().any(|p| p.contains("ld-linux")), "{paths:?}");
    }
}
