//! `bundle-tool release` end to end, on a temporary copy of the repository's inputs
//! (bundle-tool.yaml, operator/config, catalog/): the embedded default (images into an OCI
//! layout, no registry), idempotent re-runs, refused changes to a released version,
//! `--dry-run`, failures that must leave the catalog and the layout as they were, and
//! `--push` into real registries (Debian's docker-registry) with the digests checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

/// `createdAt` of every generated bundle (2025-11-30T00:00:00Z), as catalog/README.md pins it.
const SOURCE_DATE_EPOCH: &str = "1764460800";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of what a release reads, in a temporary folder.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::Builder::new()
            .prefix("release-repo-")
            .tempdir()
            .unwrap();
        std::fs::copy(
            workspace().join("bundle-tool.yaml"),
            dir.path().join("bundle-tool.yaml"),
        )
        .unwrap();
        copy_tree(
            &workspace().join("operator/config"),
            &dir.path().join("operator/config"),
        );
        copy_tree(&workspace().join("catalog"), &dir.path().join("catalog"));
        // release.olmV1Installer's file, as committed.
        std::fs::create_dir(dir.path().join("olm")).unwrap();
        std::fs::copy(
            workspace().join("olm/clusterextension-rbac.yaml"),
            dir.path().join("olm/clusterextension-rbac.yaml"),
        )
        .unwrap();
        Repo { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `bundle-tool release --config bundle-tool.yaml ARGS` in the copy, `stdin` on its
    /// standard input; createdAt pinned unless `epoch` is `None`.
    fn release_with(&self, args: &[&str], epoch: Option<&str>, stdin: &str) -> Output {
        let mut command = Command::new(e2e::bundle_tool_binary());
        command
            .current_dir(self.path())
            .args(["release", "--config", "bundle-tool.yaml"])
            .args(args)
            .env_remove("SOURCE_DATE_EPOCH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(epoch) = epoch {
            command.env("SOURCE_DATE_EPOCH", epoch);
        }
        let mut child = command.spawn().unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    fn release(&self, args: &[&str]) -> Output {
        self.release_with(args, Some(SOURCE_DATE_EPOCH), "")
    }

    /// Every file below the catalog and the OCI layout, with its bytes.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        for folder in ["catalog", "target/oci"] {
            collect(&self.path().join(folder), self.path(), &mut files);
        }
        files
    }

    fn edit_config(&self, from: &str, to: &str) {
        let path = self.path().join("bundle-tool.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "bundle-tool.yaml has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    e2e::copy_dir(from, to).unwrap();
}

fn collect(dir: &Path, base: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, base, files);
        } else {
            let relative = path.strip_prefix(base).unwrap().to_path_buf();
            files.insert(relative, std::fs::read(&path).unwrap());
        }
    }
}

/// The JSON summary of a successful run.
fn summary(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "release failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON summary")
}

/// The JSON summary and standard error of a failed run (exit 1).
fn failure(output: &Output) -> (Value, String) {
    assert_eq!(
        output.status.code(),
        Some(1),
        "release should have failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (
        summary,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn step_status<'a>(summary: &'a Value, name: &str) -> &'a str {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["status"].as_str())
        .unwrap_or_else(|| panic!("no step {name} in {summary}"))
}

/// The digest a layout tags `tag` with.
fn layout_digest(layout: &Path, tag: &str) -> Option<String> {
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).ok()?).ok()?;
    index["manifests"]
        .as_array()?
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .and_then(|m| m["digest"].as_str())
        .map(str::to_string)
}

