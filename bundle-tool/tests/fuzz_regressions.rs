//! The fuzz targets' checks (`fuzz/src/lib.rs`, included here as plain Rust, no libFuzzer) on
//! every committed input: the crashes the fuzzers found (`fuzz/regressions/<target>/`, each
//! fixed in bundle-tool) and the hand-made seeds (`fuzz/seeds/<target>/`). A check panics
//! when its property does not hold, so a regression fails the test that names the file.

#[allow(dead_code, missing_docs)]
#[path = "../../fuzz/src/lib.rs"]
mod checks;

use std::path::{Path, PathBuf};

/// The committed inputs of `target`: (regressions, seeds).
fn inputs(target: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let list = |folder: &str| {
        let dir = fuzz.join(folder).join(target);
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .map(|e| e.expect("a directory entry").path())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => panic!("{}: {e}", dir.display()),
        };
        files.sort();
        files
    };
    (list("regressions"), list("seeds"))
}

fn run(target: &str, check: fn(&[u8])) {
    let (regressions, seeds) = inputs(target);
    assert!(!seeds.is_empty(), "no seeds in fuzz/seeds/{target}");
    for file in regressions.iter().chain(&seeds) {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("fuzz check {target} fails on {}", file.display());
        }
    }
    eprintln!(
        "{target}: {} regression inputs and {} seeds pass",
        regressions.len(),
        seeds.len()
    );
}

macro_rules! targets {
    ($($target:ident),* $(,)?) => {
        $(
            #[test]
            fn $target() {
                run(stringify!($target), checks::$target);
            }
        )*
    };
}

targets!(
    fbc_load,
    yaml_differential,
    json_differential,
    manifest_csv,
    version_range,
    image_ref,
    tar_unpack,
    grpc_request,
    semver_template,
);
