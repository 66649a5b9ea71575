//! `bundle-tool catalog add` and `catalog deprecate`, the release edits of CI: three Redis
//! operator releases added one after another, deprecations written, the result valid for
//! both our validator and `opm validate`, and rejected edits leaving the catalog's bytes
//! untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::assets::Assets;
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn bundle_tool(args: &[&str]) -> Output {
    Command::new(e2e::bundle_tool_binary())
        .args(args)
        .output()
        .unwrap()
}

fn succeeded(output: Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs an edit that must be refused: exit 1, the message contains `expected`, and every
/// file of the catalog is byte-for-byte as before.
fn refused(catalog: &Path, args: &[&str], expected: &str) {
    let before = snapshot(catalog);
    let output = bundle_tool(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{args:?} was accepted: {stderr}"
    );
    assert!(
        stderr.contains(expected),
        "{args:?}: expected {expected:?} in {stderr}"
    );
    assert_eq!(snapshot(catalog), before, "{args:?} changed the catalog");
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().filter_map(Result::ok) {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn opm_validate(dir: &Path) {
    let output = Command::new(Assets::locate().unwrap().opm().unwrap())
        .arg("validate")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "opm validate: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn documents(file: &Path) -> Vec<Value> {
    let text = std::fs::read(file).unwrap();
    serde_json::Deserializer::from_slice(&text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn entries(docs: &[Value], channel: &str) -> Vec<(String, String)> {
    docs.iter()
        .find(|d| d["schema"] == "olm.channel" && d["name"] == channel)
        .unwrap_or_else(|| panic!("no channel {channel}"))["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["replaces"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn releases_are_added_as_channel_heads_and_bad_edits_change_nothing() {
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    let cat = catalog.to_str().unwrap();
    for (version, channels, extra) in [
        ("0.1.0", "alpha", vec![]),
        ("0.2.0", "alpha,stable", vec![]),
        ("0.3.0", "alpha,stable", vec!["--skip-range", "<0.3.0"]),
    ] {
        let dir = work.path().join(format!("redis-{version}"));
        succeeded(
            Command::new(e2e::bundle_tool_binary())
                .current_dir(workspace())
                .env("SOURCE_DATE_EPOCH", "1764460800")
                .args(["generate", "--version", version, "--output"])
                .arg(&dir)
                .output()
                .unwrap(),
        );
        let image = format!("ghcr.io/example/redis-operator-bundle:v{version}");
        let mut args = vec![
            "catalog",
            "add",
            cat,
            dir.to_str().unwrap(),
            "--channels",
            channels,
            "--image",
            &image,
        ];
        args.extend(extra);
        let said = succeeded(bundle_tool(&args));
        assert!(
            said.contains(&format!("redis-operator.v{version}")),
            "{said}"
        );
    }
    let file = catalog.join("redis-operator/catalog.json");
    let docs = documents(&file);
    let v = |s: &str| format!("redis-operator.v{s}");
    assert_eq!(
        entries(&docs, "alpha"),
        [
            (v("0.1.0"), String::new()),
            (v("0.2.0"), v("0.1.0")),
            (v("0.3.0"), v("0.2.0"))
        ]
    );
    assert_eq!(
        entries(&docs, "stable"),
        [(v("0.2.0"), String::new()), (v("0.3.0"), v("0.2.0"))]
    );
    let package = docs.iter().find(|d| d["schema"] == "olm.package").unwrap();
    assert_eq!(package["defaultChannel"], "alpha");
    succeeded(bundle_tool(&["catalog", "validate", cat]));
    opm_validate(&catalog);

    // Refused edits: the catalog stays byte-for-byte the same.
    let bundle_030 = work.path().join("redis-0.3.0");
    let b030 = bundle_030.to_str().unwrap();
    refused(
        &catalog,
        &["catalog", "add", cat, b030, "--channels", "alpha"],
        "already in package",
    );
    std::fs::remove_dir_all(&bundle_030).unwrap();
    succeeded(
        Command::new(e2e::bundle_tool_binary())
            .current_dir(workspace())
            .env("SOURCE_DATE_EPOCH", "1764460800")
            .args(["generate", "--version", "0.4.0", "--output", b030])
            .output()
            .unwrap(),
    );
    // Replacing an old bundle leaves two heads in the channel: opm's rule, opm's words.
    refused(
        &catalog,
        &[
            "catalog",
            "add",
            cat,
            b030,
            "--channels",
            "alpha",
            "--replaces",
            &v("0.1.0"),
        ],
        "multiple channel heads found in graph",
    );
    refused(
        &catalog,
        &[
            "catalog",
            "add",
            cat,
            b030,
            "--channels",
            "alpha",
            "--skip-range",
            "not a range",
        ],
        "invalid skipRange",
    );
    refused(
        &catalog,
        &[
            "catalog",
            "deprecate",
            cat,
            "--package",
            "redis-operator",
            "--bundle",
            "redis-operator.v9.9.9",
            "--message",
            "gone",
        ],
        "cannot deprecate bundle \"redis-operator.v9.9.9\" for package \"redis-operator\": bundle not found",
    );

    // Deprecations of each kind; a second one for the same bundle replaces the message.
    for target in [
        vec!["--bundle", "redis-operator.v0.1.0", "--message", "first"],
        vec![
            "--bundle",
            "redis-operator.v0.1.0",
            "--message",
            "0.1.0 is end of life",
        ],
        vec!["--channel", "alpha", "--message", "use stable"],
        vec!["--package-level", "--message", "moved to redis-operator-ng"],
    ] {
        let mut args = vec!["catalog", "deprecate", cat, "--package", "redis-operator"];
        args.extend(target);
        succeeded(bundle_tool(&args));
    }
    let docs = documents(&file);
    let deprecations: Vec<&Value> = docs
        .iter()
        .filter(|d| d["schema"] == "olm.deprecations")
        .collect();
    assert_eq!(deprecations.len(), 1);
    let entries = deprecations[0]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert!(entries.iter().any(
        |e| e["message"] == "0.1.0 is end of life" && e["reference"]["schema"] == "olm.bundle"
    ));
    succeeded(bundle_tool(&["catalog", "validate", cat]));
    opm_validate(&catalog);
}
