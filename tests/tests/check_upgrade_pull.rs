//! `bundle-tool catalog check-upgrades --pull` against a real registry: the Redis catalog with
//! v0.3.0 named by image only (its `olm.bundle.object`s removed), that image pushed by
//! `bundle-tool push` to a local registry. The edges into v0.3.0 are checked from the pulled
//! bundle: clean as generated, refused once its CRD turns cluster-scoped and is pushed again
//! under the same tag, and listed as not checked, with the reason, when the image is missing
//! or the registry is asked over HTTPS.

use std::path::Path;
use std::process::{Command, Output};

use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

const BUNDLE: &str = "redis-operator.v0.3.0";

fn run(args: &[&str]) -> Output {
    Command::new(e2e::bundle_tool_binary())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .args(args)
        .output()
        .expect("run bundle-tool")
}

fn succeeded(output: Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The repository's Redis catalog with v0.3.0's objects removed and its image set to
/// `image`, written under `dir`.
fn catalog_naming_v030_by(image: &str, dir: &Path) -> String {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(workspace.join("catalog/redis-operator/catalog.json"))
        .expect("the repository's catalog");
    let mut out = String::new();
    let mut found = false;
    for doc in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let mut value = doc.expect("a catalog document");
        if value["schema"] == "olm.bundle" && value["name"] == BUNDLE {
            found = true;
            value["image"] = Value::from(image);
            value["properties"]
                .as_array_mut()
                .expect("properties")
                .retain(|p| p["type"] != "olm.bundle.object");
        }
        out.push_str(&value.to_string());
        out.push('\n');
    }
    assert!(found, "{BUNDLE} in the repository's catalog");
    std::fs::create_dir_all(dir.join("redis-operator")).expect("mkdir");
    std::fs::write(dir.join("redis-operator/catalog.json"), out).expect("write the catalog");
    dir.to_str().expect("utf-8").to_string()
}

fn check_upgrades(catalog: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["catalog", "check-upgrades", catalog, "--pull"];
    args.extend_from_slice(extra);
    let output = run(&args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn edges_into_a_bundle_named_by_image_are_checked_from_the_pulled_image() -> anyhow::Result<()>
{
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let scratch = tempfile::tempdir()?;
    let image = format!("{}/e2e/redis-operator-bundle:v0.3.0", registry.host());
    let catalog = catalog_naming_v030_by(&image, &scratch.path().join("catalog"));

    // Nothing pushed yet: the edges are not checked, the reason is the registry's.
    let (code, stdout, stderr) = check_upgrades(&catalog, &["--plain-http"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("1 upgrade edges checked, 0 unsafe, 2 not checked\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "redis-operator: redis-operator.v0.2.0 -> {BUNDLE}: not checked ("
        )) && stderr.contains(&image),
        "{stderr}"
    );
    assert!(stderr.contains("manifest unknown"), "{stderr}");
    let missing = stderr.clone();

    // v0.3.0 as `generate` makes it, pushed: all three edges checked and clean.
    let bundle = scratch.path().join("v0.3.0");
    succeeded(
        run(&[
            "generate",
            "--version",
            "0.3.0",
            "--output",
            bundle.to_str().expect("utf-8"),
        ]),
        "generate",
    );
    let push = |what: &str| {
        succeeded(
            run(&[
                "push",
                bundle.to_str().expect("utf-8"),
                &image,
                "--plain-http",
            ]),
            what,
        )
    };
    push("push v0.3.0");
    let (code, stdout, stderr) = check_upgrades(&catalog, &["--plain-http"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("3 upgrade edges checked, 0 unsafe\n"),
        "{stdout}{stderr}"
    );

    // The same tag pushed again with the CRD made cluster-scoped: both edges into it refused.
    let crd = bundle.join("manifests/cache.example.com_redisclusters.yaml");
    let text = std::fs::read_to_string(&crd)?;
    anyhow::ensure!(
        text.contains("scope: Namespaced"),
        "the CRD's scope: {text}"
    );
    std::fs::write(&crd, text.replace("scope: Namespaced", "scope: Cluster"))?;
    push("push the cluster-scoped v0.3.0");
    let (code, stdout, stderr) = check_upgrades(&catalog, &["--plain-http"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("3 upgrade edges checked, 2 unsafe\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[scope]: scope changed : \"Namespaced\" -> \"Cluster\""),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("redis-operator.v0.1.0 -> {BUNDLE}: unsafe"))
            && stdout.contains(&format!("redis-operator.v0.2.0 -> {BUNDLE}: unsafe")),
        "{stdout}"
    );

    // The registry speaks plain HTTP: asked over HTTPS, the pull fails and says why (the
    // TLS handshake's error under reqwest's "error sending request").
    let (code, stdout, stderr) = check_upgrades(&catalog, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.ends_with("2 not checked\n"), "{stdout}");
    assert!(
        stderr.contains(&format!("-> {BUNDLE}: not checked ("))
            && stderr.contains("https://")
            && stderr.contains("client error (Connect): received corrupt message"),
        "{stderr}"
    );
    println!("missing image:\n{missing}over HTTPS:\n{stderr}");
    Ok(())
}
