//! The ClusterServiceVersion that opm serves for a bundle that carries only an
//! `olm.csv.metadata` property (every bundle of a catalog rendered by a recent `opm render`).
//!
//! OLM's packageserver reads `csvJson` of channel heads to show descriptions, icons and CRD
//! descriptors, so the synthesized CSV must have the same content as opm's. opm builds it by
//! decoding the metadata into operator-framework/api's Go types and encoding those again, which
//! drops unknown fields, adds fields that are never omitted (`provider: {}`, `cleanup`,
//! `status`) and fixes the key order. The structs below mirror those Go types field for field,
//! so serde gives the same document.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The `olm.csv.metadata` property value.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsvMetadata {
    annotations: BTreeMap<String, String>,
    api_service_definitions: ApiServiceDefinitions,
    #[serde(rename = "crdDescriptions")]
    custom_resource_definitions: CustomResourceDefinitions,
    description: String,
    display_name: String,
    install_modes: Vec<InstallMode>,
    keywords: Vec<String>,
    labels: BTreeMap<String, String>,
    links: Vec<AppLink>,
    maintainers: Vec<Maintainer>,
    maturity: String,
    min_kube_version: String,
    #[serde(rename = "nativeAPIs")]
    native_apis: Vec<GroupVersionKind>,
    provider: AppLink,
}

/// What the CSV gets from outside the metadata.
pub struct CsvContext<'a> {
    /// The bundle name (`metadata.name`).
    pub name: &'a str,
    /// The bundle version, normalized.
    pub version: String,
    /// The package's description, used when the metadata has none.
    pub package_description: &'a str,
    /// The package's icon (base64, media type).
    pub package_icon: Option<(String, String)>,
    /// The bundle's related images (name, image).
    pub related_images: Vec<(String, String)>,
}

/// Why a CSV could not be synthesized.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The `olm.csv.metadata` value does not decode.
    #[error("parse olm.csv.metadata: {0}")]
    Metadata(serde_json::Error),
    /// The CSV could not be encoded.
    #[error("{0}")]
    Encode(serde_json::Error),
}

/// Builds opm's CSV JSON (Go's encoding, HTML characters escaped) from the metadata (JSON).
pub fn synthesize(metadata: &str, context: &CsvContext<'_>) -> Result<String, CsvError> {
    let metadata: CsvMetadata = serde_json::from_str(metadata).map_err(CsvError::Metadata)?;
    let description = if metadata.description.is_empty() {
        context.package_description.to_string()
    } else {
        metadata.description
    };
    let csv = ClusterServiceVersion {
        kind: "ClusterServiceVersion",
        api_version: "operators.coreos.com/v1alpha1",
        metadata: ObjectMeta {
            name: context.name,
            labels: metadata.labels,
            annotations: metadata.annotations,
        },
        spec: Spec {
            install: Install {
                strategy: "deployment",
                spec: InstallSpec { deployments: None },
            },
            version: context.version.clone(),
            maturity: metadata.maturity,
            customresourcedefinitions: metadata.custom_resource_definitions,
            apiservicedefinitions: metadata.api_service_definitions,
            native_apis: metadata.native_apis,
            min_kube_version: metadata.min_kube_version,
            display_name: metadata.display_name,
            description,
            keywords: metadata.keywords,
            maintainers: metadata.maintainers,
            provider: metadata.provider,
            links: metadata.links,
            icon: context
                .package_icon
                .iter()
                .map(|(data, media_type)| Icon {
                    base64data: data.clone(),
                    mediatype: media_type.clone(),
                })
                .collect(),
            install_modes: metadata.install_modes,
            cleanup: Cleanup { enabled: false },
            related_images: context
                .related_images
                .iter()
                .map(|(name, image)| RelatedImage {
                    name: name.clone(),
                    image: image.clone(),
                })
                .collect(),
        },
        status: Status {
            cleanup: BTreeMap::new(),
        },
    };
    // Encoded from the struct, not a `Value`, so that keys keep Go's field order.
    let text = serde_json::to_string(&csv).map_err(CsvError::Encode)?;
    Ok(escape_html_like_go(&text))
}

