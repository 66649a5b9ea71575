//! Bundle images without Docker: a deterministic OCI image built from a bundle folder, written
//! to an OCI image layout (readable by skopeo and umoci), pushed to any distribution registry
//! and pulled back safely.

mod access;
mod blob;
mod build;
mod catalog;
mod credentials;
mod digests;
mod index;
mod layer_cache;
mod layout;
mod platform;
mod pull;
mod push;
mod reference;
mod registries_conf;
mod registry;
mod retry;
mod rootfs;
mod session;
mod transport;
mod unpack;

pub use access::{RegistryAccess, RegistrySettings};
pub use blob::Blob;
pub use build::{
    BuiltImage, CATALOG_CONFIGS_LABEL, build_binary_image, build_binary_images, build_bundle_image,
    build_bundle_image_for,
};
pub use catalog::{
    CATALOG_USER, CatalogImage, SERVER_BINARY_VARIABLE, SERVER_PATH, ServerLayer,
    build_catalog_image_with, build_catalog_images, build_runnable_catalog_image, server_binaries,
    server_binary,
};
pub use credentials::Credentials;
pub use digests::{DigestsError, resolve_digests};
pub use index::{DOCKER_LIST_MEDIA_TYPE, INDEX_MEDIA_TYPE, platforms};
pub use layer_cache::{CACHE_DIR_VARIABLE, LayerCache};
pub use layout::{layout_digest, read_layout, write_images, write_layout};
pub use platform::{Platform, PlatformError, binaries_for};
pub use pull::{
    BUNDLE_PACKAGE_LABEL, BundleImagePuller, ImageKind, PullError, PulledImage, pull_to_temp,
};
pub use reference::parse_reference;
pub use registries_conf::{ConfFiles, PullSource, RegistriesConf, RegistriesConfError};
pub use registry::{BlobsPushed, RegistryClient};
pub use rootfs::{ContainerConfig, RootfsEntry, build_rootfs_image, program_with_libraries};
pub use transport::{Transport, TransportError};
pub use unpack::{unpack_layer, unpack_layers};

use sha2::{Digest, Sha256};

/// OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image config media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// OCI gzip layer media type.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// Docker schema 2 manifest media type.
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker image config media type.
pub const DOCKER_CONFIG_MEDIA_TYPE: &str = "application/vnd.docker.container.image.v1+json";
/// Docker gzip layer media type.
pub const DOCKER_LAYER_MEDIA_TYPE: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";

/// The manifest format of an image.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageFormat {
    /// OCI image manifest (the default).
    #[default]
    Oci,
    /// Docker image manifest v2, schema 2 (for registries or tools that want it).
    Docker,
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    digest_of_hash(&Sha256::digest(bytes))
}

/// `sha256:<hex>` of an already computed SHA-256.
fn digest_of_hash(hash: &[u8]) -> String {
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
