//! Pins the `validate -o json` schema documented in docs/validate-json.md: its keys, their
//! types, one finding byte for byte, and the exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// A copy of the repository's Redis bundle, edited by `edit` (CSV text in, CSV text out).
fn redis_copy(edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = dir.path().join("bundle");
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(bundle.join(sub)).unwrap();
        for entry in std::fs::read_dir(source.join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), bundle.join(sub).join(entry.file_name())).unwrap();
        }
    }
    let csv = bundle.join("manifests/redis-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(&csv, edit(text)).unwrap();
    (dir, bundle)
}

fn validate_json(bundle: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(["validate", "-o", "json"])
        .args(extra)
        .arg(bundle)
        .output()
        .expect("run bundle-tool")
}

#[test]
fn json_output_has_the_documented_schema() {
    // One error (a non-standard category) and one warning (no minKubeVersion).
    let (_dir, bundle) = redis_copy(|csv| {
        assert!(csv.contains("categories: Database\n") && csv.contains("minKubeVersion:"));
        csv.replace("categories: Database\n", "categories: Databases\n")
            .lines()
            .filter(|l| !l.trim_start().starts_with("minKubeVersion:"))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    let output = validate_json(&bundle, &["--select-optional", "suite=operatorframework"]);
    assert_eq!(output.status.code(), Some(1), "errors exit 1");
    let report: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON value");
    let top: Vec<&String> = report.as_object().unwrap().keys().collect();
    assert_eq!(top, ["outputs", "passed"]);
    assert_eq!(report["passed"], false);
    let outputs = report["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2, "{outputs:#?}");
    let documented = ["type", "message", "detail", "field", "value", "file"];
    for output in outputs {
        let object = output.as_object().unwrap();
        for (key, value) in object {
            assert!(documented.contains(&key.as_str()), "undocumented key {key}");
            assert!(value.is_string(), "{key} is not a string");
        }
        for required in ["type", "message", "detail"] {
            assert!(object.contains_key(required), "{required} missing");
        }
    }
    let file = bundle
        .join("manifests/redis-operator.clusterserviceversion.yaml")
        .display()
        .to_string();
    let detail = "(redis-operator.v0.1.0) csv.Metadata.Annotations[\"categories\"] value \"Databases\" is not in the set of standard categories";
    assert_eq!(
        outputs[0],
        json!({
            "type": "error",
            "message": format!("Error: Value : {detail}"),
            "detail": detail,
            "value": "",
            "file": file,
        })
    );
    assert_eq!(outputs[1]["type"], "warning", "errors come first");
    assert!(
        outputs[1]["message"]
            .as_str()
            .unwrap()
            .contains("csv.Spec.minKubeVersion is not informed")
    );
}

#[test]
fn a_clean_bundle_passes_with_no_outputs_and_usage_errors_exit_2() {
    let (_dir, bundle) = redis_copy(|csv| csv);
    let output = validate_json(&bundle, &["--select-optional", "suite=operatorframework"]);
    assert_eq!(output.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report, json!({"passed": true, "outputs": []}));

    for bad in [
        ["--select-optional", "name=community"],
        ["--optional-values", "colour=blue"],
    ] {
        let output = validate_json(&bundle, &bad);
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        assert!(output.stdout.is_empty());
        assert!(!output.stderr.is_empty());
    }
}

#[test]
fn k8s_version_turns_removed_apis_into_errors() {
    // A v1beta1 PodDisruptionBudget: removed in 1.25.
    let (_dir, bundle) = redis_copy(|csv| csv);
    std::fs::write(
        bundle.join("manifests/pdb.yaml"),
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: old}\nspec: {maxUnavailable: 1}\n",
    )
    .unwrap();
    let level = |extra: &[&str]| {
        let mut args = vec!["--select-optional", "name=alpha-deprecated-apis"];
        args.extend_from_slice(extra);
        let output = validate_json(&bundle, &args);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let found: Vec<(String, i32)> = report["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["message"].as_str().unwrap().contains("removed in v1.25"))
            .map(|o| {
                (
                    o["type"].as_str().unwrap().to_string(),
                    output.status.code().unwrap(),
                )
            })
            .collect();
        found
    };
    // minKubeVersion 1.33.0 of the Redis CSV already targets 1.25: an error either way.
    assert_eq!(level(&[]), [("error".to_string(), 1)]);
    let (_dir2, old) =
        redis_copy(|csv| csv.replace("minKubeVersion: \"1.33.0\"", "minKubeVersion: \"1.21.0\""));
    std::fs::copy(
        bundle.join("manifests/pdb.yaml"),
        old.join("manifests/pdb.yaml"),
    )
    .unwrap();
    let level_old = |extra: &[&str]| {
        let mut args = vec!["--select-optional", "name=alpha-deprecated-apis"];
        args.extend_from_slice(extra);
        let output = validate_json(&old, &args);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        (
            report["outputs"][0]["type"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            output.status.code().unwrap(),
        )
    };
    assert_eq!(level_old(&[]), ("warning".to_string(), 0));
    assert_eq!(
        level_old(&["--optional-values", "k8s-version=1.25"]),
        ("error".to_string(), 1)
    );
}
