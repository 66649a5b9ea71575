//! Loading a bundle folder for validation, with the loader's own checks: no sub-folders or
//! hidden files in `manifests/`, exactly one CSV, CRDs of a supported version, and YAML errors
//! reported with file, line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Finding;
use crate::manifest::{ManifestError, read_stream};

/// A bundle as the validators see it.
#[derive(Clone, Debug)]
pub struct LoadedBundle {
    /// The bundle folder.
    pub dir: PathBuf,
    /// The CSV.
    pub csv: Value,
    /// The CSV's file.
    pub csv_file: PathBuf,
    /// The CRDs (apiextensions.k8s.io v1 or v1beta1), with their files.
    pub crds: Vec<(PathBuf, Value)>,
    /// Every other object, with its file.
    pub others: Vec<(PathBuf, Value)>,
    /// Bytes of every file in `manifests/`, for the size rule.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// Bundle annotations as operator-sdk's loader finds them (see `manifests_annotations`):
    /// the good-practices validator checks the channels named there.
    pub annotations: BTreeMap<String, String>,
}

/// Loads `dir` (a bundle root with `manifests/`, or a `manifests/` folder itself).
pub fn load_bundle(dir: &Path) -> Result<LoadedBundle, Vec<Finding>> {
    let manifests = if dir.join("manifests").is_dir() {
        dir.join("manifests")
    } else {
        dir.to_path_buf()
    };
    let fail = |detail: String| {
        vec![Finding {
            value: None,
            ..Finding::error("", detail)
        }]
    };
    let entries = std::fs::read_dir(&manifests).map_err(|e| {
        fail(format!(
            "unable to load bundle from directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    let mut errors = Vec::new();
    let (mut csv, mut crds, mut others, mut files) = (None, Vec::new(), Vec::new(), Vec::new());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            errors.extend(fail(format!(
                "bundle manifests dir contains directory: {}",
                path.display()
            )));
            continue;
        }
        if name.starts_with('.') {
            errors.extend(fail(format!(
                "bundle manifests dir has hidden file: {}",
                path.display()
            )));
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                errors.extend(fail(format!("unable to load file {}: {e}", path.display())));
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        files.push((path.clone(), bytes));
        // One object per file, as upstream's loader decodes it.
        let document = match read_stream(&path, &text) {
            Ok(documents) => documents.into_iter().next().map(|d| d.value),
            Err(ManifestError::Parse { location, message }) => {
                errors.push(
                    Finding {
                        value: None,
                        ..Finding::error(
                            "",
                            format!("unable to decode object: {location}: {message}"),
                        )
                    }
                    .in_file(path.display().to_string()),
                );
                continue;
            }
            Err(ManifestError::Io { path, error }) => {
                errors.extend(fail(format!(
                    "unable to load file {}: {error}",
                    path.display()
                )));
                continue;
            }
        };
        let Some(document) = document else { continue };
        match document.get("kind").and_then(Value::as_str) {
            Some("ClusterServiceVersion") => {
                if csv.is_some() {
                    return Err(fail("invalid bundle: contains multiple CSVs".into()));
                }
                if let Err(error) = super::typed::check_csv(&document) {
                    return Err(vec![typed_error("CSV", &name, &path, &text, error)]);
                }
                csv = Some((path, document));
            }
            Some("CustomResourceDefinition") => {
                let version = document
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if version != "apiextensions.k8s.io/v1" && version != "apiextensions.k8s.io/v1beta1"
                {
                    return Err(fail(format!(
                        "unsupported CRD version {version} for {name}"
                    )));
                }
                if let Err(error) = super::typed::check_crd(&document) {
                    return Err(vec![typed_error("CRD", &name, &path, &text, error)]);
                }
                crds.push((path, document));
            }
            _ => others.push((path, document)),
        }
    }
    let Some((csv_file, csv)) = csv else {
        errors.extend(fail(format!(
            "unable to find a csv in bundle directory {}",
            manifests.display()
        )));
        return Err(errors);
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let annotations = manifests_annotations(&files);
    Ok(LoadedBundle {
        dir: dir.to_path_buf(),
        csv,
        csv_file,
        crds,
        others,
        files,
        annotations,
    })
}

/// A CSV or CRD that upstream cannot decode into its Go type: upstream gives up on the
/// bundle, whatever else it found. Upstream's message, and the line of the field.
fn typed_error(
    what: &str,
    name: &str,
    path: &Path,
    text: &str,
    error: super::typed::DecodeError,
) -> Finding {
    let line = super::typed::line_of(text, &error.path)
        .map(|n| format!(" (line {n})"))
        .unwrap_or_default();
    let detail = format!(
        "unable to parse {what} {name}: error unmarshaling JSON: while decoding JSON: {}{line}",
        error.message
    );
    Finding {
        value: None,
        ..Finding::error("", detail)
    }
    .in_file(path.display().to_string())
}

/// The `annotations` map that operator-sdk's loader gives the validators. It hands the loader
/// the `manifests/` folder, where a file whose name starts with `annotations` is read as an
/// annotations file (the last one in name order wins); `metadata/annotations.yaml` is never
/// seen. No such file gives an empty map.
fn manifests_annotations(files: &[(PathBuf, Vec<u8>)]) -> BTreeMap<String, String> {
    let Some((path, bytes)) = files.iter().rev().find(|(path, _)| {
        path.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("annotations"))
    }) else {
        return BTreeMap::new();
    };
    let Ok(documents) = read_stream(path, &String::from_utf8_lossy(bytes)) else {
        return BTreeMap::new();
    };
    documents
        .into_iter()
        .next()
        .and_then(|d| {
            d.value
                .get("annotations")
                .and_then(Value::as_object)
                .cloned()
        })
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
        .collect()
}
