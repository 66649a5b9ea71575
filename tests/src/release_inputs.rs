//! What tests of releases and pushes start from: a copy of the inputs a release reads, and
//! OCI layouts of images of any size.

use std::path::{Path, PathBuf};

/// A copy of what a release reads (as tests/tests/release.rs makes it): `bundle-tool.yaml`,
/// the operator's manifests, the catalog and the OLM v1 installer's RBAC, in a temporary folder
/// named `prefix…`.
pub fn release_repository(prefix: &str) -> tempfile::TempDir {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    std::fs::copy(
        workspace.join("bundle-tool.yaml"),
        dir.path().join("bundle-tool.yaml"),
    )
    .unwrap();
    for folder in ["operator/config", "catalog"] {
        crate::copy_dir(&workspace.join(folder), &dir.path().join(folder)).unwrap();
    }
    std::fs::create_dir(dir.path().join("olm")).unwrap();
    std::fs::copy(
        workspace.join("olm/clusterextension-rbac.yaml"),
        dir.path().join("olm/clusterextension-rbac.yaml"),
    )
    .unwrap();
    dir
}

/// An OCI layout of one image, tagged `big`, with `layers` layers of `size` bytes each, none
/// alike. The bytes depend only on the process and the sizes: calls that must make different
/// images give different sizes.
pub fn write_random_image_layout(dir: &Path, layers: usize, size: usize) -> PathBuf {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let write_blob = |bytes: &[u8]| -> (String, usize) {
        let digest = bundle_tool::image::digest(bytes);
        std::fs::write(blobs.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
        (digest, bytes.len())
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
    let mut descriptors = Vec::new();
    for _ in 0..layers {
        let mut bytes = Vec::with_capacity(size);
        while bytes.len() < size {
            // xorshift: incompressible and different in every layer.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.extend_from_slice(&state.to_le_bytes());
        }
        let (digest, size) = write_blob(&bytes);
        descriptors.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": digest,
            "size": size,
        }));
    }
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": descriptors.iter().map(|d| d["digest"].clone()).collect::<Vec<_>>()},
    })
    .to_string();
    let (config_digest, config_size) = write_blob(config.as_bytes());
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config_size},
        "layers": descriptors,
    })
    .to_string();
    let (manifest_digest, manifest_size) = write_blob(manifest.as_bytes());
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest_size,
                "annotations": {"org.opencontainers.image.ref.name": "big"},
            }],
        })
        .to_string(),
    )
    .unwrap();
    dir.to_path_buf()
}
