//! The catalog image: a file-based catalog at `/configs` and the server that serves it, so
//! that OLM can run the image as a CatalogSource's registry pod. It matches what opm's
//! generated Dockerfile makes (opm's base image, `serve /configs` as the command, the configs
//! label), with `catalog-server` in opm's place:
//!
//! - `/usr/bin/catalog-server` is the entrypoint, running `serve /configs` on every interface
//!   of the pod at :50051;
//! - `/usr/bin/grpc_health_probe` links to it, for OLM's exec probes
//!   (`grpc_health_probe -addr=:50051 -rpc-timeout=5s`; see [`crate::health_probe`]);
//! - it runs as user 1001 (numeric, so `runAsNonRoot` can be checked), writes nothing to its
//!   file system (the server's spill file falls back to memory), and so works under OLM's
//!   `securityContextConfig: restricted` and with a read-only root file system;
//! - `/tmp` is there for `grpcPodConfig.extractContent`, whose copy step runs in this image.
//!
//! The server is `$BUNDLE_TOOL_SERVER_BINARY` when set, else the `catalog-server` program
//! beside the running `bundle-tool` (a workspace build puts both in one folder; install both
//! packages, `cargo install --path catalog-server` and `--path bundle-tool`), else
//! `bundle-tool` itself, which serves the same way (`bundle-tool serve`) but is the whole tool
//! (sizes in docs/benchmarks.md). Statically linked, it is the only program in the image and the image is the same on every
//! machine for the same catalog and binary; linked dynamically (a plain `cargo build`), its
//! shared libraries come along from this machine, with a warning.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Blob;
use super::build::{assemble_compressed, gzip_member, gzip_server_layer};
use super::layer_cache::LayerCache;
use super::rootfs::{
    ContainerConfig, RootfsEntry, TAR_END, entries_identity, image_config, program_with_libraries,
    tar_part,
};
use super::{CATALOG_CONFIGS_LABEL, digest};

/// The variable that picks the server binary put into catalog images.
pub const SERVER_BINARY_VARIABLE: &str = "BUNDLE_TOOL_SERVER_BINARY";

/// Where the server is in the image.
pub const SERVER_PATH: &str = "/usr/bin/catalog-server";

/// The server program's name, beside `bundle-tool` and in the image.
pub const SERVER_PROGRAM: &str = "catalog-server";

/// The user the server runs as (as OLM's own images do).
pub const CATALOG_USER: &str = "1001";

/// The server binary for catalog images: `$BUNDLE_TOOL_SERVER_BINARY`, else `catalog-server`
/// beside this program, else this program.
pub fn server_binary() -> io::Result<PathBuf> {
    if let Some(path) = std::env::var_os(SERVER_BINARY_VARIABLE).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let this = std::env::current_exe()?;
    let beside = this.with_file_name(SERVER_PROGRAM);
    Ok(if beside.is_file() { beside } else { this })
}

/// The server binary of each of `platforms`: those `given` as `PLATFORM=PATH`
/// (`--server-binary`), and for this machine's platform, unless given, [`server_binary`].
pub fn server_binaries(
    platforms: &[super::Platform],
    given: &[String],
) -> Result<Vec<PathBuf>, super::PlatformError> {
    let mut given = given.to_vec();
    let host = super::Platform::host();
    for platform in platforms {
        let named = given.iter().any(|g| g.starts_with(&format!("{platform}=")));
        if !named
            && host.satisfies(platform)
            && (platforms.len() > 1 || given.is_empty())
            && let Ok(default) = server_binary()
        {
            given.push(format!("{platform}={}", default.display()));
        }
    }
    super::binaries_for(platforms, &given, "server binary", "--server-binary")
}

/// A built catalog image, and whether its server is linked statically (false: the image
/// carries this machine's shared libraries).
pub struct CatalogImage {
    /// The image.
    pub image: super::BuiltImage,
    /// Whether the server needs no shared library.
    pub static_server: bool,
}

impl CatalogImage {
    /// What to tell the user about the image's server, `server`: that it is linked
    /// dynamically (said, not refused, since the image still runs on nodes like this
    /// machine), and that it is bundle-tool itself because no `catalog-server` was found
    /// beside it (the image works, and is larger).
    pub fn warning(&self, server: &Path) -> Option<String> {
        let dynamic = (!self.static_server).then(|| {
            format!(
                "warning: {} is dynamically linked: the catalog image carries this machine's shared libraries for it; for an image that is the same everywhere, build catalog-server statically (RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release -p catalog-server --target x86_64-unknown-linux-gnu) and set {SERVER_BINARY_VARIABLE}",
                server.display()
            )
        });
        let whole_tool = (std::env::var_os(SERVER_BINARY_VARIABLE).is_none_or(|v| v.is_empty())
            && server.file_name() != Some(std::ffi::OsStr::new(SERVER_PROGRAM)))
        .then(|| {
            format!(
                "note: no {SERVER_PROGRAM} beside {}: the catalog image's server is bundle-tool itself; build catalog-server (cargo build -p catalog-server) for a smaller image",
                server.display()
            )
        });
        match (dynamic, whole_tool) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        }
    }
}

