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

/// The folder holding the corpus bundles (`<package>/<version>/`).
pub fn bundles_root() -> PathBuf {
    shared().join("bundles")
}

/// The corpus catalog folders, sorted.
pub fn catalogs() -> Vec<PathBuf> {
    sorted_dirs(&shared().join("catalogs"))
}
