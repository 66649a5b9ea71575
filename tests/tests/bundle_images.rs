//! `bundle-tool build / push / pull / inspect` against the real registries (Debian's
//! docker-registry), checked with skopeo and opm.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use e2e::assets::Assets;
use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

fn run(command: &mut Command, stdin: Option<&str>) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(input) = stdin {
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn ok(output: std::process::Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn building_twice_in_different_places_gives_the_same_digest() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    e2e::copy_dir(&e2e::corpus::redis_bundle(), &b.path().join("copy")).unwrap();
    let first = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["build"])
            .arg(e2e::corpus::redis_bundle())
            .arg("--oci-layout")
            .arg(a.path().join("oci")),
        None,
    ));
    let second = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["build"])
            .arg(b.path().join("copy"))
            .arg("--oci-layout")
            .arg(b.path().join("oci")),
        None,
    ));
    let digest = |s: &str| {
        s.trim()
            .rsplit_once('@')
            .map(|(_, d)| d.to_string())
            .unwrap()
    };
    assert_eq!(digest(&first), digest(&second));
    // skopeo reads the layout and sees the bundle labels.
    let layout = format!("oci:{}:v0.1.0", a.path().join("oci").display());
    let inspected: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args(["inspect", &layout]),
        None,
    )))
    .unwrap();
    assert_eq!(inspected["Digest"], digest(&first));
    assert_eq!(
        inspected["Labels"]["operators.operatorframework.io.bundle.package.v1"],
        "redis-operator"
    );
    assert_eq!(
        inspected["Labels"]["operators.operatorframework.io.bundle.mediatype.v1"],
        "registry+v1"
    );
}

fn without_image(mut rendered: Value, image: &str) -> Value {
    rendered["image"] = Value::String(String::new());
    if let Some(related) = rendered["relatedImages"].as_array_mut() {
        related.retain(|r| r["image"] != image);
    }
    rendered
}

#[tokio::test]
async fn push_to_an_anonymous_registry_then_opm_and_pull_read_it() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/redis-operator-bundle:v0.1.0", registry.host());
    let pushed = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([&reference, "--plain-http"]),
        None,
    ));
    let digest = pushed
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .expect("REF@digest");
    assert!(pushed.starts_with(&reference), "{pushed}");

    let inspected: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ]),
        None,
    )))?;
    assert_eq!(inspected["Digest"], digest);
    assert_eq!(
        inspected["Labels"]["operators.operatorframework.io.bundle.channels.v1"],
        "alpha"
    );

    // opm reads the image the way OLM does: its render equals the folder's, image aside.
    let opm = Assets::locate()?.opm()?;
    let from_image: Value = serde_json::from_str(&ok(run(
        Command::new(&opm).args(["render", "--use-http", &reference, "-o", "json"]),
        None,
    )))?;
    let from_dir: Value = serde_json::from_str(&ok(run(
        Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(e2e::corpus::redis_bundle()),
        None,
    )))?;
    assert_eq!(from_image["image"], reference.as_str());
    // Our render and validate take the image reference too, and render it as opm does.
    let ours: Value = serde_json::from_str(&ok(run(
        Command::new(e2e::bundle_tool_binary()).args([
            "catalog",
            "render",
            "--plain-http",
            &reference,
            "-o",
            "json",
        ]),
        None,
    )))?;
    assert_eq!(ours, from_image);
    ok(run(
        Command::new(e2e::bundle_tool_binary()).args(["validate", "--plain-http", &reference]),
        None,
    ));
    assert_eq!(without_image(from_image, &reference), from_dir);

    // Our pull gives back the same files, byte for byte.
    let out = tempfile::tempdir()?;
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["pull", &reference])
            .arg(out.path())
            .arg("--plain-http"),
        None,
    ));
    for folder in ["manifests", "metadata"] {
        for entry in
            std::fs::read_dir(e2e::corpus::redis_bundle().join(folder))?.filter_map(Result::ok)
        {
            let pulled = std::fs::read(out.path().join(folder).join(entry.file_name()))?;
            assert_eq!(
                pulled,
                std::fs::read(entry.path())?,
                "{folder}/{:?} differs",
                entry.file_name()
            );
        }
    }
    // Registry to registry: the copy has the same digest.
    let copy = format!("{}/example/copied:v0.1.0", registry.host());
    let copied = ok(run(
        Command::new(e2e::bundle_tool_binary()).args(["push", &reference, &copy, "--plain-http"]),
        None,
    ));
    assert_eq!(
        copied.trim().rsplit_once('@').map(|(_, d)| d),
        Some(digest.as_str())
    );
    // A second push of the same image sends no blob again and gives the same digest.
    let again = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([&reference, "--plain-http"]),
        None,
    ));
    assert_eq!(again.trim(), pushed.trim());
    Ok(())
}

