//! A real node in the test cluster: containerd with runc, the CNI bridge, kubelet, kube-proxy
//! and CoreDNS, so that pods really run. It registers with the shared control plane as
//! [`NODE_NAME`], beside kwok's fake nodes, and is tainted so that only pods that ask for it
//! land there (a toleration and the node selector, or a namespace made by
//! [`RealNode::namespace`], whose pods get both from the apiserver).
//!
//! Everything lives in the test binary's own namespaces (the cargo runner's: network, PID,
//! mount), so nothing it starts outlives the binary and nothing it mounts is seen outside.
//! Its folders are below the control plane's; the few paths containerd, the CNI plugins and
//! kubelet always use (`/run/containerd`, `/run/netns`, `/var/lib/cni`, `/var/log/pods`,
//! `/var/log/containers`) get a tmpfs of their own in the test's mount namespace. The
//! cgroups (below [`cgroups::root_name`]) and the host-wide sysctls kubelet sets are put back
//! by the runner after the binary exits, and the sysctls already once the node is up.

mod cgroups;
pub(crate) mod cni;
mod containerd;
mod dns;
mod images;
mod kubelet;
pub mod network;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

pub use bundle_tool::image::{ContainerConfig, RootfsEntry};
pub use images::{NodeImages, debian_version};
pub use kubelet::{TAINT_KEY, TAINT_VALUE};

use crate::process::ManagedProcess;
use crate::registry::{OciRegistry, RegistryAuth};

/// The real node's name.
pub const NODE_NAME: &str = "node-real-0";
/// The cluster registry's port on [`network::NODE_IP`]: every pod and the node reach it there.
pub const REGISTRY_PORT: u16 = 5000;

/// Public registries that the cluster registry mirrors (see [`RealNode::push_as`]).
pub const MIRRORED_REGISTRIES: &[&str] = &["quay.io", "docker.io"];

/// A public registry the node reaches only through a mirror that serves digests, as a
/// disconnected cluster's nodes are set up (OpenShift's `ImageDigestMirrorSet`, containerd's
/// `capabilities = ["pull"]`): `ghcr.io/x@sha256:…` is pulled from [`DigestOnlyMirror`],
/// while `ghcr.io/x:tag` goes to the real ghcr.io, which the test's network cannot reach.
pub const DIGEST_ONLY_MIRRORED: &str = "ghcr.io";
/// The port of [`DigestOnlyMirror`] on [`network::NODE_IP`].
pub const DIGEST_ONLY_MIRROR_PORT: u16 = 5001;

/// Paths the runtime always writes to, whatever it is configured with.
const FIXED_PATHS: &[&str] = &[
    "/run/containerd",
    "/run/netns",
    "/var/lib/cni",
    "/var/log/pods",
    "/var/log/containers",
];

/// The host-wide sysctls kubelet sets at start-up (`vm.overcommit_memory=1`, `kernel.panic=10`,
/// `kernel.panic_on_oops=1`); not namespaced, so they are put back.
const KUBELET_SYSCTLS: &[&str] = &[
    "/proc/sys/vm/overcommit_memory",
    "/proc/sys/kernel/panic",
    "/proc/sys/kernel/panic_on_oops",
];

/// What the control plane hands the node.
pub(crate) struct NodeJoin<'a> {
    /// The control plane's folder; the node's goes inside.
    pub root: &'a Path,
    /// `https://127.0.0.1:<port>`.
    pub server: &'a str,
    /// The cluster CA (PEM file).
    pub ca_cert: &'a Path,
    /// kubelet's bearer token (`system:node:<NODE_NAME>`).
    pub kubelet_token: &'a str,
    /// kube-proxy's bearer token (`system:kube-proxy`).
    pub proxy_token: &'a str,
    /// The admin kubeconfig.
    pub admin_kubeconfig: &'a Path,
}

/// A running real node. Its processes stop when it is dropped; the shared one lives as long as
/// the test binary.
pub struct RealNode {
    // Field order is drop order: kube-proxy and kubelet before containerd and the registry.
    processes: Vec<ManagedProcess>,
    registry: OciRegistry,
    images: NodeImages,
    dir: PathBuf,
    admin_kubeconfig: PathBuf,
    cgroup_root: String,
    started_in: Duration,
}

