//! Images for several platforms: `build --catalog` and `build --binary` with linux/amd64 and
//! linux/arm64 make OCI image indexes that skopeo, umoci, opm and our own `pull --platform`
//! read per platform, and whose arm64 programs (cross-built for aarch64) really run, under
//! Debian's `qemu-aarch64-static` (no binfmt registration: the emulator is called by name).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e2e::assets::Assets;
use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

/// The emulator, from Debian's qemu-user-static.
const QEMU: &str = "/usr/bin/qemu-aarch64-static";

fn ok(command: &mut Command) -> String {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The aarch64 build of `program`: `$E2E_AARCH64_BIN_DIR/<program>`, else
/// `target/aarch64-unknown-linux-gnu/debug/<program>`, which the README's test command builds.
fn aarch64_program(program: &str) -> PathBuf {
    let dir = std::env::var_os("E2E_AARCH64_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/aarch64-unknown-linux-gnu/debug")
        });
    let path = dir.join(program);
    assert!(
        path.is_file(),
        "{} is missing: cross-build it with `rustup target add aarch64-unknown-linux-gnu`, \
         `apt-get install gcc-aarch64-linux-gnu` and `RUSTFLAGS=\"-C target-feature=+crt-static\" \
         cargo build --target aarch64-unknown-linux-gnu --bin catalog-server --bin redis-operator` \
         (tests/run-all.sh does)",
        path.display()
    );
    path
}

fn qemu() -> &'static str {
    assert!(
        Path::new(QEMU).is_file(),
        "{QEMU} is missing: apt-get install qemu-user-static (tests/run-all.sh does)"
    );
    QEMU
}

/// The ELF machine of `program`: "x86-64", "aarch64" or the number.
fn elf_machine(program: &Path) -> String {
    let mut header = [0u8; 20];
    std::fs::File::open(program)
        .and_then(|mut f| f.read_exact(&mut header))
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    assert_eq!(&header[..4], b"\x7fELF", "{} is not ELF", program.display());
    match u16::from_le_bytes([header[18], header[19]]) {
        62 => "x86-64".into(),
        183 => "aarch64".into(),
        other => other.to_string(),
    }
}

fn repository_catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog")
}

/// `skopeo inspect --raw` of `reference`'s index: each entry's `os/architecture`.
fn index_platforms(reference: &str) -> Vec<String> {
    let raw: Value = serde_json::from_str(&ok(Command::new("skopeo").args([
        "inspect",
        "--raw",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ])))
    .unwrap();
    assert_eq!(raw["mediaType"], "application/vnd.oci.image.index.v1+json");
    raw["manifests"]
        .as_array()
        .expect("an index lists manifests")
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap(),
                m["platform"]["architecture"].as_str().unwrap()
            )
        })
        .collect()
}

/// `skopeo copy --override-arch ARCH` of `reference` into an OCI layout, unpacked by umoci;
/// returns the root file system.
fn copy_and_unpack(reference: &str, arch: &str, work: &Path) -> PathBuf {
    let layout = work.join(format!("layout-{arch}"));
    ok(Command::new("skopeo").args([
        "copy",
        "--override-os",
        "linux",
        "--override-arch",
        arch,
        "--src-tls-verify=false",
        &format!("docker://{reference}"),
        &format!("oci:{}:{arch}", layout.display()),
    ]));
    let bundle = work.join(format!("unpacked-{arch}"));
    ok(Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:{arch}", layout.display()))
        .arg(&bundle));
    bundle.join("rootfs")
}

/// A free port on loopback.
fn port() -> u16 {
    e2e::free_port().unwrap()
}

/// GET `path` from an HTTP/1.1 server on loopback: the body.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default())
}

