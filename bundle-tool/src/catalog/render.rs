//! Rendering a registry+v1 bundle folder into an `olm.bundle` document, as `opm render` does:
//! the package and provided/required APIs as properties, every manifest inline as an
//! `olm.bundle.object`, related images from the CSV and its deployments.

use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::declcfg::{Bundle, Property, RawJson, RelatedImage};
use crate::bundle::annotations::PACKAGE_KEY;
use crate::go_json::{go_json, go_numbers};
use crate::manifest::read_stream;
use crate::manifest::text;
use crate::olm_property;

pub use crate::bundle::read::is_bundle_dir;

/// Why a bundle folder cannot be rendered, in opm's words.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// `manifests/` or `metadata/` could not be listed.
    #[error("{}: {error}", .path.display())]
    Folder {
        /// The folder.
        path: std::path::PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// No manifest holds an object.
    #[error("no bundle objects found")]
    NoObjects,
    /// No manifest is a CSV.
    #[error("no csv in bundle")]
    NoCsv,
    /// No metadata file holds annotations.
    #[error("Could not find annotations file")]
    NoAnnotations,
    /// An API the CSV owns has no CRD version in the bundle (boxed: rare, and large).
    #[error(
        "error checking provided apis in bundle {}: couldn't find {}/{}/{} ({}) in bundle",
        .0.bundle, .0.group, .0.version, .0.kind, .0.crd
    )]
    OwnedApiMissing(Box<MissingApi>),
}

/// An API a CSV owns that its bundle has no CRD version for.
#[derive(Debug)]
pub struct MissingApi {
    /// The CSV's name.
    pub bundle: String,
    /// The API's group.
    pub group: String,
    /// The API's version.
    pub version: String,
    /// The API's kind.
    pub kind: String,
    /// The owned CRD's name.
    pub crd: String,
}

fn files_sorted(dir: &Path) -> Result<Vec<std::path::PathBuf>, RenderError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|error| RenderError::Folder {
            path: dir.to_path_buf(),
            error,
        })?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| !t.is_dir()).unwrap_or(false))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}

/// The first document of a file, as Go's decoder reads it (one object per file).
fn first_document(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    let documents = if text.trim_start().starts_with('{') {
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .next()?
            .ok()
            .into_iter()
            .collect()
    } else {
        read_stream(path, &text)
            .ok()?
            .into_iter()
            .map(|d| d.value)
            .collect::<Vec<_>>()
    };
    documents.into_iter().next().map(go_numbers)
}