#[tokio::test]
async fn push_with_basic_auth_reads_the_password_from_stdin_and_never_prints_it()
-> anyhow::Result<()> {
    let secret = "pa55-e2e-never-shown";
    let registry = OciRegistry::start(RegistryAuth::Htpasswd {
        username: "releaser".into(),
        password: secret.into(),
    })
    .await?;
    let reference = format!("{}/example/redis-operator-bundle:v0.1.0", registry.host());

    let wrong = run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([
                &reference,
                "--plain-http",
                "--username",
                "releaser",
                "--password-stdin",
            ]),
        Some("not-the-password\n"),
    );
    let wrong_text = String::from_utf8_lossy(&wrong.stderr).into_owned()
        + &String::from_utf8_lossy(&wrong.stdout);
    assert_eq!(
        wrong.status.code(),
        Some(1),
        "a wrong password must fail with exit 1: {wrong_text}"
    );
    assert!(
        wrong_text.to_lowercase().contains("unauthorized") || wrong_text.contains("401"),
        "unclear error: {wrong_text}"
    );
    assert!(!wrong_text.contains("not-the-password"));

    let pushed = run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([
                &reference,
                "--plain-http",
                "--username",
                "releaser",
                "--password-stdin",
            ]),
        Some(&format!("{secret}\n")),
    );
    let text = String::from_utf8_lossy(&pushed.stdout).into_owned()
        + &String::from_utf8_lossy(&pushed.stderr);
    assert!(pushed.status.success(), "{text}");
    assert!(
        !text.contains(secret),
        "the password appeared in the output"
    );

    let inspected = run(
        Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            "--creds",
            &format!("releaser:{secret}"),
            &format!("docker://{reference}"),
        ]),
        None,
    );
    let inspected: Value = serde_json::from_str(&ok(inspected))?;
    assert_eq!(
        inspected["Digest"].as_str(),
        text.trim().rsplit_once('@').map(|(_, d)| d)
    );
    Ok(())
}

#[tokio::test]
async fn push_survives_503s_and_cut_connections() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let port: u16 = registry
        .host()
        .rsplit_once(':')
        .map(|(_, p)| p.parse().unwrap())
        .unwrap();
    // Every 4th request fails: more often than the 10 % the issue asks for.
    let proxy = e2e::FaultyProxy::start(port, 4)?;
    let through_proxy = format!("127.0.0.1:{}/example/faulty:v0.1.0", proxy.port());
    let pushed = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([&through_proxy, "--plain-http"]),
        None,
    ));
    assert!(
        proxy.faults() >= 1,
        "no fault was injected ({} requests)",
        proxy.requests()
    );
    // What the registry holds (read directly, not through the proxy) is what we built.
    let direct = format!("{}/example/faulty:v0.1.0", registry.host());
    let inspected: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args([
            "inspect",
            "--tls-verify=false",
            &format!("docker://{direct}"),
        ]),
        None,
    )))?;
    assert_eq!(
        Some(inspected["Digest"].as_str().unwrap()),
        pushed.trim().rsplit_once('@').map(|(_, d)| d)
    );
    eprintln!(
        "{} requests, {} failed on purpose",
        proxy.requests(),
        proxy.faults()
    );
    Ok(())
}

