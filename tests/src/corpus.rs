//! The shared test corpus (`../shared/corpus` beside the repository) and the Redis operator's
//! own bundle, as the conformance tests and benchmarks walk them.

use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus")
}

/// The Redis operator's generated bundle folder (`bundle/`).
pub fn redis_bundle() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the corpus is missing at {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The corpus bundles, `(package, version, folder)`, sorted.
pub fn bundles() -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    for package in sorted_dirs(&shared().join("bundles")) {
        for version in sorted_dirs(&package) {
            let name = |p: &Path| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            };
            out.push((name(&package), name(&version), version));
        }
    }
    out
}

/// The second corpus, committed in `tests/corpus-extra/` (its SOURCE.md says from where):
/// every bundle folder `<top>/<package>/<version>/`, sorted.
pub fn extra_bundles() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus-extra/bundles");
    let mut out = Vec::new();
    for top in sorted_dirs(&root) {
        for package in sorted_dirs(&top) {
            out.extend(sorted_dirs(&package));
        }
    }
    out
}

/// The folder holding the corpus bundles (`<package>/<version>/`).
pub fn bundles_root() -> PathBuf {
    shared().join("bundles")
}

/// The corpus catalog folders, sorted.
pub fn catalogs() -> Vec<PathBuf> {
    sorted_dirs(&shared().join("catalogs"))
}

/// Copies every corpus catalog into `into/<package>/`; returns the bytes copied.
pub fn merge_catalogs(into: &Path) -> u64 {
    let mut bytes = 0;
    for dir in catalogs() {
        let name = dir.file_name().unwrap_or_default().to_os_string();
        std::fs::create_dir_all(into.join(&name)).expect("create a catalog folder");
        for file in std::fs::read_dir(&dir)
            .expect("read a corpus catalog")
            .flatten()
        {
            bytes += std::fs::copy(file.path(), into.join(&name).join(file.file_name()))
                .expect("copy a corpus catalog file");
        }
    }
    bytes
}

/// Writes a synthetic catalog: `packages` packages of `bundles_per_package` bundles each, one
/// `stable` channel per package whose entries replace their predecessor with a skipRange,
/// every bundle with two `olm.gvk`, an `olm.csv.metadata` and a related image (as a rendered
/// community catalog has them). Returns the bytes written.
pub fn generate_catalog(into: &Path, packages: usize, bundles_per_package: usize) -> u64 {
    use serde_json::json;
    let mut bytes = 0;
    for p in 0..packages {
        let package = format!("generated-{p:03}");
        let mut docs =
            vec![json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"})];
        let mut entries = Vec::new();
        for b in 0..bundles_per_package {
            let name = format!("{package}.v1.{b}.0");
            let mut entry = json!({"name": name});
            if b > 0 {
                entry["replaces"] = json!(format!("{package}.v1.{}.0", b - 1));
                entry["skipRange"] = json!(format!(">=1.0.0 <1.{b}.0"));
            }
            entries.push(entry);
            docs.push(json!({
                "schema": "olm.bundle", "name": name, "package": package,
                "image": format!("quay.io/example/{package}-bundle:v1.{b}.0"),
                "properties": [
                    {"type": "olm.package", "value": {"packageName": package, "version": format!("1.{b}.0")}},
                    {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Thing", "version": "v1"}},
                    {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Other", "version": "v1alpha1"}},
                    {"type": "olm.csv.metadata", "value": {"displayName": "Generated", "description": "x".repeat(400), "keywords": ["a", "b"]}}
                ],
                "relatedImages": [{"name": "operator", "image": format!("quay.io/example/{package}:v1.{b}.0")}]
            }));
        }
        docs.push(
            json!({"schema": "olm.channel", "name": "stable", "package": package, "entries": entries}),
        );
        let text: String = docs
            .iter()
            .map(|d| serde_json::to_string(d).expect("JSON") + "\n")
            .collect();
        bytes += text.len() as u64;
        let folder = into.join(&package);
        std::fs::create_dir_all(&folder).expect("create a package folder");
        std::fs::write(folder.join("catalog.json"), text).expect("write a generated catalog");
    }
    bytes
}
