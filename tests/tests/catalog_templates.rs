//! `bundle-tool catalog template basic|semver` against `opm alpha render-template` v1.73.0:
//! Redis operator bundles generated at several versions and a few corpus bundles are built
//! and pushed by `bundle-tool push` to a local registry; both tools render the same templates
//! from those images (`--use-http` / `--plain-http`) and must print JSON-equal catalogs, or
//! fail with the same message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::assets::Assets;
use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

/// The Redis operator versions the tests publish: two majors, several minors, a patch and
/// a pre-release, so that every edge rule of the semver template is exercised.
const REDIS_VERSIONS: [&str; 7] = [
    "0.1.0",
    "0.1.1",
    "0.2.0",
    "0.3.0-rc.1",
    "0.3.0",
    "1.0.0",
    "1.1.0",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn checked(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Generates the Redis bundle at `version` into `dir` (fixed SOURCE_DATE_EPOCH).
fn generate_redis_bundle(version: &str, dir: &Path) {
    checked(
        Command::new(e2e::bundle_tool_binary())
            .current_dir(workspace())
            .env("SOURCE_DATE_EPOCH", "1764460800")
            .args(["generate", "--version", version, "--output"])
            .arg(dir)
            .output()
            .unwrap(),
        "generate",
    );
}

fn push(dir: &Path, reference: &str) {
    checked(
        Command::new(e2e::bundle_tool_binary())
            .arg("push")
            .arg(dir)
            .args([reference, "--plain-http"])
            .output()
            .unwrap(),
        "push",
    );
}

fn json_stream(bytes: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("not a JSON stream: {e}"))
}

/// opm orders related images with the same image by Go's unstable sort (see
/// docs/conformance.md); compare those as sets.
fn normalized(mut documents: Vec<Value>) -> Vec<Value> {
    for document in &mut documents {
        if let Some(images) = document
            .get_mut("relatedImages")
            .and_then(Value::as_array_mut)
        {
            images.sort_by_key(|i| (i["image"].to_string(), i["name"].to_string()));
        }
    }
    documents
}

fn opm(args: &[&str], file: &Path) -> Output {
    Command::new(Assets::locate().unwrap().opm().unwrap())
        .args(["alpha", "render-template"])
        .args(args)
        .arg(file)
        .args(["-o", "json", "--use-http"])
        .output()
        .unwrap()
}

fn ours(args: &[&str], file: &Path, extra: &[String]) -> Output {
    Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "template"])
        .args(args)
        .arg(file)
        .args(["-o", "json", "--plain-http"])
        .args(extra)
        .output()
        .unwrap()
}

/// Renders `template` with both tools and asserts JSON-equal output; returns it.
fn same_render(name: &str, kind: &str, template: &str, folder: &Path) -> Vec<Value> {
    let file = folder.join(format!("{name}.yaml"));
    std::fs::write(&file, template).unwrap();
    let args: Vec<&str> = if kind.is_empty() { vec![] } else { vec![kind] };
    let theirs = json_stream(checked(opm(&args, &file), &format!("opm on {name}")).as_bytes());
    let mine = json_stream(checked(ours(&args, &file, &[]), &format!("ours on {name}")).as_bytes());
    assert!(!theirs.is_empty(), "{name}: opm printed nothing");
    let (theirs, mine) = (normalized(theirs), normalized(mine));
    if theirs != mine {
        let channels = |docs: &[Value]| {
            docs.iter()
                .filter(|d| d["schema"] != "olm.bundle")
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{name}: render differs from opm\nopm:\n{}\nours:\n{}",
            channels(&theirs),
            channels(&mine)
        );
    }
    mine
}

/// Asserts both tools fail on `template`, ours with exit code 1 and opm's message.
fn same_failure(name: &str, kind: &str, template: &str, folder: &Path) {
    let file = folder.join(format!("{name}.yaml"));
    std::fs::write(&file, template).unwrap();
    let args: Vec<&str> = if kind.is_empty() { vec![] } else { vec![kind] };
    let theirs = opm(&args, &file);
    let mine = ours(&args, &file, &[]);
    assert!(!theirs.status.success(), "{name}: opm accepted it");
    assert_eq!(
        mine.status.code(),
        Some(1),
        "{name}: {}",
        String::from_utf8_lossy(&mine.stderr)
    );
    let opm_stderr = String::from_utf8_lossy(&theirs.stderr);
    let message = opm_stderr
        .lines()
        .find_map(|l| l.strip_prefix("Error: "))
        .unwrap_or_else(|| panic!("{name}: no error line from opm: {opm_stderr}"));
    let our_stderr = String::from_utf8_lossy(&mine.stderr);
    assert!(
        our_stderr.contains(message),
        "{name}: opm says {message:?}, we say {our_stderr:?}"
    );
    assert!(
        our_stderr.contains(&file.display().to_string()),
        "{name}: our error does not name the file: {our_stderr}"
    );
}