/// What the catalog's template renders to, with every bundle it names generated from the
/// copy at its version (createdAt pinned): the check that release kept the two in step.
fn template_rendering(repo: &Repo) -> Vec<u8> {
    let template = repo.path().join("catalog/template.yaml");
    let text = std::fs::read_to_string(&template).unwrap();
    let images: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- image:"))
        .map(|i| i.trim().to_string())
        .collect();
    let bundles = tempfile::tempdir().unwrap();
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .args(["catalog", "template", "semver"])
        .arg(&template)
        .args(["-o", "json"]);
    for image in images {
        let version = image.rsplit_once(":v").unwrap().1.to_string();
        let dir = bundles.path().join(&version);
        let generated = Command::new(e2e::bundle_tool_binary())
            .current_dir(repo.path())
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .args(["generate", "--version", &version, "--output"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(generated.status.success());
        command
            .arg("--bundle-source")
            .arg(format!("{image}={}", dir.display()));
    }
    let rendered = command.output().unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    rendered.stdout
}

#[test]
fn the_committed_release_is_already_in_the_catalog_and_changes_nothing() {
    // The README's first command: bundle-tool.yaml as committed (0.1.0), no SOURCE_DATE_EPOCH,
    // so createdAt can only match because release keeps the released one.
    let repo = Repo::new();
    let catalog_before = {
        let mut files = BTreeMap::new();
        collect(&repo.path().join("catalog"), repo.path(), &mut files);
        files
    };
    let run = summary(&repo.release_with(&["-o", "json"], None, ""));
    assert_eq!(run["version"], "0.1.0");
    assert_eq!(run["changed"], false);
    assert_eq!(step_status(&run, "catalog-add"), "unchanged");
    let mut catalog_after = BTreeMap::new();
    collect(
        &repo.path().join("catalog"),
        repo.path(),
        &mut catalog_after,
    );
    assert!(catalog_before == catalog_after, "catalog/ changed");
    let layout = repo.path().join("target/oci");
    assert_eq!(
        layout_digest(&layout, "v0.1.0").as_deref(),
        run["bundle"]["digest"].as_str()
    );
    assert_eq!(
        layout_digest(&layout, "latest").as_deref(),
        run["catalog"]["digest"].as_str()
    );
    assert_eq!(
        run["catalog"]["channels"]["stable-v0"],
        "redis-operator.v0.3.0"
    );
    // release.olmV1Installer: the committed RBAC file is what this release derives.
    let rbac = run["olmV1Rbac"].as_str().expect("olmV1Rbac in the summary");
    assert!(
        rbac.ends_with("olm/clusterextension-rbac.yaml unchanged (redis-operator.v0.1.0)"),
        "{rbac}"
    );
}

#[test]
fn a_new_version_is_released_once_and_a_rerun_changes_nothing() {
    let repo = Repo::new();
    let catalog_json = repo.path().join("catalog/redis-operator/catalog.json");
    let old_catalog = std::fs::read(&catalog_json).unwrap();

    let first = summary(&repo.release(&["--version", "0.4.0", "-o", "json"]));
    assert_eq!(first["changed"], true);
    assert_eq!(first["name"], "redis-operator.v0.4.0");
    assert_eq!(
        first["bundle"]["image"],
        "quay.io/example/redis-operator-bundle:v0.4.0"
    );
    for channel in ["candidate-v0", "stable-v0"] {
        assert_eq!(
            first["catalog"]["channels"][channel],
            "redis-operator.v0.4.0"
        );
    }
    assert!(first["level"].as_u64().unwrap() >= 3);
    for step in first["steps"].as_array().unwrap() {
        assert_eq!(step["status"], "done", "{step}");
    }
    let checked = first["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["name"] == "check-upgrade")
        .unwrap();
    // The semver template draws an edge from every earlier release (replaces and skips).
    let detail = checked["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "safe from redis-operator.v0.1.0, redis-operator.v0.2.0, redis-operator.v0.3.0"
        ),
        "{checked}"
    );
    assert_ne!(std::fs::read(&catalog_json).unwrap(), old_catalog);
    // The OLM v1 installer's RBAC now covers 0.4.0 and the upgrades into it from every
    // earlier release, each bundle's own ClusterRole names included.
    let rbac = first["olmV1Rbac"]
        .as_str()
        .expect("olmV1Rbac in the summary");
    assert!(
        rbac.ends_with("olm/clusterextension-rbac.yaml written (redis-operator.v0.4.0, redis-operator.v0.1.0, redis-operator.v0.2.0, redis-operator.v0.3.0)"),
        "{rbac}"
    );
    let rbac_file =
        std::fs::read_to_string(repo.path().join("olm/clusterextension-rbac.yaml")).unwrap();
    for bundle in ["v0.1", "v0.2", "v0.3", "v0.4"] {
        assert!(
            rbac_file.contains(&format!("- redis-operator.{bundle}")),
            "no ClusterRole of redis-operator.{bundle} named in:\n{rbac_file}"
        );
    }
    let template = std::fs::read_to_string(repo.path().join("catalog/template.yaml")).unwrap();
    assert_eq!(
        template
            .matches("- image: quay.io/example/redis-operator-bundle:v0.4.0")
            .count(),
        2,
        "appended to candidate and stable:\n{template}"
    );

    // Both images are in the layout under the digests reported, their blobs present.
    let layout = repo.path().join("target/oci");
    for (tag, digest) in [
        ("v0.4.0", &first["bundle"]["digest"]),
        ("latest", &first["catalog"]["digest"]),
    ] {
        let digest = digest.as_str().unwrap();
        assert_eq!(layout_digest(&layout, tag).as_deref(), Some(digest));
        let blob = layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        assert!(blob.is_file(), "{} missing", blob.display());
    }

    // The catalog is exactly what the edited template renders: the two do not drift.
    assert!(
        template_rendering(&repo) == std::fs::read(&catalog_json).unwrap(),
        "catalog.json is not what catalog/template.yaml renders after the release"
    );
    let validated = Command::new(e2e::bundle_tool_binary())
        .args(["catalog", "validate"])
        .arg(repo.path().join("catalog"))
        .output()
        .unwrap();
    assert!(validated.status.success());

    // The same release again: nothing changes, byte for byte, and it says so.
    let before = repo.snapshot();
    let second = summary(&repo.release(&["--version", "0.4.0", "-o", "json"]));
    assert_eq!(second["changed"], false);
    assert_eq!(second["bundle"]["digest"], first["bundle"]["digest"]);
    assert_eq!(second["catalog"]["digest"], first["catalog"]["digest"]);
    assert_eq!(step_status(&second, "catalog-add"), "unchanged");
    assert_eq!(step_status(&second, "push-bundle"), "unchanged");
    assert!(before == repo.snapshot(), "a re-run changed files");
    let text = repo.release(&["--version", "0.4.0"]);
    assert!(text.status.success());
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("nothing changed"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // The same version with other content is refused, naming the version and the change.
    repo.edit_config(
        "displayName: Redis Operator",
        "displayName: Redis Operator II",
    );
    let (refused, stderr) = failure(&repo.release(&["--version", "0.4.0", "-o", "json"]));
    assert!(
        stderr.contains("redis-operator.v0.4.0 is already released")
            && stderr.contains("immutable"),
        "{stderr}"
    );
    assert!(stderr.contains("/spec/displayName"), "{stderr}");
    assert_eq!(step_status(&refused, "catalog-add"), "failed");
    assert_eq!(step_status(&refused, "validate"), "not-run");
    assert!(before == repo.snapshot(), "a refused release changed files");
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let repo = Repo::new();
    let before = repo.snapshot();
    let plan = summary(&repo.release(&["--version", "0.5.0", "--dry-run", "-o", "json"]));
    assert_eq!(plan["dryRun"], true);
    assert_eq!(plan["changed"], true);
    assert_eq!(step_status(&plan, "push-catalog"), "planned");
    assert_eq!(step_status(&plan, "catalog-add"), "planned");
    assert!(before == repo.snapshot(), "--dry-run wrote files");
    assert!(!repo.path().join("target/oci").exists());
}

#[test]
fn a_failing_step_leaves_the_catalog_and_the_layout_as_they_were() {
    let repo = Repo::new();
    // A layout that already holds a release, so that "as it was" is not just "absent".
    summary(&repo.release(&["--version", "0.4.0", "-o", "json"]));
    let before = repo.snapshot();

    // The audit's minimum not reached.
    let (run, stderr) =
        failure(&repo.release(&["--version", "0.5.0", "--min-level", "5", "-o", "json"]));
    assert!(stderr.contains("below the minimum level 5"), "{stderr}");
    assert_eq!(step_status(&run, "audit"), "failed");
    assert!(before == repo.snapshot());

    // The security review above the maximum: the operator reads Secrets cluster-wide (high).
    let (run, stderr) =
        failure(&repo.release(&["--version", "0.5.0", "--max-risk", "medium", "-o", "json"]));
    assert!(
        stderr.contains("security review finds risks above medium (--max-risk)")
            && stderr.contains("high rbac-secrets-read"),
        "{stderr}"
    );
    assert_eq!(step_status(&run, "audit"), "failed");
    assert_eq!(step_status(&run, "build-bundle"), "not-run");
    assert!(before == repo.snapshot());
    let (_, stderr) = failure(&repo.release(&["--version", "0.5.0", "--max-risk", "severe"]));
    assert!(
        stderr.contains("\"severe\" is not a risk level"),
        "{stderr}"
    );
    assert!(before == repo.snapshot());

    // A bundle that fails validation (a category operatorhub does not know).
    repo.edit_config("categories: [Database]", "categories: [Not A Category]");
    let (run, stderr) = failure(&repo.release(&["--version", "0.5.0", "-o", "json"]));
    assert!(stderr.contains("does not pass validation"), "{stderr}");
    assert!(stderr.contains("Not A Category"), "{stderr}");
    assert_eq!(step_status(&run, "validate"), "failed");
    assert_eq!(step_status(&run, "catalog-add"), "not-run");
    assert!(before == repo.snapshot());
    repo.edit_config("categories: [Not A Category]", "categories: [Database]");

    // A channel the template cannot generate for this version.
    let (_, stderr) = failure(&repo.release(&["--version", "0.5.0", "--channels", "alpha"]));
    assert!(
        stderr.contains("\"alpha\" is not one this template generates"),
        "{stderr}"
    );
    assert!(before == repo.snapshot());

    // Pushing to a registry that does not answer: nothing in the catalog changes.
    let port = e2e::free_port().unwrap();
    let (run, stderr) = failure(&repo.release(&[
        "--version",
        "0.5.0",
        "--push",
        "--plain-http",
        "--bundle-image",
        &format!("127.0.0.1:{port}/example/redis-operator-bundle"),
        "--catalog-image",
        &format!("127.0.0.1:{port}/example/redis-operator-catalog:latest"),
        "-o",
        "json",
    ]));
    assert!(stderr.contains("pushing 127.0.0.1:"), "{stderr}");
    assert_eq!(step_status(&run, "push-bundle"), "failed");
    assert!(before == repo.snapshot());
}

/// The CRD change of a deliberately broken 0.4.0: `replicas` becomes a string in every
/// version, which installed users' stored objects (integers) no longer fit.
#[test]
fn a_release_that_would_break_installed_users_stops_before_anything_is_published() {
    let repo = Repo::new();
    let manifests = repo.path().join("operator/config/manifests.yaml");
    let text = std::fs::read_to_string(&manifests).unwrap();
    let integer = "description: Number of Redis pods.\n                format: int32\n                minimum: 1.0\n                type: integer";
    assert_eq!(
        text.matches(integer).count(),
        2,
        "the CRD's replicas field moved"
    );
    std::fs::write(
        &manifests,
        text.replace(
            integer,
            "description: Number of Redis pods.\n                type: string",
        ),
    )
    .unwrap();
    let before = repo.snapshot();
    let (run, stderr) = failure(&repo.release(&["--version", "0.4.0", "-o", "json"]));
    assert!(
        stderr.contains("upgrading to redis-operator.v0.4.0 is not safe"),
        "{stderr}"
    );
    assert!(stderr.contains("redis-operator.v0.3.0"), "{stderr}");
    assert!(stderr.contains("type"), "{stderr}");
    assert!(stderr.contains("replicas"), "{stderr}");
    assert_eq!(step_status(&run, "check-upgrade"), "failed");
    for step in ["push-bundle", "build-catalog", "push-catalog"] {
        assert_eq!(step_status(&run, step), "not-run", "{step}");
    }
    assert!(before == repo.snapshot(), "a refused release changed files");
}

/// `bundle-tool inspect REF` against `registry`, with its credentials.
fn inspect(reference: &str, registry: &OciRegistry) -> Output {
    let RegistryAuth::Htpasswd { username, password } = registry.auth() else {
        panic!("the test registries ask for credentials");
    };
    let mut child = Command::new(e2e::bundle_tool_binary())
        .args(["inspect", reference, "--plain-http", "--username", username])
        .arg("--password-stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), password.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `bundle-tool inspect REF` as the registry serves it: the manifest digest.
fn registry_digest(reference: &str, registry: &OciRegistry) -> String {
    let output = inspect(reference, registry);
    assert!(
        output.status.success(),
        "inspect {reference}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    report["digest"].as_str().unwrap().to_string()
}

/// Every file below `dir`, with its bytes.
fn read_tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    collect(dir, dir, &mut files);
    assert!(!files.is_empty(), "{} has no file", dir.display());
    files
}

/// Whether `reference` names a manifest in `registry`: `inspect` finds it, or fails saying
/// the registry does not know it (any other failure fails the test).
fn tag_exists(reference: &str, registry: &OciRegistry) -> bool {
    let output = inspect(reference, registry);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success()
            || stderr.contains("MANIFEST_UNKNOWN")
            || stderr.contains("manifest unknown"),
        "inspect {reference} failed otherwise than with an unknown manifest: {stderr}"
    );
    output.status.success()
}

/// A release opens its small blobs' upload sessions before the images are built; a registry
/// that has lost them by the time the blobs come (404 `BLOB_UPLOAD_UNKNOWN`) gets each blob
/// the usual way, and the release is the same.
#[tokio::test(flavor = "multi_thread")]
async fn upload_sessions_opened_ahead_and_lost_are_replaced() {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await.unwrap();
    let forgetting = e2e::FaultyProxy::start_forgetting_plain_sessions(registry.port()).unwrap();
    let host = format!("127.0.0.1:{}", forgetting.port());
    let repo = Repo::new();
    let bundle_repository = format!("{host}/example/redis-operator-bundle");
    let catalog_image = format!("{host}/example/redis-operator-catalog:latest");
    let output = repo.release(&[
        "--version",
        "0.4.0",
        "--channels",
        "candidate-v0",
        "--bundle-image",
        &bundle_repository,
        "--catalog-image",
        &catalog_image,
        "--push",
        "--plain-http",
        "-o",
        "json",
    ]);
    let run = summary(&output);
    assert_eq!(run["pushed"], true);
    // Both images' small blobs (a config and a layer each) met a lost session.
    assert_eq!(
        forgetting.faults(),
        4,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let direct = format!("{}/example/redis-operator-bundle:v0.4.0", registry.host());
    let inspected = Command::new(e2e::bundle_tool_binary())
        .args(["inspect", &direct, "--plain-http"])
        .output()
        .unwrap();
    assert!(
        inspected.status.success(),
        "{}",
        String::from_utf8_lossy(&inspected.stderr)
    );
    assert!(
        String::from_utf8_lossy(&inspected.stdout)
            .contains(run["bundle"]["digest"].as_str().unwrap()),
        "the registry serves another bundle image"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pushed_releases_into_a_fresh_catalog_match_the_registry() {
    let auth = RegistryAuth::Htpasswd {
        username: "ci".into(),
        password: "release-secret".into(),
    };
    let registry = OciRegistry::start(auth.clone()).await.unwrap();
    let repo = Repo::new();
    let bundle_repository = format!("{}/example/redis-operator-bundle", registry.host());
    let catalog_image = format!("{}/example/redis-operator-catalog:latest", registry.host());
    let push_args = |version: &'static str, catalog_image: &str| -> Vec<String> {
        [
            "--version",
            version,
            "--catalog",
            "fresh-catalog",
            "--channels",
            "candidate-v0,stable-v0",
            "--bundle-image",
            &bundle_repository,
            "--catalog-image",
            catalog_image,
            "--push",
            "--plain-http",
            "--username",
            "ci",
            "--password-stdin",
            "-o",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut previous = String::new();
    for version in ["0.1.0", "0.2.0", "0.3.0"] {
        let args = push_args(version, &catalog_image);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = summary(&repo.release_with(&args, Some(SOURCE_DATE_EPOCH), "release-secret\n"));
        assert_eq!(run["changed"], true);
        assert_eq!(run["pushed"], true);
        let bundle_ref = format!("{bundle_repository}:v{version}");
        assert_eq!(run["bundle"]["image"], bundle_ref.as_str());
        assert_eq!(
            registry_digest(&bundle_ref, &registry),
            run["bundle"]["digest"].as_str().unwrap()
        );
        assert_eq!(
            registry_digest(&catalog_image, &registry),
            run["catalog"]["digest"].as_str().unwrap()
        );
        let name = format!("redis-operator.v{version}");
        for channel in ["candidate-v0", "stable-v0"] {
            assert_eq!(run["catalog"]["channels"][channel], name.as_str());
        }
        // catalog add's edit: the new bundle replaces the previous head.
        let catalog =
            bundle_tool::catalog::declcfg::load_dir(&repo.path().join("fresh-catalog")).unwrap();
        let entry = catalog.channels[0]
            .entries
            .iter()
            .find(|e| e.name == name)
            .unwrap()
            .clone();
        assert_eq!(entry.replaces, previous);
        let bundle = catalog.bundles.iter().find(|b| b.name == name).unwrap();
        assert_eq!(bundle.image, bundle_ref);
        // The catalog edit is staged beside the folder while the blobs go up, and the old
        // tree removed while the catalog's manifest does: neither is left behind.
        let leftovers: Vec<String> = std::fs::read_dir(repo.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| bundle_tool::durable::is_staging_name(name))
            .collect();
        assert!(
            leftovers.is_empty(),
            "left beside the catalog: {leftovers:?}"
        );
        // Upload sessions are opened before the images are built; each was used.
        assert_eq!(registry.open_uploads(), Vec::<String>::new(), "{version}");
        previous = name;
    }
    assert!(
        !repo.path().join("target/oci").exists(),
        "--push writes no layout"
    );

    // The released entries' skipRange is part of the release too.
    let mut args = push_args("0.3.0", &catalog_image);
    args.extend(["--skip-range".to_string(), "<0.3.0".to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, stderr) =
        failure(&repo.release_with(&args, Some(SOURCE_DATE_EPOCH), "release-secret\n"));
    assert!(
        stderr.contains("skipRange in candidate-v0: the catalog has \"\", this release \"<0.3.0\""),
        "{stderr}"
    );
    // Refused before anything was built: the sessions opened ahead are cancelled.
    assert_eq!(registry.open_uploads(), Vec::<String>::new(), "{stderr}");

    // 0.4.0 with the catalog's registry down: both images' blobs go up before any manifest,
    // so the release stops with nothing published: no bundle tag, no catalog edit, no upload
    // session left open.
    let port = e2e::free_port().unwrap();
    let down_catalog = format!("127.0.0.1:{port}/example/redis-operator-catalog:latest");
    let args = push_args("0.4.0", &down_catalog);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let catalog_before = read_tree(&repo.path().join("fresh-catalog"));
    let (run, stderr) =
        failure(&repo.release_with(&args, Some(SOURCE_DATE_EPOCH), "release-secret\n"));
    assert_eq!(step_status(&run, "push-catalog"), "failed", "{stderr}");
    assert_eq!(step_status(&run, "push-bundle"), "not-run", "{stderr}");
    assert!(stderr.contains("nothing was published"), "{stderr}");
    assert_eq!(
        read_tree(&repo.path().join("fresh-catalog")),
        catalog_before,
        "a release whose catalog registry is down edits no catalog file"
    );
    assert!(
        !tag_exists(&format!("{bundle_repository}:v0.4.0"), &registry),
        "a release whose catalog registry is down tags no bundle image"
    );
    assert_eq!(registry.open_uploads(), Vec::<String>::new());

    // 0.4.0 with a catalog registry that takes blobs but refuses the catalog's tag (403, as
    // a tag policy does): the bundle is pushed and the catalog updated, and the error gives
    // the command to re-run, which finishes once the registry takes the tag.
    let late_registry = OciRegistry::start(auth).await.unwrap();
    let refusing = e2e::FaultyProxy::start_refusing_manifests(late_registry.port()).unwrap();
    let late_catalog = format!(
        "127.0.0.1:{}/example/redis-operator-catalog:latest",
        refusing.port()
    );
    let args = push_args("0.4.0", &late_catalog);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (run, stderr) =
        failure(&repo.release_with(&args, Some(SOURCE_DATE_EPOCH), "release-secret\n"));
    assert_eq!(step_status(&run, "push-bundle"), "done", "{stderr}");
    assert_eq!(step_status(&run, "push-catalog"), "failed", "{stderr}");
    assert!(stderr.contains("the catalog was updated"), "{stderr}");
    assert!(refusing.faults() > 0, "the proxy refused no manifest");
    let rerun = stderr
        .lines()
        .find_map(|l| l.split_once("re-run (release is idempotent, it only pushes again): "))
        .map(|(_, command)| command.to_string())
        .unwrap_or_else(|| panic!("no re-run command in {stderr}"));
    let released =
        bundle_tool::catalog::declcfg::load_dir(&repo.path().join("fresh-catalog")).unwrap();
    assert!(
        released
            .bundles
            .iter()
            .any(|b| b.name == "redis-operator.v0.4.0")
    );

    refusing.heal();
    let words: Vec<&str> = rerun.split_whitespace().collect();
    assert_eq!(words[..2], ["bundle-tool", "release"]);
    let output = Command::new(e2e::bundle_tool_binary())
        .current_dir(repo.path())
        .args(&words[1..])
        .args(["-o", "json"])
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"release-secret\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let finished = summary(&output);
    assert_eq!(finished["changed"], false);
    assert_eq!(step_status(&finished, "push-catalog"), "done");
    assert_eq!(
        registry_digest(&late_catalog, &late_registry),
        finished["catalog"]["digest"].as_str().unwrap()
    );
}
