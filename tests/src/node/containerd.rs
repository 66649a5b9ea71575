//! containerd (Debian's 1.6) with the CRI plugin, runc, and pulls from the cluster's registry
//! over plain HTTP, everything below the node's own folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::process::ManagedProcess;

/// Debian's containerd and runc.
const CONTAINERD: &str = "/usr/bin/containerd";
const RUNC: &str = "/usr/sbin/runc";

/// What containerd needs to know.
pub struct ContainerdSettings<'a> {
    /// Its folder: root, state, socket, registry hosts.
    pub dir: &'a Path,
    /// The registry (`host:port`) it pulls from over plain HTTP.
    pub registry: &'a str,
    /// The mirror (`host:port`, plain HTTP) of [`super::DIGEST_ONLY_MIRRORED`], asked for
    /// digests only.
    pub digest_only_mirror: &'a str,
    /// The pod sandbox image.
    pub sandbox_image: &'a str,
    /// Where the CNI configuration is written.
    pub cni_conf_dir: &'a Path,
}

/// containerd's CRI socket under `dir`.
pub fn socket(dir: &Path) -> PathBuf {
    dir.join("containerd.sock")
}

/// Writes the configuration and starts containerd; returns once its socket answers.
pub async fn start(
    settings: &ContainerdSettings<'_>,
    log: &Path,
) -> anyhow::Result<ManagedProcess> {
    for (program, package) in [(CONTAINERD, "containerd"), (RUNC, "runc")] {
        anyhow::ensure!(
            Path::new(program).is_file(),
            "{program} is missing: install Debian's {package} package (the README test command does)"
        );
    }
    let dir = settings.dir;
    let hosts_dir = dir.join("certs.d").join(settings.registry);
    std::fs::create_dir_all(&hosts_dir)?;
    std::fs::write(
        hosts_dir.join("hosts.toml"),
        format!(
            "server = \"http://{0}\"\n\n[host.\"http://{0}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
            settings.registry
        ),
    )?;
    // The public registries the project's manifests name are mirrored by the cluster
    // registry, as in an air-gapped cluster: `quay.io/example/x:1` is pulled as
    // `<registry>/example/x:1`. The upstream server stays the fallback, which the test's
    // network cannot reach, so an image missing from the mirror fails to pull.
    for public in super::MIRRORED_REGISTRIES {
        let mirror_dir = dir.join("certs.d").join(public);
        std::fs::create_dir_all(&mirror_dir)?;
        std::fs::write(
            mirror_dir.join("hosts.toml"),
            format!(
                "server = \"https://{public}\"\n\n[host.\"http://{0}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
                settings.registry
            ),
        )?;
    }
    // A disconnected cluster's mirror: only `pull`, so containerd asks it for a reference by
    // digest and never to resolve a tag (containerd's resolver asks only hosts with the
    // `resolve` capability for a tag); a tag goes to the unreachable upstream and fails.
    let mirror_dir = dir.join("certs.d").join(super::DIGEST_ONLY_MIRRORED);
    std::fs::create_dir_all(&mirror_dir)?;
    std::fs::write(
        mirror_dir.join("hosts.toml"),
        format!(
            "server = \"https://{}\"\n\n[host.\"http://{}\"]\n  capabilities = [\"pull\"]\n",
            super::DIGEST_ONLY_MIRRORED,
            settings.digest_only_mirror
        ),
    )?;
    let config = format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{ttrpc}"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox}"
  # The sandbox has no CAP_SYS_RESOURCE: runc cannot give a container a lower OOM score
  # than its own, and without this every sandbox fails to start.
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{runc}"
        Root = "{runc_root}"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{hosts}"
"#,
        root = dir.join("root").display(),
        state = dir.join("state").display(),
        socket = socket(dir).display(),
        ttrpc = dir.join("containerd.sock.ttrpc").display(),
        opt = dir.join("opt").display(),
        sandbox = settings.sandbox_image,
        runc = RUNC,
        runc_root = dir.join("runc").display(),
        cni_bin = super::cni::PLUGIN_DIR,
        cni_conf = settings.cni_conf_dir.display(),
        hosts = dir.join("certs.d").display(),
    );
    let config_path = dir.join("config.toml");
    std::fs::write(&config_path, config)?;
    let process = ManagedProcess::spawn(
        "containerd",
        Path::new(CONTAINERD),
        &["--config".into(), config_path.display().to_string()],
        &[],
        log,
    )?;
    let socket = socket(dir);
    process
        .wait_ready(Duration::from_secs(30), || {
            let socket = socket.clone();
            async move { Ok(tokio::net::UnixStream::connect(&socket).await.is_ok()) }
        })
        .await
        .context("waiting for containerd's socket")?;
    Ok(process)
}