impl RealNode {
    pub(crate) async fn start(join: NodeJoin<'_>, client: &kube::Client) -> anyhow::Result<Self> {
        let started = Instant::now();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            bail!(
                "the real node needs root (kubelet, containerd and runc do); run the tests as root"
            );
        }
        let cgroup_root = cgroups::create_root()?;
        let dir = join.root.join("node");
        std::fs::create_dir_all(dir.join("logs"))?;
        let log = |name: &str| dir.join("logs").join(format!("{name}.log"));
        mount_private_tmpfs()?;

        let registry = OciRegistry::start_on(
            RegistryAuth::Anonymous,
            &format!("{}:{REGISTRY_PORT}", network::NODE_IP),
        )
        .await
        .context("starting the cluster's registry")?;
        let registry_host = registry.host();
        let images = images::build_and_push(&registry_host, &dir)
            .await
            .context("building the node's images")?;

        let mut processes = Vec::new();
        let containerd_dir = dir.join("containerd");
        let cni_conf_dir = dir.join("cni").join("net.d");
        processes.push(
            containerd::start(
                &containerd::ContainerdSettings {
                    dir: &containerd_dir,
                    registry: &registry_host,
                    digest_only_mirror: &format!("{}:{DIGEST_ONLY_MIRROR_PORT}", network::NODE_IP),
                    sandbox_image: &images.pause,
                    cni_conf_dir: &cni_conf_dir,
                },
                &log("containerd"),
            )
            .await?,
        );

        let kubelet_kubeconfig = dir.join("kubelet.kubeconfig");
        let ca_pem = std::fs::read_to_string(join.ca_cert)?;
        std::fs::write(
            &kubelet_kubeconfig,
            crate::control_plane::kubeconfig_yaml_for(
                join.server,
                &ca_pem,
                &format!("system:node:{NODE_NAME}"),
                join.kubelet_token,
            ),
        )?;
        let sysctls = read_sysctls()?;
        let kubelet_dir = dir.join("kubelet");
        let kubelet = kubelet::start(
            &kubelet::KubeletSettings {
                node_name: NODE_NAME,
                dir: &kubelet_dir,
                runtime_socket: &containerd::socket(&containerd_dir),
                kubeconfig: &kubelet_kubeconfig,
                client_ca: join.ca_cert,
                cgroup_root: &cgroup_root,
            },
            &log("kubelet"),
        )?;
        let nodes: Api<Node> = Api::all(client.clone());
        // The controller-manager gives the Node its pod CIDR once it has registered; the
        // bridge's addresses come from it, and the node is Ready once the network is there.
        let pod_cidr = wait_for_node(&nodes, &kubelet, "the node's pod CIDR", |node| {
            node.spec.and_then(|s| s.pod_cidr)
        })
        .await?;
        cni::write_config(&cni_conf_dir, &dir.join("cni").join("ipam"), &pod_cidr)?;
        wait_for_node(&nodes, &kubelet, "the node to be Ready", |node| {
            crate::control_plane::node_is_ready(&node).then_some(())
        })
        .await?;
        restore_sysctls(&sysctls)?;
        processes.push(kubelet);

        let proxy_kubeconfig = dir.join("kube-proxy.kubeconfig");
        std::fs::write(
            &proxy_kubeconfig,
            crate::control_plane::kubeconfig_yaml_for(
                join.server,
                &ca_pem,
                "system:kube-proxy",
                join.proxy_token,
            ),
        )?;
        let proxy = kubelet::start_proxy(NODE_NAME, &proxy_kubeconfig, &log("kube-proxy"))?;
        proxy
            .wait_ready(Duration::from_secs(30), || async {
                Ok(crate::http_get(10256, "/healthz").await?.0 == 200)
            })
            .await?;
        processes.push(proxy);

