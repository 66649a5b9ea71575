//! `validate` never panics: the Redis CSV cut at many points, and its fields replaced by
//! values of the wrong type, each give a report.

use std::path::Path;

use bundle_tool::validate::{Suite, validate_bundle};

const CSV: &str = "redis-operator.clusterserviceversion.yaml";

fn bundle_with_csv(text: &str) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle/manifests");
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), manifests.join(entry.file_name())).unwrap();
    }
    std::fs::write(manifests.join(CSV), text).unwrap();
    dir
}

fn original() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../bundle/manifests")
            .join(CSV),
    )
    .unwrap()
}

#[test]
fn truncated_csvs_give_a_report() {
    let text = original();
    let step = text.len() / 40;
    for cut in (1..text.len()).step_by(step.max(1)) {
        let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap();
        let dir = bundle_with_csv(&text[..cut]);
        // Must not panic; the verdict itself depends on where the cut falls.
        let _ = validate_bundle(dir.path(), Suite::OperatorFramework);
    }
}

#[test]
fn fields_of_the_wrong_type_give_a_report() {
    let text = original();
    // Each line `key: value` (or `key:` opening a block) replaced by a value of another shape.
    let keys = [
        "  name: ",
        "  version: ",
        "  minKubeVersion: ",
        "  installModes:",
        "  customresourcedefinitions:",
        "  install:",
        "    alm-examples: ",
        "  icon:",
        "  maintainers:",
        "  links:",
    ];
    let mut checked = 0;
    for key in keys {
        for replacement in ["[]", "{}", "7", "null", "\"\""] {
            let Some(start) = text.find(&format!("\n{key}")) else {
                continue;
            };
            let line_end = text[start + 1..]
                .find('\n')
                .map_or(text.len(), |e| start + 1 + e);
            let indent = key.len() - key.trim_start().len();
            let field = key.trim().trim_end_matches(':');
            let broken = format!(
                "{}\n{}{field}: {replacement}\n{}",
                &text[..start],
                " ".repeat(indent),
                // Drop the block below a replaced mapping/list key: deeper-indented lines.
                text[line_end + 1..]
                    .lines()
                    .skip_while(|l| {
                        key.ends_with(':')
                            && (l.len() - l.trim_start().len() > indent
                                || l.trim_start().starts_with("- "))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            let dir = bundle_with_csv(&broken);
            // Must not panic. Not every variant is an error: like upstream's decoder, ours
            // accepts `null`, an empty list or mapping of the right shape, and YAML scalars
            // in string fields (tests/tests/bundle_validate_conformance.rs compares which
            // variants are refused with operator-sdk).
            let _ = validate_bundle(dir.path(), Suite::OperatorFramework);
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} variants were built");
}