/// Kills the child when dropped.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_two_platform_catalog_index_serves_from_each_platform() -> anyhow::Result<()> {
    let arm_server = aarch64_program("catalog-server");
    let qemu = qemu();
    let work = tempfile::tempdir()?;
    let build = |layout: &Path| {
        let line = ok(Command::new(e2e::bundle_tool_binary())
            .args(["build", "--catalog"])
            .arg(repository_catalog())
            .args(["--platform", "linux/amd64,linux/arm64", "--server-binary"])
            .arg(format!("linux/arm64={}", arm_server.display()))
            .args(["--tag", "latest", "--oci-layout"])
            .arg(layout));
        line.trim().rsplit_once('@').unwrap().1.to_string()
    };
    // Reproducible: another layout, the same index digest.
    let (first, second) = (build(&work.path().join("a")), build(&work.path().join("b")));
    assert_eq!(first, second);

    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/redis-catalog:multi", registry.host());
    let pushed = ok(Command::new(e2e::bundle_tool_binary())
        .arg("push")
        .arg(format!("{}:latest", work.path().join("a").display()))
        .args([&reference, "--plain-http"]));
    assert!(pushed.trim().ends_with(&first), "{pushed}");
    assert_eq!(index_platforms(&reference), ["linux/amd64", "linux/arm64"]);

    // Our inspect lists both platforms, each image two layers, the configs layer shared.
    let inspected: Value =
        serde_json::from_str(&ok(Command::new(e2e::bundle_tool_binary()).args([
            "inspect",
            &reference,
            "--plain-http",
        ])))?;
    let platforms = inspected["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 2);
    assert_eq!(platforms[1]["platform"], "linux/arm64");
    assert_eq!(
        platforms[0]["layers"][1]["digest"],
        platforms[1]["layers"][1]["digest"]
    );
    assert_ne!(
        platforms[0]["layers"][0]["digest"],
        platforms[1]["layers"][0]["digest"]
    );

    let opm = Assets::locate()?.opm()?;
    let mut arm64_rootfs = PathBuf::new();
    for (arch, machine) in [("amd64", "x86-64"), ("arm64", "aarch64")] {
        let rootfs = copy_and_unpack(&reference, arch, work.path());
        assert_eq!(elf_machine(&rootfs.join("usr/bin/catalog-server")), machine);
        ok(Command::new(&opm)
            .arg("validate")
            .arg(rootfs.join("configs")));
        arm64_rootfs = rootfs;
    }
    let missing = Command::new(e2e::bundle_tool_binary())
        .args(["pull", "--platform", "linux/s390x", &reference])
        .arg(work.path().join("none"))
        .arg("--plain-http")
        .output()?;
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("has no image for linux/s390x (it has linux/amd64, linux/arm64)"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );

    // The arm64 server from the arm64 manifest serves the catalog under the emulator.
    let (grpc, http) = (port(), port());
    let _server = Running(
        Command::new(qemu)
            .arg(arm64_rootfs.join("usr/bin/catalog-server"))
            .arg("serve")
            .arg(arm64_rootfs.join("configs"))
            .args(["--address", "127.0.0.1", "--port", &grpc.to_string()])
            .args(["--http-port", &http.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let probe = Assets::locate()?.grpc_health_probe()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = Command::new(&probe)
            .arg(format!("-addr=127.0.0.1:{grpc}"))
            .output()?;
        if status.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the arm64 server never became healthy: {}",
            String::from_utf8_lossy(&status.stdout)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let packages = http_get(http, "/api/v1/metas?schema=olm.package")?;
    assert!(
        packages.contains("\"name\":\"redis-operator\""),
        "the arm64 server lists: {packages}"
    );
    Ok(())
}

#[tokio::test]
async fn a_two_platform_operator_index_runs_its_arm64_binary() -> anyhow::Result<()> {
    let arm = aarch64_program("redis-operator");
    let amd = e2e::bundle_tool_binary()
        .parent()
        .unwrap()
        .join("redis-operator");
    let qemu = qemu();
    let work = tempfile::tempdir()?;
    // A binary given for the wrong platform is refused, naming it.
    let wrong = Command::new(e2e::bundle_tool_binary())
        .arg("build")
        .arg("--binary")
        .arg(format!("linux/amd64={}", amd.display()))
        .arg("--binary")
        .arg(format!("linux/arm64={}", amd.display()))
        .arg("--oci-layout")
        .arg(work.path().join("wrong"))
        .output()?;
    assert_eq!(wrong.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&wrong.stderr).trim(),
        format!(
            "error: {}: an ELF program for x86-64, given for linux/arm64",
            amd.display()
        )
    );
    let layout = work.path().join("oci");
    ok(Command::new(e2e::bundle_tool_binary())
        .arg("build")
        .arg("--binary")
        .arg(format!("linux/amd64={}", amd.display()))
        .arg("--binary")
        .arg(format!("linux/arm64={}", arm.display()))
        .args(["--tag", "v0.1.0", "--oci-layout"])
        .arg(&layout));
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let reference = format!("{}/example/redis-operator:v0.1.0", registry.host());
    ok(Command::new(e2e::bundle_tool_binary())
        .arg("push")
        .arg(format!("{}:v0.1.0", layout.display()))
        .args([&reference, "--plain-http"]));
    assert_eq!(index_platforms(&reference), ["linux/amd64", "linux/arm64"]);
    let rootfs = copy_and_unpack(&reference, "arm64", work.path());
    let binary = rootfs.join("redis-operator");
    assert_eq!(elf_machine(&binary), "aarch64");
    // Our pull picks the arm64 image too, and by default this machine's.
    let pulled = work.path().join("pulled");
    ok(Command::new(e2e::bundle_tool_binary())
        .args(["pull", "--platform", "linux/arm64", &reference])
        .arg(&pulled)
        .arg("--plain-http"));
    assert_eq!(elf_machine(&pulled.join("redis-operator")), "aarch64");
    // Without --platform, this machine's image (stand-in programs: the debug operator is at
    // pull's 64 MiB bound).
    let stand_ins = format!("{}/example/stand-ins:v1", registry.host());
    push_stand_in(work.path(), &["linux/arm64", "linux/amd64"], &stand_ins);
    let native = work.path().join("native");
    ok(Command::new(e2e::bundle_tool_binary())
        .args(["pull", &stand_ins])
        .arg(&native)
        .arg("--plain-http"));
    assert_eq!(
        std::fs::read_to_string(native.join("linux_amd64"))?,
        "#!/bin/sh\necho linux_amd64\n"
    );
    assert!(!native.join("linux_arm64").exists());
    let crd = ok(Command::new(qemu).arg(&binary).arg("crd"));
    assert!(
        crd.contains("name: redisclusters.cache.example.com"),
        "the arm64 operator printed: {crd}"
    );
    // The same bytes as the amd64 operator prints.
    assert_eq!(crd, ok(Command::new(&amd).arg("crd")));
    Ok(())
}

/// podman configured for this test alone: storage, run state and registries in `dir` (the
/// test registry is plain HTTP), nothing of the machine's own containers touched.
fn podman_env(dir: &Path, registry: &str) -> Vec<(String, String)> {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let storage = write(
        "storage.conf",
        format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = \"{0}/graph\"\nrunroot = \"{0}/run\"\n",
            dir.display()
        ),
    );
    let registries = write(
        "registries.conf",
        format!("[[registry]]\nlocation = \"{registry}\"\ninsecure = true\n"),
    );
    let containers = write(
        "containers.conf",
        format!(
            "[engine]\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\ntmp_dir = \"{}/tmp\"\n",
            dir.display()
        ),
    );
    vec![
        ("CONTAINERS_STORAGE_CONF".into(), storage),
        ("CONTAINERS_REGISTRIES_CONF".into(), registries),
        ("CONTAINERS_CONF".into(), containers),
    ]
}

/// A stand-in program for a platform: any file that is not ELF passes the platform check.
fn stand_in(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho {name}\n")).unwrap();
    path
}

/// Builds and pushes an image of stand-in programs for `platforms` to `reference`.
fn push_stand_in(work: &Path, platforms: &[&str], reference: &str) {
    let layout = work.join(format!("oci-{}", platforms.join("-").replace('/', "_")));
    let mut command = Command::new(e2e::bundle_tool_binary());
    command.arg("build");
    for platform in platforms {
        let program = stand_in(work, &platform.replace('/', "_"));
        command
            .arg("--binary")
            .arg(format!("{platform}={}", program.display()));
    }
    ok(command.args(["--tag", "v1", "--oci-layout"]).arg(&layout));
    ok(Command::new(e2e::bundle_tool_binary())
        .arg("push")
        .arg(format!("{}:v1", layout.display()))
        .args([reference, "--plain-http"]));
}

/// The Redis bundle with the CSV's platform labels, its operator's image, related images and
/// the operator pod's required node affinity replaced.
fn edited_bundle(
    into: &Path,
    labels: &[&str],
    image: &str,
    related: &[&str],
    affinity: Option<&[&str]>,
) -> PathBuf {
    let bundle = into.to_path_buf();
    e2e::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle"),
        &bundle,
    )
    .unwrap();
    let path = bundle.join("manifests/redis-operator.clusterserviceversion.yaml");
    let mut csv: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| (l.to_string(), Value::from("supported")))
        .collect();
    csv["metadata"]["labels"] = Value::Object(labels);
    let deployment =
        &mut csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    for container in deployment["containers"].as_array_mut().unwrap() {
        container["image"] = Value::from(image);
    }
    if let Some(arches) = affinity {
        deployment["affinity"] = serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                "matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": arches},
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                ]
            }]}
        }});
    }
    csv["spec"]["relatedImages"] = related
        .iter()
        .enumerate()
        .map(|(i, image)| serde_json::json!({"name": format!("related-{i}"), "image": image}))
        .collect();
    std::fs::write(&path, serde_json::to_string_pretty(&csv).unwrap()).unwrap();
    bundle
}

