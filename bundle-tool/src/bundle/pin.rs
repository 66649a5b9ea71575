//! Digest pinning (`generate --use-image-digests`, `release --pin-digests`): every image a CSV
//! names is rewritten from `name:tag` to `name@sha256:…`, and `spec.relatedImages` lists each
//! of them, so that a disconnected cluster, whose mirror holds images by digest only, can pull
//! everything the operator runs.
//!
//! The places are those operator-sdk v1.42.3 pins through operator-manifest-tools v0.10.0
//! (`pkg/pullspec/pullspec.go`): `spec.relatedImages[].image`; the `image` of every container
//! and init container of the install strategy's Deployments; the values of their
//! `RELATED_IMAGE_*` environment variables; and the `containerImage` annotation. Unlike
//! operator-manifest-tools, other annotation values are not scanned with a heuristic for
//! things that look like image references (docs/conformance.md says why).
//!
//! This module is pure: resolving a reference to its digest is the registry's part
//! (`image::digests`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::GeneratedBundle;
use super::inputs::csv_file;

/// Why a bundle could not be pinned.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The bundle has no CSV to pin.
    #[error("the bundle has no ClusterServiceVersion to pin")]
    NoCsv,
    /// The CSV the generator wrote could not be read back.
    #[error("reading back {file}: {message}")]
    Unreadable {
        /// The CSV's path in the bundle.
        file: String,
        /// The YAML parser's words.
        message: String,
    },
    /// An image has no digest in the resolved set (a caller's mistake, reported rather than
    /// left as a tag).
    #[error("{image} was not resolved to a digest")]
    Unresolved {
        /// The reference as the CSV names it.
        image: String,
    },
}

/// Whether `image` already names a digest.
pub fn is_pinned(image: &str) -> bool {
    image.contains('@')
}

/// `image` without its tag, at `digest`: `quay.io/a/b:1.0` → `quay.io/a/b@sha256:…`. A port
/// in the registry host (`localhost:5000/a:1`) is not a tag; a name with no tag gets the
/// digest added. The name is otherwise kept as written (no `docker.io/` added).
pub fn pinned(image: &str, digest: &str) -> String {
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    let name = match image[slash..].find(':') {
        Some(colon) => &image[..slash + colon],
        None => image,
    };
    format!("{name}@{digest}")
}

/// The image fields of `csv` that pinning rewrites, as JSON pointers, in a fixed order.
fn image_fields(csv: &Value) -> Vec<String> {
    let mut fields = Vec::new();
    if csv["metadata"]["annotations"]["containerImage"].is_string() {
        fields.push("/metadata/annotations/containerImage".to_string());
    }
    let deployments = csv["spec"]["install"]["spec"]["deployments"].as_array();
    for (d, deployment) in deployments.into_iter().flatten().enumerate() {
        let pod = &deployment["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for (c, container) in pod[list].as_array().into_iter().flatten().enumerate() {
                let base =
                    format!("/spec/install/spec/deployments/{d}/spec/template/spec/{list}/{c}");
                if container["image"].is_string() {
                    fields.push(format!("{base}/image"));
                }
                for (e, env) in container["env"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let name = env["name"].as_str().unwrap_or_default();
                    if name.starts_with("RELATED_IMAGE_") && env["value"].is_string() {
                        fields.push(format!("{base}/env/{e}/value"));
                    }
                }
            }
        }
    }
    for (i, related) in csv["spec"]["relatedImages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if related["image"].is_string() {
            fields.push(format!("/spec/relatedImages/{i}/image"));
        }
    }
    fields
}

/// Every image `csv` names that is not pinned yet, each once.
pub fn unpinned_images(csv: &Value) -> BTreeSet<String> {
    image_fields(csv)
        .iter()
        .filter_map(|field| csv.pointer(field).and_then(Value::as_str))
        .filter(|image| !image.is_empty() && !is_pinned(image))
        .map(str::to_string)
        .collect()
}

/// Rewrites every image field of `csv` to its pinned form from `digests` (reference →
/// digest), then completes `spec.relatedImages`: each image a container, an init container
/// or a `RELATED_IMAGE_*` variable names is listed once, named as `generate` names it (the
/// variable's suffix, else the container), an existing entry keeping its name.
pub fn pin_csv(csv: &mut Value, digests: &BTreeMap<String, String>) -> Result<(), PinError> {
    for field in image_fields(csv) {
        let Some(slot) = csv.pointer_mut(&field) else {
            continue;
        };
        let image = slot.as_str().unwrap_or_default().to_string();
        if image.is_empty() || is_pinned(&image) {
            continue;
        }
        let digest = digests.get(&image).ok_or_else(|| PinError::Unresolved {
            image: image.clone(),
        })?;
        *slot = json!(pinned(&image, digest));
    }
    complete_related_images(csv);
    Ok(())
}

