//! Pulls through containers' registries.conf, against real registries: images named by their
//! public names (`quay.io/…`, `docker.io/…`, which this network namespace cannot reach)
//! come from a local docker-registry that mirrors them, as on a disconnected cluster. Debian's
//! skopeo (1.9.3, containers/image, the library whose file format this is) reads the same
//! files as the oracle: it must find the same manifest, and refuse what bundle-tool refuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::{OciRegistry, RegistryAuth};
use serde_json::Value;

const BUNDLE: &str = "quay.io/example/redis-operator-bundle";

/// `bundle-tool ARGS` with no registries.conf of the machine's user or environment (the
/// system's drop-ins, podman's short-name aliases, still apply) and `envs`.
fn bundle_tool(home: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(e2e::bundle_tool_binary());
    command
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args(args)
        .env("HOME", home)
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .env_remove("CONTAINERS_REGISTRIES_CONF")
        .env_remove("REGISTRIES_CONFIG_PATH")
        .env_remove("REGISTRY_AUTH_FILE");
    for (name, value) in envs {
        command.env(name, value);
    }
    command.output().expect("bundle-tool runs")
}

/// `skopeo --registries-conf CONF ARGS`, with no configuration of the machine's user.
fn skopeo(home: &Path, conf: &Path, args: &[&str]) -> Output {
    Command::new("skopeo")
        .arg("--registries-conf")
        .arg(conf)
        .args(args)
        .env("HOME", home)
        .env_remove("CONTAINERS_REGISTRIES_CONF")
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .expect("skopeo runs (Debian package skopeo; the README test command installs it)")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn succeeded(what: &str, output: &Output) -> String {
    assert!(output.status.success(), "{what}: {}", text(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn failed(what: &str, output: &Output) -> String {
    assert!(
        !output.status.success(),
        "{what} succeeded: {}",
        text(output)
    );
    assert_eq!(output.status.code(), Some(1), "{what}: {}", text(output));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A registry standing in for the mirror, and a home folder without configuration.
struct Mirror {
    registry: OciRegistry,
    scratch: tempfile::TempDir,
}

impl Mirror {
    async fn start() -> Mirror {
        Mirror {
            registry: OciRegistry::start(RegistryAuth::Anonymous)
                .await
                .expect("docker-registry starts"),
            scratch: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn home(&self) -> &Path {
        self.scratch.path()
    }

    /// `bundle-tool push SOURCE <mirror>/PATH` over plain HTTP; the digest it reports.
    fn push(&self, source: &str, path: &str) -> String {
        let reference = format!("{}/{path}", self.registry.host());
        let out = succeeded(
            &format!("push {reference}"),
            &bundle_tool(
                self.home(),
                &["push", source, &reference, "--plain-http"],
                &[],
            ),
        );
        out.trim()
            .rsplit_once('@')
            .map(|(_, digest)| digest.to_string())
            .expect("push prints REF@DIGEST")
    }

    /// A registries.conf in the scratch folder.
    fn conf(&self, name: &str, text: &str) -> PathBuf {
        let path = self.scratch.path().join(name);
        std::fs::write(&path, text).expect("write registries.conf");
        path
    }
}

/// The digest `bundle-tool inspect` reports.
fn inspected_digest(output: &Output) -> String {
    let report: Value =
        serde_json::from_str(&succeeded("inspect", output)).expect("inspect prints JSON");
    report["digest"].as_str().expect("a digest").to_string()
}

/// The digest of the manifest `skopeo inspect --raw` prints.
fn skopeo_digest(mirror: &Mirror, conf: &Path, reference: &str) -> String {
    let output = skopeo(
        mirror.home(),
        conf,
        &["inspect", "--raw", &format!("docker://{reference}")],
    );
    assert!(
        output.status.success(),
        "skopeo inspect {reference}: {}",
        text(&output)
    );
    bundle_tool::image::digest(&output.stdout)
}

/// The Redis bundle pushed to the mirror as `<mirror>/quay/example/redis-operator-bundle:0.1.0`,
/// and a registries.conf that mirrors `quay.io/example` there; skopeo and bundle-tool both
/// find the manifest under the public name, `validate` reads the bundle through the mirror,
/// and `CONTAINERS_REGISTRIES_CONF` names the file as well as the flag does. Without the
/// file, the public name is looked for at quay.io, which is not there to answer.
#[tokio::test]
async fn a_mirror_serves_images_by_their_public_names_as_skopeo_finds_them() {
    let mirror = Mirror::start().await;
    let pushed = mirror.push("bundle", "quay/example/redis-operator-bundle:0.1.0");
    let conf = mirror.conf(
        "mirrors.conf",
        &format!(
            "[[registry]]\nlocation = \"quay.io/example\"\n\n[[registry.mirror]]\nlocation = \"{}/quay/example\"\ninsecure = true\n",
            mirror.registry.host()
        ),
    );
    let public = format!("{BUNDLE}:0.1.0");
    let conf_arg = conf.display().to_string();
    let ours = bundle_tool(
        mirror.home(),
        &["inspect", &public, "--registries-conf", &conf_arg],
        &[],
    );
    assert_eq!(inspected_digest(&ours), pushed);
    assert_eq!(skopeo_digest(&mirror, &conf, &public), pushed);

    let validated = bundle_tool(
        mirror.home(),
        &["validate", &public, "--registries-conf", &conf_arg],
        &[],
    );
    succeeded("validate through the mirror", &validated);

    let by_environment = bundle_tool(
        mirror.home(),
        &["inspect", &public],
        &[("CONTAINERS_REGISTRIES_CONF", &conf)],
    );
    assert_eq!(inspected_digest(&by_environment), pushed);

    let empty = mirror.conf("empty.conf", "");
    let unmirrored = bundle_tool(
        mirror.home(),
        &["inspect", &public],
        &[("CONTAINERS_REGISTRIES_CONF", &empty)],
    );
    let said = failed("inspect without a mirror", &unmirrored);
    assert!(
        said.contains("quay.io"),
        "the error does not name quay.io: {said}"
    );
    assert!(
        !said.contains(&mirror.registry.host()),
        "the mirror was asked without a registries.conf: {said}"
    );
}

/// The mirror holds the bundle by digest only (its tags removed, as oc-mirror leaves a
/// mirror). With `mirror-by-digest-only`, a pull by digest comes from the mirror and a pull
/// by tag goes to quay.io alone and fails, for skopeo and bundle-tool alike; with
/// `pull-from-mirror = "digest-only"` (newer than Debian's skopeo, so bundle-tool alone) the
/// same. With a mirror for every pull, the tag is asked of the mirror, which no longer has
/// it, and the error gives both answers.
#[tokio::test]
async fn a_mirror_by_digest_only_serves_digests_and_not_tags_as_skopeo_does() {
    let mirror = Mirror::start().await;
    let pushed = mirror.push("bundle", "quay/example/redis-operator-bundle:0.1.0");
    mirror
        .registry
        .remove_tags("quay/example/redis-operator-bundle")
        .expect("tags removed");
    let host = mirror.registry.host();
    let by_digest = format!("{BUNDLE}@{pushed}");
    let by_tag = format!("{BUNDLE}:0.1.0");
    let registry_wide = mirror.conf(
        "registry-wide.conf",
        &format!(
            "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n\n[[registry.mirror]]\nlocation = \"{host}/quay\"\ninsecure = true\n"
        ),
    );
    let per_mirror = mirror.conf(
        "per-mirror.conf",
        &format!(
            "[[registry]]\nlocation = \"quay.io\"\n\n[[registry.mirror]]\nlocation = \"{host}/quay\"\ninsecure = true\npull-from-mirror = \"digest-only\"\n"
        ),
    );
    for conf in [&registry_wide, &per_mirror] {
        let conf_arg = conf.display().to_string();
        let ours = bundle_tool(
            mirror.home(),
            &["inspect", &by_digest, "--registries-conf", &conf_arg],
            &[],
        );
        assert_eq!(inspected_digest(&ours), pushed, "{conf_arg}");
        let said = failed(
            "inspect by tag",
            &bundle_tool(
                mirror.home(),
                &["inspect", &by_tag, "--registries-conf", &conf_arg],
                &[],
            ),
        );
        assert!(said.contains("quay.io"), "{conf_arg}: {said}");
        assert!(
            !said.contains(&host),
            "{conf_arg}: a pull by tag went to the digest-only mirror: {said}"
        );
    }
    assert_eq!(skopeo_digest(&mirror, &registry_wide, &by_digest), pushed);
    let skopeo_by_tag = skopeo(
        mirror.home(),
        &registry_wide,
        &["inspect", "--raw", &format!("docker://{by_tag}")],
    );
    assert!(
        !skopeo_by_tag.status.success(),
        "skopeo pulled a tag through a digest-only mirror: {}",
        text(&skopeo_by_tag)
    );

    let every_pull = mirror.conf(
        "every-pull.conf",
        &format!(
            "[[registry]]\nlocation = \"quay.io\"\n\n[[registry.mirror]]\nlocation = \"{host}/quay\"\ninsecure = true\n"
        ),
    );
    let said = failed(
        "inspect by tag through a mirror without the tag",
        &bundle_tool(
            mirror.home(),
            &[
                "inspect",
                &by_tag,
                "--registries-conf",
                &every_pull.display().to_string(),
            ],
            &[],
        ),
    );
    assert!(
        said.contains(&format!("its mirrors in {}", every_pull.display()))
            && said.contains(&format!("{host}/quay/example/redis-operator-bundle:0.1.0")),
        "the error does not give the mirror's answer: {said}"
    );
}

/// A blocked registry is refused before any request, naming the table and the files; a file
/// that is not TOML, and a location with a URL scheme, are refused naming the file. skopeo
/// refuses each of them too.
#[tokio::test]
async fn blocked_registries_and_broken_files_are_refused_as_skopeo_refuses_them() {
    let mirror = Mirror::start().await;
    let pushed = mirror.push("bundle", "quay/example/redis-operator-bundle:0.1.0");
    let host = mirror.registry.host();
    let public = format!("{BUNDLE}:0.1.0");
    let blocked = mirror.conf(
        "blocked.conf",
        &format!(
            "[[registry]]\nprefix = \"quay.io/example\"\nlocation = \"{host}/quay/example\"\nblocked = true\n"
        ),
    );
    let broken = mirror.conf(
        "broken.conf",
        "[[registry]]\nlocation = \"quay.io\"\ninsecure = maybe\n",
    );
    let scheme = mirror.conf(
        "scheme.conf",
        &format!("[[registry]]\nprefix = \"quay.io\"\nlocation = \"http://{host}/quay\"\n"),
    );
    for (conf, expected) in [
        (
            &blocked,
            format!(
                "registry quay.io/example is blocked in {}",
                blocked.display()
            ),
        ),
        (&broken, format!("{}: ", broken.display())),
        (&scheme, "no URL scheme".to_string()),
    ] {
        let conf_arg = conf.display().to_string();
        let said = failed(
            &conf_arg,
            &bundle_tool(
                mirror.home(),
                &["inspect", &public, "--registries-conf", &conf_arg],
                &[],
            ),
        );
        assert!(said.contains(&expected), "{conf_arg}: {said}");
        assert!(
            !said.contains(&pushed),
            "{conf_arg}: the image was pulled: {said}"
        );
        let theirs = skopeo(
            mirror.home(),
            conf,
            &["inspect", "--raw", &format!("docker://{public}")],
        );
        assert!(
            !theirs.status.success(),
            "skopeo accepted {conf_arg}: {}",
            text(&theirs)
        );
    }
    let broken_said = failed(
        "broken",
        &bundle_tool(
            mirror.home(),
            &[
                "inspect",
                &public,
                "--registries-conf",
                &broken.display().to_string(),
            ],
            &[],
        ),
    );
    assert!(broken_said.contains("line 3"), "{broken_said}");
}

/// `generate --use-image-digests` on a network that reaches only the mirror: the five images
/// the Redis CSV names (on quay.io and Docker Hub) are resolved through it, and the CSV names
/// each by its public name and the mirror's digest, which is what a node behind the same
/// mirror configuration pulls.
#[tokio::test]
async fn pinning_resolves_public_names_through_the_mirror() {
    let mirror = Mirror::start().await;
    let host = mirror.registry.host();
    let public = [
        (
            "quay.io/example/redis-operator:0.1.0",
            "quay/example/redis-operator:0.1.0",
        ),
        ("docker.io/library/redis:6.2", "dockerhub/library/redis:6.2"),
        ("docker.io/library/redis:7.0", "dockerhub/library/redis:7.0"),
        ("docker.io/library/redis:7.2", "dockerhub/library/redis:7.2"),
        (
            "quay.io/oliver006/redis_exporter:v1.62.0",
            "quay/oliver006/redis_exporter:v1.62.0",
        ),
    ];
    let mut expected = Vec::new();
    for (i, (name, path)) in public.iter().enumerate() {
        // Different sizes: five different images.
        let layout = e2e::release_inputs::write_random_image_layout(
            &mirror.scratch.path().join(format!("image-{i}")),
            1,
            512 * (i + 1),
        );
        let digest = mirror.push(&format!("{}:big", layout.display()), path);
        let repository = name.rsplit_once(':').expect("a tag").0;
        expected.push(format!("{repository}@{digest}"));
    }
    let conf = mirror.conf(
        "mirrors.conf",
        &format!(
            "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"{host}/quay\"\ninsecure = true\n\n[[registry]]\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = \"{host}/dockerhub\"\ninsecure = true\n"
        ),
    );
    let repo = e2e::release_inputs::release_repository("mirror-pin-");
    let output = Command::new(e2e::bundle_tool_binary())
        .current_dir(repo.path())
        .args([
            "generate",
            "--use-image-digests",
            "--registries-conf",
            &conf.display().to_string(),
            "--output",
            "pinned",
        ])
        .env("HOME", mirror.home())
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .env_remove("CONTAINERS_REGISTRIES_CONF")
        .env_remove("REGISTRY_AUTH_FILE")
        .output()
        .expect("bundle-tool runs");
    succeeded("generate --use-image-digests through the mirror", &output);
    let csv = std::fs::read_to_string(
        repo.path()
            .join("pinned/manifests/redis-operator.clusterserviceversion.yaml"),
    )
    .expect("the pinned CSV");
    for pinned in &expected {
        assert!(
            csv.contains(pinned.as_str()),
            "{pinned} is not in the CSV:\n{csv}"
        );
    }
    assert!(
        !csv.contains(&host),
        "the CSV names the mirror instead of the public names:\n{csv}"
    );
}