/// The messages with the times podman's log lines carry (`time="2026-12-05T00:03:36Z"`)
/// blanked: a failed pull's output is in the message, from a run a few seconds apart.
fn untimed(messages: std::collections::BTreeSet<String>) -> std::collections::BTreeSet<String> {
    messages
        .into_iter()
        .map(|message| {
            let mut out = String::new();
            let mut rest = message.as_str();
            while let Some((before, after)) = rest.split_once("time=\"") {
                out.push_str(before);
                out.push_str("time=\"…\"");
                rest = after.split_once('"').map_or("", |(_, tail)| tail);
            }
            out.push_str(rest);
            out
        })
        .collect()
}

/// One bundle of the multiarch comparison.
struct Case {
    name: &'static str,
    labels: Vec<&'static str>,
    image: String,
    related: Vec<String>,
    affinity: Option<&'static [&'static str]>,
}

#[tokio::test]
async fn the_multiarch_validator_agrees_with_operator_sdk() -> anyhow::Result<()> {
    assert!(
        Path::new("/usr/bin/podman").is_file(),
        "/usr/bin/podman is missing: apt-get install podman (tests/run-all.sh does)"
    );
    let sdk = Assets::locate()?.operator_sdk()?;
    let registry = OciRegistry::start(RegistryAuth::Anonymous).await?;
    let work = tempfile::tempdir()?;
    let host = registry.host();
    let multi = format!("{host}/example/multi:v1");
    let amd_s390x = format!("{host}/example/amd-s390x:v1");
    let single = format!("{host}/example/single:v1");
    push_stand_in(work.path(), &["linux/amd64", "linux/arm64"], &multi);
    push_stand_in(work.path(), &["linux/amd64", "linux/s390x"], &amd_s390x);
    push_stand_in(work.path(), &["linux/amd64"], &single);
    // Nothing listens there.
    let unreachable = format!("127.0.0.1:{}/example/gone:v1", port());
    let both = [
        "operatorframework.io/arch.amd64",
        "operatorframework.io/arch.arm64",
    ];
    let case = |name, labels: &[&'static str], image: &str, related: &[&str], affinity| Case {
        name,
        labels: labels.to_vec(),
        image: image.to_string(),
        related: related.iter().map(|r| r.to_string()).collect(),
        affinity,
    };
    let cases = [
        case(
            "labels matching the image",
            &both,
            &multi,
            &[],
            Some(&["amd64", "arm64"][..]),
        ),
        case(
            "a declared arch the image lacks",
            &both,
            &amd_s390x,
            &[],
            None,
        ),
        case("an offered arch without its label", &[], &multi, &[], None),
        case("a single-arch image", &both, &single, &[], None),
        case(
            "an unreachable image",
            &["operatorframework.io/arch.amd64"],
            &unreachable,
            &[],
            None,
        ),
        case(
            "a related image without an arch",
            &both,
            &multi,
            &[&amd_s390x],
            None,
        ),
        case(
            "an affinity narrower than the image",
            &both,
            &multi,
            &[],
            Some(&["amd64"][..]),
        ),
    ];
    let env = podman_env(work.path(), &host);
    let select = ["--select-optional", "name=multiarch"];
    let values = ["--optional-values", "container-tools=podman"];
    let mut errors_seen = 0;
    for (index, case) in cases.iter().enumerate() {
        let name = case.name;
        let related: Vec<&str> = case.related.iter().map(String::as_str).collect();
        let bundle = edited_bundle(
            &work.path().join(format!("bundle-{index}")),
            &case.labels,
            &case.image,
            &related,
            case.affinity,
        );
        let theirs = Command::new(&sdk)
            .args(["bundle", "validate", "-o", "json-alpha1"])
            .args(select)
            .args(values)
            .arg(&bundle)
            .envs(env.clone())
            .output()?;
        let ours = Command::new(e2e::bundle_tool_binary())
            .args(["validate", "-o", "json"])
            .args(select)
            .args(values)
            .arg(&bundle)
            .envs(env.clone())
            .output()?;
        let (their_pass, their_errors, their_warnings) =
            e2e::validate_report::verdict(&theirs, "operator-sdk", &bundle);
        let (our_pass, our_errors, our_warnings) =
            e2e::validate_report::verdict(&ours, "bundle-tool", &bundle);
        let (their_warnings, our_warnings) = (untimed(their_warnings), untimed(our_warnings));
        assert_eq!(our_errors, their_errors, "{name}: errors");
        assert_eq!(our_warnings, their_warnings, "{name}: warnings");
        assert_eq!(our_pass, their_pass, "{name}: verdict");
        assert_eq!(ours.status.success(), our_pass, "{name}: exit code");
        assert!(
            !their_warnings.is_empty() || !their_errors.is_empty() || index == 0,
            "{name}: operator-sdk found nothing"
        );
        errors_seen += their_errors.len();
    }
    // The cases reach the validator's error as well as its warnings.
    assert!(errors_seen >= 2, "{errors_seen} errors in all");
    // An unknown tool is refused with upstream's message.
    let bundle = edited_bundle(&work.path().join("bundle-tool"), &[], &multi, &[], None);
    let bad = Command::new(e2e::bundle_tool_binary())
        .args(["validate", "-o", "json"])
        .args(select)
        .args(["--optional-values", "container-tools=crio"])
        .arg(&bundle)
        .output()?;
    let theirs = Command::new(&sdk)
        .args(["bundle", "validate", "-o", "json-alpha1"])
        .args(select)
        .args(["--optional-values", "container-tools=crio"])
        .arg(&bundle)
        .output()?;
    assert_eq!(
        e2e::validate_report::verdict(&bad, "bundle-tool", &bundle),
        e2e::validate_report::verdict(&theirs, "operator-sdk", &bundle)
    );
    Ok(())
}

