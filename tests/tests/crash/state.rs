//! What an output is after a run: digests of whole folders and files, an OCI layout's and a
//! registry's integrity, and the staging leftovers a re-run must have cleared.

use std::io::{Read, Write};
use std::path::Path;

use bundle_tool::image::digest;
use serde_json::Value;

pub fn copy_tree(from: &Path, to: &Path) {
    e2e::copy_dir(from, to).unwrap();
}

/// A digest of the whole tree at `dir` — every entry's path and kind, every file's bytes,
/// hidden files included — or `None` when it does not exist.
pub fn tree_digest(dir: &Path) -> Option<String> {
    if !dir.exists() {
        return None;
    }
    let mut listing = Vec::new();
    list(dir, dir, &mut listing);
    listing.sort();
    Some(digest(listing.join("\n").as_bytes()))
}

fn list(dir: &Path, base: &Path, listing: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let relative = path.strip_prefix(base).unwrap().display().to_string();
        if path.is_dir() {
            listing.push(format!("{relative}/"));
            list(&path, base, listing);
        } else {
            listing.push(format!(
                "{relative} {}",
                file_digest(&path).unwrap_or_default()
            ));
        }
    }
}

pub fn file_digest(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| digest(&bytes))
}

/// Every staging file or folder below `dir` (and `dir`'s own name if it is one).
pub fn staging_leftovers(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if bundle_tool::durable::is_staging_name(&name) {
            found.push(entry.path().display().to_string());
        } else if entry.path().is_dir() {
            found.extend(staging_leftovers(&entry.path()));
        }
    }
    found
}

/// Checks an OCI layout: a marker beside an index, and every manifest the index names, and
/// every config and layer those name, present as a blob whose bytes match its digest and size.
/// An absent layout is whole.
pub fn check_layout(layout: &Path) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(layout.join("index.json")) else {
        return Ok(());
    };
    if std::fs::read(layout.join("oci-layout")).is_err() {
        return Err("index.json without oci-layout".into());
    }
    let index: Value = serde_json::from_slice(&bytes).map_err(|e| format!("index.json: {e}"))?;
    let blob = |descriptor: &Value| -> Result<Vec<u8>, String> {
        let d = descriptor["digest"].as_str().unwrap_or_default();
        let path = layout
            .join("blobs/sha256")
            .join(d.trim_start_matches("sha256:"));
        let bytes = std::fs::read(&path).map_err(|e| format!("blob {d}: {e}"))?;
        if digest(&bytes) != d || descriptor["size"].as_u64() != Some(bytes.len() as u64) {
            return Err(format!("blob {d} does not match its descriptor"));
        }
        Ok(bytes)
    };
    for entry in index["manifests"]
        .as_array()
        .ok_or("index.json: no manifests")?
    {
        let manifest: Value = serde_json::from_slice(&blob(entry)?)
            .map_err(|e| format!("manifest {}: {e}", entry["digest"]))?;
        blob(&manifest["config"])?;
        for layer in manifest["layers"]
            .as_array()
            .ok_or("a manifest without layers")?
        {
            blob(layer)?;
        }
    }
    Ok(())
}

/// The digest `tag` of `repository` resolves to in the registry at `host`, if any.
pub fn registry_tag(host: &str, repository: &str, tag: &str) -> Option<String> {
    let (status, body) = http(host, "GET", &format!("/v2/{repository}/manifests/{tag}"));
    (status == 200).then(|| digest(&body))
}

/// Checks every tag of `repository`: its manifest and every blob it names can be fetched.
pub fn check_registry(host: &str, repository: &str) -> Result<(), String> {
    let (status, body) = http(host, "GET", &format!("/v2/{repository}/tags/list"));
    if status == 404 {
        return Ok(());
    }
    let tags: Value =
        serde_json::from_slice(&body).map_err(|e| format!("tags/list {status}: {e}"))?;
    for tag in tags["tags"].as_array().into_iter().flatten() {
        let tag = tag.as_str().unwrap_or_default();
        let (status, body) = http(host, "GET", &format!("/v2/{repository}/manifests/{tag}"));
        if status != 200 {
            return Err(format!(
                "tag {tag} is listed but its manifest answers {status}"
            ));
        }
        let manifest: Value =
            serde_json::from_slice(&body).map_err(|e| format!("manifest of {tag}: {e}"))?;
        let mut blobs = vec![manifest["config"].clone()];
        blobs.extend(manifest["layers"].as_array().cloned().unwrap_or_default());
        for descriptor in blobs {
            let d = descriptor["digest"].as_str().unwrap_or_default();
            let (status, bytes) = http(host, "GET", &format!("/v2/{repository}/blobs/{d}"));
            if status != 200 || digest(&bytes) != d {
                return Err(format!(
                    "tag {tag}: blob {d} answers {status} ({} bytes)",
                    bytes.len()
                ));
            }
        }
    }
    Ok(())
}

/// One HTTP/1.0 request on loopback (the connection closes after the answer, so the body is
/// what follows the headers): the status and the body.
fn http(host: &str, method: &str, path: &str) -> (u16, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer[split + 4..].to_vec())
}