/// The catalog image's lower layer, which is the same for every catalog: the server (and its
/// libraries), the `grpc_health_probe` link and `/tmp`. A layer of its own, as opm's base
/// image is below the `/configs` layer of an opm catalog image, so that a registry keeps it
/// once for every catalog version, a node pulls only the small configs layer of a new one,
/// and the [`LayerCache`] can hand a release the whole layer, digests included, without
/// reading the server again.
pub struct ServerLayer {
    layer: Blob,
    /// `sha256:…` of the uncompressed layer.
    diff_id: String,
    static_server: bool,
}

impl ServerLayer {
    /// The layer for `server`, from the layer cache (see [`LayerCache::from_env`]) when it
    /// is there.
    pub fn prepare(server: &Path) -> io::Result<ServerLayer> {
        Self::prepare_with(server, LayerCache::from_env().as_ref())
    }

    /// The layer for `server`, from `cache` when given and it has the layer.
    pub fn prepare_with(server: &Path, cache: Option<&LayerCache>) -> io::Result<ServerLayer> {
        if super::rootfs::is_dynamic(server)? && super::rootfs::is_foreign(server)? {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a dynamically linked program for another machine: its shared libraries cannot be found here; link it statically (RUSTFLAGS=\"-C target-feature=+crt-static\")",
                    server.display()
                ),
            ));
        }
        let mut entries = program_with_libraries(server)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", server.display())))?;
        let static_server = entries.len() == 1;
        if let Some(RootfsEntry::File { path, .. }) = entries.first_mut() {
            *path = SERVER_PATH.to_string();
        }
        entries.push(RootfsEntry::Symlink {
            path: format!("/usr/bin/{}", crate::health_probe::PROGRAM_NAME),
            target: SERVER_PROGRAM.into(),
        });
        entries.push(RootfsEntry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        });
        let Some(cache) = cache else {
            let (diff, tar) = server_tar(&entries)?;
            return Ok(ServerLayer::new(
                Blob::new(gzip_server_layer(&tar)?),
                diff,
                static_server,
            ));
        };
        // Taken before the files are read: a file changed after this has another identity.
        let identity = entries_identity(&entries)?;
        if let Some(diff) = identity.and_then(|identity| cache.recall(identity))
            && let Some(layer) = cache.stored_layer(diff, gzip_server_layer)?
        {
            return Ok(ServerLayer::new(layer, diff, static_server));
        }
        let (diff, tar) = server_tar(&entries)?;
        let layer = cache.layer_of_digested(&tar, diff, gzip_server_layer)?;
        if let Some(identity) = identity {
            cache.remember(identity, diff);
        }
        Ok(ServerLayer::new(layer, diff, static_server))
    }

    fn new(layer: Blob, diff: [u8; 32], static_server: bool) -> ServerLayer {
        ServerLayer {
            layer,
            diff_id: super::digest_of_hash(&diff),
            static_server,
        }
    }
}

/// The server layer's tar archive and its SHA-256.
fn server_tar(entries: &[RootfsEntry]) -> io::Result<([u8; 32], Vec<u8>)> {
    let mut tar = tar_part(entries)?;
    tar.extend_from_slice(&TAR_END);
    Ok((Sha256::digest(&tar).into(), tar))
}

/// Builds the catalog image of the folder `catalog` with `server` as its server.
pub fn build_runnable_catalog_image(catalog: &Path, server: &Path) -> io::Result<CatalogImage> {
    build_catalog_image_with(catalog, &ServerLayer::prepare(server)?)
}

/// Builds the catalog image of the folder `catalog` above an already prepared server layer:
/// two layers, the server's, then `/configs`.
pub fn build_catalog_image_with(catalog: &Path, server: &ServerLayer) -> io::Result<CatalogImage> {
    build_catalog_images(catalog, &[(super::Platform::linux_amd64(), server)])
}