#[test]
fn a_two_platform_release_labels_the_csv_and_writes_indexes() {
    let arm_server = aarch64_program("catalog-server");
    let repo = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::copy(
        workspace.join("bundle-tool.yaml"),
        repo.path().join("bundle-tool.yaml"),
    )
    .unwrap();
    for folder in ["operator/config", "catalog"] {
        e2e::copy_dir(&workspace.join(folder), &repo.path().join(folder)).unwrap();
    }
    let release = |version: &str| {
        let output = Command::new(e2e::bundle_tool_binary())
            .current_dir(repo.path())
            .args([
                "release",
                "--config",
                "bundle-tool.yaml",
                "--version",
                version,
            ])
            .args(["--platform", "linux/amd64,linux/arm64", "--server-binary"])
            .arg(format!("linux/arm64={}", arm_server.display()))
            .args(["-o", "json"])
            .env("SOURCE_DATE_EPOCH", "1767225600")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let first = release("0.4.0");
    let layout = repo.path().join("target/oci");
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    for (tag, summary) in [("v0.4.0", &first["bundle"]), ("latest", &first["catalog"])] {
        let entry = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
            .unwrap_or_else(|| panic!("no {tag} in {index}"));
        assert_eq!(
            entry["mediaType"],
            "application/vnd.oci.image.index.v1+json"
        );
        assert_eq!(entry["digest"], summary["digest"], "{tag}");
        // skopeo reads each platform's image out of the layout.
        let raw: Value = serde_json::from_str(&ok(Command::new("skopeo").args([
            "inspect",
            "--raw",
            &format!("oci:{}:{tag}", layout.display()),
        ])))
        .unwrap();
        assert_eq!(raw["manifests"].as_array().unwrap().len(), 2, "{tag}");
    }
    // The CSV the catalog's new bundle carries has the platform labels.
    let catalog = std::fs::read(repo.path().join("catalog/redis-operator/catalog.json")).unwrap();
    let csv = serde_json::Deserializer::from_slice(&catalog)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .filter(|doc| doc["name"] == "redis-operator.v0.4.0")
        .flat_map(|doc| doc["properties"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "olm.bundle.object")
        .map(|p| {
            use base64::Engine;
            let data = base64::engine::general_purpose::STANDARD
                .decode(p["value"]["data"].as_str().unwrap())
                .unwrap();
            serde_json::from_slice::<Value>(&data).unwrap()
        })
        .find(|object| object["kind"] == "ClusterServiceVersion")
        .expect("the new bundle's CSV in the catalog");
    assert_eq!(
        csv["metadata"]["labels"],
        serde_json::json!({
            "operatorframework.io/arch.amd64": "supported",
            "operatorframework.io/arch.arm64": "supported",
            "operatorframework.io/os.linux": "supported",
        })
    );
    // Released again: the same index digests, nothing changed.
    let again = release("0.4.0");
    assert_eq!(again["changed"], false);
    assert_eq!(again["bundle"]["digest"], first["bundle"]["digest"]);
    assert_eq!(again["catalog"]["digest"], first["catalog"]["digest"]);
}