fn channel<'a>(documents: &'a [Value], name: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["schema"] == "olm.channel" && d["name"] == name)
        .unwrap_or_else(|| panic!("no channel {name}"))
}

fn bundles_yaml(references: &[String]) -> String {
    references
        .iter()
        .map(|r| format!("    - image: {r}\n"))
        .collect()
}

#[tokio::test]
async fn templates_render_like_opm_from_pushed_bundle_images() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let work = tempfile::tempdir()?;
    let mut redis = Vec::new();
    let mut redis_dirs = Vec::new();
    for version in REDIS_VERSIONS {
        let dir = work.path().join(format!("redis-{version}"));
        generate_redis_bundle(version, &dir);
        let reference = format!(
            "{}/example/redis-operator-bundle:v{version}",
            registry.host()
        );
        push(&dir, &reference);
        redis.push(reference);
        redis_dirs.push(dir);
    }
    // Three corpus bundles of different packages (the corpus has one version per package).
    let corpus: Vec<(String, String, PathBuf)> = e2e::corpus::bundles()
        .into_iter()
        .step_by(60)
        .take(3)
        .collect();
    assert_eq!(corpus.len(), 3);
    let mut corpus_refs = Vec::new();
    for (package, version, dir) in &corpus {
        let reference = format!("{}/corpus/{package}:{version}", registry.host());
        push(dir, &reference);
        corpus_refs.push(reference);
    }

    let folder = work.path();
    let r =
        |indexes: &[usize]| -> Vec<String> { indexes.iter().map(|i| redis[*i].clone()).collect() };

    // Minor channels (the default), all three archetypes.
    let minor = same_render(
        "minor",
        "semver",
        &format!(
            "schema: olm.semver\ncandidate:\n  bundles:\n{}fast:\n  bundles:\n{}stable:\n  bundles:\n{}",
            bundles_yaml(&r(&[0, 1, 2, 3, 4, 5, 6])),
            bundles_yaml(&r(&[0, 1, 2, 4, 5])),
            bundles_yaml(&r(&[0, 1, 2, 4])),
        ),
        folder,
    );
    // Our own reading of the rules, on top of opm's agreement: 0.2.0 tops its minor stream
    // and replaces 0.1.1 (top of 0.1), skipping the rest of the major.
    let stable_02 = channel(&minor, "stable-v0.2");
    assert_eq!(stable_02["entries"][0]["replaces"], "redis-operator.v0.1.1");
    let package = minor.iter().find(|d| d["schema"] == "olm.package").unwrap();
    assert_eq!(package["defaultChannel"], "stable-v0.3");
    assert!(package["icon"].is_object() && package["description"].is_string());

    // Major and minor channels, with each default-channel preference.
    for (index, preference) in [
        "",
        "defaultChannelTypePreference: major\n",
        "defaultChannelTypePreference: minor\n",
    ]
    .iter()
    .enumerate()
    {
        same_render(
            &format!("both{index}"),
            "semver",
            &format!(
                "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\n{preference}candidate:\n  bundles:\n{}stable:\n  bundles:\n{}",
                bundles_yaml(&r(&[3, 4, 5, 6])),
                bundles_yaml(&r(&[6, 0, 2, 1, 5])),
            ),
            folder,
        );
    }
    // Major channels only, keys in Go's case-insensitive spelling, type detected from schema.
    let major = same_render(
        "major",
        "",
        &format!(
            "Schema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: false\nFast:\n  Bundles:\n{}",
            bundles_yaml(&r(&[0, 1, 2, 3, 4, 5, 6])).replace("image:", "Image:"),
        ),
        folder,
    );
    assert!(
        channel(&major, "fast-v0")["entries"]
            .as_array()
            .unwrap()
            .len()
            == 5
    );
    // Each corpus bundle alone in a semver template (icons and descriptions of other CSVs).
    for (index, reference) in corpus_refs.iter().enumerate() {
        same_render(
            &format!("corpus{index}"),
            "semver",
            &format!(
                "schema: olm.semver\nstable:\n  bundles:\n{}",
                bundles_yaml(std::slice::from_ref(reference))
            ),
            folder,
        );
    }
    // A basic template: hand-written package and channels, bundles by image, any other schema
    // passed through, several packages.
    let mut basic = String::from(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: redis-operator\n  defaultChannel: stable\n- schema: olm.channel\n  package: redis-operator\n  name: stable\n  entries:\n  - name: redis-operator.v0.1.0\n  - name: redis-operator.v0.2.0\n    replaces: redis-operator.v0.1.0\n    skipRange: '<0.2.0'\n- schema: custom.note\n  package: redis-operator\n  text: kept as is\n",
    );
    for reference in r(&[0, 2]).iter().chain(&corpus_refs) {
        basic.push_str(&format!("- schema: olm.bundle\n  image: {reference}\n"));
    }
    let rendered = same_render("basic", "basic", &basic, folder);
    assert!(rendered.iter().any(|d| d["schema"] == "custom.note"));

    // Failures, with opm's messages.
    same_failure(
        "unknown-key",
        "semver",
        "schema: olm.semver\navoidSkipPatch: true\n",
        folder,
    );
    same_failure(
        "wrong-schema",
        "semver",
        "schema: olm.template.basic\n",
        folder,
    );
    same_failure(
        "preference",
        "semver",
        "schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n",
        folder,
    );
    same_failure(
        "bad-preference",
        "semver",
        "schema: olm.semver\ndefaultChannelTypePreference: patch\n",
        folder,
    );
    same_failure("empty", "semver", "schema: olm.semver\n", folder);
    same_failure(
        "two-packages",
        "semver",
        &format!(
            "schema: olm.semver\nstable:\n  bundles:\n{}",
            bundles_yaml(&[redis[0].clone(), corpus_refs[0].clone()])
        ),
        folder,
    );
    same_failure(
        "duplicate",
        "semver",
        &format!(
            "schema: olm.semver\nstable:\n  bundles:\n{}",
            bundles_yaml(&[redis[0].clone(), redis[0].clone()])
        ),
        folder,
    );
    same_failure(
        "basic-wrong-schema",
        "basic",
        "schema: olm.semver\n",
        folder,
    );
    same_failure(
        "basic-full-bundle",
        "basic",
        &format!(
            "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  package: redis-operator\n  image: {}\n",
            redis[0]
        ),
        folder,
    );
    same_failure("unknown-schema", "", "schema: olm.other\n", folder);
    same_failure("no-schema", "", "entries: []\n", folder);

    // Local folders stand in for the images: the same catalog without any pull.
    let file = folder.join("minor.yaml");
    let sources: Vec<String> = redis
        .iter()
        .zip(&redis_dirs)
        .flat_map(|(reference, dir)| {
            [
                "--bundle-source".to_string(),
                format!("{reference}={}", dir.display()),
            ]
        })
        .collect();
    let offline = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "template", "semver"])
        .arg(&file)
        .args(["-o", "json"])
        .args(&sources)
        .output()?;
    assert_eq!(
        normalized(json_stream(checked(offline, "offline render").as_bytes())),
        minor,
        "--bundle-source render differs from the pulled render"
    );

    // `-o mermaid`: opm's graph writer with OLMv0 semantics, byte for byte.
    for (name, kind) in [
        ("minor", "semver"),
        ("both1", "semver"),
        ("major", ""),
        ("basic", "basic"),
    ] {
        let file = folder.join(format!("{name}.yaml"));
        let args: Vec<&str> = if kind.is_empty() { vec![] } else { vec![kind] };
        let theirs = Command::new(Assets::locate()?.opm()?)
            .args(["alpha", "render-template"])
            .args(&args)
            .arg(&file)
            .args(["-o", "mermaid", "--use-http"])
            .output()?;
        let mine = Command::new(e2e::bundle_tool_binary())
            .args(["catalog", "template"])
            .args(&args)
            .arg(&file)
            .args(["-o", "mermaid", "--plain-http"])
            .output()?;
        let theirs = checked(theirs, &format!("opm -o mermaid on {name}"));
        assert!(theirs.starts_with("graph LR"), "{theirs}");
        assert_eq!(
            checked(mine, &format!("ours -o mermaid on {name}")),
            theirs,
            "{name}: mermaid differs"
        );
    }

    // `catalog add` takes an image reference too: pulled, rendered, added as the head.
    let catalog = folder.join("released");
    std::fs::create_dir(&catalog)?;
    for reference in [&redis[0], &redis[2]] {
        checked(
            Command::new(e2e::bundle_tool_binary())
                .args(["catalog", "add"])
                .arg(&catalog)
                .args([reference.as_str(), "--channels", "stable", "--plain-http"])
                .output()?,
            "catalog add of an image",
        );
    }
    let added = json_stream(&std::fs::read(catalog.join("redis-operator/catalog.json"))?);
    let stable = channel(&added, "stable");
    assert_eq!(stable["entries"][1]["replaces"], "redis-operator.v0.1.0");
    assert!(added.iter().any(|d| d["image"] == redis[2].as_str()));
    drop(registry);
    Ok(())
}