        crate::apply_objects(client, &dns::objects(&images.coredns)).await?;
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "kube-system");
        let watched = &processes;
        crate::eventually(Duration::from_secs(90), "CoreDNS to be available", || {
            let deployments = deployments.clone();
            async move {
                for process in watched {
                    process.check_running()?;
                }
                let deployment = deployments.get("coredns").await?;
                let ready = deployment
                    .status
                    .and_then(|s| s.available_replicas)
                    .unwrap_or(0);
                Ok((ready >= 1).then_some(()))
            }
        })
        .await?;
        Ok(RealNode {
            processes,
            registry,
            images,
            dir,
            admin_kubeconfig: join.admin_kubeconfig.to_path_buf(),
            cgroup_root,
            started_in: started.elapsed(),
        })
    }

    /// `198.19.255.1:5000`: the registry containerd pulls from (plain HTTP) and pods reach.
    pub fn registry(&self) -> String {
        self.registry.host()
    }

    /// The images the node was set up with (busybox is for test pods).
    pub fn images(&self) -> &NodeImages {
        &self.images
    }

    /// Builds an image of `programs` (with the shared libraries each loads) and `extra`
    /// entries, pushes it to the cluster registry as `name` (`repo:tag`), returns its reference.
    pub async fn push_programs(
        &self,
        name: &str,
        programs: &[&Path],
        extra: Vec<RootfsEntry>,
        config: &ContainerConfig,
    ) -> anyhow::Result<String> {
        images::push_programs(&self.registry(), name, programs, extra, config).await
    }

    /// Pushes an image built elsewhere (e.g. `bundle_tool::image::build_binary_image`) to the
    /// node's registry as `name`; returns the reference pods use.
    pub async fn push_image(
        &self,
        name: &str,
        image: &bundle_tool::image::BuiltImage,
    ) -> anyhow::Result<String> {
        images::push(&self.registry(), name, image).await
    }

    /// Pushes an image to the cluster registry as the mirror of `public` (a reference on one
    /// of [`MIRRORED_REGISTRIES`], e.g. `quay.io/example/redis-operator:0.1.0`), so that pods
    /// naming `public` get it; returns `public`.
    pub async fn push_as(
        &self,
        public: &str,
        image: &bundle_tool::image::BuiltImage,
    ) -> anyhow::Result<String> {
        images::push(&self.registry(), &mirror_path(public)?, image).await?;
        Ok(public.to_string())
    }

    /// Has the node's containerd pull from `host` (`address:port`) over HTTPS, trusting the CA
    /// in `ca_pem` (containerd reads its `certs.d` folder at every pull, so this takes effect
    /// at once), as an admin adds a private registry's CA to each node.
    pub fn trust_registry(&self, host: &str, ca_pem: &str) -> anyhow::Result<()> {
        let dir = self.dir.join("containerd").join("certs.d").join(host);
        std::fs::create_dir_all(&dir)?;
        let ca = dir.join("ca.crt");
        std::fs::write(&ca, ca_pem)?;
        std::fs::write(
            dir.join("hosts.toml"),
            format!(
                "server = \"https://{host}\"\n\n[host.\"https://{host}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{}\"\n",
                ca.display()
            ),
        )?;
        Ok(())
    }

    /// Creates a namespace whose pods all run on the real node: the apiserver's PodNodeSelector
    /// and PodTolerationRestriction plugins add the node selector and the toleration, as a
    /// cluster admin pins a namespace. Returns once its `default` ServiceAccount exists.
    pub async fn namespace(&self, client: &kube::Client, name: &str) -> anyhow::Result<()> {
        crate::create_namespace(client, name, Some(real_node_annotations())).await
    }

    /// Runs `kubectl` (the pinned build) as the cluster admin.
    pub fn kubectl(&self, args: &[&str]) -> anyhow::Result<std::process::Output> {
        let kubectl = crate::assets::Assets::locate()?.kubernetes("kubectl")?;
        std::process::Command::new(kubectl)
            .arg(format!("--kubeconfig={}", self.admin_kubeconfig.display()))
            .args(args)
            .output()
            .context("running kubectl")
    }

    /// Errors with the dead program's log if a node process has stopped.
    pub fn check_running(&self) -> anyhow::Result<()> {
        self.registry.process().check_running()?;
        for process in &self.processes {
            process.check_running()?;
        }
        Ok(())
    }

    /// The node's processes (containerd, kubelet, kube-proxy) and the registry's.
    pub fn processes(&self) -> impl Iterator<Item = &ManagedProcess> {
        self.processes
            .iter()
            .chain(std::iter::once(self.registry.process()))
    }

    /// Memory in use by every pod of the node (its `kubepods` cgroup), in bytes.
    pub fn pods_memory(&self) -> anyhow::Result<u64> {
        cgroups::memory_usage(&format!("{}/kubepods", self.cgroup_root))
    }

    /// Memory in use by one pod (its cgroup below `kubepods`, whatever its QoS class), in
    /// bytes: its processes' memory and the page cache they brought in.
    pub fn pod_memory(&self, uid: &str) -> anyhow::Result<u64> {
        for class in ["burstable/", "besteffort/", ""] {
            let path = format!("{}/kubepods/{class}pod{uid}", self.cgroup_root);
            if let Ok(bytes) = cgroups::memory_usage(&path) {
                return Ok(bytes);
            }
        }
        bail!(
            "no cgroup for pod {uid} below {}/kubepods",
            self.cgroup_root
        )
    }

    /// The `memory.stat` counters of the pod with this uid (what its memory is made of:
    /// `total_rss`, `total_cache`, `total_shmem`, …).
    pub fn pod_memory_stat(
        &self,
        uid: &str,
    ) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
        for class in ["burstable/", "besteffort/", ""] {
            let path = format!("{}/kubepods/{class}pod{uid}", self.cgroup_root);
            if let Ok(stat) = cgroups::memory_stat(&path) {
                return Ok(stat);
            }
        }
        bail!(
            "no cgroup for pod {uid} below {}/kubepods",
            self.cgroup_root
        )
    }

    /// How long the node took to start (images, containerd, kubelet, kube-proxy, CoreDNS).
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The node's folder (logs, configs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The mirror of [`DIGEST_ONLY_MIRRORED`] that the node's containerd pulls digests from: a
/// registry of its own on [`network::NODE_IP`]`:`[`DIGEST_ONLY_MIRROR_PORT`], started by the
/// test that needs it (one at a time). Images go in by tag, so that a release job can still
/// resolve them, and [`DigestOnlyMirror::drop_tags`] then leaves them reachable by digest
/// only, as `oc-mirror` fills a mirror.
pub struct DigestOnlyMirror {
    registry: OciRegistry,
}

