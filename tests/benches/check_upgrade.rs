//! `check-upgrade`'s CRD rules against operator-controller v1.11.0's preflight (crdify's
//! checks, run by `crd-preflight-oracle`, which tests/assets/build-go-assets.sh builds), on the
//! same 50 CRD pairs (`bundle-tool/tests/fixtures/upgrade/crd-pairs`), each taken `REPEAT`
//! times, alternating the two for `ROUNDS` rounds. Each side reads and parses both YAML files
//! of a pair and checks it: the oracle in one Go process for all pairs (its start included),
//! ours in this process (`Crd::from_object` + `check_crd`, as `check-upgrade` runs them).
//! Prints per-pair times, the ratio per round and the median ratio; the verdicts are compared
//! once so that both sides are seen to do the same work. Not a test: nothing here asserts a
//! time.
//!
//! ```sh
//! cargo bench -p e2e --bench check_upgrade
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bundle_tool::upgrade::crd_rules::{Crd, check_crd};
use e2e::assets::Assets;

const REPEAT: usize = 20;
const ROUNDS: usize = 5;

fn pairs() -> Vec<PathBuf> {
    e2e::upgrade_pairs::pair_dirs("crd-pairs")
}

fn read_one(path: &Path) -> serde_json::Value {
    let mut documents = bundle_tool::manifest::read_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    documents.remove(0).value
}

/// Whether each pair is unsafe, by ours.
fn ours(dirs: &[PathBuf]) -> Vec<bool> {
    dirs.iter()
        .map(|dir| {
            let old = Crd::from_object(&read_one(&dir.join("old.yaml")));
            let new = Crd::from_object(&read_one(&dir.join("new.yaml")));
            check_crd(&old, &new)
                .iter()
                .any(|f| f.preflight_text().is_some())
        })
        .collect()
}

/// Whether each pair is unsafe, by the preflight.
fn theirs(oracle: &Path, dirs: &[PathBuf]) -> Vec<bool> {
    let output = Command::new(oracle)
        .args(dirs)
        .output()
        .expect("run oracle");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let result: serde_json::Value = serde_json::from_str(line).expect("oracle line");
            result["error"].as_str().is_some_and(|e| !e.is_empty())
        })
        .collect()
}

fn timed<T>(run: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = run();
    (value, started.elapsed())
}

fn main() {
    let oracle = Assets::locate()
        .and_then(|a| a.program("CRD_PREFLIGHT", "crd-preflight-oracle"))
        .expect("crd-preflight-oracle (tests/assets/build-go-assets.sh)");
    let dirs = pairs();
    assert_eq!(
        theirs(&oracle, &dirs),
        ours(&dirs),
        "the two disagree on a verdict"
    );
    let work: Vec<PathBuf> = (0..REPEAT).flat_map(|_| dirs.iter().cloned()).collect();
    let per_pair = |d: Duration| d.as_secs_f64() * 1e3 / work.len() as f64;
    let mut ratios = Vec::new();
    println!(
        "{} CRD pairs x {REPEAT} = {} checks per side per round",
        dirs.len(),
        work.len()
    );
    for round in 1..=ROUNDS {
        let (_, go) = timed(|| theirs(&oracle, &work));
        let (_, rust) = timed(|| ours(&work));
        let ratio = go.as_secs_f64() / rust.as_secs_f64();
        ratios.push(ratio);
        println!(
            "round {round}: operator-controller preflight {:.3} ms/pair, check-upgrade {:.3} ms/pair, {ratio:.1}x",
            per_pair(go),
            per_pair(rust)
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio {:.1}x (min {:.1}x, max {:.1}x)",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}
