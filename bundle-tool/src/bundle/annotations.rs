//! `metadata/annotations.yaml` and the matching `bundle.Dockerfile` labels.

use std::collections::BTreeMap;

/// The media type of a registry+v1 bundle.
pub const MEDIATYPE_REGISTRY_V1: &str = "registry+v1";
/// Annotation key: the bundle format.
pub const MEDIATYPE_KEY: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// Annotation key: where the manifests are in the image.
pub const MANIFESTS_KEY: &str = "operators.operatorframework.io.bundle.manifests.v1";
/// Annotation key: where the metadata is in the image.
pub const METADATA_KEY: &str = "operators.operatorframework.io.bundle.metadata.v1";
/// Annotation key: the package name.
pub const PACKAGE_KEY: &str = "operators.operatorframework.io.bundle.package.v1";
/// Annotation key: comma-separated channels.
pub const CHANNELS_KEY: &str = "operators.operatorframework.io.bundle.channels.v1";
/// Annotation key: the default channel.
pub const DEFAULT_CHANNEL_KEY: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// The six bundle annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleAnnotations {
    /// The package the bundle belongs to.
    pub package: String,
    /// The channels it joins.
    pub channels: Vec<String>,
    /// The package's default channel, if this bundle sets it.
    pub default_channel: Option<String>,
}

impl BundleAnnotations {
    /// All keys and values, sorted by key (the order of annotations.yaml and the labels).
    pub fn labels(&self) -> BTreeMap<&'static str, String> {
        let mut labels = BTreeMap::from([
            (MEDIATYPE_KEY, MEDIATYPE_REGISTRY_V1.to_string()),
            (MANIFESTS_KEY, "manifests/".to_string()),
            (METADATA_KEY, "metadata/".to_string()),
            (PACKAGE_KEY, self.package.clone()),
            (CHANNELS_KEY, self.channels.join(",")),
        ]);
        if let Some(default) = &self.default_channel {
            labels.insert(DEFAULT_CHANNEL_KEY, default.clone());
        }
        labels
    }

    /// `metadata/annotations.yaml`.
    pub fn to_yaml(&self) -> String {
        let mut out = String::from("annotations:\n");
        for (key, value) in self.labels() {
            out.push_str(&format!("  {key}: {}\n", yaml_scalar(&value)));
        }
        out
    }

    /// `bundle.Dockerfile`, with paths relative to the folder that holds the bundle folder.
    pub fn dockerfile(&self, bundle_dir_name: &str) -> String {
        let mut out = String::from("FROM scratch\n\n# Core bundle labels.\n");
        for (key, value) in self.labels() {
            out.push_str(&format!("LABEL {key}={value}\n"));
        }
        out.push_str(&format!(
            "\n# Copy files to locations specified by labels.\nCOPY {bundle_dir_name}/manifests /manifests/\nCOPY {bundle_dir_name}/metadata /metadata/\n"
        ));
        out
    }
}

/// A YAML scalar that Go's YAML 1.1 readers read back as the same string.
fn yaml_scalar(value: &str) -> String {
    serde_saphyr::to_string(&value)
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| format!("{value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BundleAnnotations {
        BundleAnnotations {
            package: "redis-operator".into(),
            channels: vec!["alpha".into(), "stable".into()],
            default_channel: Some("stable".into()),
        }
    }

    #[test]
    fn annotations_yaml_has_all_six_keys() {
        let yaml = sample().to_yaml();
        for key in [
            MEDIATYPE_KEY,
            MANIFESTS_KEY,
            METADATA_KEY,
            PACKAGE_KEY,
            CHANNELS_KEY,
            DEFAULT_CHANNEL_KEY,
        ] {
            assert!(yaml.contains(key), "{key} missing from\n{yaml}");
        }
        let parsed: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(parsed["annotations"][CHANNELS_KEY], "alpha,stable");
        assert_eq!(parsed["annotations"][MEDIATYPE_KEY], "registry+v1");
    }

    #[test]
    fn dockerfile_labels_match_the_annotations() {
        let dockerfile = sample().dockerfile("bundle");
        for (key, value) in sample().labels() {
            assert!(dockerfile.contains(&format!("LABEL {key}={value}\n")));
        }
        assert!(dockerfile.starts_with("FROM scratch\n"));
        assert!(dockerfile.contains("COPY bundle/manifests /manifests/\n"));
    }
}
