//! OCI image layout folders: `oci-layout`, `index.json` and `blobs/sha256/…`.

use std::path::Path;

use serde_json::{Value, json};

use super::{Blob, BuiltImage, digest};
use crate::durable;

const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Writes one blob unless the layout has it whole already (a blob's name is its digest, so a
/// file of the right size under it is this blob: every blob is written by a rename of a
/// complete, fsynced file). Its bytes are only read when it is written.
fn write_blob(dir: &Path, blob: &Blob) -> std::io::Result<()> {
    let hex = blob.digest().trim_start_matches("sha256:");
    let path = dir.join("blobs").join("sha256").join(hex);
    let whole = std::fs::metadata(&path).is_ok_and(|m| m.len() == blob.size());
    if !whole {
        std::fs::create_dir_all(path.parent().expect("blob folder"))?;
        durable::write_file(&path, &blob.bytes()?)?;
    }
    Ok(())
}

/// Adds `image` to the layout at `dir` under `tag` (replacing an earlier image of that tag).
pub fn write_layout(dir: &Path, tag: &str, image: &BuiltImage) -> std::io::Result<()> {
    write_images(dir, &[(tag, image)])
}

/// Adds every `(tag, image)` to the layout at `dir` in one change of `index.json`: every blob
/// is written and fsynced first, so that no state of `index.json` a kill can leave names a
/// blob that is not there, and the index is replaced once, so that it shows all the new tags
/// or none.
pub fn write_images(dir: &Path, images: &[(&str, &BuiltImage)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let marker = dir.join("oci-layout");
    const MARKER: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;
    if std::fs::read(&marker).ok().as_deref() != Some(MARKER) {
        durable::write_file(&marker, MARKER)?;
    }
    for (_, image) in images {
        // An index's images first: no state names a manifest whose blobs are missing.
        for child in image.children.iter().chain(std::iter::once(*image)) {
            for blob in child.blobs() {
                write_blob(dir, &blob)?;
            }
            write_blob(dir, &Blob::new(child.manifest.clone()))?;
        }
    }
    let index_path = dir.join("index.json");
    let mut index: Value = std::fs::read(&index_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({"schemaVersion": 2, "manifests": []}));
    let manifests = index["manifests"]
        .as_array_mut()
        .expect("index.json has manifests");
    for (tag, image) in images {
        manifests.retain(|m| m["annotations"][REF_NAME] != *tag);
        manifests.push(json!({
            "mediaType": image.media_type(),
            "digest": image.digest(),
            "size": image.manifest.len(),
            "annotations": {REF_NAME: tag},
        }));
    }
    durable::write_file(
        &index_path,
        &serde_json::to_vec(&index).expect("serializes"),
    )
}

/// The manifest digest tagged `tag` in the layout at `dir`, if there is one.
pub fn layout_digest(dir: &Path, tag: &str) -> Option<String> {
    let index: Value = serde_json::from_slice(&std::fs::read(dir.join("index.json")).ok()?).ok()?;
    index["manifests"]
        .as_array()?
        .iter()
        .find(|m| m["annotations"][REF_NAME] == tag)
        .and_then(|m| m["digest"].as_str())
        .map(str::to_string)
}

/// Reads the image tagged `tag` (or the only one) from the layout at `dir`.
pub fn read_layout(dir: &Path, tag: Option<&str>) -> std::io::Result<BuiltImage> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let index: Value = serde_json::from_slice(&std::fs::read(dir.join("index.json"))?)
        .map_err(|e| invalid(format!("{}: {e}", dir.join("index.json").display())))?;
    let manifests = index["manifests"].as_array().cloned().unwrap_or_default();
    let entry = match tag {
        Some(tag) => manifests.iter().find(|m| m["annotations"][REF_NAME] == tag),
        None if manifests.len() == 1 => manifests.first(),
        None => None,
    }
    .ok_or_else(|| invalid(format!("{}: no image tagged {tag:?}", dir.display())))?;
    let blob = |d: &str| -> std::io::Result<Vec<u8>> {
        // A digest is a file name here: nothing but `sha256:` and hex may reach the path.
        let hex = d.strip_prefix("sha256:").unwrap_or_default();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(format!("{}: bad blob digest {d:?}", dir.display())));
        }
        let bytes = std::fs::read(dir.join("blobs").join("sha256").join(hex))?;
        if digest(&bytes) != d {
            return Err(invalid(format!("blob {d} does not match its digest")));
        }
        Ok(bytes)
    };
    let manifest = blob(entry["digest"].as_str().unwrap_or_default())?;
    let parsed: Value = serde_json::from_slice(&manifest).map_err(|e| invalid(e.to_string()))?;
    let media_type = entry["mediaType"].as_str().unwrap_or_default();
    if super::index::is_index_manifest(media_type, &parsed) {
        let mut children = Vec::new();
        for child in parsed["manifests"].as_array().cloned().unwrap_or_default() {
            let bytes = blob(child["digest"].as_str().unwrap_or_default())?;
            children.push(image_of(dir, tag, bytes, &blob)?);
        }
        if children.is_empty() {
            return Err(invalid(format!(
                "{}: the index tagged {tag:?} lists no image",
                dir.display()
            )));
        }
        return Ok(BuiltImage {
            manifest,
            config: Vec::new(),
            layers: Vec::new(),
            children,
        });
    }
    image_of(dir, tag, manifest, &blob)
}

/// The image whose manifest is `manifest`, its blobs read with `blob`.
fn image_of(
    dir: &Path,
    tag: Option<&str>,
    manifest: Vec<u8>,
    blob: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<BuiltImage> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let parsed: Value = serde_json::from_slice(&manifest).map_err(|e| invalid(e.to_string()))?;
    let config = blob(parsed["config"]["digest"].as_str().unwrap_or_default())?;
    let layers = parsed["layers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|layer| {
            let d = layer["digest"].as_str().unwrap_or_default();
            blob(d).map(|bytes| Blob::with_digest(d.to_string(), bytes))
        })
        .collect::<std::io::Result<Vec<Blob>>>()?;
    if layers.is_empty() {
        return Err(invalid(format!(
            "{}: the image tagged {tag:?} has no layer",
            dir.display()
        )));
    }
    Ok(BuiltImage {
        manifest,
        config,
        layers,
        children: Vec::new(),
    })
}
