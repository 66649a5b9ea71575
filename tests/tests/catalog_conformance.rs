//! `bundle-tool catalog validate` and `render` against `opm` v1.73.0, side by side, on every
//! catalog of the shared corpus and on broken variants of them made here: the same verdict,
//! the same check named (same message, or the same set of problems in opm's tree), and
//! byte-identical render output for the catalogs (JSON-equal for bundle folders).

use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::assets::Assets;
use serde_json::{Value, json};

fn corpus() -> Vec<PathBuf> {
    let dirs = e2e::corpus::catalogs();
    assert_eq!(dirs.len(), 39, "the corpus has 39 catalogs");
    dirs
}

/// A verdict: `None` when valid, else the problems, normalized so that opm's random map
/// order does not matter (tree leaves as a sorted set).
fn problems(message: &str) -> Vec<String> {
    let mut lines: Vec<String> = message
        .lines()
        .map(|l| {
            l.trim_start_matches(['│', '├', '└', '─', ' '])
                .trim_end_matches(':')
                .to_string()
        })
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

fn opm_validate(dir: &Path) -> Option<Vec<String>> {
    let output = Command::new(Assets::locate().unwrap().opm().unwrap())
        .args(["validate", "-o", "json"])
        .arg(dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "opm validate {}: {e}: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    if report["passed"] == true {
        assert!(output.status.success());
        return None;
    }
    assert!(!output.status.success());
    Some(problems(
        report["error"]["message"].as_str().unwrap_or_default(),
    ))
}

fn our_validate(dir: &Path) -> Option<Vec<String>> {
    let output = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "validate"])
        .arg(dir)
        .output()
        .unwrap();
    if output.status.success() {
        return None;
    }
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Load errors carry file:line before opm's text; compare the text.
    let text = stderr
        .split_once(": ")
        .filter(|(head, _)| head.starts_with('/'))
        .map(|(_, t)| t)
        .unwrap_or(&stderr);
    Some(problems(text))
}

fn json_stream(bytes: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect()
}

#[test]
fn corpus_catalogs_validate_and_render_like_opm() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    for dir in corpus() {
        assert_eq!(
            our_validate(&dir),
            opm_validate(&dir),
            "verdicts differ on {}",
            dir.display()
        );
        let theirs = Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(&dir)
            .output()
            .unwrap();
        let ours = Command::new(e2e::bundle_tool_binary())
            .args(["catalog", "render", "-o", "json"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(theirs.status.success() && ours.status.success());
        assert!(
            json_stream(&theirs.stdout) == json_stream(&ours.stdout),
            "render differs on {}",
            dir.display()
        );
        // docs/conformance.md: byte-identical, not only JSON-equal.
        assert!(
            theirs.stdout == ours.stdout,
            "render of {} is JSON-equal to opm's but not byte-identical",
            dir.display()
        );
    }
}

/// All corpus catalogs merged into one folder: `catalog render -o json` gives opm's bytes.
#[test]
fn merged_corpus_renders_byte_identical_to_opm() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    let merged = tempfile::tempdir().unwrap();
    assert!(e2e::corpus::merge_catalogs(merged.path()) > 0);
    let theirs = Command::new(&opm)
        .args(["render", "-o", "json"])
        .arg(merged.path())
        .output()
        .unwrap();
    let ours = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "render", "-o", "json"])
        .arg(merged.path())
        .output()
        .unwrap();
    assert!(theirs.status.success() && ours.status.success());
    assert!(!theirs.stdout.is_empty());
    assert!(
        theirs.stdout == ours.stdout,
        "merged corpus: {} bytes from opm, {} from us, first difference at byte {:?}",
        theirs.stdout.len(),
        ours.stdout.len(),
        theirs
            .stdout
            .iter()
            .zip(&ours.stdout)
            .position(|(a, b)| a != b)
    );
    eprintln!(
        "merged corpus: {} bytes, byte-identical to opm render",
        ours.stdout.len()
    );
}

