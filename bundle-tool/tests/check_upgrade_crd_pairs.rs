//! The CRD rules on pairs of CRDs (`fixtures/upgrade/crd-pairs/NN-name/{old,new}.yaml`):
//! each pair's `expect.yaml` names the exact rules operator-controller v1.11.0's preflight
//! reports for it (none for a safe pair), and for some the exact lines of its error.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bundle_tool::upgrade::crd_rules::{Crd, check_crd};
use bundle_tool::upgrade::property_rules::PROPERTY_RULES;

fn pairs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade/crd-pairs")
}

fn read_one(path: &Path) -> serde_json::Value {
    let documents = bundle_tool::manifest::read_path(path).expect("fixture parses");
    assert_eq!(documents.len(), 1, "{}: one document", path.display());
    documents.into_iter().next().expect("one").value
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|l| {
            l.iter()
                .map(|v| v.as_str().expect("string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

struct Outcome {
    name: String,
    expected_rules: BTreeSet<String>,
    found_rules: BTreeSet<String>,
}

fn run_pairs() -> Vec<Outcome> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(pairs_dir())
        .expect("fixtures folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut outcomes = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let old = Crd::from_object(&read_one(&dir.join("old.yaml")));
        let new = Crd::from_object(&read_one(&dir.join("new.yaml")));
        let expect = read_one(&dir.join("expect.yaml"));
        let findings = check_crd(&old, &new);
        let found_rules: BTreeSet<String> = findings.iter().map(|f| f.rule.clone()).collect();
        let expected_rules: BTreeSet<String> = strings(&expect["rules"]).into_iter().collect();
        assert_eq!(
            found_rules, expected_rules,
            "{name}: rules; findings: {findings:#?}"
        );
        // Every CRD finding is an error: a pair is unsafe exactly when a rule fired.
        assert_eq!(
            findings
                .iter()
                .any(|f| f.level == bundle_tool::upgrade::Level::Error),
            !expected_rules.is_empty(),
            "{name}: verdict"
        );
        if expect.get("lines").is_some() {
            let mut lines: Vec<String> =
                findings.iter().filter_map(|f| f.preflight_text()).collect();
            lines.sort();
            let mut expected = strings(&expect["lines"]);
            expected.sort();
            assert_eq!(lines, expected, "{name}: the preflight's lines");
        }
        outcomes.push(Outcome {
            name,
            expected_rules,
            found_rules,
        });
    }
    outcomes
}

#[test]
fn every_pair_gives_exactly_the_expected_rules() {
    let outcomes = run_pairs();
    assert!(outcomes.len() >= 30, "only {} pairs", outcomes.len());
    let safe = outcomes
        .iter()
        .filter(|o| o.expected_rules.is_empty())
        .count();
    assert!(safe >= 10, "only {safe} safe pairs");
    for outcome in &outcomes {
        assert_eq!(
            outcome.found_rules, outcome.expected_rules,
            "{}",
            outcome.name
        );
    }
}

#[test]
fn every_rule_has_an_unsafe_pair() {
    let fired: BTreeSet<String> = run_pairs()
        .into_iter()
        .flat_map(|o| o.found_rules)
        .collect();
    let mut rules: BTreeSet<&str> = PROPERTY_RULES.into_iter().collect();
    // `description` is off in operator-controller: no pair may fire it.
    rules.remove("description");
    rules.extend(["scope", "storedVersionRemoval", "existingFieldRemoval"]);
    for rule in rules {
        assert!(fired.contains(rule), "no pair fires {rule}");
    }
    assert!(!fired.contains("description"));
}