/// The catalog image for each `(platform, server layer)`: the `/configs` layer made once and
/// shared by every platform's image, above that platform's server; an index when there are
/// several.
pub fn build_catalog_images(
    catalog: &Path,
    servers: &[(super::Platform, &ServerLayer)],
) -> io::Result<CatalogImage> {
    let mut entries = vec![RootfsEntry::Dir {
        path: "/configs".into(),
        mode: 0o755,
    }];
    folder_entries(catalog, "/configs", &mut entries)?;
    let mut configs = tar_part(&entries)?;
    configs.extend_from_slice(&TAR_END);
    let configs_diff = digest(&configs);
    let configs_layer = Blob::new(gzip_member(&configs)?);
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
    let children = servers
        .iter()
        .map(|(platform, server)| {
            let diff_ids = [server.diff_id.clone(), configs_diff.clone()];
            let layers = vec![server.layer.clone(), configs_layer.clone()];
            assemble_compressed(layers, image_config(&config, &diff_ids, platform))
        })
        .collect();
    Ok(CatalogImage {
        image: super::index::index_or_single(children),
        static_server: servers.iter().all(|(_, server)| server.static_server),
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

    /// A small stand-in for the server: any executable file will do for the image's layout,
    /// and an installed one has not changed for long (it has an identity).
    fn server() -> PathBuf {
        PathBuf::from("/bin/busybox")
            .canonicalize()
            .expect("/bin/busybox: install busybox-static (the README's test command does)")
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

    /// Each layer's bytes, uncompressed.
    fn uncompressed(image: &crate::image::BuiltImage) -> Vec<Vec<u8>> {
        image
            .layers
            .iter()
            .map(|layer| {
                let mut tar = Vec::new();
                std::io::Read::read_to_end(
                    &mut flate2::read::MultiGzDecoder::new(&layer.bytes().unwrap()[..]),
                    &mut tar,
                )
                .unwrap();
                tar
            })
            .collect()
    }

    #[test]
    fn a_cached_server_layer_gives_the_same_image() {
        let (dir, server) = (catalog(), server());
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(cache_dir.path());
        let uncached = ServerLayer::prepare_with(&server, None).unwrap();
        let stored = ServerLayer::prepare_with(&server, Some(&cache)).unwrap();
        let hit = ServerLayer::prepare_with(&server, Some(&cache)).unwrap();
        let digests: Vec<String> = [&uncached, &stored, &hit]
            .iter()
            .map(|layer| {
                build_catalog_image_with(dir.path(), layer)
                    .unwrap()
                    .image
                    .digest()
            })
            .collect();
        assert_eq!(digests[0], digests[1]);
        assert_eq!(digests[0], digests[2]);
        // Each diff ID is the digest of its uncompressed layer, each layer digest that of its
        // bytes, and the server's layer is the same for another catalog.
        let image = build_catalog_image_with(dir.path(), &hit).unwrap().image;
        let config: serde_json::Value = serde_json::from_slice(&image.config).unwrap();
        let tars = uncompressed(&image);
        assert_eq!(tars.len(), 2);
        for (index, tar) in tars.iter().enumerate() {
            assert_eq!(config["rootfs"]["diff_ids"][index], digest(tar).as_str());
            assert_eq!(
                image.layers[index].digest(),
                digest(&image.layers[index].bytes().unwrap())
            );
        }
        std::fs::write(dir.path().join("pkg/catalog.json"), b"{\"b\":2}\n").unwrap();
        let other = build_catalog_image_with(dir.path(), &hit).unwrap().image;
        assert_eq!(other.layers[0], image.layers[0]);
        assert_ne!(other.layers[1], image.layers[1]);
    }

    #[test]
    fn a_warm_build_finds_the_server_layer_by_the_files_identity() {
        // An installed program, unchanged for long: it has an identity.
        let server = server();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = LayerCache::at(cache_dir.path());
        let first = ServerLayer::prepare_with(&server, Some(&cache)).unwrap();
        let identities: Vec<_> = std::fs::read_dir(cache_dir.path().join("layers"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".id"))
            .collect();
        assert_eq!(identities.len(), 1, "the server's identity is remembered");
        // The identity names the uncompressed layer: a wrong one is caught by the layer's
        // own key (no layer is stored for it), so the layer is built from the file again.
        let wrong = "00".repeat(32);
        std::fs::write(identities[0].path(), &wrong).unwrap();
        let rebuilt = ServerLayer::prepare_with(&server, Some(&cache)).unwrap();
        assert_eq!(rebuilt.layer, first.layer);
        assert_eq!(rebuilt.diff_id, first.diff_id);
        let hit = ServerLayer::prepare_with(&server, Some(&cache)).unwrap();
        assert_eq!(hit.layer, first.layer);
        assert_eq!(hit.diff_id, first.diff_id);
    }

    #[test]
    fn a_file_changed_just_now_has_no_identity() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("bundle-tool");
        std::fs::copy(server(), &copy).unwrap();
        let entries = program_with_libraries(&copy).unwrap();
        assert_eq!(entries_identity(&entries).unwrap(), None);
        let installed = program_with_libraries(&server()).unwrap();
        let identity = entries_identity(&installed).unwrap();
        assert!(identity.is_some());
        // Any other field of an entry gives another identity.
        let mut moved = installed.clone();
        if let Some(RootfsEntry::File { path, .. }) = moved.first_mut() {
            path.push_str("-moved");
        }
        assert_ne!(entries_identity(&moved).unwrap(), identity);
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
        let mut seen = BTreeMap::new();
        for tar in uncompressed(&built.image) {
            let mut archive = tar::Archive::new(&tar[..]);
            for entry in archive.entries().unwrap() {
                let entry = entry.unwrap();
                let path = entry.path().unwrap().to_string_lossy().into_owned();
                let link = entry
                    .link_name()
                    .unwrap()
                    .map(|l| l.to_string_lossy().into_owned());
                seen.insert(path, (entry.header().mode().unwrap(), link));
            }
        }
        assert_eq!(
            seen["usr/bin/grpc_health_probe"].1.as_deref(),
            Some("catalog-server")
        );
        assert_eq!(seen["usr/bin/catalog-server"].0, 0o755);
        assert_eq!(seen["tmp/"].0, 0o1777);
        assert_eq!(seen["configs/pkg/catalog.json"].0, 0o644);
    }
}
