//! Crash safety of every command that writes user outputs: `generate`, `catalog add`,
//! `catalog deprecate`, `build --oci-layout`, `push` and `release`, each killed with SIGKILL
//! at `CRASH_RUNS` (100) points drawn from its own syscalls (see `crash/mod.rs`). After each
//! kill every output must be exactly its old or its new version, new ones only ahead of old
//! ones in the order the command replaces them (`release`: the layout, then the catalog),
//! an OCI layout must name no missing blob, a registry must serve every blob of every tagged
//! manifest, and a re-run must complete with the new version and leave no staging file
//! behind.

mod crash;

use std::path::{Path, PathBuf};

use crash::state::{check_layout, check_registry, file_digest, registry_tag, tree_digest};
use crash::{Case, Invocation, Outputs, Step, Version, assert_crash_safe, out_of_order};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A temporary copy of what `generate` and `release` read: bundle-tool.yaml, the operator's
/// manifests and the catalog.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("crash-pristine-")
        .tempdir()
        .unwrap();
    std::fs::copy(
        workspace().join("bundle-tool.yaml"),
        dir.path().join("bundle-tool.yaml"),
    )
    .unwrap();
    crash::state::copy_tree(
        &workspace().join("operator/config"),
        &dir.path().join("operator/config"),
    );
    crash::state::copy_tree(&workspace().join("catalog"), &dir.path().join("catalog"));
    dir
}

/// The Redis bundle at `version`, generated into `dir/name`.
fn bundle(dir: &Path, version: &str, name: &str) {
    Invocation::new(dir, &["generate", "--version", version, "--output", name]).run();
}

fn outputs(pairs: &[(&str, Option<String>)]) -> Outputs {
    pairs
        .iter()
        .map(|(n, d)| (n.to_string(), d.clone()))
        .collect()
}

fn no_check() -> Step<'static, Result<(), String>> {
    Box::new(|_, _| Ok(()))
}

fn no_prepare() -> Step<'static, ()> {
    Box::new(|_, _| {})
}

#[test]
fn a_kill_may_leave_outputs_new_only_in_their_commit_order() {
    use Version::{New, Old, Unchanged};
    let order = ["oci/index.json", "catalog/"];
    let state = |a, b| out_of_order(&[(order[0], a), (order[1], b)]);
    for legitimate in [
        (Old, Old),
        (New, Old),
        (New, New),
        (Unchanged, New),
        (Old, Unchanged),
    ] {
        assert_eq!(state(legitimate.0, legitimate.1), None, "{legitimate:?}");
    }
    let refused = state(Old, New).expect("the catalog new and the layout old is refused");
    assert!(
        refused.contains("catalog/ is new while oci/index.json"),
        "{refused}"
    );
}

#[test]
fn generate_leaves_the_old_bundle_or_the_new() {
    let pristine = repository();
    bundle(pristine.path(), "0.1.0", "bundle");
    assert_crash_safe(&Case {
        name: "generate",
        pristine: pristine.path().to_path_buf(),
        prepare: no_prepare(),
        invocation: Box::new(|dir, _| {
            Invocation::new(
                dir,
                &[
                    "generate",
                    "--version",
                    "0.4.0",
                    "--channels",
                    "alpha,beta",
                    "--default-channel",
                    "alpha",
                    "--output",
                    "bundle",
                ],
            )
        }),
        outputs: Box::new(|dir, _| {
            outputs(&[
                ("bundle/", tree_digest(&dir.join("bundle"))),
                (
                    "bundle.Dockerfile",
                    file_digest(&dir.join("bundle.Dockerfile")),
                ),
            ])
        }),
        check: no_check(),
        // The bundle folder is committed, then bundle.Dockerfile beside it
        // (bundle-tool/src/bundle/write.rs, write_bundle).
        commit_order: &["bundle/", "bundle.Dockerfile"],
    });
}

#[test]
fn catalog_add_leaves_the_old_catalog_or_the_new() {
    let pristine = repository();
    bundle(pristine.path(), "0.4.0", "b4");
    assert_crash_safe(&Case {
        name: "catalog add",
        pristine: pristine.path().to_path_buf(),
        prepare: no_prepare(),
        invocation: Box::new(|dir, _| {
            Invocation::new(
                dir,
                &[
                    "catalog",
                    "add",
                    "catalog",
                    "b4",
                    "--channels",
                    "stable-v0",
                    "--image",
                    "quay.io/example/redis-operator-bundle:v0.4.0",
                ],
            )
        }),
        outputs: Box::new(|dir, _| outputs(&[("catalog/", tree_digest(&dir.join("catalog")))])),
        check: no_check(),
        commit_order: &["catalog/"],
    });
}