impl DigestOnlyMirror {
    /// Starts the mirror on its fixed address (one per test binary).
    pub async fn start() -> anyhow::Result<Self> {
        let registry = OciRegistry::start_on(
            RegistryAuth::Anonymous,
            &format!("{}:{DIGEST_ONLY_MIRROR_PORT}", network::NODE_IP),
        )
        .await
        .context("starting the digest-only mirror")?;
        Ok(DigestOnlyMirror { registry })
    }

    /// `host:port`, for a release job's `registries.conf`.
    pub fn host(&self) -> String {
        self.registry.host()
    }

    /// Pushes `image` as the mirror of `public` (`ghcr.io/<path>:<tag>`); returns the digest
    /// reference a pinned CSV names, `ghcr.io/<path>@sha256:…`.
    pub async fn push(
        &self,
        public: &str,
        image: &bundle_tool::image::BuiltImage,
    ) -> anyhow::Result<String> {
        let path = public
            .strip_prefix(&format!("{DIGEST_ONLY_MIRRORED}/"))
            .with_context(|| format!("{public} is not on {DIGEST_ONLY_MIRRORED}"))?;
        images::push(&self.registry.host(), path, image).await?;
        let repository = path.split_once(':').map_or(path, |(name, _)| name);
        Ok(format!(
            "{DIGEST_ONLY_MIRRORED}/{repository}@{}",
            image.digest()
        ))
    }

