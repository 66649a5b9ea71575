//! The CRD pair fixtures of bundle-tool's upgrade checks
//! (`bundle-tool/tests/fixtures/upgrade/<set>/<pair>/`: OLD and NEW, and the objects a cluster
//! holds) and the Go oracle programs that judge them, one JSON line per pair. Shared by the
//! oracle tests and the `check_upgrade` bench.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pair folders of fixture set `set` (`crd-pairs`, `olm-pairs`), sorted.
pub fn pair_dirs(set: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bundle-tool/tests/fixtures/upgrade")
        .join(set);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Runs `oracle` on `dirs` and reads its verdicts, one JSON document per line; fails unless
/// it succeeds.
pub fn run_oracle(oracle: &Path, dirs: &[PathBuf]) -> anyhow::Result<Vec<serde_json::Value>> {
    let output = Command::new(oracle).args(dirs).output()?;
    anyhow::ensure!(
        output.status.success(),
        "{} failed: {}",
        oracle.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}