/// A `\u` escape of a lone UTF-16 surrogate: Go's JSON decoder (opm) reads it as U+FFFD, where
/// serde_json refuses the file. In a kept field and in an ignored one, a lone high, a lone low,
/// and a high before a non-low escape, beside a valid pair: opm's verdict and render, byte for
/// byte. Found by the `json_differential` fuzz target (docs/testing.md).
#[test]
fn lone_surrogate_escapes_read_as_opm_reads_them() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    let text = concat!(
        r#"{"schema":"olm.package","name":"p","defaultChannel":"s","description":"x\udaddy \udc00 \ud83d\u0041 \ud83d\ude00"}"#,
        "\n",
        r#"{"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1.0.0","ignored":"\udadd`"}]}"#,
        "\n",
        r#"{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"quay.io/p/b:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"x.note","value":{"t":"\ud800!"}}]}"#,
        "\n"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.json"), text).unwrap();
    assert_eq!(opm_validate(dir.path()), None, "opm accepts it");
    assert_eq!(our_validate(dir.path()), None, "we accept it");
    let theirs = Command::new(&opm)
        .args(["render", "-o", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let ours = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "render", "-o", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(theirs.status.success() && ours.status.success());
    assert!(String::from_utf8_lossy(&theirs.stdout).contains("x\u{fffd}y"));
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
}

/// A number past a 64-bit float (`5e3933`) in a field every reader ignores: we refuse the
/// file, naming the file and line, whichever of our readers takes it (the fast ones skipped
/// such a number unread and accepted the file; found by the `json_differential` fuzz target,
/// docs/testing.md finding 6). opm v1.73.0 renders it, but only by reading the rest of the
/// file as YAML once Go's decoder fails: the number becomes a string and every later
/// document of the file is dropped without an error. This checks that opm still loses the
/// document after it, the reason for the difference (docs/conformance.md).
#[test]
fn a_number_past_a_float_is_refused_where_opm_drops_what_follows() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    let text = concat!(
        r#"{"schema":"olm.package","name":"p","defaultChannel":"s"}"#,
        "\n",
        r#"{"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1.0.0"}],"x":5e3933}"#,
        "\n",
        r#"{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"quay.io/p/b:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#,
        "\n"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.json"), text).unwrap();
    let theirs = Command::new(&opm)
        .args(["render", "-o", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "opm render accepts it");
    let rendered = json_stream(&theirs.stdout);
    let schemas: Vec<&str> = rendered
        .iter()
        .filter_map(|d| d["schema"].as_str())
        .collect();
    assert!(
        !schemas.contains(&"olm.bundle"),
        "opm no longer drops the document after the number: {schemas:?}"
    );
    for command in [
        &["catalog", "validate"][..],
        &["catalog", "render", "-o", "json"],
    ] {
        let ours = Command::new(e2e::bundle_tool_binary())
            .args(command)
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&ours.stderr);
        assert_eq!(ours.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            stderr.contains("catalog.json:2: number out of range"),
            "{command:?}: {stderr}"
        );
        assert!(ours.stdout.is_empty(), "{command:?} wrote output");
    }
}

/// One way to break a catalog; `None` when it does not apply to this one.
type Mutation = fn(&mut Vec<Value>) -> Option<()>;

fn docs_of<'a>(docs: &'a mut [Value], schema: &str) -> impl Iterator<Item = &'a mut Value> {
    let schema = schema.to_string();
    docs.iter_mut()
        .filter(move |d| d["schema"] == schema.as_str())
}

fn first_bundle(docs: &[Value]) -> Option<Value> {
    docs.iter().find(|d| d["schema"] == "olm.bundle").cloned()
}

