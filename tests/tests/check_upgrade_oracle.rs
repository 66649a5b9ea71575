//! `check-upgrade`'s CRD rules against operator-controller v1.11.0's own preflight, run for
//! real: `crd-preflight-oracle` (built by tests/assets/build-go-assets.sh inside a copy of the
//! operator-controller module) drives `crdupgradesafety.NewPreflight(...).Upgrade` with the
//! old CRD on a fake API server, for every pair in bundle-tool's
//! `tests/fixtures/upgrade/crd-pairs`. Verdict and rule names must be equal on every pair,
//! and the error lines too, except `oneOf`'s and those `unhandled` ones that hold values we
//! write as `<complex value>`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bundle_tool::upgrade::crd_rules::{Crd, check_crd, is_crd_wide};
use e2e::assets::Assets;

fn pairs() -> Vec<PathBuf> {
    e2e::upgrade_pairs::pair_dirs("crd-pairs")
}

fn read_one(path: &Path) -> serde_json::Value {
    let mut documents = bundle_tool::manifest::read_path(path).expect("fixture parses");
    assert_eq!(documents.len(), 1, "{}", path.display());
    documents.remove(0).value
}

/// The lines of the preflight's error: `rule: message` for CRD-wide rules,
/// `version: path: rule: message` for the others.
fn preflight_lines(error: &str) -> Vec<String> {
    error
        .lines()
        .map(
            |line| match line.strip_prefix("validating upgrade for CRD ") {
                Some(rest) => rest.split_once(": ").map_or(rest, |(_, l)| l).to_string(),
                None => line.to_string(),
            },
        )
        .collect()
}

fn rule_of(line: &str) -> String {
    let parts: Vec<&str> = line.split(": ").collect();
    if is_crd_wide(parts[0]) {
        parts[0].to_string()
    } else {
        parts.get(2).copied().unwrap_or(line).to_string()
    }
}

/// Where a line's text is ours: crdify prints `oneOf` entries as Go struct dumps (we print
/// JSON), and where our `unhandled` summary has a `<complex value>` (lists of schemas, raw
/// JSON), operator-controller shows Go's value. The key is the line up to the rule.
fn own_wording(line: &str) -> Option<String> {
    let rule = rule_of(line);
    let key = line
        .split(&format!("{rule}: "))
        .next()
        .unwrap_or(line)
        .to_string();
    (rule == "oneOf" || (rule == "unhandled" && line.contains("<complex value>"))).then_some(key)
}

#[test]
fn verdicts_and_rules_equal_operator_controllers_preflight() -> anyhow::Result<()> {
    let oracle = Assets::locate()?.program("CRD_PREFLIGHT", "crd-preflight-oracle")?;
    let dirs = pairs();
    assert!(dirs.len() >= 30, "only {} pairs", dirs.len());
    let results: Vec<serde_json::Value> = e2e::upgrade_pairs::run_oracle(&oracle, &dirs)?;
    assert_eq!(results.len(), dirs.len(), "one result per pair");
    let (mut unsafe_pairs, mut lines_compared) = (0, 0);
    for (dir, result) in dirs.iter().zip(&results) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(result["pair"], name.as_str());
        let error = result["error"].as_str().expect("error text");
        let theirs = preflight_lines(error);
        let findings = check_crd(
            &Crd::from_object(&read_one(&dir.join("old.yaml"))),
            &Crd::from_object(&read_one(&dir.join("new.yaml"))),
        );
        let ours: Vec<String> = findings.iter().filter_map(|f| f.preflight_text()).collect();
        assert_eq!(
            ours.is_empty(),
            error.is_empty(),
            "{name}: verdict; preflight said {error:?}, we found {ours:#?}"
        );
        let their_rules: BTreeSet<String> = theirs.iter().map(|l| rule_of(l)).collect();
        let our_rules: BTreeSet<String> = findings.iter().map(|f| f.rule.clone()).collect();
        assert_eq!(
            our_rules, their_rules,
            "{name}: rules; preflight said {error:?}"
        );
        // A line worded by us is left out with the preflight's line for the same place.
        let ours_worded: BTreeSet<String> = ours.iter().filter_map(|l| own_wording(l)).collect();
        let worded_alike = |l: &&String| {
            let rule = rule_of(l);
            let key = l.split(&format!("{rule}: ")).next().unwrap_or(l);
            rule != "oneOf" && !ours_worded.contains(key)
        };
        let mut their_lines: Vec<&String> = theirs.iter().filter(worded_alike).collect();
        let mut our_lines: Vec<&String> = ours.iter().filter(worded_alike).collect();
        their_lines.sort();
        our_lines.sort();
        assert_eq!(our_lines, their_lines, "{name}: error lines");
        lines_compared += our_lines.len();
        unsafe_pairs += usize::from(!error.is_empty());
    }
    // Both kinds of pair are there, and most lines were compared word for word.
    assert!(
        unsafe_pairs >= 30 && dirs.len() - unsafe_pairs >= 10,
        "{unsafe_pairs} unsafe of {}",
        dirs.len()
    );
    assert!(lines_compared >= 40, "only {lines_compared} lines compared");
    Ok(())
}
