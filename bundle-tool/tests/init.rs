//! `bundle-tool init` as a user runs it: on the repository's own operator manifests (the
//! file `bundle-tool.yaml` packages, which `redis-operator manifests` prints and a test keeps
//! in step), the config it writes generates and validates with no edit; it never replaces a
//! config without `--force`; and the config it writes still gets "did you mean" for a
//! misspelt key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bundle_tool(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run bundle-tool")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn assert_ok(output: &Output, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{what}: stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

#[test]
fn init_on_the_redis_operator_manifests_then_generate_and_validate_pass_unedited() {
    let work = tempfile::tempdir().unwrap();
    let manifests = repository().join("operator/config/manifests.yaml");
    let init = bundle_tool(
        &[
            "init",
            "--manifests",
            manifests.to_str().unwrap(),
            "--registry",
            "127.0.0.1:5000/me",
        ],
        work.path(),
    );
    assert_ok(&init, "init");
    let stdout = text(&init.stdout);
    assert!(stdout.starts_with("wrote bundle-tool.yaml\n"), "{stdout}");
    for fact in [
        "package   redis-operator (the Deployment's app.kubernetes.io/name label)",
        "version   0.1.0 (the tag of the operator image quay.io/example/redis-operator:0.1.0)",
        "owned     RedisCluster (redisclusters.cache.example.com)",
        "modes     AllNamespaces",
        "docker.io/library/redis:7.2",
    ] {
        assert!(stdout.contains(fact), "{fact:?} not in:\n{stdout}");
    }
    let stderr = text(&init.stderr);
    for key in ["csv.provider:", "csv.maintainers:", "csv.description:"] {
        assert!(
            stderr.contains(key),
            "{key} not listed for the author:\n{stderr}"
        );
    }
    let config = std::fs::read_to_string(work.path().join("bundle-tool.yaml")).unwrap();
    assert!(
        config.contains("# AUTHOR: who ships the operator"),
        "{config}"
    );
    assert!(
        config.contains("bundleImage: 127.0.0.1:5000/me/redis-operator-bundle"),
        "{config}"
    );

    let generate = bundle_tool(&["generate"], work.path());
    assert_ok(&generate, "generate");
    assert!(
        text(&generate.stdout).starts_with("wrote bundle (5 files) and "),
        "{}",
        text(&generate.stdout)
    );
    let validate = bundle_tool(&["validate", "bundle"], work.path());
    assert_ok(&validate, "validate");
    let csv = std::fs::read_to_string(
        work.path()
            .join("bundle/manifests/redis-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("name: redis-operator.v0.1.0"), "{csv}");
    assert!(csv.contains("type: AllNamespaces"), "{csv}");
}

#[test]
fn helm_style_standard_input_is_saved_beside_the_config() {
    let work = tempfile::tempdir().unwrap();
    let manifests =
        std::fs::read_to_string(repository().join("operator/config/manifests.yaml")).unwrap();
    let sample = std::fs::read_to_string(
        repository().join("operator/config/samples/cache_v1_rediscluster.yaml"),
    )
    .unwrap();
    // `helm template` separates templates with `# Source:` comments and empty documents.
    let stream =
        format!("---\n# Source: chart/templates/all.yaml\n{manifests}\n---\n---\n{sample}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bundle-tool"))
        .args([
            "init",
            "--manifests",
            "-",
            "--config",
            "olm/bundle-tool.yaml",
        ])
        .current_dir(work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stream.as_bytes())
        .unwrap();
    let init = child.wait_with_output().unwrap();
    assert_ok(&init, "init -");
    assert!(
        text(&init.stdout)
            .starts_with("wrote olm/bundle-tool.yaml, olm/manifests.yaml, olm/samples.yaml\n"),
        "{}",
        text(&init.stdout)
    );
    let generate = bundle_tool(
        &["generate", "--config", "olm/bundle-tool.yaml"],
        work.path(),
    );
    assert_ok(&generate, "generate");
    // The sample went to alm-examples, not into the manifests as a warning.
    assert!(
        !text(&generate.stderr).contains("custom resource"),
        "{}",
        text(&generate.stderr)
    );
    let csv = std::fs::read_to_string(
        work.path()
            .join("olm/bundle/manifests/redis-operator.clusterserviceversion.yaml"),
    )
    .unwrap();
    assert!(csv.contains("\"kind\": \"RedisCluster\""), "{csv}");
    assert_ok(
        &bundle_tool(&["validate", "olm/bundle"], work.path()),
        "validate",
    );
}

#[test]
fn init_refuses_to_replace_a_config_without_force() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("bundle-tool.yaml");
    std::fs::write(&config, "package: mine\n").unwrap();
    let manifests = repository().join("operator/config/manifests.yaml");
    let args = ["init", "--manifests", manifests.to_str().unwrap()];
    let refused = bundle_tool(&args, work.path());
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        "error: bundle-tool.yaml: already exists; give --force to replace it\n"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "package: mine\n");
    let mut forced = args.to_vec();
    forced.push("--force");
    assert_ok(&bundle_tool(&forced, work.path()), "init --force");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("package: redis-operator")
    );
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["bundle-tool.yaml"]);
}

#[test]
fn a_misspelt_key_in_an_init_config_names_the_nearest_key() {
    let work = tempfile::tempdir().unwrap();
    let manifests = repository().join("operator/config/manifests.yaml");
    assert_ok(
        &bundle_tool(
            &["init", "--manifests", manifests.to_str().unwrap()],
            work.path(),
        ),
        "init",
    );
    let path = work.path().join("bundle-tool.yaml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, config.replace("defaultChannel:", "defaultChanel:")).unwrap();
    let generate = bundle_tool(&["generate"], work.path());
    assert_eq!(generate.status.code(), Some(1));
    let stderr = text(&generate.stderr);
    assert!(stderr.contains("unknown field `defaultChanel`"), "{stderr}");
    assert!(
        stderr.contains("(did you mean `defaultChannel`?)"),
        "{stderr}"
    );
}

#[test]
fn a_bad_input_is_an_error_naming_the_file_and_line() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("bad.yaml"), "apiVersion: v1\nkind: [\n").unwrap();
    let output = bundle_tool(&["init", "--manifests", "bad.yaml"], work.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).starts_with("error: bad.yaml:"),
        "{}",
        text(&output.stderr)
    );
    assert!(!work.path().join("bundle-tool.yaml").exists());
    let none = bundle_tool(&["init"], work.path());
    assert_eq!(none.status.code(), Some(2), "no input is a usage error");
}