/// Go's JSON encoder escapes `<`, `>`, `&` and the two Unicode line separators.
fn escape_html_like_go(text: &str) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text.to_string();
    }
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClusterServiceVersion<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: ObjectMeta<'a>,
    spec: Spec,
    status: Status,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectMeta<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    install: Install,
    version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    maturity: String,
    customresourcedefinitions: CustomResourceDefinitions,
    apiservicedefinitions: ApiServiceDefinitions,
    #[serde(rename = "nativeAPIs", skip_serializing_if = "Vec::is_empty")]
    native_apis: Vec<GroupVersionKind>,
    #[serde(skip_serializing_if = "String::is_empty")]
    min_kube_version: String,
    display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keywords: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    maintainers: Vec<Maintainer>,
    provider: AppLink,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    links: Vec<AppLink>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    icon: Vec<Icon>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    install_modes: Vec<InstallMode>,
    cleanup: Cleanup,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_images: Vec<RelatedImage>,
}

#[derive(Serialize)]
struct Install {
    strategy: &'static str,
    spec: InstallSpec,
}

#[derive(Serialize)]
struct InstallSpec {
    deployments: Option<()>,
}

#[derive(Serialize)]
struct Cleanup {
    enabled: bool,
}

#[derive(Serialize)]
struct Status {
    cleanup: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Icon {
    base64data: String,
    mediatype: String,
}

#[derive(Serialize)]
struct RelatedImage {
    name: String,
    image: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct CustomResourceDefinitions {
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    owned: Vec<CrdDescription>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    required: Vec<CrdDescription>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct ApiServiceDefinitions {
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    owned: Vec<ApiServiceDescription>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    required: Vec<ApiServiceDescription>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CrdDescription {
    name: String,
    version: String,
    kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    resources: Vec<ResourceReference>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    status_descriptors: Vec<Descriptor>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    spec_descriptors: Vec<Descriptor>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    action_descriptors: Vec<Descriptor>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ApiServiceDescription {
    name: String,
    group: String,
    version: String,
    kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    deployment_name: String,
    #[serde(skip_serializing_if = "is_zero")]
    container_port: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    resources: Vec<ResourceReference>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    status_descriptors: Vec<Descriptor>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    spec_descriptors: Vec<Descriptor>,
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    action_descriptors: Vec<Descriptor>,
}

/// Spec, status and action descriptors share one shape.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Descriptor {
    path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(
        rename = "x-descriptors",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    x_descriptors: Vec<String>,
    // Go keeps `value` as raw JSON and omits it only when absent; `null` stays `null`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "raw_value"
    )]
    value: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct ResourceReference {
    name: String,
    kind: String,
    version: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct GroupVersionKind {
    group: String,
    version: String,
    kind: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct Maintainer {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    email: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct AppLink {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct InstallMode {
    #[serde(rename = "type")]
    type_: String,
    supported: bool,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Go decodes `null` into an empty slice or string; serde would reject it.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A present `value` is kept as written, `null` included.
fn raw_value<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> CsvContext<'static> {
        CsvContext {
            name: "demo.v1.0.0",
            version: "1.0.0".into(),
            package_description: "from the package",
            package_icon: Some(("aWNvbg==".into(), "image/svg+xml".into())),
            related_images: vec![("".into(), "example.com/demo@sha256:00".into())],
        }
    }

    #[test]
    fn fields_come_in_go_order_with_go_defaults() {
        let metadata = json!({
            "displayName": "Demo <beta>",
            "provider": {"name": "ACME"},
            "crdDescriptions": {"owned": [{"name": "a.x.io", "version": "v1", "kind": "A",
                "specDescriptors": [{"path": "size", "value": null}], "unknown": 1}]},
            "annotations": {"b": "2", "a": "1"}
        });
        let text = synthesize(&metadata.to_string(), &context()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com/v1alpha1","#,
                r#""metadata":{"name":"demo.v1.0.0","annotations":{"a":"1","b":"2"}},"#,
                r#""spec":{"install":{"strategy":"deployment","spec":{"deployments":null}},"version":"1.0.0","#,
                r#""customresourcedefinitions":{"owned":[{"name":"a.x.io","version":"v1","kind":"A","#,
                r#""specDescriptors":[{"path":"size","value":null}]}]},"apiservicedefinitions":{},"#,
                r#""displayName":"Demo \u003cbeta\u003e","description":"from the package","#,
                r#""provider":{"name":"ACME"},"icon":[{"base64data":"aWNvbg==","mediatype":"image/svg+xml"}],"#,
                r#""cleanup":{"enabled":false},"relatedImages":[{"name":"","image":"example.com/demo@sha256:00"}]},"#,
                r#""status":{"cleanup":{}}}"#
            )
        );
    }

    #[test]
    fn a_metadata_of_the_wrong_shape_is_an_error() {
        let error = synthesize(r#"{"keywords": "not a list"}"#, &context())
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("parse olm.csv.metadata:"), "{error}");
    }
}
