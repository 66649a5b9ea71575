//! The images the real node runs, built by the project's own image builder (bundle-tool's
//! `image` module, as `bundle-tool build --binary` does) from programs built or installed on
//! this machine, and pushed to the cluster's registry. Nothing comes from the internet.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use bundle_tool::image::{
    BuiltImage, ContainerConfig, Credentials, RegistryClient, RootfsEntry, build_rootfs_image,
    parse_reference, program_with_libraries,
};

/// Debian's busybox-static: the shell and small tools of the test pods.
const BUSYBOX: &str = "/bin/busybox";
/// The applets test pods call, as links to busybox.
const BUSYBOX_APPLETS: &[&str] = &[
    "sh", "cat", "echo", "sleep", "ls", "mkdir", "rm", "head", "tail", "dd", "date", "true",
    "false", "env", "ps", "grep", "kill", "id", "hostname", "touch", "test", "wget", "httpd",
    "nslookup", "wc", "sync",
];

/// Names of the images, by what they are.
#[derive(Clone, Debug)]
pub struct NodeImages {
    /// The pod sandbox (`pause`).
    pub pause: String,
    /// CoreDNS.
    pub coredns: String,
    /// busybox: `sh`, `httpd`, `wget` and the rest, for test pods.
    pub busybox: String,
}

/// Builds and pushes the node's images to `registry` (`host:port`, plain HTTP).
pub async fn build_and_push(registry: &str, scratch: &Path) -> anyhow::Result<NodeImages> {
    let assets = crate::assets::Assets::locate()?;
    let pause_binary = compile_pause(scratch)?;
    let pause = push(
        registry,
        "e2e/pause:v1",
        &build_rootfs_image(
            &[RootfsEntry::File {
                path: "/pause".into(),
                source: pause_binary,
                mode: 0o755,
            }],
            &ContainerConfig {
                entrypoint: vec!["/pause".into()],
                user: "65535:65535".into(),
                ..ContainerConfig::default()
            },
        )?,
    )
    .await?;

    let coredns_binary = assets.program("COREDNS", "coredns")?;
    let coredns_version = assets
        .version_of("COREDNS")
        .context("the asset index has no CoreDNS version")?;
    let coredns = push(
        registry,
        &format!("e2e/coredns:{coredns_version}"),
        &build_rootfs_image(
            &[RootfsEntry::File {
                path: "/coredns".into(),
                source: coredns_binary,
                mode: 0o755,
            }],
            &ContainerConfig {
                entrypoint: vec!["/coredns".into()],
                user: "65532:65532".into(),
                ..ContainerConfig::default()
            },
        )?,
    )
    .await?;

    anyhow::ensure!(
        Path::new(BUSYBOX).is_file(),
        "{BUSYBOX} is missing: install Debian's busybox-static (the README test command does)"
    );
    let mut entries = vec![
        RootfsEntry::File {
            path: "/bin/busybox".into(),
            source: BUSYBOX.into(),
            mode: 0o755,
        },
        RootfsEntry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
        RootfsEntry::Bytes {
            path: "/etc/passwd".into(),
            data: b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
                .to_vec(),
            mode: 0o644,
        },
    ];
    entries.extend(BUSYBOX_APPLETS.iter().map(|applet| RootfsEntry::Symlink {
        path: format!("/bin/{applet}"),
        target: "busybox".into(),
    }));
    let busybox = push(
        registry,
        &format!("e2e/busybox:{}", debian_version("busybox-static")?),
        &build_rootfs_image(
            &entries,
            &ContainerConfig {
                cmd: vec!["/bin/sh".into()],
                env: vec!["PATH=/bin".into()],
                ..ContainerConfig::default()
            },
        )?,
    )
    .await?;
    Ok(NodeImages {
        pause,
        coredns,
        busybox,
    })
}

/// An image of `programs` with their shared libraries (e.g. Debian's `redis-server`),
/// pushed as `registry/name`; returns the reference.
pub async fn push_programs(
    registry: &str,
    name: &str,
    programs: &[&Path],
    extra: Vec<RootfsEntry>,
    config: &ContainerConfig,
) -> anyhow::Result<String> {
    let mut entries = extra;
    for program in programs {
        for entry in program_with_libraries(program)? {
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
    }
    push(registry, name, &build_rootfs_image(&entries, config)?).await
}

/// Pushes a built image as `registry/name`; returns the reference.
pub(crate) async fn push(registry: &str, name: &str, image: &BuiltImage) -> anyhow::Result<String> {
    let reference = format!("{registry}/{name}");
    let parsed = parse_reference(&reference)?;
    RegistryClient::new(
        &bundle_tool::image::Transport {
            plain_http: true,
            ..Default::default()
        },
        Credentials::Anonymous,
    )
    .expect("a plain-HTTP client")
    .push(&parsed, image)
    .await
    .with_context(|| format!("pushing {reference}"))?;
    Ok(reference)
}

/// The pause program, compiled from `tests/assets/pause.c` as a static binary.
fn compile_pause(scratch: &Path) -> anyhow::Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/pause.c");
    let out = scratch.join("pause");
    let status = Command::new("gcc")
        .args(["-static", "-Os", "-s", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .context("running gcc (Debian package gcc; with libc6-dev for the static C library)")?;
    if !status.success() {
        bail!("gcc could not build {} ({status})", source.display());
    }
    Ok(out)
}

/// The installed version of a Debian package (the tag of an image made from it).
pub fn debian_version(package: &str) -> anyhow::Result<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .output()
        .context("running dpkg-query")?;
    if !out.status.success() {
        bail!(
            "the Debian package {package} is not installed (the README test command installs it)"
        );
    }
    // Tags allow [A-Za-z0-9_.-]: `1:1.35.0-4+b3` becomes `1.35.0-4-b3`.
    let version = String::from_utf8_lossy(&out.stdout);
    let version = version.rsplit(':').next().unwrap_or_default();
    Ok(version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect())
}
