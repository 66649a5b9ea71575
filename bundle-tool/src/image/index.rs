//! OCI image indexes: one image per platform under one digest, as `docker buildx --platform`
//! makes them. One platform makes no index: the image is the single manifest it always was
//! (the same digest as before indexes existed). The index lists its images in the order the
//! platforms were given, each with the platform its config names, and has no annotations or
//! times, so the same images make the same index digest.

use serde_json::{Value, json};

use super::{BuiltImage, DOCKER_MANIFEST_MEDIA_TYPE, ImageFormat, Platform};

/// OCI image index media type.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// Docker manifest list media type.
pub const DOCKER_LIST_MEDIA_TYPE: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";

/// Whether a manifest of `media_type` (or, without one, of this JSON) is an index.
pub fn is_index_manifest(media_type: &str, manifest: &Value) -> bool {
    media_type == INDEX_MEDIA_TYPE
        || media_type == DOCKER_LIST_MEDIA_TYPE
        || (media_type.is_empty() && manifest["manifests"].is_array())
}

/// The only image of `children`, or their index.
pub(super) fn index_or_single(mut children: Vec<BuiltImage>) -> BuiltImage {
    if children.len() == 1 {
        return children.remove(0);
    }
    let format = match children.first().map(BuiltImage::media_type).as_deref() {
        Some(DOCKER_MANIFEST_MEDIA_TYPE) => ImageFormat::Docker,
        _ => ImageFormat::Oci,
    };
    index_of(children, format)
}

/// The index over `children` (OCI, or a Docker manifest list for Docker manifests).
pub(super) fn index_of(children: Vec<BuiltImage>, format: ImageFormat) -> BuiltImage {
    let media_type = match format {
        ImageFormat::Oci => INDEX_MEDIA_TYPE,
        ImageFormat::Docker => DOCKER_LIST_MEDIA_TYPE,
    };
    let entries: Vec<Value> = children
        .iter()
        .map(|child| {
            json!({
                "mediaType": child.media_type(),
                "digest": child.digest(),
                "size": child.manifest.len(),
                "platform": child.platform().unwrap_or_else(Platform::linux_amd64).json(),
            })
        })
        .collect();
    let index = json!({
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": entries,
    });
    BuiltImage {
        manifest: serde_json::to_vec(&index).expect("JSON values serialize"),
        config: Vec::new(),
        layers: Vec::new(),
        children,
    }
}

/// The platforms an index lists, in its order (of a single image: its config's).
pub fn platforms(image: &BuiltImage) -> Vec<Platform> {
    if image.is_index() {
        image
            .children
            .iter()
            .filter_map(BuiltImage::platform)
            .collect()
    } else {
        image.platform().into_iter().collect()
    }
}

/// The entry of `manifest` (an index) for `wanted`: its digest and media type.
pub fn entry_for(manifest: &Value, wanted: &Platform) -> Option<(String, String)> {
    manifest["manifests"].as_array()?.iter().find_map(|entry| {
        let platform = Platform::of_json(&entry["platform"])?;
        platform.satisfies(wanted).then(|| {
            (
                entry["digest"].as_str().unwrap_or_default().to_string(),
                entry["mediaType"].as_str().unwrap_or_default().to_string(),
            )
        })
    })
}

/// The platforms listed in `manifest` (an index), for an error that says what there is.
pub fn listed_platforms(manifest: &Value) -> String {
    manifest["manifests"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| Platform::of_json(&e["platform"]))
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn bundle() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for folder in ["manifests", "metadata"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            std::fs::write(dir.path().join(folder).join("a.yaml"), folder).unwrap();
        }
        dir
    }

    #[test]
    fn one_platform_is_the_single_image_and_two_share_the_layer() {
        let dir = bundle();
        let labels = BTreeMap::new();
        let single = super::super::build_bundle_image(dir.path(), &labels).unwrap();
        let amd64 =
            super::super::build_bundle_image_for(dir.path(), &labels, &[Platform::linux_amd64()])
                .unwrap();
        assert_eq!(single.digest(), amd64.digest());
        assert!(!amd64.is_index());
        let both = [
            Platform::linux_amd64(),
            Platform::parse("linux/arm64").unwrap(),
        ];
        let index = super::super::build_bundle_image_for(dir.path(), &labels, &both).unwrap();
        let again = super::super::build_bundle_image_for(dir.path(), &labels, &both).unwrap();
        assert_eq!(index.digest(), again.digest());
        assert_eq!(index.media_type(), INDEX_MEDIA_TYPE);
        assert_eq!(platforms(&index), both.to_vec());
        assert_eq!(index.children[0].digest(), single.digest());
        assert_eq!(index.children[0].layers, index.children[1].layers);
        let config: Value = serde_json::from_slice(&index.children[1].config).unwrap();
        assert_eq!(config["architecture"], "arm64");
        let manifest: Value = serde_json::from_slice(&index.manifest).unwrap();
        assert_eq!(
            entry_for(&manifest, &both[1]).unwrap().0,
            index.children[1].digest()
        );
        assert_eq!(listed_platforms(&manifest), "linux/amd64, linux/arm64");
        let docker = index.with_format(ImageFormat::Docker);
        assert_eq!(docker.media_type(), DOCKER_LIST_MEDIA_TYPE);
        assert_eq!(docker.children[1].media_type(), DOCKER_MANIFEST_MEDIA_TYPE);
    }
}
