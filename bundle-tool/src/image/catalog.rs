//! The catalog image: a file-based catalog at `/configs` and the server that serves it, so
//! that OLM can run the image as a CatalogSource's registry pod. It matches what opm's
//! generated Dockerfile makes (opm's base image, `serve /configs` as the command, the configs
//! label), with `bundle-tool` in opm's place:
//!
//! - `/usr/bin/bundle-tool` is the entrypoint, running `serve /configs` on every interface of
//!   the pod at :50051;
//! - `/usr/bin/grpc_health_probe` links to it, for OLM's exec probes
//!   (`grpc_health_probe -addr=:50051 -rpc-timeout=5s`; see [`crate::health_probe`]);
//! - it runs as user 1001 (numeric, so `runAsNonRoot` can be checked), writes nothing to its
//!   file system (the server's spill file falls back to memory), and so works under OLM's
//!   `securityContextConfig: restricted` and with a read-only root file system;
//! - `/tmp` is there for `grpcPodConfig.extractContent`, whose copy step runs in this image.
//!
//! The server is the running `bundle-tool` unless `BUNDLE_TOOL_SERVER_BINARY` names another.
//! Statically linked, it is the only program in the image and the image is the same on every
//! machine for the same catalog and binary; linked dynamically (a plain `cargo build`), its
//! shared libraries come along from this machine, with a warning.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::build::{assemble_compressed, gzip_member};
use super::layer_cache::LayerCache;
use super::rootfs::{
    ContainerConfig, RootfsEntry, TAR_END, image_config, program_with_libraries, tar_part,
};
use super::{BuiltImage, CATALOG_CONFIGS_LABEL};

/// The variable that picks the server binary put into catalog images.
pub const SERVER_BINARY_VARIABLE: &str = "BUNDLE_TOOL_SERVER_BINARY";

/// Where the server is in the image.
pub const SERVER_PATH: &str = "/usr/bin/bundle-tool";

/// The user the server runs as (as OLM's own images do).
pub const CATALOG_USER: &str = "1001";

/// The server binary for catalog images: `$BUNDLE_TOOL_SERVER_BINARY`, else this program.
pub fn server_binary() -> io::Result<PathBuf> {
    match std::env::var_os(SERVER_BINARY_VARIABLE) {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => std::env::current_exe(),
    }
}

/// A built catalog image, and whether its server is linked statically (false: the image
/// carries this machine's shared libraries).
pub struct CatalogImage {
    /// The image.
    pub image: BuiltImage,
    /// Whether the server needs no shared library.
    pub static_server: bool,
}

/// The server's part of a catalog image, which is the same for every catalog: the program
/// (and its libraries), the `grpc_health_probe` link and `/tmp`, as tar entries and as the
/// first gzip member of the layer. It is prepared apart from the catalog so that it can be
/// compressed while other work runs (`release` starts it first) and taken from the
/// [`LayerCache`] when this server was compressed before.
pub struct ServerPart {
    /// The layer's digest state after the server's entries (the catalog's follow).
    diff: Sha256,
    member: Vec<u8>,
    static_server: bool,
}

impl ServerPart {
    /// The part for `server`, from the layer cache (see [`LayerCache::from_env`]) when it
    /// is there.
    pub fn prepare(server: &Path) -> io::Result<ServerPart> {
        Self::prepare_with(server, LayerCache::from_env().as_ref())
    }

    /// The part for `server`, from `cache` when given and it has the part.
    pub fn prepare_with(server: &Path, cache: Option<&LayerCache>) -> io::Result<ServerPart> {
        let mut entries = program_with_libraries(server)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", server.display())))?;
        let static_server = entries.len() == 1;
        if let Some(RootfsEntry::File { path, .. }) = entries.first_mut() {
            *path = SERVER_PATH.to_string();
        }
        entries.push(RootfsEntry::Symlink {
            path: format!("/usr/bin/{}", crate::health_probe::PROGRAM_NAME),
            target: "bundle-tool".into(),
        });
        entries.push(RootfsEntry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        });
        let tar = tar_part(&entries)?;
        let mut diff = Sha256::new();
        diff.update(&tar);
        let member = match cache {
            Some(cache) => {
                cache.member_of_digested(&tar, diff.clone().finalize().into(), gzip_member)?
            }
            None => gzip_member(&tar)?,
        };
        Ok(ServerPart {
            diff,
            member,
            static_server,
        })
    }
}

/// Builds the catalog image of the folder `catalog` with `server` as its server.
pub fn build_runnable_catalog_image(catalog: &Path, server: &Path) -> io::Result<CatalogImage> {
    build_catalog_image_with(catalog, &ServerPart::prepare(server)?)
}