/// Adds to `spec.relatedImages` each image of the Deployments it does not list yet.
fn complete_related_images(csv: &mut Value) {
    let mut listed: BTreeSet<String> = BTreeSet::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut related: Vec<Value> = csv["spec"]["relatedImages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for entry in &related {
        listed.extend(entry["image"].as_str().map(str::to_string));
        names.extend(entry["name"].as_str().map(str::to_string));
    }
    let pods = csv["spec"]["install"]["spec"]["deployments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| &d["spec"]["template"]["spec"]);
    let wanted = super::generate::image_candidates(pods);
    for (name, image) in wanted {
        if image.is_empty() || !listed.insert(image.clone()) {
            continue;
        }
        let unique = super::generate::claim_name(&mut names, &name);
        related.push(json!({"name": unique, "image": image}));
    }
    if !related.is_empty() {
        csv["spec"]["relatedImages"] = Value::Array(related);
    }
}

impl GeneratedBundle {
    /// Pins the CSV's images ([`pin_csv`]) to the digests `resolve` gives for the images not
    /// pinned yet, and writes the CSV back in the generator's form; how many were resolved.
    /// Resolving is the caller's (a registry's), so this module stays pure.
    pub fn pin_images<E: From<PinError>>(
        &mut self,
        resolve: impl FnOnce(&BTreeSet<String>) -> Result<BTreeMap<String, String>, E>,
    ) -> Result<usize, E> {
        let file = csv_file(self).ok_or(PinError::NoCsv)?.to_string();
        let unreadable = |message: String| PinError::Unreadable {
            file: file.clone(),
            message,
        };
        let mut csv: Value = serde_saphyr::from_str(&self.files[&file])
            .map_err(|error| unreadable(error.to_string()))?;
        let images = unpinned_images(&csv);
        let digests = resolve(&images)?;
        pin_csv(&mut csv, &digests)?;
        let text = serde_saphyr::to_string(&csv).map_err(|error| unreadable(error.to_string()))?;
        self.files.insert(file, text);
        Ok(images.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn the_tag_goes_and_the_port_stays() {
        assert_eq!(
            pinned("quay.io/example/op:0.1.0", DIGEST),
            format!("quay.io/example/op@{DIGEST}")
        );
        assert_eq!(
            pinned("localhost:5000/op:1", DIGEST),
            format!("localhost:5000/op@{DIGEST}")
        );
        assert_eq!(
            pinned("localhost:5000/op", DIGEST),
            format!("localhost:5000/op@{DIGEST}")
        );
        assert_eq!(pinned("redis:7", DIGEST), format!("redis@{DIGEST}"));
    }

    fn csv() -> Value {
        json!({
            "metadata": {"annotations": {"containerImage": "quay.io/example/op:0.1.0"}},
            "spec": {
                "relatedImages": [{"name": "op", "image": "quay.io/example/op:0.1.0"}],
                "install": {"spec": {"deployments": [{"spec": {"template": {"spec": {
                    "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                    "containers": [{
                        "name": "manager",
                        "image": "quay.io/example/op:0.1.0",
                        "env": [
                            {"name": "RELATED_IMAGE_REDIS", "value": "redis:7.2"},
                            {"name": "WATCH_NAMESPACE", "value": "quay.io/not/an:image"},
                            {"name": "RELATED_IMAGE_EXPORTER", "value": "quay.io/e/x@sha256:aa"}
                        ]
                    }]
                }}}}]}}
            }
        })
    }

    #[test]
    fn every_image_field_is_found_once_and_pinned_ones_are_left() {
        let images: Vec<String> = unpinned_images(&csv()).into_iter().collect();
        assert_eq!(
            images,
            ["busybox:1.36", "quay.io/example/op:0.1.0", "redis:7.2"]
        );
    }

    #[test]
    fn pinning_rewrites_every_field_and_completes_related_images() {
        let mut csv = csv();
        let digests: BTreeMap<String, String> = unpinned_images(&csv)
            .into_iter()
            .map(|image| (image, DIGEST.to_string()))
            .collect();
        pin_csv(&mut csv, &digests).unwrap();
        let container = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]
            ["containers"][0];
        assert_eq!(container["image"], format!("quay.io/example/op@{DIGEST}"));
        assert_eq!(container["env"][0]["value"], format!("redis@{DIGEST}"));
        assert_eq!(container["env"][1]["value"], "quay.io/not/an:image");
        assert_eq!(container["env"][2]["value"], "quay.io/e/x@sha256:aa");
        assert_eq!(
            csv["metadata"]["annotations"]["containerImage"],
            format!("quay.io/example/op@{DIGEST}")
        );
        assert_eq!(
            csv["spec"]["relatedImages"],
            json!([
                {"name": "op", "image": format!("quay.io/example/op@{DIGEST}")},
                {"name": "redis", "image": format!("redis@{DIGEST}")},
                {"name": "exporter", "image": "quay.io/e/x@sha256:aa"},
                {"name": "init", "image": format!("busybox@{DIGEST}")},
            ])
        );
        assert!(unpinned_images(&csv).is_empty());
    }

    #[test]
    fn an_image_left_unresolved_is_an_error_not_a_tag() {
        let mut csv = csv();
        let error = pin_csv(&mut csv, &BTreeMap::new()).unwrap_err();
        assert!(error.to_string().contains("was not resolved to a digest"));
    }
}