#[tokio::test]
async fn a_catalog_image_pushed_from_a_layout_is_rendered_by_opm() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let catalog =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/catalogs/clusterpulse");
    let layout = tempfile::tempdir()?;
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["build", "--catalog"])
            .arg(&catalog)
            .args(["--tag", "clusterpulse", "--oci-layout"])
            .arg(layout.path()),
        None,
    ));
    let reference = format!("{}/example/clusterpulse-catalog:latest", registry.host());
    let source = format!("{}:clusterpulse", layout.path().display());
    ok(run(
        Command::new(e2e::bundle_tool_binary()).args(["push", &source, &reference, "--plain-http"]),
        None,
    ));

    let opm = Assets::locate()?.opm()?;
    let stream = |bytes: &[u8]| -> Vec<Value> {
        serde_json::Deserializer::from_slice(bytes)
            .into_iter::<Value>()
            .map(|v| v.unwrap())
            .collect()
    };
    let from_image = run(
        Command::new(&opm).args(["render", "--use-http", &reference, "-o", "json"]),
        None,
    );
    let from_dir = run(
        Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(&catalog),
        None,
    );
    assert!(
        from_image.status.success(),
        "{}",
        String::from_utf8_lossy(&from_image.stderr)
    );
    assert_eq!(stream(&from_image.stdout), stream(&from_dir.stdout));
    let ours = run(
        Command::new(e2e::bundle_tool_binary()).args([
            "catalog",
            "render",
            "--plain-http",
            &reference,
            "-o",
            "json",
        ]),
        None,
    );
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_eq!(stream(&ours.stdout), stream(&from_image.stdout));
    Ok(())
}

#[test]
fn the_operator_binary_becomes_a_scratch_image_that_runs_as_non_root() {
    let binary = e2e::bundle_tool_binary()
        .parent()
        .unwrap()
        .join("redis-operator");
    assert!(
        binary.is_file(),
        "{} is missing: run `cargo build -p redis-operator`",
        binary.display()
    );
    let layout = tempfile::tempdir().unwrap();
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["build", "--binary"])
            .arg(&binary)
            .args(["--tag", "v0.1.0", "--oci-layout"])
            .arg(layout.path()),
        None,
    ));
    let image = format!("oci:{}:v0.1.0", layout.path().display());
    let config: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args(["inspect", "--config", &image]),
        None,
    )))
    .unwrap();
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(config["config"]["Entrypoint"][0], "/redis-operator");
    // umoci unpacks it to exactly the binary.
    let unpacked = tempfile::tempdir().unwrap();
    let bundle = unpacked.path().join("b");
    ok(run(
        Command::new("umoci")
            .args([
                "unpack",
                "--rootless",
                "--image",
                &format!("{}:v0.1.0", layout.path().display()),
            ])
            .arg(&bundle),
        None,
    ));
    assert_eq!(
        std::fs::read(bundle.join("rootfs/redis-operator")).unwrap(),
        std::fs::read(&binary).unwrap()
    );
}