#[test]
fn catalog_deprecate_leaves_the_old_catalog_or_the_new() {
    let pristine = repository();
    assert_crash_safe(&Case {
        name: "catalog deprecate",
        pristine: pristine.path().to_path_buf(),
        prepare: no_prepare(),
        invocation: Box::new(|dir, _| {
            Invocation::new(
                dir,
                &[
                    "catalog",
                    "deprecate",
                    "catalog",
                    "--package",
                    "redis-operator",
                    "--bundle",
                    "redis-operator.v0.1.0",
                    "--message",
                    "0.1.0 is end of life; use 0.3.0",
                ],
            )
        }),
        outputs: Box::new(|dir, _| outputs(&[("catalog/", tree_digest(&dir.join("catalog")))])),
        check: no_check(),
        commit_order: &["catalog/"],
    });
}

#[test]
fn build_into_a_layout_leaves_the_old_index_or_the_new_and_every_blob() {
    let pristine = tempfile::tempdir().unwrap();
    let repo = repository();
    bundle(
        repo.path(),
        "0.1.0",
        &pristine.path().join("b1").display().to_string(),
    );
    bundle(
        repo.path(),
        "0.4.0",
        &pristine.path().join("b4").display().to_string(),
    );
    Invocation::new(
        pristine.path(),
        &["build", "b1", "--oci-layout", "oci", "--tag", "crash"],
    )
    .run();
    assert_crash_safe(&Case {
        name: "build --oci-layout",
        pristine: pristine.path().to_path_buf(),
        prepare: no_prepare(),
        invocation: Box::new(|dir, _| {
            Invocation::new(
                dir,
                &["build", "b4", "--oci-layout", "oci", "--tag", "crash"],
            )
        }),
        outputs: Box::new(|dir, _| {
            outputs(&[("oci/index.json", file_digest(&dir.join("oci/index.json")))])
        }),
        check: Box::new(|dir, _| check_layout(&dir.join("oci"))),
        commit_order: &["oci/index.json"],
    });
}

#[test]
fn push_leaves_the_old_tag_or_the_new_and_every_blob() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = runtime
        .block_on(e2e::OciRegistry::start(e2e::RegistryAuth::Anonymous))
        .unwrap();
    let host = registry.host();
    let pristine = tempfile::tempdir().unwrap();
    let repo = repository();
    bundle(
        repo.path(),
        "0.1.0",
        &pristine.path().join("b1").display().to_string(),
    );
    bundle(
        repo.path(),
        "0.4.0",
        &pristine.path().join("b4").display().to_string(),
    );
    let reference = |run: usize| format!("{host}/crash/run-{run}:v1");
    let push = |dir: &Path, source: &str, run: usize| {
        Invocation::new(dir, &["push", source, &reference(run), "--plain-http"])
    };
    // The old version, as every run's repository starts.
    push(pristine.path(), "b1", usize::MAX).run();
    assert_crash_safe(&Case {
        name: "push",
        pristine: pristine.path().to_path_buf(),
        prepare: Box::new(|dir, run| {
            push(dir, "b1", run).run();
        }),
        invocation: Box::new(|dir, run| push(dir, "b4", run)),
        outputs: Box::new(|_, run| {
            outputs(&[(
                "tag v1",
                registry_tag(&host, &format!("crash/run-{run}"), "v1"),
            )])
        }),
        check: Box::new(|_, run| check_registry(&host, &format!("crash/run-{run}"))),
        commit_order: &["tag v1"],
    });
}

#[test]
fn release_leaves_the_old_catalog_and_layout_or_the_new() {
    let pristine = repository();
    // The committed release (0.1.0, already in the catalog) fills the layout: the old state.
    Invocation::new(
        pristine.path(),
        &[
            "release",
            "--config",
            "bundle-tool.yaml",
            "--oci-layout",
            "oci",
        ],
    )
    .run();
    assert_crash_safe(&Case {
        name: "release",
        pristine: pristine.path().to_path_buf(),
        prepare: no_prepare(),
        invocation: Box::new(|dir, _| {
            Invocation::new(
                dir,
                &[
                    "release",
                    "--config",
                    "bundle-tool.yaml",
                    "--version",
                    "0.4.0",
                    "--oci-layout",
                    "oci",
                ],
            )
        }),
        outputs: Box::new(|dir, _| {
            outputs(&[
                ("catalog/", tree_digest(&dir.join("catalog"))),
                ("oci/index.json", file_digest(&dir.join("oci/index.json"))),
            ])
        }),
        check: Box::new(|dir, _| check_layout(&dir.join("oci"))),
        // Both images go into the layout's index first, then the catalog folder is swapped
        // in (bundle-tool/src/release/steps.rs, publish_to_layout): a kill between the two
        // leaves the layout new and the catalog old, which the re-run completes; a catalog
        // naming images the layout does not have is never a state a kill may leave.
        commit_order: &["oci/index.json", "catalog/"],
    });
}
