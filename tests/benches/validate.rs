//! `bundle-tool validate` against `operator-sdk bundle validate`, both with
//! `--select-optional suite=operatorframework`, over all 266 corpus bundles, one process per
//! bundle for each tool, in the same run (not a timed test). Prints total wall time and the
//! ratio. `cargo build --release -p bundle-tool && cargo bench -p e2e --bench validate`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e2e::assets::Assets;

fn total(program: &Path, args: &[&str], bundles: &[PathBuf]) -> Duration {
    let started = Instant::now();
    for bundle in bundles {
        let status = Command::new(program)
            .args(args)
            .arg(bundle)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run");
        // Exit 1 is a verdict (8 corpus bundles are invalid), not a failure of the run.
        assert!(
            matches!(status.code(), Some(0) | Some(1)),
            "{} crashed on {}",
            program.display(),
            bundle.display()
        );
    }
    started.elapsed()
}

fn main() {
    let sdk = Assets::locate()
        .expect("assets")
        .operator_sdk()
        .expect("operator-sdk");
    let ours = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("bundle-tool");
    assert!(
        ours.is_file(),
        "build bundle-tool first: cargo build --release -p bundle-tool"
    );
    let bundles: Vec<PathBuf> = e2e::corpus::bundles()
        .into_iter()
        .map(|(_, _, dir)| dir)
        .collect();
    let theirs = total(
        &sdk,
        &[
            "bundle",
            "validate",
            "--select-optional",
            "suite=operatorframework",
        ],
        &bundles,
    );
    let mine = total(
        &ours,
        &["validate", "--select-optional", "suite=operatorframework"],
        &bundles,
    );
    println!("bundles validated           {}", bundles.len());
    println!(
        "operator-sdk total          {:.2} s ({:.1} ms per bundle)",
        theirs.as_secs_f64(),
        theirs.as_secs_f64() * 1e3 / bundles.len() as f64
    );
    println!(
        "bundle-tool total           {:.2} s ({:.1} ms per bundle)",
        mine.as_secs_f64(),
        mine.as_secs_f64() * 1e3 / bundles.len() as f64
    );
    println!(
        "speedup                     {:.1}x",
        theirs.as_secs_f64() / mine.as_secs_f64()
    );
}