    /// Removes every tag of `repository` (`<path>` without the registry): by digest only.
    pub fn drop_tags(&self, repository: &str) -> anyhow::Result<()> {
        self.registry.remove_tags(repository)
    }

    /// The registry process (its log says which requests came).
    pub fn process(&self) -> &ManagedProcess {
        self.registry.process()
    }
}

/// `quay.io/example/x:1` → `example/x:1`: where the cluster registry keeps the mirror of an
/// image on a mirrored registry (`docker.io/redis:7` is `library/redis:7` there).
pub fn mirror_path(public: &str) -> anyhow::Result<String> {
    let (host, path) = public
        .split_once('/')
        .with_context(|| format!("{public}: no registry host"))?;
    anyhow::ensure!(
        MIRRORED_REGISTRIES.contains(&host),
        "{public}: {host} is not mirrored by the test cluster (only {MIRRORED_REGISTRIES:?})"
    );
    Ok(if host == "docker.io" && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_string()
    })
}

/// The namespace annotations that pin every pod of a namespace to the real node.
pub fn real_node_annotations() -> serde_json::Value {
    serde_json::json!({
        "scheduler.alpha.kubernetes.io/node-selector": format!("{TAINT_KEY}={TAINT_VALUE}"),
        "scheduler.alpha.kubernetes.io/defaultTolerations": serde_json::json!([
            {"key": TAINT_KEY, "operator": "Equal", "value": TAINT_VALUE, "effect": "NoSchedule"}
        ]).to_string(),
    })
}

/// Waits (up to a minute) until `pick` finds what it wants in the real Node object, while
/// kubelet runs; fails with kubelet's log if it stops or time runs out.
async fn wait_for_node<T>(
    nodes: &Api<Node>,
    kubelet: &ManagedProcess,
    what: &str,
    pick: impl Fn(Node) -> Option<T>,
) -> anyhow::Result<T> {
    crate::eventually(Duration::from_secs(60), what, || async {
        kubelet.check_running()?;
        Ok(nodes.get_opt(NODE_NAME).await?.and_then(&pick))
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e:#}; kubelet's log:{}", kubelet.log_tail(30)))
}

/// A tmpfs over each fixed path, in the test's own mount namespace only.
fn mount_private_tmpfs() -> anyhow::Result<()> {
    for path in FIXED_PATHS {
        std::fs::create_dir_all(path).with_context(|| format!("creating {path}"))?;
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "mode=0755", "e2e-node", path])
            .status()
            .context("running mount")?;
        if !status.success() {
            bail!("mounting a tmpfs on {path} failed ({status})");
        }
    }
    Ok(())
}

/// The machine's values of [`KUBELET_SYSCTLS`]: those the runner hands down in
/// `E2E_HOST_SYSCTLS` (read before any test binary started, so another binary's kubelet
/// starting at the same time cannot have changed them), else the current ones.
fn read_sysctls() -> anyhow::Result<Vec<(&'static str, String)>> {
    if let Ok(saved) = std::env::var("E2E_HOST_SYSCTLS") {
        let values: std::collections::HashMap<String, &str> = saved
            .split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .map(|(key, value)| (format!("/proc/sys/{}", key.replace('.', "/")), value))
            .collect();
        return KUBELET_SYSCTLS
            .iter()
            .map(|path| {
                values
                    .get(*path)
                    .map(|value| (*path, value.to_string()))
                    .with_context(|| format!("E2E_HOST_SYSCTLS ({saved}) has no value for {path}"))
            })
            .collect();
    }
    KUBELET_SYSCTLS
        .iter()
        .map(|path| {
            std::fs::read_to_string(path)
                .map(|v| (*path, v.trim().to_string()))
                .with_context(|| format!("reading {path}"))
        })
        .collect()
}

fn restore_sysctls(saved: &[(&'static str, String)]) -> anyhow::Result<()> {
    for (path, value) in saved {
        if std::fs::read_to_string(path)?.trim() != value {
            std::fs::write(path, value).with_context(|| format!("restoring {path}"))?;
        }
    }
    Ok(())
}