const MUTATIONS: &[(&str, Mutation)] = &[
    ("two heads", |docs| {
        let mut extra = first_bundle(docs)?;
        extra["name"] = json!("zz-extra.v99.0.0");
        for p in extra["properties"].as_array_mut()? {
            if p["type"] == "olm.package" {
                p["value"]["version"] = json!("99.0.0");
            }
        }
        let channel = docs_of(docs, "olm.channel").next()?;
        channel["entries"]
            .as_array_mut()?
            .push(json!({"name": "zz-extra.v99.0.0"}));
        docs.push(extra);
        Some(())
    }),
    ("replaces cycle", |docs| {
        let channel = docs_of(docs, "olm.channel")
            .find(|c| c["entries"].as_array().is_some_and(|e| e.len() >= 2))?;
        let entries = channel["entries"].as_array_mut()?;
        let names: Vec<String> = entries
            .iter()
            .filter_map(|e| e["name"].as_str().map(String::from))
            .collect();
        for (i, entry) in entries.iter_mut().enumerate() {
            entry["replaces"] = json!(names[(i + 1) % names.len()]);
            entry.as_object_mut()?.remove("skips");
        }
        Some(())
    }),
    ("duplicate bundle", |docs| {
        let copy = first_bundle(docs)?;
        docs.push(copy);
        Some(())
    }),
    ("bad semver", |docs| {
        let bundle = docs_of(docs, "olm.bundle").next()?;
        for p in bundle["properties"].as_array_mut()? {
            if p["type"] == "olm.package" {
                p["value"]["version"] = json!("1.0");
            }
        }
        Some(())
    }),
    ("missing default channel", |docs| {
        docs_of(docs, "olm.package").next()?["defaultChannel"] = json!("no-such-channel");
        Some(())
    }),
    ("no default channel", |docs| {
        docs_of(docs, "olm.package")
            .next()?
            .as_object_mut()?
            .remove("defaultChannel");
        Some(())
    }),
    ("dangling deprecation", |docs| {
        let package = docs_of(docs, "olm.package").next()?["name"].clone();
        docs.push(json!({"schema": "olm.deprecations", "package": package,
                         "entries": [{"reference": {"schema": "olm.bundle", "name": "no-such-bundle"}, "message": "gone"}]}));
        Some(())
    }),
    ("deprecated channel", |docs| {
        let channel = docs_of(docs, "olm.channel").next()?.clone();
        docs.push(json!({"schema": "olm.deprecations", "package": channel["package"],
                         "entries": [{"reference": {"schema": "olm.channel", "name": channel["name"]}, "message": "use stable"}]}));
        Some(())
    }),
    ("invalid package name", |docs| {
        let old = docs_of(docs, "olm.package").next()?["name"]
            .as_str()?
            .to_string();
        let new = format!("Bad_{old}");
        for doc in docs.iter_mut() {
            if doc["name"] == old.as_str() && doc["schema"] == "olm.package" {
                doc["name"] = json!(new);
            }
            if doc["package"] == old.as_str() {
                doc["package"] = json!(new);
            }
        }
        Some(())
    }),
    ("bad skipRange", |docs| {
        let channel = docs_of(docs, "olm.channel").next()?;
        channel["entries"].as_array_mut()?.first_mut()?["skipRange"] = json!(">=1.0 <2.0.0");
        Some(())
    }),
    ("unknown package for channel", |docs| {
        docs_of(docs, "olm.channel").next()?["package"] = json!("ghost");
        Some(())
    }),
    ("stranded through a skip", |docs| {
        // head replaces A, A replaces B: the head also skipping A ends the walk at A, so B
        // (unless skipped elsewhere) is stranded.
        for channel in docs_of(docs, "olm.channel") {
            let entries = channel["entries"].as_array_mut()?;
            let find =
                |entries: &Vec<Value>, name: &str| entries.iter().position(|e| e["name"] == name);
            for i in 0..entries.len() {
                let a = entries[i]["replaces"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let Some(ai) = find(entries, &a) else {
                    continue;
                };
                let b = entries[ai]["replaces"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if find(entries, &b).is_some() {
                    let skips = entries[i]
                        .as_object_mut()?
                        .entry("skips")
                        .or_insert(json!([]));
                    skips.as_array_mut()?.push(json!(a));
                    return Some(());
                }
            }
        }
        None
    }),
];

#[test]
fn broken_variants_get_the_same_verdict_and_check_as_opm() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    let mut compared = 0;
    let mut by_mutation: std::collections::BTreeMap<&str, usize> = Default::default();
    for dir in corpus() {
        let rendered = Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(&dir)
            .output()
            .unwrap();
        let original = json_stream(&rendered.stdout);
        for (name, mutate) in MUTATIONS {
            let mut docs = original.clone();
            if mutate(&mut docs).is_none() {
                continue;
            }
            let out = tempfile::tempdir().unwrap();
            let text: String = docs
                .iter()
                .map(|d| serde_json::to_string(d).unwrap() + "\n")
                .collect();
            std::fs::write(out.path().join("catalog.json"), text).unwrap();
            let theirs = opm_validate(out.path());
            let ours = our_validate(out.path());
            assert!(
                theirs == ours,
                "{name} on {}: opm says {theirs:#?}, we say {ours:#?}",
                dir.display()
            );
            compared += 1;
            *by_mutation.entry(name).or_default() += 1;
        }
    }
    eprintln!("compared {compared} broken variants with opm: {by_mutation:?}");
    assert!(compared >= 39 * 8, "only {compared} variants applied");
}

/// Image references at the edges of opm's parser (containers/image's `ParseNormalizedNamed`):
/// the 255-character limit counted on the normalized name, Docker Hub's `library/`, upper
/// case in each part, image IDs, tags and digests. Each is the bundle image of a one-bundle
/// catalog, and every fourth one also a related image: same verdict, same message as opm.
#[test]
fn image_references_get_the_same_verdict_and_message_as_opm() {
    let hex = |n: usize| "ab".repeat(n / 2);
    let a = |n: usize| "a".repeat(n);
    let mut specs: Vec<String> = [
        "redis",
        "me/redis:7",
        "quay.io/me/x:v1",
        "localhost/x",
        "localhost:5000/x:1",
        "127.0.0.1:5000/a/b",
        "Quay.IO/x/y",
        "Foo/bar",
        "foo/Bar:v1",
        "quay.io/Me/x",
        "quay.io/me/x:V1",
        "quay.io/me/x:-v1",
        "quay.io/me/x:",
        "a:b:c",
        "x//y",
        "-x/y",
        "x-/y",
        "a__b/c---d/e.f",
        "a___b",
        "a..b",
        "quay.io:/x",
        "quay.io:50a/x",
        "-quay.io/x",
        "quay-.io/x",
        "[::1]:5000/x",
        "index.docker.io/x",
        "docker.io/x",
        "x@sha256",
        "x@sha256:",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    specs.extend([
        a(64),
        hex(64),
        format!("{}A", a(63)),
        a(237),
        a(238),
        format!("me/{}", a(250)),
        format!("quay.io/{}", a(247)),
        format!("quay.io/{}", a(248)),
        format!("index.docker.io/x/{}", a(243)),
        format!("index.docker.io/x/{}", a(244)),
        format!("x:{}", a(128)),
        format!("x:{}", a(129)),
        format!("x@sha256:{}", hex(64)),
        format!("x:v1@sha256:{}", hex(64)),
        format!("x@sha256:{}", hex(62)),
        format!("x@sha256:{}", hex(64).to_uppercase()),
        format!("x@SHA256:{}", hex(64)),
        format!("x:v1@SHA256:{}", hex(64)),
        format!("x@shb256:{}", hex(64)),
        format!("x@sha384:{}", hex(96)),
        format!("x@sha512:{}", hex(64)),
        format!("x@sha+256:{}", hex(64)),
        format!("x@1sha:{}", hex(64)),
        format!("x@sha256:{}", hex(30)),
        format!("{}@sha999:{}", a(250), hex(64)),
        format!("{}@sha256:abc", a(250)),
    ]);
    let mut compared = 0;
    for (i, spec) in specs.iter().enumerate() {
        let related = if i % 4 == 0 {
            json!([{"name": "operand", "image": spec}])
        } else {
            json!([])
        };
        let docs = [
            json!({"schema": "olm.package", "name": "p", "defaultChannel": "s"}),
            json!({"schema": "olm.channel", "package": "p", "name": "s", "entries": [{"name": "p.v1.0.0"}]}),
            json!({"schema": "olm.bundle", "package": "p", "name": "p.v1.0.0", "image": spec,
                   "relatedImages": related,
                   "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]}),
        ];
        let out = tempfile::tempdir().unwrap();
        let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
        std::fs::write(out.path().join("catalog.json"), text).unwrap();
        let theirs = opm_validate(out.path());
        let ours = our_validate(out.path());
        assert_eq!(
            ours, theirs,
            "image {spec:?}: opm says {theirs:#?}, we say {ours:#?}"
        );
        compared += 1;
    }
    assert_eq!(compared, specs.len());
}

/// opm sorts a bundle's related images by image with Go's unstable sort, so two entries with
/// the same image (under different names) come out in an order that is an artefact of that
/// sort; we keep the CSV's order. Compare such runs as sets (docs/conformance.md).
fn normalize_related_images(mut documents: Vec<Value>) -> Vec<Value> {
    for document in &mut documents {
        if let Some(images) = document
            .get_mut("relatedImages")
            .and_then(Value::as_array_mut)
        {
            images.sort_by_key(|i| {
                (
                    i["image"].as_str().unwrap_or_default().to_string(),
                    i["name"].as_str().unwrap_or_default().to_string(),
                )
            });
        }
    }
    documents
}

#[test]
fn bundle_folders_render_like_opm() {
    let opm = Assets::locate().unwrap().opm().unwrap();
    let mut bundles = vec![e2e::corpus::redis_bundle()];
    bundles.extend(e2e::corpus::bundles().into_iter().map(|(_, _, dir)| dir));
    assert!(
        bundles.len() >= 267,
        "the corpus has 266 bundles, plus ours"
    );
    let mut compared = 0;
    for dir in &bundles {
        let theirs = Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(dir)
            .output()
            .unwrap();
        let ours = Command::new(e2e::bundle_tool_binary())
            .args(["catalog", "render", "-o", "json"])
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(
            theirs.status.success(),
            ours.status.success(),
            "{}: opm {}, we {}",
            dir.display(),
            String::from_utf8_lossy(&theirs.stderr),
            String::from_utf8_lossy(&ours.stderr)
        );
        if theirs.status.success() {
            assert!(
                normalize_related_images(json_stream(&theirs.stdout))
                    == normalize_related_images(json_stream(&ours.stdout)),
                "render differs on {}",
                dir.display()
            );
            compared += 1;
        }
    }
    eprintln!("{compared} bundle folders rendered JSON-equal to opm");
}