/// An image built the way `docker build -f bundle.Dockerfile` builds one, a layer per step,
/// with whiteouts: umoci inserts a stale `manifests/` (a ConfigMap that must not be read),
/// the real `manifests/` over it as an opaque folder, `metadata/`, a stray manifest, and a
/// whiteout of that stray manifest.
fn layered_bundle_image(work: &Path) -> anyhow::Result<std::path::PathBuf> {
    let bundle = e2e::corpus::redis_bundle();
    let stale = work.join("stale");
    std::fs::create_dir_all(&stale)?;
    let stray = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: must-not-be-read\n";
    std::fs::write(stale.join("stale.yaml"), stray)?;
    std::fs::write(work.join("stray.yaml"), stray)?;
    let layout = work.join("oci");
    let image = format!("{}:bundle", layout.display());
    ok(run(
        Command::new("umoci")
            .args(["init", "--layout"])
            .arg(&layout),
        None,
    ));
    ok(run(
        Command::new("umoci").args(["new", "--image", &image]),
        None,
    ));
    let insert = |args: &[&str]| {
        ok(run(
            Command::new("umoci")
                .args(["insert", "--rootless", "--image", &image])
                .args(args),
            None,
        ))
    };
    insert(&[stale.to_str().unwrap(), "/manifests"]);
    insert(&[
        "--opaque",
        bundle.join("manifests").to_str().unwrap(),
        "/manifests",
    ]);
    insert(&[bundle.join("metadata").to_str().unwrap(), "/metadata"]);
    insert(&[
        work.join("stray.yaml").to_str().unwrap(),
        "/manifests/stray.yaml",
    ]);
    insert(&["--whiteout", "/manifests/stray.yaml"]);
    let annotations = std::fs::read_to_string(bundle.join("metadata/annotations.yaml"))?;
    let mut config = vec!["config".to_string(), "--image".into(), image.clone()];
    for line in annotations.lines().filter(|l| l.starts_with("  ")) {
        let (key, value) = line.trim().split_once(": ").expect("key: value");
        config.push("--config.label".into());
        config.push(format!("{key}={value}"));
    }
    ok(run(Command::new("umoci").args(&config), None));
    Ok(layout)
}

#[tokio::test]
async fn a_bundle_image_of_several_layers_with_whiteouts_reads_as_opm_reads_it()
-> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let work = tempfile::tempdir()?;
    let layout = layered_bundle_image(work.path())?;
    let reference = format!("{}/example/layered-bundle:v0.1.0", registry.host());
    ok(run(
        Command::new("skopeo")
            .args(["--insecure-policy", "copy", "--dest-tls-verify=false", "-q"])
            .arg(format!("oci:{}:bundle", layout.display()))
            .arg(format!("docker://{reference}")),
        None,
    ));
    let raw: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ]),
        None,
    )))?;
    assert_eq!(raw["layers"].as_array().map(Vec::len), Some(5), "{raw}");

    let opm = Assets::locate()?.opm()?;
    let theirs: Value = serde_json::from_str(&ok(run(
        Command::new(&opm).args(["render", "--use-http", &reference, "-o", "json"]),
        None,
    )))?;
    let ours: Value = serde_json::from_str(&ok(run(
        Command::new(e2e::bundle_tool_binary()).args([
            "catalog",
            "render",
            "--plain-http",
            &reference,
            "-o",
            "json",
        ]),
        None,
    )))?;
    assert_eq!(ours, theirs);
    let from_dir: Value = serde_json::from_str(&ok(run(
        Command::new(&opm)
            .args(["render", "-o", "json"])
            .arg(e2e::corpus::redis_bundle()),
        None,
    )))?;
    // Neither the stale nor the stray ConfigMap is read.
    assert_eq!(without_image(theirs, &reference), from_dir);
    ok(run(
        Command::new(e2e::bundle_tool_binary()).args(["validate", "--plain-http", &reference]),
        None,
    ));

    // Pulled, it is the bundle folder, file for file.
    let out = tempfile::tempdir()?;
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["pull", &reference])
            .arg(out.path())
            .arg("--plain-http"),
        None,
    ));
    let listing = |root: &Path| -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        for folder in ["manifests", "metadata"] {
            let mut names: Vec<_> = std::fs::read_dir(root.join(folder))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            for name in names {
                let path = root.join(folder).join(&name);
                files.push((
                    format!("{folder}/{}", name.to_string_lossy()),
                    std::fs::read(path).unwrap(),
                ));
            }
        }
        files
    };
    assert_eq!(listing(out.path()), listing(&e2e::corpus::redis_bundle()));
    Ok(())
}

