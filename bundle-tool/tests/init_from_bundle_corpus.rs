//! The migration path, measured: `bundle-tool init --from-bundle` on every bundle of the
//! shared corpus (`../shared/corpus/bundles`, 266 published bundles), then `bundle-tool
//! generate` from the config and manifests it wrote, and the CSV compared with the bundle's
//! own, leaf by leaf, `createdAt` aside (`alm-examples` compared as the JSON it holds). The
//! share that comes back the same, and the kinds of difference left with how many bundles
//! each touches, are docs/conformance.md's table ("`init --from-bundle` on the corpus"): the
//! test computes the table and fails when the document says otherwise, so the share cannot
//! drop (or rise) without the document saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus() -> PathBuf {
    workspace().join("../shared/corpus/bundles")
}

/// Every `<package>/<version>` folder of the corpus, sorted.
fn bundles() -> Vec<PathBuf> {
    let root = corpus();
    let sorted = |dir: &Path| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e}: the shared corpus sits beside the workspace",
                    dir.display()
                )
            })
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    };
    sorted(&root).iter().flat_map(|p| sorted(p)).collect()
}

/// The CSV of a bundle folder's `manifests/`, as JSON.
fn csv_of(manifests: &Path) -> Value {
    let documents = bundle_tool::manifest::read_path(manifests)
        .unwrap_or_else(|e| panic!("{}: {e}", manifests.display()));
    documents
        .into_iter()
        .map(|d| d.value)
        .find(|v| v["kind"] == "ClusterServiceVersion")
        .unwrap_or_else(|| panic!("{}: no CSV", manifests.display()))
}

/// The CSV as compared: `createdAt` out, `alm-examples` parsed.
fn normalised(mut csv: Value) -> Value {
    if let Some(annotations) = csv
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove("createdAt");
        if let Some(examples) = annotations.get_mut("alm-examples")
            && let Some(parsed) = examples
                .as_str()
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
        {
            *examples = parsed;
        }
    }
    csv
}

/// The kind of a difference at `pointer`: its first three keys, array indexes as `*`.
fn kind(pointer: &str) -> String {
    let parts: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|p| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                "*".to_string()
            } else {
                p.replace("~1", "/").replace("~0", "~")
            }
        })
        .take(3)
        .collect();
    format!("/{}", parts.join("/"))
}

/// The pointers at which `a` and `b` differ (a leaf, or a whole side that the other lacks).
fn differences(a: &Value, b: &Value, pointer: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let next = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => differences(p, q, next, out),
                    _ => out.push(next),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, format!("{pointer}/{i}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(pointer),
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let output = Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}

/// One bundle through init and generate: the kinds of difference between the CSVs (empty:
/// the same CSV), or why a step failed.
fn migrate(bundle: &Path, work: &Path) -> Result<BTreeSet<String>, String> {
    let config = work.join("bundle-tool.yaml");
    let out = work.join("bundle");
    run(&[
        "init",
        "--from-bundle",
        bundle.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ])
    .map_err(|e| format!("init: {e}"))?;
    run(&[
        "generate",
        "--config",
        config.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ])
    .map_err(|e| format!("generate: {e}"))?;
    let ours = normalised(csv_of(&out.join("manifests")));
    let theirs = normalised(csv_of(&bundle.join("manifests")));
    let mut found = Vec::new();
    differences(&ours, &theirs, String::new(), &mut found);
    Ok(found.iter().map(|p| kind(p)).collect())
}

/// The table docs/conformance.md carries: the share, then each kind with its bundle count.
fn table(
    total: usize,
    same: usize,
    failed: &[(String, String)],
    kinds: &BTreeMap<String, Vec<String>>,
) -> String {
    let mut text = format!(
        "{same} of {total} corpus bundles give back the same CSV; {} differ, {} fail.\n\n| CSV field that differs | bundles |\n|---|---|\n",
        total - same - failed.len(),
        failed.len()
    );
    let mut rows: Vec<(&String, usize)> = kinds.iter().map(|(k, v)| (k, v.len())).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (kind, count) in rows {
        text.push_str(&format!("| `{kind}` | {count} |\n"));
    }
    text
}

#[test]
fn init_from_bundle_gives_back_the_csv_of_the_documented_share_of_the_corpus() {
    let bundles = bundles();
    assert!(
        bundles.len() >= 266,
        "{} bundles in the corpus",
        bundles.len()
    );
    let work = tempfile::tempdir().unwrap();
    let mut same = 0;
    let mut failed: Vec<(String, String)> = Vec::new();
    let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, bundle) in bundles.iter().enumerate() {
        let name = bundle.strip_prefix(corpus()).unwrap().display().to_string();
        let dir = work.path().join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        match migrate(bundle, &dir) {
            Ok(found) if found.is_empty() => same += 1,
            Ok(found) => {
                for kind in found {
                    kinds.entry(kind).or_default().push(name.clone());
                }
            }
            Err(why) => failed.push((name, why)),
        }
    }
    let table = table(bundles.len(), same, &failed, &kinds);
    for (name, why) in &failed {
        eprintln!("failed: {name}: {why}");
    }
    for (kind, names) in &kinds {
        eprintln!("{kind}: {}", names.join(" "));
    }
    let doc = std::fs::read_to_string(workspace().join("docs/conformance.md"))
        .expect("docs/conformance.md");
    assert!(
        doc.contains(&table),
        "docs/conformance.md's `init --from-bundle` table is out of date; it is now:\n{table}"
    );
}
