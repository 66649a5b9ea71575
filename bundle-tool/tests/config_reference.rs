//! docs/config.md against the config's own definition: every key `bundle-tool.yaml` accepts
//! (read from the definition itself, as the "did you mean" suggestion reads it: the list of
//! known keys serde names for an unknown one, at every level) has one row there, and every
//! row names such a key. A key added without a row, or a row left for a key removed, fails.

use std::collections::BTreeSet;
use std::path::Path;

use bundle_tool::bundle::GenerateConfig;

const PROBE: &str = "zzUnknownKeyProbe";

/// The keys the definition accepts at `prefix` (dotted, empty for the top level), or `None`
/// when `prefix` is not a section (a value, a list, a free map).
fn keys_at(prefix: &[String]) -> Option<Vec<String>> {
    let mut yaml = String::new();
    for (depth, key) in prefix.iter().enumerate() {
        yaml.push_str(&format!("{}{key}:\n", "  ".repeat(depth)));
    }
    yaml.push_str(&format!("{}{PROBE}: 1\n", "  ".repeat(prefix.len())));
    let error = GenerateConfig::parse(&yaml, Path::new("probe.yaml"))
        .err()?
        .to_string();
    let list = error
        .split_once(&format!("unknown field `{PROBE}`, expected one of "))?
        .1;
    // A trailing suggestion, if any, is not part of the list.
    let list = list.split(" (did you mean").next().unwrap_or(list);
    Some(
        list.split(", ")
            .map(|k| k.trim().trim_matches('`').to_string())
            .collect(),
    )
}

/// Every key of the definition, dotted, sections included.
fn defined_keys() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(prefix) = pending.pop() {
        let keys = keys_at(&prefix).unwrap_or_else(|| panic!("{prefix:?} is not a section"));
        for key in keys {
            let mut path = prefix.clone();
            path.push(key);
            out.insert(path.join("."));
            if keys_at(&path).is_some() {
                pending.push(path);
            }
        }
    }
    out
}

/// The keys docs/config.md documents: the first cell of each table row, in backticks.
fn documented_keys(doc: &str) -> Vec<String> {
    doc.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(key, _)| key.to_string())
        .collect()
}

#[test]
fn docs_config_md_documents_every_key_once_and_no_other() {
    let defined = defined_keys();
    // The walk must see the nesting, or this test would check nothing below the top.
    for key in [
        "package",
        "csv.displayName",
        "release.maxRisk",
        "release.olmV1Installer.file",
    ] {
        assert!(
            defined.contains(key),
            "{key} not found in the definition: {defined:?}"
        );
    }
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/config.md");
    let listed = documented_keys(&doc);
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = listed.iter().filter(|k| !seen.insert(*k)).collect();
    assert!(
        twice.is_empty(),
        "documented more than once in docs/config.md: {twice:?}"
    );
    let documented: BTreeSet<String> = listed.iter().cloned().collect();
    let undocumented: Vec<&String> = defined.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&defined).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "keys of bundle-tool.yaml with no row in docs/config.md: {undocumented:?}; rows in docs/config.md naming no key: {unknown:?}"
    );
}

#[test]
fn the_comparison_fails_both_ways() {
    let doc = "| `package` | x |\n| `csv.displayName` | x |\n| `csv.nope` | x |\n";
    let documented: BTreeSet<String> = documented_keys(doc).into_iter().collect();
    let defined = defined_keys();
    assert!(documented.difference(&defined).any(|k| k == "csv.nope"));
    assert!(defined.difference(&documented).any(|k| k == "version"));
}