#[tokio::test]
async fn docker_v2s2_manifests_on_request() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/redis-operator-bundle:docker", registry.host());
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["push"])
            .arg(e2e::corpus::redis_bundle())
            .args([&reference, "--plain-http", "--format", "docker"]),
        None,
    ));
    let raw: Value = serde_json::from_str(&ok(run(
        Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            &format!("docker://{reference}"),
        ]),
        None,
    )))?;
    assert_eq!(
        raw["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    assert_eq!(
        raw["layers"][0]["mediaType"],
        "application/vnd.docker.image.rootfs.diff.tar.gzip"
    );
    let opm = Assets::locate()?.opm()?;
    let rendered: Value = serde_json::from_str(&ok(run(
        Command::new(&opm).args(["render", "--use-http", &reference, "-o", "json"]),
        None,
    )))?;
    assert_eq!(rendered["name"], "redis-operator.v0.1.0");
    Ok(())
}

#[tokio::test]
async fn push_all_publishes_every_bundle_of_a_folder() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let folder = tempfile::tempdir()?;
    for (package, version) in [
        ("redis-operator", "0.1.0"),
        ("redis-operator", "0.2.0"),
        ("other", "1.0.0"),
    ] {
        e2e::copy_dir(
            &e2e::corpus::redis_bundle(),
            &folder.path().join(package).join(version),
        )?;
    }
    let out = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .arg("push-all")
            .arg(folder.path())
            .args([&format!("{}/bundles", registry.host()), "--plain-http"]),
        None,
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for reference in [
        "bundles/other:1.0.0",
        "bundles/redis-operator:0.1.0",
        "bundles/redis-operator:0.2.0",
    ] {
        let line = lines
            .iter()
            .find(|l| l.contains(reference))
            .unwrap_or_else(|| panic!("{reference} not pushed: {out}"));
        let image = format!("docker://{}", line.split('@').next().unwrap());
        let inspected: Value = serde_json::from_str(&ok(run(
            Command::new("skopeo").args(["inspect", "--tls-verify=false", &image]),
            None,
        )))?;
        assert_eq!(
            inspected["Digest"].as_str(),
            line.rsplit_once('@').map(|(_, d)| d)
        );
    }
    Ok(())
}

/// The registry's port, for a proxy in front of it.
#[tokio::test]
async fn a_plain_http_push_takes_at_most_six_http_exchanges() -> anyhow::Result<()> {
    // Counted by a proxy that injects no faults: one `/v2/` ping, per blob (config and layer)
    // a POST that asks to mount it from the repository itself (201 when it is there, else an
    // upload session) and the PUT, then the manifest's PUT, whose answer names the digest the
    // registry stored.
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let proxy = e2e::FaultyProxy::start(registry.port(), 0)?;
    let push = |tag: &str| {
        ok(run(
            Command::new(e2e::bundle_tool_binary())
                .arg("push")
                .arg(e2e::corpus::redis_bundle())
                .arg(format!("127.0.0.1:{}/example/counted:{tag}", proxy.port()))
                .arg("--plain-http"),
            None,
        ))
    };
    let first = push("v0.1.0");
    let fresh = proxy.requests();
    assert!(fresh <= 6, "a fresh push took {fresh} HTTP exchanges");
    // Again under another tag: both blobs are there, so only ping, 2 POSTs answered 201 and
    // the manifest's PUT.
    let second = push("again");
    let again = proxy.requests() - fresh;
    assert!(again <= 4, "a push of present blobs took {again} exchanges");
    assert_eq!(
        first.trim().rsplit_once('@').map(|(_, d)| d),
        second.trim().rsplit_once('@').map(|(_, d)| d)
    );
    eprintln!("fresh push: {fresh} exchanges; blobs already there: {again}");
    Ok(())
}

