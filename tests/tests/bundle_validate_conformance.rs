//! `bundle-tool validate --select-optional suite=operatorframework` against `operator-sdk
//! bundle validate` (v1.42.3) with the same suite, on every bundle of the shared corpus and on
//! the Redis operator's bundle: the same verdict and the same set of error messages.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::assets::Assets;
use serde_json::Value;

fn bundle_tool() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let path = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("bundle-tool");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p bundle-tool` (the README test command does)",
        path.display()
    );
    path
}

/// (passed, error messages) from a `json-alpha1`-shaped report.
fn verdict(output: &std::process::Output, who: &str, dir: &Path) -> (bool, BTreeSet<String>) {
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{who} on {}: {e}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let errors = report["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["type"] == "error")
        .map(|o| o["message"].as_str().unwrap_or_default().to_string())
        .collect();
    (report["passed"] == true, errors)
}

#[test]
fn corpus_bundles_get_operator_sdks_verdict_and_errors() {
    let sdk = Assets::locate().unwrap().operator_sdk().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/bundles");
    let mut bundles = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle")];
    for package in std::fs::read_dir(&root)
        .expect("corpus bundles")
        .filter_map(Result::ok)
    {
        for version in std::fs::read_dir(package.path())
            .unwrap()
            .filter_map(Result::ok)
        {
            bundles.push(version.path());
        }
    }
    bundles.sort();
    assert!(bundles.len() >= 267);
    let (mut agree, mut invalid) = (0, 0);
    for dir in &bundles {
        let theirs = Command::new(&sdk)
            .args([
                "bundle",
                "validate",
                "--select-optional",
                "suite=operatorframework",
                "-o",
                "json-alpha1",
            ])
            .arg(dir)
            .output()
            .unwrap();
        let ours = Command::new(bundle_tool())
            .args([
                "validate",
                "--select-optional",
                "suite=operatorframework",
                "-o",
                "json",
            ])
            .arg(dir)
            .output()
            .unwrap();
        let (their_pass, their_errors) = verdict(&theirs, "operator-sdk", dir);
        let (our_pass, our_errors) = verdict(&ours, "bundle-tool", dir);
        assert_eq!(theirs.status.success(), their_pass);
        assert_eq!(
            ours.status.success(),
            our_pass,
            "exit code and verdict disagree on {}",
            dir.display()
        );
        assert_eq!(
            (our_pass, &our_errors),
            (their_pass, &their_errors),
            "{}: operator-sdk and bundle-tool disagree",
            dir.display()
        );
        agree += 1;
        invalid += usize::from(!their_pass);
    }
    eprintln!("{agree} bundles: same verdict and errors as operator-sdk ({invalid} invalid)");
}