/// Renders the bundle folder `dir`; `image` is the bundle image reference ("" for a folder).
pub fn render_bundle_dir(dir: &Path, image: &str) -> Result<Bundle, RenderError> {
    let mut objects: Vec<Value> = Vec::new();
    let mut csv: Option<Value> = None;
    for file in files_sorted(&dir.join("manifests"))? {
        let Some(object) = first_document(&file) else {
            continue;
        };
        if !object.is_object() {
            continue;
        }
        if object["kind"] == "ClusterServiceVersion" {
            if csv.is_some() {
                continue;
            }
            csv = Some(object.clone());
        }
        objects.push(object);
    }
    if objects.is_empty() {
        return Err(RenderError::NoObjects);
    }
    let csv = csv.ok_or(RenderError::NoCsv)?;
    let name = text(&csv, "/metadata/name").to_string();

    // metadata/: the annotations, and optional dependencies and properties, found by content.
    let (mut annotations, mut dependencies, mut extra_properties) = (None, None, None);
    for file in files_sorted(&dir.join("metadata"))? {
        let Some(document) = first_document(&file) else {
            continue;
        };
        if annotations.is_none()
            && document
                .get("annotations")
                .is_some_and(|a| a.as_object().is_some_and(|m| !m.is_empty()))
        {
            annotations = Some(document["annotations"].clone());
        }
        if dependencies.is_none()
            && document
                .get("dependencies")
                .and_then(Value::as_array)
                .is_some_and(|d| !d.is_empty())
        {
            dependencies = Some(
                document["dependencies"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        if extra_properties.is_none()
            && document
                .get("properties")
                .and_then(Value::as_array)
                .is_some_and(|p| !p.is_empty())
        {
            extra_properties = Some(
                document["properties"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
    }
    let annotations = annotations.ok_or(RenderError::NoAnnotations)?;
    let package = text(
        &annotations,
        &format!("/{}", PACKAGE_KEY.replace('/', "~1")),
    )
    .to_string();

    // Owned CRDs in the CSV must be in the bundle.
    let crds: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .collect();
    for owned in csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let owned_name = text(owned, "/name");
        let version = text(owned, "/version");
        let present = crds.iter().any(|crd| {
            text(crd, "/metadata/name") == owned_name
                && (crd["spec"]["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| text(v, "/name") == version)
                    || text(crd, "/spec/version") == version)
        });
        if !present {
            return Err(RenderError::OwnedApiMissing(Box::new(MissingApi {
                bundle: name.clone(),
                group: owned_name
                    .split_once('.')
                    .map(|(_, g)| g)
                    .unwrap_or_default()
                    .to_string(),
                version: version.to_string(),
                kind: text(owned, "/kind").to_string(),
                crd: owned_name.to_string(),
            })));
        }
    }

    let mut provided: BTreeSet<String> = BTreeSet::new();
    let gvk = |group: &str, kind: &str, version: &str| {
        go_json(&json!({"group": group, "kind": kind, "version": version}))
    };
    for crd in &crds {
        let group = text(crd, "/spec/group");
        let kind = text(crd, "/spec/names/kind");
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            provided.insert(gvk(group, kind, text(version, "/name")));
        }
        let single = text(crd, "/spec/version");
        if !single.is_empty() {
            provided.insert(gvk(group, kind, single));
        }
    }
    for api in csv
        .pointer("/spec/apiservicedefinitions/owned")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        provided.insert(gvk(
            text(api, "/group"),
            text(api, "/kind"),
            text(api, "/version"),
        ));
    }
    let mut required: BTreeSet<String> = BTreeSet::new();
    for list in [
        "/spec/customresourcedefinitions/required",
        "/spec/apiservicedefinitions/required",
    ] {
        for api in csv
            .pointer(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let group = if list.contains("customresource") {
                text(api, "/name")
                    .split_once('.')
                    .map(|(_, g)| g)
                    .unwrap_or_default()
                    .to_string()
            } else {
                text(api, "/group").to_string()
            };
            required.insert(gvk(&group, text(api, "/kind"), text(api, "/version")));
        }
    }

    // (type, raw JSON value) pairs, deduplicated like opm's property set.
    let mut properties: Vec<(String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push = |type_: &str, raw: String| {
        if seen.insert((type_.to_string(), raw.clone())) {
            properties.push((type_.to_string(), raw));
        }
    };
    let version = text(&csv, "/spec/version").to_string();
    let release = text(&csv, "/spec/release").to_string();
    let mut package_value = json!({"packageName": package, "version": version});
    if !release.is_empty() {
        package_value["release"] = json!(release);
    }
    let mut others: Vec<(String, String)> = Vec::new();
    for property in extra_properties.into_iter().flatten().chain(
        csv.pointer("/metadata/annotations/olm.properties")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
            .into_iter()
            .flatten(),
    ) {
        let type_ = text(&property, "/type").to_string();
        match type_.as_str() {
            olm_property::GVK => {
                let v = &property["value"];
                provided.insert(gvk(
                    text(v, "/group"),
                    text(v, "/kind"),
                    text(v, "/version"),
                ));
            }
            olm_property::PACKAGE => {
                let v = &property["value"];
                package_value =
                    json!({"packageName": text(v, "/packageName"), "version": text(v, "/version")});
            }
            _ => others.push((type_, go_json(&property["value"]))),
        }
    }
    for dependency in dependencies.into_iter().flatten() {
        let type_ = text(&dependency, "/type");
        let v = &dependency["value"];
        match type_ {
            olm_property::GVK => {
                required.insert(gvk(text(v, "/group"), text(v, "/kind"), text(v, "/version")));
            }
            olm_property::PACKAGE => others.push((
                olm_property::PACKAGE_REQUIRED.into(),
                go_json(&json!({"packageName": text(v, "/packageName"), "versionRange": text(v, "/version")})),
            )),
            _ => others.push((type_.to_string(), go_json(v))),
        }
    }
    push(olm_property::PACKAGE, go_json(&package_value));
    for value in provided {
        push(olm_property::GVK, value);
    }
    for value in required {
        push(olm_property::GVK_REQUIRED, value);
    }
    for (type_, raw) in others {
        push(&type_, raw);
    }
    let mut objects_properties: Vec<(String, String)> = objects
        .iter()
        .map(|o| {
            (
                olm_property::BUNDLE_OBJECT.to_string(),
                go_json(&json!({"data": STANDARD.encode(go_json(o))})),
            )
        })
        .collect();
    properties.sort();
    objects_properties.sort();
    let to_property = |(type_, raw): (String, String)| Property {
        type_: type_.into(),
        // `go_json` wrote valid JSON.
        value: RawJson::from_json(&raw).unwrap_or_else(|_| RawJson::from_value(&Value::Null)),
    };
    let properties: Vec<Property> = properties
        .into_iter()
        .chain(objects_properties)
        .map(to_property)
        .collect();

    let mut related: Vec<RelatedImage> = csv
        .pointer("/spec/relatedImages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| RelatedImage {
            name: text(r, "/name").to_string(),
            image: text(r, "/image").to_string(),
        })
        .collect();
    let listed: BTreeSet<String> = related.iter().map(|r| r.image.clone()).collect();
    if !image.is_empty() && !listed.contains(image) {
        related.push(RelatedImage {
            name: String::new(),
            image: image.to_string(),
        });
    }
    if text(&csv, "/spec/install/strategy") == "deployment" {
        let mut operator_images = BTreeSet::new();
        for deployment in csv
            .pointer("/spec/install/spec/deployments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for list in ["containers", "initContainers"] {
                for container in deployment["spec"]["template"]["spec"][list]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    operator_images.insert(text(container, "/image").to_string());
                }
            }
        }
        for operator_image in operator_images {
            if !listed.contains(&operator_image) {
                related.push(RelatedImage {
                    name: String::new(),
                    image: operator_image,
                });
            }
        }
    }
    related.sort_by(|a, b| a.image.cmp(&b.image));

    Ok(Bundle {
        schema: "olm.bundle".into(),
        name,
        package,
        image: image.to_string(),
        properties,
        related_images: related,
    })
}