#[tokio::test]
async fn a_registry_that_refuses_mount_requests_gets_a_head_and_an_upload() -> anyhow::Result<()> {
    // A push asks for each blob with a mount from its own repository (one exchange instead of
    // HEAD + POST); a registry that answers that with a 4xx must still get the image.
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let proxy = e2e::FaultyProxy::start_refusing_mounts(registry.port())?;
    let reference = format!("127.0.0.1:{}/example/no-mounts:v0.1.0", proxy.port());
    let pushed = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .arg("push")
            .arg(e2e::corpus::redis_bundle())
            .arg(&reference)
            .arg("--plain-http"),
        None,
    ));
    assert!(
        proxy.faults() >= 2,
        "the proxy refused {} mounts",
        proxy.faults()
    );
    let digest = pushed
        .trim()
        .rsplit_once('@')
        .map(|(_, d)| d.to_string())
        .unwrap_or_else(|| panic!("no digest in {pushed}"));
    // Read back from the registry itself, past the proxy.
    let direct = format!("{}/example/no-mounts:v0.1.0", registry.host());
    let inspected = ok(run(
        Command::new(e2e::bundle_tool_binary()).args(["inspect", &direct, "--plain-http"]),
        None,
    ));
    let report: serde_json::Value = serde_json::from_str(&inspected)?;
    assert_eq!(
        report["digest"].as_str(),
        Some(digest.as_str()),
        "{inspected}"
    );
    Ok(())
}

#[tokio::test]
async fn push_all_pings_the_registry_once_for_all_bundles() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let proxy = e2e::FaultyProxy::start(registry.port(), 0)?;
    let folder = tempfile::tempdir()?;
    // Three repositories: the same blobs pushed concurrently into one repository can race
    // in the registry (an answered 5xx, then a retry), which would blur the count.
    for package in ["first", "second", "third"] {
        e2e::copy_dir(
            &e2e::corpus::redis_bundle(),
            &folder.path().join(package).join("0.1.0"),
        )?;
    }
    let out = ok(run(
        Command::new(e2e::bundle_tool_binary())
            .arg("push-all")
            .arg(folder.path())
            .args([
                &format!("127.0.0.1:{}/bundles", proxy.port()),
                "--plain-http",
            ]),
        None,
    ));
    assert_eq!(out.lines().count(), 3, "{out}");
    // One ping for the session, then per image POST + PUT per blob and the manifest's PUT:
    // 1 + 3 × 5 (a ping per image, as oci-client did, would make it 18 or more).
    let exchanges = proxy.requests();
    assert!(
        exchanges <= 16,
        "push-all of 3 bundles took {exchanges} exchanges"
    );
    eprintln!("push-all of 3 bundles: {exchanges} exchanges");
    Ok(())
}

#[tokio::test]
async fn a_blob_damaged_in_transit_is_refused_and_nothing_is_unpacked() -> anyhow::Result<()> {
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/damaged:v0.1.0", registry.host());
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .arg("push")
            .arg(e2e::corpus::redis_bundle())
            .args([&reference, "--plain-http"]),
        None,
    ));
    let proxy = e2e::FaultyProxy::start_corrupting_blobs(registry.port())?;
    let through_proxy = format!("127.0.0.1:{}/example/damaged:v0.1.0", proxy.port());
    let scratch = tempfile::tempdir()?;
    let target = scratch.path().join("bundle");
    let pulled = run(
        Command::new(e2e::bundle_tool_binary())
            .args(["pull", &through_proxy])
            .arg(&target)
            .arg("--plain-http"),
        None,
    );
    let stderr = String::from_utf8_lossy(&pulled.stderr);
    assert!(!pulled.status.success(), "a damaged blob was accepted");
    assert!(
        stderr.contains("digest"),
        "the refusal does not name the digest: {stderr}"
    );
    assert!(proxy.faults() > 0, "the proxy damaged no blob");
    assert!(
        !target.exists() || std::fs::read_dir(&target)?.next().is_none(),
        "files were unpacked from a damaged image"
    );
    // Commands that read an image the way they read a folder refuse it the same way.
    let validated = run(
        Command::new(e2e::bundle_tool_binary()).args(["validate", "--plain-http", &through_proxy]),
        None,
    );
    assert!(!validated.status.success(), "validate read a damaged image");
    assert!(
        String::from_utf8_lossy(&validated.stderr).contains("digest"),
        "{}",
        String::from_utf8_lossy(&validated.stderr)
    );
    // The same image straight from the registry is whole: the damage was the proxy's.
    ok(run(
        Command::new(e2e::bundle_tool_binary())
            .args(["pull", &reference])
            .arg(&target)
            .arg("--plain-http"),
        None,
    ));
    assert!(target.join("manifests").is_dir());
    eprintln!(
        "damaged blobs refused: {}; pull said: {}",
        proxy.faults(),
        stderr.trim()
    );
    Ok(())
}