/// Builds the catalog image of the folder `catalog` around an already prepared server part.
///
/// One layer, two gzip members: the server's entries, then `/configs` and the end of the
/// archive. As one tar stream it holds the same entries as a layer compressed in one piece,
/// and the server's member is the same bytes for every catalog.
pub fn build_catalog_image_with(catalog: &Path, server: &ServerPart) -> io::Result<CatalogImage> {
    let mut entries = vec![RootfsEntry::Dir {
        path: "/configs".into(),
        mode: 0o755,
    }];
    folder_entries(catalog, "/configs", &mut entries)?;
    let mut configs = tar_part(&entries)?;
    configs.extend_from_slice(&TAR_END);
    let mut diff = server.diff.clone();
    diff.update(&configs);
    let diff_id: String = diff
        .finalize()
        .iter()
        .fold(String::from("sha256:"), |mut out, b| {
            out.push_str(&format!("{b:02x}"));
            out
        });
    let mut layer = Vec::with_capacity(server.member.len() + configs.len() / 4);
    layer.extend_from_slice(&server.member);
    layer.extend_from_slice(&gzip_member(&configs)?);
    let config = ContainerConfig {
        entrypoint: vec![SERVER_PATH.into()],
        cmd: [
            "serve",
            "/configs",
            "--address",
            "0.0.0.0",
            "--port",
            "50051",
        ]
        .map(String::from)
        .to_vec(),
        user: CATALOG_USER.into(),
        env: vec!["PATH=/usr/bin:/bin".into()],
        labels: BTreeMap::from([(CATALOG_CONFIGS_LABEL.to_string(), "/configs".to_string())]),
    };
    Ok(CatalogImage {
        image: assemble_compressed(layer, image_config(&config, &diff_id)),
        static_server: server.static_server,
    })
}

/// Every folder and regular file below `dir`, at `prefix` in the image (files 0644, folders
/// 0755; links and special files are left out, as the other images leave them out).
fn folder_entries(dir: &Path, prefix: &str, out: &mut Vec<RootfsEntry>) -> io::Result<()> {
    let mut children: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
        .collect::<Result<_, _>>()?;
    children.sort_by_key(|entry| entry.file_name());
    for child in children {
        let path = format!("{prefix}/{}", child.file_name().to_string_lossy());
        let kind = child.file_type()?;
        if kind.is_dir() {
            out.push(RootfsEntry::Dir {
                path: path.clone(),
                mode: 0o755,
            });
            folder_entries(&child.path(), &path, out)?;
        } else if kind.is_file() {
            out.push(RootfsEntry::File {
                path,
                source: child.path(),
                mode: 0o644,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small stand-in for the server: any executable file will do for the image's layout.
    fn server() -> PathBuf {
        PathBuf::from("/bin/busybox")
            .canonicalize()
            .or_else(|_| std::env::current_exe())
            .expect("an executable")
    }

    fn catalog() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/catalog.json"), b"{}\n").unwrap();
        dir
    }

    #[test]
    fn the_same_catalog_and_server_give_the_same_digest() {
        let (dir, server) = (catalog(), server());
        let first = build_runnable_catalog_image(dir.path(), &server).unwrap();
        let second = build_runnable_catalog_image(dir.path(), &server).unwrap();
        assert_eq!(first.image.digest(), second.image.digest());
        std::fs::write(dir.path().join("pkg/catalog.json"), b"{\"a\":1}\n").unwrap();
        let changed = build_runnable_catalog_image(dir.path(), &server).unwrap();
        assert_ne!(first.image.digest(), changed.image.digest());
    }

    #[test]
    fn a_cached_server_part_gives_the_same_image() {
        let (dir, server) = (catalog(), server());
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(cache_dir.path());
        let uncached = ServerPart::prepare_with(&server, None).unwrap();
        let stored = ServerPart::prepare_with(&server, Some(&cache)).unwrap();
        let hit = ServerPart::prepare_with(&server, Some(&cache)).unwrap();
        let digests: Vec<String> = [&uncached, &stored, &hit]
            .iter()
            .map(|part| {
                build_catalog_image_with(dir.path(), part)
                    .unwrap()
                    .image
                    .digest()
            })
            .collect();
        assert_eq!(digests[0], digests[1]);
        assert_eq!(digests[0], digests[2]);
        // The config's diff_id is the digest of the whole uncompressed layer.
        let image = build_catalog_image_with(dir.path(), &hit).unwrap().image;
        let mut tar = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(&image.layer[..]),
            &mut tar,
        )
        .unwrap();
        let config: serde_json::Value = serde_json::from_slice(&image.config).unwrap();
        assert_eq!(
            config["rootfs"]["diff_ids"][0],
            crate::image::digest(&tar).as_str()
        );
    }

    #[test]
    fn the_image_runs_the_server_as_olm_expects() {
        let dir = catalog();
        let built = build_runnable_catalog_image(dir.path(), &server()).unwrap();
        let config: serde_json::Value = serde_json::from_slice(&built.image.config).unwrap();
        let runtime = &config["config"];
        assert_eq!(runtime["Entrypoint"], serde_json::json!([SERVER_PATH]));
        assert_eq!(
            runtime["Cmd"],
            serde_json::json!([
                "serve",
                "/configs",
                "--address",
                "0.0.0.0",
                "--port",
                "50051"
            ])
        );
        assert_eq!(runtime["User"], CATALOG_USER);
        assert_eq!(runtime["Labels"][CATALOG_CONFIGS_LABEL], "/configs");
        let tar = flate2::read::MultiGzDecoder::new(&built.image.layer[..]);
        let mut archive = tar::Archive::new(tar);
        let mut seen = BTreeMap::new();
        for entry in archive.entries().unwrap() {
            let entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let link = entry
                .link_name()
                .unwrap()
                .map(|l| l.to_string_lossy().into_owned());
            seen.insert(path, (entry.header().mode().unwrap(), link));
        }
        assert_eq!(
            seen["usr/bin/grpc_health_probe"].1.as_deref(),
            Some("bundle-tool")
        );
        assert_eq!(seen["usr/bin/bundle-tool"].0, 0o755);
        assert_eq!(seen["tmp/"].0, 0o1777);
        assert_eq!(seen["configs/pkg/catalog.json"].0, 0o644);
    }
}