#[tokio::test]
async fn registry_credentials_are_in_no_output_even_at_trace_level() -> anyhow::Result<()> {
    use base64::Engine as _;
    let password = format!("registry-secret-{}", std::process::id());
    let wrong = format!("wrong-secret-{}", std::process::id());
    let registry = OciRegistry::start(RegistryAuth::Htpasswd {
        username: "ci".into(),
        password: password.clone(),
    })
    .await?;
    let reference = format!("{}/example/secret:v0.1.0", registry.host());
    let basic = |p: &str| base64::engine::general_purpose::STANDARD.encode(format!("ci:{p}"));
    let needles = [
        password.clone(),
        wrong.clone(),
        basic(&password),
        basic(&wrong),
    ];
    let scratch = tempfile::tempdir()?;
    let auth_file = scratch.path().join("auth.json");
    std::fs::write(
        &auth_file,
        serde_json::json!({"auths": {registry.host(): {"auth": basic(&password)}}}).to_string(),
    )?;
    // Each command at the most verbose log level, its stdout and stderr kept.
    let mut outputs = Vec::new();
    let mut traced = |args: &[&str], stdin: Option<&str>, succeeds: bool| {
        let output = run(
            Command::new(e2e::bundle_tool_binary())
                .args(args)
                .env("RUST_LOG", "trace")
                .env("REGISTRY_AUTH_FILE", &auth_file),
            stdin,
        );
        assert_eq!(
            output.status.success(),
            succeeds,
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        outputs.push((
            args.join(" "),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        ));
    };
    let bundle = e2e::corpus::redis_bundle().display().to_string();
    let pulled = scratch.path().join("pulled").display().to_string();
    let with_password = ["--plain-http", "--username", "ci", "--password-stdin"];
    let push = |extra: &[&'static str]| -> Vec<String> {
        ["push", &bundle, &reference]
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().map(|s| s.to_string()))
            .collect()
    };
    let args = push(&with_password);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    traced(&args, Some(&password), true);
    traced(&args, Some(&wrong), false);
    traced(&["pull", &reference, &pulled, "--plain-http"], None, true);
    traced(&["inspect", &reference, "--plain-http"], None, true);
    traced(&["validate", "--plain-http", &reference], None, true);
    // The auth file's entry is wrong: refused, and the refusal shows no credential either.
    std::fs::write(
        &auth_file,
        serde_json::json!({"auths": {registry.host(): {"auth": basic(&wrong)}}}).to_string(),
    )?;
    traced(&["inspect", &reference, "--plain-http"], None, false);
    outputs.push((
        "the registry's log".into(),
        std::fs::read_to_string(registry.process().log_path())?,
    ));

    let all: String = outputs.iter().map(|(_, text)| text.as_str()).collect();
    assert!(
        all.contains("TRACE") || all.contains("DEBUG"),
        "RUST_LOG=trace logged nothing, so nothing verbose was checked"
    );
    for (what, text) in &outputs {
        for needle in &needles {
            assert!(!text.contains(needle.as_str()), "{what} shows a credential");
        }
    }
    eprintln!(
        "{} outputs, {} KiB, no credential",
        outputs.len(),
        all.len() / 1024
    );
    Ok(())
}
